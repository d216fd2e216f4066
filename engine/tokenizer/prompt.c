/* prompt.c: translation prompts for decoder-only LMs (tokenizer.h, "Prompts").
 *
 * A prompt kind is a fixed rendering of what Hugging Face's
 * apply_chat_template(messages=[{"role": "user", "content": INSTRUCTION}],
 * add_generation_prompt=True) gives with one published template, written out
 * here by hand: no Jinja engine.  "auto" picks the kind from fingerprints of
 * the tokenizer's chat_template (markers, not the exact string), so a
 * template that differs in whitespace or in branches we never take is still
 * recognised, and one we cannot render exactly is refused by name.
 *
 * The rendered string is tokenized as HF does (split at added tokens, each
 * piece through the normalizer, pre-tokenizer and BPE), except that no
 * added token is split out of the user's text (hf_encode_span): text that
 * spells "<|im_end|>" or "</s>" stays text and cannot close the turn. */
#include "hf_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hf_unicode.h"
#include "util/check.h"
#include "util/strbuf.h"
#include "util/utf8.h"

enum { PK_ALMA, PK_CHATML, PK_QWEN3, PK_ZEPHYR, PK_LLAMA2, PK_RAW, PK_GEMMA, PK_TGEMMA, PK_COUNT };

static const char *const kind_name[PK_COUNT] = { "alma", "chatml", "qwen3", "zephyr", "llama2-chat", "raw",
                                                 "gemma", "translategemma" };

#define KIND_LIST "alma, chatml, qwen3, zephyr, llama2-chat, raw, gemma, translategemma"
#define QWEN25_SYSTEM "You are Qwen, created by Alibaba Cloud. You are a helpful assistant."
#define LANG_MAX 64

struct mt_prompt {
    const mt_hf_tokenizer *tok;
    int         kind;
    char       *system;       /* chatml: the default system message, or NULL   */
    const char *bos, *eos;    /* the tokens' strings (llama2-chat, zephyr)      */
    int32_t    *stop;         /* sorted, unique                                 */
    int         n_stop;
    char      **tg_code, **tg_name;   /* translategemma: its template's languages table */
    int         n_tg;
};

/* ---- template fingerprints ---------------------------------------------------- */

static int has(const char *s, const char *marker)
{
    return strstr(s, marker) != NULL;
}

/* The default system message of a ChatML template: the literal that follows
 * "<|im_start|>system" + a newline (written "\n" or as the escape "\\n")
 * inside one Jinja string, up to "<|im_end|>"; NULL when there is none.
 * Qwen2.5's is "You are Qwen, created by Alibaba Cloud. You are a helpful
 * assistant."; Qwen2's "You are a helpful assistant.".  Only the escapes
 * \n \t \\ \' \" are read; anything else means it is not a plain literal. */
static char *chatml_system(const char *tpl, int *nomem)
{
    static const char head[] = "<|im_start|>system";
    for (const char *p = strstr(tpl, head); p; p = strstr(p + 1, head)) {
        const char *q = p + sizeof head - 1;
        if (*q == '\n')
            q++;
        else if (q[0] == '\\' && q[1] == 'n')
            q += 2;
        else
            continue;
        const char *end = strstr(q, "<|im_end|>");
        if (!end || end == q)
            continue;
        mt_sbuf b = { 0 };
        int ok = 1;
        for (const char *r = q; ok && r < end; r++) {
            char c = *r;
            if (c == '\'' || c == '"' || c == '{' || c == '}')
                ok = 0;
            else if (c == '\\') {
                char x = *++r;
                c = x == 'n' ? '\n' : x == 't' ? '\t' : x == '\\' || x == '\'' || x == '"' ? x : 0;
                ok = c != 0 && r < end;
            }
            if (ok && mt_sb_add(&b, &c, 1)) {
                *nomem = 1;
                free(b.p);
                return NULL;
            }
        }
        if (ok && b.n && mt_utf8_valid(b.p, b.n))
            return b.p;
        free(b.p);
    }
    return NULL;
}

/* What a template we do not render looks like, for the message. */
static const char *family(const char *tpl)
{
    if (has(tpl, "<|start_header_id|>"))
        return "Llama 3 (<|start_header_id|>)";
    if (has(tpl, "<start_of_turn>"))
        return "Gemma 1/2 (<start_of_turn> without Gemma 3's first_user_prefix)";
    if (has(tpl, "[INST]"))
        return "Mistral-style [INST] without <<SYS>>";
    if (has(tpl, "<|end|>"))
        return "Phi-3 (<|user|> ... <|end|>)";
    return NULL;
}

/* The template as a short printable excerpt for messages (valid UTF-8). */
static void excerpt(const char *tpl, char *out, size_t cap)
{
    size_t o = 0, n = strlen(tpl);
    for (size_t i = 0; i < n && o + 8 < cap;) {
        uint32_t c;
        size_t k = mt_utf8_decode((const uint8_t *)tpl + i, n - i, &c);
        if (!k || c < 0x20 || c == 0x7F) {
            out[o++] = '\\';
            out[o++] = c == '\n' ? 'n' : c == '\t' ? 't' : '?';
            i += k ? k : 1;
            continue;
        }
        if (o + k + 8 >= cap)
            break;
        memcpy(out + o, tpl + i, k);
        o += k;
        i += k;
        if (o >= 60) {
            memcpy(out + o, "...", 3);
            o += 3;
            break;
        }
    }
    out[o] = '\0';
}

