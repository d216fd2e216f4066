/* gen_opus.c: regenerate a random-weight OPUS-MT model of a real published
 * configuration in every file form the loaders read (test-only, no engine).
 *
 *   gen_opus [--full-depth] [--gain G] [--signed-ln] [--forms F,...] <fixture-dir> <out-dir>
 *
 * Without options it writes the test models (make opus-models, byte for byte
 * what tests/test_opus.c expects).  The options make benchmark models (make
 * bench-models): --full-depth keeps the published depth (gen.json's "layers"
 * ignored), --gain G draws Linear weights with gain G / sqrt(in) instead of
 * 5 / sqrt(in) (calm enough that 12 layers do not turn float32 rounding into
 * different tokens), --signed-ln draws the LayerNorm weights in [-1, 1) (so
 * calm weights do not decode every source to one token repeated), --forms
 * writes only the forms listed.
 *
 * <fixture-dir> is tests/fixtures/opus-mt/<model>: config.json and the
 * tokenizer files as published, gen.json (what to change: "layers",
 * "spm_dir" when the .spm files live elsewhere, "marian_weights": false for a
 * model.npz of the options alone) and pt/ (torch.save's small
 * members and their manifest, written once by models/recipe/opus_fixtures.py).
 * Writes, under <out-dir>:
 *
 *   safetensors-f32/  model.safetensors (F32) + config.json + tokenizer files
 *   safetensors-f16/  the same in F16, config.json torch_dtype "float16"
 *   pytorch/          pytorch_model.bin (no safetensors): byte for byte what
 *                     torch 1.13's torch.save writes for HF's state dict
 *   marian/           model.npz (byte for byte numpy.savez's), decoder.yml,
 *                     source.spm, target.spm and the vocabulary .yml file(s):
 *                     the layout of an OPUS-MT release
 *
 * Every weight comes from one formula, implemented identically in
 * models/recipe/opus_fixtures.py (its docstring, and tests/fixtures/opus-mt/
 * README.md, state it in full): for the tensor's Hugging Face name N and the
 * flat row-major index i of an element,
 *
 *   x = splitmix64(fnv1a64(N) + i);  u = ((int64)(x >> 40) - 2^23) * 2^-23;
 *   value = offset + (float)(u * gain)      (float32 arithmetic, no FMA)
 *
 * with gain/offset by tensor kind, and the <pad> row (the last of every
 * vocabulary-sized tensor) zero.  Build with -ffp-contract=off.
 */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <jansson.h>
#include <zlib.h>

#define MAX_TENSORS 1024

static void die(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "gen_opus: ");
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "\n");
    va_end(ap);
    exit(1);
}

static void *xmalloc(size_t n)
{
    void *p = malloc(n ? n : 1);
    if (!p)
        die("out of memory (%zu bytes)", n);
    return p;
}

/* ---- the formula ------------------------------------------------------------------ */
static uint64_t fnv1a64(const char *s)
{
    uint64_t h = 0xcbf29ce484222325ULL;
    for (; *s; s++) {
        h ^= (uint8_t)*s;
        h *= 0x100000001b3ULL;
    }
    return h;
}

