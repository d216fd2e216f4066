/* hf_load.c: read and check a tokenizer.json (BPE) and its
 * tokenizer_config.json into an mt_hf_tokenizer (tokenizer.h, hf_internal.h).
 *
 * Every part of the file is checked before use: unknown component types and
 * options that change the output are refused by name (MT_ERR_UNSUPPORTED),
 * wrong types, ids and merges of tokens not in the vocabulary are
 * MT_ERR_FORMAT.  Keys we do not know in a component are refused too: a
 * future option silently ignored would give other ids than the reference. */
#include "hf_internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "hf_split.h"
#include "hf_unicode.h"
#include "util/check.h"
#include "util/strbuf.h"
#include "util/utf8.h"

#define MAX_ID (1 << 24)        /* sanity bound on token ids */

/* ---- the string pool ---------------------------------------------------------- */

struct hf_chunk {
    struct hf_chunk *next;
    size_t n, cap;
    char   p[];
};

const char *hf_strdup(mt_hf_tokenizer *tok, const char *s, size_t n)
{
    struct hf_chunk *c = tok->pool;
    if (!c || c->cap - c->n < n + 1) {
        size_t cap = n + 1 > (1u << 20) ? n + 1 : (1u << 20);
        c = malloc(sizeof *c + cap);
        if (!c)
            return NULL;
        c->next = tok->pool;
        c->n = 0;
        c->cap = cap;
        tok->pool = c;
    }
    char *d = c->p + c->n;
    memcpy(d, s, n);
    d[n] = '\0';
    c->n += n + 1;
    return d;
}

/* GPT-2's bytes_to_unicode: printable Latin-1 bytes stand for themselves,
 * the others (controls, space, 0x7F-0xA0, 0xAD) for U+0100 onwards in order. */
const uint16_t hf_byte_char[256] = {
    0x100, 0x101, 0x102, 0x103, 0x104, 0x105, 0x106, 0x107, 0x108, 0x109, 0x10A, 0x10B, 0x10C, 0x10D, 0x10E, 0x10F,
    0x110, 0x111, 0x112, 0x113, 0x114, 0x115, 0x116, 0x117, 0x118, 0x119, 0x11A, 0x11B, 0x11C, 0x11D, 0x11E, 0x11F,
    0x120, '!', '"', '#', '$', '%', '&', '\'', '(', ')', '*', '+', ',', '-', '.', '/',
    '0', '1', '2', '3', '4', '5', '6', '7', '8', '9', ':', ';', '<', '=', '>', '?',
    '@', 'A', 'B', 'C', 'D', 'E', 'F', 'G', 'H', 'I', 'J', 'K', 'L', 'M', 'N', 'O',
    'P', 'Q', 'R', 'S', 'T', 'U', 'V', 'W', 'X', 'Y', 'Z', '[', '\\', ']', '^', '_',
    '`', 'a', 'b', 'c', 'd', 'e', 'f', 'g', 'h', 'i', 'j', 'k', 'l', 'm', 'n', 'o',
    'p', 'q', 'r', 's', 't', 'u', 'v', 'w', 'x', 'y', 'z', '{', '|', '}', '~', 0x121,
    0x122, 0x123, 0x124, 0x125, 0x126, 0x127, 0x128, 0x129, 0x12A, 0x12B, 0x12C, 0x12D, 0x12E, 0x12F, 0x130, 0x131,
    0x132, 0x133, 0x134, 0x135, 0x136, 0x137, 0x138, 0x139, 0x13A, 0x13B, 0x13C, 0x13D, 0x13E, 0x13F, 0x140, 0x141,
    0x142, 0xA1, 0xA2, 0xA3, 0xA4, 0xA5, 0xA6, 0xA7, 0xA8, 0xA9, 0xAA, 0xAB, 0xAC, 0x143, 0xAE, 0xAF,
    0xB0, 0xB1, 0xB2, 0xB3, 0xB4, 0xB5, 0xB6, 0xB7, 0xB8, 0xB9, 0xBA, 0xBB, 0xBC, 0xBD, 0xBE, 0xBF,
    0xC0, 0xC1, 0xC2, 0xC3, 0xC4, 0xC5, 0xC6, 0xC7, 0xC8, 0xC9, 0xCA, 0xCB, 0xCC, 0xCD, 0xCE, 0xCF,
    0xD0, 0xD1, 0xD2, 0xD3, 0xD4, 0xD5, 0xD6, 0xD7, 0xD8, 0xD9, 0xDA, 0xDB, 0xDC, 0xDD, 0xDE, 0xDF,
    0xE0, 0xE1, 0xE2, 0xE3, 0xE4, 0xE5, 0xE6, 0xE7, 0xE8, 0xE9, 0xEA, 0xEB, 0xEC, 0xED, 0xEE, 0xEF,
    0xF0, 0xF1, 0xF2, 0xF3, 0xF4, 0xF5, 0xF6, 0xF7, 0xF8, 0xF9, 0xFA, 0xFB, 0xFC, 0xFD, 0xFE, 0xFF,
};

/* ---- small JSON helpers ------------------------------------------------------- */

typedef struct {
    mt_hf_tokenizer *tok;
    const char      *name;      /* the file, in messages */
    mt_err          *err;
} ctx;

/* A printable excerpt of a JSON string for messages. */
#define Q(s) mt_utf8_clip((s), strlen(s), 64), (s)

static mt_status fmt(ctx *c, const char *what, const char *why)
{
    return mt_err_set(c->err, MT_ERR_FORMAT, "%s: %s: %s", c->name, what, why);
}

/* Refuses keys of obj not in allowed (NULL-terminated), by name. */
static mt_status only_keys(ctx *c, json_t *obj, const char *what, const char *const *allowed)
{
    const char *k;
    json_t *v;
    json_object_foreach(obj, k, v) {
        int ok = 0;
        for (const char *const *a = allowed; *a; a++)
            ok |= strcmp(*a, k) == 0;
        if (!ok)
            return mt_err_set(c->err, MT_ERR_UNSUPPORTED, "%s: %s: option \"%.*s\" is not supported", c->name, what,
                              Q(k));
    }
    return MT_OK;
}

/* obj[key] as a string (required).  Sets *s (pool copy) and *n. */
static mt_status get_str(ctx *c, json_t *obj, const char *key, const char *what, const char **s, size_t *n)
{
    json_t *v = json_object_get(obj, key);
    char buf[128];
    if (!json_is_string(v)) {
        snprintf(buf, sizeof buf, "\"%s\" must be a string", key);
        return fmt(c, what, buf);
    }
    *n = json_string_length(v);
    if (!(*s = hf_strdup(c->tok, json_string_value(v), *n)))
        return mt_err_set(c->err, MT_ERR_NOMEM, "%s: out of memory", c->name);
    return MT_OK;
}

/* obj[key] as a bool: absent or null -> def. */
static mt_status get_bool(ctx *c, json_t *obj, const char *key, const char *what, int def, int *out)
{
    json_t *v = json_object_get(obj, key);
    char buf[128];
    if (!v || json_is_null(v)) {
        *out = def;
        return MT_OK;
    }
    if (!json_is_boolean(v)) {
        snprintf(buf, sizeof buf, "\"%s\" must be true or false", key);
        return fmt(c, what, buf);
    }
    *out = json_is_true(v);
    return MT_OK;
}

static const char *type_of(json_t *obj)
{
    return json_string_value(json_object_get(obj, "type"));
}

