/* test_openai: the OpenAI-compatible API (server/api/openai_api.c) of the real
 * binary, on the decoder-only models of tests/llm/gen_served.py (make
 * llm-served): a Llama-shaped model without a chat template (completions),
 * the same with TinyLlama-Chat's published template (Zephyr: chat), a
 * Qwen3-shaped one with Qwen3's (chat) and a tiny Gemma 3 (sliding-window and
 * global layers, the real Gemma 3 tokenizer) with gemma-3-1b-it's (chat),
 * beside the Marian en-fr.
 *
 *   models        GET /v1/models lists the decoder-only models only
 *   chat_ref      greedy chats equal the float64 reference (gen_served.py
 *                 "chats": the messages through Qwen3's, Zephyr's and Gemma 3's
 *                 published templates by @huggingface/jinja): text, finish_reason, usage
 *                 (prompt ids of the reference tokenizer, generated ids); each chat
 *                 model answers at least 3
 *   completion_ref  /v1/completions of the raw cases: text and usage
 *   stream        the chunks of every chat and completion concatenate to the
 *                 reply without stream; role first, finish_reason, usage, [DONE]
 *   seed          a seed gives the same draws again; n = 2 draws choice j with
 *                 seed + j (so choice 1 is the reply of seed + 1)
 *   stop          decoding ends at the id that completes a stop string (two
 *                 characters mid-text, and four spanning two ids): the text
 *                 cut before it, finish_reason "stop", completion_tokens the
 *                 ids up to that one (the reference's ids decoded by the
 *                 model's tokenizer say which), streamed the same
 *   concurrent    6 clients at once, plain and streamed: every reply the reference's
 *   errors        400 (bad bodies, a Marian model, a model without a chat
 *                 template, max_tokens over the decoder), 404 model_not_found,
 *                 413, in OpenAI's shape
 *   keys          a server with --api-key: a wrong key 401 invalid_api_key,
 *                 the right one 200; --req-limit: 429 rate_limit_exceeded
 *   npm_client    the official `openai` npm client, unmodified
 *                 (tests/openai/client.mjs): chat (plain and streamed),
 *                 completion, models.list, seed, stop, a wrong key
 * MT_LLM_SERVED: the models' directory (default build/llm-served).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include <pthread.h>
#include <sys/wait.h>

#include "harness.h"
#include "tokenizer/tokenizer.h"

static server srv;
static json_t *expected;
static char served_dir[1024];

static int setup(void **state)
{
    const char *dir = getenv("MT_LLM_SERVED");
    snprintf(served_dir, sizeof served_dir, "%s", dir ? dir : "build/llm-served");
    char path[1100], llama[1100], qwen[1100], zephyr[1100], gemma[1100];
    snprintf(path, sizeof path, "%s/expected.json", served_dir);
    json_error_t je;
    if (!(expected = json_load_file(path, 0, &je)) || !json_array_size(json_object_get(expected, "chats"))) {
        print_error("cannot read the chats of %s (make llm-served): %s\n", path, je.text);
        return -1;
    }
    snprintf(llama, sizeof llama, "llama=%s/llama", served_dir);
    snprintf(qwen, sizeof qwen, "qwen=%s/qwen", served_dir);
    snprintf(zephyr, sizeof zephyr, "llama-chat=%s/llama-chat", served_dir);
    snprintf(gemma, sizeof gemma, "gemma=%s/gemma", served_dir);
    const char *args[] = { "--model", "en-fr=models/en-fr", "--model", llama, "--model", qwen, "--model", zephyr,
                           "--model", gemma, NULL };
    return server_start(&srv, args);
}

static int teardown(void **state)
{
    int rc = server_stop(&srv);
    json_decref(expected);
    return rc == 0 ? 0 : -1;
}

/* POST body (stolen) to path on s with headers; the reply. */
static reply send_to(const server *s, const char *path, json_t *body, const char *auth)
{
    char *b = json_dumps(body, JSON_COMPACT);
    json_decref(body);
    req_opts o = { .body = b, .extra = { auth } };
    reply r = http_req(s, path, &o);
    free(b);
    return r;
}

