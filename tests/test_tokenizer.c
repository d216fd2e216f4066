/* Tokenizer tests: the C SentencePiece + Marian tokenizer against outputs of
 * Debian's python3-sentencepiece 0.1.97 and models/recipe/marian_tok.py,
 * generated once by models/recipe/tok_fixtures.py (format:
 * tests/fixtures/tokenizer/README.md), plus refusals, fuzzing and threads.
 * Run from the repository root. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "fixture_file.h"

#include <errno.h>
#include <jansson.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tokenizer/tokenizer.h"

#define FIX  "tests/fixtures/tokenizer"
#define OPUS "tests/fixtures/opus-mt"
#define OURS "models/en-fr"   /* the shipped default model's tokenizer */

/* ---- helpers ------------------------------------------------------------------- */

static void spit(const char *path, const void *data, size_t len)
{
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(data, 1, len, f), len);
    assert_int_equal(fclose(f), 0);
}

typedef struct {
    char  *buf;
    char **line;
    int    n;
} lines_t;

/* Lines of a file split on '\n' (in place, NUL-terminated); a final newline ends the last line. */
static void lines_read(const char *path, lines_t *l)
{
    size_t len;
    l->buf = slurp(path, &len);
    int cap = 1024;
    l->line = malloc(cap * sizeof *l->line);
    l->n = 0;
    for (char *p = l->buf; p < l->buf + len;) {
        char *e = memchr(p, '\n', (size_t)(l->buf + len - p));
        if (!e)
            e = l->buf + len;
        *e = '\0';
        if (l->n == cap)
            l->line = realloc(l->line, (cap *= 2) * sizeof *l->line);
        l->line[l->n++] = p;
        p = e + 1;
    }
}

static void lines_free(lines_t *l)
{
    free(l->buf);
    free(l->line);
}

/* Fixture escapes: \\ \n \t \r \xHH.  out needs strlen(s) bytes. */
static size_t unescape(const char *s, char *out)
{
    size_t n = 0;
    while (*s) {
        if (*s != '\\') {
            out[n++] = *s++;
            continue;
        }
        char c = s[1];
        if (c == 'x') {
            char hex[3] = { s[2], s[3], 0 };
            char *end;
            out[n++] = (char)strtoul(hex, &end, 16);
            assert_true(end == hex + 2);
            s += 4;
            continue;
        }
        out[n++] = c == '\\' ? '\\' : c == 'n' ? '\n' : c == 't' ? '\t' : c == 'r' ? '\r' : (fail(), 0);
        s += 2;
    }
    return n;
}

static uint64_t fnv(const void *p, size_t n)
{
    const uint8_t *b = p;
    uint64_t h = 0xcbf29ce484222325ull;
    for (size_t i = 0; i < n; i++)
        h = (h ^ b[i]) * 0x100000001b3ull;
    return h;
}

static int hash_is(const char *field, const void *p, size_t n)
{
    char buf[17];
    snprintf(buf, sizeof buf, "%016llx", (unsigned long long)fnv(p, n));
    return strcmp(field, buf) == 0;
}

/* Growable byte buffer for formatting. */
typedef struct {
    char  *p;
    size_t n, cap;
} buf_t;

static void buf_add(buf_t *b, const void *s, size_t n)
{
    if (b->n + n + 1 > b->cap) {
        while (b->n + n + 1 > b->cap)
            b->cap = b->cap ? 2 * b->cap : 256;
        b->p = realloc(b->p, b->cap);
        assert_non_null(b->p);
    }
    memcpy(b->p + b->n, s, n);
    b->n += n;
    b->p[b->n] = '\0';
}

static void buf_ids(buf_t *b, const int32_t *ids, int n)
{
    char tmp[16];
    b->n = 0;
    buf_add(b, "", 0);
    for (int i = 0; i < n; i++) {
        int k = snprintf(tmp, sizeof tmp, i ? " %d" : "%d", ids[i]);
        buf_add(b, tmp, (size_t)k);
    }
}

/* An ids field: "1 2 3", or "#<hash of that string>". */
static int ids_match(const char *field, buf_t *b, const int32_t *ids, int n)
{
    buf_ids(b, ids, n);
    return field[0] == '#' ? hash_is(field + 1, b->p, b->n) : strcmp(field, b->p) == 0;
}

/* Python's str.isspace() for the strip in the round-trip check. */
static int py_space(uint32_t c)
{
    return c == ' ' || (c >= 0x09 && c <= 0x0D) || (c >= 0x1C && c <= 0x1F) || c == 0x85 || c == 0xA0 ||
           c == 0x1680 || (c >= 0x2000 && c <= 0x200A) || c == 0x2028 || c == 0x2029 || c == 0x202F ||
           c == 0x205F || c == 0x3000;
}

static uint32_t cp_at(const char *s, size_t n, size_t *len)
{
    const uint8_t *u = (const uint8_t *)s;
    if (u[0] < 0x80 || n < 2) { *len = 1; return u[0]; }
    if (u[0] < 0xE0 || n < 3) { *len = 2; return (uint32_t)(u[0] & 0x1F) << 6 | (u[1] & 0x3F); }
    if (u[0] < 0xF0 || n < 4) { *len = 3; return (uint32_t)(u[0] & 0x0F) << 12 | (uint32_t)(u[1] & 0x3F) << 6 | (u[2] & 0x3F); }
    *len = 4;
    return (uint32_t)(u[0] & 0x07) << 18 | (uint32_t)(u[1] & 0x3F) << 12 | (uint32_t)(u[2] & 0x3F) << 6 | (u[3] & 0x3F);
}

/* normalized text with U+2581 -> ' ', then Python-strip: what decode(encode(x)) must give. */
static void expected_roundtrip(const char *norm, size_t n, buf_t *out)
{
    out->n = 0;
    buf_add(out, "", 0);
    for (size_t i = 0; i < n;) {
        if (n - i >= 3 && memcmp(norm + i, "\xe2\x96\x81", 3) == 0) {
            buf_add(out, " ", 1);
            i += 3;
        } else {
            buf_add(out, norm + i, 1);
            i++;
        }
    }
    size_t s = 0, e = out->n, k;
    while (s < e && py_space(cp_at(out->p + s, e - s, &k)))
        s += k;
    while (e > s) {
        size_t b = e - 1;
        while (b > s && ((uint8_t)out->p[b] & 0xC0) == 0x80)
            b--;
        if (!py_space(cp_at(out->p + b, e - b, &k)))
            break;
        e = b;
    }
    memmove(out->p, out->p + s, e - s);
    out->n = e - s;
    out->p[out->n] = '\0';
}

static int valid_utf8(const char *s, size_t n)
{
    const uint8_t *u = (const uint8_t *)s;
    for (size_t i = 0; i < n;) {
        uint8_t b = u[i];
        size_t k = b < 0x80 ? 1 : (b & 0xE0) == 0xC0 ? 2 : (b & 0xF0) == 0xE0 ? 3 : (b & 0xF8) == 0xF0 ? 4 : 0;
        if (!k || i + k > n)
            return 0;
        uint32_t c = b & (k == 1 ? 0x7F : k == 2 ? 0x1F : k == 3 ? 0x0F : 0x07);
        for (size_t j = 1; j < k; j++) {
            if ((u[i + j] & 0xC0) != 0x80)
                return 0;
            c = c << 6 | (u[i + j] & 0x3F);
        }
        if ((k == 2 && c < 0x80) || (k == 3 && c < 0x800) || (k == 4 && (c < 0x10000 || c > 0x10FFFF)) ||
            (c >= 0xD800 && c <= 0xDFFF))
            return 0;
        i += k;
    }
    return 1;
}

/* ---- fixture comparison ---------------------------------------------------------- */

typedef struct {
    const char *name;          /* directory under tests/fixtures/tokenizer */
    const char *marian_dir;    /* Marian model directory, or NULL           */
    const char *spm;           /* source spm                                */
    const char *spm_tgt;       /* target spm when the fixture has spm_tgt   */
    const char *sets[6];
} fixture_model;

typedef struct {
    mt_spm       *src, *tgt;
    mt_tokenizer *tok;
    mt_pieces     pc;
    buf_t         b, b2;
    int           lines, fields, roundtrips, mismatches;
} ctx_t;

static void report(ctx_t *c, const char *set, int line, const char *field, const char *input)
{
    if (c->mismatches++ < 10)
        print_error("MISMATCH %s line %d field %s, input \"%.120s\"\n", set, line + 1, field, input);
}