/* The kind of a chat_template (NULL: none -> alma), or -1 with err set. */
static int detect(const char *tpl, mt_err *err)
{
    if (!tpl)
        return PK_ALMA;
    char ex[128];
    excerpt(tpl, ex, sizeof ex);
    if (has(tpl, "<|im_start|>")) {
        if (has(tpl, "enable_thinking") && has(tpl, "</think>"))
            return PK_QWEN3;
        if (has(tpl, "<think>")) {
            mt_err_set(err, MT_ERR_UNSUPPORTED, "chat_template \"%s\" (%zu bytes) is a reasoning ChatML template "
                       "(<think> without enable_thinking): not rendered; name a prompt kind (" KIND_LIST ")", ex,
                       strlen(tpl));
            return -1;
        }
        return PK_CHATML;
    }
    if (has(tpl, "<|user|>") && has(tpl, "<|assistant|>") && has(tpl, "eos_token") && !has(tpl, "<|end|>"))
        return PK_ZEPHYR;
    if (has(tpl, "<start_of_turn>") && has(tpl, "source_lang_code") && has(tpl, "target_lang_code"))
        return PK_TGEMMA;
    if (has(tpl, "<start_of_turn>") && has(tpl, "first_user_prefix") && has(tpl, "bos_token"))
        return PK_GEMMA;
    if (has(tpl, "[INST]") && has(tpl, "<<SYS>>") && has(tpl, "bos_token")) {
        if (!has(tpl, "system_message = '") && !has(tpl, "system_message = \""))
            return PK_LLAMA2;
        mt_err_set(err, MT_ERR_UNSUPPORTED, "chat_template \"%s\" (%zu bytes) is a Llama 2 chat template with a "
                   "built-in default system prompt: not rendered; name a prompt kind (" KIND_LIST ")", ex, strlen(tpl));
        return -1;
    }
    const char *fam = family(tpl);
    mt_err_set(err, MT_ERR_UNSUPPORTED, "chat_template \"%s\" (%zu bytes%s%s) is not one we render (recognised: "
               "ChatML <|im_start|>, Qwen3 enable_thinking, Zephyr <|user|>, Llama 2 [INST] <<SYS>>, Gemma 3 "
               "<start_of_turn> first_user_prefix, TranslateGemma source_lang_code); name a prompt kind (" KIND_LIST
               ")", ex, strlen(tpl), fam ? ", looks like " : "", fam ? fam : "");
    return -1;
}

/* ---- stop ids ----------------------------------------------------------------- */

static int cmp_id(const void *a, const void *b)
{
    int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
    return (x > y) - (x < y);
}

static int add_stop(mt_prompt *p, int32_t id, size_t *cap)
{
    if (id < 0)
        return 0;
    if (mt_grow(&p->stop, cap, (size_t)p->n_stop + 1, sizeof *p->stop, 16))
        return -1;
    p->stop[p->n_stop++] = id;
    return 0;
}

/* What a token's string must hold for its decoding to hold the one-byte stop
 * string ss: the byte itself, its byte-fallback token "<0xNN>", its
 * byte-level character; into pre (NUL-terminated), their count.  -1 (decode
 * every token) for a longer stop string or a Replace decoder that could
 * write the byte. */
static int prefilter(const mt_hf_tokenizer *tok, const char *ss, char pre[3][8])
{
    if (strlen(ss) != 1)
        return -1;
    uint8_t c = (uint8_t)ss[0];
    for (int i = 0; i < tok->n_dec; i++)
        if (tok->dec[i].kind == HF_DEC_REPLACE && memchr(tok->dec[i].b, c, tok->dec[i].nb))
            return -1;
    uint32_t u = hf_byte_char[c];
    snprintf(pre[0], 8, "%c", c);
    snprintf(pre[1], 8, "<0x%02X>", c);
    if (u < 0x80)
        snprintf(pre[2], 8, "%c", (char)u);
    else
        snprintf(pre[2], 8, "%c%c", (char)(0xC0 | u >> 6), (char)(0x80 | (u & 63)));
    return 3;
}

static mt_status make_stops(mt_prompt *p, mt_err *err)
{
    const mt_hf_tokenizer *tok = p->tok;
    size_t cap = 0;
    int rc = add_stop(p, mt_hf_tokenizer_eos(tok), &cap);
    if (p->kind == PK_CHATML || p->kind == PK_QWEN3)
        rc = rc || add_stop(p, mt_hf_tokenizer_token_id(tok, "<|im_end|>"), &cap) ||
             add_stop(p, mt_hf_tokenizer_token_id(tok, "<|endoftext|>"), &cap);
    if (p->kind == PK_GEMMA || p->kind == PK_TGEMMA)      /* gemma-3-1b-it's eos is <eos>, its turns end <end_of_turn> */
        rc = rc || add_stop(p, mt_hf_tokenizer_token_id(tok, "<end_of_turn>"), &cap) ||
             add_stop(p, mt_hf_tokenizer_token_id(tok, "<eos>"), &cap);
    const char *ss = mt_prompt_stop_string(p);
    char pre[3][8];
    int npre = ss ? prefilter(tok, ss, pre) : 0;
    for (int32_t id = 0; !rc && ss && id < tok->n_ids; id++) {
        if (!tok->tok[id])
            continue;
        int maybe = npre < 0;
        for (int k = 0; !maybe && k < npre; k++)
            maybe = memmem(tok->tok[id], tok->tok_len[id], pre[k], strlen(pre[k])) != NULL;
        if (!maybe)
            continue;
        char *out = NULL;
        size_t n = 0;
        mt_status st = mt_hf_tokenizer_decode(tok, &id, 1, 0, &out, &n, err);
        if (st) {
            free(out);
            return st;
        }
        if (memmem(out, n, ss, strlen(ss)))
            rc = add_stop(p, id, &cap);
        free(out);
    }
    if (rc)
        return mt_err_set(err, MT_ERR_NOMEM, "prompt: out of memory");
    if (p->n_stop)
        qsort(p->stop, (size_t)p->n_stop, sizeof *p->stop, cmp_id);
    int k = 0;
    for (int i = 0; i < p->n_stop; i++)
        if (!k || p->stop[k - 1] != p->stop[i])
            p->stop[k++] = p->stop[i];
    p->n_stop = k;
    if (!k)
        return mt_err_set(err, MT_ERR_UNSUPPORTED, "prompt %s: the tokenizer has no eos token and the template no "
                          "end-of-turn token: nothing would end a translation", kind_name[p->kind]);
    return MT_OK;
}

/* ---- TranslateGemma's languages table ------------------------------------------ */
/* Its chat_template names each language code with a Jinja dict literal,
 * {%- set languages = { "de": "German", ... } -%}, and writes the name it
 * finds for a request's code.  The literal is read here, its string pairs
 * only (quotes ' or ", escapes \\ \' \" \n \t); anything else ends the
 * reading and no table is kept: the names given are used then. */

