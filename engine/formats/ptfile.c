/* ptfile.c: pytorch_model.bin (torch.save's zip) -> the tensor table (ptfile.h).
 *
 * Order of work: map, refuse the legacy format by its first byte, check the
 * zip, find the one top-level folder, read data.pkl as a state dict (never
 * executed: pickle.c interprets a fixed set of names), then check each view
 * against the bytes of its storage member before pointing into it.  The zip
 * reader stays alive as the table's reader state: it owns nothing the
 * tensors point to (they point into the mapping), but keeps the member list
 * for messages and any later lookup.
 */
#include "ptfile.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pickle.h"
#include "zip.h"

#define MAX_MEMBER 512                  /* "<prefix>/data/<key>": torch's keys are short decimals */

/* ---- helpers ------------------------------------------------------------------ */
static void zip_free(void *z)
{
    mt_zip_free(z);
}

static const char *method_name(uint16_t m)
{
    switch (m) {
    case 8:  return "deflate";
    case 9:  return "deflate64";
    case 12: return "bzip2";
    case 14: return "lzma";
    case 93: return "zstd";
    case 95: return "xz";
    case 99: return "AES-encrypted";
    }
    return "an unknown method";
}

/* A member whose bytes we map: present and stored. */
static mt_status stored_member(const char *path, const mt_zip *z, const char *name, const mt_zip_entry **out,
                               mt_err *err)
{
    const mt_zip_entry *e = mt_zip_find(z, name);
    if (!e)
        return mt_err_set(err, MT_ERR_FORMAT, "%s: member %s is missing: not a torch.save archive?", path, name);
    if (e->method != 0 || !e->data)
        return mt_err_set(err, MT_ERR_FORMAT, "%s: member %s is compressed (%s); only stored members can be "
                          "mapped", path, name, method_name(e->method));
    *out = e;
    return MT_OK;
}

/* torch.save puts every member under one folder, named after the file it
 * was first saved as ("archive" in recent versions, anything in older
 * ones); it is found from the first member and required of all. */
static mt_status find_prefix(const char *path, const mt_zip *z, char *prefix, size_t cap, mt_err *err)
{
    const mt_zip_entry *first = mt_zip_at(z, 0);
    const char *slash = first ? strchr(first->name, '/') : NULL;
    if (!slash || slash == first->name || (size_t)(slash - first->name) >= cap)
        return mt_err_set(err, MT_ERR_FORMAT, "%s: not a torch.save archive (no top-level folder holding "
                          "data.pkl)", path);
    size_t len = (size_t)(slash - first->name);
    memcpy(prefix, first->name, len);
    prefix[len] = 0;
    for (int i = 1; i < mt_zip_count(z); i++) {
        const char *n = mt_zip_at(z, i)->name;
        if (strncmp(n, prefix, len) != 0 || n[len] != '/')
            return mt_err_set(err, MT_ERR_FORMAT, "%s: members under more than one top-level folder ('%s' and "
                              "'%s'): not a torch.save archive", path, first->name, n);
    }
    return MT_OK;
}

/* Row-major contiguity, by torch's own rule: dimensions of size 1 may have
 * any stride, and an empty tensor is contiguous. */
static int contiguous(const mt_pickle_tensor *pt)
{
    for (int d = 0; d < pt->rank; d++)
        if (pt->size[d] == 0)
            return 1;
    uint64_t expect = 1;
    for (int d = pt->rank - 1; d >= 0; d--) {
        uint64_t size = (uint64_t)pt->size[d];
        if (size == 1)
            continue;
        if ((uint64_t)pt->stride[d] != expect || expect > UINT64_MAX / size)
            return 0;               /* (an overflowing product is no real tensor either) */
        expect *= size;
    }
    return 1;
}

/* numel of the view, 0 when it overflows 64 bits (*ok cleared). */
static uint64_t view_numel(const mt_pickle_tensor *pt, int *ok)
{
    uint64_t n = 1;
    *ok = 1;
    for (int d = 0; d < pt->rank; d++) {
        uint64_t s = (uint64_t)pt->size[d];
        if (s && n > UINT64_MAX / s)
            *ok = 0;
        n = *ok ? n * s : 0;
    }
    return n;
}

/* ---- one tensor ------------------------------------------------------------------ */
/* Check the view pt against its storage member and fill t.  The view's
 * elements [offset, offset + numel) must lie inside the member's bytes; the
 * member must hold exactly the storage the persistent id describes. */