/* spm ids + pieces of one line against the fields. */
static void check_spm(ctx_t *c, const mt_spm *sp, const char *in, size_t n, const char *f_ids,
                      const char *f_pieces, const char *set, int line, const char *esc)
{
    mt_err err;
    mt_status st = mt_spm_encode(sp, in, n, &c->pc, &err);
    assert_int_equal(st, MT_OK);
    if (!ids_match(f_ids, &c->b, c->pc.id, c->pc.n)) {
        report(c, set, line, "spm", esc);
        print_error("  C ids: %.300s\n  expected: %.300s\n", c->b.p, f_ids);
    }
    c->fields++;
    if (!f_pieces)
        return;
    int ok = 1;
    if (strcmp(f_pieces, "-") == 0) {          /* no unknown piece: every piece is its id's string */
        for (int i = 0; i < c->pc.n && ok; i++) {
            size_t len;
            const char *p = mt_spm_piece(sp, c->pc.id[i], &len);
            ok = c->pc.id[i] != mt_spm_unk_id(sp) && p && len == c->pc.len[i] &&
                 memcmp(p, c->pc.text + c->pc.off[i], len) == 0;
        }
    } else {
        c->b2.n = 0;
        for (int i = 0; i < c->pc.n; i++) {
            char tmp[16];
            int k = snprintf(tmp, sizeof tmp, "%u:", c->pc.len[i]);
            buf_add(&c->b2, tmp, (size_t)k);
            buf_add(&c->b2, c->pc.text + c->pc.off[i], c->pc.len[i]);
        }
        ok = hash_is(f_pieces, c->b2.p ? c->b2.p : "", c->b2.n);
    }
    if (!ok)
        report(c, set, line, "pieces", esc);
    c->fields++;
}

static void check_marian(ctx_t *c, const char *in, size_t n, int target, const char *f_ids, const char *f_dec,
                         const char *set, int line, const char *esc)
{
    int32_t ids[4096], n_ids = 0;
    mt_err err;
    mt_status st = mt_tokenizer_encode(c->tok, in, n, target, ids, 4096, &n_ids, &err);
    if (strcmp(f_ids, "!") == 0) {           /* invalid UTF-8: must be refused */
        if (st != MT_ERR_INPUT || !strstr(err.msg, "UTF-8"))
            report(c, set, line, "marian(!)", esc);
        c->fields++;
        return;
    }
    assert_int_equal(st, MT_OK);
    if (!ids_match(f_ids, &c->b, ids, n_ids)) {
        report(c, set, line, target ? "marian_tgt" : "marian", esc);
        print_error("  C ids: %.300s\n  expected: %.300s\n", c->b.p, f_ids);
    }
    c->fields++;
    if (!f_dec)
        return;
    char *text = NULL;
    assert_int_equal(mt_tokenizer_decode(c->tok, ids, n_ids, &text, &err), MT_OK);
    if (!hash_is(f_dec, text, strlen(text))) {
        report(c, set, line, "decode", esc);
        print_error("  C decoded: \"%.300s\"\n", text);
    }
    free(text);
    c->fields++;
}

/* decode(encode(x)) == normalized x (U+2581 -> space, stripped) wherever no <unk> occurs.
 * Uses the target side (target.spm both ways), which is what decode reads. */
static void check_roundtrip(ctx_t *c, const char *in, size_t n, const char *set, int line, const char *esc)
{
    int32_t ids[4096], n_ids = 0;
    mt_err err;
    assert_int_equal(mt_tokenizer_encode(c->tok, in, n, 1, ids, 4096, &n_ids, &err), MT_OK);
    for (int i = 0; i < n_ids; i++)
        if (ids[i] == mt_tokenizer_unk(c->tok))
            return;
    char *norm = NULL, *text = NULL;
    size_t norm_len = 0;
    assert_int_equal(mt_spm_normalize(c->tgt, in, n, &norm, &norm_len, &err), MT_OK);
    expected_roundtrip(norm, norm_len, &c->b2);
    assert_int_equal(mt_tokenizer_decode(c->tok, ids, n_ids, &text, &err), MT_OK);
    if (strcmp(text, c->b2.p) != 0) {
        report(c, set, line, "roundtrip", esc);
        print_error("  decoded \"%.200s\"\n  expected \"%.200s\"\n", text, c->b2.p);
    }
    c->roundtrips++;
    free(norm);
    free(text);
}

static int field_index(char **names, int n, const char *want)
{
    for (int i = 0; i < n; i++)
        if (strcmp(names[i], want) == 0)
            return i;
    return -1;
}

static int split_tabs(char *s, char **f, int max)
{
    int n = 0;
    f[n++] = s;
    for (char *p = s; *p && n < max; p++) {
        if (*p == '\t') {
            *p = '\0';
            f[n++] = p + 1;
        }
    }
    return n;
}

static void run_fixture_set(ctx_t *c, const fixture_model *m, const char *set)
{
    char path[512];
    lines_t in, ex;
    snprintf(path, sizeof path, FIX "/inputs/%s.txt", set);
    lines_read(path, &in);
    snprintf(path, sizeof path, FIX "/%s/%s.txt", m->name, set);
    lines_read(path, &ex);
    assert_true(ex.n >= 1 && strncmp(ex.line[0], "# fields: ", 10) == 0);
    assert_int_equal(ex.n - 1, in.n);
    char *names[16];
    int nf = split_tabs(ex.line[0] + 10, names, 16);
    int i_spm = field_index(names, nf, "spm"), i_pc = field_index(names, nf, "pieces");
    int i_tspm = field_index(names, nf, "spm_tgt"), i_tpc = field_index(names, nf, "pieces_tgt");
    int i_mar = field_index(names, nf, "marian"), i_dec = field_index(names, nf, "decode");
    int i_mtgt = field_index(names, nf, "marian_tgt"), i_sdec = field_index(names, nf, "spm_decode");
    assert_true(i_spm >= 0 && i_pc >= 0);
    char *raw = NULL;
    for (int l = 0; l < in.n; l++) {
        char *f[16];
        assert_int_equal(split_tabs(ex.line[l + 1], f, 16), nf);
        raw = realloc(raw, strlen(in.line[l]) + 1);
        size_t n = unescape(in.line[l], raw);
        check_spm(c, c->src, raw, n, f[i_spm], f[i_pc], set, l, in.line[l]);
        if (i_sdec >= 0) {                    /* spm.decode(spm.encode(x)) */
            char *text = NULL;
            size_t tl = 0;
            mt_err err;
            assert_int_equal(mt_spm_decode(c->src, c->pc.id, c->pc.n, &text, &tl, &err), MT_OK);
            if (!hash_is(f[i_sdec], text, tl)) {
                report(c, set, l, "spm_decode", in.line[l]);
                print_error("  C decoded: \"%.200s\"\n", text);
            }
            free(text);
            c->fields++;
        }
        if (i_tspm >= 0)
            check_spm(c, c->tgt, raw, n, f[i_tspm], i_tpc >= 0 ? f[i_tpc] : NULL, set, l, in.line[l]);
        if (i_mar >= 0)
            check_marian(c, raw, n, 0, f[i_mar], i_dec >= 0 ? f[i_dec] : NULL, set, l, in.line[l]);
        if (i_mtgt >= 0)
            check_marian(c, raw, n, 1, f[i_mtgt], NULL, set, l, in.line[l]);
        if (c->tok && valid_utf8(raw, n))
            check_roundtrip(c, raw, n, set, l, in.line[l]);
        c->lines++;
    }
    free(raw);
    lines_free(&in);
    lines_free(&ex);
}

static void run_fixture_model(const fixture_model *m, int min_lines)
{
    ctx_t c = { 0 };
    mt_err err;
    assert_int_equal(mt_spm_load(m->spm, &c.src, &err), MT_OK);
    if (m->spm_tgt)
        assert_int_equal(mt_spm_load(m->spm_tgt, &c.tgt, &err), MT_OK);
    if (m->marian_dir) {
        if (mt_tokenizer_load(m->marian_dir, &c.tok, &err) != MT_OK)
            fail_msg("%s", err.msg);
        if (!c.tgt) {
            char path[512];
            snprintf(path, sizeof path, "%s/target.spm", m->marian_dir);
            assert_int_equal(mt_spm_load(path, &c.tgt, &err), MT_OK);
        }
    }
    for (int i = 0; i < 6 && m->sets[i]; i++)
        run_fixture_set(&c, m, m->sets[i]);
    print_message("%-13s %5d lines, %6d fields equal to python3-sentencepiece/marian_tok, %5d round trips\n",
                  m->name, c.lines, c.fields - c.mismatches, c.roundtrips);
    mt_pieces_free(&c.pc);
    free(c.b.p);
    free(c.b2.p);
    mt_tokenizer_free(c.tok);
    mt_spm_free(c.src);
    mt_spm_free(c.tgt);
    assert_int_equal(c.mismatches, 0);
    assert_true(c.lines >= min_lines);
    if (m->marian_dir)
        assert_true(c.roundtrips > c.lines / 2);
}

#define ALL_SETS { "test.en", "test.fr", "dev.en", "dev.fr", "hard", NULL }

static void test_fixtures_ours(void **state)
{
    (void)state;
    fixture_model m = { "ours", OURS, OURS "/source.spm", NULL, ALL_SETS };
    run_fixture_model(&m, 10000);
}

static void test_fixtures_en_mg(void **state)
{
    (void)state;
    fixture_model m = { "en-mg", OPUS "/en-mg", OPUS "/en-mg/source.spm", OPUS "/en-mg/target.spm", ALL_SETS };
    run_fixture_model(&m, 10000);
}

static void test_fixtures_fr_en(void **state)
{
    (void)state;
    fixture_model m = { "tc-big-fr-en", OPUS "/tc-big-fr-en", OPUS "/tc-big-fr-en/source.spm", NULL, ALL_SETS };
    run_fixture_model(&m, 10000);
}

