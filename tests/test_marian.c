/* test_marian.c: original Marian / OPUS-MT releases read directly:
 * engine/formats/yaml.c (the YAML subset), engine/formats/npz.c (numpy archives) and
 * engine/formats/marian.c (the release as the Hugging Face model).
 *
 * The fixtures (tests/fixtures/marian, README.md there) were written by
 * models/recipe/marian_fixtures.py, with expected.json holding what the
 * Hugging Face converter's rules give: the config, both vocabularies, and for
 * every tensor its name, shape, transposition and values indexed [out][in].
 * Refusals are made here from copies of the fixtures, patched in place (the
 * .npz members are stored, so their headers and model.yml are plain bytes):
 * each must give the right status and a message naming the file and the
 * problem.
 */
#include <dirent.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>
#include <jansson.h>

#include "formats/marian.h"
#include "formats/npz.h"
#include "formats/yaml.h"

#define FIX      "tests/fixtures/marian"
#define JOINT    FIX "/joint"
#define SEPARATE FIX "/separate"
#define NPZ_NAME "opus.spm32k-spm32k.transformer-align.model1.npz.best-perplexity.npz"
#define JOINT_VOCAB "opus.spm32k-spm32k.vocab.yml"
#define SRC_VOCAB "opus.spm32k-spm32k.src.vocab.yml"
#define TRG_VOCAB "opus.spm32k-spm32k.trg.vocab.yml"

static char tmp[256];               /* scratch directory, one subdirectory per case */
static int n_case;

/* ---- files ---------------------------------------------------------------------------- */
static char *slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *p = malloc((size_t)n + 1);
    assert_non_null(p);
    assert_int_equal(fread(p, 1, (size_t)n, f), (size_t)n);
    fclose(f);
    p[n] = 0;
    *len = (size_t)n;
    return p;
}

static void spit(const char *path, const void *p, size_t n)
{
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(p, 1, n, f), n);
    fclose(f);
}

static void spit_str(const char *dir, const char *name, const char *text)
{
    char path[600];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    spit(path, text, strlen(text));
}

/* A fresh copy of fixture directory src; its path. */
static const char *copy_dir(const char *src)
{
    static char dst[300];
    snprintf(dst, sizeof dst, "%s/case%d", tmp, ++n_case);
    assert_int_equal(mkdir(dst, 0700), 0);
    DIR *d = opendir(src);
    assert_non_null(d);
    for (struct dirent *e; (e = readdir(d));) {
        char from[600], to[600];
        size_t n;
        struct stat sb;
        snprintf(from, sizeof from, "%s/%s", src, e->d_name);
        if (stat(from, &sb) != 0 || !S_ISREG(sb.st_mode))
            continue;
        snprintf(to, sizeof to, "%s/%s", dst, e->d_name);
        char *p = slurp(from, &n);
        spit(to, p, n);
        free(p);
    }
    closedir(d);
    return dst;
}

/* Replace the first `max` occurrences (0: all) of from by to in dir/name;
 * at least one must exist.  In a .npz, from and to have the same length. */
static void patch(const char *dir, const char *name, const char *from, const char *to, int max)
{
    char path[600];
    size_t n, fl = strlen(from), tl = strlen(to);
    snprintf(path, sizeof path, "%s/%s", dir, name);
    char *p = slurp(path, &n), *out = malloc(n * 2 + tl * 64 + 1);
    size_t o = 0;
    int done = 0;
    assert_non_null(out);
    for (size_t i = 0; i < n;) {
        if ((max == 0 || done < max) && i + fl <= n && !memcmp(p + i, from, fl)) {
            memcpy(out + o, to, tl);
            o += tl;
            i += fl;
            done++;
        } else {
            out[o++] = p[i++];
        }
    }
    if (!done)
        fail_msg("'%s' not found in %s", from, path);
    spit(path, out, o);
    free(p);
    free(out);
}

/* Drop the last entry of a vocabulary file (the ids stay dense). */
static void drop_last_line(const char *dir, const char *name)
{
    char path[600];
    size_t n;
    snprintf(path, sizeof path, "%s/%s", dir, name);
    char *text = slurp(path, &n);
    while (n > 0 && text[n - 1] == '\n')
        n--;
    while (n > 0 && text[n - 1] != '\n')
        n--;
    spit(path, text, n);
    free(text);
}

static void remove_dir(const char *path)
{
    DIR *d = opendir(path);
    if (!d)
        return;
    for (struct dirent *e; (e = readdir(d));) {
        char p[600];
        struct stat sb;
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
            continue;
        snprintf(p, sizeof p, "%s/%s", path, e->d_name);
        if (stat(p, &sb) == 0 && S_ISDIR(sb.st_mode))
            remove_dir(p);
        else
            unlink(p);
    }
    closedir(d);
    rmdir(path);
}

static int setup(void **state)
{
    (void)state;
    snprintf(tmp, sizeof tmp, "/tmp/mt_test_marian_XXXXXX");
    return mkdtemp(tmp) ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    remove_dir(tmp);
    return 0;
}

