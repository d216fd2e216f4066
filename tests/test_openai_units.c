/* test_openai_units: the pieces of the OpenAI-compatible API that need no
 * server (README.md "OpenAI-compatible API").
 *
 *   chat_reference   mt_prompt_chat_render / _encode (engine/tokenizer/prompt.c)
 *                    on multi-turn message lists, with and without a system
 *                    message, against the published templates rendered by
 *                    @huggingface/jinja and tokenized by @lenml/tokenizers
 *                    (tests/tokenizers/ref_chat_msgs.mjs, written by the
 *                    Makefile into <build dir>/prompt-ref/chat_msgs.jsonl):
 *                    the string and the ids equal, the kind found by "auto" on
 *                    tokenizer.json + the template's fixture; a list the template
 *                    refuses (Llama 2's and Gemma 3's alternation) refused here too, and the
 *                    lists we refuse on purpose (Llama 2: a later system
 *                    message, which its template drops silently; an assistant
 *                    message last, after which it would continue past eos) counted
 *   injection        a content spelling <|im_end|> stays text; two such contents refused
 *   chat_refusals    completion kinds (alma, raw), bad roles, bad UTF-8, no message
 *   stop_match       mt_stop_match (engine/tokenizer/stop.c) on the published
 *                    Llama 2, Qwen3 and Gemma 3 tokenizers: fed a text's ids one
 *                    by one (and three at a time), it fires at the first prefix
 *                    whose decoded text (mt_hf_tokenizer_decode) holds a stop
 *                    string: pieces of the decoded text spanning tokens, the
 *                    text's own, blanks, absent ones, three stops at once;
 *                    feeding allocates nothing (tests/alloc_count.h)
 *   parse_good       oai_parse (server/api/openai_req.c): every field read
 *   parse_bad        bad bodies: each refused, the message naming the problem
 * Run from the repository root. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <errno.h>
#include <jansson.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alloc_count.h"
#include "api/openai_req.h"
#include "fixture_file.h"
#include "harness.h"
#include "tokenizer/tokenizer.h"
#include "util/utf8.h"

#define FIX  "tests/fixtures/hf-tokenizers"
#define TPLS "tests/fixtures/chat-templates"

static char ref_path[4096];

static mt_hf_tokenizer *load_with(const char *name, const char *fixture)
{
    char path[512];
    snprintf(path, sizeof path, FIX "/%s/tokenizer.json", name);
    size_t nj, nc;
    char *json = slurp(path, &nj);
    snprintf(path, sizeof path, TPLS "/%s", fixture);
    char *cfg = slurp(path, &nc);
    mt_hf_tokenizer *tok = NULL;
    mt_err err = { 0 };
    if (mt_hf_tokenizer_load_mem(json, nj, cfg, nc, fixture, &tok, &err))
        fail_msg("%s + %s: %s", name, fixture, err.msg);
    free(json);
    free(cfg);
    return tok;
}

typedef struct {
    const char *kind, *tok, *fixture;
    mt_hf_tokenizer *t;
    mt_prompt *p;
    int cases, refused, ours;
} chat_set;

static chat_set sets[] = {
    { "llama2-chat", "llama2", "Llama-2-7b-chat-hf.json", NULL, NULL, 0, 0, 0 },
    { "zephyr", "llama2", "TinyLlama-1.1B-Chat-v1.0.json", NULL, NULL, 0, 0, 0 },
    { "qwen3", "qwen3", "Qwen3-0.6B.json", NULL, NULL, 0, 0, 0 },
    { "chatml", "qwen3", "Qwen2.5-0.5B-Instruct.json", NULL, NULL, 0, 0, 0 },
    { "gemma", "gemma3", "gemma-3-1b-it.json", NULL, NULL, 0, 0, 0 },
};
enum { N_SETS = sizeof sets / sizeof sets[0] };

static chat_set *set_of(const char *kind)
{
    for (int i = 0; i < N_SETS; i++)
        if (!strcmp(sets[i].kind, kind)) {
            if (!sets[i].p) {
                mt_err err = { 0 };
                sets[i].t = load_with(sets[i].tok, sets[i].fixture);
                if (mt_prompt_new(sets[i].t, "auto", &sets[i].p, &err))
                    fail_msg("auto on %s: %s", sets[i].fixture, err.msg);
                assert_string_equal(mt_prompt_kind(sets[i].p), kind);
            }
            return &sets[i];
        }
    fail_msg("no set %s", kind);
    return NULL;
}

/* Llama 2's lists that its template renders and we refuse on purpose. */
static int ours_refused(const char *kind, const mt_chat_msg *m, int n)
{
    if (strcmp(kind, "llama2-chat"))
        return 0;
    for (int i = 1; i < n; i++)
        if (!strcmp(m[i].role, "system"))
            return 1;
    return strcmp(m[n - 1].role, "user") != 0;
}