/* A component: an object with a string "type". */
static mt_status component(ctx *c, json_t *obj, const char *what, const char **type)
{
    if (!json_is_object(obj))
        return fmt(c, what, "not an object");
    if (!(*type = type_of(obj)))
        return fmt(c, what, "\"type\" must be a string");
    return MT_OK;
}

static mt_status unsupported(ctx *c, const char *what, const char *type, const char *supported)
{
    return mt_err_set(c->err, MT_ERR_UNSUPPORTED, "%s: %s type \"%.*s\" is not supported (only %s)", c->name, what,
                      Q(type), supported);
}

/* A pattern {"String": s}; a Regex is refused. */
static mt_status string_pattern(ctx *c, json_t *obj, const char *what, const char **s, size_t *n)
{
    json_t *p = json_object_get(obj, "pattern");
    if (!json_is_object(p))
        return fmt(c, what, "\"pattern\" must be an object");
    if (json_object_get(p, "Regex"))
        return mt_err_set(c->err, MT_ERR_UNSUPPORTED, "%s: %s: a Regex pattern is not supported (only String)", c->name,
                          what);
    if (json_object_size(p) != 1)
        return fmt(c, what, "\"pattern\" must be {\"String\": ...}");
    mt_status st = get_str(c, p, "String", what, s, n);
    if (st)
        return st;
    if (!*n)
        return fmt(c, what, "empty pattern");
    return MT_OK;
}

/* ---- model ---------------------------------------------------------------------- */

static hf_merge *merge_slot(const mt_hf_tokenizer *tok, uint64_t key)
{
    uint64_t h = key * 0x9E3779B97F4A7C15ull;
    size_t i = (size_t)(h ^ (h >> 31)) & tok->merge_mask;
    for (;; i = (i + 1) & tok->merge_mask) {
        hf_merge *m = &tok->merge[i];
        if (m->rank < 0 || m->key == key)
            return m;
    }
}

/* One merge "a b" or ["a", "b"] -> its two tokens. */
static mt_status merge_pair(ctx *c, json_t *m, size_t idx, const char **a, size_t *na, const char **b, size_t *nb)
{
    char buf[96];
    if (json_is_string(m)) {
        const char *s = json_string_value(m), *sp = memchr(s, ' ', json_string_length(m));
        if (!sp || memchr(sp + 1, ' ', json_string_length(m) - (size_t)(sp + 1 - s))) {
            snprintf(buf, sizeof buf, "merge %zu", idx);
            return fmt(c, buf, "not two tokens separated by one space");
        }
        *a = s;
        *na = (size_t)(sp - s);
        *b = sp + 1;
        *nb = json_string_length(m) - *na - 1;
        return MT_OK;
    }
    if (json_is_array(m) && json_array_size(m) == 2 && json_is_string(json_array_get(m, 0)) &&
        json_is_string(json_array_get(m, 1))) {
        *a = json_string_value(json_array_get(m, 0));
        *na = json_string_length(json_array_get(m, 0));
        *b = json_string_value(json_array_get(m, 1));
        *nb = json_string_length(json_array_get(m, 1));
        return MT_OK;
    }
    snprintf(buf, sizeof buf, "merge %zu", idx);
    return fmt(c, buf, "neither \"a b\" nor [\"a\", \"b\"]");
}

/* model's keys and options: only what the BPE model here does. */
static mt_status check_model(ctx *c, json_t *model)
{
    static const char *const keys[] = { "type", "dropout", "unk_token", "continuing_subword_prefix",
                                        "end_of_word_suffix", "fuse_unk", "byte_fallback", "ignore_merges",
                                        "vocab", "merges", NULL };
    mt_hf_tokenizer *tok = c->tok;
    const char *type;
    json_t *v;
    mt_status st;
    if ((st = component(c, model, "model", &type)))
        return st;
    if (strcmp(type, "BPE"))
        return unsupported(c, "model", type, "BPE");
    if ((st = only_keys(c, model, "model BPE", keys)))
        return st;
    v = json_object_get(model, "dropout");
    if (v && !json_is_null(v))
        return mt_err_set(c->err, MT_ERR_UNSUPPORTED, "%s: model BPE: dropout is not supported", c->name);
    static const char *const affixes[] = { "continuing_subword_prefix", "end_of_word_suffix" };
    for (int i = 0; i < 2; i++) {
        v = json_object_get(model, affixes[i]);
        if (v && !json_is_null(v) && !(json_is_string(v) && json_string_length(v) == 0))
            return mt_err_set(c->err, MT_ERR_UNSUPPORTED, "%s: model BPE: %s is not supported", c->name, affixes[i]);
    }
    if ((st = get_bool(c, model, "fuse_unk", "model", 0, &tok->fuse_unk)) ||
        (st = get_bool(c, model, "byte_fallback", "model", 0, &tok->byte_fallback)) ||
        (st = get_bool(c, model, "ignore_merges", "model", 0, &tok->ignore_merges)))
        return st;
    return MT_OK;
}

/* model.vocab (a non-empty object) into tok->vocab, and tok->n_ids. */
static mt_status load_vocab(ctx *c, json_t *vocab)
{
    mt_hf_tokenizer *tok = c->tok;
    const char *k;
    json_t *v;
    size_t kn;
    int32_t max_id = -1;
    json_object_keylen_foreach(vocab, k, kn, v) {
        json_int_t id = json_is_integer(v) ? json_integer_value(v) : -1;
        if (id < 0 || id >= MAX_ID || kn > UINT32_MAX / 2) {
            char buf[160];
            snprintf(buf, sizeof buf, "entry \"%.*s\" is not an id in [0, %d)", mt_utf8_clip(k, kn, 64), k, MAX_ID);
            return fmt(c, "model.vocab", buf);
        }
        if (id > max_id)
            max_id = (int32_t)id;
    }
    tok->n_ids = max_id + 1;
    if (mt_smap_init(&tok->vocab, json_object_size(vocab)))
        return mt_err_set(c->err, MT_ERR_NOMEM, "%s: out of memory", c->name);
    /* the id arrays are sized once the added tokens are known: keep ids here */
    json_object_keylen_foreach(vocab, k, kn, v) {
        const char *s = hf_strdup(tok, k, kn);
        if (!s)
            return mt_err_set(c->err, MT_ERR_NOMEM, "%s: out of memory", c->name);
        mt_smap_ent *e = mt_smap_slot(&tok->vocab, s, kn);
        *e = (mt_smap_ent){ s, (uint32_t)kn, (int32_t)json_integer_value(v) };
    }
    return MT_OK;
}

/* model.merges (an array): (id a, id b) -> (rank, id of a + b); a later
 * equal pair wins, as in HF. */
