/* hf_bpe.c: encode and decode with a loaded tokenizer.json BPE (tokenizer.h).
 *
 * encode, as the Rust tokenizers library does it:
 *   1. added tokens with normalized false are split out of the raw text;
 *   2. each other piece is normalized, then the normalized added tokens are
 *      split out of it;
 *   3. each remaining piece is pre-tokenized into words (Metaspace, the Qwen
 *      regex, or the whole piece);
 *   4. each word goes through BPE: its characters (or, ByteLevel, its bytes)
 *      are the first symbols, then the pair of lowest merge rank (leftmost on
 *      a tie) merges until no pair has a rank;
 *   5. the post-processor's tokens go around the ids (add_special_tokens).
 * BPE keeps its symbols in a linked list and the candidate pairs in a binary
 * heap: O(n log n) per word (a Llama 2 piece is one word: the whole text).
 * The scratch buffers live for one encode call; no allocation per merge. */
#include "hf_internal.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "hf_split.h"
#include "hf_unicode.h"
#include "util/check.h"
#include "util/strbuf.h"
#include "util/utf8.h"

const char *mt_hf_unicode_version(void)
{
    return hfu_version();
}

/* ---- growable arrays ---------------------------------------------------------- */

/* Room for need elements of size sz in *p (capacity *cap): 0, or -1. */
typedef struct {
    int32_t rank, pos, id;
} pq_ent;

typedef struct {
    const mt_hf_tokenizer *tok;
    /* output */
    int32_t *ids;
    size_t   n_ids, ids_cap;
    /* one word's symbols: id, neighbours, alive */
    int32_t *sym, *prev, *next;
    uint8_t *dead;
    size_t   n_sym, sym_cap, prev_cap, next_cap, dead_cap;
    pq_ent  *heap;
    size_t   n_heap, heap_cap;
    int      last_unk;            /* the last symbol was an unknown character (fuse_unk) */
    /* text[keep_a..keep_b): no added token is split out of it (hf_encode_span) */
    size_t   keep_a, keep_b;
    /* pieces */
    mt_sbuf  norm, tmp, word;
    uint32_t *cp;
    uint8_t *cls;
    size_t  *off;
    size_t   cp_cap, cls_cap, off_cap;
} enc;

static mt_status nomem(mt_err *err)
{
    return mt_err_set(err, MT_ERR_NOMEM, "encode: out of memory");
}

static int emit(enc *e, int32_t id)
{
    if (mt_grow(&e->ids, &e->ids_cap, e->n_ids + 1, sizeof *e->ids, 64))
        return -1;
    e->ids[e->n_ids++] = id;
    return 0;
}

/* ---- BPE ----------------------------------------------------------------------- */

static const hf_merge *find_merge(const mt_hf_tokenizer *tok, int32_t a, int32_t b)
{
    uint64_t key = (uint64_t)(uint32_t)a << 32 | (uint32_t)b;
    uint64_t h = key * 0x9E3779B97F4A7C15ull;
    size_t i = (size_t)(h ^ (h >> 31)) & tok->merge_mask;
    for (;; i = (i + 1) & tok->merge_mask) {
        const hf_merge *m = &tok->merge[i];
        if (m->rank < 0)
            return NULL;
        if (m->key == key)
            return m;
    }
}

static int pq_less(const pq_ent *a, const pq_ent *b)
{
    return a->rank < b->rank || (a->rank == b->rank && a->pos < b->pos);
}

static int pq_push(enc *e, int32_t rank, int32_t pos, int32_t id)
{
    if (mt_grow(&e->heap, &e->heap_cap, e->n_heap + 1, sizeof *e->heap, 64))
        return -1;
    size_t i = e->n_heap++;
    pq_ent x = { rank, pos, id };
    while (i > 0 && pq_less(&x, &e->heap[(i - 1) / 2])) {
        e->heap[i] = e->heap[(i - 1) / 2];
        i = (i - 1) / 2;
    }
    e->heap[i] = x;
    return 0;
}

static pq_ent pq_pop(enc *e)
{
    pq_ent top = e->heap[0], x = e->heap[--e->n_heap];
    size_t i = 0, n = e->n_heap;
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= n)
            break;
        if (c + 1 < n && pq_less(&e->heap[c + 1], &e->heap[c]))
            c++;
        if (!pq_less(&e->heap[c], &x))
            break;
        e->heap[i] = e->heap[c];
        i = c;
    }
    if (n)
        e->heap[i] = x;
    return top;
}

/* Appends a first symbol (-1: an unknown character, which becomes <unk>,
 * fused with the one before when fuse_unk, or is dropped without unk_token). */