#define TG_MAX_LANGS 4096

static void skip_ws(const char **s)
{
    while (**s == ' ' || **s == '\t' || **s == '\n' || **s == '\r')
        (*s)++;
}

/* A Jinja string literal at *s into out (cap bytes, NUL-terminated); 0, or
 * -1 when it is not one or does not fit. */
static int jinja_string(const char **s, char *out, size_t cap)
{
    char q = **s;
    if (q != '"' && q != '\'')
        return -1;
    size_t n = 0;
    for (const char *r = *s + 1; *r; r++) {
        char c = *r;
        if (c == q) {
            out[n] = '\0';
            *s = r + 1;
            return 0;
        }
        if (c == '\\') {
            char x = *++r;
            c = x == 'n' ? '\n' : x == 't' ? '\t' : x == '\\' || x == '\'' || x == '"' ? x : 0;
            if (!c)
                return -1;
        }
        if (n + 1 >= cap)
            return -1;
        out[n++] = c;
    }
    return -1;
}

/* A table entry's string: 1..LANG_MAX bytes of UTF-8, no control character,
 * no added token spelled in it (as a language name given: check_lang). */
static int tg_usable(const mt_hf_tokenizer *tok, const char *s)
{
    size_t n = strlen(s);
    if (!n || n > LANG_MAX || !mt_utf8_valid(s, n))
        return 0;
    for (size_t i = 0; i < n; i++)
        if ((uint8_t)s[i] < 0x20 || s[i] == 0x7F)
            return 0;
    for (int i = 0; i < tok->n_added; i++)
        if (tok->added[i].len && memmem(s, n, tok->added[i].content, tok->added[i].len))
            return 0;
    return 1;
}

static void tg_drop(mt_prompt *p)
{
    for (int i = 0; i < p->n_tg; i++)
        free(p->tg_code[i]), free(p->tg_name[i]);
    free(p->tg_code);
    free(p->tg_name);
    p->tg_code = p->tg_name = NULL;
    p->n_tg = 0;
}

/* The table of tpl into p (none when tpl has no readable one); -1 out of memory. */
static int languages_table(mt_prompt *p, const char *tpl)
{
    const char *s = strstr(tpl, "set languages");
    if (!s)
        return 0;
    s += 13;
    skip_ws(&s);
    if (*s++ != '=')
        return 0;
    skip_ws(&s);
    if (*s++ != '{')
        return 0;
    size_t cap = 0, ncap = 0;
    char code[LANG_MAX * 4 + 1], name[LANG_MAX * 4 + 1];
    for (;;) {
        skip_ws(&s);
        if (*s == ',') {
            s++;
            continue;
        }
        if (*s == '}')
            return 0;
        if (p->n_tg >= TG_MAX_LANGS || jinja_string(&s, code, sizeof code))
            break;
        skip_ws(&s);
        if (*s++ != ':')
            break;
        skip_ws(&s);
        if (jinja_string(&s, name, sizeof name))
            break;
        if (!tg_usable(p->tok, code) || !tg_usable(p->tok, name))
            continue;
        if (mt_grow(&p->tg_code, &cap, (size_t)p->n_tg + 1, sizeof *p->tg_code, 64) ||
            mt_grow(&p->tg_name, &ncap, (size_t)p->n_tg + 1, sizeof *p->tg_name, 64))
            return tg_drop(p), -1;
        p->tg_code[p->n_tg] = strdup(code);
        p->tg_name[p->n_tg] = strdup(name);
        if (!p->tg_code[p->n_tg] || !p->tg_name[p->n_tg]) {
            p->n_tg++;
            return tg_drop(p), -1;
        }
        p->n_tg++;
    }
    tg_drop(p);                         /* not a literal we read: no table */
    return 0;
}

/* The table's name of code (its "_" read as "-", as the template does), or NULL. */
static const char *tg_name_of(const mt_prompt *p, const char *code)
{
    char c[LANG_MAX + 1];
    size_t n = strlen(code);
    if (n > LANG_MAX)
        return NULL;
    for (size_t i = 0; i <= n; i++)
        c[i] = code[i] == '_' ? '-' : code[i];
    for (int i = 0; i < p->n_tg; i++)
        if (!strcmp(p->tg_code[i], c))
            return p->tg_name[i];
    return NULL;
}

/* ---- new / free --------------------------------------------------------------- */

