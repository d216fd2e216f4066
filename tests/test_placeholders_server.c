/* test_placeholders_server: "placeholders" (issue 48, part 4) on the real
 * server over loopback, with the shipped models (en-fr, fr-en), on real
 * English msgids of Debian's gettext catalogues (tests/fixtures/placeholders,
 * whose README says where they come from):
 *   - every msgid with placeholders (with.tsv: >= 500), through POST /translate:
 *     each placeholder extract.py found in it (an independent reader) comes
 *     back byte for byte, as many times, all of them in the msgid's order, in
 *     100% of the outputs; the same texts with
 *     "placeholders": false are counted (what the model alone keeps), not asserted;
 *   - every msgid without one (without.tsv): the output with placeholders on is
 *     byte-identical to the output with "placeholders": false, which is the
 *     pipeline without this feature (pipeline.c: a sentence without placeholders
 *     is never touched).  With MTSERVE_BASE_BIN (a build of the commit before
 *     the feature: BENCHMARKS.md says how), that binary serves the same models
 *     too and its outputs must equal "placeholders": false, for both files:
 *     "off" is today's server, byte for byte;
 *   - LibreTranslate's POST /translate (form, with alternatives: every one keeps
 *     them) and DeepL's POST /v2/translate on a share of the msgids; their
 *     "placeholders" "false" / "0" in a form; "maybe" refused;
 *   - the features beside it: word alignments inside the texts, a stream whose
 *     deltas make the final text, format html, a sentence of placeholders only
 *     sent back as it is;
 *   - "fold_title_case" (issue 53): a Title Case label read in sentence case,
 *     its placeholders kept, glossary terms matched as written;
 *   - the copy guard's gate (issue 53): names and numbers kept with
 *     "copy_guard": true, which the same model without its gate changes.
 * The cache is off (the harness's --cache-mb 0): every output is decoded. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"
#include "placeholders_fixture.h"

static server srv, base;
static int have_base;
static ph_row *with_rows, *without_rows;
static int n_with, n_without;

enum { CHUNK = 8 };                    /* texts per request: under --max-tokens (1024) */

static int setup(void **state)
{
    (void)state;
    const char *const args[] = { "--model", "en-fr=models/en-fr", "--model", "fr-en=models/fr-en", "--threads", "2",
                                 NULL };
    n_with = ph_rows_load(PH_FIXTURE_DIR "with.tsv", &with_rows);
    n_without = ph_rows_load(PH_FIXTURE_DIR "without.tsv", &without_rows);
    if (server_start(&srv, args))
        return -1;
    const char *b = getenv("MTSERVE_BASE_BIN");
    if (b && *b) {
        setenv("MTSERVE_BIN", b, 1);        /* the harness starts $MTSERVE_BIN */
        have_base = server_start(&base, args) == 0;
        return have_base ? 0 : -1;
    }
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    int rc = server_stop(&srv);
    if (have_base && server_stop(&base) == -2)
        rc = -2;
    ph_rows_free(with_rows, n_with);
    ph_rows_free(without_rows, n_without);
    return rc == -2 ? -1 : 0;
}

/* POST /translate of texts[0..n) on s, "placeholders" as given (-1: not sent):
 * the n translations, malloc'd, into out. */
static void translate(const server *s, const char *const *texts, int n, int placeholders, char **out)
{
    json_t *list = json_array(), *body = json_object();
    for (int i = 0; i < n; i++)
        json_array_append_new(list, json_string(texts[i]));
    json_object_set_new(body, "text", list);
    if (placeholders >= 0)
        json_object_set_new(body, "placeholders", json_boolean(placeholders));
    char *b = json_dumps(body, JSON_COMPACT);
    reply r = post(s, "/translate", b);
    json_t *j = expect_json(&r, 200);
    json_t *tr = json_object_get(j, "translations");
    assert_int_equal(json_array_size(tr), n);
    for (int i = 0; i < n; i++) {
        const char *t = json_string_value(json_object_get(json_array_get(tr, (size_t)i), "text"));
        assert_non_null(t);
        out[i] = strdup(t);
    }
    json_decref(j);
    reply_free(&r);
    free(b);
    json_decref(body);
}

