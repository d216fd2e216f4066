/* test_ptfile.c: pytorch_model.bin (engine/formats/ptfile.c) and its pickle reader
 * (engine/formats/pickle.c).
 *
 * Fixtures: tests/fixtures/pt, written by models/recipe/pt_fixtures.py with
 * torch (see its README).  model.bin must give back every value the script
 * recorded in model.json, exactly, with tied tensors sharing one data pointer
 * and views at their storage offset; the protocol-4 save and a dict of
 * Parameters the same.  Each hostile or broken file must give MT_ERR_FORMAT
 * with a message naming the file and the reason: truncations and byte flips of
 * model.bin made here, a deflated member, pickles that call os.system, a
 * transposed view, a short or missing storage, the legacy format.  The pickle reader is
 * also fed hand-written opcode sequences, one per refusal.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>
#include <jansson.h>

#include "formats/pickle.h"
#include "formats/ptfile.h"

#define FIX "tests/fixtures/pt/"

static char tmp_dir[64], tmp_path[128];
static json_t *expected;            /* model.json */

/* ---- helpers --------------------------------------------------------------------- */
static uint8_t *slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    fseek(f, 0, SEEK_END);
    *len = (size_t)ftell(f);
    fseek(f, 0, SEEK_SET);
    uint8_t *p = malloc(*len ? *len : 1);
    assert_int_equal(fread(p, 1, *len, f), *len);
    fclose(f);
    return p;
}

static void write_tmp(const void *p, size_t n)
{
    FILE *f = fopen(tmp_path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(p, 1, n, f), n);
    fclose(f);
}

static mt_wfile *open_ok(const char *path)
{
    mt_wfile *f = NULL;
    mt_err err = {0};
    mt_status st = mt_pt_open(path, &f, &err);
    if (st != MT_OK)
        print_message("    unexpected: %s\n", err.msg);
    assert_int_equal(st, MT_OK);
    assert_non_null(f);
    assert_string_equal(f->format, "pytorch");
    return f;
}

/* path must be refused with MT_ERR_FORMAT, a message naming it and holding each needle. */
static void expect_refused(const char *path, const char *needle1, const char *needle2)
{
    mt_wfile *f = (mt_wfile *)0x1;
    mt_err err = {0};
    mt_status st = mt_pt_open(path, &f, &err);
    print_message("    %-12s %s\n", mt_status_name(st), err.msg);
    assert_int_equal(st, MT_ERR_FORMAT);
    assert_null(f);
    assert_non_null(strstr(err.msg, path));
    if (needle1)
        assert_non_null(strstr(err.msg, needle1));
    if (needle2)
        assert_non_null(strstr(err.msg, needle2));
}

/* Element i of t as a double, whatever its dtype. */
static double element(const mt_tensor *t, size_t i)
{
    const uint8_t *p = (const uint8_t *)t->data + i * mt_dtype_size(t->dtype);
    uint16_t h;
    float f;
    int64_t q;
    switch (t->dtype) {
    case MT_DT_F32:  memcpy(&f, p, 4); return f;
    case MT_DT_F16:  memcpy(&h, p, 2); return mt_f16_to_f32(h);
    case MT_DT_BF16: memcpy(&h, p, 2); return mt_bf16_to_f32(h);
    case MT_DT_I64:  memcpy(&q, p, 8); return (double)q;
    default:         fail_msg("unexpected dtype %s", t->dtype_name);
    }
    return 0;
}