/* Tiny models trained by tok_fixtures.py: byte fallback + user-defined + control + UNUSED
 * pieces; whitespace as suffix without whitespace collapsing; a custom charsmap without
 * dummy prefix or whitespace escaping. */
static void test_fixtures_tiny(void **state)
{
    (void)state;
    static const char *names[] = { "uni-bytes", "uni-suffix", "uni-rules", "bpe", "bpe-unused" };
    for (int i = 0; i < 5; i++) {
        char path[256];
        snprintf(path, sizeof path, FIX "/spm/%s.spm", names[i]);
        fixture_model m = { names[i], NULL, path, NULL, { "hard", NULL } };
        run_fixture_model(&m, 3000);
    }
}


/* ---- NLLB-200 / M2M-100 tokenizers (multi.c) on spm/bpe.spm --------------------------- */

/* A directory holding spm/bpe.spm as sentencepiece.bpe.model and the named
 * files (name, content pairs; content NULL: not written). */
static void multi_dir(char *dir, const char *const *files, int n)
{
    strcpy(dir, "/tmp/mt_multi_XXXXXX");
    assert_non_null(mkdtemp(dir));
    char path[256];
    size_t len;
    char *d = slurp(FIX "/spm/bpe.spm", &len);
    snprintf(path, sizeof path, "%s/sentencepiece.bpe.model", dir);
    spit(path, d, len);
    free(d);
    for (int i = 0; i < n; i += 2) {
        if (!files[i + 1])
            continue;
        snprintf(path, sizeof path, "%s/%s", dir, files[i]);
        spit(path, files[i + 1], strlen(files[i + 1]));
    }
}

static void multi_rmdir(const char *dir)
{
    static const char *files[] = { "sentencepiece.bpe.model", "tokenizer_config.json", "special_tokens_map.json",
                                   "vocab.json", "tokenizer.json" };
    char path[256];
    for (int i = 0; i < 5; i++) {
        snprintf(path, sizeof path, "%s/%s", dir, files[i]);
        unlink(path);
    }
    assert_int_equal(rmdir(dir), 0);
}

/* NLLB ids and decode of every hard case against bpe/nllb.txt (ref_fairseq.Nllb). */
static void test_nllb_fixture(void **state)
{
    (void)state;
    static const char *const files[] = { "tokenizer_config.json", "{\"tokenizer_class\": \"NllbTokenizer\"}" };
    char dir[64];
    multi_dir(dir, files, 2);
    mt_multi_tokenizer *t = NULL;
    mt_err err;
    if (mt_multi_load(dir, &t, &err) != MT_OK)
        fail_msg("%s", err.msg);
    assert_int_equal(mt_multi_kind_of(t), MT_MULTI_NLLB);
    assert_int_equal(mt_multi_n_langs(t), 202);
    int sp_n = mt_spm_size(mt_multi_spm(t));
    assert_int_equal(mt_multi_lang_id(t, "ace_Arab"), sp_n + 1);
    assert_int_equal(mt_multi_lang_id(t, "eng_Latn"), sp_n + 1 + 46);
    assert_int_equal(mt_multi_lang_id(t, "zul_Latn"), sp_n + 202);
    assert_int_equal(mt_multi_vocab_size(t), sp_n + 1 + 202 + 1);
    assert_int_equal(mt_multi_lang_id(t, "xx_Latn"), -1);
    lines_t in, ex;
    lines_read(FIX "/inputs/hard.txt", &in);
    lines_read(FIX "/bpe/nllb.txt", &ex);
    assert_int_equal(ex.n - 1, in.n);
    buf_t b = { 0 };
    char *raw = NULL;
    int compared = 0, refused = 0, bad = 0;
    static int32_t ids[4098];
    for (int l = 0; l < in.n; l++) {
        char *f[4];
        assert_int_equal(split_tabs(ex.line[l + 1], f, 4), 2);
        raw = realloc(raw, strlen(in.line[l]) + 1);
        size_t n = unescape(in.line[l], raw);
        int n_ids = 0;
        mt_status st = mt_multi_encode(t, "eng_Latn", raw, n, ids + 2, 4096, &n_ids, &err);
        if (!strcmp(f[0], "-")) {                    /* malformed UTF-8 */
            assert_int_equal(st, MT_ERR_INPUT);
            refused++;
            continue;
        }
        assert_int_equal(st, MT_OK);
        ids[0] = mt_multi_eos(t);
        ids[1] = mt_multi_lang_id(t, "fra_Latn");
        char *text = NULL;
        size_t tl = 0;
        assert_int_equal(mt_multi_decode(t, ids, n_ids + 2, &text, &tl, &err), MT_OK);
        if (!ids_match(f[0], &b, ids + 2, n_ids) || !hash_is(f[1], text, tl)) {
            if (bad++ < 5)
                print_error("MISMATCH nllb line %d: %.200s\n  C: %.200s\n", l + 1, in.line[l], b.p);
        }
        free(text);
        compared++;
    }
    print_message("nllb (bpe.spm): %d lines equal to ref_fairseq.py, %d malformed refused\n", compared - bad, refused);
    assert_int_equal(bad, 0);
    assert_true(compared >= 3000 && refused > 0);
    free(raw);
    free(b.p);
    lines_free(&in);
    lines_free(&ex);
    mt_multi_free(t);
    multi_rmdir(dir);
}

/* M2M-100: a vocab.json in an order of its own (piece k of the spm at id
 * 4 + (size - 1 - k), every tenth piece left out): the ids are the spm
 * pieces looked up in it, __xx__ from len(vocab.json), </s> last. */
static void test_multi_m2m(void **state)
{
    (void)state;
    mt_spm *sp = NULL;
    mt_err err;
    assert_int_equal(mt_spm_load(FIX "/spm/bpe.spm", &sp, &err), MT_OK);
    int sn = mt_spm_size(sp), entries = 4;
    json_t *v = json_pack("{s:i, s:i, s:i, s:i}", "<s>", 0, "<pad>", 1, "</s>", 2, "<unk>", 3);
    int32_t *map = calloc((size_t)sn, sizeof *map);
    int kept = 0;
    for (int k = 3; k < sn; k++)
        kept += k % 10 != 0;
    for (int k = 3, r = 0; k < sn; k++) {
        map[k] = 3;
        if (k % 10 == 0)
            continue;
        map[k] = 4 + (kept - 1 - r++);
        json_object_set_new(v, mt_spm_piece(sp, k, NULL), json_integer(map[k]));
        entries++;
    }
    char *vs = json_dumps(v, 0);
    const char *files[] = { "vocab.json", vs, "tokenizer_config.json",
                            "{\"tokenizer_class\": \"M2M100Tokenizer\", \"language_codes\": \"m2m100\"}" };
    char dir[64];
    multi_dir(dir, files, 4);
    mt_multi_kind kind;
    assert_int_equal(mt_multi_detect(dir, &kind, &err), MT_OK);
    assert_int_equal(kind, MT_MULTI_M2M100);
    mt_multi_tokenizer *t = NULL;
    if (mt_multi_load(dir, &t, &err) != MT_OK)
        fail_msg("%s", err.msg);
    assert_int_equal(mt_multi_n_langs(t), 100);
    assert_string_equal(mt_multi_lang(t, 18), "en");
    assert_string_equal(mt_multi_lang_token(t, 18), "__en__");
    assert_int_equal(mt_multi_lang_id(t, "en"), entries + 18);
    assert_int_equal(mt_multi_lang_id(t, "__en__"), entries + 18);
    assert_int_equal(mt_multi_vocab_size(t), entries + 100 + 8);
    static const char *texts[] = { "Hello world, the quick brown fox.", "  spaces   and \xe2\x98\x83 snow ", "" };
    mt_pieces pc = { 0 };
    for (int i = 0; i < 3; i++) {
        int32_t ids[256];
        int n = 0;
        assert_int_equal(mt_multi_encode(t, "__fr__", texts[i], strlen(texts[i]), ids, 256, &n, &err), MT_OK);
        assert_int_equal(mt_spm_encode(sp, texts[i], strlen(texts[i]), &pc, &err), MT_OK);
        assert_int_equal(n, pc.n + 2);
        assert_int_equal(ids[0], mt_multi_lang_id(t, "fr"));
        assert_int_equal(ids[n - 1], 2);
        for (int k = 0; k < pc.n; k++)
            assert_int_equal(ids[k + 1], pc.id[k] == mt_spm_unk_id(sp) ? 3 : map[pc.id[k]]);
        /* decode: the spm decode of the pieces that have an id of their own (unknown and
         * left-out pieces are <unk>, a special id, skipped) */
        char *text = NULL, *want = NULL;
        assert_int_equal(mt_multi_decode(t, ids, n, &text, NULL, &err), MT_OK);
        int32_t sids[256];
        int m = 0;
        for (int k = 0; k < pc.n; k++)
            if (pc.id[k] != mt_spm_unk_id(sp) && map[pc.id[k]] != 3)
                sids[m++] = pc.id[k];
        assert_int_equal(mt_spm_decode(sp, sids, m, &want, NULL, &err), MT_OK);
        assert_string_equal(text, want);
        free(text);
        free(want);
    }
    /* TOO_LONG with the count; a language is needed */
    int32_t few[3];
    int n = 0;
    assert_int_equal(mt_multi_encode(t, "en", texts[0], strlen(texts[0]), few, 3, &n, &err), MT_ERR_TOO_LONG);
    assert_true(n > 3);
    assert_int_equal(mt_multi_encode(t, "eng_Latn", "x", 1, few, 3, &n, &err), MT_ERR_INPUT);
    assert_non_null(strstr(err.msg, "eng_Latn"));
    assert_int_equal(mt_multi_encode(t, "en", "\xff", 1, few, 3, &n, &err), MT_ERR_INPUT);
    mt_pieces_free(&pc);
    mt_multi_free(t);
    mt_spm_free(sp);
    free(vs);
    free(map);
    json_decref(v);
    multi_rmdir(dir);
}

