/* fuzz_zip: a ZIP archive from untrusted bytes, through the ZIP reader
 * (engine/formats/zip.c, mt_zip_open on the input in memory) and then through the
 * pytorch_model.bin reader behind it (engine/formats/ptfile.c, mt_pt_open on a memfd
 * holding the same bytes, mapped as a real file would be).
 *
 * zip.c: the EOCD search behind a comment, the ZIP64 locator and record,
 * central entries and their ZIP64 extra fields, names, each local header
 * against its central entry.  After a successful open: every member's name is
 * a C string that mt_zip_find finds (and only it: names are unique), a stored
 * member's bytes lie inside the input, a compressed one has no data pointer.
 *
 * ptfile.c: a torch archive (the seeds are real ones) goes on to its
 * data.pkl and every view against its storage member; after a successful
 * open every tensor lies inside the mapping with numel x dtype-size bytes and
 * the table is sorted.  The input is the file. */
#include "fuzz_common.h"

#include "formats/ptfile.h"
#include "formats/zip.h"

#include <sys/mman.h>
#include <unistd.h>

static int fd = -1;
static char path[64];

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    fd = fuzz_memfd("fuzz.zip", path, sizeof path);
    return 0;
}

static void check_zip(const uint8_t *data, size_t size)
{
    mt_err err = {0};
    mt_zip *z = NULL;
    mt_status st = mt_zip_open("fuzz.zip", data, size, &z, &err);
    if (st != MT_OK) {
        FUZZ_CHECK(z == NULL && err.msg[0] && st == MT_ERR_FORMAT);
        return;
    }
    int n = mt_zip_count(z);
    FUZZ_CHECK(n >= 0 && mt_zip_at(z, n) == NULL && mt_zip_at(z, -1) == NULL);
    for (int i = 0; i < n; i++) {
        const mt_zip_entry *e = mt_zip_at(z, i);
        FUZZ_CHECK(e && e->name && e->name[0]);
        FUZZ_CHECK(mt_zip_find(z, e->name) == e);
        FUZZ_CHECK(e->name[0] != '/' && !strstr(e->name, "/../"));
        FUZZ_CHECK(e->offset <= size);
        if (e->method != 0) {
            FUZZ_CHECK(e->data == NULL);
            continue;
        }
        FUZZ_CHECK(e->data == data + e->offset && e->size <= size - e->offset);
        if (e->size) {
            volatile uint8_t x = e->data[0] ^ e->data[e->size - 1];
            (void)x;
        }
    }
    FUZZ_CHECK(mt_zip_find(z, "\xff no such member") == NULL);
    mt_zip_free(z);
}

static void check_pt(const uint8_t *data, size_t size)
{
    fuzz_fill_fd(fd, data, size);
    mt_err err = {0};
    mt_wfile *f = NULL;
    mt_status st = mt_pt_open(path, &f, &err);
    if (st != MT_OK) {
        FUZZ_CHECK(f == NULL && err.msg[0]);
        FUZZ_CHECK(st == MT_ERR_FORMAT);        /* the file itself is always readable here */
        return;
    }
    FUZZ_CHECK(f->size == size && f->n_tensors >= 0);
    for (int i = 0; i < f->n_tensors; i++) {
        const mt_tensor *t = &f->tensors[i];
        FUZZ_CHECK(t->name && t->dtype != MT_DT_UNKNOWN && t->dtype_name);
        FUZZ_CHECK(t->rank >= 0 && t->rank <= MT_MAX_RANK && t->end >= t->begin && t->end <= f->size);
        uint64_t numel = 1;
        for (int k = 0; k < t->rank; k++) {
            FUZZ_CHECK(t->shape[k] >= 0);
            numel *= (uint64_t)t->shape[k];
        }
        uint64_t bytes = t->end - t->begin;
        FUZZ_CHECK(numel * mt_dtype_size(t->dtype) == bytes);
        const uint8_t *d = t->data;
        FUZZ_CHECK(d == f->map + t->begin);
        if (i > 0)
            FUZZ_CHECK(strcmp(f->tensors[i - 1].name, t->name) < 0);
        FUZZ_CHECK(mt_wfile_find(f, t->name) == t);
        if (bytes) {
            volatile uint8_t x = d[0] ^ d[bytes - 1];
            (void)x;
        }
    }
    mt_wfile_close(f);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    check_zip(data, size);
    check_pt(data, size);
    return 0;
}