static int add_sym(enc *e, int32_t id)
{
    const mt_hf_tokenizer *tok = e->tok;
    if (id < 0) {
        if (tok->unk < 0 || (tok->fuse_unk && e->last_unk))
            return 0;
        id = tok->unk;
        e->last_unk = 1;
    } else {
        e->last_unk = 0;
    }
    size_t n = e->n_sym + 1;
    if (mt_grow(&e->sym, &e->sym_cap, n, sizeof *e->sym, 64) ||
        mt_grow(&e->prev, &e->prev_cap, n, sizeof *e->prev, 64) ||
        mt_grow(&e->next, &e->next_cap, n, sizeof *e->next, 64) || mt_grow(&e->dead, &e->dead_cap, n, 1, 64))
        return -1;
    e->sym[e->n_sym++] = id;
    return 0;
}

static int push_pair(enc *e, int32_t pos)
{
    int32_t nx = e->next[pos];
    const hf_merge *m = nx >= 0 ? find_merge(e->tok, e->sym[pos], e->sym[nx]) : NULL;
    return m ? pq_push(e, m->rank, pos, m->id) : 0;
}

/* Merges the symbols of one word and emits them. */
static int bpe_run(enc *e)
{
    int32_t n = (int32_t)e->n_sym;
    if (e->n_sym > INT32_MAX / 2)
        return -1;
    e->n_heap = 0;
    for (int32_t i = 0; i < n; i++) {
        e->prev[i] = i - 1;
        e->next[i] = i + 1 < n ? i + 1 : -1;
        e->dead[i] = 0;
    }
    for (int32_t i = 0; i + 1 < n; i++)
        if (push_pair(e, i))
            return -1;
    while (e->n_heap) {
        pq_ent t = pq_pop(e);
        int32_t nx = e->next[t.pos];
        if (e->dead[t.pos] || nx < 0)
            continue;
        /* stale when the pair at pos changed since it was pushed */
        const hf_merge *m = find_merge(e->tok, e->sym[t.pos], e->sym[nx]);
        if (!m || m->id != t.id)
            continue;
        e->sym[t.pos] = t.id;
        e->dead[nx] = 1;
        e->next[t.pos] = e->next[nx];
        if (e->next[nx] >= 0)
            e->prev[e->next[nx]] = t.pos;
        if ((e->prev[t.pos] >= 0 && push_pair(e, e->prev[t.pos])) || push_pair(e, t.pos))
            return -1;
    }
    for (int32_t i = 0; i < n; i = e->next[i]) {
        if (emit(e, e->sym[i]))
            return -1;
        if (e->next[i] < 0)
            break;
    }
    return 0;
}

/* A word of a ByteLevel tokenizer: its bytes are the first symbols. */
static int bpe_bytes(enc *e, const char *w, size_t n)
{
    const mt_hf_tokenizer *tok = e->tok;
    if (!n)
        return 0;
    if (tok->ignore_merges) {      /* a word that is a token is that token */
        e->word.n = 0;
        for (size_t i = 0; i < n; i++) {
            uint32_t u = hf_byte_char[(uint8_t)w[i]];
            char s[2] = { (char)(u < 0x80 ? u : 0xC0 | u >> 6), (char)(0x80 | (u & 63)) };
            if (mt_sb_add(&e->word, s, u < 0x80 ? 1 : 2))
                return -1;
        }
        int32_t id = mt_smap_get(&tok->vocab, e->word.p, e->word.n);
        if (id >= 0)
            return emit(e, id);
    }
    e->n_sym = 0;
    e->last_unk = 0;
    for (size_t i = 0; i < n; i++)
        if (add_sym(e, tok->byte_id[(uint8_t)w[i]]))
            return -1;
    return bpe_run(e);
}

/* A word of a character tokenizer (SentencePiece-style): its characters are
 * the first symbols; one missing from the vocabulary becomes its "<0xNN>"
 * byte tokens (byte_fallback, when all exist) or unknown. */
static int bpe_chars(enc *e, const char *w, size_t n)
{
    const mt_hf_tokenizer *tok = e->tok;
    if (!n)
        return 0;
    if (tok->ignore_merges) {
        int32_t id = mt_smap_get(&tok->vocab, w, n);
        if (id >= 0)
            return emit(e, id);
    }
    e->n_sym = 0;
    e->last_unk = 0;
    for (size_t i = 0; i < n;) {
        uint32_t c;
        size_t k = mt_utf8_next(w + i, n - i, &c);     /* the text was validated: never U+FFFD */
        int32_t id = mt_smap_get(&tok->vocab, w + i, k);
        if (id < 0 && tok->byte_fallback) {
            size_t b = 0;
            while (b < k && tok->fallback_id[(uint8_t)w[i + b]] >= 0)
                b++;
            if (b == k) {
                for (b = 0; b < k; b++)
                    if (add_sym(e, tok->fallback_id[(uint8_t)w[i + b]]))
                        return -1;
                i += k;
                continue;
            }
        }
        if (add_sym(e, id))
            return -1;
        i += k;
    }
    return bpe_run(e);
}