/* ---- assertions on errors --------------------------------------------------------------- */
static void expect_msg(const mt_err *err, const char *a, const char *b)
{
    if (a && !strstr(err->msg, a))
        fail_msg("message \"%s\" lacks \"%s\"", err->msg, a);
    if (b && !strstr(err->msg, b))
        fail_msg("message \"%s\" lacks \"%s\"", err->msg, b);
}

static void yaml_refused(const char *text, mt_status want, const char *where, const char *what)
{
    json_t *j = (json_t *)1;
    mt_err err = {0};
    mt_status st = mt_yaml_parse("t.yml", text, strlen(text), &j, &err);
    if (st != want)
        fail_msg("%s: status %s, want %s (%s)", text, mt_status_name(st), mt_status_name(want), err.msg);
    assert_null(j);
    expect_msg(&err, where, what);
}

static json_t *yaml_ok(const char *text)
{
    json_t *j;
    mt_err err = {0};
    mt_status st = mt_yaml_parse("t.yml", text, strlen(text), &j, &err);
    if (st != MT_OK)
        fail_msg("%s: %s", text, err.msg);
    return j;
}

/* The YAML text must give the JSON text. */
static void yaml_is(const char *text, const char *json)
{
    json_error_t je;
    json_t *want = json_loads(json, JSON_DECODE_ANY, &je), *got = yaml_ok(text);
    assert_non_null(want);
    if (!json_equal(got, want)) {
        char *g = json_dumps(got, JSON_ENCODE_ANY | JSON_COMPACT);
        fail_msg("%s\ngave %s\nwant %s", text, g, json);
    }
    json_decref(want);
    json_decref(got);
}

/* ---- YAML --------------------------------------------------------------------------------- */
static void test_yaml_marian_styles(void **state)
{
    (void)state;
    /* model.yml as yaml-cpp writes it: lists under the key, at its indentation or indented */
    yaml_is("dim-vocabs:\n  - 58100\n  - 58100\ninput-types:\n  []\ntransformer-preprocess: \"\"\n"
            "optimizer-params:\n- 0.9\n- 1e-09\nbert-class-symbol: \"[CLS]\"\nlogical-epoch:\n  - 1e\n  - 0\n"
            "version: v1.7.6 02f4af4 2019-03-31 19:15:00 -0700\ntied-embeddings-all: true\n",
            "{\"dim-vocabs\": [58100, 58100], \"input-types\": [], \"transformer-preprocess\": \"\","
            " \"optimizer-params\": [0.9, 1e-09], \"bert-class-symbol\": \"[CLS]\", \"logical-epoch\": [\"1e\", 0],"
            " \"version\": \"v1.7.6 02f4af4 2019-03-31 19:15:00 -0700\", \"tied-embeddings-all\": true}");
    /* decoder.yml as OPUS-MT ships it */
    yaml_is("models:\n  - m.npz\nvocabs:\n  - v.yml\n  - v.yml\nbeam-size: 6\nnormalize: 0.6\nrelative-paths: true\n",
            "{\"models\": [\"m.npz\"], \"vocabs\": [\"v.yml\", \"v.yml\"], \"beam-size\": 6, \"normalize\": 0.6,"
            " \"relative-paths\": true}");
    /* vocabulary lines in both quoting styles: keys are always the piece's text */
    yaml_is("\"</s>\": 0\n<unk>: 1\n\"\\\"\": 2\n\"'\": 3\n\":\": 4\n\"#\": 5\n\"- \": 6\ntrue: 7\n1: 8\n"
            "\"null\": 9\n~x: 10\n▁: 11\n'it''s': 12\n\\: 13\n?x: 14\n-1: 15\na#b: 16\n007: 17\n",
            "{\"</s>\": 0, \"<unk>\": 1, \"\\\"\": 2, \"'\": 3, \":\": 4, \"#\": 5, \"- \": 6, \"true\": 7, \"1\": 8,"
            " \"null\": 9, \"~x\": 10, \"▁\": 11, \"it's\": 12, \"\\\\\": 13, \"?x\": 14, \"-1\": 15, \"a#b\": 16,"
            " \"007\": 17}");
}

static void test_yaml_scalars(void **state)
{
    (void)state;
    yaml_is("a: 1\nb: -2\nc: +3\nd: 1.5\ne: .5\nf: 1e3\ng: 0x10\nh: 1_000\ni: 99999999999999999999\n"
            "j: .inf\nk: True\nl: FALSE\nm: ~\nn: null\no:\np: 'true'\nq: \"1\"\nr: yes\ns: 1e\n",
            "{\"a\": 1, \"b\": -2, \"c\": 3, \"d\": 1.5, \"e\": 0.5, \"f\": 1000.0, \"g\": \"0x10\", \"h\": \"1_000\","
            " \"i\": \"99999999999999999999\", \"j\": \".inf\", \"k\": true, \"l\": false, \"m\": null, \"n\": null,"
            " \"o\": null, \"p\": \"true\", \"q\": \"1\", \"r\": \"yes\", \"s\": \"1e\"}");
    yaml_is("a: \"\\\" \\\\ \\/ \\n \\t \\r \\a \\b \\e \\f \\v \\N \\_ \\L \\P \\  \\x41 \\u00e9 \\U0001F600\"\n",
            "{\"a\": \"\\\" \\\\ / \\n \\t \\r \\u0007 \\b \\u001b \\f \\u000b \\u0085 \\u00a0 \\u2028 \\u2029   A é"
            " \\ud83d\\ude00\"}");
    yaml_is("\xEF\xBB\xBF--- # a document\r\na: 'x # y' # c\r\nb: x#y\r\nc: [1, [2, 3], {d: 4, e: }, ]\r\n"
            "f: {}\r\n...\r\n# after\r\n",
            "{\"a\": \"x # y\", \"b\": \"x#y\", \"c\": [1, [2, 3], {\"d\": 4, \"e\": null}], \"f\": {}}");
    yaml_is("- - a\n  - b\n- c: 1\n  d: 2\n-\n- e:\n  - 3\n",
            "[[\"a\", \"b\"], {\"c\": 1, \"d\": 2}, null, {\"e\": [3]}]");
    yaml_is("a:\n  b:\n    c: 1\n  d: x\ne: 2\n", "{\"a\": {\"b\": {\"c\": 1}, \"d\": \"x\"}, \"e\": 2}");
    yaml_is("", "null");
    yaml_is("# nothing\n\n", "null");
    yaml_is("just text\n", "\"just text\"");
}

