/* fuzz_npz: a .npz from untrusted bytes, through mt_npz_open (engine/formats/npz.c)
 * and then, as the model of a Marian release, mt_marian_open
 * (engine/formats/marian.c).
 *
 * Stage 1 covers the ZIP structure (engine/formats/zip.c), member methods and names,
 * the .npy magic, versions and header lengths, the header dict (keys, quoted
 * strings, True/False, shape tuples with overflow), dtypes and the size of
 * each member.  After a successful open every promise of npz.h is checked:
 * each tensor lies inside the mapping with prod(shape) x itemsize bytes,
 * names are sorted and found, nothing is transposed.
 *
 * Stage 2 (when the archive has a special:model.yml member) opens a release
 * directory made at start-up whose decoder.yml names this archive (a symlink
 * to the memfd) and a fixed joint vocabulary of 16 pieces: model.yml parsing
 * and every setting check, the vocabulary checks against dim-vocabs, the
 * tensor renaming, shape checks and completeness.  After a successful open:
 * the config's sizes, HF names only, transposed tensors of rank 2, data
 * inside the mapping.  Seeds: tiny Marian models with dim-vocabs [16, 16]
 * (models/recipe/marian_fixtures.py).  The input is the .npz file. */
#include "fuzz_common.h"

#include "formats/marian.h"
#include "formats/npz.h"

#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

static int fd = -1;
static char path[64], dir[256];

static void put(const char *name, const char *text)
{
    char p[400];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    FILE *f = fopen(p, "w");
    FUZZ_CHECK(f);
    fputs(text, f);
    fclose(f);
}

static void cleanup(void)
{
    static const char *const files[] = {"decoder.yml", "vocab.yml", "source.spm", "target.spm", "model.npz"};
    char p[400];
    for (size_t i = 0; i < sizeof files / sizeof *files; i++) {
        snprintf(p, sizeof p, "%s/%s", dir, files[i]);
        unlink(p);
    }
    rmdir(dir);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    fd = fuzz_memfd("fuzz.npz", path, sizeof path);
    snprintf(dir, sizeof dir, "/tmp/fuzz_npz_XXXXXX");
    FUZZ_CHECK(mkdtemp(dir));
    atexit(cleanup);
    char vocab[512] = "</s>: 0\n<unk>: 1\n", p[400];
    for (int i = 2; i < 16; i++)
        snprintf(vocab + strlen(vocab), sizeof vocab - strlen(vocab), "\"p%d\": %d\n", i, i);
    put("vocab.yml", vocab);
    put("decoder.yml", "models:\n  - model.npz\nvocabs:\n  - vocab.yml\n  - vocab.yml\nbeam-size: 4\n");
    put("source.spm", "");
    put("target.spm", "");
    snprintf(p, sizeof p, "%s/model.npz", dir);
    FUZZ_CHECK(symlink(path, p) == 0);
    return 0;
}

static void check_table(const mt_wfile *f, int marian)
{
    for (int i = 0; i < f->n_tensors; i++) {
        const mt_tensor *t = &f->tensors[i];
        uint64_t numel = 1;
        FUZZ_CHECK(t->name && t->dtype != MT_DT_UNKNOWN && t->dtype_name);
        FUZZ_CHECK(t->rank >= 0 && t->rank <= MT_MAX_RANK && t->end >= t->begin);
        for (int k = 0; k < t->rank; k++) {
            FUZZ_CHECK(t->shape[k] >= 0);
            numel *= (uint64_t)t->shape[k];
        }
        uint64_t bytes = t->end - t->begin;
        FUZZ_CHECK(numel * mt_dtype_size(t->dtype) == bytes);
        const uint8_t *d = t->data;
        FUZZ_CHECK(d >= f->map && d <= f->map + f->size && bytes <= (uint64_t)(f->map + f->size - d));
        FUZZ_CHECK(d - f->map == (ptrdiff_t)t->begin);
        if (bytes) {
            volatile uint8_t x = d[0] ^ d[bytes - 1];
            (void)x;
        }
        if (i > 0)
            FUZZ_CHECK(strcmp(f->tensors[i - 1].name, t->name) < 0);
        FUZZ_CHECK(mt_wfile_find(f, t->name) == t);
        if (!marian) {
            FUZZ_CHECK(!t->transposed);
            continue;
        }
        FUZZ_CHECK(!strncmp(t->name, "model.", 6) || !strcmp(t->name, "lm_head.weight") ||
                   !strcmp(t->name, "final_logits_bias"));
        FUZZ_CHECK(!t->transposed || t->rank == 2);
        FUZZ_CHECK(t->dtype == MT_DT_F32 || t->dtype == MT_DT_F16);
    }
}

static void marian_stage(void)
{
    mt_marian_dir d;
    mt_err err = {0};
    mt_status st = mt_marian_open(dir, &d, &err);
    if (st != MT_OK) {
        FUZZ_CHECK(err.msg[0] && !d.config && !d.weights && !d.src_vocab && !d.tgt_vocab);
        FUZZ_CHECK(st == MT_ERR_FORMAT || st == MT_ERR_UNSUPPORTED);
        return;
    }
    FUZZ_CHECK(d.config && d.weights && d.src_vocab == d.tgt_vocab && d.joint_vocab && d.pad_rows == 1);
    FUZZ_CHECK(json_integer_value(json_object_get(d.config, "vocab_size")) == 17);
    FUZZ_CHECK(json_integer_value(json_object_get(d.config, "pad_token_id")) == 16);
    FUZZ_CHECK(json_integer_value(json_object_get(d.config, "eos_token_id")) == 0);
    FUZZ_CHECK(json_integer_value(json_object_get(d.config, "num_beams")) == 4);
    FUZZ_CHECK(json_integer_value(json_object_get(d.src_vocab, "<pad>")) == 16);
    check_table(d.weights, 1);
    mt_marian_close(&d);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fuzz_fill_fd(fd, data, size);
    mt_err err = {0};
    mt_wfile *f = NULL;
    mt_status st = mt_npz_open(path, &f, &err);
    if (st != MT_OK) {
        FUZZ_CHECK(f == NULL && err.msg[0]);
        FUZZ_CHECK(st == MT_ERR_FORMAT || st == MT_ERR_UNSUPPORTED);    /* the file itself is readable */
        return 0;
    }
    FUZZ_CHECK(f->size == size && !strcmp(f->format, "marian-npz"));
    check_table(f, 0);
    FUZZ_CHECK(mt_wfile_find(f, "\xff no such tensor") == NULL);
    int marian = mt_wfile_find(f, "special:model.yml") != NULL;
    mt_wfile_close(f);
    if (marian)
        marian_stage();
    return 0;
}