mt_status mt_prompt_new(const mt_hf_tokenizer *tok, const char *kind, mt_prompt **out, mt_err *err)
{
    if (!tok || !out)
        return mt_err_set(err, MT_ERR_INPUT, "mt_prompt_new: bad arguments");
    *out = NULL;
    const char *tpl = mt_hf_tokenizer_chat_template(tok);
    int k = -1;
    if (!kind || !strcmp(kind, "auto")) {
        if ((k = detect(tpl, err)) < 0)
            return err ? err->status : MT_ERR_UNSUPPORTED;
    } else {
        for (int i = 0; i < PK_COUNT; i++)
            if (!strcmp(kind, kind_name[i]))
                k = i;
        if (k < 0) {
            char ex[128];
            excerpt(kind, ex, sizeof ex);
            return mt_err_set(err, MT_ERR_INPUT, "unknown prompt kind \"%s\" (accepted: auto, " KIND_LIST ")", ex);
        }
    }
    mt_prompt *p = calloc(1, sizeof *p);
    if (!p)
        return mt_err_set(err, MT_ERR_NOMEM, "prompt: out of memory");
    p->tok = tok;
    p->kind = k;
    mt_status st = MT_OK;
    int32_t bos = mt_hf_tokenizer_bos(tok), eos = mt_hf_tokenizer_eos(tok);
    p->bos = bos >= 0 ? mt_hf_tokenizer_token(tok, bos) : NULL;
    p->eos = eos >= 0 ? mt_hf_tokenizer_token(tok, eos) : NULL;
    if ((k == PK_CHATML || k == PK_QWEN3) &&
        (mt_hf_tokenizer_token_id(tok, "<|im_start|>") < 0 || mt_hf_tokenizer_token_id(tok, "<|im_end|>") < 0))
        st = mt_err_set(err, MT_ERR_UNSUPPORTED, "prompt %s needs the tokens <|im_start|> and <|im_end|>, which the "
                        "tokenizer does not have", kind_name[k]);
    else if (k == PK_ZEPHYR && !p->eos)
        st = mt_err_set(err, MT_ERR_UNSUPPORTED, "prompt zephyr needs an eos_token (tokenizer_config.json)");
    else if ((k == PK_LLAMA2 || k == PK_GEMMA || k == PK_TGEMMA) && !p->bos)
        st = mt_err_set(err, MT_ERR_UNSUPPORTED, "prompt %s needs a bos_token (tokenizer_config.json)", kind_name[k]);
    else if ((k == PK_GEMMA || k == PK_TGEMMA) && (mt_hf_tokenizer_token_id(tok, "<start_of_turn>") < 0 ||
                                                   mt_hf_tokenizer_token_id(tok, "<end_of_turn>") < 0))
        st = mt_err_set(err, MT_ERR_UNSUPPORTED, "prompt %s needs the tokens <start_of_turn> and <end_of_turn>, "
                        "which the tokenizer does not have", kind_name[k]);
    else if (k == PK_TGEMMA && tpl && languages_table(p, tpl))
        st = mt_err_set(err, MT_ERR_NOMEM, "prompt: out of memory");
    if (!st && k == PK_CHATML) {
        /* the default system message of the tokenizer's own ChatML template;
         * Qwen2.5's when its template is not ChatML (a named kind) */
        int nomem = 0;
        if (tpl && has(tpl, "<|im_start|>") && !has(tpl, "enable_thinking"))
            p->system = chatml_system(tpl, &nomem);
        else if (!(p->system = strdup(QWEN25_SYSTEM)))
            nomem = 1;
        if (nomem)
            st = mt_err_set(err, MT_ERR_NOMEM, "prompt: out of memory");
    }
    if (!st)
        st = make_stops(p, err);
    if (st) {
        mt_prompt_free(p);
        return st;
    }
    *out = p;
    return MT_OK;
}

void mt_prompt_free(mt_prompt *p)
{
    if (!p)
        return;
    free(p->system);
    free(p->stop);
    for (int i = 0; i < p->n_tg; i++)
        free(p->tg_code[i]), free(p->tg_name[i]);
    free(p->tg_code);
    free(p->tg_name);
    free(p);
}

const char *mt_prompt_kind(const mt_prompt *p)
{
    return p ? kind_name[p->kind] : NULL;
}

const char *mt_prompt_system(const mt_prompt *p)
{
    return p ? p->system : NULL;
}

int mt_prompt_stop_ids(const mt_prompt *p, const int32_t **ids)
{
    if (ids)
        *ids = p ? p->stop : NULL;
    return p ? p->n_stop : 0;
}

const char *mt_prompt_stop_string(const mt_prompt *p)
{
    return p && p->kind == PK_ALMA ? "\n" : NULL;
}

/* ---- rendering ---------------------------------------------------------------- */

/* Python's str.isspace (Jinja's strip() runs in Python): White_Space and
 * U+001C..U+001F.  (JavaScript's trim differs: U+FEFF yes, U+0085 no.) */
static int py_space(uint32_t c)
{
    return (c >= 0x1C && c <= 0x1F) || (hfu_class(c) & HFU_WS);
}

/* The length of s[0..n) without its trailing characters for which ws() holds. */
static size_t rtrim(const char *s, size_t n, int (*ws)(uint32_t))
{
    while (n > 0) {
        size_t i = n - 1;
        while (i > 0 && ((uint8_t)s[i] & 0xC0) == 0x80)
            i--;
        uint32_t c;
        if (!mt_utf8_decode((const uint8_t *)s + i, n - i, &c) || !ws(c))
            break;
        n = i;
    }
    return n;
}

/* The length of s[0..n)'s leading characters for which ws() holds. */
static size_t ltrim_len(const char *s, size_t n, int (*ws)(uint32_t))
{
    size_t i = 0;
    while (i < n) {
        uint32_t c;
        size_t k = mt_utf8_decode((const uint8_t *)s + i, n - i, &c);
        if (!k || !ws(c))
            break;
        i += k;
    }
    return i;
}

static int white_space(uint32_t c)
{
    return (hfu_class(c) & HFU_WS) != 0;
}

/* A language name goes into the template's text: valid UTF-8, 1..64 bytes,
 * no control character, no added token spelled in it. */
static mt_status check_lang(const mt_prompt *p, const char *what, const char *s, mt_err *err)
{
    if (!s || !*s)
        return mt_err_set(err, MT_ERR_INPUT, "prompt: the %s is empty", what);
    size_t n = strlen(s);
    if (n > LANG_MAX)
        return mt_err_set(err, MT_ERR_INPUT, "prompt: the %s is %zu bytes (at most %d)", what, n,
                          LANG_MAX);
    if (!mt_utf8_valid(s, n))
        return mt_err_set(err, MT_ERR_INPUT, "prompt: the %s is not valid UTF-8", what);
    for (size_t i = 0; i < n; i++)
        if ((uint8_t)s[i] < 0x20 || s[i] == 0x7F)
            return mt_err_set(err, MT_ERR_INPUT, "prompt: the %s has a control character", what);
    const mt_hf_tokenizer *tok = p->tok;
    for (int i = 0; i < tok->n_added; i++)
        if (tok->added[i].len && memmem(s, n, tok->added[i].content, tok->added[i].len))
            return mt_err_set(err, MT_ERR_INPUT, "prompt: the %s holds the token %s", what,
                              tok->added[i].content);
    return MT_OK;
}

#define ADD(s) (rc = rc || mt_sb_add(b, (s), strlen(s)))

/* One translation's languages: names and codes (NULL when not given). */
typedef struct {
    const char *src, *tgt, *src_code, *tgt_code;
} langs;