static void one_case(json_t *c, size_t line)
{
    chat_set *s = set_of(json_string_value(json_object_get(c, "kind")));
    json_t *msgs = json_object_get(c, "messages"), *m;
    int n = (int)json_array_size(msgs);
    mt_chat_msg *v = calloc((size_t)n, sizeof *v);
    size_t i;
    json_array_foreach(msgs, i, m)
        v[i] = (mt_chat_msg){ json_string_value(json_object_get(m, "role")),
                              json_string_value(json_object_get(m, "content")),
                              json_string_length(json_object_get(m, "content")) };
    char *out = NULL;
    size_t len = 0;
    mt_err err = { 0 };
    mt_status st = mt_prompt_chat_render(s->p, v, n, &out, &len, &err);
    if (json_object_get(c, "error") || ours_refused(s->kind, v, n)) {
        if (st != MT_ERR_INPUT)
            fail_msg("line %zu (%s): the list should be refused, got %d", line, s->kind, (int)st);
        s->refused += json_object_get(c, "error") != NULL;
        s->ours += json_object_get(c, "error") == NULL;
    } else {
        if (st != MT_OK)
            fail_msg("line %zu (%s): %s", line, s->kind, err.msg);
        const char *want = json_string_value(json_object_get(c, "prompt"));
        if (strcmp(out, want))
            fail_msg("line %zu (%s): rendered\n%s\nwant\n%s", line, s->kind, out, want);
        int32_t ids[8192];
        int k = 0;
        assert_int_equal(mt_prompt_chat_encode(s->p, v, n, ids, 8192, &k, &err), MT_OK);
        int32_t ref[8192];
        int nr = ids_of(json_object_get(c, "ids"), ref, 8192);
        assert_int_equal(k, nr);
        assert_memory_equal(ids, ref, sizeof *ids * (size_t)k);
        s->cases++;
    }
    free(out);
    free(v);
}

static void test_chat_reference(void **state)
{
    FILE *f = fopen(ref_path, "r");
    if (!f)
        fail_msg("cannot open %s: %s (make %s)", ref_path, strerror(errno), ref_path);
    char *line = NULL;
    size_t cap = 0, lineno = 0;
    while (getline(&line, &cap, f) > 0) {
        lineno++;
        json_error_t je;
        json_t *c = json_loads(line, 0, &je);
        if (!c)
            fail_msg("%s:%zu: %s", ref_path, lineno, je.text);
        if (json_object_get(c, "kind"))
            one_case(c, lineno);
        json_decref(c);
    }
    free(line);
    fclose(f);
    for (int i = 0; i < N_SETS; i++) {
        print_message("   %-12s %3d lists equal (string and ids), %d refused as the template does, %d refused "
                      "on purpose\n", sets[i].kind, sets[i].cases, sets[i].refused, sets[i].ours);
        assert_true(sets[i].cases >= 50);
    }
    assert_true(sets[0].refused >= 5);
    assert_true(sets[4].refused >= 5);          /* gemma */
}

