/* npz.c: a numpy .npz archive as a tensor table (npz.h).
 *
 * A .npy member is: "\x93NUMPY", major, minor, the header length (u16 LE in
 * version 1, u32 LE in versions 2 and 3), the header, then the array's bytes.
 * The header is a Python dict literal, e.g.
 *     {'descr': '<f4', 'fortran_order': False, 'shape': (512, 2048), }
 * padded with spaces and ended by '\n'.  numpy and Marian's cnpy write only
 * that form, so the parser below reads only it: string keys and values
 * without escapes, True/False, and a tuple of non-negative integers.
 */
#include "npz.h"

#include <stdlib.h>
#include <string.h>

#include "zip.h"

#define NPY_MAGIC_LEN   6
#define NPY_MAX_HEADER  65536           /* numpy itself reads at most 10000 by default */
#define NPY_MAX_DIM     ((uint64_t)1 << 40)

/* ---- the header dict ------------------------------------------------------------ */
typedef struct {
    const char *s;
    size_t      n, at;
} cursor;

static void skip_ws(cursor *c)
{
    while (c->at < c->n && (c->s[c->at] == ' ' || c->s[c->at] == '\t' || c->s[c->at] == '\n' ||
                            c->s[c->at] == '\r'))
        c->at++;
}

/* Past ch (after blanks): 1, or 0 when the next character is something else. */
static int eat(cursor *c, char ch)
{
    skip_ws(c);
    if (c->at < c->n && c->s[c->at] == ch) {
        c->at++;
        return 1;
    }
    return 0;
}

/* A quoted Python string without escapes into out (cap bytes with the NUL): 1, or 0. */
static int py_str(cursor *c, char *out, size_t cap)
{
    skip_ws(c);
    if (c->at >= c->n || (c->s[c->at] != '\'' && c->s[c->at] != '"'))
        return 0;
    char q = c->s[c->at++];
    size_t len = 0;
    for (; c->at < c->n && c->s[c->at] != q; c->at++) {
        if (c->s[c->at] == '\\' || len + 1 >= cap)
            return 0;
        out[len++] = c->s[c->at];
    }
    if (c->at >= c->n)
        return 0;
    c->at++;
    out[len] = 0;
    return 1;
}

/* The Python words True / False: 1 and *v, or 0. */
static int py_bool(cursor *c, int *v)
{
    skip_ws(c);
    size_t left = c->n - c->at;
    if (left >= 4 && !memcmp(c->s + c->at, "True", 4)) {
        *v = 1;
        c->at += 4;
        return 1;
    }
    if (left >= 5 && !memcmp(c->s + c->at, "False", 5)) {
        *v = 0;
        c->at += 5;
        return 1;
    }
    return 0;
}

/* A non-negative integer up to NPY_MAX_DIM (a Python 2 "L" suffix allowed): 1, or 0. */
static int py_dim(cursor *c, int64_t *v)
{
    skip_ws(c);
    uint64_t x = 0;
    size_t start = c->at;
    for (; c->at < c->n && c->s[c->at] >= '0' && c->s[c->at] <= '9'; c->at++) {
        x = x * 10 + (uint64_t)(c->s[c->at] - '0');
        if (x > NPY_MAX_DIM)
            return 0;
    }
    if (c->at == start)
        return 0;
    if (c->at < c->n && c->s[c->at] == 'L')
        c->at++;
    *v = (int64_t)x;
    return 1;
}

/* "()", "(n,)", "(a, b)", "(a, b,)": 1 and the rank and dims, or 0. */
static int py_shape(cursor *c, int *rank, int64_t *dims)
{
    if (!eat(c, '('))
        return 0;
    *rank = 0;
    if (eat(c, ')'))
        return 1;
    for (;;) {
        if (*rank == MT_MAX_RANK || !py_dim(c, &dims[*rank]))
            return 0;
        (*rank)++;
        int comma = eat(c, ',');
        if (eat(c, ')'))
            return *rank > 1 || comma;      /* Python: "(n)" is an int, not a tuple */
        if (!comma)
            return 0;
    }
}

typedef struct {
    char    descr[16];
    int     fortran, rank;
    int64_t dims[MT_MAX_RANK];
} npy_header;