/* How many of row's placeholders (extract.py's list) out keeps: a placeholder
 * is kept when out holds it byte for byte as many times as the msgid does
 * (occurrences as a substring, counted alike in both); each counts as often
 * as the list has it. */
static int kept_count(const ph_row *row, const char *out)
{
    int kept = 0;
    for (int k = 0; k < row->n_ph; k++)
        kept += ph_count(out, row->ph[k]) == ph_count(row->text, row->ph[k]);
    return kept;
}

/* 1 when out holds row's placeholders in the msgid's order (as a subsequence). */
static int in_order(const ph_row *row, const char *out)
{
    const char *at = out;
    for (int k = 0; k < row->n_ph; k++) {
        const char *p = strstr(at, row->ph[k]);
        if (!p)
            return 0;
        at = p + strlen(row->ph[k]);
    }
    return 1;
}

/* The texts of rows[0..n) translated CHUNK at a time: out[n]. */
static void translate_rows(const server *s, const ph_row *rows, int n, int placeholders, char **out)
{
    const char *texts[CHUNK];
    for (int i = 0; i < n; i += CHUNK) {
        int m = n - i < CHUNK ? n - i : CHUNK;
        for (int k = 0; k < m; k++)
            texts[k] = rows[i + k].text;
        translate(s, texts, m, placeholders, out + i);
    }
}

static void free_all(char **v, int n)
{
    for (int i = 0; i < n; i++)
        free(v[i]);
    free(v);
}

static void test_debian_placeholders_kept(void **state)
{
    (void)state;
    char **on = calloc((size_t)n_with, sizeof *on), **off = calloc((size_t)n_with, sizeof *off);
    assert_true(n_with >= 500 && on && off);
    double t0 = now_s();
    translate_rows(&srv, with_rows, n_with, -1, on);           /* the default: on */
    double t_on = now_s() - t0;
    t0 = now_s();
    translate_rows(&srv, with_rows, n_with, 0, off);
    double t_off = now_s() - t0;
    int total = 0, kept = 0, kept_off = 0, whole = 0, whole_off = 0, ordered = 0, changed = 0, bad = 0;
    for (int i = 0; i < n_with; i++) {
        const ph_row *r = &with_rows[i];
        int k = kept_count(r, on[i]), k_off = kept_count(r, off[i]);
        int ordered_i = in_order(r, on[i]);
        total += r->n_ph;
        kept += k;
        kept_off += k_off;
        whole += k == r->n_ph;
        whole_off += k_off == r->n_ph;
        ordered += ordered_i;
        changed += strcmp(on[i], r->text) != 0;
        if ((k != r->n_ph || !ordered_i) && bad++ < 10)
            fprintf(stderr, "  %s: \"%s\"\n    -> \"%s\" (%d of %d kept, order %d)\n", r->domain, r->text, on[i], k,
                    r->n_ph, ordered_i);
    }
    printf("with placeholders: %d msgids, %d placeholders; on: %d kept (%d msgids whole, %d in order, %d "
           "translated), %.1f s; off: %d kept (%d msgids whole), %.1f s\n",
           n_with, total, kept, whole, ordered, changed, t_on, kept_off, whole_off, t_off);
    assert_int_equal(kept, total);
    assert_int_equal(whole, n_with);
    assert_int_equal(ordered, n_with);
    assert_true(changed > n_with / 2);          /* and they were translated, not sent back */
    if (have_base) {                            /* "off" is today's server */
        char **b = calloc((size_t)n_with, sizeof *b);
        translate_rows(&base, with_rows, n_with, -1, b);
        int same = 0;
        for (int i = 0; i < n_with; i++)
            same += !strcmp(b[i], off[i]);
        printf("with placeholders, the server before the feature: %d of %d outputs equal to \"placeholders\": "
               "false\n", same, n_with);
        assert_int_equal(same, n_with);
        free_all(b, n_with);
    }
    free_all(on, n_with);
    free_all(off, n_with);
}