/* Every file checked: a refusal names the file and the problem. */
static void test_multi_refusals(void **state)
{
    (void)state;
    static const struct {
        const char *files[6];
        mt_status   st;
        const char *msg;
    } cases[] = {
        { { "tokenizer_config.json", "{\"tokenizer_class\": \"T5Tokenizer\"}" }, MT_ERR_UNSUPPORTED, "T5Tokenizer" },
        { { "tokenizer_config.json", "{\"tokenizer_class\": \"M2M100Tokenizer\"}" }, MT_ERR_IO, "vocab.json" },
        { { "tokenizer_config.json", "{\"tokenizer_class\": " }, MT_ERR_FORMAT, "tokenizer_config.json" },
        { { "tokenizer_config.json", "[1]" }, MT_ERR_FORMAT, "not a JSON object" },
        { { "special_tokens_map.json", "{\"additional_special_tokens\": [\"ace_Arab\", \"eng_Latn\"]}" },
          MT_ERR_UNSUPPORTED, "entry 1" },
        { { "tokenizer_config.json", "{\"additional_special_tokens\": \"eng_Latn\"}" }, MT_ERR_FORMAT, "not a list" },
        { { "tokenizer_config.json", "{\"added_tokens_decoder\": {\"5\": {\"content\": \"eng_Latn\"}}}" },
          MT_ERR_UNSUPPORTED, "eng_Latn" },
        { { "tokenizer_config.json", "{\"added_tokens_decoder\": {\"7\": {\"content\": \"<zz>\"}}}" },
          MT_ERR_UNSUPPORTED, "<zz>" },
        { { "tokenizer_config.json", "{\"added_tokens_decoder\": {\"x\": {\"content\": \"<s>\"}}}" },
          MT_ERR_FORMAT, "added_tokens_decoder" },
        { { "tokenizer_config.json", "{\"legacy_behaviour\": 3}" }, MT_ERR_FORMAT, "legacy_behaviour" },
        { { "vocab.json", "{\"<s>\": 0, \"<pad>\": 1, \"</s>\": 2, \"<unk>\": 9}" }, MT_ERR_FORMAT, "collide" },
        { { "vocab.json", "{\"<s>\": 0, \"<pad>\": 1, \"</s>\": 2}" }, MT_ERR_FORMAT, "vocab.json" },
        { { "vocab.json", "{\"<s>\": 0, \"<pad>\": 1, \"</s>\": 2, \"<unk>\": 3}", "tokenizer_config.json",
            "{\"language_codes\": \"wmt21\"}" }, MT_ERR_UNSUPPORTED, "wmt21" },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char dir[64];
        multi_dir(dir, cases[i].files, 6);
        mt_multi_tokenizer *t = (mt_multi_tokenizer *)1;
        mt_err err = { 0 };
        mt_status st = mt_multi_load(dir, &t, &err);
        if (st != cases[i].st || !strstr(err.msg, cases[i].msg))
            fail_msg("case %zu: status %d, \"%s\"", i, st, err.msg);
        assert_null(t);
        multi_rmdir(dir);
    }
    /* the published layout's added_tokens_decoder is accepted; legacy order */
    char dir[64];
    const char *files[] = { "tokenizer_config.json",
                            "{\"legacy_behaviour\": true, \"added_tokens_decoder\": {\"0\": {\"content\": \"<s>\"}, "
                            "\"3\": {\"content\": \"<unk>\"}, \"347\": {\"content\": \"eng_Latn\"}, "
                            "\"503\": {\"content\": \"<mask>\"}, \"504\": {\"content\": \"<zz>\"}}}" };
    multi_dir(dir, files, 2);
    mt_multi_tokenizer *t = NULL;
    mt_err err;
    if (mt_multi_load(dir, &t, &err) != MT_OK)
        fail_msg("%s", err.msg);
    int32_t ids[64];
    int n = 0;
    assert_int_equal(mt_multi_encode(t, "eng_Latn", "", 0, ids, 64, &n, &err), MT_OK);
    assert_int_equal(n, 2);
    assert_int_equal(ids[0], 2);
    assert_int_equal(ids[1], mt_multi_lang_id(t, "eng_Latn"));
    int32_t neg = -1;
    char *out = NULL;
    assert_int_equal(mt_multi_decode(t, &neg, 1, &out, NULL, &err), MT_ERR_INPUT);
    mt_multi_free(t);
    multi_rmdir(dir);
    /* no spm model; only a tokenizer.json */
    strcpy(dir, "/tmp/mt_multi_XXXXXX");
    assert_non_null(mkdtemp(dir));
    assert_int_equal(mt_multi_load(dir, &t, &err), MT_ERR_IO);
    assert_non_null(strstr(err.msg, "sentencepiece.bpe.model"));
    char path[128], cfg[128];
    snprintf(path, sizeof path, "%s/tokenizer.json", dir);
    spit(path, "{}", 2);                /* read as NLLB's tokenizer.json (multi.c): that one is broken */
    assert_int_equal(mt_multi_load(dir, &t, &err), MT_ERR_FORMAT);
    assert_non_null(strstr(err.msg, "tokenizer.json"));
    /* M2M100Tokenizer has no fast class: its directory needs the spm model */
    snprintf(cfg, sizeof cfg, "%s/tokenizer_config.json", dir);
    spit(cfg, "{\"tokenizer_class\": \"M2M100Tokenizer\"}", 38);
    assert_int_equal(mt_multi_load(dir, &t, &err), MT_ERR_UNSUPPORTED);
    assert_non_null(strstr(err.msg, "M2M100Tokenizer"));
    unlink(cfg);
    unlink(path);
    assert_int_equal(rmdir(dir), 0);
}

/* ---- NLLB from tokenizer.json alone ------------------------------------------------- */

/* A tokenizer.json in NllbConverter's layout over a 3-piece BPE (▁ a ▁a at
 * 4..6), the 202 codes from 7 and <mask>; what = a change: "ok", "no-mask",
 * "swap" (two codes exchanged), "unk" (model.unk_token "a"), "bytelevel". */
static char *nllb_json(mt_multi_tokenizer *codes, const char *what)
{
    json_t *vocab = json_pack("{s:i,s:i,s:i,s:i,s:i,s:i,s:i}", "<s>", 0, "<pad>", 1, "</s>", 2, "<unk>", 3,
                              "\xe2\x96\x81", 4, "a", 5, "\xe2\x96\x81" "a", 6);
    json_t *added = json_array();
    static const char *const fixed[4] = { "<s>", "<pad>", "</s>", "<unk>" };
    for (int i = 0; i < 4; i++)
        json_array_append_new(added, json_pack("{s:i,s:s,s:b,s:b,s:b,s:b,s:b}", "id", i, "content", fixed[i],
                                               "single_word", 0, "lstrip", 0, "rstrip", 0, "normalized", 0, "special", 1));
    int n = mt_multi_n_langs(codes);
    for (int i = 0; i <= n; i++) {
        if (i == n && !strcmp(what, "no-mask"))
            break;
        int j = !strcmp(what, "swap") && i < 2 ? 1 - i : i;
        const char *c = i == n ? "<mask>" : mt_multi_lang_token(codes, j);
        json_array_append_new(added, json_pack("{s:i,s:s,s:b,s:b,s:b,s:b,s:b}", "id", 7 + i, "content", c,
                                               "single_word", 0, "lstrip", i == n, "rstrip", 0, "normalized", 0,
                                               "special", 1));
    }
    json_t *meta = !strcmp(what, "bytelevel")
        ? json_pack("{s:s,s:b,s:b,s:b}", "type", "ByteLevel", "add_prefix_space", 0, "trim_offsets", 0, "use_regex", 0)
        : json_pack("{s:s,s:s,s:b}", "type", "Metaspace", "replacement", "\xe2\x96\x81", "add_prefix_space", 1);
    json_t *root = json_pack("{s:s,s:n,s:n,s:o,s:n,s:o,s:n,s:n,s:{s:s,s:s,s:b,s:b,s:o,s:[s]}}", "version", "1.0",
                             "truncation", "padding", "added_tokens", added, "normalizer", "pre_tokenizer", meta,
                             "post_processor", "decoder", "model", "type", "BPE", "unk_token",
                             !strcmp(what, "unk") ? "a" : "<unk>", "fuse_unk", 1, "byte_fallback", 0, "vocab", vocab,
                             "merges", "\xe2\x96\x81 a");
    assert_non_null(root);
    char *js = json_dumps(root, JSON_COMPACT);
    json_decref(root);
    return js;
}