static int word(enc *e, const char *w, size_t n)
{
    return e->tok->byte_level ? bpe_bytes(e, w, n) : bpe_chars(e, w, n);
}

/* ---- pre-tokenizers ----------------------------------------------------------- */

/* Metaspace: spaces -> the replacement, a replacement prepended (always, or
 * only to the piece at the text's start), then split before each replacement
 * (a run of them: each alone but the last, which starts the next word). */
static int metaspace(enc *e, const char *s, size_t n, int at_start)
{
    const mt_hf_tokenizer *tok = e->tok;
    const char *rep = tok->ms_rep;
    size_t nr = tok->ms_rep_n;
    mt_sbuf *t = &e->tmp;
    t->n = 0;
    /* HF replaces the spaces first, then prepends unless the text starts with the replacement */
    int starts = (n >= nr && !memcmp(s, rep, nr)) || (n && s[0] == ' ');
    if (!starts && (tok->ms_prepend == HF_PREPEND_ALWAYS || (tok->ms_prepend == HF_PREPEND_FIRST && at_start)))
        if (mt_sb_add(t, rep, nr))
            return -1;
    for (size_t i = 0; i < n; i++)
        if (s[i] == ' ' ? mt_sb_add(t, rep, nr) : mt_sb_add(t, s + i, 1))
            return -1;
    if (!tok->ms_split || !t->n)
        return word(e, t->p ? t->p : "", t->n);
    /* words start at each replacement */
    size_t a = 0;
    for (size_t i = nr; i + nr <= t->n; i++)
        if (!memcmp(t->p + i, rep, nr)) {
            if (word(e, t->p + a, i - a))
                return -1;
            a = i;
            i += nr - 1;
        }
    return word(e, t->p + a, t->n - a);
}

/* The Qwen2 / Llama 3 regex: each match is a word. */
static int split_regex(enc *e, const char *s, size_t n)
{
    size_t nc = 0;
    if (mt_grow(&e->cp, &e->cp_cap, n + 1, sizeof *e->cp, 64) || mt_grow(&e->cls, &e->cls_cap, n + 1, 1, 64) ||
        mt_grow(&e->off, &e->off_cap, n + 1, sizeof *e->off, 64))
        return -1;
    for (size_t i = 0; i < n;) {
        uint32_t c;
        size_t k = (uint8_t)s[i] < 0x80 ? (c = (uint8_t)s[i], 1) : mt_utf8_next(s + i, n - i, &c);
        e->cp[nc] = c;
        e->cls[nc] = hfu_class(c);
        e->off[nc++] = i;
        i += k;
    }
    e->off[nc] = n;
    for (size_t i = 0; i < nc;) {
        size_t m = hf_split_match(e->cp, e->cls, nc, i, e->tok->split_digits);
        if (word(e, s + e->off[i], e->off[i + m] - e->off[i]))
            return -1;
        i += m;
    }
    return 0;
}

/* A normalized piece with no added token in it. */
static int piece(enc *e, const char *s, size_t n, int at_start)
{
    const mt_hf_tokenizer *tok = e->tok;
    if (!n)
        return 0;
    if (tok->metaspace)
        return metaspace(e, s, n, at_start);
    if (tok->split_digits)
        return split_regex(e, s, n);
    return word(e, s, n);
}

/* ---- added tokens ----------------------------------------------------------------- */

static int is_word_char(uint32_t c)
{
    return c == '_' || (hfu_class(c) & (HFU_L | HFU_N));
}

/* The last / first character of s[0..n) (0 when empty). */
static uint32_t last_char(const char *s, size_t n)
{
    size_t i = n;
    uint32_t c = 0;
    while (i > 0 && ((uint8_t)s[i - 1] & 0xC0) == 0x80)
        i--;
    if (i > 0 && !mt_utf8_decode((const uint8_t *)s + i - 1, n - i + 1, &c))
        c = 0;
    return c;
}

static uint32_t first_char(const char *s, size_t n)
{
    uint32_t c = 0;
    if (n && !mt_utf8_decode((const uint8_t *)s, n, &c))
        c = 0;
    return c;
}