static void test_debian_without_unchanged(void **state)
{
    (void)state;
    char **on = calloc((size_t)n_without, sizeof *on), **off = calloc((size_t)n_without, sizeof *off);
    assert_true(n_without >= 100 && on && off);
    translate_rows(&srv, without_rows, n_without, 1, on);
    translate_rows(&srv, without_rows, n_without, 0, off);
    int same = 0, same_base = 0;
    for (int i = 0; i < n_without; i++) {
        same += !strcmp(on[i], off[i]);
        if (strcmp(on[i], off[i]))
            fprintf(stderr, "  \"%s\"\n    on  \"%s\"\n    off \"%s\"\n", without_rows[i].text, on[i], off[i]);
    }
    if (have_base) {
        char **b = calloc((size_t)n_without, sizeof *b);
        translate_rows(&base, without_rows, n_without, -1, b);
        for (int i = 0; i < n_without; i++)
            same_base += !strcmp(b[i], on[i]);
        free_all(b, n_without);
    }
    printf("without placeholders: %d msgids, %d outputs byte-identical with placeholders on and off%s", n_without,
           same, have_base ? "" : "\n");
    if (have_base)
        printf(", %d to the server before the feature\n", same_base);
    assert_int_equal(same, n_without);
    if (have_base)
        assert_int_equal(same_base, n_without);
    free_all(on, n_without);
    free_all(off, n_without);
}

/* name=value appended to the form b, the value %-escaped (all but letters, digits and -._~). */
static void add_field(char *b, size_t cap, const char *name, const char *v)
{
    size_t o = strlen(b);
    o += (size_t)snprintf(b + o, cap - o, "%s%s=", o ? "&" : "", name);
    for (; *v && o + 4 < cap; v++) {
        unsigned char c = (unsigned char)*v;
        int plain = (c >= '0' && c <= '9') || ((c | 0x20) >= 'a' && (c | 0x20) <= 'z') || strchr("-._~", c);
        o += (size_t)snprintf(b + o, cap - o, plain ? "%c" : "%%%02X", c);
    }
    assert_true(o + 4 < cap);
}

static void test_other_apis(void **state)
{
    (void)state;
    int rows = 0, alts = 0, lt_ok = 0, dl_ok = 0;
    for (int i = 0; i < n_with; i += 7) {           /* every 7th msgid */
        const ph_row *r = &with_rows[i];
        char body[8192] = "";
        add_field(body, sizeof body, "q", r->text);
        strcat(body, "&source=en&target=fr&alternatives=2");
        req_opts o = { .body = body, .content_type = "application/x-www-form-urlencoded" };
        reply rep = http_req(&srv, "/translate", &o);
        json_t *j = expect_json(&rep, 200);
        const char *t = json_string_value(json_object_get(j, "translatedText"));
        assert_non_null(t);
        lt_ok += kept_count(r, t) == r->n_ph;
        json_t *a;
        size_t k;
        json_array_foreach(json_object_get(j, "alternatives"), k, a) {
            alts++;
            if (kept_count(r, json_string_value(a)) != r->n_ph)
                fprintf(stderr, "  LibreTranslate alternative: \"%s\" -> \"%s\"\n", r->text, json_string_value(a));
            assert_int_equal(kept_count(r, json_string_value(a)), r->n_ph);
        }
        json_decref(j);
        reply_free(&rep);
        body[0] = 0;
        add_field(body, sizeof body, "text", r->text);
        strcat(body, "&target_lang=FR&source_lang=EN");
        o.body = body;
        rep = http_req(&srv, "/v2/translate", &o);
        j = expect_json(&rep, 200);
        t = json_string_value(json_object_get(json_array_get(json_object_get(j, "translations"), 0), "text"));
        assert_non_null(t);
        dl_ok += kept_count(r, t) == r->n_ph;
        if (kept_count(r, t) != r->n_ph)
            fprintf(stderr, "  DeepL: \"%s\" -> \"%s\"\n", r->text, t);
        json_decref(j);
        reply_free(&rep);
        rows++;
    }
    printf("LibreTranslate: %d of %d msgids whole (and %d alternatives); DeepL: %d of %d\n", lt_ok, rows, alts,
           dl_ok, rows);
    assert_int_equal(lt_ok, rows);
    assert_int_equal(dl_ok, rows);
    assert_true(alts > 0);
}