/* An NLLB directory with tokenizer.json and no spm model: loads with its own
 * ids (eng_Latn = 7 + 46), encodes a text's pieces between the language and
 * </s> (typed "</s>" stays text), decodes; each break of NllbConverter's
 * layout refused, naming what. */
static void test_multi_tokenizer_json(void **state)
{
    (void)state;
    char dir[64], path[128];
    multi_dir(dir, NULL, 0);                       /* an spm-backed NLLB: its code list */
    mt_multi_tokenizer *codes = NULL, *t = NULL;
    mt_err err;
    assert_int_equal(mt_multi_load(dir, &codes, &err), MT_OK);
    snprintf(path, sizeof path, "%s/sentencepiece.bpe.model", dir);
    unlink(path);
    snprintf(path, sizeof path, "%s/tokenizer.json", dir);
    static const struct { const char *what; mt_status st; const char *msg; } cases[] = {
        { "ok", MT_OK, NULL },
        { "no-mask", MT_ERR_UNSUPPORTED, "\"<mask>\" must be the last id" },
        { "swap", MT_ERR_UNSUPPORTED, "language code \"ace_Latn\" has id 7, NLLB's layout needs 9" },
        { "unk", MT_ERR_FORMAT, "model.unk_token" },
        { "bytelevel", MT_ERR_UNSUPPORTED, "Metaspace" },
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        char *js = nllb_json(codes, cases[k].what);
        spit(path, js, strlen(js));
        free(js);
        mt_status st = mt_multi_load(dir, &t, &err);
        if (st != cases[k].st || (cases[k].msg && !strstr(err.msg, cases[k].msg)))
            fail_msg("%s: status %d \"%s\"", cases[k].what, st, st ? err.msg : "");
        if (st)
            continue;
        assert_int_equal(mt_multi_lang_id(t, "eng_Latn"), 7 + 46);
        assert_int_equal(mt_multi_vocab_size(t), 7 + 202 + 1);
        int32_t ids[16];
        int n = 0;
        assert_int_equal(mt_multi_encode(t, "fra_Latn", "a a</s>", 7, ids, 16, &n, &err), MT_OK);
        int32_t want[] = { mt_multi_lang_id(t, "fra_Latn"), 6, 6, 3, 2 };   /* "</s>": unknown characters, fused */
        assert_int_equal(n, 5);
        assert_memory_equal(ids, want, sizeof want);
        assert_string_equal(mt_multi_piece(t, 6), "\xe2\x96\x81" "a");
        assert_int_equal(mt_multi_piece_id(t, "\xe2\x96\x81" "a"), 6);
        assert_null(mt_multi_spm(t));
        char *out = NULL;
        assert_int_equal(mt_multi_decode(t, ids, n, &out, NULL, &err), MT_OK);
        assert_string_equal(out, "a a");
        free(out);
        mt_multi_free(t);
    }
    mt_multi_free(codes);
    multi_rmdir(dir);
}

/* ---- known answers (docs/MARIAN.md 6.4, 6.6) ---------------------------------------- */

static void test_known_answers(void **state)
{
    (void)state;
    static const char *norm[][2] = {
        { "  The  quick\tbrown fox  ", "\xe2\x96\x81The\xe2\x96\x81quick\xe2\x96\x81" "brown\xe2\x96\x81" "fox" },
        { "\xef\xbc\xa1\xef\xbc\xa2\xef\xbc\xa3 full-width \xe2\x91\xa0 \xef\xac\x81",
          "\xe2\x96\x81" "ABC\xe2\x96\x81" "full-width\xe2\x96\x81" "1\xe2\x96\x81" "fi" },
        { "a\xc2\xa0" "b\xe2\x80\x8b" "c\xe3\x80\x80" "d", "\xe2\x96\x81" "a\xe2\x96\x81" "b\xe2\x96\x81" "c\xe2\x96\x81" "d" },
        { "It's a test\xe2\x80\xa6", "\xe2\x96\x81It's\xe2\x96\x81" "a\xe2\x96\x81test..." },
        { "\xef\xbd\xb6\xef\xbe\x80\xef\xbd\xb6\xef\xbe\x85", "\xe2\x96\x81\xe3\x82\xab\xe3\x82\xbf\xe3\x82\xab\xe3\x83\x8a" },
        { "\x01" "ctrl", "\xe2\x96\x81\x01" "ctrl" },
        { "a\xff" "b", "\xe2\x96\x81" "a\xef\xbf\xbd" "b" },          /* malformed byte -> U+FFFD */
        { "", "" },
        { " \t\xe3\x80\x80 ", "" },
    };
    mt_spm *sp;
    mt_err err;
    assert_int_equal(mt_spm_load(OPUS "/en-mg/source.spm", &sp, &err), MT_OK);
    assert_int_equal(mt_spm_size(sp), 32000);
    for (size_t i = 0; i < sizeof norm / sizeof norm[0]; i++) {
        char *out;
        size_t len;
        assert_int_equal(mt_spm_normalize(sp, norm[i][0], strlen(norm[i][0]), &out, &len, &err), MT_OK);
        assert_int_equal(len, strlen(out));
        assert_string_equal(out, norm[i][1]);
        free(out);
    }
    mt_pieces p = { 0 };
    assert_int_equal(mt_spm_encode(sp, "Hello world.", 12, &p, &err), MT_OK);
    assert_int_equal(p.n, 3);
    assert_memory_equal(p.text + p.off[0], "\xe2\x96\x81Hello", p.len[0]);
    assert_memory_equal(p.text + p.off[2], ".", p.len[2]);
    /* "ÆØ": neither character is a piece -> one merged unknown piece */
    assert_int_equal(mt_spm_encode(sp, "x \xc3\x86\xc3\x98", 6, &p, &err), MT_OK);
    assert_int_equal(mt_spm_unk_id(sp), 0);
    int unk = 0;
    for (int i = 0; i < p.n; i++)
        unk += p.id[i] == 0;
    assert_true(unk <= 1);
    assert_string_equal(mt_spm_piece(sp, 0, NULL), "<unk>");
    assert_null(mt_spm_piece(sp, 32000, NULL));
    assert_null(mt_spm_piece(sp, -1, NULL));
    mt_pieces_free(&p);
    mt_spm_free(sp);
}

/* ---- refusals --------------------------------------------------------------------------- */

/* protobuf writers for hand-made models */
static size_t pb_varint(uint8_t *b, uint64_t v)
{
    size_t n = 0;
    do {
        b[n] = (uint8_t)(v & 0x7f);
        v >>= 7;
        if (v)
            b[n] |= 0x80;
        n++;
    } while (v);
    return n;
}

static size_t pb_bytes(uint8_t *b, int field, const void *p, size_t len)
{
    size_t n = pb_varint(b, (uint64_t)field << 3 | 2);
    n += pb_varint(b + n, len);
    memcpy(b + n, p, len);
    return n + len;
}

static size_t pb_int(uint8_t *b, int field, int64_t v)
{
    size_t n = pb_varint(b, (uint64_t)field << 3);
    return n + pb_varint(b + n, (uint64_t)v);
}

static size_t pb_piece(uint8_t *b, const char *s, float score, int type)
{
    uint8_t m[256];
    size_t n = pb_bytes(m, 1, s, strlen(s));
    n += pb_varint(m + n, 2 << 3 | 5);
    memcpy(m + n, &score, 4);
    n += 4;
    if (type)
        n += pb_int(m + n, 3, type);
    return pb_bytes(b, 1, m, n);
}

/* <unk>, "a", "b" + a trainer spec with model_type and extras. */
static size_t tiny_model(uint8_t *b, int model_type, const uint8_t *extra, size_t extra_len)
{
    size_t n = pb_piece(b, "<unk>", 0, 2);
    n += pb_piece(b + n, "a", -1.0f, 1);
    n += pb_piece(b + n, "b", -2.0f, 0);
    uint8_t t[32];
    size_t tn = pb_int(t, 3, model_type);
    tn += pb_int(t + tn, 43, -1);                  /* pad_id -1: a 10-byte varint */
    n += pb_bytes(b + n, 2, t, tn);
    if (extra_len)
        memcpy(b + n, extra, extra_len);
    return n + extra_len;
}