static void test_yaml_refusals(void **state)
{
    (void)state;
    yaml_refused("a: &x 1\n", MT_ERR_UNSUPPORTED, "t.yml:1:", "anchors");
    yaml_refused("a: 1\nb: *x\n", MT_ERR_UNSUPPORTED, "t.yml:2:", "aliases");
    yaml_refused("a: !!str 1\n", MT_ERR_UNSUPPORTED, "t.yml:1:", "tags");
    yaml_refused("a: |\n  x\n", MT_ERR_UNSUPPORTED, "t.yml:1:", "block scalars");
    yaml_refused("a: >-\n  x\n", MT_ERR_UNSUPPORTED, "t.yml:1:", "block scalars");
    yaml_refused("a: \"x\n  y\"\n", MT_ERR_UNSUPPORTED, "t.yml:1:", "several lines");
    yaml_refused("a: x\n  y\n", MT_ERR_FORMAT, "t.yml:2:", "indentation");
    yaml_refused("a: [1,\n  2]\n", MT_ERR_UNSUPPORTED, "t.yml:1:", "several lines");
    yaml_refused("? a\n: 1\n", MT_ERR_UNSUPPORTED, "t.yml:1:", "complex keys");
    yaml_refused("a: 1\n---\nb: 2\n", MT_ERR_UNSUPPORTED, "t.yml:2:", "second YAML document");
    yaml_refused("%YAML 1.2\n---\na: 1\n", MT_ERR_UNSUPPORTED, "t.yml:1:", "directives");
    yaml_refused("a: 1\na: 2\n", MT_ERR_FORMAT, "t.yml:2:", "duplicate key 'a'");
    yaml_refused("\"1\": 1\n1: 2\n", MT_ERR_FORMAT, "t.yml:2:", "duplicate key '1'");
    yaml_refused("a:\n\t- 1\n", MT_ERR_FORMAT, "t.yml:2:", "tab");
    yaml_refused("a: b: c\n", MT_ERR_FORMAT, "t.yml:1:", "': '");
    yaml_refused("a: - b\n", MT_ERR_FORMAT, "t.yml:1:", "sequence");
    yaml_refused("a:\n  - 1\n - 2\n", MT_ERR_FORMAT, "t.yml:3:", "indentation");
    yaml_refused("- a\nb: 1\n", MT_ERR_FORMAT, "t.yml:2:", "no node");
    yaml_refused("a: 'x'y\n", MT_ERR_FORMAT, "t.yml:1:", "unexpected text");
    yaml_refused("a: \"\\q\"\n", MT_ERR_FORMAT, "t.yml:1:", "unknown escape");
    yaml_refused("a: \"\\ud800\"\n", MT_ERR_FORMAT, "t.yml:1:", "U+D800");
    yaml_refused("a: \"\\x4\"\n", MT_ERR_FORMAT, "t.yml:1:", "hex digits");
    yaml_refused("a: \"\\0\"\n", MT_ERR_UNSUPPORTED, "t.yml:1:", "NUL");
    yaml_refused("a: \"\\x00\"\n", MT_ERR_UNSUPPORTED, "t.yml:1:", "NUL");
    yaml_refused("a: 1\n\xff: 2\n", MT_ERR_FORMAT, "t.yml:2:", "UTF-8");
    yaml_refused("a: [,]\n", MT_ERR_FORMAT, "t.yml:1:", "','");
    yaml_refused("a: [1 2]x\n", MT_ERR_FORMAT, "t.yml:1:", NULL);
    yaml_refused("a: {b}\n", MT_ERR_FORMAT, "t.yml:1:", "expected ':'");
    yaml_refused("a: @x\n", MT_ERR_FORMAT, "t.yml:1:", "'@'");
    char nul[] = "a: 1\nb: 2\n";
    nul[6] = 0;
    json_t *j;
    mt_err err = {0};
    assert_int_equal(mt_yaml_parse("t.yml", nul, sizeof nul - 1, &j, &err), MT_ERR_UNSUPPORTED);
    expect_msg(&err, "t.yml:2:", "NUL");
}