static mt_status load_merges(ctx *c, json_t *merges)
{
    mt_hf_tokenizer *tok = c->tok;
    size_t nm = json_array_size(merges), cap = 16;
    while (cap < nm * 2 + 2)
        cap *= 2;
    tok->merge = malloc(cap * sizeof *tok->merge);
    if (!tok->merge)
        return mt_err_set(c->err, MT_ERR_NOMEM, "%s: out of memory", c->name);
    tok->merge_mask = cap - 1;
    for (size_t i = 0; i < cap; i++)
        tok->merge[i].rank = -1;
    if (nm >= (size_t)MAX_ID)
        return fmt(c, "model.merges", "too many merges");
    mt_status st = MT_OK;
    char *cat = NULL;
    size_t cat_cap = 0;
    for (size_t i = 0; i < nm; i++) {
        const char *a = "", *b = "";
        size_t na = 0, nb = 0;
        if ((st = merge_pair(c, json_array_get(merges, i), i, &a, &na, &b, &nb)))
            goto done;
        if (mt_grow(&cat, &cat_cap, na + nb + 1, 1, 64)) {
            st = mt_err_set(c->err, MT_ERR_NOMEM, "%s: out of memory", c->name);
            goto done;
        }
        memcpy(cat, a, na);
        memcpy(cat + na, b, nb);
        int32_t ia = mt_smap_get(&tok->vocab, a, na), ib = mt_smap_get(&tok->vocab, b, nb),
                ic = mt_smap_get(&tok->vocab, cat, na + nb);
        if (ia < 0 || ib < 0 || ic < 0) {
            char buf[96];
            snprintf(buf, sizeof buf, "merge %zu", i);
            st = mt_err_set(c->err, MT_ERR_FORMAT, "%s: %s: token \"%.*s\" is not in the vocabulary", c->name, buf,
                            ia < 0 ? mt_utf8_clip(a, na, 64) : ib < 0 ? mt_utf8_clip(b, nb, 64) : 0,
                            ia < 0 ? a : ib < 0 ? b : "");
            if (ia >= 0 && ib >= 0)
                st = mt_err_set(c->err, MT_ERR_FORMAT, "%s: %s: the merged token is not in the vocabulary", c->name,
                                buf);
            goto done;
        }
        hf_merge *m = merge_slot(tok, (uint64_t)ia << 32 | (uint32_t)ib);
        *m = (hf_merge){ (uint64_t)ia << 32 | (uint32_t)ib, (int32_t)i, ic };
    }
done:
    free(cat);
    return st;
}

static mt_status load_model(ctx *c, json_t *model)
{
    mt_hf_tokenizer *tok = c->tok;
    mt_status st;
    if ((st = check_model(c, model)))
        return st;
    json_t *vocab = json_object_get(model, "vocab"), *merges = json_object_get(model, "merges");
    if (!json_is_object(vocab) || json_object_size(vocab) == 0)
        return fmt(c, "model.vocab", "must be a non-empty object");
    if (!json_is_array(merges))
        return fmt(c, "model.merges", "must be an array");
    if ((st = load_vocab(c, vocab)))
        return st;
    tok->unk = -1;
    json_t *v = json_object_get(model, "unk_token");
    if (v && !json_is_null(v)) {
        if (!json_is_string(v))
            return fmt(c, "model.unk_token", "must be a string or null");
        tok->unk = mt_smap_get(&tok->vocab, json_string_value(v), json_string_length(v));
        if (tok->unk < 0)
            return fmt(c, "model.unk_token", "not in the vocabulary");
    }
    for (int b = 0; b < 256; b++) {
        char name[8];
        snprintf(name, sizeof name, "<0x%02X>", b);
        tok->fallback_id[b] = tok->byte_fallback ? mt_smap_get(&tok->vocab, name, 6) : -1;
    }
    return load_merges(c, merges);
}

/* ---- added tokens ----------------------------------------------------------------- */

/* 1 when s[0..n) is only White_Space and U+2581 (valid UTF-8). */
static uint8_t blank(const char *s, size_t n)
{
    for (size_t i = 0; i < n;) {
        uint32_t c;
        size_t k = mt_utf8_decode((const uint8_t *)s + i, n - i, &c);
        if (!k || (c != 0x2581 && !(hfu_class(c) & HFU_WS)))
            return 0;
        i += k;
    }
    return 1;
}

/* added_tokens[i] (t) into tok->added[i] and the added map, checked
 * against the vocabulary; tok->n_ids grows to hold its id. */
static mt_status add_token(ctx *c, json_t *t, size_t i)
{
    static const char *const keys[] = { "id", "content", "single_word", "lstrip", "rstrip", "normalized",
                                        "special", NULL };
    mt_hf_tokenizer *tok = c->tok;
    json_t *id = json_object_get(t, "id");
    hf_added *a = &tok->added[i];
    char what[64];
    size_t len;
    int sw, ls, rs, nz, sp;
    mt_status st;
    snprintf(what, sizeof what, "added_tokens[%zu]", i);
    if (!json_is_object(t))
        return fmt(c, what, "not an object");
    if ((st = only_keys(c, t, what, keys)))
        return st;
    if (!json_is_integer(id) || json_integer_value(id) < 0 || json_integer_value(id) >= MAX_ID)
        return fmt(c, what, "\"id\" is not an id");
    if ((st = get_str(c, t, "content", what, &a->content, &len)) ||
        (st = get_bool(c, t, "single_word", what, 0, &sw)) || (st = get_bool(c, t, "lstrip", what, 0, &ls)) ||
        (st = get_bool(c, t, "rstrip", what, 0, &rs)) || (st = get_bool(c, t, "special", what, 0, &sp)) ||
        (st = get_bool(c, t, "normalized", what, !sp, &nz)))    /* HF's default: !special */
        return st;
    if (len == 0 || len > UINT32_MAX / 2)
        return fmt(c, what, "empty content");
    if (!mt_utf8_valid(a->content, len))
        return fmt(c, what, "content is not valid UTF-8");
    a->len = (uint32_t)len;
    a->id = (int32_t)json_integer_value(id);
    a->single_word = (uint8_t)sw;
    a->lstrip = (uint8_t)ls;
    a->rstrip = (uint8_t)rs;
    a->normalized = (uint8_t)nz;
    a->special = (uint8_t)sp;
    a->blank = blank(a->content, len);
    mt_smap_ent *e = mt_smap_slot(&tok->added_map, a->content, len);
    if (e->k)
        return mt_err_set(c->err, MT_ERR_FORMAT, "%s: %s: \"%.*s\" is an added token twice", c->name, what,
                          Q(a->content));
    *e = (mt_smap_ent){ a->content, a->len, (int32_t)i };
    /* an added token that is also a vocabulary string must keep its id: one
     * string, one id */
    int32_t vid = mt_smap_get(&tok->vocab, a->content, len);
    if (vid >= 0 && vid != a->id)
        return mt_err_set(c->err, MT_ERR_FORMAT, "%s: %s: \"%.*s\" has id %d, the vocabulary says %d", c->name,
                          what, Q(a->content), a->id, vid);
    if (a->id >= tok->n_ids)
        tok->n_ids = a->id + 1;
    tok->has_raw |= !nz;
    tok->has_norm |= nz;
    tok->has_blank |= a->blank;
    return MT_OK;
}

/* id -> token: the vocabulary, then the n added tokens (HF looks them up
 * first), and the tries of the added tokens matched before and after
 * normalization. */