/* "placeholders" off in a form ("false", "0") is what /translate's false gives; a bad value is refused. */
static void test_form_off(void **state)
{
    (void)state;
    const char *text = "Cannot open %s: %s";
    char *off;
    translate(&srv, &text, 1, 0, &off);
    char body[512] = "";
    add_field(body, sizeof body, "q", text);
    strcat(body, "&source=en&target=fr&placeholders=false");
    req_opts o = { .body = body, .content_type = "application/x-www-form-urlencoded" };
    reply r = http_req(&srv, "/translate", &o);
    json_t *j = expect_json(&r, 200);
    assert_string_equal(json_string_value(json_object_get(j, "translatedText")), off);
    json_decref(j);
    reply_free(&r);
    body[0] = 0;
    add_field(body, sizeof body, "text", text);
    strcat(body, "&target_lang=FR&source_lang=EN&placeholders=0");
    r = http_req(&srv, "/v2/translate", &o);
    j = expect_json(&r, 200);
    assert_string_equal(json_string_value(json_object_get(json_array_get(json_object_get(j, "translations"), 0),
                                                          "text")), off);
    json_decref(j);
    reply_free(&r);
    strcat(body, "x");                              /* placeholders=0x */
    r = http_req(&srv, "/v2/translate", &o);
    assert_int_equal(r.status, 400);
    reply_free(&r);
    r = post(&srv, "/translate", "{\"text\": \"x %s\", \"placeholders\": \"maybe\"}");
    assert_int_equal(r.status, 400);
    assert_non_null(strstr(r.body, "placeholders"));
    reply_free(&r);
    free(off);
}

/* Code points of s; the byte offset of its code point cp. */
static long cps(const char *s)
{
    long n = 0;
    for (; *s; s++)
        n += ((unsigned char)*s & 0xc0) != 0x80;
    return n;
}

static long byte_of(const char *s, long cp)
{
    long i = 0;
    for (; s[i] && cp > 0; i++)
        cp -= ((unsigned char)s[i + 1] & 0xc0) != 0x80;
    return i;
}

