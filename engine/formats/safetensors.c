/* safetensors.c: mmap + validate a .safetensors file (see safetensors.h). */
#include "safetensors.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#define MAX_HEADER ((uint64_t)100000000)   /* the reference reader's MAX_HEADER_SIZE */

/* ---- header parsing ----------------------------------------------------------- */
static int cmp_begin(const void *a, const void *b)
{
    const mt_tensor *x = a, *y = b;
    return x->begin < y->begin ? -1 : x->begin > y->begin ? 1 : (x->end > y->end) - (x->end < y->end);
}


static int json_u64(json_t *j, uint64_t *v)
{
    if (!json_is_integer(j) || json_integer_value(j) < 0)
        return 0;
    *v = (uint64_t)json_integer_value(j);
    return 1;
}

/* One header entry -> t (name already set).  Checks dtype, shape and that the
 * byte size equals numel * element size (with overflow checks). */
static mt_status parse_entry(const char *path, json_t *e, mt_tensor *t, mt_err *err)
{
    json_t *jd = json_object_get(e, "dtype"), *js = json_object_get(e, "shape"),
           *jo = json_object_get(e, "data_offsets");
    if (!json_is_object(e) || !json_is_string(jd) || !json_is_array(js) || !json_is_array(jo) ||
        json_array_size(jo) != 2)
        return mt_err_set(err, MT_ERR_FORMAT, "%s: tensor '%s': header entry needs dtype, shape and "
                          "data_offsets [begin, end]", path, t->name);
    if (!mt_dtype_lookup(json_string_value(jd), &t->dtype, &t->dtype_name))
        return mt_err_set(err, MT_ERR_FORMAT, "%s: tensor '%s': unknown or unsupported dtype '%s'",
                          path, t->name, json_string_value(jd));
    if (json_array_size(js) > MT_MAX_RANK)
        return mt_err_set(err, MT_ERR_FORMAT, "%s: tensor '%s': rank %zu exceeds %d", path, t->name,
                          json_array_size(js), MT_MAX_RANK);
    t->rank = (int)json_array_size(js);
    uint64_t numel = 1;
    for (int i = 0; i < t->rank; i++) {
        uint64_t d;
        if (!json_u64(json_array_get(js, (size_t)i), &d) || d > ((uint64_t)1 << 40))
            return mt_err_set(err, MT_ERR_FORMAT, "%s: tensor '%s': bad shape dimension %d", path, t->name, i);
        if (d && numel > UINT64_MAX / d)
            return mt_err_set(err, MT_ERR_FORMAT, "%s: tensor '%s': shape overflows", path, t->name);
        numel *= d;
        t->shape[i] = (int64_t)d;
    }
    if (!json_u64(json_array_get(jo, 0), &t->begin) || !json_u64(json_array_get(jo, 1), &t->end) ||
        t->end < t->begin)
        return mt_err_set(err, MT_ERR_FORMAT, "%s: tensor '%s': bad data_offsets", path, t->name);
    size_t es = mt_dtype_size(t->dtype);
    if (numel > UINT64_MAX / es || numel * es != t->end - t->begin)
        return mt_err_set(err, MT_ERR_FORMAT, "%s: tensor '%s': data_offsets span %llu bytes but shape x "
                          "%s needs %llu", path, t->name, (unsigned long long)(t->end - t->begin),
                          t->dtype_name, (unsigned long long)(numel * es));
    return MT_OK;
}