/* The next added token of trie in s[from..n): leftmost-longest (a match
 * refused by single_word is skipped whole, as HF's matcher does); [*a, *b)
 * its span, widened over whitespace by lstrip (not before from) and rstrip.
 * No match may touch s[ka..kb) (when ka < kb): one starting before ka must
 * end by ka, positions inside are skipped.  Returns the index in
 * tok->added, or -1. */
/* The bytes of s[0..n)'s leading run of White_Space and U+2581 (what a blank
 * added token may match). */
static size_t blank_run(const char *s, size_t n)
{
    size_t i = 0;
    while (i < n) {
        uint32_t c;
        size_t k = mt_utf8_decode((const uint8_t *)s + i, n - i, &c);
        if (!k || (c != 0x2581 && !(hfu_class(c) & HFU_WS)))
            break;
        i += k;
    }
    return i;
}

/* The longest added token of trie at s + i, at most lim bytes long, not
 * one running into the kept span [ka, kb) unless blank: its length, 0 for none. */
static size_t added_at(const mt_hf_tokenizer *tok, const mt_ptrie *trie, const char *s, size_t i, size_t lim,
                       size_t ka, size_t kb)
{
    size_t len = mt_ptrie_longest(trie, (const uint8_t *)s + i, lim);
    if (len && ka < kb && i < ka && i + len > ka && !tok->added[mt_smap_get(&tok->added_map, s + i, len)].blank)
        len = mt_ptrie_longest(trie, (const uint8_t *)s + i, ka - i);     /* stop short of the span */
    return len;
}

static int next_added(const mt_hf_tokenizer *tok, const mt_ptrie *trie, const char *s, size_t n, size_t from,
                      size_t ka, size_t kb, size_t *a, size_t *b)
{
    int keep = ka < kb;
    for (size_t i = from; i < n;) {
        size_t len;
        if (keep && i >= ka && i < kb) {
            if (!tok->has_blank) {
                i = kb;
                continue;
            }
            size_t run = blank_run(s + i, n - i);          /* in the span: a blank token only */
            len = run ? mt_ptrie_longest(trie, (const uint8_t *)s + i, run) : 0;
        } else {
            len = added_at(tok, trie, s, i, n - i, ka, kb);
        }
        if (!len) {
            i++;
            continue;
        }
        int32_t k = mt_smap_get(&tok->added_map, s + i, len);
        const hf_added *t = &tok->added[k];
        if (t->single_word && ((i > 0 && is_word_char(last_char(s, i))) ||
                               (i + len < n && is_word_char(first_char(s + i + len, n - i - len))))) {
            i += len;
            continue;
        }
        *a = i;
        *b = i + len;
        if (t->lstrip)
            while (*a > from && (hfu_class(last_char(s, *a)) & HFU_WS)) {
                uint32_t c = last_char(s, *a);
                *a -= c < 0x80 ? 1 : c < 0x800 ? 2 : c < 0x10000 ? 3 : 4;
            }
        if (t->rstrip)
            while (*b < n && (hfu_class(first_char(s + *b, n - *b)) & HFU_WS)) {
                uint32_t c = first_char(s + *b, n - *b);
                *b += c < 0x80 ? 1 : c < 0x800 ? 2 : c < 0x10000 ? 3 : 4;
            }
        return k;
    }
    return -1;
}

/* Strip: [*a, *b) of s narrowed past White_Space on the sides asked; 0. */
static int strip_ws(const char *s, size_t *a, size_t *b, int left, int right)
{
    uint32_t c;
    while (left && *a < *b) {
        size_t k = mt_utf8_next(s + *a, *b - *a, &c);
        if (!(hfu_class(c) & HFU_WS))
            break;
        *a += k;
    }
    while (right && *b > *a) {
        size_t k = 1;
        while (k < *b - *a && ((uint8_t)s[*b - k] & 0xC0) == 0x80)
            k++;
        mt_utf8_next(s + *b - k, k, &c);
        if (!(hfu_class(c) & HFU_WS))
            break;
        *b -= k;
    }
    return 0;
}