/* Nesting is bounded whatever the syntax; sizes are bounded before reading. */
static void test_yaml_limits(void **state)
{
    (void)state;
    char flow[400], block[20000], map[20000];
    size_t n = 0;
    for (int i = 0; i < 150; i++)
        flow[n++] = '[';
    flow[n] = 0;
    yaml_refused(flow, MT_ERR_FORMAT, "t.yml:1:", "deeper");
    n = 0;
    for (int i = 0; i < 100; i++)
        n += (size_t)snprintf(block + n, sizeof block - n, "- ");
    snprintf(block + n, sizeof block - n, "x\n");
    yaml_refused(block, MT_ERR_FORMAT, "t.yml:1:", "deeper");
    n = 0;
    for (int i = 0; i < 100; i++)
        n += (size_t)snprintf(map + n, sizeof map - n, "%*sk:\n", i, "");
    yaml_refused(map, MT_ERR_FORMAT, NULL, "deeper");
    /* 60 levels are fine */
    n = 0;
    for (int i = 0; i < 60; i++)
        n += (size_t)snprintf(map + n, sizeof map - n, "%*sk:\n", i, "");
    json_decref(yaml_ok(map));
    json_t *j;
    mt_err err = {0};
    assert_int_equal(mt_yaml_parse("big.yml", "", MT_YAML_MAX_BYTES + 1, &j, &err), MT_ERR_FORMAT);
    expect_msg(&err, "big.yml", "limit");
    assert_int_equal(mt_yaml_load(FIX "/no-such.yml", &j, &err), MT_ERR_IO);
    expect_msg(&err, "no-such.yml", NULL);
}

/* ---- expected.json ------------------------------------------------------------------------ */
static json_t *expected(const char *dir)
{
    char path[300];
    json_error_t je;
    snprintf(path, sizeof path, "%s/expected.json", dir);
    json_t *e = json_load_file(path, 0, &je);
    if (!e)
        fail_msg("%s: %s", path, je.text);
    return e;
}

/* The vocabulary files read as expected.json's objects (which add "<pad>"). */
static void test_yaml_vocab_fixtures(void **state)
{
    (void)state;
    static const struct { const char *dir, *file, *key; } v[] = {
        {JOINT, JOINT_VOCAB, "src_vocab"}, {SEPARATE, SRC_VOCAB, "src_vocab"}, {SEPARATE, TRG_VOCAB, "tgt_vocab"}};
    for (size_t i = 0; i < sizeof v / sizeof *v; i++) {
        char path[300];
        json_t *e = expected(v[i].dir), *y;
        mt_err err = {0};
        snprintf(path, sizeof path, "%s/%s", v[i].dir, v[i].file);
        if (mt_yaml_load(path, &y, &err) != MT_OK)
            fail_msg("%s", err.msg);
        json_t *want = json_deep_copy(json_object_get(e, v[i].key));
        json_object_del(want, "<pad>");
        assert_true(json_equal(y, want));
        assert_int_equal(json_integer_value(json_object_get(y, "- ")), json_integer_value(json_object_get(want, "- ")));
        json_decref(want);
        json_decref(y);
        json_decref(e);
    }
}

/* ---- tensors ------------------------------------------------------------------------------ */
static float f32_at(const mt_tensor *t, size_t i)
{
    float f;
    memcpy(&f, (const uint8_t *)t->data + 4 * i, sizeof f);      /* npz data is not aligned */
    return f;
}

/* Element [o][i] (or [k]) of a tensor in its Hugging Face shape, whatever its storage. */
static float hf_at(const mt_tensor *t, json_t *probe)
{
    size_t a = (size_t)json_integer_value(json_array_get(probe, 0));
    if (t->rank == 1)
        return f32_at(t, a);
    size_t b = (size_t)json_integer_value(json_array_get(probe, 1));
    size_t rows = (size_t)t->shape[0], cols = (size_t)t->shape[1];
    return t->transposed ? f32_at(t, b * rows + a) : f32_at(t, a * cols + b);   /* stored [in][out] vs [out][in] */
}

static void check_tensor(const mt_wfile *w, json_t *e)
{
    const char *hf = json_string_value(json_object_get(e, "hf"));
    const mt_tensor *t = mt_wfile_find(w, hf);
    json_t *shape = json_object_get(e, "shape"), *probe;
    size_t k;
    if (!t)
        fail_msg("tensor %s missing", hf);
    assert_int_equal(t->dtype, MT_DT_F32);
    assert_int_equal((size_t)t->rank, json_array_size(shape));
    for (int i = 0; i < t->rank; i++)
        assert_int_equal(t->shape[i], json_integer_value(json_array_get(shape, (size_t)i)));
    assert_int_equal(t->transposed, json_is_true(json_object_get(e, "transposed")));
    const uint8_t *p = t->data;
    assert_true(p >= w->map && p + (t->end - t->begin) <= w->map + w->size);
    json_array_foreach(json_object_get(e, "probes"), k, probe) {
        float want = (float)json_real_value(json_array_get(probe, json_array_size(probe) - 1));
        if (hf_at(t, probe) != want)
            fail_msg("%s probe %zu: %g, want %g", hf, k, (double)hf_at(t, probe), (double)want);
    }
}

