/* tensors.c: the tensor table shared by the weight-file readers (tensors.h):
 * dtypes, half-precision conversions, the read-only mapping, lookup by name. */
#include "tensors.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

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

int mt_dtype_lookup(const char *s, mt_dtype *dt, const char **name)
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

const char *mt_dtype_name(mt_dtype dt)
{
    for (size_t i = 0; i < N_DTYPES; i++)
        if (DTYPES[i].dt == dt)
            return DTYPES[i].name;
    return "?";
}

/* ---- the table ----------------------------------------------------------------- */
static int cmp_name(const void *a, const void *b)
{
    return strcmp(((const mt_tensor *)a)->name, ((const mt_tensor *)b)->name);
}

mt_status mt_wfile_map(const char *path, const char *format, size_t min_size, mt_wfile **out, mt_err *err)
{
    *out = NULL;
    mt_status st = MT_OK;
    mt_wfile *f = calloc(1, sizeof *f);
    if (!f || !(f->path = strdup(path))) {
        st = mt_err_set(err, MT_ERR_NOMEM, "%s: out of memory", path);
        goto fail;
    }
    f->format = format;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    struct stat sb;
    if (fd < 0)
        st = mt_err_set(err, MT_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
    else if (fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode))
        st = mt_err_set(err, MT_ERR_IO, "%s: not a regular file", path);
    else if ((size_t)sb.st_size < min_size)
        st = mt_err_set(err, MT_ERR_FORMAT, "%s: %lld bytes, too short for a %s file", path,
                        (long long)sb.st_size, format);
    if (st == MT_OK) {
        f->size = (size_t)sb.st_size;
        void *p = mmap(NULL, f->size, PROT_READ, MAP_SHARED, fd, 0);
        if (p == MAP_FAILED)
            st = mt_err_set(err, MT_ERR_IO, "%s: mmap failed: %s", path, strerror(errno));
        else
            f->map = p;
    }
    if (fd >= 0)
        close(fd);
    if (st != MT_OK)
        goto fail;
    *out = f;
    return MT_OK;
fail:
    mt_wfile_close(f);
    return st;
}

mt_status mt_wfile_sort(mt_wfile *f, mt_err *err)
{
    qsort(f->tensors, (size_t)f->n_tensors, sizeof *f->tensors, cmp_name);
    for (int i = 1; i < f->n_tensors; i++)
        if (!strcmp(f->tensors[i - 1].name, f->tensors[i].name))
            return mt_err_set(err, MT_ERR_FORMAT, "%s: tensor '%s' appears twice", f->path, f->tensors[i].name);
    return MT_OK;
}

void mt_wfile_close(mt_wfile *f)
{
    if (!f)
        return;
    for (int i = 0; i < f->n_tensors; i++)
        free(f->tensors[i].name);
    free(f->tensors);
    if (f->reader_free)
        f->reader_free(f->reader);
    if (f->map)
        munmap((void *)f->map, f->size);
    free(f->path);
    free(f);
}

const mt_tensor *mt_wfile_find(const mt_wfile *f, const char *name)
{
    mt_tensor key = {.name = (char *)name};
    if (!f->n_tensors)
        return NULL;
    return bsearch(&key, f->tensors, (size_t)f->n_tensors, sizeof *f->tensors, cmp_name);
}