/* Every tensor of model.json, in f, with its dtype, shape and exact values. */
static void check_against_json(const mt_wfile *f, const char *only_prefix)
{
    json_t *tensors = json_object_get(expected, "tensors");
    const char *name;
    json_t *want;
    size_t n_checked = 0;
    json_object_foreach(tensors, name, want) {
        if (only_prefix && strncmp(name, only_prefix, strlen(only_prefix)) != 0)
            continue;
        const mt_tensor *t = mt_wfile_find(f, name);
        if (!t)
            fail_msg("tensor %s missing", name);
        assert_string_equal(t->dtype_name, json_string_value(json_object_get(want, "dtype")));
        json_t *shape = json_object_get(want, "shape"), *values = json_object_get(want, "values");
        assert_int_equal(t->rank, json_array_size(shape));
        size_t numel = 1;
        for (int d = 0; d < t->rank; d++) {
            assert_int_equal(t->shape[d], json_integer_value(json_array_get(shape, (size_t)d)));
            numel *= (size_t)t->shape[d];
        }
        assert_int_equal(numel, json_array_size(values));
        assert_int_equal(t->end - t->begin, numel * mt_dtype_size(t->dtype));
        assert_true((const uint8_t *)t->data >= f->map && t->end <= f->size);
        assert_ptr_equal(t->data, f->map + t->begin);
        assert_int_equal(t->transposed, 0);
        for (size_t i = 0; i < numel; i++)
            if (element(t, i) != json_number_value(json_array_get(values, i)))
                fail_msg("%s[%zu] = %g, expected %g", name, i, element(t, i),
                         json_number_value(json_array_get(values, i)));
        n_checked++;
    }
    if (!only_prefix)
        assert_int_equal(f->n_tensors, n_checked);
    for (int i = 1; i < f->n_tensors; i++)
        assert_true(strcmp(f->tensors[i - 1].name, f->tensors[i].name) < 0);
}

/* Tensors of one storage: the same base pointer (data minus offset). */
static void check_sharing(const mt_wfile *f)
{
    json_t *groups = json_object_get(expected, "shared"), *tensors = json_object_get(expected, "tensors");
    assert_int_equal(json_array_size(groups), 2);
    size_t gi;
    json_t *g;
    json_array_foreach(groups, gi, g) {
        const uint8_t *base = NULL;
        size_t k;
        json_t *jn;
        json_array_foreach(g, k, jn) {
            const mt_tensor *t = mt_wfile_find(f, json_string_value(jn));
            assert_non_null(t);
            json_int_t off = json_integer_value(json_object_get(json_object_get(tensors, json_string_value(jn)),
                                                                "storage_offset"));
            const uint8_t *b = (const uint8_t *)t->data - off * (json_int_t)mt_dtype_size(t->dtype);
            if (base)
                assert_ptr_equal(b, base);
            base = b;
        }
    }
    /* the tied embeddings are one pointer */
    const void *shared = mt_wfile_find(f, "model.shared.weight")->data;
    assert_ptr_equal(mt_wfile_find(f, "lm_head.weight")->data, shared);
    assert_ptr_equal(mt_wfile_find(f, "model.encoder.embed_tokens.weight")->data, shared);
    assert_ptr_equal(mt_wfile_find(f, "model.decoder.embed_tokens.weight")->data, shared);
    assert_ptr_equal(mt_wfile_find(f, "rows")->data, (const uint8_t *)shared + 8 * sizeof(float));
}

static int setup(void **state)
{
    (void)state;
    snprintf(tmp_dir, sizeof tmp_dir, "/tmp/mt_test_ptfile_XXXXXX");
    if (!mkdtemp(tmp_dir))
        return -1;
    snprintf(tmp_path, sizeof tmp_path, "%s/pytorch_model.bin", tmp_dir);
    json_error_t je;
    expected = json_load_file(FIX "model.json", 0, &je);
    return expected ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    unlink(tmp_path);
    rmdir(tmp_dir);
    json_decref(expected);
    return 0;
}

/* ---- valid files ------------------------------------------------------------------- */
static void test_model_values(void **state)
{
    (void)state;
    mt_wfile *f = open_ok(FIX "model.bin");
    assert_int_equal(f->n_tensors, 16);
    check_against_json(f, NULL);
    check_sharing(f);
    const mt_tensor *t = mt_wfile_find(f, "positions");
    assert_int_equal(t->dtype, MT_DT_I64);              /* other dtypes are listed, by name */
    assert_int_equal(mt_wfile_find(f, "scale")->rank, 0);
    assert_int_equal(mt_wfile_find(f, "empty")->end - mt_wfile_find(f, "empty")->begin, 0);
    assert_null(mt_wfile_find(f, "model.shared"));
    mt_wfile_close(f);
}