static json_t *call(const char *path, json_t *body, long status)
{
    reply r = send_to(&srv, path, body, NULL);
    json_t *j = expect_json(&r, status);
    reply_free(&r);
    return j;
}

/* An error reply in OpenAI's shape: its status, type, code; the message holds want. */
static void expect_error(const char *path, json_t *body, long status, const char *code, const char *want)
{
    json_t *j = call(path, body, status), *e = json_object_get(j, "error");
    assert_non_null(e);
    assert_true(json_is_string(json_object_get(e, "message")) && json_is_string(json_object_get(e, "type")));
    assert_non_null(json_object_get(e, "param"));
    assert_string_equal(json_string_value(json_object_get(e, "code")), code);
    const char *msg = json_string_value(json_object_get(e, "message"));
    if (!strstr(msg, want))
        fail_msg("%s: \"%s\" does not say \"%s\"", path, msg, want);
    json_decref(j);
}

static json_t *chat_body(json_t *c, int stream)
{
    return json_pack("{s:O,s:O,s:O,s:i,s:b}", "model", json_object_get(c, "model"), "messages",
                     json_object_get(c, "messages"),
                     "max_tokens", json_object_get(c, "max_tokens"), "temperature", 0, "stream", stream);
}

static const char *content_of(json_t *rj, int i)
{
    json_t *c = json_array_get(json_object_get(rj, "choices"), (size_t)i);
    json_t *msg = json_object_get(c, "message");
    return json_string_value(msg ? json_object_get(msg, "content") : json_object_get(c, "text"));
}

static const char *finish_of(json_t *rj, int i)
{
    return json_string_value(json_object_get(json_array_get(json_object_get(rj, "choices"), (size_t)i),
                                             "finish_reason"));
}

static long usage(json_t *rj, const char *k)
{
    return (long)json_integer_value(json_object_get(json_object_get(rj, "usage"), k));
}

static void test_models(void **state)
{
    reply r = get(&srv, "/v1/models");
    json_t *j = expect_json(&r, 200), *m;
    reply_free(&r);
    assert_string_equal(json_string_value(json_object_get(j, "object")), "list");
    size_t i;
    int llama = 0, qwen = 0, zephyr = 0, gemma = 0;
    json_array_foreach(json_object_get(j, "data"), i, m) {
        const char *id = json_string_value(json_object_get(m, "id"));
        assert_string_equal(json_string_value(json_object_get(m, "object")), "model");
        assert_true(json_integer_value(json_object_get(m, "created")) > 1600000000);
        assert_true(json_is_string(json_object_get(m, "owned_by")));
        assert_string_not_equal(id, "en-fr");           /* Marian: not listed */
        llama += !strcmp(id, "llama");
        qwen += !strcmp(id, "qwen");
        zephyr += !strcmp(id, "llama-chat");
        gemma += !strcmp(id, "gemma");
    }
    assert_int_equal(json_array_size(json_object_get(j, "data")), 4);
    assert_int_equal(llama + qwen + zephyr + gemma, 4);
    json_decref(j);
    r = get(&srv, "/v1/models/qwen");
    j = expect_json(&r, 200);
    reply_free(&r);
    assert_string_equal(json_string_value(json_object_get(j, "id")), "qwen");
    assert_string_equal(json_string_value(json_object_get(j, "object")), "model");
    json_decref(j);
    const char *absent[] = { "/v1/models/en-fr", "/v1/models/nope", "/v1/models/" };
    for (int k = 0; k < 3; k++) {
        r = get(&srv, absent[k]);
        j = expect_json(&r, 404);
        reply_free(&r);
        assert_string_equal(json_string_value(json_object_get(json_object_get(j, "error"), "code")), "model_not_found");
        json_decref(j);
    }
}

