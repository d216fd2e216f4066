/* fuzz_charlm: the .charlm reader (server/detect/charlm.c) on untrusted bytes,
 * then the scorer on what it accepts.
 *
 * Byte 0 picks the mode: even, the rest is the file as it is (the checksum
 * must hold); odd, the target first writes the right checksum into the last 4
 * bytes, so that the fuzzer gets past it to the header, the counts, the sizes
 * and the key order.  A refusal must be MT_ERR_FORMAT with a message.  A model
 * that loads must: name a non-empty language, an order 1..6; score every text
 * finite and <= 0, the same twice; and score texts of the letters a-h and
 * spaces exactly as a reference walk does here, looking each n-gram up by a
 * linear scan of the file's own entries (not the reader's sorted tables and
 * directory).  Seeds: small models written by models/recipe/charlm.py from texts
 * of those letters (tests/fuzz/corpus/charlm/). */
#include "fuzz_common.h"

#include "detect/charlm.h"
#include "util/hash.h"

#include <math.h>
#include <string.h>

static uint32_t rd32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint32_t fnv(const uint8_t *p, size_t n)
{
    uint32_t h = 0x811c9dc5u;
    for (size_t i = 0; i < n; i++)
        h = (h ^ p[i]) * 0x01000193u;
    return h;
}

/* The entry of gram g[0..k) in order k of the (accepted) file f: 1 with its nlp and bow. */
static int scan(const uint8_t *f, int order, int k, const uint32_t *g, int *nlp, int *bow)
{
    uint64_t h = 0x9e3779b97f4a7c15ULL ^ rd32(f + 16);
    for (int i = 0; i < k; i++)
        h = mt_hash_mix64(h ^ g[i]);
    uint32_t key = (uint32_t)(h >> 32);
    size_t at = 64;
    for (int j = 1; j < k; j++)
        at += (size_t)rd32(f + 40 + 4 * (j - 1)) * (j < order ? 8 : 6);
    uint32_t n = rd32(f + 40 + 4 * (k - 1));
    for (uint32_t i = 0; i < n; i++)
        if (rd32(f + at + 4 * (size_t)i) == key) {
            const uint8_t *q = f + at + 4 * (size_t)n + 2 * (size_t)i;
            *nlp = q[0] | q[1] << 8;
            q = f + at + 6 * (size_t)n + 2 * (size_t)i;
            *bow = k < order ? (int16_t)(q[0] | q[1] << 8) : 0;
            return 1;
        }
    return 0;
}

/* ln p of t[0..n) (letters a-h and single spaces, none at the ends) by the rule of charlm.h,
 * each character's log p at most 0. */
static double reference(const uint8_t *f, const char *t, size_t n)
{
    int order = (int)rd32(f + 12);
    uint32_t s[80];
    size_t len = 0;
    for (int i = 0; i < order - 1; i++)
        s[len++] = ' ';
    for (size_t i = 0; i < n; i++)
        s[len++] = (uint8_t)t[i];
    s[len++] = ' ';
    double lp = 0;
    for (size_t i = (size_t)order - 1; i < len; i++) {
        double acc = 0;
        int k, nlp = 0, bow = 0;
        for (k = order; k >= 1; k--) {
            if (scan(f, order, k, s + i + 1 - k, &nlp, &bow) && nlp != 0xffff)
                break;
            if (k > 1 && scan(f, order, k - 1, s + i + 1 - k, &nlp, &bow))
                acc += bow / 2048.0;
        }
        double c = k >= 1 ? acc - nlp / 2048.0 : acc - rd32(f + 20) / 2048.0;
        lp += c < 0 ? c : 0;        /* a probability is at most 1, whatever a damaged file's weights say */
    }
    return lp;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    size_t n = size - 1;
    uint8_t *f = malloc(n ? n : 1);
    FUZZ_CHECK(f);
    memcpy(f, data + 1, n);
    if ((data[0] & 1) && n >= 4) {
        uint32_t c = fnv(f, n - 4);
        for (int i = 0; i < 4; i++)
            f[n - 4 + i] = (uint8_t)(c >> (8 * i));
    }
    srv_charlm *m = NULL;
    mt_err err = {0};
    mt_status st = srv_charlm_parse(f, n, &m, &err);
    if (st != MT_OK) {
        FUZZ_CHECK(st == MT_ERR_FORMAT && err.msg[0] && !m);
        free(f);
        return 0;
    }
    const char *lang = srv_charlm_lang(m);
    FUZZ_CHECK(lang[0] && strlen(lang) < 16);
    FUZZ_CHECK(srv_charlm_order(m) >= 1 && srv_charlm_order(m) <= SRV_CHARLM_MAX_ORDER);
    FUZZ_CHECK(srv_charlm_bytes(m) > 0);
    /* texts: fixed ones, and the input's first bytes made letters a-h and spaces */
    static const char *const fixed[] = {"", " ", "abc", "a  b\tc", "Hello, World 2024", "\xff\xfe", "été \xe2\x80\xa8 x"};
    for (size_t i = 0; i < sizeof fixed / sizeof *fixed; i++) {
        size_t k = 0;
        double a = srv_charlm_log_prob(m, fixed[i], strlen(fixed[i]), &k);
        FUZZ_CHECK(isfinite(a) && a <= 0 && k <= strlen(fixed[i]) + 1);
        FUZZ_CHECK(srv_charlm_log_prob(m, fixed[i], strlen(fixed[i]), NULL) == a);
    }
    char t[64];
    size_t tn = 0;
    for (size_t i = 0; i < n && tn < sizeof t; i++) {
        char c = (char)('a' + f[i] % 9);
        c = c == 'i' ? ' ' : c;
        if (c == ' ' && (tn == 0 || t[tn - 1] == ' '))
            continue;
        t[tn++] = c;
    }
    while (tn > 0 && t[tn - 1] == ' ')
        tn--;
    size_t k = 0;
    double got = srv_charlm_log_prob(m, t, tn, &k), want = tn ? reference(f, t, tn) : 0;
    FUZZ_CHECK(k == (tn ? tn + 1 : 0));
    FUZZ_CHECK(fabs(got - want) <= 1e-9 * (1 + fabs(want)));
    srv_charlm_free(m);
    free(f);
    return 0;
}