/* Normalizes s[0..n) into e->norm. */
static int normalize(enc *e, const char *s, size_t n)
{
    const mt_hf_tokenizer *tok = e->tok;
    mt_sbuf *cur = &e->norm, *t = &e->tmp;
    cur->n = 0;
    if (mt_sb_add(cur, s, n))
        return -1;
    for (int i = 0; i < tok->n_norm && cur->n; i++) {
        const hf_norm *st = &tok->norm[i];
        t->n = 0;
        if (st->kind == HF_NORM_PREPEND) {
            if (mt_sb_add(t, st->a, st->na) || mt_sb_add(t, cur->p, cur->n))
                return -1;
        } else if (st->kind == HF_NORM_REPLACE) {
            size_t j = 0;
            while (j < cur->n) {
                const char *hit = st->na <= cur->n - j ? memmem(cur->p + j, cur->n - j, st->a, st->na) : NULL;
                size_t end = hit ? (size_t)(hit - cur->p) : cur->n;
                if (mt_sb_add(t, cur->p + j, end - j) || (hit && mt_sb_add(t, st->b, st->nb)))
                    return -1;
                j = hit ? end + st->na : cur->n;
            }
        } else if (st->kind == HF_NORM_SPACES) {
            for (size_t j = 0; j < cur->n;) {
                size_t r = 0;
                while (j + r < cur->n && cur->p[j + r] == ' ')
                    r++;
                if (r >= 2 ? mt_sb_add(t, st->b, st->nb) : mt_sb_add(t, cur->p + j, r ? r : 1))
                    return -1;
                j += r ? r : 1;
            }
        } else if (st->kind == HF_NORM_PRECOMPILED) {
            if (hf_charsmap_run(st->cm, cur->p, cur->n, t))
                return -1;
        } else if (st->kind == HF_NORM_STRIP) {
            size_t a = 0, b = cur->n;
            if (strip_ws(cur->p, &a, &b, st->left, st->right) || mt_sb_add(t, cur->p + a, b - a))
                return -1;
        } else if (hfu_nfc(cur->p, cur->n, t)) {
            return -1;
        }
        mt_sbuf x = *cur;
        *cur = *t;
        *t = x;
    }
    return 0;
}

/* A piece of the raw text (at offset base) with no raw added token:
 * normalize, split out the normalized added tokens (not from the kept span:
 * its bounds in the normalized text are the lengths of its normalized
 * prefixes, exact for the position-wise normalizers Replace and Prepend),
 * pre-tokenize and BPE the rest. */
static int segment(enc *e, const char *s, size_t n, int at_start, size_t base)
{
    const mt_hf_tokenizer *tok = e->tok;
    if (!n)
        return 0;
    size_t ka = 0, kb = 0;
    if (tok->has_norm && e->keep_a < e->keep_b && e->keep_a < base + n && e->keep_b > base) {
        size_t a = e->keep_a > base ? e->keep_a - base : 0, b = e->keep_b - base;
        if (a > 0) {
            if (normalize(e, s, a))
                return -1;
            ka = e->norm.n;
        }
        kb = SIZE_MAX;
        if (b < n) {
            if (normalize(e, s, b))
                return -1;
            kb = e->norm.n;
        }
    }
    if (normalize(e, s, n))
        return -1;
    /* the pre-tokenizer reuses tmp: work on our own copy of the normalized text */
    mt_sbuf nb = e->norm;
    e->norm = (mt_sbuf){ 0 };
    int rc = 0;
    if (!tok->has_norm) {
        rc = piece(e, nb.p, nb.n, at_start);
    } else {
        size_t from = 0, a, b;
        int k;
        while (!rc && (k = next_added(tok, &tok->trie_norm, nb.p, nb.n, from, ka, kb < nb.n ? kb : nb.n, &a, &b)) >= 0) {
            rc = piece(e, nb.p + from, a - from, at_start && from == 0) || emit(e, tok->added[k].id);
            from = b;
        }
        if (!rc)
            rc = piece(e, nb.p + from, nb.n - from, at_start && from == 0);
    }
    /* keep the larger buffer for the next segment */
    if (nb.cap > e->norm.cap) {
        free(e->norm.p);
        e->norm = nb;
    } else {
        free(nb.p);
    }
    return rc;
}

mt_status mt_hf_tokenizer_encode(const mt_hf_tokenizer *tok, const char *text, size_t len, int add_special_tokens,
                                 int32_t *ids, int max_ids, int *n_ids, mt_err *err)
{
    return hf_encode_span(tok, text, len, 0, 0, add_special_tokens, ids, max_ids, n_ids, err);
}