static void test_chat_ref(void **state)
{
    size_t i;
    json_t *c;
    int per_model[3] = { 0 };   /* qwen, llama-chat, gemma: the near-ties gen_served.py left out must leave some */
    json_array_foreach(json_object_get(expected, "chats"), i, c) {
        const char *model = json_string_value(json_object_get(c, "model"));
        per_model[0] += !strcmp(model, "qwen");
        per_model[1] += !strcmp(model, "llama-chat");
        per_model[2] += !strcmp(model, "gemma");
        json_t *j = call("/v1/chat/completions", chat_body(c, 0), 200);
        assert_string_equal(json_string_value(json_object_get(j, "object")), "chat.completion");
        assert_string_equal(json_string_value(json_object_get(j, "model")), json_string_value(json_object_get(c, "model")));
        assert_true(!strncmp(json_string_value(json_object_get(j, "id")), "chatcmpl-", 9));
        json_t *msg = json_object_get(json_array_get(json_object_get(j, "choices"), 0), "message");
        assert_string_equal(json_string_value(json_object_get(msg, "role")), "assistant");
        assert_string_equal(content_of(j, 0), json_string_value(json_object_get(c, "expected")));
        assert_string_equal(finish_of(j, 0), json_string_value(json_object_get(c, "finish_reason")));
        assert_int_equal(usage(j, "prompt_tokens"), json_array_size(json_object_get(c, "prompt_ids")));
        assert_int_equal(usage(j, "completion_tokens"), json_array_size(json_object_get(c, "ids")));
        assert_int_equal(usage(j, "total_tokens"), usage(j, "prompt_tokens") + usage(j, "completion_tokens"));
        json_decref(j);
    }
    for (int m = 0; m < 3; m++)
        assert_true(per_model[m] >= 3);
    print_message("   %zu chats (qwen %d, llama-chat %d, gemma %d): text, finish_reason and usage equal the float64 "
                  "reference's\n", i, per_model[0], per_model[1], per_model[2]);
}

/* The raw cases: up to 15 free ids, then the forced end (gen_served.py's MAX_LENGTH 17). */
static json_t *completion_body(json_t *c, int stream)
{
    return json_pack("{s:s,s:O,s:i,s:i,s:b}", "model", "llama", "prompt", json_object_get(c, "text"), "max_tokens",
                     15, "temperature", 0, "stream", stream);
}

static void test_completion_ref(void **state)
{
    size_t i;
    json_t *c;
    json_array_foreach(json_object_get(expected, "raw"), i, c) {
        json_t *j = call("/v1/completions", completion_body(c, 0), 200);
        assert_string_equal(json_string_value(json_object_get(j, "object")), "text_completion");
        assert_string_equal(content_of(j, 0), json_string_value(json_object_get(c, "expected")));
        json_t *ids = json_object_get(c, "ids");
        size_t n = json_array_size(ids);
        int forced = n == 16;                           /* the 16th id is the forced end, not generated */
        assert_string_equal(finish_of(j, 0), forced ? "length" : "stop");
        assert_int_equal(usage(j, "prompt_tokens"), json_array_size(json_object_get(c, "prompt_ids")));
        assert_int_equal(usage(j, "completion_tokens"), (long)n - forced);
        json_decref(j);
    }
    print_message("   %zu completions equal the reference\n", i);
}

/* The events of a stream: the concatenated text of choice i, its chunks'
 * finish_reason, the usage chunk (or NULL); asserts the shape and [DONE]. */
typedef struct {
    char   text[4][4096];
    char   finish[4][16];
    json_t *usage;
    int    chunks, roles;
} streamed;

static void parse_stream(const char *body, int chat, streamed *s)
{
    memset(s, 0, sizeof *s);
    int done = 0;
    for (const char *p = body; p && *p;) {
        const char *end = strstr(p, "\n\n");
        assert_non_null(end);
        assert_true(!strncmp(p, "data: ", 6));
        assert_false(done);
        if (!strncmp(p + 6, "[DONE]", 6)) {
            done = 1;
            p = end + 2;
            continue;
        }
        json_error_t je;
        json_t *j = json_loadb(p + 6, (size_t)(end - p - 6), 0, &je), *ch;
        assert_non_null(j);
        assert_string_equal(json_string_value(json_object_get(j, "object")), chat ? "chat.completion.chunk"
                                                                                : "text_completion");
        size_t k;
        if (json_object_get(j, "usage"))
            s->usage = json_incref(json_object_get(j, "usage"));
        json_array_foreach(json_object_get(j, "choices"), k, ch) {
            int i = (int)json_integer_value(json_object_get(ch, "index"));
            assert_in_range(i, 0, 3);
            json_t *d = chat ? json_object_get(ch, "delta") : ch;
            const char *t = json_string_value(json_object_get(d, chat ? "content" : "text"));
            if (chat && json_object_get(d, "role")) {
                assert_int_equal(strlen(s->text[i]), 0);        /* the role comes first */
                s->roles++;
            }
            if (t)
                strncat(s->text[i], t, sizeof s->text[i] - strlen(s->text[i]) - 1);
            if (json_is_string(json_object_get(ch, "finish_reason")))
                snprintf(s->finish[i], sizeof s->finish[i], "%s", json_string_value(json_object_get(ch, "finish_reason")));
        }
        s->chunks++;
        json_decref(j);
        p = end + 2;
    }
    assert_true(done);
}

