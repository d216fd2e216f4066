/* fuzz_detect: srv_detect (server/detect/detect.c, CLD2 behind it, then the
 * candidates' language models) on arbitrary bytes, checked against the contract
 * of server/detect/detect.h.  Each input is detected three ways:
 *   A. CLD2 alone (srv_detect_languages);
 *   B. with real language models: the source SentencePiece models of two
 *      OPUS-MT models (tests/fixtures/opus-mt: en-mg's for the first candidate,
 *      tc-big-fr-en's for the second, and so on alternately), scored by
 *      engine/tokenizer's mt_spm_log_prob, as server/service/detect_source.c does;
 *   C. with a scripted scorer: log-probabilities drawn from a hash of the text
 *      and the candidate, some of them NaN, infinite or refused (-1), and a
 *      cld2_weight drawn from the input (0 .. 2).
 * Checked:
 *   - the count is within 0..min(max, 3), for max from 0 to 4;
 *   - each code is non-empty, NUL-terminated inside its 16 bytes, and made of
 *     ASCII letters and '-' ("en", "zh-Hant");
 *   - each confidence is a number within 0..100, and they never increase;
 *   - the same call twice gives the same answer, and max 1 gives the first of it;
 *   - B and C recognise something exactly when A does; their first confidence is
 *     never above A's; when A's answer is not a candidate (default candidates
 *     {en, fr}), B and C give A's answer and confidence (the models only choose
 *     among the candidates);
 *   - a scorer is only ever handed 1..SRV_DETECT_LM_BYTES bytes of valid UTF-8
 *     without the controls CLD2 refuses, and only a candidate's index;
 *   - mt_spm_log_prob of the raw input (up to its cap) succeeds.
 * Input: [candidate codes, comma-separated] NUL text; without a NUL the whole
 * input is the text and the candidates are {en, fr}.  The input's length picks
 * max (size % 5). */
#include "fuzz_common.h"

#include <math.h>

#include "detect/detect.h"
#include "tokenizer/tokenizer.h"
#include "util/utf8.h"

#define MAX_CAND 8

