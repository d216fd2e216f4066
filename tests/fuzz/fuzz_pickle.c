/* fuzz_pickle: a torch state-dict pickle (data.pkl) from untrusted bytes,
 * through the restricted reader engine/formats/pickle.c (mt_pickle_state_dict).
 *
 * Covers every opcode it knows (and refuses the rest), the allow-list of
 * globals (GLOBAL and STACK_GLOBAL), the memo, MARK nesting and the stack
 * floor it implies, persistent ids, REDUCE of the allowed callables, BUILD of
 * _metadata, and the limits.  A refusal is MT_ERR_FORMAT with a message that
 * names the input.  After a successful read every tensor has a name, a
 * non-empty storage key without '/', a real dtype, a rank within
 * MT_MAX_RANK and non-negative sizes and strides.  The input is the pickle. */
#include "fuzz_common.h"

#include "formats/pickle.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    mt_err err = {0};
    mt_pickle_sd *sd = NULL;
    mt_status st = mt_pickle_state_dict("fuzz.bin: archive/data.pkl", data, size, &sd, &err);
    if (st != MT_OK) {
        FUZZ_CHECK(sd == NULL && st == MT_ERR_FORMAT);
        FUZZ_CHECK(!strncmp(err.msg, "fuzz.bin: archive/data.pkl: ", 28));
        return 0;
    }
    int n = mt_pickle_count(sd);
    FUZZ_CHECK(sd && n >= 0 && mt_pickle_at(sd, n) == NULL);
    for (int i = 0; i < n; i++) {
        const mt_pickle_tensor *t = mt_pickle_at(sd, i);
        FUZZ_CHECK(t && t->name && t->storage_key && t->storage_key[0] && !strchr(t->storage_key, '/'));
        FUZZ_CHECK(t->dtype != MT_DT_UNKNOWN && mt_dtype_size(t->dtype) > 0 && t->storage_type);
        FUZZ_CHECK(t->rank >= 0 && t->rank <= MT_MAX_RANK);
        for (int d = 0; d < t->rank; d++)
            FUZZ_CHECK(t->size[d] >= 0 && t->stride[d] >= 0);
    }
    mt_pickle_free(sd);
    return 0;
}