/* ---- npz ------------------------------------------------------------------------------------ */
static void test_npz_fixture(void **state)
{
    (void)state;
    mt_wfile *w;
    mt_err err = {0};
    json_t *e = expected(JOINT), *t;
    size_t k;
    if (mt_npz_open(JOINT "/" NPZ_NAME, &w, &err) != MT_OK)
        fail_msg("%s", err.msg);
    assert_string_equal(w->format, "marian-npz");
    assert_int_equal((size_t)w->n_tensors, json_array_size(json_object_get(e, "tensors")) + 1);
    const mt_tensor *y = mt_wfile_find(w, "special:model.yml");
    assert_non_null(y);
    assert_int_equal(y->dtype, MT_DT_I8);                    /* cnpy's '<i1' */
    assert_int_equal(y->rank, 1);
    assert_int_equal(((const char *)y->data)[y->shape[0] - 1], 0);
    /* as stored: Marian names and shapes; a Linear weight [in][out] */
    json_array_foreach(json_object_get(e, "tensors"), k, t) {
        const mt_tensor *m = mt_wfile_find(w, json_string_value(json_object_get(t, "marian")));
        assert_non_null(m);
        assert_int_equal(m->transposed, 0);
        assert_int_equal(m->rank, 2);
        if (json_is_true(json_object_get(t, "transposed"))) {
            json_t *shape = json_object_get(t, "shape");
            assert_int_equal(m->shape[0], json_integer_value(json_array_get(shape, 1)));
            assert_int_equal(m->shape[1], json_integer_value(json_array_get(shape, 0)));
        }
    }
    for (int i = 1; i < w->n_tensors; i++)
        assert_true(strcmp(w->tensors[i - 1].name, w->tensors[i].name) < 0);
    mt_wfile_close(w);
    json_decref(e);
}

static void npz_refused(const char *dir, mt_status want, const char *a, const char *b)
{
    char path[400];
    mt_wfile *w = (mt_wfile *)1;
    mt_err err = {0};
    snprintf(path, sizeof path, "%s/%s", dir, NPZ_NAME);
    mt_status st = mt_npz_open(path, &w, &err);
    if (st != want)
        fail_msg("status %s, want %s (%s)", mt_status_name(st), mt_status_name(want), err.msg);
    assert_null(w);
    expect_msg(&err, NPZ_NAME, a);
    expect_msg(&err, b, NULL);
}

static void test_npz_refusals(void **state)
{
    (void)state;
    mt_wfile *w;
    mt_err err = {0};
    assert_int_equal(mt_npz_open(FIX "/compressed.npz", &w, &err), MT_ERR_UNSUPPORTED);
    expect_msg(&err, "'Wemb.npy'", "compressed");
    const char *d = copy_dir(JOINT);         /* the first member is Wemb */
    patch(d, NPZ_NAME, "'fortran_order': False", "'fortran_order': True ", 1);
    npz_refused(d, MT_ERR_UNSUPPORTED, "'Wemb'", "Fortran");
    patch(d = copy_dir(JOINT), NPZ_NAME, "'<f4'", "'>f4'", 1);
    npz_refused(d, MT_ERR_UNSUPPORTED, "'Wemb'", "'>f4'");
    patch(d = copy_dir(JOINT), NPZ_NAME, "\x93NUMPY", "\x93NUMPX", 1);
    npz_refused(d, MT_ERR_FORMAT, "'Wemb.npy'", "magic");
    patch(d = copy_dir(JOINT), NPZ_NAME, "'shape'", "'shapx'", 1);
    npz_refused(d, MT_ERR_FORMAT, "'Wemb.npy'", "'descr'");
    patch(d = copy_dir(JOINT), NPZ_NAME, "'shape': (542, 8)", "'shape': (542, 9)", 1);
    npz_refused(d, MT_ERR_FORMAT, "'Wemb'", "truncated?");
    patch(d = copy_dir(JOINT), NPZ_NAME, "\x93NUMPY\x01", "\x93NUMPY\x07", 1);
    npz_refused(d, MT_ERR_UNSUPPORTED, "'Wemb.npy'", "version 7");
    patch(d = copy_dir(JOINT), NPZ_NAME, "Wemb.npy", "Wemb.npx", 0);
    npz_refused(d, MT_ERR_FORMAT, "'Wemb.npx'", "<array>.npy");
    /* every truncation of the archive is refused cleanly */
    char path[400];
    size_t n;
    snprintf(path, sizeof path, "%s/%s", JOINT, NPZ_NAME);
    char *full = slurp(path, &n);
    d = copy_dir(JOINT);
    snprintf(path, sizeof path, "%s/%s", d, NPZ_NAME);
    for (size_t cut = 0; cut < n; cut += cut < 64 ? 1 : 997) {
        spit(path, full, cut);
        mt_status st = mt_npz_open(path, &w, &err);
        if (st != MT_ERR_FORMAT)
            fail_msg("cut at %zu: %s (%s)", cut, mt_status_name(st), err.msg);
    }
    free(full);
}