mt_status hf_encode_span(const mt_hf_tokenizer *tok, const char *text, size_t len, size_t keep_a, size_t keep_b,
                         int add_special_tokens, int32_t *ids, int max_ids, int *n_ids, mt_err *err)
{
    if (!tok || (!text && len) || !n_ids || max_ids < 0 || (!ids && max_ids) || keep_a > keep_b || keep_b > len)
        return mt_err_set(err, MT_ERR_INPUT, "mt_hf_tokenizer_encode: bad arguments");
    *n_ids = 0;
    size_t bad = mt_utf8_valid_prefix(text, len);
    if (bad < len)
        return mt_err_set(err, MT_ERR_INPUT, "input is not valid UTF-8 (byte 0x%02x at offset %zu)",
                          (uint8_t)text[bad], bad);
    if (len > (size_t)INT_MAX / 2)
        return mt_err_set(err, MT_ERR_TOO_LONG, "input too long (%zu bytes)", len);
    enc e = { .tok = tok, .keep_a = keep_a, .keep_b = keep_b };
    int rc = 0;
    if (add_special_tokens)
        for (int i = 0; !rc && i < tok->n_pre; i++)
            rc = emit(&e, tok->pre_ids[i]);
    if (!tok->has_raw) {
        rc = rc || segment(&e, text, len, 1, 0);
    } else {
        size_t from = 0, a, b;
        int k;
        while (!rc && (k = next_added(tok, &tok->trie_raw, text, len, from, keep_a, keep_b, &a, &b)) >= 0) {
            rc = segment(&e, text + from, a - from, from == 0, from) || emit(&e, tok->added[k].id);
            from = b;
        }
        rc = rc || segment(&e, text + from, len - from, from == 0, from);
    }
    if (add_special_tokens)
        for (int i = 0; !rc && i < tok->n_post; i++)
            rc = emit(&e, tok->post_ids[i]);
    mt_status st = MT_OK;
    if (rc)
        st = nomem(err);
    else if (e.n_ids > (size_t)INT_MAX)
        st = mt_err_set(err, MT_ERR_TOO_LONG, "input too long (%zu tokens)", e.n_ids);
    else {
        *n_ids = (int)e.n_ids;
        if (e.n_ids > (size_t)max_ids)
            st = mt_err_set(err, MT_ERR_TOO_LONG, "%zu tokens do not fit in %d", e.n_ids, max_ids);
        else if (e.n_ids)
            memcpy(ids, e.ids, e.n_ids * sizeof *ids);
    }
    free(e.ids);
    free(e.sym);
    free(e.prev);
    free(e.next);
    free(e.dead);
    free(e.heap);
    free(e.norm.p);
    free(e.tmp.p);
    free(e.word.p);
    free(e.cp);
    free(e.cls);
    free(e.off);
    return st;
}

/* ---- decode ------------------------------------------------------------------------ */

/* A list of token strings: token i is b.p[off[i] .. off[i] + len[i]). */
typedef struct {
    mt_sbuf b;
    size_t *off, *len;
    size_t  n, cap, lcap;
} tlist;

static int tl_add(tlist *t, const char *s, size_t n)
{
    if (mt_grow(&t->off, &t->cap, t->n + 1, sizeof *t->off, 64) ||
        mt_grow(&t->len, &t->lcap, t->n + 1, sizeof *t->len, 64))
        return -1;
    t->off[t->n] = t->b.n;
    t->len[t->n] = n;
    t->n++;
    return mt_sb_add(&t->b, n ? s : "", n);
}

/* Appends to the last token. */
static int tl_cat(tlist *t, const char *s, size_t n)
{
    t->len[t->n - 1] += n;
    return mt_sb_add(&t->b, s, n);
}

static void tl_free(tlist *t)
{
    free(t->b.p);
    free(t->off);
    free(t->len);
}

/* Bytes as UTF-8 text, each maximal invalid subpart as U+FFFD (Rust's
 * String::from_utf8_lossy), appended to the last token of t. */
static int lossy(tlist *t, const uint8_t *p, size_t n)
{
    for (size_t i = 0; i < n;) {
        uint32_t c;
        size_t k = mt_utf8_decode(p + i, n - i, &c);
        if (k) {
            if (tl_cat(t, (const char *)p + i, k))
                return -1;
            i += k;
            continue;
        }
        uint8_t b0 = p[i];
        size_t need = b0 >= 0xC2 && b0 <= 0xDF ? 1 : b0 >= 0xE0 && b0 <= 0xEF ? 2 : b0 >= 0xF0 && b0 <= 0xF4 ? 3 : 0;
        uint8_t lo = b0 == 0xE0 ? 0xA0 : b0 == 0xF0 ? 0x90 : 0x80, hi = b0 == 0xED ? 0x9F : b0 == 0xF4 ? 0x8F : 0xBF;
        size_t j = 1;
        if (need && i + 1 < n && p[i + 1] >= lo && p[i + 1] <= hi) {
            j = 2;
            while (j <= need && i + j < n && (p[i + j] & 0xC0) == 0x80)
                j++;
        }
        if (tl_cat(t, "\xEF\xBF\xBD", 3))
            return -1;
        i += j;
    }
    return 0;
}