/* fmt with {src}, {tgt}, {src_code}, {tgt_code} and {text} replaced, appended
 * to b; [*ka, *kb) the text. */
static int fill(mt_sbuf *b, const char *fmt, const langs *L, const char *text, size_t len, size_t *ka, size_t *kb)
{
    static const char *const key[] = { "{src}", "{tgt}", "{src_code}", "{tgt_code}" };
    const char *val[] = { L->src, L->tgt, L->src_code, L->tgt_code };
    int rc = 0;
    for (const char *f = fmt; !rc && *f;) {
        const char *o = strchr(f, '{');
        size_t lit = o ? (size_t)(o - f) : strlen(f);
        rc = mt_sb_add(b, f, lit);
        f += lit;
        if (!o)
            break;
        int k = 0;
        while (k < 4 && strncmp(f, key[k], strlen(key[k])))
            k++;
        if (k < 4) {
            ADD(val[k] ? val[k] : "");
            f += strlen(key[k]);
        } else if (!strncmp(f, "{text}", 6)) {
            *ka = b->n;
            rc = rc || mt_sb_add(b, len ? text : "", len);
            *kb = b->n;
            f += 6;
        } else {
            rc = rc || mt_sb_add(b, f, 1);
            f++;
        }
    }
    return rc;
}

/* b's end from start strip()ped of trailing whitespace (Python's), [*ka, *kb) kept inside. */
static void rstrip_from(mt_sbuf *b, size_t start, size_t *ka, size_t *kb)
{
    b->n = start + rtrim(b->p + start, b->n - start, py_space);
    *kb = *kb < b->n ? *kb : b->n;
    *ka = *ka < *kb ? *ka : *kb;
}

/* TranslateGemma: its table's names for the codes, the codes with "_" read
 * as "-", the text strip()ped (the template's content["text"] | trim). */
static int render_tgemma(const mt_prompt *p, const langs *in, const char *text, size_t len, mt_sbuf *b, size_t *ka,
                         size_t *kb)
{
    char sc[LANG_MAX + 1], tc[LANG_MAX + 1];
    snprintf(sc, sizeof sc, "%s", in->src_code);
    snprintf(tc, sizeof tc, "%s", in->tgt_code);
    for (char *c = sc; *c; c++)
        *c = *c == '_' ? '-' : *c;
    for (char *c = tc; *c; c++)
        *c = *c == '_' ? '-' : *c;
    const char *sn = tg_name_of(p, sc), *tn = tg_name_of(p, tc);
    langs L = { sn ? sn : in->src, tn ? tn : in->tgt, sc, tc };
    size_t lead = ltrim_len(text, len, py_space);
    text += lead, len -= lead;
    len = rtrim(text, len, py_space);
    int rc = 0;
    ADD(p->bos), ADD("<start_of_turn>user\n");
    rc = rc || fill(b, MT_PROMPT_TRANSLATEGEMMA, &L, text, len, ka, kb);
    ADD("<end_of_turn>\n<start_of_turn>model\n");
    return rc;
}

/* The prompt of one translation into b; [*ka, *kb) the user's text in it;
 * *special: whether the post-processor's tokens go around it. */
static int render(const mt_prompt *p, const langs *L, const char *text, size_t len, mt_sbuf *b, size_t *ka,
                  size_t *kb, int *special)
{
    int rc = 0;
    *special = p->kind == PK_ALMA || p->kind == PK_RAW;
    switch (p->kind) {
    case PK_ALMA:
        return fill(b, MT_PROMPT_ALMA, L, text, len, ka, kb);
    case PK_RAW:
        return fill(b, "{text}", L, text, len, ka, kb);
    case PK_TGEMMA:
        return render_tgemma(p, L, text, len, b, ka, kb);
    case PK_CHATML:
        if (p->system)
            ADD("<|im_start|>system\n"), ADD(p->system), ADD("<|im_end|>\n");
        /* fall through */
    case PK_QWEN3:
        ADD("<|im_start|>user\n");
        break;
    case PK_ZEPHYR:
        ADD("<|user|>\n");
        break;
    case PK_LLAMA2:
        ADD(p->bos), ADD("[INST] ");
        break;
    case PK_GEMMA:
        ADD(p->bos), ADD("<start_of_turn>user\n");
        break;
    }
    size_t start = b->n;
    rc = rc || fill(b, MT_PROMPT_INSTRUCTION, L, text, len, ka, kb);
    switch (p->kind) {
    case PK_CHATML:
        ADD("<|im_end|>\n<|im_start|>assistant\n");
        break;
    case PK_QWEN3:
        ADD("<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n");
        break;
    case PK_ZEPHYR:
        ADD(p->eos), ADD("\n<|assistant|>\n");
        break;
    case PK_LLAMA2:
    case PK_GEMMA:
        /* content.strip() (Llama 2), content | trim (Gemma): the instruction
         * never starts with a space; the end of the text (or of the
         * instruction, for a blank text) loses its own */
        if (!rc)
            rstrip_from(b, start, ka, kb);
        ADD(p->kind == PK_LLAMA2 ? " [/INST]" : "<end_of_turn>\n<start_of_turn>model\n");
        break;
    }
    return rc;
}

static mt_status check_args(const mt_prompt *p, const langs *L, const char *text, size_t len, mt_err *err)
{
    if (!p || (!text && len))
        return mt_err_set(err, MT_ERR_INPUT, "mt_prompt: bad arguments");
    size_t bad = mt_utf8_valid_prefix(text, len);
    if (bad < len)
        return mt_err_set(err, MT_ERR_INPUT, "input is not valid UTF-8 (byte 0x%02x at offset %zu)",
                          (uint8_t)text[bad], bad);
    mt_status st = MT_OK;
    if (p->kind != PK_RAW && ((st = check_lang(p, "source language name", L->src, err)) ||
                              (st = check_lang(p, "target language name", L->tgt, err))))
        return st;
    if (p->kind == PK_TGEMMA && (!L->src_code || !L->tgt_code))
        return mt_err_set(err, MT_ERR_INPUT, "prompt translategemma names the languages by code too: the codes are "
                          "needed (mt_prompt_encode_codes)");
    if (p->kind == PK_TGEMMA && ((st = check_lang(p, "source language code", L->src_code, err)) ||
                                 (st = check_lang(p, "target language code", L->tgt_code, err))))
        return st;
    return MT_OK;
}