/* ---- marian directories ------------------------------------------------------------------- */
static void check_dir(const char *dir, const mt_marian_dir *d)
{
    json_t *e = expected(dir), *t;
    size_t k;
    char path[400];
    if (!json_equal(d->config, json_object_get(e, "config"))) {
        char *got = json_dumps(d->config, JSON_COMPACT | JSON_SORT_KEYS);
        char *want = json_dumps(json_object_get(e, "config"), JSON_COMPACT | JSON_SORT_KEYS);
        fail_msg("config\n%s\nwant\n%s", got, want);
    }
    assert_true(json_equal(d->src_vocab, json_object_get(e, "src_vocab")));
    assert_true(json_equal(d->tgt_vocab, json_object_get(e, "tgt_vocab")));
    assert_int_equal(d->joint_vocab, json_is_true(json_object_get(e, "joint")));
    assert_int_equal(d->joint_vocab, d->src_vocab == d->tgt_vocab);
    assert_int_equal(d->beam_size, json_integer_value(json_object_get(e, "beam_size")));
    assert_true(d->normalize == json_number_value(json_object_get(e, "normalize")));
    assert_int_equal(d->pad_rows, 1);
    snprintf(path, sizeof path, "%s/%s", dir, json_string_value(json_object_get(e, "model_file")));
    assert_string_equal(d->model_path, path);
    snprintf(path, sizeof path, "%s/source.spm", dir);
    assert_string_equal(d->src_spm, path);
    snprintf(path, sizeof path, "%s/target.spm", dir);
    assert_string_equal(d->tgt_spm, path);
    assert_int_equal((size_t)d->weights->n_tensors, json_array_size(json_object_get(e, "tensors")));
    json_array_foreach(json_object_get(e, "tensors"), k, t)
        check_tensor(d->weights, t);
    json_decref(e);
}

static void test_marian_joint(void **state)
{
    (void)state;
    mt_marian_dir d;
    mt_err err = {0};
    if (mt_marian_open(JOINT, &d, &err) != MT_OK)
        fail_msg("%s", err.msg);
    check_dir(JOINT, &d);
    assert_string_equal(d.src_vocab_path, JOINT "/" JOINT_VOCAB);
    assert_string_equal(d.src_vocab_path, d.tgt_vocab_path);
    /* the pad is the extra id; </s> keeps its sort-order id */
    assert_int_equal(json_integer_value(json_object_get(d.config, "pad_token_id")), json_object_size(d.src_vocab) - 1);
    assert_int_equal(json_integer_value(json_object_get(d.config, "eos_token_id")),
                     json_integer_value(json_object_get(d.src_vocab, "</s>")));
    mt_marian_close(&d);
    mt_marian_close(&d);                              /* closing twice is harmless */
    mt_marian_close(NULL);
}

static void test_marian_separate(void **state)
{
    (void)state;
    mt_marian_dir d;
    mt_err err = {0};
    if (mt_marian_open(SEPARATE, &d, &err) != MT_OK)
        fail_msg("%s", err.msg);
    check_dir(SEPARATE, &d);
    assert_string_equal(d.src_vocab_path, SEPARATE "/" SRC_VOCAB);
    assert_string_equal(d.tgt_vocab_path, SEPARATE "/" TRG_VOCAB);
    const mt_tensor *lm = mt_wfile_find(d.weights, "lm_head.weight");
    assert_non_null(lm);
    assert_int_equal(lm->transposed, 1);              /* Marian [d][V] -> lm_head [V][d] */
    assert_null(mt_wfile_find(d.weights, "model.shared.weight"));
    mt_marian_close(&d);
}

static void test_marian_detect(void **state)
{
    (void)state;
    assert_int_equal(mt_marian_detect(JOINT), 1);
    assert_int_equal(mt_marian_detect(SEPARATE), 1);
    assert_int_equal(mt_marian_detect("models/tiny"), 0);
    assert_int_equal(mt_marian_detect(FIX "/no-such-dir"), 0);
    const char *d = copy_dir(SEPARATE);              /* only the .npz left: still Marian */
    static const char *const drop[] = {SRC_VOCAB, TRG_VOCAB, "source.spm", "target.spm", "expected.json"};
    char path[600];
    for (size_t i = 0; i < sizeof drop / sizeof *drop; i++) {
        snprintf(path, sizeof path, "%s/%s", d, drop[i]);
        assert_int_equal(unlink(path), 0);
    }
    assert_int_equal(mt_marian_detect(d), 1);
    d = copy_dir(FIX);                               /* compressed.npz: no special:model.yml readable */
    assert_int_equal(mt_marian_detect(d), 0);
}

static void marian_refused(const char *dir, mt_status want, const char *a, const char *b)
{
    mt_marian_dir d;
    mt_err err = {0};
    mt_status st = mt_marian_open(dir, &d, &err);
    if (st != want)
        fail_msg("%s: status %s, want %s (%s)", dir, mt_status_name(st), mt_status_name(want), err.msg);
    assert_null(d.config);
    assert_null(d.weights);
    assert_null(d.src_vocab);
    expect_msg(&err, a, b);
}