/* "<0xNN>" -> NN, or -1. */
static int byte_token(const char *s, size_t n)
{
    if (n != 6 || memcmp(s, "<0x", 3) || s[5] != '>')
        return -1;
    int v = 0;
    for (int i = 3; i < 5; i++) {
        char c = s[i];
        int d = c >= '0' && c <= '9' ? c - '0' : c >= 'A' && c <= 'F' ? c - 'A' + 10 : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
        if (d < 0)
            return -1;
        v = v * 16 + d;
    }
    return v;
}

/* ByteFallback: a run of byte tokens becomes its text when it is valid UTF-8,
 * else one U+FFFD per byte. */
static int flush_bytes(tlist *o, const uint8_t *b, size_t n)
{
    if (!n)
        return 0;
    if (mt_utf8_valid((const char *)b, n))
        return tl_add(o, (const char *)b, n);
    for (size_t i = 0; i < n; i++)
        if (tl_add(o, "\xEF\xBF\xBD", 3))
            return -1;
    return 0;
}

/* The byte a ByteLevel character stands for (hf_byte_char inverted), or -1. */
static int byte_of(uint32_t c)
{
    if ((c >= '!' && c <= '~') || (c >= 0xA1 && c <= 0xAC) || (c >= 0xAE && c <= 0xFF))
        return (int)c;
    if (c >= 0x100 && c <= 0x120)      /* bytes 0x00-0x20 */
        return (int)(c - 0x100);
    if (c >= 0x121 && c <= 0x142)      /* bytes 0x7F-0xA0 */
        return (int)(0x7F + c - 0x121);
    return c == 0x143 ? 0xAD : -1;
}

/* Replace (and Metaspace): token s[0..n) with every d->a made d->b, as a new
 * token of o; drop: every replacement dropped instead. */
static int dec_replace(const hf_dec *d, const char *s, size_t n, int drop, tlist *o)
{
    int rc = tl_add(o, "", 0);
    for (size_t j = 0; !rc && j < n;) {
        if (n - j >= d->na && !memcmp(s + j, d->a, d->na)) {
            rc = drop ? 0 : tl_cat(o, d->b, d->nb);
            j += d->na;
        } else {
            rc = tl_cat(o, s + j, 1);
            j++;
        }
    }
    return rc;
}

size_t hf_strip_span(const hf_dec *d, const char *s, size_t n, size_t *a_out)
{
    size_t a = 0, b = n;
    for (int k = 0; k < d->start && a < b; k++) {
        uint32_t c;
        size_t m = mt_utf8_decode((const uint8_t *)s + a, b - a, &c);
        if (!m || c != d->strip_char)
            break;
        a += m;
    }
    for (int k = 0; k < d->stop && a < b; k++) {
        size_t j = b - 1;
        uint32_t c;
        while (j > a && ((uint8_t)s[j] & 0xC0) == 0x80)
            j--;
        if (!mt_utf8_decode((const uint8_t *)s + j, b - j, &c) || c != d->strip_char)
            break;
        b = j;
    }
    *a_out = a;
    return b;
}

/* Strip: token s[0..n) without up to d->start leading and d->stop trailing
 * d->strip_char, as a new token of o. */
static int dec_strip(const hf_dec *d, const char *s, size_t n, tlist *o)
{
    size_t a, b = hf_strip_span(d, s, n, &a);
    return tl_add(o, s + a, b - a);
}

/* The bytes a ByteFallback or ByteLevel decoder gathers across tokens. */
typedef struct {
    uint8_t *p;
    size_t   n, cap;
} byte_run;

/* ByteLevel: each character of token s[0..n) back to its byte, onto r; a
 * token with a character outside the alphabet goes on as its own bytes. */
static int byte_level_token(const char *s, size_t n, byte_run *r)
{
    size_t start = r->n, j = 0;
    int rc = 0;
    while (!rc && j < n) {
        uint32_t c;
        size_t m = mt_utf8_decode((const uint8_t *)s + j, n - j, &c);
        int byte = m ? byte_of(c) : -1;
        if (byte < 0)
            break;
        if (!(rc = mt_grow(&r->p, &r->cap, r->n + 1, 1, 64)))
            r->p[r->n++] = (uint8_t)byte;
        j += m;
    }
    if (!rc && j < n) {
        r->n = start;
        if (!(rc = mt_grow(&r->p, &r->cap, r->n + n, 1, 64))) {
            memcpy(r->p + r->n, s, n);
            r->n += n;
        }
    }
    return rc;
}

/* ByteFallback: a "<0xNN>" token onto r; any other flushes r and goes on as it is. */
static int byte_fallback_token(const char *s, size_t n, byte_run *r, tlist *o)
{
    int v = byte_token(s, n);
    if (v >= 0) {
        if (mt_grow(&r->p, &r->cap, r->n + 1, 1, 64))
            return -1;
        r->p[r->n++] = (uint8_t)v;
        return 0;
    }
    int rc = flush_bytes(o, r->p, r->n) || tl_add(o, s, n);
    r->n = 0;
    return rc;
}