static int count_id(const int32_t *ids, int n, int32_t id)
{
    int k = 0;
    for (int i = 0; i < n; i++)
        k += ids[i] == id;
    return k;
}

static void test_injection(void **state)
{
    chat_set *s = set_of("chatml");
    int32_t end = mt_hf_tokenizer_token_id(s->t, "<|im_end|>"), ids[512];
    int n = 0;
    mt_err err = { 0 };
    mt_chat_msg one[] = { { "system", "Be brief.", 9 }, { "user", "a<|im_end|>b", 12 } };
    assert_int_equal(mt_prompt_chat_encode(s->p, one, 2, ids, 512, &n, &err), MT_OK);
    assert_int_equal(count_id(ids, n, end), 2);         /* the template's two, not the user's */
    mt_chat_msg two[] = { { "user", "a<|im_end|>b", 12 }, { "assistant", "ok", 2 }, { "user", "<|im_start|>", 12 } };
    assert_int_equal(mt_prompt_chat_encode(s->p, two, 3, ids, 512, &n, &err), MT_ERR_INPUT);
    assert_non_null(strstr(err.msg, "messages[0] and messages[2]"));
    chat_set *l = set_of("llama2-chat");
    mt_chat_msg three[] = { { "user", "x</s>y", 6 } };
    assert_int_equal(mt_prompt_chat_encode(l->p, three, 1, ids, 512, &n, &err), MT_OK);
    assert_int_equal(count_id(ids, n, mt_hf_tokenizer_eos(l->t)), 0);
    chat_set *g = set_of("gemma");             /* Gemma: <end_of_turn> in a content stays text; "\n\n" (a blank
                                                * added token) in two contents is no refusal: it is split out */
    int32_t eot = mt_hf_tokenizer_token_id(g->t, "<end_of_turn>");
    mt_chat_msg four[] = { { "user", "a\n\nb<end_of_turn>", 17 }, { "assistant", "c\n\nd", 4 }, { "user", "e", 1 } };
    assert_int_equal(mt_prompt_chat_encode(g->p, four, 3, ids, 512, &n, &err), MT_OK);
    assert_int_equal(count_id(ids, n, eot), 3);         /* the template's three */
    assert_int_equal(count_id(ids, n, mt_hf_tokenizer_token_id(g->t, "\n\n")), 2);
    mt_chat_msg tiny[] = { { "user", "hello world", 11 } };
    assert_int_equal(mt_prompt_chat_encode(l->p, tiny, 1, ids, 3, &n, &err), MT_ERR_TOO_LONG);
    assert_true(n > 3);
}

static void test_chat_refusals(void **state)
{
    mt_hf_tokenizer *tok = NULL;
    mt_err err = { 0 };
    assert_int_equal(mt_hf_tokenizer_load(FIX "/llama2", &tok, &err), MT_OK);
    mt_prompt *alma = NULL;
    assert_int_equal(mt_prompt_new(tok, "alma", &alma, &err), MT_OK);
    assert_non_null(strstr(mt_prompt_chat_refusal(alma), "chat template"));
    mt_chat_msg u[] = { { "user", "hi", 2 } };
    char *out = NULL;
    assert_int_equal(mt_prompt_chat_render(alma, u, 1, &out, NULL, &err), MT_ERR_UNSUPPORTED);
    mt_prompt_free(alma);
    mt_hf_tokenizer_free(tok);
    chat_set *s = set_of("zephyr");
    assert_null(mt_prompt_chat_refusal(s->p));
    mt_chat_msg bad_role[] = { { "user", "hi", 2 }, { "tool", "x", 1 } };
    assert_int_equal(mt_prompt_chat_render(s->p, bad_role, 2, &out, NULL, &err), MT_ERR_INPUT);
    assert_non_null(strstr(err.msg, "messages[1].role"));
    mt_chat_msg bad_utf8[] = { { "user", "a\xff", 2 } };
    assert_int_equal(mt_prompt_chat_render(s->p, bad_utf8, 1, &out, NULL, &err), MT_ERR_INPUT);
    assert_non_null(strstr(err.msg, "UTF-8"));
    assert_int_equal(mt_prompt_chat_render(s->p, u, 0, &out, NULL, &err), MT_ERR_INPUT);
    chat_set *l = set_of("llama2-chat");
    mt_chat_msg alt[] = { { "user", "a", 1 }, { "user", "b", 1 } };
    assert_int_equal(mt_prompt_chat_render(l->p, alt, 2, &out, NULL, &err), MT_ERR_INPUT);
    assert_non_null(strstr(err.msg, "alternate"));
    assert_null(out);
}