/* The arguments checked and the prompt rendered into b (empty on failure):
 * the text's bytes [*ka, *kb) in it, special: render's flag. */
static mt_status render_checked(const mt_prompt *p, const langs *L, const char *text, size_t len, mt_sbuf *b,
                                size_t *ka, size_t *kb, int *special, mt_err *err)
{
    mt_status st = check_args(p, L, text, len, err);
    if (st)
        return st;
    if (render(p, L, text, len, b, ka, kb, special)) {
        free(b->p);
        *b = (mt_sbuf){ 0 };
        return mt_err_set(err, MT_ERR_NOMEM, "prompt: out of memory");
    }
    return MT_OK;
}

mt_status mt_prompt_render_codes(const mt_prompt *p, const char *src, const char *src_code, const char *tgt,
                                 const char *tgt_code, const char *text, size_t len, char **out, size_t *out_len,
                                 size_t *text_at, size_t *text_len, mt_err *err)
{
    if (!out)
        return mt_err_set(err, MT_ERR_INPUT, "mt_prompt_render: bad arguments");
    *out = NULL;
    mt_sbuf b = { 0 };
    size_t ka = 0, kb = 0;
    int special;
    langs L = { src, tgt, src_code, tgt_code };
    mt_status st = render_checked(p, &L, text, len, &b, &ka, &kb, &special, err);
    if (st == MT_OK && mt_sb_add(&b, "", 0))
        st = mt_err_set(err, MT_ERR_NOMEM, "prompt: out of memory");
    if (st != MT_OK) {
        free(b.p);
        return st;
    }
    *out = b.p;
    if (out_len)
        *out_len = b.n;
    if (text_at)
        *text_at = ka;
    if (text_len)
        *text_len = kb - ka;
    return MT_OK;
}

mt_status mt_prompt_render(const mt_prompt *p, const char *src, const char *tgt, const char *text, size_t len,
                           char **out, size_t *out_len, size_t *text_at, size_t *text_len, mt_err *err)
{
    return mt_prompt_render_codes(p, src, NULL, tgt, NULL, text, len, out, out_len, text_at, text_len, err);
}

mt_status mt_prompt_encode_codes(const mt_prompt *p, const char *src, const char *src_code, const char *tgt,
                                 const char *tgt_code, const char *text, size_t len, int32_t *ids, int max_ids,
                                 int *n_ids, mt_err *err)
{
    if (!n_ids || max_ids < 0 || (!ids && max_ids))
        return mt_err_set(err, MT_ERR_INPUT, "mt_prompt_encode: bad arguments");
    *n_ids = 0;
    mt_sbuf b = { 0 };
    size_t ka = 0, kb = 0;
    int special;
    langs L = { src, tgt, src_code, tgt_code };
    mt_status st = render_checked(p, &L, text, len, &b, &ka, &kb, &special, err);
    if (st)
        return st;
    st = hf_encode_span(p->tok, b.p ? b.p : "", b.n, ka, kb, special, ids, max_ids, n_ids, err);
    free(b.p);
    return st;
}

mt_status mt_prompt_encode(const mt_prompt *p, const char *src, const char *tgt, const char *text, size_t len,
                           int32_t *ids, int max_ids, int *n_ids, mt_err *err)
{
    return mt_prompt_encode_codes(p, src, NULL, tgt, NULL, text, len, ids, max_ids, n_ids, err);
}

int mt_prompt_needs_codes(const mt_prompt *p)
{
    return p && p->kind == PK_TGEMMA;
}

size_t mt_prompt_keep(const mt_prompt *p, const char *text, size_t len)
{
    if (!text)
        return 0;
    const char *ss = mt_prompt_stop_string(p);
    if (ss) {
        const char *hit = memmem(text, len, ss, strlen(ss));
        if (hit)
            len = (size_t)(hit - text);
    }
    return rtrim(text, len, white_space);
}

/* ---- chat: a list of messages (the OpenAI-compatible API) ------------------------ */
/* apply_chat_template(messages, add_generation_prompt=True) of the template
 * families above, written out by hand as the single-turn prompts are (and
 * checked the same way: tests/tokenizers/ref_chat_msgs.mjs).  Each message's
 * content is a span of the rendered string; no added token is split out of
 * it, as for the translation text: user text never closes a turn.  The
 * tokenizer keeps one span plain at a time (hf_encode_span), so a list where
 * more than one content spells an added token is refused by name. */

typedef struct {
    size_t a, b;
    int    msg;
} chat_span;

typedef struct {
    mt_sbuf    b;
    chat_span *sp;          /* [2 n + 1]: a qwen3 assistant turn has two (reasoning, content) */
    int        n_sp;
} chat_out;

static int chat_add(chat_out *o, const char *s, size_t n, int msg)
{
    chat_span *sp = &o->sp[o->n_sp++];
    sp->a = o->b.n;
    sp->msg = msg;
    int rc = mt_sb_add(&o->b, n ? s : "", n);
    sp->b = o->b.n;
    return rc;
}

#define CADD(s) (rc = rc || mt_sb_add(&o->b, (s), strlen(s)))

static int is_role(const mt_chat_msg *m, const char *r) { return !strcmp(m->role, r); }

/* s[0..n) without leading / trailing '\n' (Python's lstrip('\n'), rstrip('\n')). */
static void strip_nl(const char **s, size_t *n, int left, int right)
{
    while (left && *n && **s == '\n')
        (*s)++, (*n)--;
    while (right && *n && (*s)[*n - 1] == '\n')
        (*n)--;
}

/* Qwen3's assistant turn: '</think>' in the content splits it into the
 * reasoning (before the first '</think>', after the last '<think>') and
 * the answer (after the last '</think>'). */