static void test_hand_made_models(void **state)
{
    (void)state;
    uint8_t b[1024];
    mt_spm *sp;
    mt_err err;
    mt_pieces p = { 0 };

    /* unigram with defaults: no charsmap, dummy prefix; "▁" is unknown */
    size_t n = tiny_model(b, 1, NULL, 0);
    assert_int_equal(mt_spm_load_mem(b, n, &sp, &err), MT_OK);
    assert_int_equal(mt_spm_encode(sp, "ab  a", 5, &p, &err), MT_OK);
    int32_t want[] = { 0, 1, 2, 0, 1 };          /* ▁ a b ▁ a */
    assert_int_equal(p.n, 5);
    assert_memory_equal(p.id, want, sizeof want);
    /* unknown ▁ and "c" merge into one piece */
    assert_int_equal(mt_spm_encode(sp, "c", 1, &p, &err), MT_OK);
    assert_int_equal(p.n, 1);
    assert_int_equal(p.len[0], 4);
    char *text;
    int32_t ids[] = { 1, 0, 2 };
    assert_int_equal(mt_spm_decode(sp, ids, 3, &text, NULL, &err), MT_OK);
    assert_string_equal(text, "a \xe2\x81\x87 b");       /* unk_surface " ⁇ " */
    free(text);
    /* the unknown penalty is exactly 10: "x" (9.5) + unk (-20 - 10) + "y" loses to "xa" (-20) + "y";
     * with a penalty of 9 it would win (checked with python3-sentencepiece) */
    uint8_t u[256];
    size_t un = pb_piece(u, "<unk>", 0, 2);
    un += pb_piece(u + un, "x", 9.5f, 1);
    un += pb_piece(u + un, "xa", -20.0f, 1);
    un += pb_piece(u + un, "y", -1.0f, 1);
    un += pb_piece(u + un, "\xe2\x96\x81", -1.0f, 1);
    mt_spm *sp2;
    assert_int_equal(mt_spm_load_mem(u, un, &sp2, &err), MT_OK);
    assert_int_equal(mt_spm_encode(sp2, "xay", 3, &p, &err), MT_OK);
    int32_t want2[] = { 4, 2, 3 };
    assert_int_equal(p.n, 3);
    assert_memory_equal(p.id, want2, sizeof want2);
    mt_spm_free(sp2);
    int32_t bad_id = 3;
    assert_int_equal(mt_spm_decode(sp, &bad_id, 1, &text, NULL, &err), MT_ERR_INPUT);
    mt_spm_free(sp);

    n = tiny_model(b, 2, NULL, 0);              /* BPE loads (spm_bpe.c) */
    assert_int_equal(mt_spm_load_mem(b, n, &sp, &err), MT_OK);
    mt_spm_free(sp);
    static const struct { int type; const char *name; } unsup[] = { { 3, "WORD" }, { 4, "CHAR" } };
    for (int i = 0; i < 2; i++) {
        n = tiny_model(b, unsup[i].type, NULL, 0);
        assert_int_equal(mt_spm_load_mem(b, n, &sp, &err), MT_ERR_UNSUPPORTED);
        assert_null(sp);
        assert_non_null(strstr(err.msg, unsup[i].name));
    }

    /* semantic errors */
    uint8_t x[256];
    size_t xn;
    xn = pb_piece(x, "<unk2>", 0, 2);                             /* second UNKNOWN */
    n = tiny_model(b, 1, x, xn);
    assert_int_equal(mt_spm_load_mem(b, n, &sp, &err), MT_ERR_FORMAT);
    assert_non_null(strstr(err.msg, "UNKNOWN"));
    xn = pb_piece(x, "a", 0, 1);                                  /* duplicate */
    n = tiny_model(b, 1, x, xn);
    assert_int_equal(mt_spm_load_mem(b, n, &sp, &err), MT_ERR_FORMAT);
    assert_non_null(strstr(err.msg, "already defined"));
    xn = pb_piece(x, "", 0, 1);                                   /* empty */
    n = tiny_model(b, 1, x, xn);
    assert_int_equal(mt_spm_load_mem(b, n, &sp, &err), MT_ERR_FORMAT);
    xn = pb_piece(x, "<0x41>", 0, 6);                             /* byte piece without byte_fallback */
    n = tiny_model(b, 1, x, xn);
    assert_int_equal(mt_spm_load_mem(b, n, &sp, &err), MT_ERR_FORMAT);
    assert_non_null(strstr(err.msg, "byte_fallback"));
    uint8_t cm[16] = { 200, 0, 0, 0, 1, 2, 3, 4 }, ns[64];       /* charsmap trie larger than the blob */
    size_t nn = pb_bytes(ns, 2, cm, 8);
    xn = pb_bytes(x, 3, ns, nn);
    n = tiny_model(b, 1, x, xn);
    assert_int_equal(mt_spm_load_mem(b, n, &sp, &err), MT_ERR_FORMAT);
    assert_non_null(strstr(err.msg, "charsmap"));
    n = pb_piece(b, "a", -1.0f, 1);                               /* no UNKNOWN piece */
    assert_int_equal(mt_spm_load_mem(b, n, &sp, &err), MT_ERR_FORMAT);
    memset(b, 0xff, 11);                                          /* 11-byte varint */
    assert_int_equal(mt_spm_load_mem(b, 11, &sp, &err), MT_ERR_FORMAT);
    assert_non_null(strstr(err.msg, "(memory)"));
    n = pb_varint(b, 1 << 3 | 2);                                 /* length past the end */
    n += pb_varint(b + n, 1000000);
    assert_int_equal(mt_spm_load_mem(b, n, &sp, &err), MT_ERR_FORMAT);
    assert_int_equal(mt_spm_load_mem(b, 0, &sp, &err), MT_ERR_FORMAT);
    /* unknown fields of every wire type, and a group, are skipped */
    n = tiny_model(b, 1, NULL, 0);
    n += pb_int(b + n, 99, 12345);
    n += pb_varint(b + n, 98 << 3 | 1), memset(b + n, 7, 8), n += 8;
    n += pb_varint(b + n, 97 << 3 | 5), memset(b + n, 7, 4), n += 4;
    n += pb_bytes(b + n, 96, "zzz", 3);
    n += pb_varint(b + n, 95 << 3 | 3), n += pb_int(b + n, 1, 5), n += pb_varint(b + n, 95 << 3 | 4);
    assert_int_equal(mt_spm_load_mem(b, n, &sp, &err), MT_OK);
    mt_spm_free(sp);
    n += pb_varint(b + n, 94 << 3 | 7);                           /* invalid wire type */
    assert_int_equal(mt_spm_load_mem(b, n, &sp, &err), MT_ERR_FORMAT);
    mt_pieces_free(&p);
}

static void test_refuse_files(void **state)
{
    (void)state;
    mt_spm *sp = (mt_spm *)1;
    mt_err err;
    assert_int_equal(mt_spm_load(FIX "/spm/char.spm", &sp, &err), MT_ERR_UNSUPPORTED);
    assert_null(sp);
    assert_non_null(strstr(err.msg, "CHAR"));
    assert_non_null(strstr(err.msg, "char.spm"));
    assert_int_equal(mt_spm_load(FIX "/no/such.spm", &sp, &err), MT_ERR_IO);
    assert_non_null(strstr(err.msg, "such.spm"));

    /* truncated copies of a real model, named in the message */
    size_t len;
    char *data = slurp(OURS "/source.spm", &len);
    char path[] = "/tmp/mt_tok_trunc_XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    close(fd);
    size_t cuts[] = { 1, 2, 3, 100, 1000, len / 3, len / 2, len - 1000, len - 2, len - 1 };
    for (size_t i = 0; i < sizeof cuts / sizeof cuts[0]; i++) {
        spit(path, data, cuts[i]);
        assert_int_equal(mt_spm_load(path, &sp, &err), MT_ERR_FORMAT);
        assert_non_null(strstr(err.msg, path));
    }
    unlink(path);
    /* every prefix of the first 2 KB and a stride through the rest: never an over-read
     * (the sanitizer builds check that), only OK (a prefix can end on a field boundary)
     * or FORMAT */
    int n_format = 0, n_ok = 0;
    for (size_t cut = 0; cut < len; cut += cut < 2048 ? 1 : 4099) {
        mt_status st = mt_spm_load_mem(data, cut, &sp, &err);
        assert_true(st == MT_OK || st == MT_ERR_FORMAT);
        n_format += st == MT_ERR_FORMAT;
        n_ok += st == MT_OK;
        mt_spm_free(sp);
    }
    print_message("truncated model: %d prefixes refused, %d loadable (cut between pieces)\n", n_format, n_ok);
    assert_true(n_format > 1500 && n_ok > 0);
    free(data);

    /* garbage */
    uint8_t junk[4096];
    uint32_t seed = 12345;
    for (int round = 0; round < 200; round++) {
        size_t n = 1 + (size_t)round * 20;
        for (size_t i = 0; i < n; i++)
            junk[i] = (uint8_t)((seed = seed * 1103515245u + 12345u) >> 16);
        assert_int_not_equal(mt_spm_load_mem(junk, n, &sp, &err), MT_OK);
        assert_null(sp);
    }
}

/* Random byte flips in a small real model: loading either fails cleanly or yields a
 * model that encodes and decodes without touching memory it should not. */