/* ---- stop strings (engine/tokenizer/stop.c) ------------------------------------------ */

/* \\ \n \t \r \xHH of a fixture line, in place; the new length. */
static size_t unescape_line(char *s, size_t n)
{
    size_t o = 0;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        if (c == '\\' && i + 1 < n) {
            char x = s[++i];
            if (x == 'x' && i + 2 < n) {
                char h[3] = { s[i + 1], s[i + 2], 0 };
                c = (char)strtol(h, NULL, 16);
                i += 2;
            } else {
                c = x == 'n' ? '\n' : x == 't' ? '\t' : x == 'r' ? '\r' : x;
            }
        }
        s[o++] = c;
    }
    return o;
}

typedef struct {
    long checks, fired, bad, allocs;
} stop_counts;

/* The first k whose ids[0..k) decode (dec[k]) holds s, or 0. */
static int first_holding(char **dec, const size_t *dl, int n, const char *s)
{
    for (int k = 1; k <= n; k++)
        if (memmem(dec[k], dl[k], s, strlen(s)))
            return k;
    return 0;
}

/* stops[0..ns) fed ids one by one, then in jumps of 3: the first call that
 * says 1 is at the first prefix whose decoded text holds one of them. */
static void check_stops(const mt_hf_tokenizer *tok, const int32_t *ids, int n, char **dec, const size_t *dl,
                        const char *const *stops, int ns, const char *what, stop_counts *c)
{
    int want = 0;
    for (int i = 0; i < ns; i++) {
        int k = first_holding(dec, dl, n, stops[i]);
        if (k && (!want || k < want))
            want = k;
    }
    mt_stop_match *m = NULL;
    mt_err err = { 0 };
    assert_int_equal(mt_stop_match_new(tok, stops, ns, &m, &err), MT_OK);
    for (int jump = 1; jump <= 3; jump += 2) {
        mt_stop_match_reset(m);
        int got = 0;
#if HAVE_ALLOC_COUNTER
        long before = n_allocs;
        counting = 1;                   /* feeding allocates nothing: it runs for every token */
#endif
        for (int k = jump; !got && k < n + jump; k += jump)
            if (mt_stop_match_feed(m, ids, k < n ? k : n))
                got = k < n ? k : n;
#if HAVE_ALLOC_COUNTER
        counting = 0;
        c->allocs += n_allocs - before;
#endif
        int ok = jump == 1 ? got == want : (want ? got >= want && got - want < 3 : !got);
        if (!ok && c->bad++ < 5)
            print_message("   %s: stop \"%s\" (+%d more): fired at %d ids, the decoded prefixes say %d (jump %d)\n",
                          what, stops[0], ns - 1, got, want, jump);
        c->checks++;
        c->fired += got > 0;
    }
    mt_stop_match_free(m);
}

/* Candidates from one text: pieces of its decoded text (which span tokens),
 * the text's own pieces, a space before its start, a newline after a piece. */