static mt_status index_tokens(ctx *c, size_t n)
{
    mt_hf_tokenizer *tok = c->tok;
    mt_status st = MT_OK;
    tok->tok = calloc((size_t)tok->n_ids, sizeof *tok->tok);
    tok->tok_len = calloc((size_t)tok->n_ids, sizeof *tok->tok_len);
    tok->special = calloc((size_t)tok->n_ids, 1);
    mt_ptrie_key *kr = malloc((n + 1) * sizeof *kr), *kz = malloc((n + 1) * sizeof *kz);
    if (!tok->tok || !tok->tok_len || !tok->special || !kr || !kz) {
        st = mt_err_set(c->err, MT_ERR_NOMEM, "%s: out of memory", c->name);
        goto done;
    }
    for (size_t i = 0; i <= tok->vocab.mask; i++) {
        const mt_smap_ent *e = &tok->vocab.e[i];
        if (e->k) {
            tok->tok[e->v] = e->k;
            tok->tok_len[e->v] = e->n;
        }
    }
    size_t nr = 0, nz = 0;
    for (size_t i = 0; i < n; i++) {
        const hf_added *a = &tok->added[i];
        if (tok->tok[a->id] && (tok->tok_len[a->id] != a->len || memcmp(tok->tok[a->id], a->content, a->len))) {
            st = mt_err_set(c->err, MT_ERR_FORMAT, "%s: added_tokens[%zu]: id %d is already the token \"%.*s\"",
                            c->name, i, a->id, mt_utf8_clip(tok->tok[a->id], tok->tok_len[a->id], 64),
                            tok->tok[a->id]);
            goto done;
        }
        tok->tok[a->id] = a->content;
        tok->tok_len[a->id] = a->len;
        tok->special[a->id] = a->special;
        mt_ptrie_key key = { (const uint8_t *)a->content, a->len, a->id };
        if (a->normalized)
            kz[nz++] = key;
        else
            kr[nr++] = key;
    }
    if ((nr && mt_ptrie_build(&tok->trie_raw, kr, nr)) || (nz && mt_ptrie_build(&tok->trie_norm, kz, nz)))
        st = mt_err_set(c->err, MT_ERR_NOMEM, "%s: out of memory", c->name);
done:
    free(kr);
    free(kz);
    return st;
}

static mt_status load_added(ctx *c, json_t *arr)
{
    mt_hf_tokenizer *tok = c->tok;
    mt_status st;
    if (!arr || json_is_null(arr))
        arr = NULL;
    else if (!json_is_array(arr))
        return fmt(c, "added_tokens", "must be an array");
    size_t n = arr ? json_array_size(arr) : 0;
    if (n >= (size_t)MAX_ID)
        return fmt(c, "added_tokens", "too many");
    tok->added = calloc(n + 1, sizeof *tok->added);
    if (!tok->added || mt_smap_init(&tok->added_map, n))
        return mt_err_set(c->err, MT_ERR_NOMEM, "%s: out of memory", c->name);
    for (size_t i = 0; i < n; i++)
        if ((st = add_token(c, json_array_get(arr, i), i)))
            return st;
    tok->n_added = (int)n;
    return index_tokens(c, n);
}

/* ---- normalizer ------------------------------------------------------------------- */

static mt_status add_norm(ctx *c, hf_norm n)
{
    hf_norm *p = realloc(c->tok->norm, ((size_t)c->tok->n_norm + 1) * sizeof *p);
    if (!p)
        return mt_err_set(c->err, MT_ERR_NOMEM, "%s: out of memory", c->name);
    c->tok->norm = p;
    p[c->tok->n_norm++] = n;
    return MT_OK;
}

/* Replace's {"Regex": " {2,}"} (SpmConverter's run of spaces): *kind
 * HF_NORM_SPACES; another regex is refused; a String leaves *kind. */
static mt_status spaces_pattern(ctx *c, json_t *obj, int *kind)
{
    json_t *rx = json_object_get(json_object_get(obj, "pattern"), "Regex");
    if (!rx)
        return MT_OK;
    if (!json_is_string(rx) || strcmp(json_string_value(rx), " {2,}") || json_object_size(json_object_get(obj, "pattern")) != 1)
        return mt_err_set(c->err, MT_ERR_UNSUPPORTED, "%s: normalizer Replace: a Regex pattern is not supported "
                          "(only String, and the Regex \" {2,}\")", c->name);
    *kind = HF_NORM_SPACES;
    return MT_OK;
}

/* SpmConverter's normalizers: Precompiled (the spm charsmap) and Strip. */
static mt_status spm_normalizer(ctx *c, json_t *obj, const char *type)
{
    hf_norm n = { 0 };
    mt_status st;
    if (!strcmp(type, "Strip")) {
        static const char *const keys[] = { "type", "strip_left", "strip_right", NULL };
        n.kind = HF_NORM_STRIP;
        if ((st = only_keys(c, obj, "normalizer Strip", keys)) ||
            (st = get_bool(c, obj, "strip_left", "normalizer Strip", 1, &n.left)) ||
            (st = get_bool(c, obj, "strip_right", "normalizer Strip", 1, &n.right)))
            return st;
        return add_norm(c, n);
    }
    static const char *const keys[] = { "type", "precompiled_charsmap", NULL };
    json_t *cm = json_object_get(obj, "precompiled_charsmap");
    n.kind = HF_NORM_PRECOMPILED;
    if ((st = only_keys(c, obj, "normalizer Precompiled", keys)))
        return st;
    if (!json_is_string(cm))
        return fmt(c, "normalizer Precompiled", "\"precompiled_charsmap\" must be a string");
    if ((st = hf_charsmap_new(json_string_value(cm), json_string_length(cm), c->name, &n.cm, c->err)))
        return st;
    if ((st = add_norm(c, n)))
        hf_charsmap_free(n.cm);
    return st;
}

static mt_status load_normalizer(ctx *c, json_t *obj, int depth)
{
    const char *type;
    mt_status st;
    hf_norm n = { 0 };
    if (json_is_null(obj) || (!obj && depth == 0))
        return MT_OK;
    if (depth > 8)
        return fmt(c, "normalizer", "Sequences nested too deep");
    if ((st = component(c, obj, "normalizer", &type)))
        return st;
    if (!strcmp(type, "Sequence")) {
        static const char *const keys[] = { "type", "normalizers", NULL };
        json_t *list = json_object_get(obj, "normalizers");
        if ((st = only_keys(c, obj, "normalizer Sequence", keys)))
            return st;
        if (!json_is_array(list))
            return fmt(c, "normalizer Sequence", "\"normalizers\" must be an array");
        for (size_t i = 0; i < json_array_size(list); i++) {
            json_t *x = json_array_get(list, i);
            if (!json_is_object(x))
                return fmt(c, "normalizer Sequence", "an element is not an object");
            if ((st = load_normalizer(c, x, depth + 1)))
                return st;
        }
        return MT_OK;
    }
    if (!strcmp(type, "Prepend")) {
        static const char *const keys[] = { "type", "prepend", NULL };
        n.kind = HF_NORM_PREPEND;
        if ((st = only_keys(c, obj, "normalizer Prepend", keys)) ||
            (st = get_str(c, obj, "prepend", "normalizer Prepend", &n.a, &n.na)))
            return st;
        return add_norm(c, n);
    }
    if (!strcmp(type, "Replace")) {
        static const char *const keys[] = { "type", "pattern", "content", NULL };
        n.kind = HF_NORM_REPLACE;
        if ((st = only_keys(c, obj, "normalizer Replace", keys)))
            return st;
        if ((st = spaces_pattern(c, obj, &n.kind)) ||
            (n.kind == HF_NORM_REPLACE && (st = string_pattern(c, obj, "normalizer Replace", &n.a, &n.na))) ||
            (st = get_str(c, obj, "content", "normalizer Replace", &n.b, &n.nb)))
            return st;
        return add_norm(c, n);
    }
    if (!strcmp(type, "Precompiled") || !strcmp(type, "Strip"))
        return spm_normalizer(c, obj, type);
    if (!strcmp(type, "NFC")) {
        static const char *const keys[] = { "type", NULL };
        n.kind = HF_NORM_NFC;
        if ((st = only_keys(c, obj, "normalizer NFC", keys)))
            return st;
        return add_norm(c, n);
    }
    return unsupported(c, "normalizer", type, "Sequence, Prepend, Replace, NFC, Precompiled, Strip");
}

