/* safetensors.c: mmap + validate a .safetensors file (see safetensors.h). */
#include "safetensors.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#define MAX_HEADER ((uint64_t)100000000)   /* the reference reader's MAX_HEADER_SIZE */

/* ---- dtypes ---------------------------------------------------------------- */
static const struct { const char *name; mt_dtype dt; size_t size; } DTYPES[] = {
    {"BOOL", MT_DT_BOOL, 1}, {"U8", MT_DT_U8, 1},   {"I8", MT_DT_I8, 1},     {"I16", MT_DT_I16, 2},
    {"U16", MT_DT_U16, 2},   {"F16", MT_DT_F16, 2}, {"BF16", MT_DT_BF16, 2}, {"I32", MT_DT_I32, 4},
    {"U32", MT_DT_U32, 4},   {"F32", MT_DT_F32, 4}, {"F64", MT_DT_F64, 8},   {"I64", MT_DT_I64, 8},
    {"U64", MT_DT_U64, 8},
};
#define N_DTYPES (sizeof DTYPES / sizeof DTYPES[0])

size_t mt_dtype_size(mt_dtype dt)
{
    for (size_t i = 0; i < N_DTYPES; i++)
        if (DTYPES[i].dt == dt)
            return DTYPES[i].size;
    return 0;
}

static int dtype_lookup(const char *s, mt_dtype *dt, const char **name)
{
    for (size_t i = 0; i < N_DTYPES; i++)
        if (strcmp(DTYPES[i].name, s) == 0) {
            *dt = DTYPES[i].dt;
            *name = DTYPES[i].name;
            return 1;
        }
    return 0;
}

float mt_f16_to_f32(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000) << 16, exp = (h >> 10) & 0x1f, man = h & 0x3ff, bits;
    if (exp == 0x1f) {
        bits = sign | 0x7f800000u | (man << 13);             /* inf / nan */
    } else if (exp != 0) {
        bits = sign | ((exp + 112) << 23) | (man << 13);     /* normal: rebias 15 -> 127 */
    } else if (man == 0) {
        bits = sign;                                         /* signed zero */
    } else {                                                 /* subnormal: normalize */
        int e = -1;
        do { man <<= 1; e++; } while (!(man & 0x400));
        bits = sign | ((uint32_t)(112 - e) << 23) | ((man & 0x3ff) << 13);
    }
    float f;
    memcpy(&f, &bits, sizeof f);
    return f;
}

uint16_t mt_f32_to_f16(float f)
{
    uint32_t x;
    memcpy(&x, &f, sizeof x);
    uint16_t sign = (uint16_t)((x >> 16) & 0x8000);
    uint32_t ax = x & 0x7fffffffu;
    if (ax >= 0x7f800000u)                                   /* inf; nan stays a (quiet) nan */
        return sign | 0x7c00 | (ax > 0x7f800000u ? 0x200 : 0);
    if (ax >= 0x477ff000u)                                   /* rounds beyond 65504 */
        return sign | 0x7c00;
    if (ax >= 0x38800000u) {                                 /* a normal half: round at bit 13, ties to even */
        uint32_t r = ax + 0xfffu + ((ax >> 13) & 1u);
        return sign | (uint16_t)((r - 0x38000000u) >> 13);
    }
    if (ax < 0x33000000u)                                    /* below 2^-25: zero */
        return sign;
    /* a subnormal half counts units of 2^-24: value = m * 2^(e - 150) */
    uint32_t e = ax >> 23, m = (ax & 0x7fffffu) | 0x800000u, shift = 126 - e;
    uint32_t q = m >> shift, rem = m & ((1u << shift) - 1), half = 1u << (shift - 1);
    if (rem > half || (rem == half && (q & 1u)))
        q++;
    return sign | (uint16_t)q;
}

float mt_bf16_to_f32(uint16_t h)
{
    uint32_t bits = (uint32_t)h << 16;
    float f;
    memcpy(&f, &bits, sizeof f);
    return f;
}

/* ---- header parsing ----------------------------------------------------------- */
static int cmp_begin(const void *a, const void *b)
{
    const mt_st_tensor *x = a, *y = b;
    return x->begin < y->begin ? -1 : x->begin > y->begin ? 1 : (x->end > y->end) - (x->end < y->end);
}

