/* fuzz_openai: the OpenAI-compatible request bodies (server/api/openai_req.c)
 * and the chat renderings they feed (engine/tokenizer/prompt.c, mt_prompt_chat_*).
 *
 * Loaded once (LLVMFuzzerInitialize): the published Llama 2-format, Qwen3 and
 * Gemma 3 tokenizers (tests/fixtures/hf-tokenizers, `make hf-ref`) with the
 * published chat templates of tests/fixtures/chat-templates as their configs:
 * the five chat kinds (llama2-chat, zephyr, qwen3, chatml, gemma).
 *
 * Input: byte 0 picks the route (even: chat, odd: completions) and the kind
 * (byte 0 / 2 mod 8, mod 5); the rest is the body, parsed by jansson as the server
 * does (duplicate keys refused).  oai_parse: a refusal has a message (valid
 * UTF-8, NUL-terminated within its buffer); a body that passes has n in
 * 1..OAI_MAX_N, at most OAI_MAX_STOP non-empty stop strings, a model, max_tokens
 * >= 0, temperature and top_p in range, and (chat) 1..OAI_MAX_MESSAGES
 * messages with roles system/user/assistant and contents of their stated
 * length without NUL; (completions) a prompt of its length.  Its messages then
 * go through the kind's rendering and encoding: a refusal is MT_ERR_INPUT with
 * a message (or MT_ERR_TOO_LONG for the ids: the needed count, nothing written
 * past max_ids); the rendered string holds every content but llama2-chat's
 * and gemma's (strip()ped: their stripped middle) as a substring; ids are in
 * range; the encoding of the same list is the same twice.  Stop strings
 * (engine/tokenizer/stop.c): a body's stop strings watched in the ids of
 * its first content or prompt (at most 48 of them, by the kind's tokenizer),
 * fed one at a time: mt_stop_match fires first at the first prefix whose
 * decoded text (mt_hf_tokenizer_decode, special tokens skipped) holds one
 * (a stop string with U+FFFD left out: it is only found in decoded text). */
#include "fuzz_common.h"

#include <jansson.h>

#include "api/openai_req.h"
#include "tokenizer/tokenizer.h"

enum { N_KINDS = 5 };
static mt_hf_tokenizer *toks[N_KINDS];
static mt_prompt *prompts[N_KINDS];
static const char *const kinds[N_KINDS] = { "llama2-chat", "zephyr", "qwen3", "chatml", "gemma" };

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    static const char *const tok[N_KINDS] = { "llama2", "llama2", "qwen3", "qwen3", "gemma3" };
    static const char *const cfg[N_KINDS] = { "Llama-2-7b-chat-hf.json", "TinyLlama-1.1B-Chat-v1.0.json",
                                              "Qwen3-0.6B.json", "Qwen2.5-0.5B-Instruct.json", "gemma-3-1b-it.json" };
    for (int i = 0; i < N_KINDS; i++) {
        char rel[256], path[4096];
        size_t nj, nc;
        snprintf(rel, sizeof rel, "tests/fixtures/hf-tokenizers/%s/tokenizer.json", tok[i]);
        uint8_t *json = fuzz_slurp(fuzz_path(path, sizeof path, rel), &nj);
        snprintf(rel, sizeof rel, "tests/fixtures/chat-templates/%s", cfg[i]);
        uint8_t *c = fuzz_slurp(fuzz_path(path, sizeof path, rel), &nc);
        mt_err err = { 0 };
        if (!json || !c || mt_hf_tokenizer_load_mem((char *)json, nj, (char *)c, nc, cfg[i], &toks[i], &err) ||
            mt_prompt_new(toks[i], "auto", &prompts[i], &err) || strcmp(mt_prompt_kind(prompts[i]), kinds[i])) {
            fprintf(stderr, "fuzz setup: %s: %s (make hf-ref copies the files)\n", cfg[i], err.msg);
            abort();
        }
        free(json);
        free(c);
    }
    return 0;
}