static void test_protocol4(void **state)
{
    (void)state;
    mt_wfile *f = open_ok(FIX "model_p4.bin");
    check_against_json(f, NULL);
    check_sharing(f);
    mt_wfile_close(f);
}

static void test_parameters(void **state)
{
    (void)state;
    mt_wfile *f = open_ok(FIX "params.bin");
    assert_int_equal(f->n_tensors, 2);
    check_against_json(f, "model.encoder.fc.");
    mt_wfile_close(f);
}

/* ---- refusals of files -------------------------------------------------------------- */
static void test_truncated(void **state)
{
    (void)state;
    size_t len;
    uint8_t *p = slurp(FIX "model.bin", &len);
    size_t cuts[] = {1, 2, 4, 30, 64, 100, 1000, len / 2, len - 200, len - 100, len - 60, len - 22, len - 21, len - 1};
    for (size_t i = 0; i < sizeof cuts / sizeof *cuts; i++) {
        write_tmp(p, cuts[i]);
        expect_refused(tmp_path, "no end-of-central-directory", NULL);
    }
    for (size_t cut = 3; cut < len; cut += 41) {        /* and every 41st byte, quietly */
        write_tmp(p, cut);
        mt_wfile *f = (mt_wfile *)0x1;
        mt_err err = {0};
        assert_int_equal(mt_pt_open(tmp_path, &f, &err), MT_ERR_FORMAT);
        assert_null(f);
        assert_non_null(strstr(err.msg, tmp_path));
    }
    write_tmp(p, 0);
    mt_wfile *f = (mt_wfile *)0x1;
    mt_err err = {0};
    assert_int_equal(mt_pt_open(tmp_path, &f, &err), MT_ERR_FORMAT);
    assert_non_null(strstr(err.msg, "too short"));
    free(p);
}

/* Every single byte of model.bin flipped: opened or refused, never a crash or
 * an out-of-bounds pointer. */
static void test_every_byte_flipped(void **state)
{
    (void)state;
    size_t len;
    uint8_t *p = slurp(FIX "model.bin", &len);
    int opened = 0, refused = 0;
    for (size_t i = 0; i < len; i++) {
        p[i] ^= 0x41;
        write_tmp(p, len);
        p[i] ^= 0x41;
        mt_wfile *f = NULL;
        mt_err err = {0};
        mt_status st = mt_pt_open(tmp_path, &f, &err);
        if (st == MT_OK) {
            for (int k = 0; k < f->n_tensors; k++)
                assert_true(f->tensors[k].end >= f->tensors[k].begin && f->tensors[k].end <= f->size);
            mt_wfile_close(f);
            opened++;
        } else {
            assert_int_equal(st, MT_ERR_FORMAT);
            assert_null(f);
            refused++;
        }
    }
    print_message("    %zu flips: %d opened (payload or padding bytes), %d refused\n", len, opened, refused);
    assert_true(refused > 0 && opened > 0);
    free(p);
}

static void test_compressed_member(void **state)
{
    (void)state;
    expect_refused(FIX "compressed.bin", "member archive/data/0 is compressed (deflate); only stored members "
                   "can be mapped", NULL);
}

static void test_pickles_that_run_code(void **state)
{
    (void)state;
    expect_refused(FIX "evil_os.bin", "archive/data.pkl", "the pickle imports 'os system'");
    expect_refused(FIX "evil_reduce.bin", "archive/data.pkl", "the pickle imports 'posix system'");
}

static void test_non_contiguous(void **state)
{
    (void)state;
    expect_refused(FIX "noncontig.bin", "tensor 'w' is not contiguous", NULL);
}

static void test_short_storage(void **state)
{
    (void)state;
    expect_refused(FIX "short.bin", "tensor 'w' needs elements [0, +12) of archive/data/0", "storage too short");
}

static void test_missing_storage(void **state)
{
    (void)state;
    expect_refused(FIX "missing.bin", "its storage archive/data/3 is not in the archive", "tensor '");
}

static void test_legacy(void **state)
{
    (void)state;
    expect_refused(FIX "legacy.bin", "legacy torch serialization", "re-save with torch>=1.6");
}

