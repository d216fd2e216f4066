/* detect: language identification with CLD2, then the candidates' language
 * models (detect.h has the rule and its figures). */
#include "detect.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cld2.h"
#include "util/utf8.h"

enum {
    MAX_HINTS = 4,              /* CLD2 reads four content-language hints, ignores a fifth */
    CODE_CAP = 16,              /* a candidate code, NUL included (srv_lang_guess.code) */
    MAX_SCORED = 16,            /* candidates the second stage weighs (distinct languages) */
};

/* A guess while it is built: CLD2's language number and its confidence. */
typedef struct {
    int   lang;
    float conf;
} guess;

/* What CLD2 calls interchange-valid: no C0 control but TAB, LF, FF and CR, no DEL,
 * no C1 control, no noncharacter.  CLD2 answers nothing for a text holding any of
 * them (measured on Debian's libcld2, tests/test_detect.c checks it), so they are
 * blanked first, along with malformed bytes. */
static int interchange_ok(uint32_t c)
{
    if (c < 0x20)
        return c == '\t' || c == '\n' || c == '\f' || c == '\r';
    if (c >= 0x7f && c <= 0x9f)
        return 0;
    if (c >= 0xfdd0 && c <= 0xfdef)
        return 0;
    return (c & 0xfffe) != 0xfffe;
}

/* A malloc'd copy of text[0..len) as CLD2 may read it: every malformed byte and
 * every refused character made spaces, byte for byte, then PAD zero bytes.
 * Spaces rather than U+FFFD: the length stays, and a space is no letter, so it
 * adds no evidence for any language.  The padding because CLD2's script scanner
 * reads the character at the end of the buffer, past len (valgrind shows it;
 * fuzz_detect found answers changing with the bytes after the text).  NULL when
 * out of memory. */
enum { PAD = 32 };

static char *scrubbed_copy(const char *text, size_t len)
{
    char *copy = malloc(len + PAD);
    if (!copy)
        return NULL;
    memcpy(copy, text, len);
    memset(copy + len, 0, PAD);
    for (size_t i = 0; i < len;) {
        uint32_t c = 0;
        size_t k = mt_utf8_decode((const uint8_t *)text + i, len - i, &c);
        if (k && interchange_ok(c)) {
            i += k;
            continue;
        }
        if (!k)
            k = 1;                  /* a malformed byte: one space, resync after it */
        memset(copy + i, ' ', k);
        i += k;
    }
    return copy;
}

static char ascii_lower(char c)
{
    return c >= 'A' && c <= 'Z' ? (char)(c - 'A' + 'a') : c;
}

static char ascii_upper(char c)
{
    return c >= 'a' && c <= 'z' ? (char)(c - 'a' + 'A') : c;
}

/* The CLD2 language of a caller's code, read as a BCP 47 tag in any case and with
 * '-' or '_': "FR", "fr_fr", "zh-hant", "pt-BR".  CLD2 matches tags by their
 * canonical case ("zh-Hant", "zh-TW"), so that case is restored first:
 * language lowercase, a four-letter script titlecase, a region uppercase. */
static int candidate_lang(const char *code)
{
    char tag[CODE_CAP];
    size_t n = code ? strnlen(code, sizeof tag) : 0;
    if (n == 0 || n == sizeof tag)
        return detect_cld2_unknown();
    size_t start = 0;           /* of the current subtag */
    for (size_t i = 0; i <= n; i++) {
        char c = i < n ? code[i] : '-';
        if (c != '-' && c != '_')
            continue;
        size_t len = i - start;
        for (size_t j = start; j < i; j++) {
            char x = code[j];
            tag[j] = start == 0 ? ascii_lower(x)
                   : len == 4   ? (j == start ? ascii_upper(x) : ascii_lower(x))
                   : len == 2   ? ascii_upper(x) : ascii_lower(x);
        }
        if (i < n)
            tag[i] = '-';
        start = i + 1;
    }
    tag[n] = '\0';
    return detect_cld2_lang(tag);
}

/* CLD2's hint string for the candidates: their codes, comma-separated, English
 * left out (detect.h says why), at most MAX_HINTS, no repeats.  Empty when none. */
