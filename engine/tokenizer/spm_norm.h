/* spm_norm: SentencePiece's Normalizer (and denormalizer) over a parsed
 * NormalizerSpec (spm_proto.h), for spm.c.  Internal to engine/.
 *
 * The precompiled charsmap (a Darts double-array, longest match, every unit
 * index bounds-checked), USER_DEFINED pieces kept unnormalized, the dummy
 * prefix, whitespace collapsing and ' ' -> U+2581, as sentencepiece 0.1.97's
 * Normalizer::Normalize. */
#ifndef MT_SPM_NORM_H
#define MT_SPM_NORM_H

#include <stddef.h>
#include <stdint.h>

#include "spm_proto.h"
#include "util/status.h"
#include "util/strbuf.h"
#include "util/strmap.h"

#define MT_SPM_SPACE     "\xe2\x96\x81"   /* U+2581, spm's escaped whitespace */
#define MT_SPM_SPACE_LEN 3

typedef struct {
    uint32_t       *units;       /* Darts double-array units (host order), or NULL */
    size_t          n_units;
    const char     *strs;        /* NUL-separated replacement strings               */
    size_t          strs_len;
    int             add_dummy_prefix, remove_extra_ws, escape_ws, ws_suffix;
    const mt_ptrie *user;        /* USER_DEFINED pieces, kept unnormalized; or NULL */
} mt_spm_norm;

/* From spec (whose charsmap must outlive nm) and TrainerSpec's
 * treat_whitespace_as_suffix.  name (the file) and which ("normalizer",
 * "denormalizer") go into the MT_ERR_FORMAT of a broken charsmap. */
mt_status mt_spm_norm_init(mt_spm_norm *nm, const mt_spm_normspec *spec, int ws_suffix, const mt_ptrie *user,
                           const char *name, const char *which, mt_err *err);
void      mt_spm_norm_free(mt_spm_norm *nm);
/* Normalizer::Normalize of s[0..len), appended to o (NUL-terminated): 0, or -1 without memory. */
int       mt_spm_norm_run(const mt_spm_norm *nm, const uint8_t *s, size_t len, mt_sbuf *o);

#endif