static inline uint64_t splitmix64(uint64_t z)
{
    z += 0x9e3779b97f4a7c15ULL;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

typedef enum { K_TABLE, K_HEAD, K_LOGITS_BIAS, K_LINEAR, K_BIAS, K_LN_WEIGHT, K_LN_BIAS } kind;

/* The Linear weights' gain numerator: G / sqrt(in).  5 for the test models (and
 * by default); --gain sets it for bench models (calm enough at full depth that
 * float32 rounding does not flip tokens: bench/calm.py). */
static double linear_gain = 5.0;

/* LayerNorm weights: 1 + 0.1 u by default; --signed-ln draws them as u, in [-1, 1).
 * With tied embeddings and calm weights the residual stream carries the input
 * token's embedding to the top, so its own logit wins and every output repeats
 * one token; random signs on the LayerNorm scales break that (bench/calm.py). */
static float ln_gain = 0.1f, ln_offset = 1.0f;

typedef struct {
    char     name[160];
    kind     k;
    int      rank;
    int64_t  shape[2];          /* Hugging Face layout: [out][in] for Linear weights */
    float   *data;
} tensor;

static size_t numel(const tensor *t) { return (size_t)t->shape[0] * (size_t)(t->rank == 2 ? t->shape[1] : 1); }

static void gain_of(const tensor *t, float *gain, float *offset)
{
    *gain = 0.0f;
    *offset = 0.0f;
    switch (t->k) {
    case K_TABLE:
    case K_HEAD:        *gain = 0.1f; break;
    case K_LOGITS_BIAS: *gain = 0.2f; break;
    case K_LINEAR:      *gain = (float)(linear_gain / sqrt((double)t->shape[1])); break;
    case K_BIAS:        *gain = 0.01f; break;
    case K_LN_WEIGHT:   *gain = ln_gain; *offset = ln_offset; break;
    case K_LN_BIAS:     *gain = 0.01f; break;
    }
}

static void generate(tensor *t)
{
    size_t n = numel(t);
    float gain, offset;
    gain_of(t, &gain, &offset);
    t->data = xmalloc(n * sizeof(float));
    uint64_t h = fnv1a64(t->name);
    for (size_t i = 0; i < n; i++) {
        uint64_t x = splitmix64(h + (uint64_t)i);
        float u = (float)((int64_t)(x >> 40) - (INT64_C(1) << 23)) * 0x1p-23f;
        float v = u * gain;
        t->data[i] = offset != 0.0f ? offset + v : v;
    }
    if (t->k == K_TABLE || t->k == K_HEAD)         /* the <pad> row: last, zero */
        memset(t->data + (size_t)(t->shape[0] - 1) * (size_t)t->shape[1], 0, sizeof(float) * (size_t)t->shape[1]);
    else if (t->k == K_LOGITS_BIAS)
        t->data[n - 1] = 0.0f;
}

/* ---- the model's tensors --------------------------------------------------------------- */
typedef struct {
    int d, enc_layers, dec_layers, enc_ffn, dec_ffn, heads, V, Vt, shared, tied, ln_emb, pad, eos, beams;
    const char *act;
} dims;

typedef struct {
    tensor t[MAX_TENSORS];
    int    n;
} model;

static tensor *add(model *m, kind k, int64_t d0, int64_t d1, const char *fmt, ...)
{
    if (m->n == MAX_TENSORS)
        die("too many tensors");
    tensor *t = &m->t[m->n++];
    memset(t, 0, sizeof *t);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(t->name, sizeof t->name, fmt, ap);
    va_end(ap);
    t->k = k;
    t->rank = d1 ? 2 : 1;
    t->shape[0] = d0;
    t->shape[1] = d1;
    return t;
}

static void add_attn(model *m, int d, const char *p)
{
    static const char *const proj[] = {"k_proj", "v_proj", "q_proj", "out_proj"};   /* HF's order */
    for (int i = 0; i < 4; i++) {
        add(m, K_LINEAR, d, d, "%s.%s.weight", p, proj[i]);
        add(m, K_BIAS, d, 0, "%s.%s.bias", p, proj[i]);
    }
}

static void add_ln(model *m, int d, const char *p)
{
    add(m, K_LN_WEIGHT, d, 0, "%s.weight", p);
    add(m, K_LN_BIAS, d, 0, "%s.bias", p);
}

static void add_ffn(model *m, int d, int f, const char *p)
{
    add(m, K_LINEAR, f, d, "%s.fc1.weight", p);
    add(m, K_BIAS, f, 0, "%s.fc1.bias", p);
    add(m, K_LINEAR, d, f, "%s.fc2.weight", p);
    add(m, K_BIAS, d, 0, "%s.fc2.bias", p);
}

/* The generated tensors, in Hugging Face's state_dict order (opus_fixtures.tensor_specs). */
static void build(model *m, const dims *c)
{
    char p[128], q[160];
    int d = c->d;
    add(m, K_LOGITS_BIAS, 1, c->Vt, "final_logits_bias");
    add(m, K_TABLE, c->V, d, c->shared ? "model.shared.weight" : "model.encoder.embed_tokens.weight");
    for (int i = 0; i < c->enc_layers; i++) {
        snprintf(p, sizeof p, "model.encoder.layers.%d", i);
        snprintf(q, sizeof q, "%s.self_attn", p);
        add_attn(m, d, q);
        snprintf(q, sizeof q, "%s.self_attn_layer_norm", p);
        add_ln(m, d, q);
        add_ffn(m, d, c->enc_ffn, p);
        snprintf(q, sizeof q, "%s.final_layer_norm", p);
        add_ln(m, d, q);
    }
    if (c->ln_emb)
        add_ln(m, d, "model.encoder.layernorm_embedding");
    if (!c->shared)
        add(m, K_TABLE, c->Vt, d, "model.decoder.embed_tokens.weight");
    for (int i = 0; i < c->dec_layers; i++) {
        snprintf(p, sizeof p, "model.decoder.layers.%d", i);
        snprintf(q, sizeof q, "%s.self_attn", p);
        add_attn(m, d, q);
        snprintf(q, sizeof q, "%s.self_attn_layer_norm", p);
        add_ln(m, d, q);
        snprintf(q, sizeof q, "%s.encoder_attn", p);
        add_attn(m, d, q);
        snprintf(q, sizeof q, "%s.encoder_attn_layer_norm", p);
        add_ln(m, d, q);
        add_ffn(m, d, c->dec_ffn, p);
        snprintf(q, sizeof q, "%s.final_layer_norm", p);
        add_ln(m, d, q);
    }
    if (c->ln_emb)
        add_ln(m, d, "model.decoder.layernorm_embedding");
    if (!c->tied)
        add(m, K_HEAD, c->Vt, d, "lm_head.weight");
    for (int i = 0; i < m->n; i++)
        generate(&m->t[i]);
}

static const tensor *find(const model *m, const char *name)
{
    for (int i = 0; i < m->n; i++)
        if (!strcmp(m->t[i].name, name))
            return &m->t[i];
    return NULL;
}

/* ---- files ------------------------------------------------------------------------------ */
#define PATH_CAP 4096

/* dst = a/b, or die: paths are never silently cut. */
static char *join(char *dst, const char *a, const char *b)
{
    int n = snprintf(dst, PATH_CAP, "%s/%s", a, b);
    if (n < 0 || n >= PATH_CAP)
        die("path too long: %s/%s", a, b);
    return dst;
}

static void mkdirs(const char *path)
{
    char buf[PATH_CAP];
    snprintf(buf, sizeof buf, "%s", path);
    for (char *s = buf + 1; *s; s++)
        if (*s == '/') {
            *s = 0;
            if (mkdir(buf, 0755) && errno != EEXIST)
                die("mkdir %s: %s", buf, strerror(errno));
            *s = '/';
        }
    if (mkdir(buf, 0755) && errno != EEXIST)
        die("mkdir %s: %s", buf, strerror(errno));
}

static int exists(const char *path)
{
    struct stat sb;
    return stat(path, &sb) == 0;
}

static char *read_file(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        die("%s: %s", path, strerror(errno));
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *buf = xmalloc((size_t)n + 1);
    if (fread(buf, 1, (size_t)n, f) != (size_t)n)
        die("%s: short read", path);
    fclose(f);
    buf[n] = 0;
    *len = (size_t)n;
    return buf;
}

typedef struct {
    FILE    *f;
    char     path[PATH_CAP];
    uint64_t at;                /* bytes written */
} out;

static void out_open(out *o, const char *dir, const char *name)
{
    join(o->path, dir, name);
    o->f = fopen(o->path, "wb");
    if (!o->f)
        die("%s: %s", o->path, strerror(errno));
    setvbuf(o->f, NULL, _IOFBF, 1 << 20);
    o->at = 0;
}

static void put(out *o, const void *p, size_t n)
{
    if (n && fwrite(p, 1, n, o->f) != n)
        die("%s: write failed: %s", o->path, strerror(errno));
    o->at += n;
}

static void put_u16(out *o, uint16_t v)
{
    uint8_t b[2] = {(uint8_t)v, (uint8_t)(v >> 8)};
    put(o, b, 2);
}

static void put_u32(out *o, uint32_t v)
{
    uint8_t b[4] = {(uint8_t)v, (uint8_t)(v >> 8), (uint8_t)(v >> 16), (uint8_t)(v >> 24)};
    put(o, b, 4);
}

static void put_u64(out *o, uint64_t v)
{
    put_u32(o, (uint32_t)v);
    put_u32(o, (uint32_t)(v >> 32));
}

static void put_str(out *o, const char *s) { put(o, s, strlen(s)); }

static void out_close(out *o)
{
    if (fclose(o->f))
        die("%s: %s", o->path, strerror(errno));
}

static void copy_file(const char *from, const char *dir, const char *name)
{
    size_t n;
    char *buf = read_file(from, &n);
    out o;
    out_open(&o, dir, name);
    put(&o, buf, n);
    out_close(&o);
    free(buf);
}

/* A growable byte buffer (headers, member contents). */
typedef struct {
    char  *p;
    size_t n, cap;
} buf;

static void b_put(buf *b, const void *p, size_t n)
{
    if (b->n + n + 1 > b->cap) {
        b->cap = (b->n + n + 1) * 2;
        b->p = realloc(b->p, b->cap);
        if (!b->p)
            die("out of memory");
    }
    memcpy(b->p + b->n, p, n);
    b->n += n;
    b->p[b->n] = 0;
}

static void b_printf(buf *b, const char *fmt, ...)
{
    char tmp[1024];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(tmp, sizeof tmp, fmt, ap);
    va_end(ap);
    if (n < 0 || (size_t)n >= sizeof tmp)
        die("b_printf: too long");
    b_put(b, tmp, (size_t)n);
}

/* ---- F16 ------------------------------------------------------------------------------- */
/* float -> IEEE half, round to nearest even (numpy's astype(float16)). */
static uint16_t f32_to_f16(float f)
{
    uint32_t x;
    memcpy(&x, &f, 4);
    uint16_t sign = (uint16_t)((x >> 16) & 0x8000);
    uint32_t a = x & 0x7fffffffu;
    if (a >= 0x7f800000u)                               /* inf, nan */
        return sign | (a > 0x7f800000u ? 0x7e00 : 0x7c00);
    if (a >= 0x477ff000u)                               /* rounds to >= 65536: inf */
        return sign | 0x7c00;
    if (a < 0x38800000u) {                              /* below 2^-14: subnormal half (or zero) */
        float v;
        memcpy(&v, &a, 4);
        return sign | (uint16_t)rintf(v * 0x1p24f);     /* exact scaling, then round half to even */
    }
    return sign | (uint16_t)((a - (112u << 23) + 0x0fffu + ((a >> 13) & 1u)) >> 13);
}

/* ---- safetensors ------------------------------------------------------------------------ */
static int by_name(const void *a, const void *b)
{
    return strcmp((*(const tensor *const *)a)->name, (*(const tensor *const *)b)->name);
}

static void write_safetensors(const model *m, const char *dir, int f16)
{
    const tensor *order[MAX_TENSORS];
    for (int i = 0; i < m->n; i++)
        order[i] = &m->t[i];
    qsort(order, (size_t)m->n, sizeof order[0], by_name);     /* one dtype: (alignment, name) = name */
    size_t es = f16 ? 2 : 4;
    buf h = {0};
    b_printf(&h, "{\"__metadata__\":{\"format\":\"pt\"}");
    uint64_t off = 0;
    for (int i = 0; i < m->n; i++) {
        const tensor *t = order[i];
        uint64_t len = numel(t) * es;
        b_printf(&h, ",\"%s\":{\"dtype\":\"%s\",\"shape\":[%lld", t->name, f16 ? "F16" : "F32", (long long)t->shape[0]);
        if (t->rank == 2)
            b_printf(&h, ",%lld", (long long)t->shape[1]);
        b_printf(&h, "],\"data_offsets\":[%llu,%llu]}", (unsigned long long)off, (unsigned long long)(off + len));
        off += len;
    }
    b_put(&h, "}", 1);
    while (h.n % 8)
        b_put(&h, " ", 1);
    out o;
    out_open(&o, dir, "model.safetensors");
    put_u64(&o, h.n);
    put(&o, h.p, h.n);
    uint16_t *half = NULL;
    for (int i = 0; i < m->n; i++) {
        const tensor *t = order[i];
        size_t n = numel(t);
        if (!f16) {
            put(&o, t->data, n * 4);
            continue;
        }
        half = realloc(half, n * 2);
        if (!half)
            die("out of memory");
        for (size_t j = 0; j < n; j++)
            half[j] = f32_to_f16(t->data[j]);
        put(&o, half, n * 2);
    }
    free(half);
    free(h.p);
    out_close(&o);
}

/* ---- pytorch_model.bin: the zip torch 1.13's PyTorchStreamWriter (miniz) writes ---------- */
typedef struct {
    char     name[256];
    uint32_t crc, size;
    uint64_t offset;
} zentry;

/* Local header with torch's "FB" padding extra field so the data starts 64-byte
 * aligned, the data, then a data descriptor (flags bit 3; sizes < 4 GiB). */
static void torch_member(out *o, zentry *e, const char *name, const void *data, size_t n)
{
    if (n >= 0xffffffffu || o->at >= 0xffffffffu)
        die("%s: member %s: ZIP64 sizes are not implemented", o->path, name);
    size_t nl = strlen(name);
    snprintf(e->name, sizeof e->name, "%s", name);
    e->offset = o->at;
    e->size = (uint32_t)n;
    e->crc = (uint32_t)crc32(crc32(0L, Z_NULL, 0), data, (uInt)n);
    size_t start = (size_t)o->at + 30 + nl + 4;
    size_t pad = (64 - start % 64) % 64;
    put_u32(o, 0x04034b50);
    put_u16(o, 0);                      /* version needed */
    put_u16(o, 0x0808);                 /* data descriptor, UTF-8 names */
    put_u16(o, 0);                      /* stored */
    put_u16(o, 0);                      /* time */
    put_u16(o, 0);                      /* date */
    put_u32(o, 0);                      /* crc, sizes: in the descriptor */
    put_u32(o, 0);
    put_u32(o, 0);
    put_u16(o, (uint16_t)nl);
    put_u16(o, (uint16_t)(pad + 4));
    put(o, name, nl);
    put(o, "FB", 2);
    put_u16(o, (uint16_t)pad);
    for (size_t i = 0; i < pad; i++)
        put(o, "Z", 1);
    put(o, data, n);
    put_u32(o, 0x08074b50);
    put_u32(o, e->crc);
    put_u32(o, e->size);
    put_u32(o, e->size);
}

static void torch_central(out *o, const zentry *e, int n)
{
    uint64_t cd = o->at;
    for (int i = 0; i < n; i++) {
        put_u32(o, 0x02014b50);
        put_u16(o, 0);                  /* made by */
        put_u16(o, 0);                  /* needed */
        put_u16(o, 0x0808);
        put_u16(o, 0);
        put_u16(o, 0);
        put_u16(o, 0);
        put_u32(o, e[i].crc);
        put_u32(o, e[i].size);
        put_u32(o, e[i].size);
        put_u16(o, (uint16_t)strlen(e[i].name));
        put_u16(o, 0);                  /* extra */
        put_u16(o, 0);                  /* comment */
        put_u16(o, 0);                  /* disk */
        put_u16(o, 0);                  /* internal attributes */
        put_u32(o, 0);                  /* external attributes */
        put_u32(o, (uint32_t)e[i].offset);
        put_str(o, e[i].name);
    }
    uint64_t cd_size = o->at - cd, z64 = o->at;
    put_u32(o, 0x06064b50);             /* ZIP64 end of central directory record */
    put_u64(o, 44);
    put_u16(o, 0x031e);
    put_u16(o, 0x002d);
    put_u32(o, 0);
    put_u32(o, 0);
    put_u64(o, (uint64_t)n);
    put_u64(o, (uint64_t)n);
    put_u64(o, cd_size);
    put_u64(o, cd);
    put_u32(o, 0x07064b50);             /* its locator */
    put_u32(o, 0);
    put_u64(o, z64);
    put_u32(o, 1);
    put_u32(o, 0x06054b50);             /* end of central directory */
    put_u16(o, 0);
    put_u16(o, 0);
    put_u16(o, (uint16_t)n);
    put_u16(o, (uint16_t)n);
    put_u32(o, (uint32_t)cd_size);
    put_u32(o, (uint32_t)cd);
    put_u16(o, 0);
}

static void write_pytorch(const model *m, const char *fix, const char *dir)
{
    char path[PATH_CAP], pt[PATH_CAP];
    join(path, join(pt, fix, "pt"), "manifest.json");
    json_error_t je;
    json_t *man = json_load_file(path, 0, &je);
    if (!man)
        die("%s:%d: %s", path, je.line, je.text);
    json_t *members = json_object_get(man, "members");
    int n = (int)json_array_size(members);
    if (n <= 0 || n > MAX_TENSORS + 8)
        die("%s: no members", path);
    zentry *e = xmalloc(sizeof(zentry) * (size_t)n);
    out o;
    out_open(&o, dir, "pytorch_model.bin");
    for (int i = 0; i < n; i++) {
        json_t *mb = json_array_get(members, (size_t)i);
        const char *name = json_string_value(json_object_get(mb, "name"));
        const char *file = json_string_value(json_object_get(mb, "file"));
        const char *tname = json_string_value(json_object_get(mb, "tensor"));
        if (!name || (!file == !tname))
            die("%s: member %d: needs a name and one of file, tensor", path, i);
        if (file) {
            char fp[PATH_CAP];
            size_t len;
            char *data = read_file(join(fp, pt, file), &len);
            torch_member(&o, &e[i], name, data, len);
            free(data);
            continue;
        }
        const tensor *t = find(m, tname);
        if (!t)
            die("%s: member %s: no tensor %s in this config", path, name, tname);
        const char *dt = json_string_value(json_object_get(mb, "dtype"));
        if (!dt || strcmp(dt, "F32") || (size_t)json_integer_value(json_object_get(mb, "numel")) != numel(t))
            die("%s: member %s: dtype/numel disagree with %s", path, name, tname);
        torch_member(&o, &e[i], name, t->data, numel(t) * 4);
    }
    torch_central(&o, e, n);
    out_close(&o);
    free(e);
    json_decref(man);
}

/* ---- model.npz: numpy.savez's zip of .npy members ------------------------------------------ */
/* An .npy v1.0 header as numpy 1.24 writes it (padded so the data starts at a
 * multiple of 64, always at least one pad byte, ended by '\n'). */
static void npy_header(buf *b, const char *descr, int rank, const int64_t *shape)
{
    char dict[256];
    int n = snprintf(dict, sizeof dict, "{'descr': '%s', 'fortran_order': False, 'shape': (", descr);
    for (int i = 0; i < rank; i++)
        n += snprintf(dict + n, sizeof dict - (size_t)n, i ? ", %lld" : "%lld", (long long)shape[i]);
    n += snprintf(dict + n, sizeof dict - (size_t)n, rank == 1 ? ",), }" : "), }");
    size_t hlen = (size_t)n + 1;
    size_t padlen = 64 - (8 + 2 + hlen) % 64;
    b_put(b, "\x93NUMPY\x01\x00", 8);
    uint16_t total = (uint16_t)(hlen + padlen);
    uint8_t le[2] = {(uint8_t)total, (uint8_t)(total >> 8)};
    b_put(b, le, 2);
    b_put(b, dict, (size_t)n);
    for (size_t i = 0; i < padlen; i++)
        b_put(b, " ", 1);
    b_put(b, "\n", 1);
}

typedef struct {
    char        name[128];      /* Marian's name */
    int         rank;
    int64_t     shape[2];
    const float *src;           /* HF tensor */
    int         how;            /* 0 copy rows [0, shape[0]) ; 1 transpose (HF [out][in] -> [in][out]) */
    int64_t     src_cols;       /* HF row length, for transposes */
} npz_item;

static int by_mname(const void *a, const void *b)
{
    return strcmp(((const npz_item *)a)->name, ((const npz_item *)b)->name);
}

/* HF name -> Marian's (convert_marian_to_pytorch.py's BART_CONVERTER, read backwards). */
static int marian_item(const tensor *t, npz_item *it)
{
    memset(it, 0, sizeof *it);
    it->src = t->data;
    int d = (int)(t->rank == 2 ? t->shape[1] : t->shape[0]);
    if (!strcmp(t->name, "final_logits_bias")) {        /* [1, V-1]: no <pad> entry */
        snprintf(it->name, sizeof it->name, "decoder_ff_logit_out_b");
        it->rank = 2, it->shape[0] = 1, it->shape[1] = t->shape[1] - 1;
        return 1;
    }
    if (t->k == K_TABLE) {                              /* [V-1, d]: no <pad> row, not transposed */
        snprintf(it->name, sizeof it->name, "%s", !strcmp(t->name, "model.shared.weight") ? "Wemb" :
                 strstr(t->name, "encoder") ? "encoder_Wemb" : "decoder_Wemb");
        it->rank = 2, it->shape[0] = t->shape[0] - 1, it->shape[1] = t->shape[1];
        return 1;
    }
    if (t->k == K_HEAD) {                               /* [d, V-1] */
        snprintf(it->name, sizeof it->name, "decoder_ff_logit_out_W");
        it->rank = 2, it->shape[0] = t->shape[1], it->shape[1] = t->shape[0] - 1;
        it->how = 1, it->src_cols = t->shape[1];
        return 1;
    }
    const char *side = strstr(t->name, "model.encoder.") == t->name ? "encoder" : "decoder";
    int w = strstr(t->name, ".weight") != NULL;
    if (strstr(t->name, ".layernorm_embedding.")) {     /* Marian's transformer-postprocess-emb "n" */
        snprintf(it->name, sizeof it->name, "%s_emb_ln_%s_pre", side, w ? "scale" : "bias");
        it->rank = 2, it->shape[0] = 1, it->shape[1] = t->shape[0];
        return 1;
    }
    int layer;
    char mod[96];
    if (sscanf(t->name + strlen("model.encoder.layers."), "%d.%95s", &layer, mod) != 2)
        die("no Marian name for %s", t->name);
    char *dot = strrchr(mod, '.');
    *dot = 0;                                           /* mod: "self_attn.q_proj", "fc1", ... */
    static const char *const map[][2] = {
        {"self_attn.q_proj", "self_Wq"}, {"self_attn.k_proj", "self_Wk"}, {"self_attn.v_proj", "self_Wv"},
        {"self_attn.out_proj", "self_Wo"}, {"encoder_attn.q_proj", "context_Wq"},
        {"encoder_attn.k_proj", "context_Wk"}, {"encoder_attn.v_proj", "context_Wv"},
        {"encoder_attn.out_proj", "context_Wo"}, {"fc1", "ffn_W1"}, {"fc2", "ffn_W2"},
        {"self_attn_layer_norm", "self_Wo_ln"}, {"encoder_attn_layer_norm", "context_Wo_ln"},
        {"final_layer_norm", "ffn_ffn_ln"}};
    const char *mn = NULL;
    for (size_t i = 0; i < sizeof map / sizeof map[0]; i++)
        if (!strcmp(mod, map[i][0]))
            mn = map[i][1];
    if (!mn)
        die("no Marian name for %s", t->name);
    if (t->k == K_LN_WEIGHT || t->k == K_LN_BIAS) {
        snprintf(it->name, sizeof it->name, "%s_l%d_%s_%s", side, layer + 1, mn, w ? "scale" : "bias");
    } else if (t->k == K_BIAS) {                        /* self_Wq -> self_bq, ffn_W1 -> ffn_b1 */
        char b[32];
        snprintf(b, sizeof b, "%s", mn);
        char *W = strrchr(b, 'W');
        *W = 'b';
        snprintf(it->name, sizeof it->name, "%s_l%d_%s", side, layer + 1, b);
    } else {
        snprintf(it->name, sizeof it->name, "%s_l%d_%s", side, layer + 1, mn);
    }
    if (t->k == K_LINEAR) {                             /* [in, out] */
        it->rank = 2, it->shape[0] = t->shape[1], it->shape[1] = t->shape[0];
        it->how = 1, it->src_cols = t->shape[1];
    } else {                                            /* biases and LayerNorm: [1, n] */
        it->rank = 2, it->shape[0] = 1, it->shape[1] = d;
    }
    return 1;
}

typedef struct {
    char     name[160];
    uint32_t crc, size;
    uint64_t offset;
} nentry;

/* One member as Python's zipfile writes it for numpy.savez (force_zip64: a
 * ZIP64 extra field with the real sizes in the local header only). */
static void npz_member(out *o, nentry *e, const char *name, const buf *hdr, const void *data, size_t n)
{
    size_t total = hdr->n + n, nl = strlen(name);
    if (total >= 0xffffffffu || o->at >= 0xffffffffu)
        die("%s: member %s: ZIP64 sizes are not implemented", o->path, name);
    snprintf(e->name, sizeof e->name, "%s", name);
    e->offset = o->at;
    e->size = (uint32_t)total;
    uLong crc = crc32(0L, Z_NULL, 0);
    crc = crc32(crc, (const Bytef *)hdr->p, (uInt)hdr->n);
    const uint8_t *p = data;
    for (size_t done = 0; done < n;) {
        size_t k = n - done > (1u << 30) ? (1u << 30) : n - done;
        crc = crc32(crc, p + done, (uInt)k);
        done += k;
    }
    e->crc = (uint32_t)crc;
    put_u32(o, 0x04034b50);
    put_u16(o, 20);
    put_u16(o, 0);
    put_u16(o, 0);
    put_u16(o, 0);                      /* 00:00:00 */
    put_u16(o, 0x0021);                 /* 1980-01-01 */
    put_u32(o, e->crc);
    put_u32(o, e->size);
    put_u32(o, e->size);
    put_u16(o, (uint16_t)nl);
    put_u16(o, 20);
    put(o, name, nl);
    put_u16(o, 0x0001);
    put_u16(o, 16);
    put_u64(o, total);
    put_u64(o, total);
    put(o, hdr->p, hdr->n);
    put(o, data, n);
}

static void npz_central(out *o, const nentry *e, int n)
{
    uint64_t cd = o->at;
    for (int i = 0; i < n; i++) {
        put_u32(o, 0x02014b50);
        put_u16(o, 0x0314);             /* made by: Unix, 2.0 */
        put_u16(o, 20);
        put_u16(o, 0);
        put_u16(o, 0);
        put_u16(o, 0);
        put_u16(o, 0x0021);
        put_u32(o, e[i].crc);
        put_u32(o, e[i].size);
        put_u32(o, e[i].size);
        put_u16(o, (uint16_t)strlen(e[i].name));
        put_u16(o, 0);
        put_u16(o, 0);
        put_u16(o, 0);
        put_u16(o, 0);
        put_u32(o, 0600u << 16);        /* -rw------- */
        put_u32(o, (uint32_t)e[i].offset);
        put_str(o, e[i].name);
    }
    uint64_t cd_size = o->at - cd;
    put_u32(o, 0x06054b50);
    put_u16(o, 0);
    put_u16(o, 0);
    put_u16(o, (uint16_t)n);
    put_u16(o, (uint16_t)n);
    put_u32(o, (uint32_t)cd_size);
    put_u32(o, (uint32_t)cd);
    put_u16(o, 0);
}

/* special:model.yml: the model options Marian saves (EncoderDecoder::getModelParameters,
 * keys sorted as its YAML emitter writes them). */
static void model_yml(buf *y, const dims *c)
{
    b_printf(y, "dec-cell: gru\ndec-cell-base-depth: 2\ndec-cell-high-depth: 1\ndec-depth: %d\n", c->dec_layers);
    b_printf(y, "dim-emb: %d\ndim-rnn: 1024\ndim-vocabs:\n  - %d\n  - %d\n", c->d, c->V - 1, c->Vt - 1);
    b_printf(y, "enc-cell: gru\nenc-cell-depth: 1\nenc-depth: %d\nenc-type: bidirectional\n", c->enc_layers);
    b_printf(y, "input-types:\n  []\nlayer-normalization: false\nlemma-dim-emb: 0\noutput-omit-bias: false\n");
    b_printf(y, "right-left: false\nskip: false\n");
    /* A shared, tied model is trained with --tied-embeddings-all alone (as the published ones):
     * Marian (and convert_marian_to_pytorch) then take the other two as true. */
    int all = c->shared && c->tied;
    b_printf(y, "tied-embeddings: %s\ntied-embeddings-all: %s\ntied-embeddings-src: %s\n",
             !all && c->tied ? "true" : "false", all ? "true" : "false", !all && c->shared ? "true" : "false");
    b_printf(y, "transformer-aan-activation: %s\ntransformer-aan-depth: 2\ntransformer-aan-nogate: false\n", c->act);
    b_printf(y, "transformer-decoder-autoreg: self-attention\ntransformer-dim-aan: %d\ntransformer-dim-ffn: %d\n",
             c->dec_ffn, c->dec_ffn);
    b_printf(y, "transformer-ffn-activation: %s\ntransformer-ffn-depth: 2\n", c->act);
    b_printf(y, "transformer-guided-alignment-layer: last\ntransformer-heads: %d\n", c->heads);
    b_printf(y, "transformer-no-projection: false\ntransformer-pool: false\ntransformer-postprocess: dan\n");
    b_printf(y, "transformer-postprocess-emb: %s\ntransformer-postprocess-top: \"\"\n", c->ln_emb ? "dn" : "d");
    b_printf(y, "transformer-preprocess: \"\"\ntransformer-tied-layers:\n  []\n");
    b_printf(y, "transformer-train-position-embeddings: false\ntype: transformer\nulr: false\nulr-dim-emb: 0\n");
    b_printf(y, "ulr-trainable-transformation: false\nversion: v1.10.0 6f6d4846 2021-02-06 15:35:16 -0800\n");
}

/* options_only: the model.yml member alone, no tensor (gen.json "marian_weights": false). */
static void write_npz(const model *m, const dims *c, const char *dir, int options_only)
{
    npz_item *items = xmalloc(sizeof(npz_item) * (size_t)m->n);
    int n = 0;
    for (int i = 0; i < m->n && !options_only; i++)
        n += marian_item(&m->t[i], &items[n]);
    qsort(items, (size_t)n, sizeof items[0], by_mname);         /* Marian saves a std::map: by name */
    nentry *e = xmalloc(sizeof(nentry) * (size_t)(n + 1));
    out o;
    out_open(&o, dir, "model.npz");
    float *tr = NULL;
    for (int i = 0; i < n; i++) {
        npz_item *it = &items[i];
        buf h = {0};
        npy_header(&h, "<f4", it->rank, it->shape);
        size_t cnt = (size_t)it->shape[0] * (size_t)it->shape[1];
        const float *data = it->src;
        if (it->how == 1) {                                     /* out[r][k] = src[k][r] */
            tr = realloc(tr, cnt * sizeof(float));
            if (!tr)
                die("out of memory");
            size_t rows = (size_t)it->shape[0], cols = (size_t)it->shape[1], sc = (size_t)it->src_cols;
            for (size_t k = 0; k < cols; k++)
                for (size_t r = 0; r < rows; r++)
                    tr[r * cols + k] = it->src[k * sc + r];
            data = tr;
        }
        char name[160];
        snprintf(name, sizeof name, "%s.npy", it->name);
        npz_member(&o, &e[i], name, &h, data, cnt * sizeof(float));
        free(h.p);
    }
    free(tr);
    buf y = {0};
    model_yml(&y, c);
    buf h = {0};
    int64_t len = (int64_t)y.n + 1;                             /* with the NUL Marian writes */
    npy_header(&h, "|i1", 1, &len);
    npz_member(&o, &e[n], "special:model.yml.npy", &h, y.p, (size_t)len);
    npz_central(&o, e, n + 1);
    out_close(&o);
    free(y.p);
    free(h.p);
    free(e);
    free(items);
}

/* ---- Marian's vocabulary .yml ---------------------------------------------------------------- */
/* Decode one UTF-8 character (the files are valid UTF-8: vocab.json came from json). */
static uint32_t utf8_next(const unsigned char **s)
{
    const unsigned char *p = *s;
    uint32_t c = p[0];
    int n = c < 0x80 ? 1 : c < 0xe0 ? 2 : c < 0xf0 ? 3 : 4;
    if (n > 1) {
        c &= 0x3f >> (n - 1);
        for (int i = 1; i < n; i++)
            c = (c << 6) | (p[i] & 0x3f);
    }
    *s = p + n;
    return c;
}

/* YAML-safe as a plain (unquoted) key?  Conservative: anything that YAML could
 * read differently (indicators, ': ', ' #', flow characters, blanks at the ends,
 * characters YAML does not print or reads as line breaks) is quoted. */
static int plain_ok(const char *s)
{
    size_t n = strlen(s);
    if (!n || strchr("-?:,[]{}#&*!|>'\"%@`", s[0]) || s[0] == ' ' || s[n - 1] == ' ' || s[n - 1] == ':')
        return 0;
    if (strstr(s, ": ") || strstr(s, " #") || strpbrk(s, ",[]{}"))
        return 0;
    const unsigned char *p = (const unsigned char *)s;
    while (*p) {
        uint32_t c = utf8_next(&p);
        if (c < 0x20 || c == 0x7f || (c >= 0x80 && c <= 0x9f) || c == 0x2028 || c == 0x2029 || c == 0xfeff ||
            c == 0xfffe || c == 0xffff)
            return 0;
    }
    return 1;
}

static void put_key(out *o, const char *s)
{
    if (plain_ok(s)) {
        put_str(o, s);
        return;
    }
    put(o, "\"", 1);
    const unsigned char *p = (const unsigned char *)s;
    while (*p) {
        const unsigned char *q = p;
        uint32_t c = utf8_next(&p);
        char esc[16];
        if (c == '"' || c == '\\') {
            esc[0] = '\\', esc[1] = (char)c;
            put(o, esc, 2);
        } else if (c < 0x20 || c == 0x7f || (c >= 0x80 && c <= 0x9f)) {
            snprintf(esc, sizeof esc, "\\x%02x", c);
            put_str(o, esc);
        } else if (c == 0x2028 || c == 0x2029 || c == 0xfeff || c == 0xfffe || c == 0xffff) {
            snprintf(esc, sizeof esc, "\\u%04x", c);
            put_str(o, esc);
        } else {
            put(o, q, (size_t)(p - q));
        }
    }
    put(o, "\"", 1);
}

typedef struct {
    const char *piece;
    long long   id;
} vent;

static int by_id(const void *a, const void *b)
{
    long long x = ((const vent *)a)->id, y = ((const vent *)b)->id;
    return x < y ? -1 : x > y;
}

/* vocab.json without <pad> (Marian's vocabulary has none: HF appends it). */
static void write_vocab_yml(const char *json_path, const char *dir, const char *name)
{
    json_error_t je;
    json_t *v = json_load_file(json_path, 0, &je);
    if (!v || !json_is_object(v))
        die("%s:%d: %s", json_path, je.line, je.text);
    size_t n = json_object_size(v), k = 0;
    vent *e = xmalloc(sizeof(vent) * n);
    const char *key;
    json_t *val;
    json_object_foreach(v, key, val) {
        if (!json_is_integer(val))
            die("%s: %s is not an integer id", json_path, key);
        if (strcmp(key, "<pad>"))
            e[k++] = (vent){key, json_integer_value(val)};
    }
    qsort(e, k, sizeof e[0], by_id);
    out o;
    out_open(&o, dir, name);
    for (size_t i = 0; i < k; i++) {
        put_key(&o, e[i].piece);
        char num[32];
        snprintf(num, sizeof num, ": %lld\n", e[i].id);
        put_str(&o, num);
    }
    out_close(&o);
    free(e);
    json_decref(v);
}

/* ---- config -------------------------------------------------------------------------------- */
static int cfg_int(json_t *cfg, const char *key, int def)
{
    json_t *j = json_object_get(cfg, key);
    if (!j)
        return def;
    if (json_is_boolean(j))
        return json_is_true(j);
    if (!json_is_integer(j))
        die("config.json: %s is not an integer", key);
    return (int)json_integer_value(j);
}

static dims read_dims(json_t *cfg)
{
    dims c;
    c.d = cfg_int(cfg, "d_model", -1);
    c.enc_layers = cfg_int(cfg, "encoder_layers", -1);
    c.dec_layers = cfg_int(cfg, "decoder_layers", -1);
    c.enc_ffn = cfg_int(cfg, "encoder_ffn_dim", -1);
    c.dec_ffn = cfg_int(cfg, "decoder_ffn_dim", -1);
    c.heads = cfg_int(cfg, "decoder_attention_heads", -1);
    c.V = cfg_int(cfg, "vocab_size", -1);
    c.shared = cfg_int(cfg, "share_encoder_decoder_embeddings", 1);
    c.Vt = c.shared ? c.V : cfg_int(cfg, "decoder_vocab_size", c.V);
    c.tied = cfg_int(cfg, "tie_word_embeddings", 1);
    c.ln_emb = cfg_int(cfg, "normalize_embedding", 0);
    c.pad = cfg_int(cfg, "pad_token_id", -1);
    c.eos = cfg_int(cfg, "eos_token_id", -1);
    c.beams = cfg_int(cfg, "num_beams", 4);
    c.act = json_string_value(json_object_get(cfg, "activation_function"));
    if (c.d <= 0 || c.enc_layers <= 0 || c.dec_layers <= 0 || c.enc_ffn <= 0 || c.dec_ffn <= 0 || c.heads <= 0 ||
        c.V <= 1 || c.Vt <= 1 || !c.act)
        die("config.json: missing or bad sizes");
    if (c.enc_ffn != c.dec_ffn)
        die("config.json: Marian has one transformer-dim-ffn");
    if (c.pad != c.Vt - 1)
        die("config.json: pad_token_id %d is not the last target id %d (the <pad> row Marian lacks)", c.pad, c.Vt - 1);
    return c;
}

static void write_config(json_t *cfg, const char *dir, const char *dtype)
{
    json_t *c = json_deep_copy(cfg);
    json_object_set_new(c, "torch_dtype", json_string(dtype));
    char path[PATH_CAP];
    join(path, dir, "config.json");
    if (json_dump_file(c, path, JSON_INDENT(2) | JSON_PRESERVE_ORDER))
        die("%s: cannot write", path);
    FILE *f = fopen(path, "a");
    if (!f)
        die("%s: %s", path, strerror(errno));
    fputc('\n', f);
    fclose(f);
    json_decref(c);
}

/* The tokenizer files of a Hugging Face directory (those the fixture has). */
static void copy_tokenizer(const char *fix, const char *spm, const char *dir)
{
    static const char *const files[] = {"vocab.json", "target_vocab.json", "tokenizer_config.json",
                                        "special_tokens_map.json", "generation_config.json"};
    char from[PATH_CAP];
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++)
        if (exists(join(from, fix, files[i])))
            copy_file(from, dir, files[i]);
    copy_file(join(from, spm, "source.spm"), dir, "source.spm");
    copy_file(join(from, spm, "target.spm"), dir, "target.spm");
}

