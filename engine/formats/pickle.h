/* pickle.h: a restricted reader of the pickle torch.save writes for a state
 * dict (data.pkl inside pytorch_model.bin).
 *
 * It is not an unpickler in Python's sense: nothing is imported, called or
 * run.  It understands the opcodes of protocol 2 (and the few protocol 4 ones:
 * FRAME, SHORT_BINUNICODE, MEMOIZE, STACK_GLOBAL) that a state dict needs,
 * and only these globals: collections.OrderedDict,
 * torch._utils._rebuild_tensor_v2, torch._utils._rebuild_parameter and the
 * plain torch.*Storage types.  Any other global ("os system", "builtins
 * eval", ...) and any other opcode is refused with MT_ERR_FORMAT, naming it.
 * Every size is bounded (objects, memo, stack, marks, string length), since
 * the input is untrusted.
 *
 * The result is the state dict as a list of tensor views: each names its
 * storage (the persistent id's key: the archive member data/<key>), the
 * storage's dtype and element count as the persistent id records them, and
 * the view's offset, size and stride.  Checking a view against its storage's
 * bytes is the caller's job (ptfile.c): this module never sees the storages.
 *
 *     mt_pickle_sd *sd;
 *     if (mt_pickle_state_dict("m.bin: archive/data.pkl", p, n, &sd, &err) == MT_OK) {
 *         for (int i = 0; i < mt_pickle_count(sd); i++)
 *             use(mt_pickle_at(sd, i));
 *         mt_pickle_free(sd);
 *     }
 */
#ifndef MT_PICKLE_H
#define MT_PICKLE_H

#include <stddef.h>
#include <stdint.h>

#include "util/status.h"
#include "tensors.h"

typedef struct {
    char       *name;            /* the state-dict key */
    char       *storage_key;     /* its storage is the member <prefix>/data/<storage_key> */
    const char *storage_type;    /* "FloatStorage", "HalfStorage", ... (static) */
    mt_dtype    dtype;           /* of the storage: never MT_DT_UNKNOWN */
    uint64_t    storage_numel;   /* the storage's element count, as the persistent id says */
    uint64_t    offset;          /* the view's first element in the storage */
    int         rank;
    int64_t     size[MT_MAX_RANK], stride[MT_MAX_RANK];     /* in elements, each >= 0 */
} mt_pickle_tensor;

typedef struct mt_pickle_sd mt_pickle_sd;

/* Read the pickle p[0, n) as a state dict (a dict of name -> tensor, in the
 * pickle's order).  where prefixes every message ("file: member").  p must
 * stay valid only for the call: the result owns copies of what it keeps.
 * On error *out is NULL. */
mt_status mt_pickle_state_dict(const char *where, const uint8_t *p, size_t n, mt_pickle_sd **out, mt_err *err);
int       mt_pickle_count(const mt_pickle_sd *sd);
/* The i-th tensor (0 <= i < count), or NULL.  Owned by sd. */
const mt_pickle_tensor *mt_pickle_at(const mt_pickle_sd *sd, int i);
/* Frees sd and every string it owns; NULL is fine. */
void      mt_pickle_free(mt_pickle_sd *sd);

#endif