static void test_fuzz_models(void **state)
{
    (void)state;
    size_t len;
    char *orig = slurp(FIX "/spm/uni-rules.spm", &len);
    char *b = malloc(len);
    uint32_t seed = 777;
    int counts[16] = { 0 };
    static const char *inputs[] = { "Hello  world ABC ABCD \xe3\x80\x80 \xef\xac\x81...", "\xff\xfe", "",
                                    "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", "\xe2\x96\x81 \xe9t\xc3\xa9" };
    mt_pieces p = { 0 };
    for (int it = 0; it < 3000; it++) {
        memcpy(b, orig, len);
        int flips = 1 + it % 4;
        for (int k = 0; k < flips; k++) {
            seed = seed * 1103515245u + 12345u;
            size_t pos = (seed >> 8) % len;
            seed = seed * 1103515245u + 12345u;
            b[pos] = (char)(seed >> 16);
        }
        mt_spm *sp = NULL;
        mt_err err;
        mt_status st = mt_spm_load_mem(b, len, &sp, &err);
        assert_true(st == MT_OK || st == MT_ERR_FORMAT || st == MT_ERR_UNSUPPORTED);
        counts[st]++;
        if (st != MT_OK)
            continue;
        for (size_t i = 0; i < sizeof inputs / sizeof inputs[0]; i++) {
            assert_int_equal(mt_spm_encode(sp, inputs[i], strlen(inputs[i]), &p, &err), MT_OK);
            char *text = NULL;
            assert_int_equal(mt_spm_decode(sp, p.id, p.n, &text, NULL, &err), MT_OK);
            free(text);
        }
        mt_spm_free(sp);
    }
    print_message("fuzz: %d loaded, %d refused as malformed, %d unsupported\n", counts[MT_OK],
                  counts[MT_ERR_FORMAT], counts[MT_ERR_UNSUPPORTED]);
    assert_true(counts[MT_OK] > 100 && counts[MT_ERR_FORMAT] > 100);

    /* a charsmap whose double array is random: lookups must stay in bounds */
    uint8_t cm[8192 + 16], ns[9000], m[10000];
    uint32_t trie = 8192;
    memcpy(cm, &trie, 4);
    for (uint32_t i = 0; i < trie; i++)
        cm[4 + i] = (uint8_t)((seed = seed * 1103515245u + 12345u) >> 16);
    memcpy(cm + 4 + trie, "xy\0z", 4);
    size_t nn = pb_bytes(ns, 2, cm, 4 + trie + 4);
    size_t xn = pb_bytes(m, 3, ns, nn);
    uint8_t *mb = malloc(sizeof m + 1024);
    assert_non_null(mb);
    size_t n = tiny_model(mb, 1, m, xn);
    mt_spm *sp;
    mt_err err;
    assert_int_equal(mt_spm_load_mem(mb, n, &sp, &err), MT_OK);
    free(mb);
    char text[512];
    for (int it = 0; it < 2000; it++) {
        size_t tl = 1 + it % 200;
        for (size_t i = 0; i < tl; i++)
            text[i] = (char)((seed = seed * 1103515245u + 12345u) >> 16);
        assert_int_equal(mt_spm_encode(sp, text, tl, &p, &err), MT_OK);
    }
    mt_spm_free(sp);
    mt_pieces_free(&p);
    free(b);
    free(orig);
}

/* ---- Marian layer --------------------------------------------------------------------- */

static void test_invalid_utf8(void **state)
{
    (void)state;
    static const char *bad[] = {
        "\x80",                 /* lone continuation byte        */
        "abc\x80",
        "\xc0\xaf",             /* overlong '/'                  */
        "\xe0\x80\xaf",         /* overlong, 3 bytes             */
        "\xed\xa0\x80",         /* surrogate U+D800              */
        "\xf4\x90\x80\x80",     /* > U+10FFFF                    */
        "\xff",
        "ok \xe2\x82",          /* truncated sequence at the end */
        "caf\xc3",
        ">>fr<< \xf0\x9f\x98",
    };
    mt_tokenizer *tok;
    mt_err err;
    assert_int_equal(mt_tokenizer_load(OURS, &tok, &err), MT_OK);
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        int32_t ids[64];
        int n = -1;
        assert_int_equal(mt_tokenizer_encode(tok, bad[i], strlen(bad[i]), 0, ids, 64, &n, &err), MT_ERR_INPUT);
        assert_non_null(strstr(err.msg, "UTF-8"));
        assert_int_equal(n, 0);
    }
    int32_t ids[8];
    int n;
    assert_int_equal(mt_tokenizer_encode(tok, "a\0b", 3, 0, ids, 8, &n, &err), MT_OK);   /* NUL is valid UTF-8 */
    mt_tokenizer_free(tok);
}

static void test_marian_api(void **state)
{
    (void)state;
    mt_tokenizer *tok;
    mt_err err;
    assert_int_equal(mt_tokenizer_load(OURS, &tok, &err), MT_OK);
    assert_int_equal(mt_tokenizer_eos(tok), 0);
    assert_int_equal(mt_tokenizer_unk(tok), 1);
    assert_int_equal(mt_tokenizer_pad(tok), 7999);
    assert_int_equal(mt_tokenizer_vocab_size(tok), 8000);
    assert_string_equal(mt_tokenizer_piece(tok, 0), "</s>");
    assert_null(mt_tokenizer_piece(tok, 8000));
    assert_null(mt_tokenizer_piece(tok, -5));
    assert_int_equal(mt_tokenizer_piece_id(tok, "<pad>"), 7999);
    assert_int_equal(mt_tokenizer_piece_id(tok, "no such piece"), -1);

    int32_t ids[256];
    int n = 0;
    const char *s = "The cat sat on the mat.";
    assert_int_equal(mt_tokenizer_encode(tok, s, strlen(s), 0, ids, 256, &n, &err), MT_OK);
    assert_true(n >= 3);
    assert_int_equal(ids[n - 1], 0);                       /* </s> appended */
    int need = n, got = -1;
    int32_t few[2];
    assert_int_equal(mt_tokenizer_encode(tok, s, strlen(s), 0, few, 2, &got, &err), MT_ERR_TOO_LONG);
    assert_int_equal(got, need);
    assert_int_equal(mt_tokenizer_encode(tok, s, strlen(s), 0, NULL, 0, &got, &err), MT_ERR_TOO_LONG);
    assert_int_equal(got, need);
    assert_int_equal(mt_tokenizer_encode(tok, "", 0, 0, ids, 256, &n, &err), MT_OK);
    assert_int_equal(n, 1);
    assert_int_equal(ids[0], 0);

    char *text;
    assert_int_equal(mt_tokenizer_decode(tok, NULL, 0, &text, &err), MT_OK);
    assert_string_equal(text, "");
    free(text);
    assert_int_equal(mt_tokenizer_encode(tok, s, strlen(s), 0, ids, 256, &n, &err), MT_OK);
    int32_t with_specials[260] = { 7999 };                  /* decoder start pad, unk, ..., eos */
    with_specials[1] = 1;
    memcpy(with_specials + 2, ids, (size_t)n * sizeof *ids);
    with_specials[n + 2] = 7999;
    assert_int_equal(mt_tokenizer_decode(tok, with_specials, n + 3, &text, &err), MT_OK);
    assert_string_equal(text, s);
    free(text);
    int32_t odd[] = { 123456, -3 };                          /* no piece: "<unk>" -> " ⁇ " as spm */
    assert_int_equal(mt_tokenizer_decode(tok, odd, 2, &text, &err), MT_OK);
    assert_string_equal(text, "\xe2\x81\x87  \xe2\x81\x87");
    free(text);
    mt_tokenizer_free(tok);

    /* tc-big: special ids far from 0 must come from vocab.json */
    assert_int_equal(mt_tokenizer_load(OPUS "/tc-big-fr-en", &tok, &err), MT_OK);
    assert_int_equal(mt_tokenizer_eos(tok), 43311);
    assert_int_equal(mt_tokenizer_unk(tok), 50387);
    assert_int_equal(mt_tokenizer_pad(tok), 53016);
    assert_int_equal(mt_tokenizer_vocab_size(tok), 53017);
    assert_int_equal(mt_tokenizer_encode(tok, "Hello", 5, 0, ids, 256, &n, &err), MT_OK);
    assert_int_equal(n, 2);
    assert_int_equal(ids[0], 24205);
    int32_t with_bos[] = { 43312, ids[0], ids[1] };            /* "<s>" is a CONTROL piece: "" */
    assert_int_equal(mt_tokenizer_decode(tok, with_bos, 3, &text, &err), MT_OK);
    assert_string_equal(text, "Hello");
    free(text);
    mt_tokenizer_free(tok);

    assert_int_equal(mt_tokenizer_load(FIX "/no-such-dir", &tok, &err), MT_ERR_IO);
    assert_null(tok);
}

/* A model directory in /tmp built from models/tiny with some files changed. */
static void make_dir(char *dir, const char *config, json_t *vocab, json_t *tvocab)
{
    strcpy(dir, "/tmp/mt_tok_dir_XXXXXX");
    assert_non_null(mkdtemp(dir));
    char path[256];
    static const char *copy[] = { "source.spm", "target.spm", "vocab.json" };
    for (int i = 0; i < 3; i++) {
        size_t len;
        char src[128];
        snprintf(src, sizeof src, OURS "/%s", copy[i]);
        char *d = slurp(src, &len);
        snprintf(path, sizeof path, "%s/%s", dir, copy[i]);
        spit(path, d, len);
        free(d);
    }
    if (config) {
        snprintf(path, sizeof path, "%s/tokenizer_config.json", dir);
        spit(path, config, strlen(config));
    }
    if (vocab) {
        snprintf(path, sizeof path, "%s/vocab.json", dir);
        assert_int_equal(json_dump_file(vocab, path, 0), 0);
    }
    if (tvocab) {
        snprintf(path, sizeof path, "%s/target_vocab.json", dir);
        assert_int_equal(json_dump_file(tvocab, path, 0), 0);
    }
}