static void test_stream(void **state)
{
    size_t i;
    json_t *c;
    int chunks = 0;
    json_array_foreach(json_object_get(expected, "chats"), i, c) {
        json_t *plain = call("/v1/chat/completions", chat_body(c, 0), 200);
        json_t *body = chat_body(c, 1);
        json_object_set_new(body, "stream_options", json_pack("{s:b}", "include_usage", 1));
        reply r = send_to(&srv, "/v1/chat/completions", body, NULL);
        assert_int_equal(r.status, 200);
        char ct[128] = "";
        header(&r, "Content-Type", ct, sizeof ct);
        assert_non_null(strstr(ct, "text/event-stream"));
        streamed s;
        parse_stream(r.body, 1, &s);
        assert_string_equal(s.text[0], content_of(plain, 0));
        assert_string_equal(s.finish[0], finish_of(plain, 0));
        assert_int_equal(s.roles, 1);
        assert_non_null(s.usage);
        assert_true(json_equal(s.usage, json_object_get(plain, "usage")));
        chunks += s.chunks;
        json_decref(s.usage);
        reply_free(&r);
        json_decref(plain);
    }
    json_array_foreach(json_object_get(expected, "raw"), i, c) {
        reply r = send_to(&srv, "/v1/completions", completion_body(c, 1), NULL);
        assert_int_equal(r.status, 200);
        streamed s;
        parse_stream(r.body, 0, &s);
        assert_string_equal(s.text[0], json_string_value(json_object_get(c, "expected")));
        assert_null(s.usage);                           /* not asked for */
        reply_free(&r);
    }
    print_message("   every chat's %d chunks and every completion's concatenate to the plain reply\n", chunks);
}

static json_t *sample_body(int seed, int n)
{
    return json_pack("{s:s,s:[{s:s,s:s}],s:i,s:f,s:i,s:i}", "model", "qwen", "messages", "role", "user", "content",
                     "Tell me a story.", "max_tokens", 10, "temperature", 1.5, "seed", seed, "n", n);
}

static void test_seed(void **state)
{
    json_t *a = call("/v1/chat/completions", sample_body(7, 1), 200);
    json_t *b = call("/v1/chat/completions", sample_body(7, 1), 200);
    assert_string_equal(content_of(a, 0), content_of(b, 0));
    int differ = 0;
    for (int s = 8; s < 11; s++) {
        json_t *o = call("/v1/chat/completions", sample_body(s, 1), 200);
        differ += strcmp(content_of(o, 0), content_of(a, 0)) != 0;
        json_decref(o);
    }
    assert_true(differ >= 2);
    json_t *two = call("/v1/chat/completions", sample_body(7, 2), 200);     /* choice j draws with seed + j */
    json_t *eight = call("/v1/chat/completions", sample_body(8, 1), 200);
    assert_int_equal(json_array_size(json_object_get(two, "choices")), 2);
    assert_string_equal(content_of(two, 0), content_of(a, 0));
    assert_string_equal(content_of(two, 1), content_of(eight, 0));
    assert_int_equal(json_integer_value(json_object_get(json_array_get(json_object_get(two, "choices"), 1), "index")), 1);
    print_message("   seed 7 twice: \"%s\"; %d of 3 other seeds differ; n=2 = seeds 7 and 8\n", content_of(a, 0), differ);
    json_decref(a);
    json_decref(b);
    json_decref(two);
    json_decref(eight);
}

