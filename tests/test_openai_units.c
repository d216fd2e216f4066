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

#include "api/openai_req.h"
#include "fixture_file.h"
#include "harness.h"
#include "tokenizer/tokenizer.h"

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