static void candidate_hints(const char *const *cand, int n_cand, char *hints, size_t cap)
{
    int langs[MAX_HINTS], n = 0;
    size_t at = 0;
    hints[0] = '\0';
    int english = detect_cld2_lang("en");
    for (int i = 0; cand && i < n_cand && n < MAX_HINTS; i++) {
        int lang = candidate_lang(cand[i]);
        if (!detect_cld2_is_language(lang) || lang == english)
            continue;
        int seen = 0;
        for (int j = 0; j < n; j++)
            seen |= langs[j] == lang;
        const char *code = detect_cld2_code(lang);
        size_t k = strlen(code);
        if (seen || at + (at > 0) + k + 1 > cap)
            continue;
        if (at > 0)
            hints[at++] = ',';
        memcpy(hints + at, code, k + 1);
        at += k;
        langs[n++] = lang;
    }
}

/* The code we report for a CLD2 language: CLD2's, with the two retired ISO codes
 * it still uses replaced by the current ones, so that callers comparing with
 * ISO 639-1 (LibreTranslate, server/service/languages.tsv) find them. */
static void report_code(int lang, char *code)
{
    const char *c = detect_cld2_code(lang);
    if (strcmp(c, "iw") == 0)
        c = "he";
    else if (strcmp(c, "jw") == 0)
        c = "jv";
    size_t n = strnlen(c, CODE_CAP - 1);
    memcpy(code, c, n);
    code[n] = '\0';
}

/* ---- the first stage: CLD2 ---- */

/* CLD2's languages of the scrubbed text t[0..len), best first, into g[0..3); their
 * count.  Plain first; only when CLD2 will not name a language does it get the
 * best-effort flag, and its answer then counts half (detect.h). */
static int cld2_stage(const char *t, size_t len, const char *hints, guess g[3])
{
    detect_cld2_result r;
    detect_cld2(t, (int)len, hints, 0, &r);
    float weight = 1.0f;
    if (!detect_cld2_is_language(r.lang[0])) {
        detect_cld2(t, (int)len, hints, 1, &r);
        weight = 0.5f;
    }
    int n = 0;
    for (int i = 0; i < 3; i++) {
        if (!detect_cld2_is_language(r.lang[i]) || r.percent[i] <= 0)
            continue;
        int dup = 0;
        for (int j = 0; j < i; j++)
            dup |= r.lang[j] == r.lang[i];
        if (dup)
            continue;
        double sc = r.score[i] / 1000.0;
        sc = sc > 0 ? (sc < 1 ? sc : 1) : 0;        /* (a NaN would be 0 too) */
        float conf = weight * (float)(r.percent[i] > 100 ? 100 : r.percent[i]) * (float)sc;
        int k = n++;                                /* insertion, best first, stable */
        while (k > 0 && g[k - 1].conf < conf) {
            g[k] = g[k - 1];
            k--;
        }
        g[k] = (guess){ r.lang[i], conf };
    }
    return n;
}

/* ---- the second stage: the candidates' language models ---- */

/* The prefix of t[0..len) the language models read: at most SRV_DETECT_LM_BYTES,
 * cut on a character boundary (t is valid UTF-8: the scrub saw to it). */
static size_t lm_prefix(const char *t, size_t len)
{
    if (len <= SRV_DETECT_LM_BYTES)
        return len;
    len = SRV_DETECT_LM_BYTES;
    while (len > 0 && ((unsigned char)t[len] & 0xc0) == 0x80)
        len--;
    return len;
}

static size_t count_chars(const char *t, size_t len)
{
    size_t n = 0;
    for (size_t i = 0; i < len; i++)
        n += ((unsigned char)t[i] & 0xc0) != 0x80;
    return n;
}

/* The second stage (detect.h, THE RULE): when CLD2's answer g[0] is a candidate
 * with a language model, the candidates with one are weighed by their models'
 * log-probability per character of the text, CLD2's answer raised by
 * cld2_weight * confidence / 100; the best is put first.  g[0..n) is rewritten
 * in place, the count kept (or grown by one, at most 3). */