static void test_n_greedy(void **state)
{
    json_t *c = json_array_get(json_object_get(expected, "chats"), 0);
    json_t *body = chat_body(c, 0);
    json_object_set_new(body, "n", json_integer(2));
    json_t *j = call("/v1/chat/completions", body, 200);
    assert_int_equal(json_array_size(json_object_get(j, "choices")), 2);
    for (int i = 0; i < 2; i++)
        assert_string_equal(content_of(j, i), json_string_value(json_object_get(c, "expected")));
    assert_int_equal(usage(j, "completion_tokens"), 2 * (long)json_array_size(json_object_get(c, "ids")));
    assert_int_equal(usage(j, "prompt_tokens"), json_array_size(json_object_get(c, "prompt_ids")));
    json_decref(j);
}

/* A stop string from the middle of a reference text: the text before its first occurrence. */
/* The first k whose ids[0..k) decode (special tokens skipped, as the
 * server's reply) holds stop; 0: none. */
static int stop_at(const mt_hf_tokenizer *tok, json_t *ids, const char *stop)
{
    int32_t v[512];
    int n = (int)json_array_size(ids);
    assert_true(n <= 512);
    for (int i = 0; i < n; i++)
        v[i] = (int32_t)json_integer_value(json_array_get(ids, (size_t)i));
    for (int k = 1; k <= n; k++) {
        char *t = NULL;
        size_t tl = 0;
        mt_err err = { 0 };
        assert_int_equal(mt_hf_tokenizer_decode(tok, v, k, 1, &t, &tl, &err), MT_OK);
        int hit = memmem(t, tl, stop, strlen(stop)) != NULL;
        free(t);
        if (hit)
            return k;
    }
    return 0;
}

/* Two stop strings of a reference text: two characters from its middle, and
 * the two characters on each side of the boundary between two of its ids
 * (a stop string spanning tokens). */
static int pick_stops(const mt_hf_tokenizer *tok, json_t *c, char stops[2][32])
{
    const char *want = json_string_value(json_object_get(c, "expected"));
    size_t len = strlen(want), at = len / 2;
    int n = 0;
    while (at < len && ((unsigned char)want[at] & 0xC0) == 0x80)
        at++;
    size_t k = at;
    for (int chars = 0; k < len && chars < 2;)
        for (k++, chars++; k < len && ((unsigned char)want[k] & 0xC0) == 0x80;)
            k++;
    if (at + 2 <= len && k - at < 16) {
        memcpy(stops[n], want + at, k - at);
        stops[n++][k - at] = 0;
    }
    json_t *ids = json_object_get(c, "ids");
    int32_t v[512];
    int ni = (int)json_array_size(ids);
    for (int i = 0; i < ni && i < 512; i++)
        v[i] = (int32_t)json_integer_value(json_array_get(ids, (size_t)i));
    for (int j = ni / 3; j < ni - 1 && n < 2; j++) {     /* a boundary with two characters on each side */
        char *t = NULL;
        size_t b = 0;
        mt_err err = { 0 };
        assert_int_equal(mt_hf_tokenizer_decode(tok, v, j, 1, &t, &b, &err), MT_OK);
        int prefix = b <= len && !memcmp(t, want, b);  /* the boundary is a place in the text */
        free(t);
        if (!prefix || b < 2 || b + 2 > len)
            continue;
        size_t lo = b, hi = b;
        for (int chars = 0; lo > 0 && chars < 2; chars++)
            while (--lo > 0 && ((unsigned char)want[lo] & 0xC0) == 0x80)
                ;
        for (int chars = 0; hi < len && chars < 2; chars++)
            for (hi++; hi < len && ((unsigned char)want[hi] & 0xC0) == 0x80;)
                hi++;
        if (hi - lo < 4 || hi - lo > 30 || memmem(want + lo, hi - lo, "\xEF\xBF\xBD", 3))
            continue;
        memcpy(stops[n], want + lo, hi - lo);
        stops[n++][hi - lo] = 0;
    }
    return n;
}

