/* SentencePiece BPE (engine/tokenizer/spm_bpe.c) and the NLLB-200 / M2M-100
 * tokenizers (multi.c) against python3-sentencepiece 0.1.97 and an
 * independent Python re-implementation of transformers' published tokenizers
 * (tests/spm_bpe/ref_fairseq.py), over the models and lines that
 * tests/spm_bpe/gen_ref.py generates into $MT_SPM_BPE_DIR (default: spm-bpe
 * beside the program's tests/ folder; `make spm-bpe-ref`): 6,020 lines of six scripts and hard
 * cases, four BPE models, two wrapped directories.  Not a unit test: it needs
 * the generated models (tests/spm_bpe/README.md).  Run from the repository root. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "fixture_file.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tokenizer/spm.h"          /* mt_tok_py_strip: Python's str.strip, as the decode uses */
#include "tokenizer/tokenizer.h"

#define MIN_LINES 5000
#define MAX_IDS   4096

/* $MT_SPM_BPE_DIR, else B/spm-bpe for the program B/tests/test_spm_bpe (make
 * valgrind runs build-vg/tests/... without the environment), else build/spm-bpe. */
static char default_dir[1024] = "build/spm-bpe";

static const char *dir(void)
{
    const char *d = getenv("MT_SPM_BPE_DIR");
    return d && *d ? d : default_dir;
}

typedef struct {
    char  *buf;
    char **line;
    int    n;
} lines_t;

/* The lines of a file (split on '\n' in place; the final newline ends the last). */
static void lines_read(const char *path, lines_t *l)
{
    size_t len;
    l->buf = slurp(path, &len);
    l->n = 0;
    for (size_t i = 0; i < len; i++)
        l->n += l->buf[i] == '\n';
    l->line = malloc((size_t)(l->n + 1) * sizeof *l->line);
    assert_non_null(l->line);
    int k = 0;
    for (char *p = l->buf; p < l->buf + len && k < l->n;) {
        char *e = memchr(p, '\n', (size_t)(l->buf + len - p));
        *e = '\0';
        l->line[k++] = p;
        p = e + 1;
    }
}

static void lines_free(lines_t *l)
{
    free(l->buf);
    free(l->line);
}

static char *path_of(const char *name)
{
    static char p[4][1200];
    static int k;
    k = (k + 1) % 4;
    snprintf(p[k], sizeof p[k], "%s/%s", dir(), name);
    return p[k];
}

/* ids[0..n) equal to the JSON array a; prints the first difference. */
static int ids_equal(const int32_t *ids, int n, const json_t *a, const char *what, int line)
{
    int ok = json_is_array(a) && (size_t)n == json_array_size(a);
    for (int i = 0; ok && i < n; i++)
        ok = json_integer_value(json_array_get(a, (size_t)i)) == ids[i];
    if (!ok) {
        fprintf(stderr, "%s line %d: %d ids, expected %zu:", what, line + 1, n, json_array_size(a));
        for (int i = 0; i < n && i < 40; i++)
            fprintf(stderr, " %d", ids[i]);
        fprintf(stderr, "\n  expected:");
        for (size_t i = 0; i < json_array_size(a) && i < 40; i++)
            fprintf(stderr, " %d", (int)json_integer_value(json_array_get(a, i)));
        fprintf(stderr, "\n");
    }
    return ok;
}