static void test_refuse_weights(void **state)
{
    (void)state;
    char path[600];
    size_t n;
    const char *d = copy_dir(JOINT);
    char *z = slurp(FIX "/compressed.npz", &n);
    snprintf(path, sizeof path, "%s/%s", d, NPZ_NAME);
    spit(path, z, n);
    free(z);
    marian_refused(d, MT_ERR_UNSUPPORTED, "'Wemb.npy' is compressed", NPZ_NAME);
    patch(d = copy_dir(JOINT), NPZ_NAME, "'fortran_order': False", "'fortran_order': True ", 1);
    marian_refused(d, MT_ERR_UNSUPPORTED, "'Wemb'", "Fortran order");
    z = slurp(JOINT "/" NPZ_NAME, &n);
    snprintf(path, sizeof path, "%s/%s", d = copy_dir(JOINT), NPZ_NAME);
    spit(path, z, n - 1000);
    free(z);
    marian_refused(d, MT_ERR_FORMAT, NPZ_NAME, NULL);
    patch(d = copy_dir(JOINT), NPZ_NAME, "encoder_l1_ffn_W1.npy", "encoder_l9_ffn_W1.npy", 0);
    marian_refused(d, MT_ERR_UNSUPPORTED, "tensor 'encoder_l9_ffn_W1' has no place", NULL);
    patch(d = copy_dir(JOINT), NPZ_NAME, "dec-depth: 1", "dec-depth: 2", 0);
    marian_refused(d, MT_ERR_FORMAT, "missing tensor 'decoder_l2_", NULL);
    patch(d = copy_dir(JOINT), NPZ_NAME, "dim-emb: 8", "dim-emb: 4", 0);
    marian_refused(d, MT_ERR_FORMAT, "tensor 'Wemb' has shape [542, 8], expected [542, 4]", NULL);
    patch(d = copy_dir(JOINT), NPZ_NAME, "special:model.yml.npy", "special:model.ymx.npy", 0);
    marian_refused(d, MT_ERR_FORMAT, "no 'special:model.yml' member", NULL);
}

static void test_refuse_config(void **state)
{
    (void)state;
    static const struct { const char *from, *to, *msg; mt_status st; } cases[] = {
        {"transformer-ffn-activation: relu", "transformer-ffn-activation: tanh",
         "'transformer-ffn-activation' = \"tanh\" is not supported", MT_ERR_UNSUPPORTED},
        {"transformer-ffn-activation: relu", "transformer-ffn-activation: gelu",
         "'transformer-ffn-activation' = \"gelu\"", MT_ERR_UNSUPPORTED},
        {"transformer-preprocess: \"\"", "transformer-preprocess: n ", "'transformer-preprocess' = \"n\"",
         MT_ERR_UNSUPPORTED},
        {"transformer-postprocess: dan", "transformer-postprocess: dna", "'transformer-postprocess' = \"dna\"",
         MT_ERR_UNSUPPORTED},
        {"transformer-postprocess-emb: nd", "transformer-postprocess-emb: an", "'transformer-postprocess-emb'",
         MT_ERR_UNSUPPORTED},
        {"right-left: false", "right-left: true ", "'right-left' = true", MT_ERR_UNSUPPORTED},
        {"transformer-train-position-embeddings: false", "transformer-train-position-embeddings: true ",
         "'transformer-train-position-embeddings' = true", MT_ERR_UNSUPPORTED},
        {"type: transformer", "type: s2s        ", "'type' = \"s2s\"", MT_ERR_UNSUPPORTED},
        {"transformer-decoder-autoreg: self-attention", "transformer-decoder-autoreg: rnn           ",
         "'transformer-decoder-autoreg' = \"rnn\"", MT_ERR_UNSUPPORTED},
        {"transformer-ffn-depth: 2", "transformer-ffn-depth: 3", "'transformer-ffn-depth' = 3", MT_ERR_UNSUPPORTED},
        {"transformer-heads: 2", "transformer-heads: 3", "not divisible by transformer-heads 3", MT_ERR_FORMAT},
        {"dim-emb: 8", "dim-emb: x", "'dim-emb' = \"x\" is not an integer", MT_ERR_FORMAT},
        {"enc-depth: 1", "enc-deptx: 1", "missing key 'enc-depth'", MT_ERR_FORMAT},
        {"tied-embeddings: false", "tied-embeddings: maybe", "'tied-embeddings' = \"maybe\"", MT_ERR_FORMAT},
        {"dim-emb: 8", "dim-emb: |", "special:model.yml", MT_ERR_UNSUPPORTED},      /* bad YAML inside the npz */
        {"tied-embeddings-src: false", "tied-embeddings-src: true ", "dim-vocabs differ (542, 501)", MT_ERR_FORMAT},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        const char *d = copy_dir(SEPARATE);
        patch(d, NPZ_NAME, cases[i].from, cases[i].to, 0);
        marian_refused(d, cases[i].st, cases[i].msg, "(special:model.yml)");
    }
}