static void test_stop(void **state)
{
    size_t i;
    json_t *c;
    int n = 0, early = 0;
    mt_hf_tokenizer *tok = NULL;
    char loaded[1200] = "";
    json_array_foreach(json_object_get(expected, "chats"), i, c) {
        const char *want = json_string_value(json_object_get(c, "expected"));
        char dir[1200], stops[2][32];
        snprintf(dir, sizeof dir, "%s/%s", served_dir, json_string_value(json_object_get(c, "model")));
        mt_err err = { 0 };
        if (strcmp(dir, loaded)) {      /* a model's chats are adjacent: Gemma's 33 MB tokenizer.json once */
            mt_hf_tokenizer_free(tok);
            tok = NULL;
            if (mt_hf_tokenizer_load(dir, &tok, &err))
                fail_msg("%s: %s", dir, err.msg);
            snprintf(loaded, sizeof loaded, "%s", dir);
        }
        int ns = pick_stops(tok, c, stops);
        for (int s = 0; s < ns; s++) {
            const char *stop = stops[s];
            int k = stop_at(tok, json_object_get(c, "ids"), stop);
            assert_true(k > 0);
            size_t cut = (size_t)(strstr(want, stop) - want);
            long tokens[2] = { -1, -1 };
            for (int stream = 0; stream < 2; stream++) {
                json_t *body = chat_body(c, stream);
                json_object_set_new(body, "stop", json_pack("[s,s]", "never-in-this-text", stop));
                if (stream)
                    json_object_set_new(body, "stream_options", json_pack("{s:b}", "include_usage", 1));
                reply r = send_to(&srv, "/v1/chat/completions", body, NULL);
                assert_int_equal(r.status, 200);
                char got[4096];
                if (stream) {
                    streamed st;
                    parse_stream(r.body, 1, &st);
                    snprintf(got, sizeof got, "%s", st.text[0]);
                    assert_string_equal(st.finish[0], "stop");
                    assert_non_null(st.usage);
                    tokens[1] = (long)json_integer_value(json_object_get(st.usage, "completion_tokens"));
                    json_decref(st.usage);
                } else {
                    json_t *j = reply_json(&r);
                    snprintf(got, sizeof got, "%s", content_of(j, 0));
                    assert_string_equal(finish_of(j, 0), "stop");
                    tokens[0] = usage(j, "completion_tokens");
                    assert_int_equal(usage(j, "total_tokens"), usage(j, "prompt_tokens") + tokens[0]);
                    json_decref(j);
                }
                assert_int_equal(strlen(got), cut);
                assert_memory_equal(got, want, cut);
                reply_free(&r);
            }
            /* decoding ended at the id completing the stop string: the ids decoded, that one included */
            if (tokens[0] != k || tokens[1] != k)
                fail_msg("chat %zu, stop \"%s\": completion_tokens %ld (streamed %ld), the stop string is complete "
                         "after %d of the reference's %zu ids", i, stop, tokens[0], tokens[1], k,
                         json_array_size(json_object_get(c, "ids")));
            early += (size_t)k < json_array_size(json_object_get(c, "ids"));
            n++;
        }
    }
    mt_hf_tokenizer_free(tok);
    assert_true(n >= 6 && early >= 6);
    print_message("   %d stops (%d ended decoding before the reference's last id): text cut, finish_reason stop, "
                  "completion_tokens = the ids up to the stop string's end, plain and streamed\n", n, early);
}