static int qwen3_assistant(chat_out *o, const mt_chat_msg *m, int i, int after_query, int last)
{
    const char *c = m->content, *r = "";
    size_t n = m->len, nr = 0;
    const char *close = memmem(c, n, "</think>", 8);
    if (close) {
        r = c, nr = (size_t)(close - c);
        strip_nl(&r, &nr, 0, 1);
        for (const char *t; (t = memmem(r, nr, "<think>", 7));)
            nr -= (size_t)(t + 7 - r), r = t + 7;
        strip_nl(&r, &nr, 1, 0);
        for (const char *t; (t = memmem(c, n, "</think>", 8));)
            n -= (size_t)(t + 8 - c), c = t + 8;
        strip_nl(&c, &n, 1, 0);
    }
    int rc = 0;
    CADD("<|im_start|>assistant\n");
    if (after_query && (last || nr)) {
        strip_nl(&r, &nr, 1, 1);
        CADD("<think>\n");
        rc = rc || chat_add(o, r, nr, i);
        CADD("\n</think>\n\n");
        strip_nl(&c, &n, 1, 0);
    }
    rc = rc || chat_add(o, c, n, i);
    CADD("<|im_end|>\n");
    return rc;
}

static int starts_ends(const mt_chat_msg *m, const char *a, const char *b)
{
    size_t na = strlen(a), nb = strlen(b);
    return m->len >= na + nb && !memcmp(m->content, a, na) && !memcmp(m->content + m->len - nb, b, nb);
}

static int render_chatml(const mt_prompt *p, const mt_chat_msg *m, int n, chat_out *o)
{
    int rc = 0, i0 = 0, qwen3 = p->kind == PK_QWEN3;
    if (is_role(&m[0], "system")) {
        CADD("<|im_start|>system\n");
        rc = rc || chat_add(o, m[0].content, m[0].len, 0);
        CADD("<|im_end|>\n");
        i0 = 1;
    } else if (!qwen3 && p->system) {
        CADD("<|im_start|>system\n"), CADD(p->system), CADD("<|im_end|>\n");
    }
    int last_query = n - 1;             /* qwen3: the last user turn that is not a tool's response */
    for (int i = n - 1; i >= 0; i--)
        if (is_role(&m[i], "user") && !starts_ends(&m[i], "<tool_response>", "</tool_response>")) {
            last_query = i;
            break;
        }
    for (int i = i0; !rc && i < n; i++) {
        if (qwen3 && is_role(&m[i], "assistant")) {
            rc = qwen3_assistant(o, &m[i], i, i > last_query, i == n - 1);
            continue;
        }
        CADD("<|im_start|>"), CADD(m[i].role), CADD("\n");
        rc = rc || chat_add(o, m[i].content, m[i].len, i);
        CADD("<|im_end|>\n");
    }
    CADD(qwen3 ? "<|im_start|>assistant\n<think>\n\n</think>\n\n" : "<|im_start|>assistant\n");
    return rc;
}

static int render_zephyr(const mt_prompt *p, const mt_chat_msg *m, int n, chat_out *o)
{
    int rc = 0;
    for (int i = 0; !rc && i < n; i++) {
        CADD("<|"), CADD(m[i].role), CADD("|>\n");
        rc = rc || chat_add(o, m[i].content, m[i].len, i);
        CADD(p->eos), CADD("\n");
    }
    CADD("<|assistant|>\n");
    return rc;
}

/* Llama 2 chat: roles alternate user/assistant after an optional system
 * message, which goes into the first user turn; each content strip()ped. */
static mt_status render_llama2(const mt_prompt *p, const mt_chat_msg *m, int n, chat_out *o, mt_err *err)
{
    int i0 = is_role(&m[0], "system"), rc = 0;
    if (i0 == n || !is_role(&m[n - 1], "user"))
        return mt_err_set(err, MT_ERR_INPUT, "messages: the Llama 2 chat template (llama2-chat) answers a user "
                          "message: the last message must have role user");
    for (int i = i0; !rc && i < n; i++) {
        int user = (i - i0) % 2 == 0;
        if (!is_role(&m[i], user ? "user" : "assistant"))
            return mt_err_set(err, MT_ERR_INPUT, "messages[%d]: Conversation roles must alternate user/assistant/"
                              "user/assistant/... (the Llama 2 chat template; one system message may come first)", i);
        size_t start;
        CADD(user ? p->bos : " "), CADD(user ? "[INST] " : "");
        start = o->b.n;
        const char *c = m[i].content;
        size_t len = m[i].len;
        if (i == i0 && i0) {
            CADD("<<SYS>>\n");
            rc = rc || chat_add(o, m[0].content, m[0].len, 0);
            CADD("\n<</SYS>>\n\n");
        } else {
            size_t lead = ltrim_len(c, len, py_space);
            c += lead, len -= lead;
        }
        rc = rc || chat_add(o, c, len, i);
        if (rc)
            break;
        o->b.n = start + rtrim(o->b.p + start, o->b.n - start, py_space);
        for (int k = 0; k < o->n_sp; k++) {     /* the strip may have cut into the last spans */
            o->sp[k].b = o->sp[k].b < o->b.n ? o->sp[k].b : o->b.n;
            o->sp[k].a = o->sp[k].a < o->sp[k].b ? o->sp[k].a : o->sp[k].b;
        }
        CADD(user ? " [/INST]" : " "), CADD(user ? "" : p->eos);
    }
    return rc ? mt_err_set(err, MT_ERR_NOMEM, "prompt: out of memory") : MT_OK;
}

/* Gemma 3 (gemma-3-1b-it's template): bos; a first system message's
 * content, as it is, + "\n\n" opens the first turn; the turns alternate
 * from a user turn (an odd place: assistant as "model", or a system message
 * under its own role, which the template lets through); each content
 * trim()med (Python's strip); then the model's turn. */