static void remove_dir(const char *dir)
{
    static const char *files[] = { "source.spm", "target.spm", "vocab.json", "tokenizer_config.json",
                                   "target_vocab.json" };
    char path[256];
    for (int i = 0; i < 5; i++) {
        snprintf(path, sizeof path, "%s/%s", dir, files[i]);
        unlink(path);
    }
    assert_int_equal(rmdir(dir), 0);
}

static void test_marian_dirs(void **state)
{
    (void)state;
    char dir[64];
    mt_tokenizer *tok, *plain;
    mt_err err;
    int32_t ids[256], ids2[256];
    int n, n2;
    json_error_t je;
    json_t *vocab = json_load_file(OURS "/vocab.json", 0, &je);
    assert_non_null(vocab);
    assert_int_equal(mt_tokenizer_load(OURS, &plain, &err), MT_OK);

    /* a language token kept whole */
    json_t *v = json_deep_copy(vocab);
    json_object_set_new(v, ">>fr<<", json_integer(8000));
    json_object_set_new(v, "\x1c", json_integer(8001));
    json_object_set_new(v, "\xc2\xa0", json_integer(8002));
    json_object_set_new(v, "\xe2\x96\x81zzqq", json_integer(8003));
    make_dir(dir, NULL, v, NULL);
    assert_int_equal(mt_tokenizer_load(dir, &tok, &err), MT_OK);
    /* pieces unknown to target.spm come out verbatim (U+2581 kept); the final strip is
     * Python's (U+001C, NBSP are whitespace).  Expected values from marian_tok.py. */
    int32_t go = mt_tokenizer_piece_id(tok, "\xe2\x96\x81Go"), od = mt_tokenizer_piece_id(tok, "od");
    assert_true(go >= 0 && od >= 0);
    int32_t d1[] = { 8001, go, od, 8002 }, d2[] = { go, 8003, od };
    char *t1, *t2;
    assert_int_equal(mt_tokenizer_decode(tok, d1, 4, &t1, &err), MT_OK);
    assert_int_equal(mt_tokenizer_decode(tok, d2, 3, &t2, &err), MT_OK);
    assert_string_equal(t1, "Good");
    assert_string_equal(t2, "Go\xe2\x96\x81zzqqod");
    free(t1);
    free(t2);
    const char *s = ">>fr<< Good morning";
    assert_int_equal(mt_tokenizer_encode(tok, s, strlen(s), 0, ids, 256, &n, &err), MT_OK);
    assert_int_equal(mt_tokenizer_encode(plain, s + 6, strlen(s) - 6, 0, ids2, 256, &n2, &err), MT_OK);
    assert_int_equal(n, n2 + 1);
    assert_int_equal(ids[0], 8000);
    assert_memory_equal(ids + 1, ids2, (size_t)n2 * sizeof *ids);
    assert_int_equal(mt_tokenizer_encode(plain, s, strlen(s), 0, ids, 256, &n, &err), MT_OK);
    assert_int_equal(ids[0], 1);                              /* absent from vocab.json: <unk> */
    mt_tokenizer_free(tok);
    remove_dir(dir);
    json_decref(v);

    /* clean_up_tokenization_spaces: true */
    make_dir(dir, "{\"clean_up_tokenization_spaces\": true}", NULL, NULL);
    assert_int_equal(mt_tokenizer_load(dir, &tok, &err), MT_OK);
    s = "Hello , world . I do n't know , it 's fine , is n't it .";
    assert_int_equal(mt_tokenizer_encode(tok, s, strlen(s), 1, ids, 256, &n, &err), MT_OK);
    char *text;
    assert_int_equal(mt_tokenizer_decode(tok, ids, n, &text, &err), MT_OK);
    assert_string_equal(text, "Hello, world. I don't know, it's fine, isn't it.");
    free(text);
    assert_int_equal(mt_tokenizer_decode(plain, ids, n, &text, &err), MT_OK);
    assert_string_equal(text, s);                              /* absent/false: no clean-up */
    free(text);
    mt_tokenizer_free(tok);
    remove_dir(dir);

    /* separate vocabularies: target ids shifted by 5 */
    json_t *tv = json_object();
    const char *key;
    json_t *val;
    json_object_foreach(vocab, key, val)
        json_object_set_new(tv, key, json_integer(json_integer_value(val) + 5));
    make_dir(dir, "{\"separate_vocabs\": true}", NULL, tv);
    assert_int_equal(mt_tokenizer_load(dir, &tok, &err), MT_OK);
    s = "Separate vocabularies work.";
    assert_int_equal(mt_tokenizer_encode(tok, s, strlen(s), 1, ids, 256, &n, &err), MT_OK);
    assert_int_equal(mt_tokenizer_encode(plain, s, strlen(s), 1, ids2, 256, &n2, &err), MT_OK);
    assert_int_equal(n, n2);
    for (int i = 0; i < n; i++)
        assert_int_equal(ids[i], ids2[i] + 5);
    assert_int_equal(mt_tokenizer_decode(tok, ids, n, &text, &err), MT_OK);
    assert_string_equal(text, s);
    free(text);
    assert_int_equal(mt_tokenizer_encode(tok, s, strlen(s), 0, ids, 256, &n, &err), MT_OK);
    assert_memory_equal(ids, ids2, (size_t)n * sizeof *ids);  /* the source side keeps vocab.json */
    mt_tokenizer_free(tok);
    remove_dir(dir);
    json_decref(tv);

    /* broken files */
    make_dir(dir, "{not json", NULL, NULL);
    assert_int_equal(mt_tokenizer_load(dir, &tok, &err), MT_ERR_FORMAT);
    assert_non_null(strstr(err.msg, "tokenizer_config.json"));
    remove_dir(dir);
    v = json_deep_copy(vocab);
    json_object_del(v, "</s>");
    make_dir(dir, NULL, v, NULL);
    assert_int_equal(mt_tokenizer_load(dir, &tok, &err), MT_ERR_FORMAT);
    assert_non_null(strstr(err.msg, "</s>"));
    remove_dir(dir);
    json_object_set_new(v, "</s>", json_string("zero"));
    make_dir(dir, NULL, v, NULL);
    assert_int_equal(mt_tokenizer_load(dir, &tok, &err), MT_ERR_FORMAT);
    remove_dir(dir);
    json_decref(v);
    make_dir(dir, "{\"separate_vocabs\": true}", NULL, NULL);  /* target_vocab.json missing */
    assert_int_equal(mt_tokenizer_load(dir, &tok, &err), MT_ERR_IO);
    assert_non_null(strstr(err.msg, "target_vocab.json"));
    remove_dir(dir);

    mt_tokenizer_free(plain);
    json_decref(vocab);
}

/* ---- threads ---------------------------------------------------------------------------- */

typedef struct {
    const mt_tokenizer *tok;
    const lines_t      *lines;
    uint64_t            hash;
    int                 errors;
} thread_arg;

static void *encode_all(void *p)
{
    thread_arg *a = p;
    int32_t ids[4096];
    uint64_t h = 0;
    for (int i = 0; i < a->lines->n; i++) {
        int n;
        mt_err err;
        char *text = NULL;
        const char *s = a->lines->line[i];
        if (mt_tokenizer_encode(a->tok, s, strlen(s), 0, ids, 4096, &n, &err) != MT_OK ||
            mt_tokenizer_decode(a->tok, ids, n, &text, &err) != MT_OK) {
            a->errors++;
            continue;
        }
        h = h * 31 + fnv(ids, (size_t)n * sizeof *ids) + fnv(text, strlen(text));
        free(text);
    }
    a->hash = h;
    return NULL;
}

static void test_threads(void **state)
{
    (void)state;
    mt_tokenizer *tok;
    mt_err err;
    lines_t l;
    assert_int_equal(mt_tokenizer_load(OURS, &tok, &err), MT_OK);
    lines_read(FIX "/inputs/test.fr.txt", &l);
    thread_arg one = { tok, &l, 0, 0 }, par[2] = { { tok, &l, 0, 0 }, { tok, &l, 0, 0 } };
    encode_all(&one);
    pthread_t t[2];
    for (int i = 0; i < 2; i++)
        assert_int_equal(pthread_create(&t[i], NULL, encode_all, &par[i]), 0);
    for (int i = 0; i < 2; i++) {
        pthread_join(t[i], NULL);
        assert_int_equal(par[i].errors, 0);
        assert_true(par[i].hash == one.hash);
    }
    assert_int_equal(one.errors, 0);
    lines_free(&l);
    mt_tokenizer_free(tok);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_known_answers),
        cmocka_unit_test(test_hand_made_models),
        cmocka_unit_test(test_refuse_files),
        cmocka_unit_test(test_fuzz_models),
        cmocka_unit_test(test_invalid_utf8),
        cmocka_unit_test(test_marian_api),
        cmocka_unit_test(test_marian_dirs),
        cmocka_unit_test(test_threads),
        cmocka_unit_test(test_fixtures_tiny),
        cmocka_unit_test(test_nllb_fixture),
        cmocka_unit_test(test_multi_m2m),
        cmocka_unit_test(test_multi_refusals),
        cmocka_unit_test(test_multi_tokenizer_json),
        cmocka_unit_test(test_fixtures_ours),
        cmocka_unit_test(test_fixtures_en_mg),
        cmocka_unit_test(test_fixtures_fr_en),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
