/* fuzz_safetensors: a .safetensors file from untrusted bytes, through the one
 * entry point the loader uses, mt_st_open (engine/formats/safetensors.c): the u64
 * header length against the file size and the 100 MB cap, the JSON header
 * (jansson, duplicate keys refused), every entry's dtype / shape /
 * data_offsets with overflow checks, __metadata__, and the tiling check
 * (tensors sorted by offset cover the data buffer exactly).
 *
 * After a successful open every promise of safetensors.h is checked: each
 * tensor's bytes lie inside the mapping, its byte size is numel x dtype size,
 * names are sorted and mt_wfile_find finds each one; the F16/BF16 converters run
 * on the data.  The file lives in a memfd (no disk I/O); mt_st_open maps it
 * through /proc/self/fd/N as it would a real file.  The input is the file. */
#include "fuzz_common.h"

#include "formats/safetensors.h"

#include <sys/mman.h>
#include <unistd.h>

static int fd = -1;
static char path[64];

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    fd = fuzz_memfd("fuzz.safetensors", path, sizeof path);
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fuzz_fill_fd(fd, data, size);
    mt_err err = {0};
    mt_wfile *f = NULL;
    mt_status st = mt_st_open(path, &f, &err);
    if (st != MT_OK) {
        FUZZ_CHECK(f == NULL && err.msg[0]);
        FUZZ_CHECK(st == MT_ERR_FORMAT);        /* the file itself is always readable here */
        return 0;
    }
    FUZZ_CHECK(f && f->size == size && f->n_tensors >= 0);
    uint64_t hlen = 0;
    for (int i = 7; i >= 0; i--)
        hlen = hlen << 8 | data[i];
    const uint8_t *lo = f->map + 8 + hlen, *hi = f->map + f->size;
    uint64_t total = 0;
    for (int i = 0; i < f->n_tensors; i++) {
        const mt_tensor *t = &f->tensors[i];
        FUZZ_CHECK(t->name && t->dtype != MT_DT_UNKNOWN && t->dtype_name);
        FUZZ_CHECK(t->rank >= 0 && t->rank <= MT_MAX_RANK && t->end >= t->begin);
        uint64_t numel = 1;
        for (int k = 0; k < t->rank; k++) {
            FUZZ_CHECK(t->shape[k] >= 0);
            numel *= (uint64_t)t->shape[k];
        }
        uint64_t bytes = t->end - t->begin;
        FUZZ_CHECK(numel * mt_dtype_size(t->dtype) == bytes);
        const uint8_t *d = t->data;
        FUZZ_CHECK(d >= lo && d <= hi && bytes <= (uint64_t)(hi - d));
        if (i > 0)
            FUZZ_CHECK(strcmp(f->tensors[i - 1].name, t->name) < 0);
        FUZZ_CHECK(mt_wfile_find(f, t->name) == t);
        total += bytes;
        /* read the first and last element: inside the mapping, or a crash */
        if (bytes >= 2 && (t->dtype == MT_DT_F16 || t->dtype == MT_DT_BF16)) {
            uint16_t a = (uint16_t)(d[0] | d[1] << 8), b = (uint16_t)(d[bytes - 2] | d[bytes - 1] << 8);
            volatile float x = t->dtype == MT_DT_F16 ? mt_f16_to_f32(a) + mt_f16_to_f32(b)
                                                     : mt_bf16_to_f32(a) + mt_bf16_to_f32(b);
            (void)x;
        } else if (bytes) {
            volatile uint8_t x = d[0] ^ d[bytes - 1];
            (void)x;
        }
    }
    FUZZ_CHECK(total == (uint64_t)(hi - lo));         /* the tensors tile the data */
    FUZZ_CHECK(mt_wfile_find(f, "\xff no such tensor") == NULL);
    mt_wfile_close(f);
    return 0;
}