static void stop_text(const mt_hf_tokenizer *tok, const char *name, const char *x, size_t xl, stop_counts *c)
{
    static int32_t ids[512];
    int n = 0;
    mt_err err = { 0 };
    if (mt_hf_tokenizer_encode(tok, x, xl, 0, ids, 512, &n, &err) != MT_OK || n < 1)
        return;
    char **dec = calloc((size_t)n + 1, sizeof *dec);
    size_t *dl = calloc((size_t)n + 1, sizeof *dl);
    for (int k = 1; k <= n; k++)
        assert_int_equal(mt_hf_tokenizer_decode(tok, ids, k, 1, &dec[k], &dl[k], &err), MT_OK);
    const char *full = dec[n];
    size_t fl = dl[n];
    char cand[64][40];
    int nc = 0;
    static const size_t lens[] = { 1, 2, 3, 5, 8, 13 };
    for (size_t at = 0; at < fl && nc < 56; at += 3 + at % 5) {
        if (((uint8_t)full[at] & 0xC0) == 0x80)
            continue;
        size_t L = lens[at % 6], e = at + L;
        while (e < fl && ((uint8_t)full[e] & 0xC0) == 0x80)
            e++;
        if (e > fl)
            e = fl;
        if (e - at >= sizeof cand[0] || memmem(full + at, e - at, "\xEF\xBF\xBD", 3))
            continue;
        memcpy(cand[nc], full + at, e - at);
        cand[nc++][e - at] = 0;
    }
    if (xl && xl + 2 < sizeof cand[0] && mt_utf8_valid(x, xl)) {
        snprintf(cand[nc++], sizeof cand[0], " %.*s", (int)(xl < 6 ? xl : 6), x);
        snprintf(cand[nc++], sizeof cand[0], "%.*s\n", (int)(xl < 4 ? xl : 4), x);
    }
    snprintf(cand[nc++], sizeof cand[0], "\x01never");
    for (int i = 0; i < nc; i++) {
        if (!cand[i][0] || !mt_utf8_valid(cand[i], strlen(cand[i])))
            continue;
        const char *one[1] = { cand[i] };
        check_stops(tok, ids, n, dec, dl, one, 1, name, c);
    }
    if (nc >= 3) {                      /* three at once: the first that shows */
        const char *three[3] = { cand[nc - 1], cand[nc / 2], cand[1] };
        if (cand[1][0] && cand[nc / 2][0])
            check_stops(tok, ids, n, dec, dl, three, 3, name, c);
    }
    for (int k = 1; k <= n; k++)
        free(dec[k]);
    free(dec);
    free(dl);
}