static void test_errors(void **state)
{
    const char *chat = "/v1/chat/completions";
    expect_error(chat, json_pack("{s:s}", "model", "qwen"), 400, "invalid_field", "messages");
    expect_error(chat, json_pack("{s:s,s:[]}", "model", "qwen", "messages"), 400, "invalid_field", "messages");
    expect_error(chat, json_pack("{s:s,s:[{s:s,s:s}],s:[{s:s}]}", "model", "qwen", "messages", "role", "user",
                                 "content", "hi", "tools", "type", "function"), 400, "invalid_field", "tools");
    expect_error(chat, json_pack("{s:s,s:[{s:s,s:s}],s:i}", "model", "qwen", "messages", "role", "user", "content",
                                 "hi", "frobnicate", 1), 400, "invalid_field", "Unrecognized request argument");
    expect_error(chat, json_pack("{s:s,s:[{s:s,s:s}],s:i}", "model", "qwen", "messages", "role", "user", "content",
                                 "hi", "n", 99), 400, "invalid_field", "'n'");
    expect_error(chat, json_pack("{s:s,s:[{s:s,s:s}],s:f}", "model", "qwen", "messages", "role", "user", "content",
                                 "hi", "temperature", 1000.0), 400, "invalid_field", "temperature");
    expect_error(chat, json_pack("{s:s,s:[{s:s,s:s}]}", "model", "qwen", "messages", "role", "tool", "content",
                                 "x"), 400, "invalid_field", "tools and function calling");
    expect_error(chat, json_pack("{s:s,s:[{s:s,s:[{s:s}]}]}", "model", "qwen", "messages", "role", "user",
                                 "content", "type", "image_url"), 400, "invalid_field", "no images");
    expect_error(chat, json_pack("{s:s,s:[{s:s,s:s}]}", "model", "nope", "messages", "role", "user", "content", "hi"),
                 404, "model_not_found", "'nope'");
    expect_error(chat, json_pack("{s:s,s:[{s:s,s:s}]}", "model", "en-fr", "messages", "role", "user", "content",
                                 "hi"), 400, "invalid_field", "encoder-decoder");
    expect_error(chat, json_pack("{s:s,s:[{s:s,s:s}]}", "model", "llama", "messages", "role", "user", "content",
                                 "hi"), 400, "invalid_field", "no chat_template");
    expect_error(chat, json_pack("{s:s,s:[{s:s,s:s}],s:i}", "model", "qwen", "messages", "role", "user", "content",
                                 "hi", "max_tokens", 100000), 400, "invalid_field", "max_tokens");
    char *big = malloc(40001);
    for (int i = 0; i < 40000; i++)
        big[i] = "ab "[i % 3];
    big[40000] = 0;
    expect_error(chat, json_pack("{s:s,s:[{s:s,s:s}]}", "model", "qwen", "messages", "role", "user", "content", big),
                 413, "context_length_exceeded", "tokens");
    expect_error("/v1/completions", json_pack("{s:s,s:s}", "model", "llama", "prompt", big), 413,
                 "context_length_exceeded", "tokens");
    free(big);
    expect_error("/v1/completions", json_pack("{s:s,s:[i]}", "model", "llama", "prompt", 1), 400, "invalid_field",
                 "prompt");
    expect_error("/v1/completions", json_pack("{s:s,s:s,s:b}", "model", "llama", "prompt", "x", "echo", 1), 400,
                 "invalid_field", "echo");
    expect_error("/v1/nothing", json_object(), 404, "not_found", "no route");
}

/* Concurrent clients, plain and streamed, interleaved by the scheduler's
 * continuous batching: each reply still the reference's. */
typedef struct {
    int  k, bad;
    char why[256];
} client_arg;

static void *client(void *p)
{
    client_arg *a = p;
    json_t *chats = json_object_get(expected, "chats");
    size_t n = json_array_size(chats);
    for (size_t r = 0; r < n && !a->bad; r++) {
        json_t *c = json_array_get(chats, (r + (size_t)a->k) % n);
        int stream = (a->k + (int)r) % 2;
        reply rep = send_to(&srv, "/v1/chat/completions", chat_body(c, stream), NULL);
        const char *want = json_string_value(json_object_get(c, "expected"));
        json_t *j = stream ? NULL : reply_json(&rep);
        const char *got = NULL;
        char text[4096] = "";
        if (stream && rep.status == 200 && rep.body) {   /* the contents, without cmocka (a thread) */
            for (const char *q = rep.body; (q = strstr(q, "\"content\":\"")); q++) {
                json_t *piece = json_loads(q + 10, JSON_DISABLE_EOF_CHECK | JSON_DECODE_ANY, NULL);
                strncat(text, json_string_value(piece) ? json_string_value(piece) : "", sizeof text - strlen(text) - 1);
                json_decref(piece);
            }
            got = text;
        } else if (j) {
            got = content_of(j, 0);
        }
        if (rep.status != 200 || !got || strcmp(got, want)) {
            a->bad = 1;
            snprintf(a->why, sizeof a->why, "client %d, chat %zu: status %ld, \"%.60s\"", a->k, r, rep.status,
                     got ? got : "");
        }
        json_decref(j);
        reply_free(&rep);
    }
    return NULL;
}