static mt_status render_gemma(const mt_prompt *p, const mt_chat_msg *m, int n, chat_out *o, mt_err *err)
{
    int i0 = is_role(&m[0], "system"), rc = 0;
    CADD(p->bos);
    for (int i = i0; !rc && i < n; i++) {
        if (is_role(&m[i], "user") != ((i - i0) % 2 == 0))
            return mt_err_set(err, MT_ERR_INPUT, "messages[%d]: Conversation roles must alternate user/assistant/"
                              "user/assistant/... (Gemma's chat template; one system message may come first)", i);
        CADD("<start_of_turn>"), CADD(is_role(&m[i], "assistant") ? "model" : m[i].role), CADD("\n");
        if (i == i0 && i0) {
            rc = rc || chat_add(o, m[0].content, m[0].len, 0);
            CADD("\n\n");
        }
        const char *c = m[i].content;
        size_t lead = ltrim_len(c, m[i].len, py_space);
        c += lead;
        rc = rc || chat_add(o, c, rtrim(c, m[i].len - lead, py_space), i);
        CADD("<end_of_turn>\n");
    }
    CADD("<start_of_turn>model\n");
    return rc ? mt_err_set(err, MT_ERR_NOMEM, "prompt: out of memory") : MT_OK;
}

const char *mt_prompt_chat_refusal(const mt_prompt *p)
{
    if (!p)
        return "no prompt";
    if (p->kind == PK_ALMA || p->kind == PK_RAW)
        return "its tokenizer has no chat template we render (prompt kind alma / raw: a completion model); use "
               "/v1/completions";
    if (p->kind == PK_TGEMMA)
        return "its chat template is TranslateGemma's, which takes structured translation requests only (a content "
               "list with source_lang_code and target_lang_code), no chat; translate with POST /translate";
    return NULL;
}

/* Roles and contents checked, the messages rendered into o. */
static mt_status chat_render(const mt_prompt *p, const mt_chat_msg *m, int n, chat_out *o, mt_err *err)
{
    const char *no = mt_prompt_chat_refusal(p);
    if (no)
        return mt_err_set(err, MT_ERR_UNSUPPORTED, "%s", no);
    if (!m || n <= 0)
        return mt_err_set(err, MT_ERR_INPUT, "messages: at least one message is needed");
    for (int i = 0; i < n; i++) {
        if (!m[i].role || (!m[i].content && m[i].len))
            return mt_err_set(err, MT_ERR_INPUT, "messages[%d]: bad arguments", i);
        if (!is_role(&m[i], "system") && !is_role(&m[i], "user") && !is_role(&m[i], "assistant"))
            return mt_err_set(err, MT_ERR_INPUT, "messages[%d].role must be system, user or assistant", i);
        size_t bad = mt_utf8_valid_prefix(m[i].content, m[i].len);
        if (bad < m[i].len)
            return mt_err_set(err, MT_ERR_INPUT, "messages[%d].content is not valid UTF-8 (byte 0x%02x at offset "
                              "%zu)", i, (uint8_t)m[i].content[bad], bad);
    }
    if (!(o->sp = calloc((size_t)n * 2 + 1, sizeof *o->sp)))
        return mt_err_set(err, MT_ERR_NOMEM, "prompt: out of memory");
    if (p->kind == PK_LLAMA2)
        return render_llama2(p, m, n, o, err);
    if (p->kind == PK_GEMMA)
        return render_gemma(p, m, n, o, err);
    int rc = p->kind == PK_ZEPHYR ? render_zephyr(p, m, n, o) : render_chatml(p, m, n, o);
    return rc ? mt_err_set(err, MT_ERR_NOMEM, "prompt: out of memory") : MT_OK;
}

/* The one content span that spells an added token (*k, or -1 for none); -1
 * with err when two do. */
static mt_status chat_keep(const mt_prompt *p, const chat_out *o, int *k, mt_err *err)
{
    const mt_hf_tokenizer *tok = p->tok;
    *k = -1;
    for (int s = 0; s < o->n_sp; s++) {
        const char *c = o->b.p + o->sp[s].a;
        size_t n = o->sp[s].b - o->sp[s].a;
        for (int i = 0; i < tok->n_added; i++) {
            if (!tok->added[i].len || tok->added[i].blank || !memmem(c, n, tok->added[i].content, tok->added[i].len))
                continue;                       /* a blank one is split out anyway (hf_encode_span) */
            if (*k >= 0)
                return mt_err_set(err, MT_ERR_INPUT, "messages[%d] and messages[%d] both spell added tokens (%s): "
                                  "text is never read as a token here, and only one message may hold such text",
                                  o->sp[*k].msg, o->sp[s].msg, tok->added[i].content);
            *k = s;
            break;
        }
    }
    return MT_OK;
}

mt_status mt_prompt_chat_render(const mt_prompt *p, const mt_chat_msg *msgs, int n, char **out, size_t *out_len,
                                mt_err *err)
{
    if (!out)
        return mt_err_set(err, MT_ERR_INPUT, "mt_prompt_chat_render: bad arguments");
    *out = NULL;
    chat_out o = { 0 };
    mt_status st = chat_render(p, msgs, n, &o, err);
    if (st == MT_OK && mt_sb_add(&o.b, "", 0))
        st = mt_err_set(err, MT_ERR_NOMEM, "prompt: out of memory");
    free(o.sp);
    if (st != MT_OK) {
        free(o.b.p);
        return st;
    }
    *out = o.b.p;
    if (out_len)
        *out_len = o.b.n;
    return MT_OK;
}

mt_status mt_prompt_chat_encode(const mt_prompt *p, const mt_chat_msg *msgs, int n, int32_t *ids, int max_ids,
                                int *n_ids, mt_err *err)
{
    if (!n_ids || max_ids < 0 || (!ids && max_ids))
        return mt_err_set(err, MT_ERR_INPUT, "mt_prompt_chat_encode: bad arguments");
    *n_ids = 0;
    chat_out o = { 0 };
    int k = -1;
    mt_status st = chat_render(p, msgs, n, &o, err);
    if (st == MT_OK)
        st = chat_keep(p, &o, &k, err);
    if (st == MT_OK)
        st = hf_encode_span(p->tok, o.b.p ? o.b.p : "", o.b.n, k >= 0 ? o.sp[k].a : 0, k >= 0 ? o.sp[k].b : 0, 0,
                            ids, max_ids, n_ids, err);
    free(o.sp);
    free(o.b.p);
    return st;
}