/* ---- pre-tokenizer ---------------------------------------------------------------- */

/* Metaspace's options, for the pre-tokenizer and the decoder alike. */
static mt_status metaspace_opts(ctx *c, json_t *obj, const char *what, const char **rep, size_t *nrep, int *prepend,
                                int *split)
{
    static const char *const keys[] = { "type", "replacement", "prepend_scheme", "add_prefix_space", "split",
                                        "str_rep", NULL };
    mt_status st;
    uint32_t cp;
    if ((st = only_keys(c, obj, what, keys)) || (st = get_str(c, obj, "replacement", what, rep, nrep)) ||
        (st = get_bool(c, obj, "split", what, 1, split)))
        return st;
    if (*nrep == 0 || mt_utf8_decode((const uint8_t *)*rep, *nrep, &cp) != *nrep)
        return fmt(c, what, "\"replacement\" must be one character");
    json_t *ps = json_object_get(obj, "prepend_scheme");
    if (ps && !json_is_null(ps)) {
        const char *s = json_string_value(ps);
        if (!s)
            return fmt(c, what, "\"prepend_scheme\" must be a string");
        if (!strcmp(s, "always"))
            *prepend = HF_PREPEND_ALWAYS;
        else if (!strcmp(s, "first"))
            *prepend = HF_PREPEND_FIRST;
        else if (!strcmp(s, "never"))
            *prepend = HF_PREPEND_NEVER;
        else
            return mt_err_set(c->err, MT_ERR_UNSUPPORTED, "%s: %s: prepend_scheme \"%.*s\" is not supported", c->name,
                              what, Q(s));
    } else {    /* files before prepend_scheme: add_prefix_space true means always */
        int aps;
        if ((st = get_bool(c, obj, "add_prefix_space", what, 1, &aps)))
            return st;
        *prepend = aps ? HF_PREPEND_ALWAYS : HF_PREPEND_NEVER;
    }
    return MT_OK;
}

/* ByteLevel's options: only what does not change the ids here. */
static mt_status byte_level_opts(ctx *c, json_t *obj, const char *what)
{
    static const char *const keys[] = { "type", "add_prefix_space", "trim_offsets", "use_regex", NULL };
    mt_status st;
    int aps, trim, rx;
    if ((st = only_keys(c, obj, what, keys)) || (st = get_bool(c, obj, "add_prefix_space", what, 0, &aps)) ||
        (st = get_bool(c, obj, "trim_offsets", what, 1, &trim)) || (st = get_bool(c, obj, "use_regex", what, 1, &rx)))
        return st;
    if (aps)
        return mt_err_set(c->err, MT_ERR_UNSUPPORTED, "%s: %s: add_prefix_space true is not supported", c->name, what);
    if (rx)
        return mt_err_set(c->err, MT_ERR_UNSUPPORTED,
                          "%s: %s: use_regex true (the GPT-2 regex) is not supported", c->name, what);
    return MT_OK;
}

/* One pre-tokenizer; *stage counts what came before (0 none, 1 Split, 2 ByteLevel, 3 Metaspace). */
/* Gemma 3: normalizer Replace " " -> "▁", then Split on the String " "
 * (MergedWithPrevious).  No " " survives the last Replace (its content does
 * not hold one), so that split never cuts: the text stays one piece, and the
 * pre-tokenizer is accepted as the identity.  Any other String split is refused. */
static int split_is_identity(const ctx *c, json_t *pat, const char *beh, int inv)
{
    const char *str = json_string_value(json_object_get(pat, "String"));
    const mt_hf_tokenizer *t = c->tok;
    if (!str || !*str || inv || !beh || strcmp(beh, "MergedWithPrevious") != 0 || t->n_norm == 0)
        return 0;
    const hf_norm *n = &t->norm[t->n_norm - 1];
    size_t ns = strlen(str);
    return n->kind == HF_NORM_REPLACE && n->na == ns && !memcmp(n->a, str, ns) &&
           !memmem(n->b, n->nb, str, ns);
}

static mt_status load_pre_one(ctx *c, json_t *obj, int *stage)
{
    mt_hf_tokenizer *tok = c->tok;
    const char *type;
    mt_status st;
    if ((st = component(c, obj, "pre_tokenizer", &type)))
        return st;
    if (!strcmp(type, "Split")) {
        static const char *const keys[] = { "type", "pattern", "behavior", "invert", NULL };
        json_t *pat = json_object_get(obj, "pattern");
        const char *rx = json_string_value(json_object_get(pat, "Regex"));
        const char *beh = json_string_value(json_object_get(obj, "behavior"));
        int inv;
        if ((st = only_keys(c, obj, "pre_tokenizer Split", keys)) ||
            (st = get_bool(c, obj, "invert", "pre_tokenizer Split", 0, &inv)))
            return st;
        if (*stage != 0)
            return mt_err_set(c->err, MT_ERR_UNSUPPORTED, "%s: pre_tokenizer: Split after another pre-tokenizer is not "
                              "supported", c->name);
        if (!json_is_object(pat))
            return fmt(c, "pre_tokenizer Split", "\"pattern\" must be an object");
        if (!rx && split_is_identity(c, pat, beh, inv))
            return MT_OK;
        if (!rx)
            return mt_err_set(c->err, MT_ERR_UNSUPPORTED, "%s: pre_tokenizer Split: only a Regex pattern is supported",
                              c->name);
        if (!strcmp(rx, HF_SPLIT_QWEN2))
            tok->split_digits = 1;
        else if (!strcmp(rx, HF_SPLIT_LLAMA3))
            tok->split_digits = 3;
        else
            return mt_err_set(c->err, MT_ERR_UNSUPPORTED,
                              "%s: pre_tokenizer Split: regex \"%.*s\" is not supported (only Qwen2's and Llama 3's)",
                              c->name, Q(rx));
        if (!beh || strcmp(beh, "Isolated"))
            return mt_err_set(c->err, MT_ERR_UNSUPPORTED,
                              "%s: pre_tokenizer Split: behavior \"%.*s\" is not supported (only Isolated)", c->name,
                              beh ? mt_utf8_clip(beh, strlen(beh), 64) : 4, beh ? beh : "null");
        if (inv)
            return mt_err_set(c->err, MT_ERR_UNSUPPORTED, "%s: pre_tokenizer Split: invert is not supported", c->name);
        *stage = 1;
        return MT_OK;
    }
    if (!strcmp(type, "ByteLevel")) {
        if ((st = byte_level_opts(c, obj, "pre_tokenizer ByteLevel")))
            return st;
        if (*stage > 1)
            return mt_err_set(c->err, MT_ERR_UNSUPPORTED, "%s: pre_tokenizer: ByteLevel after %s is not supported",
                              c->name, *stage == 2 ? "ByteLevel" : "Metaspace");
        tok->byte_level = 1;
        *stage = 2;
        return MT_OK;
    }
    if (!strcmp(type, "Metaspace")) {
        if ((st = metaspace_opts(c, obj, "pre_tokenizer Metaspace", &tok->ms_rep, &tok->ms_rep_n, &tok->ms_prepend,
                                 &tok->ms_split)))
            return st;
        if (*stage != 0)
            return mt_err_set(c->err, MT_ERR_UNSUPPORTED,
                              "%s: pre_tokenizer: Metaspace with another pre-tokenizer is not supported", c->name);
        tok->metaspace = 1;
        *stage = 3;
        return MT_OK;
    }
    return unsupported(c, "pre_tokenizer", type, "Split, ByteLevel, Metaspace, Sequence");
}