/* One "key: value" of the dict; a key seen twice or an unknown key is an error. */
static int dict_entry(cursor *c, npy_header *h, unsigned *seen)
{
    char key[16];
    if (!py_str(c, key, sizeof key) || !eat(c, ':'))
        return 0;
    unsigned bit = !strcmp(key, "descr") ? 1u : !strcmp(key, "fortran_order") ? 2u : !strcmp(key, "shape") ? 4u : 0u;
    if (!bit || (*seen & bit))
        return 0;
    *seen |= bit;
    return bit == 1 ? py_str(c, h->descr, sizeof h->descr)
         : bit == 2 ? py_bool(c, &h->fortran)
                    : py_shape(c, &h->rank, h->dims);
}

static int parse_dict(const char *s, size_t n, npy_header *h)
{
    cursor c = {s, n, 0};
    unsigned seen = 0;
    if (!eat(&c, '{'))
        return 0;
    while (!eat(&c, '}')) {
        if (!dict_entry(&c, h, &seen))
            return 0;
        if (!eat(&c, ',')) {
            if (!eat(&c, '}'))
                return 0;
            break;
        }
    }
    skip_ws(&c);
    return seen == 7 && c.at == c.n;        /* only padding after the dict */
}

/* ---- dtypes -------------------------------------------------------------------- */
/* numpy's descr ('<f4', '|u1', ...) -> a tensors.h dtype.  Multi-byte types
 * must be little-endian ('<'); one-byte types have no order ('|', or '<' as
 * cnpy writes them). */
static int npy_dtype(const char *descr, mt_dtype *dt)
{
    static const struct { const char *kind; mt_dtype dt; } TYPES[] = {
        {"f2", MT_DT_F16}, {"f4", MT_DT_F32}, {"f8", MT_DT_F64}, {"i1", MT_DT_I8},  {"i2", MT_DT_I16},
        {"i4", MT_DT_I32}, {"i8", MT_DT_I64}, {"u1", MT_DT_U8},  {"u2", MT_DT_U16}, {"u4", MT_DT_U32},
        {"u8", MT_DT_U64}, {"b1", MT_DT_BOOL},
    };
    if (strlen(descr) != 3)
        return 0;
    for (size_t i = 0; i < sizeof TYPES / sizeof *TYPES; i++) {
        if (strcmp(descr + 1, TYPES[i].kind))
            continue;
        int one_byte = descr[2] == '1';
        if (descr[0] == '<' || (one_byte && (descr[0] == '|' || descr[0] == '=' || descr[0] == '>'))) {
            *dt = TYPES[i].dt;
            return 1;
        }
        return 0;
    }
    return 0;
}

/* ---- one member -------------------------------------------------------------------- */
static uint32_t rd_le(const uint8_t *p, int bytes)
{
    uint32_t v = 0;
    for (int i = bytes - 1; i >= 0; i--)
        v = v << 8 | p[i];
    return v;
}

/* Check the magic and version: the header's offset and length, or an error. */
static mt_status npy_prefix(const char *path, const mt_zip_entry *e, size_t *hoff, size_t *hlen, mt_err *err)
{
    const uint8_t *d = e->data;
    if (e->size < NPY_MAGIC_LEN + 4 || memcmp(d, "\x93NUMPY", NPY_MAGIC_LEN))
        return mt_err_set(err, MT_ERR_FORMAT, "%s: member '%s' is not a .npy array (no \\x93NUMPY magic)", path,
                          e->name);
    int major = d[6];
    if (major < 1 || major > 3)
        return mt_err_set(err, MT_ERR_UNSUPPORTED, "%s: member '%s': .npy format version %d.%d is not supported "
                          "(1, 2 or 3)", path, e->name, major, d[7]);
    int lenbytes = major == 1 ? 2 : 4;
    *hoff = NPY_MAGIC_LEN + 2 + (size_t)lenbytes;
    if (e->size < *hoff)
        return mt_err_set(err, MT_ERR_FORMAT, "%s: member '%s': truncated .npy header", path, e->name);
    *hlen = rd_le(d + NPY_MAGIC_LEN + 2, lenbytes);
    if (*hlen > NPY_MAX_HEADER || *hlen > e->size - *hoff)
        return mt_err_set(err, MT_ERR_FORMAT, "%s: member '%s': .npy header of %zu bytes is longer than the member "
                          "(%llu bytes) or the %d-byte limit", path, e->name, *hlen, (unsigned long long)e->size,
                          NPY_MAX_HEADER);
    return MT_OK;
}