static void test_features(void **state)
{
    (void)state;
    /* word alignments: inside the source and the output, trimmed; each placeholder linked to itself */
    const char *text = "Could not read %s. Open %s now and send it to bugs@example.org!";
    char body[1024];
    snprintf(body, sizeof body, "{\"text\": \"%s\", \"return_alignments\": true}", text);
    reply r = post(&srv, "/translate", body);
    json_t *j = expect_json(&r, 200);
    json_t *t0 = json_array_get(json_object_get(j, "translations"), 0), *w;
    const char *out = json_string_value(json_object_get(t0, "text"));
    size_t k;
    long n_out = cps(out), n_src = cps(text);
    assert_true(strstr(out, "%s") && strstr(strstr(out, "%s") + 2, "%s") && strstr(out, "bugs@example.org"));
    assert_true(json_array_size(json_object_get(t0, "word_alignments")) > 0);
    int self = 0;
    json_array_foreach(json_object_get(t0, "word_alignments"), k, w) {
        long s0 = json_integer_value(json_array_get(json_object_get(w, "source"), 0));
        long s1 = json_integer_value(json_array_get(json_object_get(w, "source"), 1));
        long g0 = json_integer_value(json_array_get(json_object_get(w, "target"), 0));
        long g1 = json_integer_value(json_array_get(json_object_get(w, "target"), 1));
        assert_true(0 <= s0 && s0 < s1 && s1 <= n_src && 0 <= g0 && g0 < g1 && g1 <= n_out);
        s0 = byte_of(text, s0), s1 = byte_of(text, s1), g0 = byte_of(out, g0), g1 = byte_of(out, g1);
        assert_true(text[s0] != ' ' && text[s1 - 1] != ' ' && out[g0] != ' ' && out[g1 - 1] != ' ');
        /* no source span runs over a placeholder it does not start with ("read %s." of "read.") */
        assert_null(memchr(text + s0 + 1, '%', (size_t)(s1 - s0 - 1)));
        if (text[s0] == '%' || text[s0] == 'b') {   /* a placeholder: its own copy */
            assert_int_equal(s1 - s0, g1 - g0);
            assert_memory_equal(text + s0, out + g0, (size_t)(s1 - s0));
            self++;
        }
    }
    assert_int_equal(self, 3);                      /* %s, %s, bugs@example.org */
    json_decref(j);
    reply_free(&r);

    /* a stream: the deltas make the final text */
    snprintf(body, sizeof body, "{\"text\": [\"%s\", \"%%s: %%s\"], \"stream\": true}", text);
    r = post(&srv, "/translate", body);
    assert_int_equal(r.status, 200);
    char acc[2][1024] = { "", "" };
    for (const char *p = r.body; (p = strstr(p, "data: {\"index\"")); p += 6) {
        json_error_t e;
        json_t *ev = json_loadb(p + 6, strcspn(p + 6, "\n"), 0, &e);
        assert_non_null(ev);
        int i = (int)json_integer_value(json_object_get(ev, "index"));
        strncat(acc[i], json_string_value(json_object_get(ev, "delta")), sizeof acc[i] - strlen(acc[i]) - 1);
        json_decref(ev);
    }
    const char *done = strstr(r.body, "event: done\ndata: ");
    assert_non_null(done);
    j = json_loads(done + 18, JSON_DISABLE_EOF_CHECK, NULL);
    json_t *tr = json_object_get(j, "translations");
    assert_string_equal(acc[0], json_string_value(json_object_get(json_array_get(tr, 0), "text")));
    assert_string_equal(acc[1], "%s: %s");          /* nothing to translate: as it was */
    assert_string_equal(json_string_value(json_object_get(json_array_get(tr, 1), "text")), "%s: %s");
    assert_true(strstr(acc[0], "bugs@example.org") != NULL);
    json_decref(j);
    reply_free(&r);

    /* format html: the units' placeholders too, the tags kept */
    r = post(&srv, "/translate", "{\"text\": \"<p>Open <b>%s</b> now: https://example.org/a.</p>\", "
                                 "\"format\": \"html\"}");
    j = expect_json(&r, 200);
    out = json_string_value(json_object_get(json_array_get(json_object_get(j, "translations"), 0), "text"));
    assert_true(strstr(out, "<b>%s</b>") && strstr(out, "https://example.org/a") && !strncmp(out, "<p>", 3));
    json_decref(j);
    reply_free(&r);
}

/* The first translation's text of POST /translate body (malloc'd). */
static char *first_text_on(server *on, const char *body)
{
    reply r = post(on, "/translate", body);
    json_t *j = expect_json(&r, 200);
    char *out = strdup(json_string_value(json_object_get(json_array_get(json_object_get(j, "translations"), 0),
                                                          "text")));
    json_decref(j);
    reply_free(&r);
    assert_non_null(out);
    return out;
}

static char *first_text(const char *body)
{
    return first_text_on(&srv, body);
}

/* "fold_title_case" (on by default, translate/title_case.h): a Title Case
 * label is translated as its sentence-case form is with the fold off; off,
 * it goes to the model as written, as the CLI's --keep-title-case does; its
 * placeholders stay byte for byte; a glossary term is matched on the text
 * as written (an exact-case "Trash" matches the label's "Trash", which the
 * model reads as "trash").  A lone word in sentence case is read lowercased
 * and its translation capitalized (translate/title_case.h srv_word_fold). */