static mt_status add_tensor(mt_wfile *f, const mt_zip *z, const char *prefix, const mt_pickle_tensor *pt,
                            mt_tensor *t, mt_err *err)
{
    char member[MAX_MEMBER];
    int len = snprintf(member, sizeof member, "%s/data/%s", prefix, pt->storage_key);
    if (len < 0 || (size_t)len >= sizeof member)
        return mt_err_set(err, MT_ERR_FORMAT, "%s: tensor '%s': storage key too long", f->path, pt->name);
    const mt_zip_entry *e;
    if (!mt_zip_find(z, member))
        return mt_err_set(err, MT_ERR_FORMAT, "%s: tensor '%s': its storage %s is not in the archive", f->path,
                          pt->name, member);
    mt_status st = stored_member(f->path, z, member, &e, err);
    if (st != MT_OK)
        return st;
    if (!contiguous(pt))
        return mt_err_set(err, MT_ERR_FORMAT, "%s: tensor '%s' is not contiguous (its strides are not row-major "
                          "for its shape): re-save it with .contiguous()", f->path, pt->name);
    size_t es = mt_dtype_size(pt->dtype);
    int ok;
    uint64_t numel = view_numel(pt, &ok), have = e->size / es;
    if (!ok || pt->offset > have || numel > have - pt->offset)
        return mt_err_set(err, MT_ERR_FORMAT, "%s: tensor '%s' needs elements [%llu, +%llu) of %s, which holds "
                          "%llu bytes (%llu %s elements): storage too short", f->path, pt->name,
                          (unsigned long long)pt->offset, (unsigned long long)numel, member,
                          (unsigned long long)e->size, (unsigned long long)have, mt_dtype_name(pt->dtype));
    if (pt->storage_numel > UINT64_MAX / es || pt->storage_numel * es != e->size)
        return mt_err_set(err, MT_ERR_FORMAT, "%s: %s holds %llu bytes, but the pickle says %llu elements of "
                          "torch.%s", f->path, member, (unsigned long long)e->size,
                          (unsigned long long)pt->storage_numel, pt->storage_type);
    if (!(t->name = strdup(pt->name)))
        return mt_err_set(err, MT_ERR_NOMEM, "%s: out of memory", f->path);
    t->dtype = pt->dtype;
    t->dtype_name = mt_dtype_name(pt->dtype);
    t->rank = pt->rank;
    memcpy(t->shape, pt->size, sizeof t->shape);
    t->begin = e->offset + pt->offset * es;
    t->end = t->begin + numel * es;
    t->data = e->data + pt->offset * es;
    return MT_OK;
}

/* ---- storages seen as one dtype -------------------------------------------------- */
static int cmp_key(const void *a, const void *b)
{
    return strcmp((*(const mt_pickle_tensor *const *)a)->storage_key,
                  (*(const mt_pickle_tensor *const *)b)->storage_key);
}

/* torch.save refuses to write one storage viewed as two dtypes; a file that
 * does so was not written by it, and reinterpreting bytes is never meant. */
static mt_status check_shared(const char *path, const mt_pickle_sd *sd, mt_err *err)
{
    int n = mt_pickle_count(sd);
    const mt_pickle_tensor **by_key = malloc(((size_t)n + 1) * sizeof *by_key);
    if (!by_key)
        return mt_err_set(err, MT_ERR_NOMEM, "%s: out of memory", path);
    for (int i = 0; i < n; i++)
        by_key[i] = mt_pickle_at(sd, i);
    qsort(by_key, (size_t)n, sizeof *by_key, cmp_key);
    mt_status st = MT_OK;
    for (int i = 1; i < n && st == MT_OK; i++)
        if (!strcmp(by_key[i - 1]->storage_key, by_key[i]->storage_key) && by_key[i - 1]->dtype != by_key[i]->dtype)
            st = mt_err_set(err, MT_ERR_FORMAT, "%s: tensors '%s' and '%s' read storage %s as torch.%s and "
                            "torch.%s", path, by_key[i - 1]->name, by_key[i]->name, by_key[i]->storage_key,
                            by_key[i - 1]->storage_type, by_key[i]->storage_type);
    free(by_key);
    return st;
}

/* ---- the archive ------------------------------------------------------------------ */
static mt_status read_state_dict(mt_wfile *f, const mt_zip *z, mt_err *err)
{
    char prefix[256], member[300], where[1024];
    mt_status st = find_prefix(f->path, z, prefix, sizeof prefix, err);
    if (st != MT_OK)
        return st;
    snprintf(member, sizeof member, "%s/data.pkl", prefix);
    const mt_zip_entry *pkl;
    if ((st = stored_member(f->path, z, member, &pkl, err)) != MT_OK)
        return st;
    snprintf(where, sizeof where, "%s: %s", f->path, member);
    mt_pickle_sd *sd;
    if ((st = mt_pickle_state_dict(where, pkl->data, (size_t)pkl->size, &sd, err)) != MT_OK)
        return st;
    int n = mt_pickle_count(sd);
    if (!(f->tensors = calloc((size_t)n + 1, sizeof *f->tensors)))
        st = mt_err_set(err, MT_ERR_NOMEM, "%s: out of memory", f->path);
    for (int i = 0; i < n && st == MT_OK; i++)
        if ((st = add_tensor(f, z, prefix, mt_pickle_at(sd, i), &f->tensors[i], err)) == MT_OK)
            f->n_tensors++;
    if (st == MT_OK)
        st = check_shared(f->path, sd, err);
    mt_pickle_free(sd);
    return st == MT_OK ? mt_wfile_sort(f, err) : st;
}

/* The format torch.save wrote before 1.6 (and with
 * _use_new_zipfile_serialization=False) is a bare pickle stream: it starts
 * with the pickle PROTO opcode, where a zip starts with "PK".  Older still, a
 * tar archive ("ustar" at offset 257). */
static int legacy_format(const uint8_t *map, size_t size)
{
    return (size >= 2 && map[0] == 0x80 && map[1] <= 5) || (size >= 262 && !memcmp(map + 257, "ustar", 5));
}

/* ---- API ---------------------------------------------------------------------------- */
mt_status mt_pt_open(const char *path, mt_wfile **out, mt_err *err)
{
    *out = NULL;
    mt_wfile *f;
    mt_status st = mt_wfile_map(path, "pytorch", 1, &f, err);
    if (st != MT_OK)
        return st;
    mt_zip *z = NULL;
    if (legacy_format(f->map, f->size))
        st = mt_err_set(err, MT_ERR_FORMAT, "%s: legacy torch serialization (a bare pickle, not a zip archive); "
                        "re-save with torch>=1.6", path);
    else if ((st = mt_zip_open(path, f->map, f->size, &z, err)) == MT_OK) {
        f->reader = z;
        f->reader_free = zip_free;
        st = read_state_dict(f, z, err);
    }
    if (st != MT_OK) {
        mt_wfile_close(f);
        return st;
    }
    *out = f;
    return MT_OK;
}