static void check(const srv_lang_guess *g, int n, int max)
{
    FUZZ_CHECK(n >= 0 && n <= 3 && n <= (max > 0 ? max : 0));
    for (int i = 0; i < n; i++) {
        size_t k = strnlen(g[i].code, sizeof g[i].code);
        FUZZ_CHECK(k > 0 && k < sizeof g[i].code);
        for (size_t j = 0; j < k; j++) {
            char c = g[i].code[j];
            FUZZ_CHECK((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '-');
        }
        float f = g[i].confidence;
        FUZZ_CHECK(f == f && f >= 0.0f && f <= 100.0f);
        if (i > 0)
            FUZZ_CHECK(f <= g[i - 1].confidence);
    }
}

/* ---- the scorers ---- */

static mt_spm *spm_en, *spm_fr;     /* loaded once, read-only: as the server shares them */
static int n_cand_now;

/* What every scorer is handed: valid UTF-8, no refused control, bounded. */
static void check_text(int i, const char *text, size_t len)
{
    FUZZ_CHECK(i >= 0 && i < n_cand_now);
    FUZZ_CHECK(text && len > 0 && len <= SRV_DETECT_LM_BYTES);
    for (size_t at = 0; at < len;) {
        uint32_t c;
        size_t k = mt_utf8_decode((const uint8_t *)text + at, len - at, &c);
        FUZZ_CHECK(k > 0);
        FUZZ_CHECK(c >= 0x20 || c == '\t' || c == '\n' || c == '\f' || c == '\r');
        FUZZ_CHECK(c < 0x7f || c > 0x9f);
        at += k;
    }
}

static int spm_score(void *ctx, int i, const char *text, size_t len, double *logp)
{
    (void)ctx;
    check_text(i, text, len);
    FUZZ_CHECK(mt_spm_log_prob(i % 2 ? spm_fr : spm_en, text, len, logp, NULL) == MT_OK);
    return 0;
}

static int scripted_score(void *ctx, int i, const char *text, size_t len, double *logp)
{
    check_text(i, text, len);
    uint64_t h = 0xcbf29ce484222325u ^ *(const uint64_t *)ctx ^ (uint64_t)i * 0x9e3779b97f4a7c15u;
    for (size_t k = 0; k < len; k++)
        h = (h ^ (uint8_t)text[k]) * 0x100000001b3u;
    switch (h >> 61) {
    case 0:
        return -1;                                      /* no model for this one */
    case 1:
        *logp = (h >> 60) & 1 ? NAN : ((h >> 59) & 1 ? INFINITY : -INFINITY);
        return 0;
    default:
        *logp = -(double)(h % 100000) / 1000.0 * (double)len;
        return 0;
    }
}

static void load_models(void)
{
    if (spm_en)
        return;
    char path[4096];
    mt_err err;
    FUZZ_CHECK(mt_spm_load(fuzz_path(path, sizeof path, "tests/fixtures/opus-mt/en-mg/source.spm"), &spm_en,
                           &err) == MT_OK);
    FUZZ_CHECK(mt_spm_load(fuzz_path(path, sizeof path, "tests/fixtures/opus-mt/tc-big-fr-en/source.spm"), &spm_fr,
                           &err) == MT_OK);
}

/* ---- one way of detecting: the contract, determinism, max 1 ---- */

static int detect_checked(const char *text, size_t len, const srv_detect_params *p, int max, srv_lang_guess *out)
{
    srv_lang_guess b[4], one[1];
    memset(out, 0, sizeof *out * 4);
    int n = srv_detect(text, len, p, out, max);
    check(out, n, max);
    FUZZ_CHECK(srv_detect(text, len, p, b, max) == n);
    for (int i = 0; i < n; i++)
        FUZZ_CHECK(strcmp(out[i].code, b[i].code) == 0 && out[i].confidence == b[i].confidence);
    if (n > 0) {
        FUZZ_CHECK(srv_detect(text, len, p, one, 1) == 1);
        FUZZ_CHECK(strcmp(one[0].code, out[0].code) == 0 && one[0].confidence == out[0].confidence);
    }
    return n;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    load_models();
    const uint8_t *part[2];
    size_t part_len[2];
    int parts = fuzz_split(data, size, 2, part, part_len);

    /* the candidates: each code copied NUL-terminated (up to 31 bytes kept) */
    static const char *const enfr[] = {"en", "fr"};
    char codes[MAX_CAND][32];
    const char *cand[MAX_CAND];
    const char *const *cv = enfr;
    int n_cand = 2;
    if (parts == 2) {
        n_cand = 0;
        size_t at = 0;
        while (at <= part_len[0] && n_cand < MAX_CAND) {
            const uint8_t *comma = memchr(part[0] + at, ',', part_len[0] - at);
            size_t end = comma ? (size_t)(comma - part[0]) : part_len[0];
            size_t k = end - at < 31 ? end - at : 31;
            memcpy(codes[n_cand], part[0] + at, k);
            codes[n_cand][k] = '\0';
            cand[n_cand] = codes[n_cand];
            n_cand++;
            at = end + 1;
        }
        cv = n_cand ? cand : NULL;
    }
    n_cand_now = cv ? n_cand : 0;
    const char *text = (const char *)part[parts - 1];
    size_t len = part_len[parts - 1];
    int max = (int)(size % 5);

    /* A: CLD2 alone */
    srv_detect_params pa = srv_detect_default_params();
    pa.cand = cv;
    pa.n_cand = n_cand;
    srv_lang_guess a[4], b[4], c[4];
    int na = detect_checked(text, len, &pa, max, a);

    /* B: the OPUS-MT spms; C: the scripted scorer */
    srv_detect_params pb = pa, pc = pa;
    pb.score = spm_score;
    uint64_t seed = 0;
    memcpy(&seed, data, size < sizeof seed ? size : sizeof seed);
    pc.score = scripted_score;
    pc.score_ctx = &seed;
    pc.cld2_weight = (float)(seed % 201) / 100.0f;
    int nb = detect_checked(text, len, &pb, max, b);
    int nc = detect_checked(text, len, &pc, max, c);
    FUZZ_CHECK((na > 0) == (nb > 0) && (na > 0) == (nc > 0));
    if (na > 0) {
        FUZZ_CHECK(b[0].confidence <= a[0].confidence && c[0].confidence <= a[0].confidence);
        if (cv == enfr && strcmp(a[0].code, "en") != 0 && strcmp(a[0].code, "fr") != 0) {
            FUZZ_CHECK(strcmp(b[0].code, a[0].code) == 0 && b[0].confidence == a[0].confidence);
            FUZZ_CHECK(strcmp(c[0].code, a[0].code) == 0 && c[0].confidence == a[0].confidence);
        }
    }

    /* the engine's call on the raw bytes */
    double lp;
    size_t k = size < MT_SPM_LOG_PROB_MAX ? size : MT_SPM_LOG_PROB_MAX;
    FUZZ_CHECK(mt_spm_log_prob(spm_en, (const char *)data, k, &lp, NULL) == MT_OK);
    FUZZ_CHECK(lp == lp && lp <= 0);
    return 0;
}