static int cmp_name(const void *a, const void *b)
{
    return strcmp(((const mt_st_tensor *)a)->name, ((const mt_st_tensor *)b)->name);
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
static mt_status parse_entry(const char *path, json_t *e, mt_st_tensor *t, mt_err *err)
{
    json_t *jd = json_object_get(e, "dtype"), *js = json_object_get(e, "shape"),
           *jo = json_object_get(e, "data_offsets");
    if (!json_is_object(e) || !json_is_string(jd) || !json_is_array(js) || !json_is_array(jo) ||
        json_array_size(jo) != 2)
        return mt_err_set(err, MT_ERR_FORMAT, "%s: tensor '%s': header entry needs dtype, shape and "
                          "data_offsets [begin, end]", path, t->name);
    if (!dtype_lookup(json_string_value(jd), &t->dtype, &t->dtype_name))
        return mt_err_set(err, MT_ERR_FORMAT, "%s: tensor '%s': unknown or unsupported dtype '%s'",
                          path, t->name, json_string_value(jd));
    if (json_array_size(js) > MT_ST_MAX_RANK)
        return mt_err_set(err, MT_ERR_FORMAT, "%s: tensor '%s': rank %zu exceeds %d", path, t->name,
                          json_array_size(js), MT_ST_MAX_RANK);
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
static mt_status check_tiling(mt_st_file *f, uint64_t data_len, mt_err *err)
{
    qsort(f->tensors, (size_t)f->n_tensors, sizeof *f->tensors, cmp_begin);
    uint64_t at = 0;
    for (int i = 0; i < f->n_tensors; i++) {
        const mt_st_tensor *t = &f->tensors[i];
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

static mt_status parse_header(mt_st_file *f, uint64_t hlen, mt_err *err)
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
        mt_st_tensor *t = &f->tensors[f->n_tensors];
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
    qsort(f->tensors, (size_t)f->n_tensors, sizeof *f->tensors, cmp_name);
out:
    json_decref(root);
    return st;
}

/* ---- open / close ------------------------------------------------------------- */
static mt_status map_file(mt_st_file *f, mt_err *err)
{
    int fd = open(f->path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return mt_err_set(err, MT_ERR_IO, "%s: cannot open: %s", f->path, strerror(errno));
    struct stat sb;
    if (fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode)) {
        close(fd);
        return mt_err_set(err, MT_ERR_IO, "%s: not a regular file", f->path);
    }
    f->size = (size_t)sb.st_size;
    if (f->size < 8) {
        close(fd);
        return mt_err_set(err, MT_ERR_FORMAT, "%s: %zu bytes, too short for a safetensors header", f->path, f->size);
    }
    void *p = mmap(NULL, f->size, PROT_READ, MAP_SHARED, fd, 0);
    close(fd);
    if (p == MAP_FAILED)
        return mt_err_set(err, MT_ERR_IO, "%s: mmap failed: %s", f->path, strerror(errno));
    f->map = p;
    return MT_OK;
}

mt_status mt_st_open(const char *path, mt_st_file **out, mt_err *err)
{
    *out = NULL;
    mt_st_file *f = calloc(1, sizeof *f);
    if (!f || !(f->path = strdup(path))) {
        free(f);
        return mt_err_set(err, MT_ERR_NOMEM, "%s: out of memory", path);
    }
    mt_status st = map_file(f, err);
    if (st == MT_OK) {
        uint64_t hlen = 0;
        for (int i = 7; i >= 0; i--)
            hlen = hlen << 8 | f->map[i];            /* little-endian, whatever the host */
        if (hlen > MAX_HEADER || hlen > f->size - 8)
            st = mt_err_set(err, MT_ERR_FORMAT, "%s: header length %llu exceeds the file (%zu bytes) or the "
                            "100 MB limit: truncated or not a safetensors file", path, (unsigned long long)hlen,
                            f->size);
        else
            st = parse_header(f, hlen, err);
    }
    if (st != MT_OK) {
        mt_st_close(f);
        return st;
    }
    *out = f;
    return MT_OK;
}

void mt_st_close(mt_st_file *f)
{
    if (!f)
        return;
    for (int i = 0; i < f->n_tensors; i++)
        free(f->tensors[i].name);
    free(f->tensors);
    if (f->map)
        munmap((void *)f->map, f->size);
    free(f->path);
    free(f);
}

const mt_st_tensor *mt_st_find(const mt_st_file *f, const char *name)
{
    mt_st_tensor key = {.name = (char *)name};
    return bsearch(&key, f->tensors, (size_t)f->n_tensors, sizeof *f->tensors, cmp_name);
}