static void test_title_case(void **state)
{
    (void)state;
    char *folded = first_text("{\"text\": \"Restore From Trash\"}");
    char *sentence = first_text("{\"text\": \"Restore from trash\", \"fold_title_case\": false}");
    assert_string_equal(folded, sentence);
    char *kept = first_text("{\"text\": \"Restore From Trash\", \"fold_title_case\": false}");
    char cmd[512], cli[1024] = "";
    snprintf(cmd, sizeof cmd, "echo 'Restore From Trash' | %s translate --model models/en-fr --keep-title-case "
             "2>/dev/null", bin_path());
    FILE *p = popen(cmd, "r");
    assert_non_null(p);
    size_t n = fread(cli, 1, sizeof cli - 1, p);
    cli[n] = 0;
    assert_int_equal(pclose(p), 0);
    cli[strcspn(cli, "\n")] = 0;
    assert_string_equal(kept, cli);

    char *ph = first_text("{\"text\": \"Open %s In A New Window\"}");
    char *ph_sentence = first_text("{\"text\": \"Open %s in a new window\", \"fold_title_case\": false}");
    assert_string_equal(ph, ph_sentence);
    assert_non_null(strstr(ph, "%s"));

    char *term = first_text("{\"text\": \"Restore From Trash\", \"glossary\": {\"Trash\": \"Poubelle\"}}");
    assert_non_null(strstr(term, "Poubelle"));
    char *no_term = first_text("{\"text\": \"Restore from trash\", \"glossary\": {\"Trash\": \"Poubelle\"}}");
    assert_string_equal(no_term, sentence);        /* "trash" as written: the exact term does not match */

    /* a lone word in sentence case: read lowercased, its translation's first letter up */
    char *word = first_text("{\"text\": \"Alarm\"}");
    char *lower = first_text("{\"text\": \"alarm\", \"fold_title_case\": false}");
    char *as_is = first_text("{\"text\": \"Alarm\", \"fold_title_case\": false}");
    assert_true(lower[0] >= 'a' && lower[0] <= 'z');
    assert_int_equal(word[0], lower[0] - 32);
    assert_string_equal(word + 1, lower + 1);
    print_message("  \"Alarm\" -> \"%s\" (\"alarm\" -> \"%s\"; unfolded: \"%s\")\n", word, lower, as_is);
    char *name = first_text("{\"text\": \"Linux\"}");
    assert_string_equal(name, "Linux");                 /* a name stays a name */
    free(word), free(lower), free(as_is), free(name);

    reply r = post(&srv, "/translate", "{\"text\": \"A B\", \"fold_title_case\": \"yes\"}");
    assert_int_equal(r.status, 400);
    assert_non_null(strstr(r.body, "fold_title_case"));
    reply_free(&r);
    free(folded), free(sentence), free(kept), free(ph), free(ph_sentence), free(term), free(no_term);
}

/* The copy guard's gate (translate/copy_gate.h): with "copy_guard": true, the
 * shipped en-fr model's copy_gate.txt keeps the guard off names, numbers and
 * codes (each output the same as with the guard off), while a word the corpus
 * translates that the model gives back ("Welcome") is decoded again.  The
 * same model without its gate (a directory of links, copy_gate.txt left out)
 * changes some of those right copies: the gate is what keeps them.  A gate
 * file that is not sorted refuses the model, naming the file and the line. */
