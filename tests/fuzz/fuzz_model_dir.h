/* fuzz_model_dir.h: what the model-directory targets share (fuzz_config.c:
 * Marian, fuzz_m2m_config.c: M2M-100 / NLLB): the directory they write into,
 * a table of tensors and the micro model.safetensors made from it (small
 * deterministic 16-bit values after an F32/F16/BF16 header: any bytes are
 * valid weights), one file written or removed, the model loaded. */
#ifndef FUZZ_MODEL_DIR_H
#define FUZZ_MODEL_DIR_H

#include "fuzz_common.h"

#include <unistd.h>

#include "mt.h"

#ifndef FUZZ_MAX_TENSORS
#define FUZZ_MAX_TENSORS 128
#endif

static char dir[256];

typedef struct {
    char name[96];
    const char *dtype;
    int d0, d1;             /* d1 = 0: rank 1 */
} tdesc;

static tdesc tensors[FUZZ_MAX_TENSORS];
static int n_tensors;

static void add(const char *dtype, int d0, int d1, const char *fmt, ...) __attribute__((format(printf, 4, 5)));
static void add(const char *dtype, int d0, int d1, const char *fmt, ...)
{
    FUZZ_CHECK(n_tensors < FUZZ_MAX_TENSORS);
    tdesc *t = &tensors[n_tensors++];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(t->name, sizeof t->name, fmt, ap);
    va_end(ap);
    t->dtype = dtype;
    t->d0 = d0;
    t->d1 = d1;
}

/* tensors[0..n_tensors) as a safetensors file at path; seed: the values' stream. */
static void write_tensors(const char *path, uint32_t seed)
{
    char *hdr = malloc(1 << 16);
    FUZZ_CHECK(hdr);
    size_t h = 0;
    uint64_t off = 0;
    h += (size_t)snprintf(hdr + h, (1 << 16) - h, "{\"__metadata__\":{\"format\":\"pt\"}");
    for (int i = 0; i < n_tensors; i++) {
        tdesc *t = &tensors[i];
        uint64_t bytes = (uint64_t)t->d0 * (uint64_t)(t->d1 ? t->d1 : 1) * (strcmp(t->dtype, "F32") ? 2 : 4);
        char shape[32];
        if (t->d1)
            snprintf(shape, sizeof shape, "%d,%d", t->d0, t->d1);
        else
            snprintf(shape, sizeof shape, "%d", t->d0);
        h += (size_t)snprintf(hdr + h, (1 << 16) - h, ",\"%s\":{\"dtype\":\"%s\",\"shape\":[%s],"
                              "\"data_offsets\":[%llu,%llu]}", t->name, t->dtype, shape,
                              (unsigned long long)off, (unsigned long long)(off + bytes));
        off += bytes;
    }
    h += (size_t)snprintf(hdr + h, (1 << 16) - h, "}");
    while (h % 8)
        hdr[h++] = ' ';
    FUZZ_CHECK(h < (1 << 16) - 8);
    FILE *f = fopen(path, "wb");
    FUZZ_CHECK(f);
    uint8_t len8[8];
    for (int i = 0; i < 8; i++)
        len8[i] = (uint8_t)((uint64_t)h >> (8 * i));
    fwrite(len8, 1, 8, f);
    fwrite(hdr, 1, h, f);
    uint32_t x = seed;
    for (uint64_t i = 0; i < off; i += 2) {
        x = x * 1103515245u + 12345u;
        uint16_t v = (uint16_t)(0x3000 | (x >> 16 & 0x0fff));    /* F16 ~0.1..0.5, BF16 tiny: fine */
        fwrite(&v, 1, 2, f);
    }
    FUZZ_CHECK(fclose(f) == 0);
    free(hdr);
}

static void write_file(const char *name, const uint8_t *data, size_t len)
{
    char p[512];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    FILE *f = fopen(p, "wb");
    FUZZ_CHECK(f);
    FUZZ_CHECK(fwrite(data, 1, len, f) == len || len == 0);
    FUZZ_CHECK(fclose(f) == 0);
}

static void remove_file(const char *name)
{
    char p[512];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    unlink(p);
}

/* The directory's model, held F32 or F16, on one thread. */
static mt_status load(int f16, mt_model **m, mt_err *err)
{
    mt_model_params p = mt_model_default_params();
    p.n_threads = 1;
    p.weights = f16 ? MT_WEIGHTS_F16 : MT_WEIGHTS_F32;
    return mt_model_load(dir, &p, m, err);
}

#endif