static void chat(int k, const oai_req *r)
{
    const mt_prompt *p = prompts[k];
    char *out = NULL;
    size_t len = 0;
    mt_err err = { 0 };
    mt_status st = mt_prompt_chat_render(p, r->msgs, r->n_msgs, &out, &len, &err);
    if (st) {
        FUZZ_CHECK(st == MT_ERR_INPUT && !out && err.msg[0] && fuzz_utf8_valid(err.msg, strlen(err.msg)));
        return;
    }
    FUZZ_CHECK(out && strlen(out) == len && fuzz_utf8_valid(out, len));
    for (int i = 0; i < r->n_msgs; i++) {
        if (k == 4 && r->n_msgs == 1 && !strcmp(r->msgs[0].role, "system"))
            continue;                           /* Gemma drops a system message no turn follows */
        if (k == 0 || k == 4) {                 /* strip()ped: the content's middle */
            size_t a = 0, b = r->msgs[i].len;
            while (a < b && strchr(" \t\n\r\v\f", r->msgs[i].content[a]))
                a++;
            while (b > a && strchr(" \t\n\r\v\f", r->msgs[i].content[b - 1]))
                b--;
            /* Python's strip takes more than ASCII blanks: check the ASCII-trimmed middle
             * only when it starts and ends with ASCII letters (then nothing else went) */
            const char *c = r->msgs[i].content;
            int plain = b > a && ((c[a] | 32) >= 'a' && (c[a] | 32) <= 'z') && ((c[b - 1] | 32) >= 'a' &&
                                                                               (c[b - 1] | 32) <= 'z');
            FUZZ_CHECK(!plain || memmem(out, len, c + a, b - a) != NULL);
            continue;
        }
        /* qwen3 rewrites assistant turns holding </think> */
        if (k == 2 && !strcmp(r->msgs[i].role, "assistant") && memmem(r->msgs[i].content, r->msgs[i].len, "</think>", 8))
            continue;
        FUZZ_CHECK(memmem(out, len, r->msgs[i].content, r->msgs[i].len) != NULL || r->msgs[i].len == 0 ||
                   (k == 2 && !strcmp(r->msgs[i].role, "assistant")));      /* lstrip('\n') of the last turn */
    }
    free(out);
    static int32_t ids[2][4096];
    int n = -1, n2 = -1, cap = (int)(len % 3 ? 4096 : 16);
    st = mt_prompt_chat_encode(p, r->msgs, r->n_msgs, ids[0], cap, &n, &err);
    if (st == MT_ERR_INPUT) {               /* two contents spelling added tokens */
        FUZZ_CHECK(strstr(err.msg, "both spell added tokens") != NULL);
        return;
    }
    if (st == MT_ERR_TOO_LONG) {
        FUZZ_CHECK(n > cap);
        return;
    }
    FUZZ_CHECK(st == MT_OK && n >= 1 && n <= cap);
    for (int i = 0; i < n; i++)
        FUZZ_CHECK(ids[0][i] >= 0 && ids[0][i] < mt_hf_tokenizer_vocab_size(toks[k]));
    FUZZ_CHECK(mt_prompt_chat_encode(p, r->msgs, r->n_msgs, ids[1], cap, &n2, &err) == MT_OK && n2 == n &&
               !memcmp(ids[0], ids[1], sizeof(int32_t) * (size_t)n));
}

/* The body's stop strings against the decoded prefixes of text's ids. */
static void stops(int k, const oai_req *r, const char *text, size_t len)
{
    const mt_hf_tokenizer *tok = toks[k];
    for (int i = 0; i < r->n_stop; i++)
        if (memmem(r->stop[i], strlen(r->stop[i]), "\xEF\xBF\xBD", 3))
            return;
    static int32_t ids[4096];
    int n = 0;
    mt_err err = { 0 };
    if (mt_hf_tokenizer_encode(tok, text, len, 0, ids, 4096, &n, &err) != MT_OK)
        return;
    if (n > 48)                         /* the first 48 ids: ids all the same */
        n = 48;
    mt_stop_match *m = NULL;
    FUZZ_CHECK(mt_stop_match_new(tok, r->stop, r->n_stop, &m, &err) == MT_OK);
    int want = 0, got = 0;
    for (int j = 1; j <= n && !want; j++) {
        char *t = NULL;
        size_t tl = 0;
        FUZZ_CHECK(mt_hf_tokenizer_decode(tok, ids, j, 1, &t, &tl, &err) == MT_OK);
        for (int i = 0; i < r->n_stop && !want; i++)
            if (memmem(t, tl, r->stop[i], strlen(r->stop[i])))
                want = j;
        free(t);
    }
    for (int j = 1; j <= n && !got; j++)
        if (mt_stop_match_feed(m, ids, j))
            got = j;
    FUZZ_CHECK(got == want);
    mt_stop_match_free(m);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    int is_chat = !(data[0] & 1), k = ((data[0] >> 1) & 7) % N_KINDS;
    json_error_t je;
    json_t *body = json_loadb((const char *)data + 1, size - 1, JSON_REJECT_DUPLICATES | JSON_DECODE_ANY, &je);
    if (!body)
        return 0;
    oai_req r;
    char msg[400];
    const char *param = NULL;
    memset(msg, 'x', sizeof msg);
    if (oai_parse(body, is_chat, &r, msg, sizeof msg, &param)) {
        FUZZ_CHECK(memchr(msg, 0, sizeof msg) && msg[0] && fuzz_utf8_valid(msg, strlen(msg)));
    } else {
        FUZZ_CHECK(r.model && r.n >= 1 && r.n <= OAI_MAX_N && r.n_stop >= 0 && r.n_stop <= OAI_MAX_STOP);
        FUZZ_CHECK(r.max_tokens >= 0 && r.temperature >= 0 && r.top_p > 0 && r.top_p <= 1);
        FUZZ_CHECK(!r.include_usage || r.stream);
        for (int i = 0; i < r.n_stop; i++)
            FUZZ_CHECK(r.stop[i] && r.stop[i][0] && strlen(r.stop[i]) <= OAI_MAX_STOP_LEN);
        if (is_chat) {
            FUZZ_CHECK(r.n_msgs >= 1 && r.n_msgs <= OAI_MAX_MESSAGES);
            for (int i = 0; i < r.n_msgs; i++) {
                FUZZ_CHECK(!strcmp(r.msgs[i].role, "system") || !strcmp(r.msgs[i].role, "user") ||
                           !strcmp(r.msgs[i].role, "assistant"));
                FUZZ_CHECK(strlen(r.msgs[i].content) == r.msgs[i].len);
            }
            chat(k, &r);
            if (r.n_stop)
                stops(k, &r, r.msgs[0].content, r.msgs[0].len);
        } else {
            FUZZ_CHECK(r.prompt && strlen(r.prompt) == r.prompt_len);
            if (r.n_stop)
                stops(k, &r, r.prompt, r.prompt_len);
        }
    }
    oai_req_free(&r);
    json_decref(body);
    return 0;
}