static mt_status load_pre_tokenizer(ctx *c, json_t *obj)
{
    const char *type;
    mt_status st;
    int stage = 0;
    if (!obj || json_is_null(obj))
        return MT_OK;
    if ((st = component(c, obj, "pre_tokenizer", &type)))
        return st;
    if (strcmp(type, "Sequence"))
        return load_pre_one(c, obj, &stage);
    static const char *const keys[] = { "type", "pretokenizers", NULL };
    json_t *list = json_object_get(obj, "pretokenizers");
    if ((st = only_keys(c, obj, "pre_tokenizer Sequence", keys)))
        return st;
    if (!json_is_array(list))
        return fmt(c, "pre_tokenizer Sequence", "\"pretokenizers\" must be an array");
    for (size_t i = 0; i < json_array_size(list); i++) {
        json_t *x = json_array_get(list, i);
        if (json_is_object(x) && type_of(x) && !strcmp(type_of(x), "Sequence"))
            return mt_err_set(c->err, MT_ERR_UNSUPPORTED, "%s: pre_tokenizer: nested Sequence is not supported",
                              c->name);
        if ((st = load_pre_one(c, x, &stage)))
            return st;
    }
    return MT_OK;
}

/* ---- post-processor --------------------------------------------------------------- */

static mt_status template_ids(ctx *c, json_t *obj)
{
    static const char *const keys[] = { "type", "single", "pair", "special_tokens", NULL };
    mt_hf_tokenizer *tok = c->tok;
    json_t *single = json_object_get(obj, "single"), *sp = json_object_get(obj, "special_tokens");
    mt_status st;
    if ((st = only_keys(c, obj, "post_processor TemplateProcessing", keys)))
        return st;
    if (!json_is_array(single))
        return fmt(c, "post_processor TemplateProcessing", "\"single\" must be an array");
    if (!json_is_object(sp))
        return fmt(c, "post_processor TemplateProcessing", "\"special_tokens\" must be an object");
    if (tok->n_pre || tok->n_post || tok->pre_ids)
        return mt_err_set(c->err, MT_ERR_UNSUPPORTED, "%s: post_processor: two TemplateProcessing", c->name);
    size_t n = json_array_size(single);
    tok->pre_ids = calloc(n * 8 + 1, sizeof *tok->pre_ids);
    tok->post_ids = calloc(n * 8 + 1, sizeof *tok->post_ids);
    if (!tok->pre_ids || !tok->post_ids)
        return mt_err_set(c->err, MT_ERR_NOMEM, "%s: out of memory", c->name);
    int seen_a = 0;
    for (size_t i = 0; i < n; i++) {
        json_t *it = json_array_get(single, i), *s = json_object_get(it, "SpecialToken"),
               *q = json_object_get(it, "Sequence");
        if (!json_is_object(it) || json_object_size(it) != 1 || (!json_is_object(s) && !json_is_object(q)))
            return fmt(c, "post_processor TemplateProcessing", "a \"single\" item is not a SpecialToken or Sequence");
        if (q) {
            const char *id = json_string_value(json_object_get(q, "id"));
            if (!id || strcmp(id, "A") || seen_a)
                return fmt(c, "post_processor TemplateProcessing", "\"single\" must hold Sequence A once");
            seen_a = 1;
            continue;
        }
        const char *name = json_string_value(json_object_get(s, "id"));
        json_t *def = name ? json_object_get(sp, name) : NULL, *ids = json_object_get(def, "ids");
        if (!json_is_array(ids) || json_array_size(ids) > 8)
            return mt_err_set(c->err, MT_ERR_FORMAT, "%s: post_processor TemplateProcessing: special token \"%.*s\" "
                              "has no ids in special_tokens", c->name,
                              name ? mt_utf8_clip(name, strlen(name), 64) : 0, name ? name : "");
        for (size_t j = 0; j < json_array_size(ids); j++) {
            json_t *x = json_array_get(ids, j);
            json_int_t id = json_is_integer(x) ? json_integer_value(x) : -1;
            if (id < 0 || id >= tok->n_ids || !tok->tok[id])
                return mt_err_set(c->err, MT_ERR_FORMAT,
                                  "%s: post_processor TemplateProcessing: special token \"%.*s\": id is not a token",
                                  c->name, Q(name));
            if (seen_a)
                tok->post_ids[tok->n_post++] = (int32_t)id;
            else
                tok->pre_ids[tok->n_pre++] = (int32_t)id;
        }
    }
    if (!seen_a)
        return fmt(c, "post_processor TemplateProcessing", "\"single\" must hold Sequence A once");
    return MT_OK;
}

static mt_status load_post_one(ctx *c, json_t *obj)
{
    const char *type;
    mt_status st;
    if ((st = component(c, obj, "post_processor", &type)))
        return st;
    if (!strcmp(type, "TemplateProcessing"))
        return template_ids(c, obj);
    if (!strcmp(type, "ByteLevel")) {       /* only offsets: no id changes */
        static const char *const keys[] = { "type", "add_prefix_space", "trim_offsets", "use_regex", NULL };
        return only_keys(c, obj, "post_processor ByteLevel", keys);
    }
    return unsupported(c, "post_processor", type, "TemplateProcessing, ByteLevel, Sequence");
}

static mt_status load_post_processor(ctx *c, json_t *obj)
{
    const char *type;
    mt_status st;
    if (!obj || json_is_null(obj))
        return MT_OK;
    if ((st = component(c, obj, "post_processor", &type)))
        return st;
    if (strcmp(type, "Sequence"))
        return load_post_one(c, obj);
    static const char *const keys[] = { "type", "processors", NULL };
    json_t *list = json_object_get(obj, "processors");
    if ((st = only_keys(c, obj, "post_processor Sequence", keys)))
        return st;
    if (!json_is_array(list))
        return fmt(c, "post_processor Sequence", "\"processors\" must be an array");
    for (size_t i = 0; i < json_array_size(list); i++) {
        json_t *x = json_array_get(list, i);
        if (json_is_object(x) && type_of(x) && !strcmp(type_of(x), "Sequence"))
            return mt_err_set(c->err, MT_ERR_UNSUPPORTED, "%s: post_processor: nested Sequence is not supported",
                              c->name);
        if ((st = load_post_one(c, x)))
            return st;
    }
    return MT_OK;
}

/* ---- decoder ---------------------------------------------------------------------- */

static mt_status add_dec(ctx *c, hf_dec d)
{
    hf_dec *p = realloc(c->tok->dec, ((size_t)c->tok->n_dec + 1) * sizeof *p);
    if (!p)
        return mt_err_set(c->err, MT_ERR_NOMEM, "%s: out of memory", c->name);
    c->tok->dec = p;
    p[c->tok->n_dec++] = d;
    return MT_OK;
}

static mt_status get_count(ctx *c, json_t *obj, const char *key, int *out)
{
    json_t *v = json_object_get(obj, key);
    json_int_t n = json_is_integer(v) ? json_integer_value(v) : -1;
    if (n < 0 || n > 1000000)
        return fmt(c, "decoder Strip", "\"start\" and \"stop\" must be counts");
    *out = (int)n;
    return MT_OK;
}