static void write_marian(const model *m, const dims *c, const char *fix, const char *spm, const char *dir,
                         int options_only)
{
    char from[PATH_CAP], tv[PATH_CAP];
    write_npz(m, c, dir, options_only);
    join(from, fix, "vocab.json");
    int separate = exists(join(tv, fix, "target_vocab.json"));
    const char *sv = separate ? "src.vocab.yml" : "vocab.yml", *tvn = separate ? "trg.vocab.yml" : "vocab.yml";
    write_vocab_yml(from, dir, sv);
    if (separate)
        write_vocab_yml(tv, dir, tvn);
    out o;
    out_open(&o, dir, "decoder.yml");
    char y[1024];
    snprintf(y, sizeof y, "models:\n  - model.npz\nvocabs:\n  - %s\n  - %s\nbeam-size: %d\nnormalize: 0.6\n"
             "word-penalty: 0\nmini-batch: 1\nmaxi-batch: 1\nmaxi-batch-sort: src\nrelative-paths: true\n",
             sv, tvn, c->beams);
    put_str(&o, y);
    out_close(&o);
    copy_file(join(from, spm, "source.spm"), dir, "source.spm");
    copy_file(join(from, spm, "target.spm"), dir, "target.spm");
}

static const char *const forms[] = {"safetensors-f32", "safetensors-f16", "pytorch", "marian"};
#define N_FORMS 4