static void test_not_torch(void **state)
{
    (void)state;
    expect_refused(FIX "savez.npz", "not a torch.save archive", NULL);     /* a zip, but no folder */
    expect_refused(FIX "model.json", "no end-of-central-directory", NULL);
    mt_wfile *f = (mt_wfile *)0x1;
    mt_err err = {0};
    assert_int_equal(mt_pt_open(FIX "no-such-file.bin", &f, &err), MT_ERR_IO);
    assert_null(f);
}

/* ---- the pickle reader on hand-written opcodes ------------------------------------------ */
/* A valid state dict of one F32 tensor 'w' [2, 3], storage '0' of 6 elements;
 * the refusals below are small edits of it. */
#define P_HEAD "\x80\x02" "ccollections\nOrderedDict\nq\x00)Rq\x01("
#define P_NAME "X\x01\x00\x00\x00w"
#define P_REBUILD "ctorch._utils\n_rebuild_tensor_v2\nq\x02("
#define P_PID "(X\x07\x00\x00\x00storagectorch\nFloatStorage\nX\x01\x00\x00\x00" "0X\x03\x00\x00\x00" "cpuK\x06tQ"
#define P_VIEW "K\x00K\x02K\x03\x86K\x03K\x01\x86\x89h\x00)Rt"
#define P_TAIL "Ru."
#define P_VALID P_HEAD P_NAME P_REBUILD P_PID P_VIEW P_TAIL

static mt_status unpickle(const char *bytes, size_t n, mt_pickle_sd **sd, mt_err *err)
{
    uint8_t *copy = malloc(n ? n : 1);          /* exact size: any overread is seen by ASan/valgrind */
    memcpy(copy, bytes, n);
    mt_status st = mt_pickle_state_dict("x.bin: archive/data.pkl", copy, n, sd, err);
    free(copy);
    return st;
}

static void pickle_refused(const char *bytes, size_t n, const char *needle)
{
    mt_pickle_sd *sd = (mt_pickle_sd *)0x1;
    mt_err err = {0};
    mt_status st = unpickle(bytes, n, &sd, &err);
    print_message("    %-12s %s\n", mt_status_name(st), err.msg);
    assert_int_equal(st, MT_ERR_FORMAT);
    assert_null(sd);
    assert_non_null(strstr(err.msg, "x.bin: archive/data.pkl: byte "));
    assert_non_null(strstr(err.msg, needle));
}
#define REFUSED(lit, needle) pickle_refused(lit, sizeof lit - 1, needle)

static void test_pickle_valid(void **state)
{
    (void)state;
    mt_pickle_sd *sd = NULL;
    mt_err err = {0};
    assert_int_equal(unpickle(P_VALID, sizeof P_VALID - 1, &sd, &err), MT_OK);
    assert_int_equal(mt_pickle_count(sd), 1);
    const mt_pickle_tensor *t = mt_pickle_at(sd, 0);
    assert_string_equal(t->name, "w");
    assert_string_equal(t->storage_key, "0");
    assert_string_equal(t->storage_type, "FloatStorage");
    assert_int_equal(t->dtype, MT_DT_F32);
    assert_int_equal(t->storage_numel, 6);
    assert_int_equal(t->offset, 0);
    assert_int_equal(t->rank, 2);
    assert_int_equal(t->size[0], 2);
    assert_int_equal(t->size[1], 3);
    assert_int_equal(t->stride[0], 3);
    assert_int_equal(t->stride[1], 1);
    assert_null(mt_pickle_at(sd, 1));
    mt_pickle_free(sd);
    mt_pickle_free(NULL);
    /* every prefix of it is refused */
    for (size_t n = 0; n < sizeof P_VALID - 1; n++) {
        sd = (mt_pickle_sd *)0x1;
        assert_int_equal(unpickle(P_VALID, n, &sd, &err), MT_ERR_FORMAT);
        assert_null(sd);
    }
}