static void test_concurrent(void **state)
{
    enum { N = 6 };
    pthread_t th[N];
    client_arg a[N];
    for (int i = 0; i < N; i++) {
        a[i] = (client_arg){ .k = i };
        assert_int_equal(pthread_create(&th[i], NULL, client, &a[i]), 0);
    }
    for (int i = 0; i < N; i++)
        pthread_join(th[i], NULL);
    for (int i = 0; i < N; i++)
        if (a[i].bad)
            fail_msg("%s", a[i].why);
    print_message("   %d clients x %zu chats at once, half streamed: every reply the reference's\n", N,
                  json_array_size(json_object_get(expected, "chats")));
}

/* ---- API keys and rate limits: servers of their own ------------------------------------ */

static void test_keys(void **state)
{
    char qwen[1100];
    snprintf(qwen, sizeof qwen, "qwen=%s/qwen", served_dir);
    server ks;
    const char *args[] = { "--model", qwen, "--api-key", "sk-right", "--req-limit", "3", NULL };
    assert_int_equal(server_start(&ks, args), 0);
    json_t *body = json_pack("{s:s,s:[{s:s,s:s}],s:i,s:i}", "model", "qwen", "messages", "role", "user", "content",
                             "hi", "max_tokens", 3, "temperature", 0);
    reply r = send_to(&ks, "/v1/chat/completions", json_incref(body), "Authorization: Bearer sk-wrong");
    json_t *j = expect_json(&r, 401);
    assert_string_equal(json_string_value(json_object_get(json_object_get(j, "error"), "code")), "invalid_api_key");
    json_decref(j);
    reply_free(&r);
    for (int i = 0; i < 3; i++) {
        r = send_to(&ks, "/v1/chat/completions", json_incref(body), "Authorization: Bearer sk-right");
        json_decref(expect_json(&r, 200));
        reply_free(&r);
    }
    r = send_to(&ks, "/v1/chat/completions", json_incref(body), "Authorization: Bearer sk-right");
    j = expect_json(&r, 429);
    char retry[32] = "";
    assert_true(header(&r, "Retry-After", retry, sizeof retry));
    json_t *e = json_object_get(j, "error");
    assert_string_equal(json_string_value(json_object_get(e, "code")), "rate_limit_exceeded");
    assert_string_equal(json_string_value(json_object_get(e, "type")), "rate_limit_error");
    json_decref(j);
    reply_free(&r);
    json_decref(body);
    assert_int_equal(server_stop(&ks), 0);
}

/* The official client, unmodified (tests/openai/client.mjs), against a server with a key. */
static void test_npm_client(void **state)
{
    char qwen[1100], llama[1100], zephyr[1100], cmd[4096];
    snprintf(qwen, sizeof qwen, "qwen=%s/qwen", served_dir);
    snprintf(llama, sizeof llama, "llama=%s/llama", served_dir);
    snprintf(zephyr, sizeof zephyr, "llama-chat=%s/llama-chat", served_dir);
    server ks;
    const char *args[] = { "--model", llama, "--model", qwen, "--model", zephyr, "--api-key", "sk-right", NULL };
    assert_int_equal(server_start(&ks, args), 0);
    snprintf(cmd, sizeof cmd, "node tests/openai/client.mjs %s/v1 sk-right %s/expected.json", ks.base, served_dir);
    int rc = system(cmd);
    assert_int_equal(server_stop(&ks), 0);
    assert_true(WIFEXITED(rc));
    assert_int_equal(WEXITSTATUS(rc), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_models),
        cmocka_unit_test(test_chat_ref),
        cmocka_unit_test(test_completion_ref),
        cmocka_unit_test(test_stream),
        cmocka_unit_test(test_seed),
        cmocka_unit_test(test_n_greedy),
        cmocka_unit_test(test_stop),
        cmocka_unit_test(test_errors),
        cmocka_unit_test(test_concurrent),
        cmocka_unit_test(test_keys),
        cmocka_unit_test(test_npm_client),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