/* One model: every test line's spm ids and decode equal python3-sentencepiece's. */
static void check_model(const char *name)
{
    char model[64], ref[64];
    snprintf(model, sizeof model, "%s.model", name);
    snprintf(ref, sizeof ref, "%s.jsonl", name);
    lines_t in, exp;
    lines_read(path_of("test.txt"), &in);
    lines_read(path_of(ref), &exp);
    assert_int_equal(in.n, exp.n);
    assert_true(in.n >= MIN_LINES);
    mt_spm *sp = NULL;
    mt_err err;
    if (mt_spm_load(path_of(model), &sp, &err) != MT_OK)
        fail_msg("%s: %s", model, err.msg);
    mt_pieces pc = { 0 };
    int bad = 0, pieces = 0;
    for (int i = 0; i < in.n; i++) {
        json_t *j = json_loads(exp.line[i], 0, NULL);
        assert_non_null(j);
        assert_int_equal(mt_spm_encode(sp, in.line[i], strlen(in.line[i]), &pc, &err), MT_OK);
        pieces += pc.n;
        if (!ids_equal(pc.id, pc.n, json_object_get(j, "ids"), name, i))
            bad++;
        char *dec = NULL;
        assert_int_equal(mt_spm_decode(sp, pc.id, pc.n, &dec, NULL, &err), MT_OK);
        if (strcmp(dec, json_string_value(json_object_get(j, "dec")))) {
            fprintf(stderr, "%s line %d: decode \"%s\"\n", name, i + 1, dec);
            bad++;
        }
        free(dec);
        json_decref(j);
    }
    printf("%s: %d lines, %d pieces, %d differences\n", name, in.n, pieces, bad);
    assert_int_equal(bad, 0);
    /* a BPE model is no language model */
    double lp;
    assert_int_equal(mt_spm_log_prob(sp, "abc", 3, &lp, &err), MT_ERR_UNSUPPORTED);
    mt_pieces_free(&pc);
    mt_spm_free(sp);
    lines_free(&in);
    lines_free(&exp);
}

static void test_bpe_nllb_settings(void **state) { (void)state; check_model("nllb"); }
static void test_bpe_m2m_settings(void **state) { (void)state; check_model("m2m"); }
static void test_bpe_byte_fallback(void **state) { (void)state; check_model("bytes"); }
static void test_bpe_identity(void **state) { (void)state; check_model("ident"); }

/* ids[0..n) equal to the reference a but for one more "▁" id just before
 * the closing </s> (and language code): what a tokenizer.json with
 * Metaspace and no Strip gives for a text ending in whitespace (HF's fast
 * NLLB tokenizer of the hub's files; SentencePiece drops trailing
 * whitespace).  tail: ids after the pieces (1, or 2 with the legacy order). */
static int extra_space_only(const mt_multi_tokenizer *t, const int32_t *ids, int n, const json_t *a, int tail)
{
    if (!json_is_array(a) || (size_t)n != json_array_size(a) + 1)
        return 0;
    const char *p = mt_multi_piece(t, ids[n - tail - 1]);
    if (!p || strcmp(p, "\xe2\x96\x81"))
        return 0;
    for (int i = 0, k = 0; i < n; i++) {
        if (i == n - tail - 1)
            continue;
        if (json_integer_value(json_array_get(a, (size_t)k++)) != ids[i])
            return 0;
    }
    return 1;
}

/* One wrapped directory against a reference file (ref_fairseq.py's ids of
 * every test line, the language code and eos, the target language's id, and
 * the decode of [eos, tgt] + ids).  *trailing (when not NULL) counts the
 * lines that differ only as extra_space_only says, else those are
 * differences too.  Returns the differences. */
static int check_wrap(const char *ref, const char *subdir, mt_multi_kind kind, int *trailing)
{
    lines_t in, exp;
    lines_read(path_of("test.txt"), &in);
    lines_read(path_of(ref), &exp);
    assert_int_equal(in.n, exp.n);
    assert_true(in.n >= MIN_LINES);
    mt_multi_kind k;
    mt_err err;
    assert_int_equal(mt_multi_detect(path_of(subdir), &k, &err), MT_OK);
    assert_int_equal(k, kind);
    mt_multi_tokenizer *t = NULL;
    if (mt_multi_load(path_of(subdir), &t, &err) != MT_OK)
        fail_msg("%s: %s", subdir, err.msg);
    static int32_t ids[MAX_IDS + 2];
    int bad = 0, extra = 0;
    for (int i = 0; i < in.n; i++) {
        json_t *j = json_loads(exp.line[i], 0, NULL);
        assert_non_null(j);
        const char *lang = json_string_value(json_object_get(j, "lang"));
        const char *tgt = json_string_value(json_object_get(j, "tgt"));
        int n = 0;
        assert_int_equal(mt_multi_encode(t, lang, in.line[i], strlen(in.line[i]), ids + 2, MAX_IDS, &n, &err), MT_OK);
        const json_t *want = json_object_get(j, "ids");
        if (trailing && extra_space_only(t, ids + 2, n, want, mt_multi_legacy(t) ? 2 : 1))
            extra++;
        else if (!ids_equal(ids + 2, n, want, subdir, i))
            bad++;
        int32_t tid = mt_multi_lang_id(t, tgt);
        if (tid != json_integer_value(json_object_get(j, "tgt_id"))) {
            fprintf(stderr, "%s line %d: %s has id %d\n", subdir, i + 1, tgt, tid);
            bad++;
        }
        ids[0] = mt_multi_eos(t);
        ids[1] = tid;
        char *dec = NULL;
        assert_int_equal(mt_multi_decode(t, ids, n + 2, &dec, NULL, &err), MT_OK);
        if (strcmp(dec, json_string_value(json_object_get(j, "dec")))) {
            fprintf(stderr, "%s line %d: decode \"%s\"\n", subdir, i + 1, dec);
            bad++;
        }
        free(dec);
        json_decref(j);
    }
    printf("%s: %d lines wrapped, %d languages, %d differences%s", subdir, in.n, mt_multi_n_langs(t), bad,
           trailing ? "" : "\n");
    if (trailing) {
        printf(", %d lines with one more trailing \"\xe2\x96\x81\"\n", extra);
        *trailing = extra;
    }
    mt_multi_free(t);
    lines_free(&in);
    lines_free(&exp);
    return bad;
}