static void test_refuse_vocab(void **state)
{
    (void)state;
    const char *d = copy_dir(JOINT);
    patch(d, JOINT_VOCAB, "\"!\": 1\n", "\"!\": 2\n", 1);              /* a duplicate id (so id 1 is missing) */
    marian_refused(d, MT_ERR_FORMAT, JOINT_VOCAB ": id 2 is given to both", "\"!a\"");
    patch(d = copy_dir(JOINT), JOINT_VOCAB, "\"!\": 1\n", "\"!\": 9999\n", 1);
    marian_refused(d, MT_ERR_FORMAT, "piece \"!\" has id out of range", JOINT_VOCAB);
    patch(d = copy_dir(JOINT), JOINT_VOCAB, "\"</s>\"", "\"</x>\"", 1);
    marian_refused(d, MT_ERR_FORMAT, "no \"</s>\" entry", JOINT_VOCAB);
    patch(d = copy_dir(JOINT), JOINT_VOCAB, "\"!a\":", "\"<pad>\":", 1);
    marian_refused(d, MT_ERR_UNSUPPORTED, "\"<pad>\" piece (id 2)", JOINT_VOCAB);
    patch(d = copy_dir(JOINT), JOINT_VOCAB, "\"!\": 1\n", "\"!\": &x 1\n", 1);
    marian_refused(d, MT_ERR_UNSUPPORTED, JOINT_VOCAB ":2: anchors", NULL);
    patch(d = copy_dir(JOINT), JOINT_VOCAB, "\"!\": 1\n", "\"!\" 1\n", 1);
    marian_refused(d, MT_ERR_FORMAT, JOINT_VOCAB ":2: expected 'key: value'", NULL);
    /* separate files that disagree with dim-vocabs: both named */
    drop_last_line(d = copy_dir(SEPARATE), TRG_VOCAB);
    marian_refused(d, MT_ERR_FORMAT, SRC_VOCAB " (542 entries) and", TRG_VOCAB " (500 entries) disagree with "
                   "model.yml dim-vocabs [542, 501]");
    /* a joint vocabulary of the wrong size */
    drop_last_line(d = copy_dir(JOINT), JOINT_VOCAB);
    marian_refused(d, MT_ERR_FORMAT, JOINT_VOCAB ": 541 entries but model.yml dim-vocabs is [542, 542]", NULL);
}

static void test_refuse_files(void **state)
{
    (void)state;
    char path[600];
    const char *d = copy_dir(JOINT);
    patch(d, "decoder.yml", "beam-size: 6", "beam-size: &b 6", 1);
    marian_refused(d, MT_ERR_UNSUPPORTED, "decoder.yml:6: anchors", NULL);
    patch(d = copy_dir(JOINT), "decoder.yml", "models:\n  - ", "models:\n  - other.npz\n  - ", 1);
    marian_refused(d, MT_ERR_UNSUPPORTED, "decoder.yml: 'models' lists 2 models: ensembles", NULL);
    patch(d = copy_dir(JOINT), "decoder.yml", "  - " JOINT_VOCAB "\n", "", 1);
    marian_refused(d, MT_ERR_UNSUPPORTED, "'vocabs' must list 2 files", NULL);
    snprintf(path, sizeof path, "%s/%s", d = copy_dir(JOINT), JOINT_VOCAB);
    assert_int_equal(unlink(path), 0);
    marian_refused(d, MT_ERR_IO, JOINT_VOCAB ": named in decoder.yml", NULL);
    patch(d = copy_dir(JOINT), "decoder.yml", "  - " JOINT_VOCAB "\n", "  - source.spm\n", 1);
    marian_refused(d, MT_ERR_UNSUPPORTED, "source.spm: only .yml", NULL);
    patch(d = copy_dir(JOINT), "decoder.yml", "beam-size: 6", "beam-size: -6", 1);
    marian_refused(d, MT_ERR_FORMAT, "'beam-size'", NULL);
    /* decoder.yml paths from the training machine: only the file name counts */
    patch(d = copy_dir(JOINT), "decoder.yml", "  - opus", "  - /work/models/opus", 0);
    mt_marian_dir m;
    mt_err err = {0};
    if (mt_marian_open(d, &m, &err) != MT_OK)
        fail_msg("%s", err.msg);
    mt_marian_close(&m);
    snprintf(path, sizeof path, "%s/target.spm", d = copy_dir(JOINT));
    assert_int_equal(unlink(path), 0);
    marian_refused(d, MT_ERR_IO, "target.spm: missing", NULL);
    spit_str(d, "target.bpe", "bpe codes\n");
    marian_refused(d, MT_ERR_UNSUPPORTED, "BPE", NULL);
    spit_str(d = copy_dir(SEPARATE), "extra.vocab.yml", "a: 0\n");     /* without decoder.yml: ambiguous vocabularies */
    marian_refused(d, MT_ERR_FORMAT, "vocabularies are ambiguous", NULL);
    marian_refused(FIX "/no-such-dir", MT_ERR_IO, "no-such-dir", NULL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_yaml_marian_styles),
        cmocka_unit_test(test_yaml_scalars),
        cmocka_unit_test(test_yaml_refusals),
        cmocka_unit_test(test_yaml_limits),
        cmocka_unit_test(test_yaml_vocab_fixtures),
        cmocka_unit_test(test_npz_fixture),
        cmocka_unit_test(test_npz_refusals),
        cmocka_unit_test(test_marian_joint),
        cmocka_unit_test(test_marian_separate),
        cmocka_unit_test(test_marian_detect),
        cmocka_unit_test(test_refuse_weights),
        cmocka_unit_test(test_refuse_config),
        cmocka_unit_test(test_refuse_vocab),
        cmocka_unit_test(test_refuse_files),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