/* LONG1 (negative and 8-byte), BININT, BININT2, and an empty dict are read. */
static void test_pickle_ints(void **state)
{
    (void)state;
    /* offset given as LONG1 of 8 bytes = 1; sizes via BININT2 and BININT */
    const char p[] = P_HEAD P_NAME P_REBUILD P_PID "\x8a\x08\x01\x00\x00\x00\x00\x00\x00\x00"
                     "M\x02\x00J\x02\x00\x00\x00\x86K\x02K\x01\x86\x89h\x00)Rt" P_TAIL;
    mt_pickle_sd *sd = NULL;
    mt_err err = {0};
    assert_int_equal(unpickle(p, sizeof p - 1, &sd, &err), MT_OK);
    assert_int_equal(mt_pickle_at(sd, 0)->offset, 1);
    assert_int_equal(mt_pickle_at(sd, 0)->size[0], 2);
    mt_pickle_free(sd);
    REFUSED(P_HEAD P_NAME P_REBUILD P_PID "\x8a\x01\xff" "K\x02\x85K\x01\x85\x89h\x00)Rt" P_TAIL,
            "unexpected arguments");                                    /* offset -1 */
    REFUSED(P_HEAD P_NAME P_REBUILD P_PID "\x8a\x09\x01\x00\x00\x00\x00\x00\x00\x00\x00", "integer too large");
    const char empty[] = "\x80\x02}.";
    assert_int_equal(unpickle(empty, sizeof empty - 1, &sd, &err), MT_OK);
    assert_int_equal(mt_pickle_count(sd), 0);
    mt_pickle_free(sd);
}