static void test_wrap_nllb(void **state)
{
    (void)state;
    assert_int_equal(check_wrap("nllb-wrap.jsonl", "nllb-dir", MT_MULTI_NLLB, NULL), 0);
}
static void test_wrap_m2m(void **state)
{
    (void)state;
    assert_int_equal(check_wrap("m2m-wrap.jsonl", "m2m-dir", MT_MULTI_M2M100, NULL), 0);
}

/* NLLB's tokenizer.json alone (tests/spm_bpe/gen_nllb_json.py), against the
 * spm directory's reference: the converter read (Strip right) gives the same
 * ids on every line; the hub's older layout one more "▁" before </s> on
 * exactly the lines ending in whitespace, nothing else. */
static void test_wrap_nllb_json_v5(void **state)
{
    (void)state;
    assert_int_equal(check_wrap("nllb-wrap.jsonl", "nllb-json-v5", MT_MULTI_NLLB, NULL), 0);
}
static void test_wrap_nllb_json_v4(void **state)
{
    (void)state;
    int trailing = 0;
    assert_int_equal(check_wrap("nllb-wrap.jsonl", "nllb-json-v4", MT_MULTI_NLLB, &trailing), 0);
    assert_true(trailing > 0);
}

/* 1 when the text holds an added token's string: @lenml/tokenizers splits
 * it out as that token, mtserve keeps it as text (tokenizer.h). */
static int has_added_token(const mt_multi_tokenizer *t, const char *text)
{
    static const char *const fixed[] = { "<s>", "<pad>", "</s>", "<unk>", "<mask>" };
    for (size_t i = 0; i < sizeof fixed / sizeof *fixed; i++)
        if (strstr(text, fixed[i]))
            return 1;
    for (int i = 0; i < mt_multi_n_langs(t); i++)
        if (strstr(text, mt_multi_lang_token(t, i)))
            return 1;
    return 0;
}

/* The same directory's pieces against the independent JavaScript
 * implementation (tests/tokenizers/ref_nllb.mjs: @lenml/tokenizers over the
 * same tokenizer.json), and decode against its decode with Python's strip
 * (NllbTokenizer's, which mtserve's decode is).  Lines with a typed added
 * token are skipped (counted).  The JS port approximates the Precompiled
 * charsmap by NFKC (and maps U+2000..U+200F to spaces): a line where its ids
 * differ from ours counts as its approximation only when they differ from
 * sentencepiece's too (nllb-wrap.jsonl, whose pieces ours equal); every
 * other difference is one.  Returns the differences. */