static mt_status load_decoder(ctx *c, json_t *obj, int depth)
{
    const char *type;
    mt_status st;
    hf_dec d = { 0 };
    if (depth > 8)
        return fmt(c, "decoder", "Sequences nested too deep");
    if ((st = component(c, obj, "decoder", &type)))
        return st;
    if (!strcmp(type, "Sequence")) {
        static const char *const keys[] = { "type", "decoders", NULL };
        json_t *list = json_object_get(obj, "decoders");
        if ((st = only_keys(c, obj, "decoder Sequence", keys)))
            return st;
        if (!json_is_array(list))
            return fmt(c, "decoder Sequence", "\"decoders\" must be an array");
        for (size_t i = 0; i < json_array_size(list); i++)
            if ((st = load_decoder(c, json_array_get(list, i), depth + 1)))
                return st;
        return MT_OK;
    }
    if (!strcmp(type, "Replace")) {
        static const char *const keys[] = { "type", "pattern", "content", NULL };
        d.kind = HF_DEC_REPLACE;
        if ((st = only_keys(c, obj, "decoder Replace", keys)) ||
            (st = string_pattern(c, obj, "decoder Replace", &d.a, &d.na)) ||
            (st = get_str(c, obj, "content", "decoder Replace", &d.b, &d.nb)))
            return st;
        return add_dec(c, d);
    }
    if (!strcmp(type, "ByteFallback") || !strcmp(type, "Fuse")) {
        static const char *const keys[] = { "type", NULL };
        d.kind = type[0] == 'B' ? HF_DEC_BYTE_FALLBACK : HF_DEC_FUSE;
        if ((st = only_keys(c, obj, type[0] == 'B' ? "decoder ByteFallback" : "decoder Fuse", keys)))
            return st;
        return add_dec(c, d);
    }
    if (!strcmp(type, "Strip")) {
        static const char *const keys[] = { "type", "content", "start", "stop", NULL };
        const char *s;
        size_t n;
        d.kind = HF_DEC_STRIP;
        if ((st = only_keys(c, obj, "decoder Strip", keys)) ||
            (st = get_str(c, obj, "content", "decoder Strip", &s, &n)) || (st = get_count(c, obj, "start", &d.start)) ||
            (st = get_count(c, obj, "stop", &d.stop)))
            return st;
        if (n == 0 || mt_utf8_decode((const uint8_t *)s, n, &d.strip_char) != n)
            return fmt(c, "decoder Strip", "\"content\" must be one character");
        return add_dec(c, d);
    }
    if (!strcmp(type, "ByteLevel")) {
        d.kind = HF_DEC_BYTE_LEVEL;
        if ((st = byte_level_opts(c, obj, "decoder ByteLevel")))
            return st;
        return add_dec(c, d);
    }
    if (!strcmp(type, "Metaspace")) {
        int split;
        d.kind = HF_DEC_METASPACE;
        if ((st = metaspace_opts(c, obj, "decoder Metaspace", &d.a, &d.na, &d.prepend, &split)))
            return st;
        d.prepend = d.prepend != HF_PREPEND_NEVER;
        d.b = " ";
        d.nb = 1;
        return add_dec(c, d);
    }
    return unsupported(c, "decoder", type, "Sequence, Replace, ByteFallback, Fuse, Strip, ByteLevel, Metaspace");
}

/* ---- tokenizer_config.json -------------------------------------------------------- */

/* A token of the config: a string, an AddedToken object {"content": ...}, or null. */
static mt_status config_token(ctx *c, json_t *cfg, const char *key, int32_t *out)
{
    json_t *v = json_object_get(cfg, key);
    char what[64];
    snprintf(what, sizeof what, "\"%s\"", key);
    *out = -1;
    if (!v || json_is_null(v))
        return MT_OK;
    if (json_is_object(v))
        v = json_object_get(v, "content");
    if (!json_is_string(v))
        return fmt(c, what, "must be a string, an object with \"content\", or null");
    *out = mt_hf_tokenizer_token_id(c->tok, json_string_value(v));
    if (*out < 0 || json_string_length(v) != strlen(json_string_value(v)))
        return mt_err_set(c->err, MT_ERR_FORMAT, "%s: %s: \"%.*s\" is not a token of tokenizer.json", c->name, what,
                          Q(json_string_value(v)));
    return MT_OK;
}

static mt_status load_config(ctx *c, json_t *cfg)
{
    mt_hf_tokenizer *tok = c->tok;
    mt_status st;
    size_t n;
    if (!json_is_object(cfg))
        return fmt(c, "tokenizer_config.json", "not a JSON object");
    if ((st = config_token(c, cfg, "bos_token", &tok->bos)) || (st = config_token(c, cfg, "eos_token", &tok->eos)) ||
        (st = config_token(c, cfg, "pad_token", &tok->pad)) || (st = config_token(c, cfg, "unk_token", &tok->cfg_unk)))
        return st;
    json_t *ct = json_object_get(cfg, "chat_template");
    if (json_is_string(ct)) {
        if ((st = get_str(c, cfg, "chat_template", "tokenizer_config.json", &tok->chat_template, &n)))
            return st;
    } else if (json_is_array(ct)) {   /* [{"name": ..., "template": ...}]: the one named "default" */
        for (size_t i = 0; i < json_array_size(ct); i++) {
            json_t *e = json_array_get(ct, i);
            const char *nm = json_string_value(json_object_get(e, "name"));
            if (nm && !strcmp(nm, "default") && (st = get_str(c, e, "template", "chat_template", &tok->chat_template, &n)))
                return st;
        }
    } else if (ct && !json_is_null(ct)) {
        return fmt(c, "\"chat_template\"", "must be a string or a list of named templates");
    }
    /* a number: jansson reads every integer as a double here (the Llama 2
     * file says 1000000000000000019884624838656, beyond int64) */
    json_t *ml = json_object_get(cfg, "model_max_length");
    if (json_is_number(ml))
        tok->model_max_length = json_number_value(ml);
    else if (ml && !json_is_null(ml))
        return fmt(c, "\"model_max_length\"", "must be a number");
    if ((st = get_bool(c, cfg, "add_bos_token", "tokenizer_config.json", -1, &tok->add_bos)) ||
        (st = get_bool(c, cfg, "add_eos_token", "tokenizer_config.json", -1, &tok->add_eos)) ||
        (st = get_bool(c, cfg, "clean_up_tokenization_spaces", "tokenizer_config.json", 0, &tok->clean_up)))
        return st;
    return MT_OK;
}

/* ---- load ------------------------------------------------------------------------- */

static mt_status load_root(ctx *c, json_t *root)
{
    static const char *const keys[] = { "version", "truncation", "padding", "added_tokens", "normalizer",
                                        "pre_tokenizer", "post_processor", "decoder", "model", NULL };
    mt_status st;
    if (!json_is_object(root))
        return fmt(c, "tokenizer.json", "not a JSON object");
    if ((st = only_keys(c, root, "tokenizer.json", keys)))
        return st;
    static const char *const off[] = { "truncation", "padding" };
    for (int i = 0; i < 2; i++) {
        json_t *v = json_object_get(root, off[i]);
        if (v && !json_is_null(v))
            return mt_err_set(c->err, MT_ERR_UNSUPPORTED, "%s: %s is not supported (must be null)", c->name, off[i]);
    }
    if (!json_object_get(root, "model"))
        return fmt(c, "tokenizer.json", "no \"model\"");
    if ((st = load_model(c, json_object_get(root, "model"))) || (st = load_added(c, json_object_get(root, "added_tokens"))) ||
        (st = load_normalizer(c, json_object_get(root, "normalizer"), 0)) ||
        (st = load_pre_tokenizer(c, json_object_get(root, "pre_tokenizer"))) ||
        (st = load_post_processor(c, json_object_get(root, "post_processor"))))
        return st;
    json_t *dec = json_object_get(root, "decoder");
    c->tok->has_decoder = dec && !json_is_null(dec);
    if (c->tok->has_decoder && (st = load_decoder(c, dec, 0)))
        return st;
    if (c->tok->byte_level)
        for (int b = 0; b < 256; b++) {
            char s[4];
            uint32_t u = hf_byte_char[b];
            size_t n = u < 0x80 ? (s[0] = (char)u, 1) : (s[0] = (char)(0xC0 | u >> 6), s[1] = (char)(0x80 | (u & 63)), 2);
            c->tok->byte_id[b] = mt_smap_get(&c->tok->vocab, s, n);
        }
    return MT_OK;
}

