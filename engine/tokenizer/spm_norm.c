/* spm_norm.c: SentencePiece's Normalizer with a precompiled charsmap (spm_norm.h). */
#include "spm_norm.h"
#include "util/utf8.h"

#include <stdlib.h>
#include <string.h>

#define NORM_MAX_RESULTS 32     /* spm's kMaxTrieResultsSize */

mt_status mt_spm_norm_init(mt_spm_norm *nm, const mt_spm_normspec *spec, int ws_suffix, const mt_ptrie *user,
                           const char *name, const char *which, mt_err *err)
{
    memset(nm, 0, sizeof *nm);
    nm->add_dummy_prefix = spec->add_dummy_prefix;
    nm->remove_extra_ws = spec->remove_extra_whitespaces;
    nm->escape_ws = spec->escape_whitespaces;
    nm->ws_suffix = ws_suffix;
    nm->user = user;
    const uint8_t *b = spec->charsmap.p;
    size_t n = spec->charsmap.n;
    if (n == 0)
        return MT_OK;
    uint32_t trie_size = n > 4 ? (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 |
                                     (uint32_t)b[3] << 24 : 0;
    if (n <= 4 || trie_size > n - 4)   /* spm checks trie_size < n, then over-reads */
        return mt_err_set(err, MT_ERR_FORMAT, "%s: %s precompiled_charsmap is broken (%zu bytes, trie %u bytes)",
                          name, which, n, trie_size);
    nm->n_units = trie_size / 4;
    if (nm->n_units) {
        nm->units = malloc(nm->n_units * sizeof *nm->units);
        if (!nm->units)
            return mt_err_set(err, MT_ERR_NOMEM, "%s: out of memory for the charsmap", name);
        for (size_t i = 0; i < nm->n_units; i++) {
            const uint8_t *u = b + 4 + 4 * i;
            nm->units[i] = (uint32_t)u[0] | (uint32_t)u[1] << 8 | (uint32_t)u[2] << 16 | (uint32_t)u[3] << 24;
        }
    }
    nm->strs = (const char *)b + 4 + trie_size;
    nm->strs_len = n - 4 - trie_size;
    return MT_OK;
}

void mt_spm_norm_free(mt_spm_norm *nm)
{
    free(nm->units);
    nm->units = NULL;
}

/* Darts-clone commonPrefixSearch, keeping the longest of the first 32 matches
 * (as NormalizePrefix).  Returns the match length (0: none), *value its value.
 * Every unit index is bounds-checked. */
static size_t darts_longest(const mt_spm_norm *nm, const uint8_t *key, size_t len, uint32_t *value)
{
    const uint32_t *a = nm->units;
    size_t n = nm->n_units, best = 0;
    int found = 0;
    if (!n)
        return 0;
#define DA_OFFSET(u) (((u) >> 10) << (((u) & (1u << 9)) >> 6))
    size_t pos = DA_OFFSET(a[0]);
    for (size_t i = 0; i < len; i++) {
        pos ^= key[i];
        if (pos >= n)
            break;
        uint32_t u = a[pos];
        if ((u & 0x800000FFu) != key[i])
            break;
        pos ^= DA_OFFSET(u);
        if ((u >> 8) & 1) {
            if (pos >= n)
                break;
            best = i + 1;
            *value = a[pos] & 0x7FFFFFFFu;
            if (++found == NORM_MAX_RESULTS)
                break;
        }
    }
#undef DA_OFFSET
    return best;
}

/* NormalizePrefix: the replacement for the start of s (*out, *out_n) and the
 * number of input bytes it consumes (>= 1 for len >= 1). */
static size_t norm_prefix(const mt_spm_norm *nm, const uint8_t *s, size_t len, const uint8_t **out, size_t *out_n)
{
    if (nm->user) {
        size_t m = mt_ptrie_longest(nm->user, s, len);
        if (m) {
            *out = s;
            *out_n = m;
            return m;
        }
    }
    uint32_t v = 0;
    size_t m = darts_longest(nm, s, len, &v);
    if (m) {
        if (v < nm->strs_len) {
            *out = (const uint8_t *)nm->strs + v;
            *out_n = strnlen(nm->strs + v, nm->strs_len - v);
        } else {                         /* hostile file: value past the strings */
            *out = (const uint8_t *)"";
            *out_n = 0;
        }
        return m;
    }
    uint32_t cp;
    size_t n = mt_utf8_decode(s, len, &cp);
    if (!n) {                            /* malformed: U+FFFD, consume one byte */
        *out = (const uint8_t *)"\xEF\xBF\xBD";
        *out_n = 3;
        return 1;
    }
    *out = s;
    *out_n = n;
    return n;
}

static int norm_add_ws(const mt_spm_norm *nm, mt_sbuf *o)
{
    return nm->escape_ws ? mt_sb_add(o, MT_SPM_SPACE, MT_SPM_SPACE_LEN) : mt_sb_add(o, " ", 1);
}

/* Normalizer::Normalize, appending to o. */
int mt_spm_norm_run(const mt_spm_norm *nm, const uint8_t *s, size_t len, mt_sbuf *o)
{
    const size_t start = o->n;
    const uint8_t *sp;
    size_t spn;
    if (mt_sb_reserve(o, 1))
        return -1;
    o->p[o->n] = '\0';
    if (nm->remove_extra_ws) {            /* leading whitespace (after mapping) */
        while (len) {
            size_t c = norm_prefix(nm, s, len, &sp, &spn);
            if (spn != 1 || sp[0] != ' ')
                break;
            s += c;
            len -= c;
        }
    }
    if (!len)
        return 0;
    if (!nm->ws_suffix && nm->add_dummy_prefix && norm_add_ws(nm, o))
        return -1;
    int prev_space = nm->remove_extra_ws;
    while (len) {
        size_t c = norm_prefix(nm, s, len, &sp, &spn);
        while (prev_space && spn && sp[0] == ' ') {
            sp++;
            spn--;
        }
        if (spn) {
            if (spn > SIZE_MAX / 4 || mt_sb_reserve(o, spn * MT_SPM_SPACE_LEN + 1))
                return -1;
            for (size_t i = 0; i < spn; i++) {
                if (nm->escape_ws && sp[i] == ' ') {
                    memcpy(o->p + o->n, MT_SPM_SPACE, MT_SPM_SPACE_LEN);
                    o->n += MT_SPM_SPACE_LEN;
                } else {
                    o->p[o->n++] = (char)sp[i];
                }
            }
            o->p[o->n] = '\0';
            prev_space = sp[spn - 1] == ' ';
        }
        s += c;
        len -= c;
        if (!nm->remove_extra_ws)
            prev_space = 0;
    }
    if (nm->remove_extra_ws) {            /* trailing whitespace */
        const char *ws = nm->escape_ws ? MT_SPM_SPACE : " ";
        size_t wn = nm->escape_ws ? MT_SPM_SPACE_LEN : 1;
        while (o->n - start >= wn && memcmp(o->p + o->n - wn, ws, wn) == 0)
            o->n -= wn;
        o->p[o->n] = '\0';
    }
    if (nm->ws_suffix && nm->add_dummy_prefix && norm_add_ws(nm, o))
        return -1;
    return 0;
}
