/* load_util.c: what both loaders (model.c: Marian; llm_load.c: decoder-only
 * LMs) do alike to turn checkpoint tensors into held weights: arrays the
 * model owns, F16/BF16 (and Marian's transposed) tensors as F32, pages of
 * the read-only mapping given back once read, packing a Linear as the
 * products want it, reading a JSON file.  Declared in mt_internal.h. */
#include "mt_internal.h"
#include "util/check.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

void *mt_model_own(mt_model *m, size_t bytes, mt_err *err)
{
    if (mt_grow(&m->owned, &m->cap_owned, (size_t)m->n_owned + 1, sizeof *m->owned, 64) != 0) {
        mt_err_set(err, MT_ERR_NOMEM, "out of memory");
        return NULL;
    }
    void *p = calloc(1, bytes ? bytes : 1);
    if (!p) {
        mt_err_set(err, MT_ERR_NOMEM, "out of memory allocating %zu bytes of weights", bytes);
        return NULL;
    }
    m->owned[m->n_owned++] = p;
    return p;
}

int mt_model_disown(mt_model *m, const void *p)
{
    for (int i = 0; i < m->n_owned; i++)
        if (m->owned[i] == p) {
            free(m->owned[i]);
            m->owned[i] = m->owned[--m->n_owned];
            return 1;
        }
    return 0;
}

void mt_release_pages(const void *p, size_t bytes)
{
    uintptr_t pg = (uintptr_t)sysconf(_SC_PAGESIZE), lo = ((uintptr_t)p + pg - 1) / pg * pg,
              hi = ((uintptr_t)p + bytes) / pg * pg;
    if (hi > lo)
        madvise((void *)lo, hi - lo, MADV_DONTNEED);
}

void mt_release_tensor(const mt_tensor *t)
{
    size_t bytes = mt_dtype_size(t->dtype);
    for (int i = 0; i < t->rank; i++)
        bytes *= (size_t)t->shape[i];
    mt_release_pages(t->data, bytes);
}

/* Element i as stored (F32, F16 or BF16, little-endian on disk). */
static float elem(const mt_tensor *t, size_t i)
{
    const uint8_t *p = t->data;
    if (t->dtype == MT_DT_F32) {
        float f;
        memcpy(&f, p + 4 * i, sizeof f);
        return f;
    }
    uint16_t h = (uint16_t)(p[2 * i] | p[2 * i + 1] << 8);
    return t->dtype == MT_DT_F16 ? mt_f16_to_f32(h) : mt_bf16_to_f32(h);
}

void mt_tensor_to_f32(const mt_tensor *t, float *dst, size_t n)
{
    if (t->transposed && t->rank == 2) {
        size_t rows = (size_t)t->shape[0], cols = (size_t)t->shape[1];     /* stored [cols][rows] */
        for (size_t c = 0; c < cols; c++)
            for (size_t r = 0; r < rows; r++)
                dst[r * cols + c] = elem(t, c * rows + r);
        return;
    }
    if (t->dtype == MT_DT_F32) {
        memcpy(dst, t->data, n * sizeof *dst);
        return;
    }
    for (size_t i = 0; i < n; i++)
        dst[i] = elem(t, i);
}

mt_status mt_check_tensor(const char *file, const char *name, const mt_tensor *t, int64_t d0, int64_t d1,
                          int row_ok, mt_err *err)
{
    if (t->dtype != MT_DT_F32 && t->dtype != MT_DT_F16 && t->dtype != MT_DT_BF16)
        return mt_err_set(err, MT_ERR_FORMAT, "%s: tensor '%s' has dtype %s, expected F32, F16 or BF16", file, name,
                          t->dtype_name);
    int ok = d1 ? t->rank == 2 && t->shape[0] == d0 && t->shape[1] == d1
                : (t->rank == 1 && t->shape[0] == d0) || (row_ok && t->rank == 2 && t->shape[0] == 1 && t->shape[1] == d0);
    if (ok)
        return MT_OK;
    char got[128] = "";
    size_t at = 0;
    for (int i = 0; i < t->rank && at < sizeof got - 24; i++)
        at += (size_t)snprintf(got + at, sizeof got - at, "%s%lld", i ? ", " : "", (long long)t->shape[i]);
    if (d1)
        return mt_err_set(err, MT_ERR_FORMAT, "%s: tensor '%s' has shape [%s], expected [%lld, %lld] from "
                          "config.json", file, name, got, (long long)d0, (long long)d1);
    return mt_err_set(err, MT_ERR_FORMAT, "%s: tensor '%s' has shape [%s], expected [%lld] from config.json", file,
                      name, got, (long long)d0);
}

size_t mt_held_bytes(mt_weights held, int in, int out)
{
    size_t n = held == MT_WEIGHTS_I8 ? mt_k_q8_bytes(in, out) : mt_k_packed_bytes(in, out, held == MT_WEIGHTS_F16);
    return (n + 63) / 64 * 64;
}

void mt_held_pack(mt_weights held, mt_q8_isa isa, long l2, const float *w, int in, int out, void *dst,
                  mt_packed *pk)
{
    if (held == MT_WEIGHTS_I8) {
        mt_k_pack_q8(w, in, out, isa, dst, pk);
        return;
    }
    int f16 = held == MT_WEIGHTS_F16;
    mt_k_pack(w, in, out, f16, dst);
    *pk = (mt_packed){.data = dst, .in = in, .out = out, .f16 = f16, .kc = mt_k_block_k(in, f16, l2)};
}

int mt_path_exists(const char *dir, const char *name, char *path, size_t cap)
{
    struct stat sb;
    snprintf(path, cap, "%s/%s", dir, name);
    return stat(path, &sb) == 0;
}

mt_status mt_read_json_object(const char *path, int required, json_t **out, mt_err *err)
{
    struct stat sb;
    *out = NULL;
    if (stat(path, &sb) != 0) {
        if (!required)
            return MT_OK;
        return mt_err_set(err, MT_ERR_IO, "%s: missing (not a model directory?)", path);
    }
    json_error_t je;
    json_t *root = json_load_file(path, JSON_REJECT_DUPLICATES, &je);
    if (!root)
        return mt_err_set(err, MT_ERR_FORMAT, "%s: invalid JSON: %s (line %d)", path, je.text, je.line);
    if (!json_is_object(root)) {
        json_decref(root);
        return mt_err_set(err, MT_ERR_FORMAT, "%s: not a JSON object", path);
    }
    *out = root;
    return MT_OK;
}