/* The tensors sorted by offset must tile [0, data_len) exactly. */
static mt_status check_tiling(mt_wfile *f, uint64_t data_len, mt_err *err)
{
    qsort(f->tensors, (size_t)f->n_tensors, sizeof *f->tensors, cmp_begin);
    uint64_t at = 0;
    for (int i = 0; i < f->n_tensors; i++) {
        const mt_tensor *t = &f->tensors[i];
        if (t->begin < at)
            return mt_err_set(err, MT_ERR_FORMAT, "%s: tensor '%s' overlaps the previous tensor (offset %llu < %llu)",
                              f->path, t->name, (unsigned long long)t->begin, (unsigned long long)at);
        if (t->begin > at)
            return mt_err_set(err, MT_ERR_FORMAT, "%s: hole in the data buffer before tensor '%s' (offset %llu, "
                              "expected %llu)", f->path, t->name, (unsigned long long)t->begin, (unsigned long long)at);
        if (t->end > data_len)
            return mt_err_set(err, MT_ERR_FORMAT, "%s: tensor '%s' ends at %llu, beyond the end of the data "
                              "(%llu bytes): file truncated?", f->path, t->name, (unsigned long long)t->end,
                              (unsigned long long)data_len);
        at = t->end;
    }
    if (at != data_len)
        return mt_err_set(err, MT_ERR_FORMAT, "%s: %llu bytes of data after the last tensor (tensors end at %llu, "
                          "data is %llu bytes)", f->path, (unsigned long long)(data_len - at),
                          (unsigned long long)at, (unsigned long long)data_len);
    return MT_OK;
}

static mt_status parse_header(mt_wfile *f, uint64_t hlen, mt_err *err)
{
    json_error_t je;
    json_t *root = json_loadb((const char *)f->map + 8, (size_t)hlen, JSON_REJECT_DUPLICATES, &je);
    if (!root)
        return mt_err_set(err, MT_ERR_FORMAT, "%s: header is not valid JSON (%s at byte %d)", f->path, je.text,
                          je.position);
    mt_status st = MT_OK;
    if (!json_is_object(root)) {
        st = mt_err_set(err, MT_ERR_FORMAT, "%s: header is not a JSON object", f->path);
        goto out;
    }
    f->tensors = calloc(json_object_size(root) + 1, sizeof *f->tensors);
    if (!f->tensors) {
        st = mt_err_set(err, MT_ERR_NOMEM, "%s: out of memory", f->path);
        goto out;
    }
    const char *key;
    json_t *val;
    json_object_foreach(root, key, val) {
        if (strcmp(key, "__metadata__") == 0)
            continue;
        mt_tensor *t = &f->tensors[f->n_tensors];
        if (!(t->name = strdup(key))) {
            st = mt_err_set(err, MT_ERR_NOMEM, "%s: out of memory", f->path);
            goto out;
        }
        f->n_tensors++;
        if ((st = parse_entry(f->path, val, t, err)) != MT_OK)
            goto out;
    }
    uint64_t data_len = f->size - 8 - hlen;
    if ((st = check_tiling(f, data_len, err)) != MT_OK)
        goto out;
    for (int i = 0; i < f->n_tensors; i++)
        f->tensors[i].data = f->map + 8 + hlen + f->tensors[i].begin;
    st = mt_wfile_sort(f, err);
out:
    json_decref(root);
    return st;
}

/* ---- open ------------------------------------------------------------------- */
mt_status mt_st_open(const char *path, mt_wfile **out, mt_err *err)
{
    *out = NULL;
    mt_wfile *f;
    mt_status st = mt_wfile_map(path, "safetensors", 8, &f, err);
    if (st != MT_OK)
        return st;
    uint64_t hlen = 0;
    for (int i = 7; i >= 0; i--)
        hlen = hlen << 8 | f->map[i];            /* little-endian, whatever the host */
    if (hlen > MAX_HEADER || hlen > f->size - 8)
        st = mt_err_set(err, MT_ERR_FORMAT, "%s: header length %llu exceeds the file (%zu bytes) or the "
                        "100 MB limit: truncated or not a safetensors file", path, (unsigned long long)hlen,
                        f->size);
    else
        st = parse_header(f, hlen, err);
    if (st != MT_OK) {
        mt_wfile_close(f);
        return st;
    }
    *out = f;
    return MT_OK;
}