static int lm_stage(const srv_detect_params *p, const char *t, size_t len, guess g[3], int n)
{
    if (!p->score || n == 0 || !p->cand || p->n_cand < 2)
        return n;
    size_t lm_len = lm_prefix(t, len), chars = count_chars(t, lm_len);
    if (chars == 0)
        return n;
    /* the candidates' distinct languages (the first code of each), CLD2's among them? */
    int idx[MAX_SCORED], lang[MAX_SCORED], n_lang = 0, is_cand = 0;
    for (int i = 0; i < p->n_cand && n_lang < MAX_SCORED; i++) {
        int l = candidate_lang(p->cand[i]);
        int seen = !detect_cld2_is_language(l);
        for (int j = 0; j < n_lang && !seen; j++)
            seen = lang[j] == l;
        if (seen)
            continue;
        is_cand |= l == g[0].lang;
        idx[n_lang] = i;
        lang[n_lang++] = l;
    }
    if (!is_cand)
        return n;                                   /* another language, or nothing: CLD2's answer stands */
    int k = 0, top = -1;
    double z[MAX_SCORED];
    for (int j = 0; j < n_lang; j++) {
        double lp = 0;
        if (p->score(p->score_ctx, idx[j], t, lm_len, &lp) != 0 || !isfinite(lp))
            continue;
        z[k] = lp / (double)chars;
        if (lang[j] == g[0].lang) {
            top = k;
            z[k] += (double)p->cld2_weight * g[0].conf / 100.0;
        }
        lang[k++] = lang[j];
    }
    if (top < 0 || k < 2)
        return n;                                   /* CLD2's answer has no model to weigh */
    int best = top;                                 /* a tie keeps CLD2's answer */
    for (int j = 0; j < k; j++)
        if (z[j] > z[best])
            best = j;
    if (best == top)
        return n;
    double second = -HUGE_VAL;
    for (int j = 0; j < k; j++)
        if (j != best && z[j] > second)
            second = z[j];
    double margin = z[best] - second, w = p->cld2_weight > 0 ? (double)p->cld2_weight : 1.0;
    float conf = g[0].conf * (float)(margin < w ? margin / w : 1.0);
    /* the new answer first, then CLD2's others, confidences made non-increasing */
    guess out[3] = {{ lang[best], conf }};
    int m = 1;
    for (int i = 0; i < n && m < 3; i++) {
        if (g[i].lang == lang[best])
            continue;
        out[m] = g[i];
        if (out[m].conf > out[m - 1].conf)
            out[m].conf = out[m - 1].conf;
        m++;
    }
    memcpy(g, out, sizeof out);
    return m;
}

/* ---- API ---- */

srv_detect_params srv_detect_default_params(void)
{
    return (srv_detect_params){ .cand = NULL, .n_cand = 0, .score = NULL, .score_ctx = NULL,
                                .cld2_weight = SRV_DETECT_CLD2_WEIGHT };
}

int srv_detect(const char *text, size_t len, const srv_detect_params *p, srv_lang_guess *out, int max)
{
    if (!text || !out || max <= 0 || len == 0)
        return 0;
    srv_detect_params none = srv_detect_default_params();
    if (!p)
        p = &none;
    if (len > SRV_DETECT_MAX_BYTES) {               /* cut on a character boundary */
        len = SRV_DETECT_MAX_BYTES;
        while (len > 0 && ((unsigned char)text[len] & 0xc0) == 0x80)
            len--;
    }
    char *t = scrubbed_copy(text, len);
    if (!t)
        return 0;
    char hints[MAX_HINTS * CODE_CAP];
    candidate_hints(p->cand, p->n_cand, hints, sizeof hints);
    guess g[3];
    int n = cld2_stage(t, len, hints[0] ? hints : NULL, g);
    n = lm_stage(p, t, len, g, n);
    free(t);

    if (n > max)
        n = max;
    for (int i = 0; i < n; i++) {
        memset(&out[i], 0, sizeof out[i]);
        report_code(g[i].lang, out[i].code);
        out[i].confidence = g[i].conf;
    }
    return n;
}

int srv_detect_languages(const char *text, size_t len, const char *const *cand, int n_cand,
                         srv_lang_guess *out, int max)
{
    srv_detect_params p = srv_detect_default_params();
    p.cand = cand;
    p.n_cand = n_cand;
    return srv_detect(text, len, &p, out, max);
}