static int dec_step(const hf_dec *d, const tlist *in, tlist *o)
{
    byte_run bytes = { NULL, 0, 0 };
    int rc = 0;
    if (d->kind == HF_DEC_FUSE || d->kind == HF_DEC_BYTE_LEVEL)
        rc = tl_add(o, "", 0);
    for (size_t i = 0; !rc && i < in->n; i++) {
        const char *s = in->b.p + in->off[i];
        size_t n = in->len[i];
        switch (d->kind) {
        case HF_DEC_REPLACE:
        case HF_DEC_METASPACE:
            /* Metaspace drops every replacement of the first token (HF's decoder) */
            rc = dec_replace(d, s, n, d->kind == HF_DEC_METASPACE && d->prepend && i == 0, o);
            break;
        case HF_DEC_BYTE_FALLBACK:
            rc = byte_fallback_token(s, n, &bytes, o);
            break;
        case HF_DEC_FUSE:
            rc = tl_cat(o, s, n);
            break;
        case HF_DEC_STRIP:
            rc = dec_strip(d, s, n, o);
            break;
        case HF_DEC_BYTE_LEVEL:
            rc = byte_level_token(s, n, &bytes);
            break;
        }
    }
    if (!rc && d->kind == HF_DEC_BYTE_FALLBACK)
        rc = flush_bytes(o, bytes.p, bytes.n);
    if (!rc && d->kind == HF_DEC_BYTE_LEVEL)
        rc = lossy(o, bytes.p, bytes.n);
    free(bytes.p);
    return rc;
}

/* transformers' clean_up_tokenization (tokenizer_config.json says so). */
static void clean_up(mt_sbuf *b)
{
    static const char *const from[] = { " .", " ?", " !", " ,", " ' ", " n't", " 'm", " 's", " 've", " 're" };
    static const char *const to[] = { ".", "?", "!", ",", "'", "n't", "'m", "'s", "'ve", "'re" };
    for (int r = 0; r < 10; r++) {
        size_t nf = strlen(from[r]), nt = strlen(to[r]), w = 0;
        for (size_t i = 0; i < b->n;) {
            if (b->n - i >= nf && !memcmp(b->p + i, from[r], nf)) {
                memmove(b->p + w, to[r], nt);
                w += nt;
                i += nf;
            } else {
                b->p[w++] = b->p[i++];
            }
        }
        b->n = w;
    }
    if (b->p)
        b->p[b->n] = '\0';
}

mt_status mt_hf_tokenizer_decode(const mt_hf_tokenizer *tok, const int32_t *ids, int n, int skip_special_tokens,
                                 char **out, size_t *out_len, mt_err *err)
{
    if (!tok || (!ids && n) || n < 0 || !out)
        return mt_err_set(err, MT_ERR_INPUT, "mt_hf_tokenizer_decode: bad arguments");
    *out = NULL;
    if (out_len)
        *out_len = 0;
    tlist a = { 0 }, b = { 0 };
    mt_sbuf r = { 0 };
    mt_status st = MT_OK;
    int rc = 0;
    for (int i = 0; !rc && i < n; i++) {
        int32_t id = ids[i];
        if (id < 0 || id >= tok->n_ids || !tok->tok[id]) {
            st = mt_err_set(err, MT_ERR_INPUT, "id %d at position %d is not a token (vocabulary size %d)", id, i,
                            tok->n_ids);
            goto done;
        }
        if (skip_special_tokens && tok->special[id])
            continue;
        rc = tl_add(&a, tok->tok[id], tok->tok_len[id]);
    }
    for (int s = 0; !rc && s < tok->n_dec; s++) {
        b.b.n = b.n = 0;
        rc = dec_step(&tok->dec[s], &a, &b);
        tlist x = a;
        a = b;
        b = x;
    }
    /* the tokens joined (with spaces when there is no decoder, as HF does) */
    for (size_t i = 0; !rc && i < a.n; i++)
        rc = (i && !tok->has_decoder && mt_sb_add(&r, " ", 1)) || mt_sb_add(&r, a.b.p + a.off[i], a.len[i]);
    rc = rc || mt_sb_add(&r, "", 0);
    if (rc) {
        st = mt_err_set(err, MT_ERR_NOMEM, "decode: out of memory");
        goto done;
    }
    if (tok->clean_up)
        clean_up(&r);
    *out = r.p;
    if (out_len)
        *out_len = r.n;
    r.p = NULL;
done:
    tl_free(&a);
    tl_free(&b);
    free(r.p);
    return st;
}
