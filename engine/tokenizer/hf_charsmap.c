/* hf_charsmap.c: the Precompiled normalizer of a tokenizer.json (hf_internal.h).
 *
 * Its "precompiled_charsmap" is SentencePiece's NormalizerSpec.precompiled_charsmap
 * (a Darts double-array and its replacement strings) in base64, as
 * transformers' SpmConverter copies it from the .spm file.  It is run by
 * spm_norm.c's normalizer with every whitespace rule off (no dummy prefix,
 * no collapsing, no U+2581): in a tokenizer.json those are the later steps'
 * (Replace, Strip, Metaspace).  The match is the longest prefix, as
 * SentencePiece's; HF's Rust normalizer maps a grapheme cluster under 6
 * bytes whole by its first match, which differs only on combining
 * sequences the charsmap has no entry for (README, "Multilingual models"). */
#include "hf_internal.h"
#include "spm_norm.h"

#include <stdlib.h>
#include <string.h>

struct hf_charsmap {
    mt_spm_norm nm;
    uint8_t    *bytes;        /* the decoded charsmap, which nm points into */
};

/* RFC 4648 base64 (padding optional, no whitespace): *n bytes into out
 * (room for n_in * 3 / 4 + 3); -1 on a character outside the alphabet. */
static int b64_decode(const char *in, size_t n_in, uint8_t *out, size_t *n)
{
    uint32_t acc = 0;
    int bits = 0;
    size_t k = 0;
    while (n_in && in[n_in - 1] == '=')
        n_in--;
    for (size_t i = 0; i < n_in; i++) {
        char ch = in[i];
        int v = ch >= 'A' && ch <= 'Z' ? ch - 'A' : ch >= 'a' && ch <= 'z' ? ch - 'a' + 26
              : ch >= '0' && ch <= '9' ? ch - '0' + 52 : ch == '+' ? 62 : ch == '/' ? 63 : -1;
        if (v < 0)
            return -1;
        acc = acc << 6 | (uint32_t)v;
        bits += 6;
        if (bits >= 8) {
            bits -= 8;
            out[k++] = (uint8_t)(acc >> bits);
        }
    }
    *n = k;
    return 0;
}

mt_status hf_charsmap_new(const char *b64, size_t n, const char *name, struct hf_charsmap **out, mt_err *err)
{
    *out = NULL;
    struct hf_charsmap *cm = calloc(1, sizeof *cm);
    if (!cm || !(cm->bytes = malloc(n / 4 * 3 + 4))) {
        free(cm);
        return mt_err_set(err, MT_ERR_NOMEM, "%s: out of memory for the charsmap", name);
    }
    size_t len = 0;
    if (b64_decode(b64, n, cm->bytes, &len)) {
        hf_charsmap_free(cm);
        return mt_err_set(err, MT_ERR_FORMAT, "%s: normalizer Precompiled: precompiled_charsmap is not base64", name);
    }
    mt_spm_normspec spec = { .present = 1, .charsmap = { cm->bytes, len } };   /* whitespace rules off */
    mt_status st = mt_spm_norm_init(&cm->nm, &spec, 0, NULL, name, "normalizer Precompiled", err);
    if (st) {
        hf_charsmap_free(cm);
        return st;
    }
    *out = cm;
    return MT_OK;
}

void hf_charsmap_free(struct hf_charsmap *cm)
{
    if (!cm)
        return;
    mt_spm_norm_free(&cm->nm);
    free(cm->bytes);
    free(cm);
}

int hf_charsmap_run(const struct hf_charsmap *cm, const char *s, size_t n, mt_sbuf *o)
{
    return mt_spm_norm_run(&cm->nm, (const uint8_t *)s, n, o);
}