static void usage(void)
{
    fprintf(stderr, "usage: gen_opus [--full-depth] [--gain G] [--signed-ln] [--forms F,...] "
                    "<fixture-dir> <out-dir>\n"
                    "  --full-depth  the config's own encoder/decoder layers (gen.json's \"layers\" ignored)\n"
                    "  --gain G      Linear weights drawn with gain G / sqrt(in) (default 5)\n"
                    "  --signed-ln   LayerNorm weights drawn in [-1, 1) (default 1 + [-0.1, 0.1))\n"
                    "  --forms LIST  which of safetensors-f32,safetensors-f16,pytorch,marian (default all)\n");
    exit(2);
}

/* A number option's value, all of it a number. */
static double num_arg(const char *opt, const char *v)
{
    char *end;
    errno = 0;
    double x = v ? strtod(v, &end) : 0;
    if (!v || end == v || *end || errno || !isfinite(x))
        die("%s needs a number, not %s", opt, v ? v : "nothing");
    return x;
}

int main(int argc, char **argv)
{
    /* The options are for benchmark models (Makefile: bench-models); without them the
     * output is what the tests expect, byte for byte. */
    int full_depth = 0, want[N_FORMS] = {1, 1, 1, 1};
    int i = 1;
    for (; i < argc && !strncmp(argv[i], "--", 2); i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--full-depth")) {
            full_depth = 1;
            continue;
        }
        if (!strcmp(a, "--signed-ln")) {
            ln_gain = 1.0f;
            ln_offset = 0.0f;
            continue;
        }
        if (!strcmp(a, "--gain")) {
            linear_gain = num_arg(a, v);
            if (linear_gain <= 0)
                die("--gain must be positive");
        } else if (!strcmp(a, "--forms")) {
            if (!v)
                usage();
            memset(want, 0, sizeof want);
            for (const char *p = v; *p;) {
                size_t len = strcspn(p, ",");
                int f = 0;
                while (f < N_FORMS && (strlen(forms[f]) != len || strncmp(p, forms[f], len)))
                    f++;
                if (f == N_FORMS)
                    die("--forms: unknown form %.*s", (int)len, p);
                want[f] = 1;
                p += len + (p[len] == ',');
            }
        } else {
            usage();
        }
        i++;
    }
    if (argc - i != 2)
        usage();
    const char *fix = argv[i], *outdir = argv[i + 1];
    char path[PATH_CAP], spm[PATH_CAP], dir[PATH_CAP];
    json_error_t je;
    json_t *cfg = json_load_file(join(path, fix, "config.json"), 0, &je);
    if (!cfg)
        die("%s:%d: %s", path, je.line, je.text);
    json_t *gen = json_load_file(join(path, fix, "gen.json"), 0, &je);
    if (!gen)
        die("%s:%d: %s", path, je.line, je.text);
    json_t *layers = json_object_get(gen, "layers");
    if (layers && full_depth) {
        /* pt/ holds torch.save's skeleton for gen.json's depth: at another depth
         * pytorch_model.bin would silently hold only those layers */
        if (want[2] && json_integer_value(layers) != cfg_int(cfg, "encoder_layers", -1))
            die("--full-depth: the pytorch form needs a pt/ skeleton of the full depth (bench/load_forms.py)");
        layers = NULL;
    }
    if (layers) {
        static const char *const keys[] = {"encoder_layers", "decoder_layers", "num_hidden_layers"};
        for (int k = 0; k < 3; k++)
            json_object_set(cfg, keys[k], layers);
    }
    const char *sd = json_string_value(json_object_get(gen, "spm_dir"));
    join(spm, fix, sd ? sd : ".");
    dims c = read_dims(cfg);

    model *m = xmalloc(sizeof *m);
    m->n = 0;
    build(m, &c);

    for (int f = 0; f < N_FORMS; f++) {
        if (!want[f])
            continue;
        mkdirs(join(dir, outdir, forms[f]));
        if (f < 2) {
            write_safetensors(m, dir, f == 1);
            write_config(cfg, dir, f == 1 ? "float16" : "float32");
            copy_tokenizer(fix, spm, dir);
        } else if (f == 2) {
            write_pytorch(m, fix, dir);
            write_config(cfg, dir, "float32");
            copy_tokenizer(fix, spm, dir);
        } else {
            write_marian(m, &c, fix, spm, dir, json_is_false(json_object_get(gen, "marian_weights")));
        }
    }
    for (int k = 0; k < m->n; k++)
        free(m->t[k].data);
    free(m);
    json_decref(cfg);
    json_decref(gen);
    return 0;
}