static int check_js(const char *subdir)
{
    char ref[64];
    snprintf(ref, sizeof ref, "%s-js.jsonl", subdir);
    lines_t in, exp, spm;
    lines_read(path_of("test.txt"), &in);
    lines_read(path_of(ref), &exp);
    lines_read(path_of("nllb-wrap.jsonl"), &spm);
    assert_int_equal(in.n, exp.n);
    assert_int_equal(in.n, spm.n);
    mt_multi_tokenizer *t = NULL;
    mt_err err;
    if (mt_multi_load(path_of(subdir), &t, &err) != MT_OK)
        fail_msg("%s: %s", subdir, err.msg);
    static int32_t ids[MAX_IDS];
    int bad = 0, skipped = 0, compared = 0, approx = 0;
    for (int i = 0; i < in.n; i++) {
        if (has_added_token(t, in.line[i])) {
            skipped++;
            continue;
        }
        json_t *j = json_loads(exp.line[i], 0, NULL);
        assert_non_null(j);
        int n = 0;
        assert_int_equal(mt_multi_encode_text(t, in.line[i], strlen(in.line[i]), ids, MAX_IDS, &n, &err), MT_OK);
        compared++;
        const json_t *js_ids = json_object_get(j, "ids");
        if (!ids_equal(ids, n - 1, js_ids, ref, i)) {                       /* the text's ids: no </s> */
            json_t *w = json_loads(spm.line[i], 0, NULL);
            const json_t *sp_ids = json_object_get(w, "ids");                 /* [lang] + pieces + [</s>] */
            int same = json_array_size(sp_ids) == json_array_size(js_ids) + 2;
            for (size_t k = 0; same && k < json_array_size(js_ids); k++)
                same = json_integer_value(json_array_get(js_ids, k)) == json_integer_value(json_array_get(sp_ids, k + 1));
            json_decref(w);
            if (same) {
                bad++;
            } else {                      /* JS alone: its decode differs with its ids */
                approx++;
                json_decref(j);
                continue;
            }
        }
        char *dec = NULL;
        assert_int_equal(mt_multi_decode(t, ids, n, &dec, NULL, &err), MT_OK);
        mt_sbuf js = { 0 };
        const char *jd = json_string_value(json_object_get(j, "dec"));
        assert_int_equal(mt_sb_add(&js, jd, strlen(jd) + 1), 0);
        js.n--;
        mt_tok_py_strip(&js);
        if (strcmp(dec, js.p)) {
            fprintf(stderr, "%s line %d: decode \"%s\", JS \"%s\"\n", ref, i + 1, dec, js.p);
            bad++;
        }
        free(js.p);
        free(dec);
        json_decref(j);
    }
    printf("%s: %d lines compared with @lenml/tokenizers (ids and decode), %d differences; %d lines where the JS "
           "ids differ from sentencepiece's too (its NFKC for the charsmap); %d lines with a typed added token "
           "skipped\n", subdir, compared, bad, approx, skipped);
    mt_multi_free(t);
    lines_free(&in);
    lines_free(&exp);
    lines_free(&spm);
    return bad;
}

static void test_nllb_json_js(void **state)
{
    (void)state;
    assert_int_equal(check_js("nllb-json-v4"), 0);
}

/* legacy_behaviour true: pieces + [</s>, code], as ref_fairseq.py's legacy. */
static void test_wrap_nllb_legacy(void **state)
{
    (void)state;
    assert_int_equal(check_wrap("nllb-legacy-wrap.jsonl", "nllb-legacy-dir", MT_MULTI_NLLB, NULL), 0);
}

int main(int argc, char **argv)
{
    const char *t = argc > 0 ? strstr(argv[0], "/tests/test_spm_bpe") : NULL;
    if (t && (size_t)(t - argv[0]) + 9 < sizeof default_dir)
        snprintf(default_dir, sizeof default_dir, "%.*s/spm-bpe", (int)(t - argv[0]), argv[0]);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_bpe_nllb_settings),
        cmocka_unit_test(test_bpe_m2m_settings),
        cmocka_unit_test(test_bpe_byte_fallback),
        cmocka_unit_test(test_bpe_identity),
        cmocka_unit_test(test_wrap_nllb),
        cmocka_unit_test(test_wrap_m2m),
        cmocka_unit_test(test_wrap_nllb_json_v5),
        cmocka_unit_test(test_wrap_nllb_json_v4),
        cmocka_unit_test(test_nllb_json_js),
        cmocka_unit_test(test_wrap_nllb_legacy),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