static void test_pickle_refusals(void **state)
{
    (void)state;
    REFUSED("\x80\x02" "cbuiltins\neval\n.", "'builtins eval'");
    REFUSED("\x80\x02" "c__builtin__\nexec\n.", "'__builtin__ exec'");
    REFUSED("\x80\x02" "ctorch\nload\n.", "'torch load'");
    REFUSED("\x80\x02" "ccollections\nOrderedDict2\n.", "'collections OrderedDict2'");
    REFUSED("\x80\x04\x8c\x02os\x8c\x06system\x93.", "'os system'");             /* STACK_GLOBAL */
    REFUSED("\x80\x02" "ctorch\nFloatStorage\n)R.", "REDUCE calls torch.FloatStorage");
    REFUSED("\x80\x02" "ccollections\nOrderedDict\nK\x01\x85R.", "OrderedDict called with arguments");
    REFUSED("\x80\x02" "K\x01)R.", "REDUCE of something");
    REFUSED("\x80\x02" "I1\n.", "opcode 'I'");
    REFUSED("\x80\x02" "\xff.", "opcode 0xff");
    REFUSED("\x80\x01}.", "pickle protocol 1");
    REFUSED("\x80\x02" "h\x05.", "memo index 5 was never stored");
    REFUSED("\x80\x02" "j\x00\x00\x00\x01.", "memo index 16777216");
    REFUSED("\x80\x02" "}r\x00\x00\x00\x7f.", "memo index 2130706432 over the limit");
    REFUSED("\x80\x02" "t.", "no MARK");
    REFUSED("\x80\x02" "}(u(}s.", "stack underflow");                       /* SETITEM below the mark */
    REFUSED("\x80\x02" "](K\x01u.", "SETITEMS on something that is not a dict");
    REFUSED("\x80\x02" "}(K\x01u.", "odd number");
    REFUSED("\x80\x02" "}K\x01" "a.", "APPEND on something that is not a list");
    REFUSED("\x80\x02" "]K\x01" "a.", "the pickle holds no dict");
    REFUSED("\x80\x02" "(t.", "the pickle holds no dict");       /* a tuple of the empty stack (fuzz_pickle) */
    REFUSED("\x80\x02" "}K\x01K\x02s.", "key is not a string");
    REFUSED("\x80\x02" "}X\x01\x00\x00\x00xK\x02s.", "entry 'x' is not a tensor");
    REFUSED("\x80\x02" "}X\x02\x00\x00\x00x\x00K\x02s.", "holds a NUL byte");
    REFUSED("\x80\x02" "}}X\x04\x00\x00\x00" "evilK\x01sb.", "BUILD sets an attribute other than _metadata");
    REFUSED("\x80\x02" "]]b.", "BUILD other than");
    REFUSED("\x80\x02" "}}.", "STOP with more than the result");
    REFUSED("\x80\x02" "}(.", "STOP inside an open MARK");
    REFUSED("\x80\x02" "}", "no STOP");
    REFUSED("\x80\x02" "X\xff\xff\xff\xff", "string of 4294967295 bytes");
    REFUSED("\x80\x02" "X\x10\x00\x00\x00short", "truncated string");
    REFUSED("\x80\x02" "ctorch\nFloat", "truncated GLOBAL");
    REFUSED("\x80\x04\x95\xff\x00\x00\x00\x00\x00\x00\x00}.", "FRAME of 255 bytes");
    REFUSED("\x80\x02" "K\x01Q.", "persistent id is not");
    REFUSED("\x80\x02" "(X\x07\x00\x00\x00storagectorch._utils\n_rebuild_tensor_v2\nX\x01\x00\x00\x00" "0X\x03"
            "\x00\x00\x00" "cpuK\x06tQ.", "not a storage type");
    REFUSED("\x80\x02" "(X\x07\x00\x00\x00storagectorch\nFloatStorage\nX\x04\x00\x00\x00" "../0X\x03"
            "\x00\x00\x00" "cpuK\x06tQ.", "storage key is empty or holds '/'");
    REFUSED("\x80\x02" "(X\x07\x00\x00\x00storagectorch\nComplexFloatStorage\nX\x01\x00\x00\x00" "0X\x03"
            "\x00\x00\x00" "cpuK\x06tQ.", "torch.ComplexFloatStorage (complex64)");
    REFUSED(P_HEAD P_NAME P_REBUILD P_PID "K\x00(K\x01K\x01K\x01K\x01K\x01K\x01K\x01K\x01K\x01t"
            "(K\x01K\x01K\x01K\x01K\x01K\x01K\x01K\x01K\x01t\x89h\x00)Rt" P_TAIL, "rank 9 exceeds 8");
    REFUSED(P_HEAD P_NAME P_REBUILD P_PID "K\x00K\x02\x85K\x03K\x01\x86\x89h\x00)Rt" P_TAIL,
            "size and stride must be tuples of one length");
    REFUSED(P_HEAD P_NAME P_REBUILD P_PID "K\x00K\x02\x85" "\x8a\x01\xff\x85\x89h\x00)Rt" P_TAIL,
            "bad size or stride in dimension 0");
    REFUSED(P_HEAD P_NAME "ctorch._utils\n_rebuild_parameter\nK\x01\x89h\x00)R\x87R" "u.",
            "_rebuild_parameter called with unexpected arguments");
}

/* Deep nesting and big counts stop at their limits, not at memory. */
static void test_pickle_limits(void **state)
{
    (void)state;
    size_t n = 70000;
    char *p = malloc(n + 3);
    memcpy(p, "\x80\x02", 2);
    memset(p + 2, '(', 100);                     /* 100 nested MARKs */
    p[102] = '.';
    pickle_refused(p, 103, "more than 64 nested MARKs");
    memset(p + 2, 'N', n);                       /* 70000 Nones: deeper than the stack limit */
    p[n + 2] = '.';
    pickle_refused(p, n + 3, "stack deeper than 65536");
    free(p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_model_values),
        cmocka_unit_test(test_protocol4),
        cmocka_unit_test(test_parameters),
        cmocka_unit_test(test_truncated),
        cmocka_unit_test(test_every_byte_flipped),
        cmocka_unit_test(test_compressed_member),
        cmocka_unit_test(test_pickles_that_run_code),
        cmocka_unit_test(test_non_contiguous),
        cmocka_unit_test(test_short_storage),
        cmocka_unit_test(test_missing_storage),
        cmocka_unit_test(test_legacy),
        cmocka_unit_test(test_not_torch),
        cmocka_unit_test(test_pickle_valid),
        cmocka_unit_test(test_pickle_ints),
        cmocka_unit_test(test_pickle_refusals),
        cmocka_unit_test(test_pickle_limits),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