static void test_copy_gate(void **state)
{
    (void)state;
    static const char *const right[] = { "Linux", "Firefox", "Debian", "12345", "v1.2.3", "UTF-8", "--help",
                                         "README.md", "Ctrl+C", "PostgreSQL", "Kubernetes", "100 %" };
    const char *dir = "build/tests/tmp-copy-gate";
    harness_model_link("models/en-fr", dir, NULL, NULL);
    char gate[256];
    snprintf(gate, sizeof gate, "%s/copy_gate.txt", dir);
    unlink(gate);
    char model_arg[300];
    snprintf(model_arg, sizeof model_arg, "en-fr=%s", dir);
    const char *const args[] = { "--model", model_arg, "--threads", "1", "--cache-mb", "0", NULL };
    server ungated;
    assert_int_equal(server_start(&ungated, args), 0);
    int broken_ungated = 0;
    for (size_t i = 0; i < sizeof right / sizeof right[0]; i++) {
        char body[256];
        snprintf(body, sizeof body, "{\"text\": \"%s\", \"copy_guard\": false}", right[i]);
        char *off = first_text(body);
        snprintf(body, sizeof body, "{\"text\": \"%s\", \"copy_guard\": true}", right[i]);
        char *on = first_text(body);
        char *on_ungated = first_text_on(&ungated, body);
        if (strcmp(on, off) != 0)
            fail_msg("\"%s\": the gated guard changed it: \"%s\" -> \"%s\"", right[i], off, on);
        broken_ungated += strcmp(on_ungated, off) != 0;
        free(off), free(on), free(on_ungated);
    }
    print_message("  right copies changed by the guard: gated 0, ungated %d of %zu\n", broken_ungated,
                  sizeof right / sizeof right[0]);
    assert_true(broken_ungated > 0);
    for (int k = 0; k < 2; k++) {                       /* GET /models says which has a gate */
        reply r = get(k ? &ungated : &srv, "/models");
        json_t *j = expect_json(&r, 200), *m, *cg = NULL;
        size_t i;
        json_array_foreach(json_object_get(j, "models"), i, m)
            if (!strcmp(json_string_value(json_object_get(m, "id")), "en-fr"))
                cg = json_object_get(m, "copy_guard");
        assert_non_null(cg);
        assert_true(json_is_false(json_object_get(cg, "default")));
        if (k)
            assert_true(json_is_null(json_object_get(cg, "gate_words")));
        else
            assert_true(json_integer_value(json_object_get(cg, "gate_words")) > 10000);
        json_decref(j);
        reply_free(&r);
    }
    assert_int_equal(server_stop(&ungated), 0);

    char *copied = first_text("{\"text\": \"Welcome\", \"copy_guard\": false}");
    char *guarded = first_text("{\"text\": \"Welcome\", \"copy_guard\": true}");
    char *dflt = first_text("{\"text\": \"Welcome\"}");
    assert_string_equal(copied, "Welcome");             /* the shipped weights give it back */
    assert_string_not_equal(guarded, "Welcome");        /* "welcome" arms the gate */
    assert_string_equal(dflt, copied);                  /* off by default */
    print_message("  \"Welcome\": guard off \"%s\", on \"%s\"\n", copied, guarded);
    free(copied), free(guarded), free(dflt);

    static const char bad[] = "# a gate\nzebra\nalarm\n";
    harness_write_file(gate, bad, sizeof bad - 1);
    char cmd[512], out[1024] = "";
    snprintf(cmd, sizeof cmd, "echo Alarm | %s translate --model %s 2>&1", bin_path(), dir);
    FILE *p = popen(cmd, "r");
    assert_non_null(p);
    size_t n = fread(out, 1, sizeof out - 1, p);
    out[n] = 0;
    assert_int_not_equal(pclose(p), 0);
    if (!strstr(out, "copy_gate.txt") || !strstr(out, "line 3"))
        fail_msg("a bad gate file: \"%s\"", out);
    server refused;
    assert_int_not_equal(server_start(&refused, args), 0);
    unlink(gate);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_debian_placeholders_kept),
        cmocka_unit_test(test_debian_without_unchanged),
        cmocka_unit_test(test_other_apis),
        cmocka_unit_test(test_form_off),
        cmocka_unit_test(test_features),
        cmocka_unit_test(test_title_case),
        cmocka_unit_test(test_copy_gate),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