/* jansson's text of a parse error, with the file name. */
static json_t *parse(const char *s, size_t n, size_t flags, const char *name, const char *file, mt_err *err)
{
    json_error_t je;
    json_t *r = json_loadb(s, n, flags | JSON_ALLOW_NUL, &je);
    if (!r)
        mt_err_set(err, MT_ERR_FORMAT, "%s: %s: line %d: %s", name, file, je.line, je.text);
    return r;
}

mt_status mt_hf_tokenizer_load_mem(const char *json, size_t json_len, const char *config, size_t config_len,
                                   const char *name, mt_hf_tokenizer **out, mt_err *err)
{
    if (!out || (!json && json_len) || (!config && config_len))
        return mt_err_set(err, MT_ERR_INPUT, "mt_hf_tokenizer_load_mem: bad arguments");
    *out = NULL;
    if (!name)
        name = "tokenizer.json";
    mt_hf_tokenizer *tok = calloc(1, sizeof *tok);
    if (!tok)
        return mt_err_set(err, MT_ERR_NOMEM, "%s: out of memory", name);
    tok->bos = tok->eos = tok->pad = tok->cfg_unk = tok->unk = -1;
    tok->add_bos = tok->add_eos = -1;
    ctx c = { tok, name, err };
    mt_status st = MT_OK;
    json_t *root = parse(json ? json : "", json_len, 0, name, "tokenizer.json", err), *cfg = NULL;
    if (!root)
        st = MT_ERR_FORMAT;
    else if (config && !(cfg = parse(config, config_len, JSON_DECODE_INT_AS_REAL, name, "tokenizer_config.json", err)))
        st = MT_ERR_FORMAT;
    if (!st)
        st = load_root(&c, root);
    if (!st && cfg)
        st = load_config(&c, cfg);
    json_decref(root);
    json_decref(cfg);
    if (st) {
        if (err && err->status != st)
            mt_err_set(err, st, "%s: not loaded", name);
        mt_hf_tokenizer_free(tok);
        return st;
    }
    *out = tok;
    return MT_OK;
}

/* The whole file, malloc'd: MT_OK, MT_ERR_IO, MT_ERR_NOMEM. */
static mt_status read_file(const char *path, char **data, size_t *n, mt_err *err)
{
    mt_sbuf b = { 0 };
    mt_status st = mt_sb_read_file(&b, path, err);
    *data = b.p;
    *n = b.n;
    return st;
}

mt_status mt_hf_tokenizer_load_files(const char *tokenizer_json, const char *config_json, mt_hf_tokenizer **out,
                                     mt_err *err)
{
    char *j = NULL, *cf = NULL;
    size_t nj = 0, nc = 0;
    mt_status st;
    if (!tokenizer_json || !out)
        return mt_err_set(err, MT_ERR_INPUT, "mt_hf_tokenizer_load_files: bad arguments");
    *out = NULL;
    if ((st = read_file(tokenizer_json, &j, &nj, err)) || (config_json && (st = read_file(config_json, &cf, &nc, err))))
        goto done;
    st = mt_hf_tokenizer_load_mem(j ? j : "", nj, config_json ? (cf ? cf : "") : NULL, nc, tokenizer_json, out, err);
done:
    free(j);
    free(cf);
    return st;
}

mt_status mt_hf_tokenizer_load(const char *dir, mt_hf_tokenizer **out, mt_err *err)
{
    char tj[4096], tc[4096];
    if (!dir || !out)
        return mt_err_set(err, MT_ERR_INPUT, "mt_hf_tokenizer_load: bad arguments");
    if ((size_t)snprintf(tj, sizeof tj, "%s/tokenizer.json", dir) >= sizeof tj ||
        (size_t)snprintf(tc, sizeof tc, "%s/tokenizer_config.json", dir) >= sizeof tc)
        return mt_err_set(err, MT_ERR_INPUT, "%s: path too long", dir);
    FILE *f = fopen(tc, "rb");
    if (f)
        fclose(f);
    return mt_hf_tokenizer_load_files(tj, f ? tc : NULL, out, err);
}

void mt_hf_tokenizer_free(mt_hf_tokenizer *tok)
{
    if (!tok)
        return;
    while (tok->pool) {
        struct hf_chunk *n = tok->pool->next;
        free(tok->pool);
        tok->pool = n;
    }
    free(tok->tok);
    free(tok->tok_len);
    free(tok->special);
    free(tok->vocab.e);
    free(tok->merge);
    free(tok->added);
    free(tok->added_map.e);
    mt_ptrie_free(&tok->trie_raw);
    mt_ptrie_free(&tok->trie_norm);
    for (int i = 0; i < tok->n_norm; i++)
        hf_charsmap_free(tok->norm[i].cm);
    free(tok->norm);
    free(tok->pre_ids);
    free(tok->post_ids);
    free(tok->dec);
    free(tok);
}

/* ---- getters ---------------------------------------------------------------------- */

int mt_hf_tokenizer_vocab_size(const mt_hf_tokenizer *tok)
{
    return tok ? tok->n_ids : 0;
}

const char *mt_hf_tokenizer_token(const mt_hf_tokenizer *tok, int32_t id)
{
    return tok && id >= 0 && id < tok->n_ids ? tok->tok[id] : NULL;
}

int32_t mt_hf_tokenizer_token_id(const mt_hf_tokenizer *tok, const char *token)
{
    if (!tok || !token)
        return -1;
    size_t n = strlen(token);
    int32_t i = mt_smap_get(&tok->added_map, token, n);
    return i >= 0 ? tok->added[i].id : mt_smap_get(&tok->vocab, token, n);
}

int mt_hf_tokenizer_is_special(const mt_hf_tokenizer *tok, int32_t id)
{
    return tok && id >= 0 && id < tok->n_ids && tok->special[id];
}

int32_t mt_hf_tokenizer_bos(const mt_hf_tokenizer *tok) { return tok ? tok->bos : -1; }
int32_t mt_hf_tokenizer_eos(const mt_hf_tokenizer *tok) { return tok ? tok->eos : -1; }
int32_t mt_hf_tokenizer_pad(const mt_hf_tokenizer *tok) { return tok ? tok->pad : -1; }
int32_t mt_hf_tokenizer_unk(const mt_hf_tokenizer *tok) { return !tok ? -1 : tok->cfg_unk >= 0 ? tok->cfg_unk : tok->unk; }

const char *mt_hf_tokenizer_chat_template(const mt_hf_tokenizer *tok)
{
    return tok ? tok->chat_template : NULL;
}

int mt_hf_tokenizer_cleans_up(const mt_hf_tokenizer *tok)
{
    return tok && tok->clean_up;
}

double mt_hf_tokenizer_model_max_length(const mt_hf_tokenizer *tok)
{
    return tok ? tok->model_max_length : 0;
}