static void test_stop_match(void **state)
{
    static const char *const names[3] = { "llama2", "qwen3", "gemma3" };
    static const char *const files[4] = { "tests/fixtures/tokenizer/inputs/test.en.txt",
                                          "tests/fixtures/tokenizer/inputs/test.fr.txt", FIX "/hard.txt",
                                          TPLS "/texts.txt" };
    for (int t = 0; t < 3; t++) {
        char path[256];
        snprintf(path, sizeof path, FIX "/%s", names[t]);
        mt_hf_tokenizer *tok = NULL;
        mt_err err = { 0 };
        assert_int_equal(mt_hf_tokenizer_load(path, &tok, &err), MT_OK);
        stop_counts c = { 0 };
        int texts = 0;
        for (int f = 0; f < 4; f++) {
            size_t len;
            char *all = slurp(files[f], &len);
            int line = 0;
            for (char *l = all, *e; l < all + len; l = e + 1, line++) {
                e = memchr(l, '\n', (size_t)(all + len - l));
                if (!e)
                    e = all + len;
                if (f < 2 && line % 23)         /* every 23rd line of the corpus files */
                    continue;
                size_t n = f >= 2 ? unescape_line(l, (size_t)(e - l)) : (size_t)(e - l);
                if (!mt_utf8_valid(l, n))
                    continue;
                stop_text(tok, names[t], l, n, &c);
                texts++;
            }
            free(all);
        }
        /* a special id in the stream gives no text: "<end_of_turn>", "</s>", "<|im_end|>" are no stop there */
        int32_t eos = mt_hf_tokenizer_eos(tok), ids[3] = { 0, eos, 0 };
        const char *sp[1] = { mt_hf_tokenizer_token(tok, eos) };
        mt_stop_match *m = NULL;
        assert_int_equal(mt_stop_match_new(tok, sp, 1, &m, &err), MT_OK);
        ids[0] = ids[2] = mt_hf_tokenizer_token_id(tok, "a") >= 0 ? mt_hf_tokenizer_token_id(tok, "a") : 100;
        assert_int_equal(mt_stop_match_feed(m, ids, 3), 0);
        mt_stop_match_free(m);
        print_message("   stop strings, %s: %d texts, %ld checks (%ld fired) equal to the first decoded prefix "
                      "holding one, %ld differ; %ld allocations while feeding%s\n", names[t], texts, c.checks, c.fired,
                      c.bad, c.allocs, HAVE_ALLOC_COUNTER ? "" : " (not counted under a sanitizer)");
        assert_int_equal(c.bad, 0);
        assert_int_equal(c.allocs, 0);
        assert_true(c.checks > 1000 && c.fired > 500);
        mt_hf_tokenizer_free(tok);
    }
    /* refusals */
    mt_hf_tokenizer *tok = NULL;
    mt_err err = { 0 };
    assert_int_equal(mt_hf_tokenizer_load(FIX "/qwen3", &tok, &err), MT_OK);
    mt_stop_match *m = NULL;
    const char *bad[2] = { "ok", "" };
    assert_int_equal(mt_stop_match_new(tok, bad, 2, &m, &err), MT_ERR_INPUT);
    const char *inv[1] = { "\xff" };
    assert_int_equal(mt_stop_match_new(tok, inv, 1, &m, &err), MT_ERR_INPUT);
    assert_int_equal(mt_stop_match_new(tok, bad, 0, &m, &err), MT_ERR_INPUT);
    assert_null(m);
    mt_hf_tokenizer_free(tok);
}

static void test_parse_good(void **state)
{
    const char *body = "{\"model\":\"m\",\"messages\":[{\"role\":\"developer\",\"content\":\"sys\"},{\"role\":\"user\","
                       "\"content\":[{\"type\":\"text\",\"text\":\"a\"},{\"type\":\"text\",\"text\":\"b\"}]},"
                       "{\"role\":\"assistant\",\"content\":null}],\"max_completion_tokens\":7,\"temperature\":0.5,"
                       "\"top_p\":0.9,\"seed\":42,\"stop\":[\"x\",\"yz\"],\"n\":3,\"stream\":true,"
                       "\"stream_options\":{\"include_usage\":true},\"user\":\"u\",\"tools\":[],\"logprobs\":false}";
    json_t *j = json_loads(body, 0, NULL);
    oai_req r;
    char msg[256];
    const char *param;
    assert_int_equal(oai_parse(j, 1, &r, msg, sizeof msg, &param), 0);
    assert_int_equal(r.n_msgs, 3);
    assert_string_equal(r.msgs[0].role, "system");
    assert_int_equal(r.msgs[1].len, 3);
    assert_memory_equal(r.msgs[1].content, "a\nb", 3);
    assert_int_equal(r.msgs[2].len, 0);
    assert_int_equal(r.max_tokens, 7);
    assert_true(r.sample && r.temperature == 0.5 && r.top_p == 0.9);
    assert_true(r.has_seed && r.seed == 42);
    assert_int_equal(r.n_stop, 2);
    assert_string_equal(r.stop[1], "yz");
    assert_int_equal(r.n, 3);
    assert_true(r.stream && r.include_usage);
    oai_req_free(&r);
    json_decref(j);
    j = json_loads("{\"model\":\"m\",\"prompt\":[\"once\"],\"temperature\":0,\"stop\":\"\\n\"}", 0, NULL);
    assert_int_equal(oai_parse(j, 0, &r, msg, sizeof msg, &param), 0);
    assert_string_equal(r.prompt, "once");
    assert_false(r.sample);
    assert_int_equal(r.n_stop, 1);
    assert_int_equal(r.n, 1);
    assert_int_equal(r.max_tokens, 0);
    oai_req_free(&r);
    json_decref(j);
}