/* The header of member e -> t (name set): dtype, shape, data in place. */
static mt_status parse_npy(const char *path, const mt_zip_entry *e, mt_tensor *t, mt_err *err)
{
    size_t hoff = 0, hlen = 0;
    mt_status st = npy_prefix(path, e, &hoff, &hlen, err);
    if (st != MT_OK)
        return st;
    npy_header h = {0};
    if (!parse_dict((const char *)e->data + hoff, hlen, &h))
        return mt_err_set(err, MT_ERR_FORMAT, "%s: member '%s': the .npy header is not a dict of exactly 'descr', "
                          "'fortran_order' and 'shape' (at most %d dimensions)", path, e->name, MT_MAX_RANK);
    if (!npy_dtype(h.descr, &t->dtype))
        return mt_err_set(err, MT_ERR_UNSUPPORTED, "%s: array '%s': dtype '%s' is not supported (little-endian "
                          "f2/f4/f8, i1-i8, u1-u8, b1)", path, t->name, h.descr);
    if (h.fortran)
        return mt_err_set(err, MT_ERR_UNSUPPORTED, "%s: array '%s' is stored in Fortran order (fortran_order True); "
                          "only C order is supported", path, t->name);
    t->dtype_name = mt_dtype_name(t->dtype);
    t->rank = h.rank;
    uint64_t numel = 1, avail = e->size - hoff - hlen;
    for (int i = 0; i < h.rank; i++) {
        t->shape[i] = h.dims[i];
        if (h.dims[i] && numel > UINT64_MAX / (uint64_t)h.dims[i])
            return mt_err_set(err, MT_ERR_FORMAT, "%s: array '%s': shape overflows", path, t->name);
        numel *= (uint64_t)h.dims[i];
    }
    size_t es = mt_dtype_size(t->dtype);
    if (numel > UINT64_MAX / es)
        return mt_err_set(err, MT_ERR_FORMAT, "%s: array '%s': shape overflows", path, t->name);
    if (numel * es != avail)
        return mt_err_set(err, MT_ERR_FORMAT, "%s: array '%s': %llu elements of %s need %llu bytes but the member "
                          "holds %llu after its header (truncated?)", path, t->name, (unsigned long long)numel,
                          t->dtype_name, (unsigned long long)(numel * es), (unsigned long long)avail);
    t->data = e->data + hoff + hlen;
    t->begin = e->offset + hoff + hlen;
    t->end = t->begin + numel * es;
    return MT_OK;
}

/* ---- the archive ---------------------------------------------------------------------- */
static void zip_free(void *z)
{
    mt_zip_free(z);
}

/* Member e -> tensor t: stored, named "*.npy", a valid array. */
static mt_status add_member(mt_wfile *f, const mt_zip_entry *e, mt_tensor *t, mt_err *err)
{
    size_t len = strlen(e->name);
    if (len <= 4 || strcmp(e->name + len - 4, ".npy"))
        return mt_err_set(err, MT_ERR_FORMAT, "%s: member '%s' is not named '<array>.npy'", f->path, e->name);
    if (e->method != 0 || !e->data)
        return mt_err_set(err, MT_ERR_UNSUPPORTED, "%s: member '%s' is compressed (method %u); only stored members "
                          "are read in place (numpy.savez, not savez_compressed)", f->path, e->name, e->method);
    if (!(t->name = strndup(e->name, len - 4)))
        return mt_err_set(err, MT_ERR_NOMEM, "%s: out of memory", f->path);
    return parse_npy(f->path, e, t, err);
}

mt_status mt_npz_open(const char *path, mt_wfile **out, mt_err *err)
{
    *out = NULL;
    mt_wfile *f;
    mt_status st = mt_wfile_map(path, "marian-npz", 22, &f, err);       /* 22: an empty ZIP */
    if (st != MT_OK)
        return st;
    mt_zip *z = NULL;
    if ((st = mt_zip_open(path, f->map, f->size, &z, err)) == MT_OK) {
        f->reader = z;
        f->reader_free = zip_free;
        int n = mt_zip_count(z);
        if (!(f->tensors = calloc((size_t)n + 1, sizeof *f->tensors)))
            st = mt_err_set(err, MT_ERR_NOMEM, "%s: out of memory", path);
        for (int i = 0; st == MT_OK && i < n; i++)
            st = add_member(f, mt_zip_at(z, i), &f->tensors[f->n_tensors++], err);
        if (st == MT_OK)
            st = mt_wfile_sort(f, err);
    }
    if (st != MT_OK) {
        mt_wfile_close(f);
        return st;
    }
    *out = f;
    return MT_OK;
}