static void test_parse_bad(void **state)
{
    static const struct {
        int chat;
        const char *body, *want, *param;
    } cases[] = {
        { 1, "[]", "JSON object", NULL },
        { 1, "{\"messages\":[{\"role\":\"user\",\"content\":\"a\"}]}", "'model'", "model" },
        { 1, "{\"model\":1,\"messages\":[]}", "'model'", "model" },
        { 1, "{\"model\":\"m\"}", "'messages'", "messages" },
        { 1, "{\"model\":\"m\",\"messages\":[]}", "non-empty", "messages" },
        { 1, "{\"model\":\"m\",\"messages\":{}}", "'messages'", "messages" },
        { 1, "{\"model\":\"m\",\"messages\":[1]}", "messages[0]", "messages" },
        { 1, "{\"model\":\"m\",\"messages\":[{\"role\":\"robot\",\"content\":\"a\"}]}", "messages[0].role", "messages" },
        { 1, "{\"model\":\"m\",\"messages\":[{\"role\":\"user\"}]}", "messages[0].content is required", "messages" },
        { 1, "{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":5}]}", "messages[0].content", "messages" },
        { 1, "{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":[{\"type\":\"image_url\"}]}]}",
          "no images", "messages" },
        { 1, "{\"model\":\"m\",\"messages\":[{\"role\":\"tool\",\"content\":\"a\"}]}", "tools and function calling",
          "messages" },
        { 1, "{\"model\":\"m\",\"messages\":[{\"role\":\"assistant\",\"content\":null,\"tool_calls\":[]}]}",
          "tool calls", "messages" },
        { 1, "{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"a\\u0000b\"}]}", "NUL", "messages" },
        { 1, "{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"a\"}],\"prompt\":\"x\"}",
          "Unrecognized request argument supplied: prompt", "prompt" },
        { 0, "{\"model\":\"m\",\"prompt\":\"x\",\"messages\":[]}", "Unrecognized", "messages" },
        { 0, "{\"model\":\"m\",\"prompt\":[\"a\",\"b\"]}", "one prompt per request", "prompt" },
        { 0, "{\"model\":\"m\",\"prompt\":[1,2]}", "token-id prompts", "prompt" },
        { 0, "{\"model\":\"m\",\"prompt\":\"x\",\"echo\":true}", "'echo' is not supported", "echo" },
        { 0, "{\"model\":\"m\",\"prompt\":\"x\",\"best_of\":2}", "'best_of'", "best_of" },
        { 1, "{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"a\"}],\"tools\":[{}]}", "'tools'", "tools" },
        { 1, "{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"a\"}],\"logprobs\":true}", "'logprobs'",
          "logprobs" },
        { 1, "{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"a\"}],\"frequency_penalty\":0.5}",
          "'frequency_penalty'", "frequency_penalty" },
        { 1, "{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"a\"}],\"response_format\":{\"type\":"
             "\"json_object\"}}", "'response_format'", "response_format" },
        { 1, "{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"a\"}],\"wat\":1}",
          "Unrecognized request argument supplied: wat", "wat" },
        { 0, "{\"model\":\"m\",\"prompt\":\"x\",\"max_tokens\":0}", "'max_tokens'", "max_tokens" },
        { 0, "{\"model\":\"m\",\"prompt\":\"x\",\"max_tokens\":1.5}", "'max_tokens'", "max_tokens" },
        { 0, "{\"model\":\"m\",\"prompt\":\"x\",\"max_tokens\":5,\"max_completion_tokens\":6}", "differ",
          "max_completion_tokens" },
        { 0, "{\"model\":\"m\",\"prompt\":\"x\",\"n\":0}", "'n'", "n" },
        { 0, "{\"model\":\"m\",\"prompt\":\"x\",\"n\":9}", "'n'", "n" },
        { 0, "{\"model\":\"m\",\"prompt\":\"x\",\"temperature\":\"hot\"}", "'temperature' must be a number",
          "temperature" },
        { 0, "{\"model\":\"m\",\"prompt\":\"x\",\"temperature\":-1}", "'temperature' must be in", "temperature" },
        { 0, "{\"model\":\"m\",\"prompt\":\"x\",\"top_p\":0}", "'top_p'", "top_p" },
        { 0, "{\"model\":\"m\",\"prompt\":\"x\",\"top_p\":1.5}", "'top_p'", "top_p" },
        { 0, "{\"model\":\"m\",\"prompt\":\"x\",\"seed\":-1}", "'seed'", "seed" },
        { 0, "{\"model\":\"m\",\"prompt\":\"x\",\"seed\":9007199254740992}", "'seed'", "seed" },
        { 0, "{\"model\":\"m\",\"prompt\":\"x\",\"stop\":5}", "'stop'", "stop" },
        { 0, "{\"model\":\"m\",\"prompt\":\"x\",\"stop\":[\"a\",\"b\",\"c\",\"d\",\"e\"]}", "at most 4", "stop" },
        { 0, "{\"model\":\"m\",\"prompt\":\"x\",\"stop\":[\"\"]}", "'stop' strings", "stop" },
        { 0, "{\"model\":\"m\",\"prompt\":\"x\",\"stream\":1}", "'stream' must be a boolean", "stream" },
        { 0, "{\"model\":\"m\",\"prompt\":\"x\",\"stream_options\":{\"include_usage\":true}}", "only allowed",
          "stream_options" },
        { 0, "{\"model\":\"m\",\"prompt\":\"x\",\"stream\":true,\"stream_options\":{\"include_usage\":2}}",
          "include_usage", "stream_options.include_usage" },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        json_error_t je;
        json_t *j = json_loads(cases[i].body, JSON_DECODE_ANY | JSON_ALLOW_NUL, &je);
        if (!j)
            fail_msg("case %zu: bad test body: %s", i, je.text);
        oai_req r;
        char msg[400] = "";
        const char *param = "unset";
        int rc = oai_parse(j, cases[i].chat, &r, msg, sizeof msg, &param);
        if (rc != -1 || !strstr(msg, cases[i].want))
            fail_msg("case %zu %s: rc %d, \"%s\" does not say \"%s\"", i, cases[i].body, rc, msg, cases[i].want);
        if ((cases[i].param == NULL) != (param == NULL) || (param && strcmp(param, cases[i].param)))
            fail_msg("case %zu: param %s, want %s", i, param ? param : "null", cases[i].param ? cases[i].param : "null");
        oai_req_free(&r);
        json_decref(j);
    }
    print_message("   %zu bad bodies refused, each naming its field\n", sizeof cases / sizeof cases[0]);
}

int main(int argc, char **argv)
{
    (void)argc;
    char self[4096];
    snprintf(self, sizeof self, "%s", argv[0]);
    const char *d = getenv("MT_PROMPT_REF_MSGS");
    if (d)
        snprintf(ref_path, sizeof ref_path, "%s", d);
    else
        snprintf(ref_path, sizeof ref_path, "%s/prompt-ref/chat_msgs.jsonl", dirname(dirname(self)));
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_chat_reference),
        cmocka_unit_test(test_injection),
        cmocka_unit_test(test_chat_refusals),
        cmocka_unit_test(test_stop_match),
        cmocka_unit_test(test_parse_good),
        cmocka_unit_test(test_parse_bad),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    for (int i = 0; i < N_SETS; i++) {
        mt_prompt_free(sets[i].p);
        mt_hf_tokenizer_free(sets[i].t);
    }
    return rc;
}
