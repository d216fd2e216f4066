/* SentencePiece unigram tokenizer + Marian vocabulary (see tokenizer.h).
 *
 * Reference behaviour: sentencepiece 0.1.97 (Debian's python3-sentencepiece)
 * and models/recipe/marian_tok.py; algorithm notes in marian-spec.md 5 and 6.
 *
 *   normalize   precompiled charsmap (Darts double-array, longest match),
 *               dummy prefix, whitespace collapsing, ' ' -> U+2581
 *   encode      unigram Viterbi over the normalized bytes with spm's exact
 *               float/double arithmetic and first-wins tie-breaking; runs of
 *               unknown characters merged (or split into <0xXX> byte pieces)
 *   Marian      pieces -> vocab.json ids (absent -> <unk>), leading ">>xx<<"
 *               kept whole, </s> appended; decode through the target spm.
 *
 * Everything loaded is immutable; per-call scratch is malloc'd per call.
 */
#include "tokenizer.h"
#include "utf8.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "spm_proto.h"

#define SPACE_SYM     "\xe2\x96\x81"   /* U+2581, spm's escaped whitespace */
#define SPACE_SYM_LEN 3
#define MAX_TEXT      ((size_t)INT32_MAX / 4)   /* normalized bytes per call   */
#define MAX_VOCAB_ID  (1 << 24)                  /* sanity bound for vocab.json */

/* ---- small helpers -------------------------------------------------------- */

typedef struct {
    char  *p;
    size_t n, cap;
} sbuf;

static int sb_reserve(sbuf *b, size_t extra)
{
    if (extra > SIZE_MAX / 2 - b->n)
        return -1;
    if (b->n + extra <= b->cap)
        return 0;
    size_t cap = b->cap ? b->cap : 64;
    while (cap < b->n + extra)
        cap *= 2;
    char *p = realloc(b->p, cap);
    if (!p)
        return -1;
    b->p = p;
    b->cap = cap;
    return 0;
}

static int sb_add(sbuf *b, const void *s, size_t n)
{
    if (sb_reserve(b, n + 1))
        return -1;
    memcpy(b->p + b->n, s, n);
    b->n += n;
    b->p[b->n] = '\0';
    return 0;
}

/* spm's OneCharLen: the UTF-8 sequence length announced by the lead byte. */
static inline size_t one_char_len(uint8_t b)
{
    static const uint8_t t[16] = { 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 3, 4 };
    return t[b >> 4];
}

/* Offset of the first byte that does not start a valid UTF-8 character, or len. */
static size_t utf8_invalid_at(const uint8_t *s, size_t len)
{
    size_t i = 0;
    uint32_t cp;
    while (i < len) {
        if (s[i] < 0x80) {
            i++;
            continue;
        }
        size_t n = mt_utf8_decode(s + i, len - i, &cp);
        if (!n)
            return i;
        i += n;
    }
    return len;
}

/* Python's str.isspace() (what str.strip() removes). */
static int py_isspace(uint32_t c)
{
    if (c < 0x80)
        return c == ' ' || (c >= 0x09 && c <= 0x0D) || (c >= 0x1C && c <= 0x1F);
    return c == 0x85 || c == 0xA0 || c == 0x1680 || (c >= 0x2000 && c <= 0x200A) || c == 0x2028 ||
           c == 0x2029 || c == 0x202F || c == 0x205F || c == 0x3000;
}

/* Python's str.strip() on valid UTF-8, in place. */
static void py_strip(sbuf *b)
{
    size_t i = 0, end = b->n;
    uint32_t cp;
    while (i < end) {
        size_t n = mt_utf8_decode((uint8_t *)b->p + i, end - i, &cp);
        if (!n || !py_isspace(cp))
            break;
        i += n;
    }
    while (end > i) {
        size_t s = end - 1;
        while (s > i && ((uint8_t)b->p[s] & 0xC0) == 0x80)
            s--;
        size_t n = mt_utf8_decode((uint8_t *)b->p + s, end - s, &cp);
        if (n != end - s || !py_isspace(cp))
            break;
        end = s;
    }
    memmove(b->p, b->p + i, end - i);
    b->n = end - i;
    b->p[b->n] = '\0';
}

/* ---- string -> int32 hash map ---------------------------------------------- */
/* Open addressing; keys are borrowed (they live in the owner's storage). */

typedef struct {
    const char *k;
    uint32_t    n;
    int32_t     v;
} smap_ent;

typedef struct {
    smap_ent *e;
    size_t    mask;
} smap;

static uint64_t hash_bytes(const void *s, size_t n)
{
    const uint8_t *p = s;
    uint64_t h = 0xcbf29ce484222325ull;   /* FNV-1a */
    for (size_t i = 0; i < n; i++)
        h = (h ^ p[i]) * 0x100000001b3ull;
    return h ^ (h >> 29);
}

static int smap_init(smap *m, size_t count)
{
    size_t cap = 16;
    while (cap < count * 2)
        cap *= 2;
    m->e = calloc(cap, sizeof *m->e);
    m->mask = cap - 1;
    return m->e ? 0 : -1;
}

static smap_ent *smap_slot(const smap *m, const char *k, size_t n)
{
    size_t i = (size_t)hash_bytes(k, n) & m->mask;
    for (;; i = (i + 1) & m->mask) {
        smap_ent *e = &m->e[i];
        if (!e->k || (e->n == n && memcmp(e->k, k, n) == 0))
            return e;
    }
}

/* Value for key, or -1. */
static int32_t smap_get(const smap *m, const char *k, size_t n)
{
    if (!m->e || n > UINT32_MAX)
        return -1;
    const smap_ent *e = smap_slot(m, k, n);
    return e->k ? e->v : -1;
}

/* ---- byte trie over piece strings ------------------------------------------ */
/* Nodes in BFS order; the edges of node i are [first[i], first[i+1]), sorted by
 * label.  The root's children also sit in a 256-entry table. */

typedef struct {
    int32_t  *id;      /* [n_nodes] piece id ending at the node, or -1 */
    uint32_t *first;   /* [n_nodes + 1]                                 */
    uint8_t  *label;   /* [n_edges]                                     */
    int32_t  *child;   /* [n_edges]                                     */
    int32_t   root[256];
    int32_t   n_nodes;
} ptrie;

typedef struct {
    const uint8_t *p;
    uint32_t       n;
    int32_t        id;
} tkey;

static int tkey_cmp(const void *a, const void *b)
{
    const tkey *x = a, *y = b;
    size_t n = x->n < y->n ? x->n : y->n;
    int c = memcmp(x->p, y->p, n);
    if (c)
        return c;
    return (x->n > y->n) - (x->n < y->n);
}

static void ptrie_free(ptrie *t)
{
    free(t->id);
    free(t->first);
    free(t->label);
    free(t->child);
    memset(t, 0, sizeof *t);
}

/* Build from keys (sorted here; must be unique and non-empty). */
static int ptrie_build(ptrie *t, tkey *keys, size_t nk)
{
    struct work { uint32_t lo, hi, depth; } *w = NULL;
    size_t max_nodes = 1;
    for (size_t i = 0; i < nk; i++)
        max_nodes += keys[i].n;
    memset(t, 0, sizeof *t);
    if (max_nodes > INT32_MAX / 2)
        return -1;
    qsort(keys, nk, sizeof *keys, tkey_cmp);
    t->id = malloc(max_nodes * sizeof *t->id);
    t->first = malloc((max_nodes + 1) * sizeof *t->first);
    t->label = malloc(max_nodes * sizeof *t->label);
    t->child = malloc(max_nodes * sizeof *t->child);
    w = malloc(max_nodes * sizeof *w);
    if (!t->id || !t->first || !t->label || !t->child || !w) {
        free(w);
        ptrie_free(t);
        return -1;
    }
    uint32_t n_nodes = 1, n_edges = 0;
    w[0] = (struct work){ 0, (uint32_t)nk, 0 };
    for (uint32_t i = 0; i < n_nodes; i++) {
        uint32_t lo = w[i].lo, hi = w[i].hi, d = w[i].depth;
        t->id[i] = -1;
        if (lo < hi && keys[lo].n == d)      /* sorted: the key equal to the prefix comes first */
            t->id[i] = keys[lo++].id;
        t->first[i] = n_edges;
        while (lo < hi) {
            uint8_t c = keys[lo].p[d];
            uint32_t j = lo + 1;
            while (j < hi && keys[j].p[d] == c)
                j++;
            t->label[n_edges] = c;
            t->child[n_edges++] = (int32_t)n_nodes;
            w[n_nodes++] = (struct work){ lo, j, d + 1 };
            lo = j;
        }
    }
    t->first[n_nodes] = n_edges;
    t->n_nodes = (int32_t)n_nodes;
    for (int c = 0; c < 256; c++)
        t->root[c] = -1;
    for (uint32_t e = t->first[0]; e < t->first[1]; e++)
        t->root[t->label[e]] = t->child[e];
    free(w);
    return 0;
}

static inline int32_t ptrie_child(const ptrie *t, int32_t node, uint8_t c)
{
    uint32_t lo = t->first[node], hi = t->first[node + 1];
    if (hi - lo <= 8) {
        for (; lo < hi; lo++)
            if (t->label[lo] == c)
                return t->child[lo];
        return -1;
    }
    while (lo < hi) {
        uint32_t mid = (lo + hi) / 2;
        if (t->label[mid] < c)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < t->first[node + 1] && t->label[lo] == c ? t->child[lo] : -1;
}

/* Length of the longest key that is a prefix of s[0..n), 0 if none. */
static size_t ptrie_longest(const ptrie *t, const uint8_t *s, size_t n)
{
    size_t best = 0;
    int32_t node = n ? t->root[s[0]] : -1;
    for (size_t L = 1; node >= 0; L++) {
        if (t->id[node] >= 0)
            best = L;
        if (L >= n)
            break;
        node = ptrie_child(t, node, s[L]);
    }
    return best;
}

/* ---- normalizer (spm Normalizer with a precompiled charsmap) ---------------- */

typedef struct {
    uint32_t     *units;       /* Darts double-array units (host order), or NULL */
    size_t        n_units;
    const char   *strs;        /* NUL-separated replacement strings               */
    size_t        strs_len;
    int           add_dummy_prefix, remove_extra_ws, escape_ws, ws_suffix;
    const ptrie  *user;        /* USER_DEFINED pieces, kept unnormalized; or NULL */
} norm_t;

#define NORM_MAX_RESULTS 32     /* spm's kMaxTrieResultsSize */

static mt_status norm_init(norm_t *nm, const mt_spm_normspec *spec, int ws_suffix, const ptrie *user,
                           const char *name, const char *which, mt_err *err)
{
    memset(nm, 0, sizeof *nm);
    nm->add_dummy_prefix = spec->add_dummy_prefix;
    nm->remove_extra_ws = spec->remove_extra_whitespaces;
    nm->escape_ws = spec->escape_whitespaces;
    nm->ws_suffix = ws_suffix;
    nm->user = user;
    const uint8_t *b = spec->charsmap.p;
    size_t n = spec->charsmap.n;
    if (n == 0)
        return MT_OK;
    uint32_t trie_size = n > 4 ? (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 |
                                     (uint32_t)b[3] << 24 : 0;
    if (n <= 4 || trie_size > n - 4)   /* spm checks trie_size < n, then over-reads */
        return mt_err_set(err, MT_ERR_FORMAT, "%s: %s precompiled_charsmap is broken (%zu bytes, trie %u bytes)",
                          name, which, n, trie_size);
    nm->n_units = trie_size / 4;
    if (nm->n_units) {
        nm->units = malloc(nm->n_units * sizeof *nm->units);
        if (!nm->units)
            return mt_err_set(err, MT_ERR_NOMEM, "%s: out of memory for the charsmap", name);
        for (size_t i = 0; i < nm->n_units; i++) {
            const uint8_t *u = b + 4 + 4 * i;
            nm->units[i] = (uint32_t)u[0] | (uint32_t)u[1] << 8 | (uint32_t)u[2] << 16 | (uint32_t)u[3] << 24;
        }
    }
    nm->strs = (const char *)b + 4 + trie_size;
    nm->strs_len = n - 4 - trie_size;
    return MT_OK;
}

static void norm_free(norm_t *nm)
{
    free(nm->units);
    nm->units = NULL;
}

/* Darts-clone commonPrefixSearch, keeping the longest of the first 32 matches
 * (as NormalizePrefix).  Returns the match length (0: none), *value its value.
 * Every unit index is bounds-checked. */
static size_t darts_longest(const norm_t *nm, const uint8_t *key, size_t len, uint32_t *value)
{
    const uint32_t *a = nm->units;
    size_t n = nm->n_units, best = 0;
    int found = 0;
    if (!n)
        return 0;
#define DA_OFFSET(u) (((u) >> 10) << (((u) & (1u << 9)) >> 6))
    size_t pos = DA_OFFSET(a[0]);
    for (size_t i = 0; i < len; i++) {
        pos ^= key[i];
        if (pos >= n)
            break;
        uint32_t u = a[pos];
        if ((u & 0x800000FFu) != key[i])
            break;
        pos ^= DA_OFFSET(u);
        if ((u >> 8) & 1) {
            if (pos >= n)
                break;
            best = i + 1;
            *value = a[pos] & 0x7FFFFFFFu;
            if (++found == NORM_MAX_RESULTS)
                break;
        }
    }
#undef DA_OFFSET
    return best;
}

/* NormalizePrefix: the replacement for the start of s (*out, *out_n) and the
 * number of input bytes it consumes (>= 1 for len >= 1). */
static size_t norm_prefix(const norm_t *nm, const uint8_t *s, size_t len, const uint8_t **out, size_t *out_n)
{
    if (nm->user) {
        size_t m = ptrie_longest(nm->user, s, len);
        if (m) {
            *out = s;
            *out_n = m;
            return m;
        }
    }
    uint32_t v = 0;
    size_t m = darts_longest(nm, s, len, &v);
    if (m) {
        if (v < nm->strs_len) {
            *out = (const uint8_t *)nm->strs + v;
            *out_n = strnlen(nm->strs + v, nm->strs_len - v);
        } else {                         /* hostile file: value past the strings */
            *out = (const uint8_t *)"";
            *out_n = 0;
        }
        return m;
    }
    uint32_t cp;
    size_t n = mt_utf8_decode(s, len, &cp);
    if (!n) {                            /* malformed: U+FFFD, consume one byte */
        *out = (const uint8_t *)"\xEF\xBF\xBD";
        *out_n = 3;
        return 1;
    }
    *out = s;
    *out_n = n;
    return n;
}

static int norm_add_ws(const norm_t *nm, sbuf *o)
{
    return nm->escape_ws ? sb_add(o, SPACE_SYM, SPACE_SYM_LEN) : sb_add(o, " ", 1);
}

/* Normalizer::Normalize, appending to o. */
static int norm_run(const norm_t *nm, const uint8_t *s, size_t len, sbuf *o)
{
    const size_t start = o->n;
    const uint8_t *sp;
    size_t spn;
    if (sb_reserve(o, 1))
        return -1;
    o->p[o->n] = '\0';
    if (nm->remove_extra_ws) {            /* leading whitespace (after mapping) */
        while (len) {
            size_t c = norm_prefix(nm, s, len, &sp, &spn);
            if (spn != 1 || sp[0] != ' ')
                break;
            s += c;
            len -= c;
        }
    }
    if (!len)
        return 0;
    if (!nm->ws_suffix && nm->add_dummy_prefix && norm_add_ws(nm, o))
        return -1;
    int prev_space = nm->remove_extra_ws;
    while (len) {
        size_t c = norm_prefix(nm, s, len, &sp, &spn);
        while (prev_space && spn && sp[0] == ' ') {
            sp++;
            spn--;
        }
        if (spn) {
            if (spn > SIZE_MAX / 4 || sb_reserve(o, spn * SPACE_SYM_LEN + 1))
                return -1;
            for (size_t i = 0; i < spn; i++) {
                if (nm->escape_ws && sp[i] == ' ') {
                    memcpy(o->p + o->n, SPACE_SYM, SPACE_SYM_LEN);
                    o->n += SPACE_SYM_LEN;
                } else {
                    o->p[o->n++] = (char)sp[i];
                }
            }
            o->p[o->n] = '\0';
            prev_space = sp[spn - 1] == ' ';
        }
        s += c;
        len -= c;
        if (!nm->remove_extra_ws)
            prev_space = 0;
    }
    if (nm->remove_extra_ws) {            /* trailing whitespace */
        const char *ws = nm->escape_ws ? SPACE_SYM : " ";
        size_t wn = nm->escape_ws ? SPACE_SYM_LEN : 1;
        while (o->n - start >= wn && memcmp(o->p + o->n - wn, ws, wn) == 0)
            o->n -= wn;
        o->p[o->n] = '\0';
    }
    if (nm->ws_suffix && nm->add_dummy_prefix && norm_add_ws(nm, o))
        return -1;
    return 0;
}

/* ---- the spm model ---------------------------------------------------------- */

struct mt_spm {
    char         *name;        /* file name for messages */
    uint8_t      *buf;         /* the file; piece strings point into it */
    size_t        buf_len;
    mt_spm_proto  m;
    int           unk_id;      /* index of the UNKNOWN piece */
    float         min_score, max_score;
    char         *arena;       /* NUL-terminated copies of the pieces; m.piece points here */
    ptrie         match;       /* NORMAL, USER_DEFINED, UNUSED pieces */
    ptrie         user;        /* USER_DEFINED pieces only            */
    int           has_user;
    norm_t        norm, denorm;
    int           has_denorm;
    smap          ids;         /* piece -> id (PieceToId: reserved pieces win) */
    int32_t       byte_id[256];/* <0xXX> piece ids (byte_fallback)    */
    int16_t      *byte_val;    /* [n_pieces] byte of a BYTE piece, or -1 (NULL without byte_fallback) */
};

static int is_reserved_type(int t)
{
    return t == MT_SPM_UNKNOWN || t == MT_SPM_CONTROL || t == MT_SPM_BYTE;
}

static const char *model_type_name(int t)
{
    switch (t) {
    case MT_SPM_BPE:  return "BPE";
    case MT_SPM_WORD: return "WORD";
    case MT_SPM_CHAR: return "CHAR";
    default:          return "unknown";
    }
}

/* "<0xXX>" (upper-case hex, as spm's ByteToPiece) -> byte, else -1. */
static int piece_to_byte(const uint8_t *p, size_t n)
{
    static const char hex[] = "0123456789ABCDEF";
    if (n != 6 || memcmp(p, "<0x", 3) != 0 || p[5] != '>')
        return -1;
    const char *h = memchr(hex, p[3], 16), *l = memchr(hex, p[4], 16);
    if (!h || !l || !p[3] || !p[4])
        return -1;
    return (int)((h - hex) * 16 + (l - hex));
}

/* ModelInterface::InitializePieces + unigram::Model setup. */
static mt_status spm_init_pieces(mt_spm *sp, mt_err *err)
{
    const mt_spm_proto *m = &sp->m;
    const char *name = sp->name;
    int n = m->n_pieces, n_match = 0, n_user = 0, n_bytes = 0;
    size_t total = 0;
    for (int i = 0; i < n; i++)
        total += m->piece[i].n + 1;
    sp->arena = malloc(total);
    if (!sp->arena || smap_init(&sp->ids, (size_t)n))
        return mt_err_set(err, MT_ERR_NOMEM, "%s: out of memory", name);
    for (size_t i = 0, off = 0; i < (size_t)n; i++) {   /* pieces become C strings */
        mt_spm_bytes *p = &sp->m.piece[i];
        if (p->n)
            memcpy(sp->arena + off, p->p, p->n);
        sp->arena[off + p->n] = '\0';
        p->p = (const uint8_t *)sp->arena + off;
        off += p->n + 1;
    }
    sp->unk_id = -1;
    sp->min_score = 3.40282347e+38f;        /* FLT_MAX */
    sp->max_score = 1.17549435e-38f;        /* FLT_MIN, as spm (not -FLT_MAX) */
    for (int i = 0; i < 256; i++)
        sp->byte_id[i] = -1;
    if (m->byte_fallback) {
        sp->byte_val = malloc((size_t)n * sizeof *sp->byte_val);
        if (!sp->byte_val)
            return mt_err_set(err, MT_ERR_NOMEM, "%s: out of memory", name);
    }
    for (int i = 0; i < n; i++) {
        const mt_spm_bytes *p = &m->piece[i];
        int t = m->type[i];
        if (p->n == 0)
            return mt_err_set(err, MT_ERR_FORMAT, "%s: piece %d is empty", name, i);
        if (memchr(p->p, 0, p->n) || p->n > UINT32_MAX / 2)
            return mt_err_set(err, MT_ERR_FORMAT, "%s: piece %d contains a NUL byte", name, i);
        smap_ent *e = smap_slot(&sp->ids, (const char *)p->p, p->n);
        if (e->k) {
            int same_class = is_reserved_type(t) == is_reserved_type(m->type[e->v]);
            if (same_class)
                return mt_err_set(err, MT_ERR_FORMAT, "%s: piece %d \"%.*s\" is already defined (piece %d)",
                                  name, i, (int)(p->n > 64 ? 64 : p->n), (const char *)p->p, e->v);
            if (is_reserved_type(t))
                e->v = i;                   /* PieceToId looks at reserved pieces first */
        } else {
            *e = (smap_ent){ (const char *)p->p, (uint32_t)p->n, i };
        }
        if (sp->byte_val)
            sp->byte_val[i] = -1;
        if (t == MT_SPM_NORMAL || t == MT_SPM_USER_DEFINED || t == MT_SPM_UNUSED)
            n_match++;
        if (t == MT_SPM_USER_DEFINED)
            n_user++;
        if (t == MT_SPM_NORMAL) {
            if (m->score[i] < sp->min_score)
                sp->min_score = m->score[i];
            if (m->score[i] > sp->max_score)
                sp->max_score = m->score[i];
        }
        if (t == MT_SPM_UNKNOWN) {
            if (sp->unk_id >= 0)
                return mt_err_set(err, MT_ERR_FORMAT, "%s: more than one UNKNOWN piece (%d and %d)",
                                  name, sp->unk_id, i);
            sp->unk_id = i;
        }
        if (t == MT_SPM_BYTE) {
            int b = piece_to_byte(p->p, p->n);
            if (!m->byte_fallback)
                return mt_err_set(err, MT_ERR_FORMAT, "%s: byte piece %d found although byte_fallback is false",
                                  name, i);
            if (b < 0)
                return mt_err_set(err, MT_ERR_FORMAT, "%s: byte piece %d \"%.*s\" is invalid", name, i,
                                  (int)(p->n > 64 ? 64 : p->n), (const char *)p->p);
            if (sp->byte_id[b] < 0)
                n_bytes++;
            sp->byte_id[b] = i;
            sp->byte_val[i] = (int16_t)b;
        }
    }
    if (sp->unk_id < 0)
        return mt_err_set(err, MT_ERR_FORMAT, "%s: no UNKNOWN piece", name);
    if (m->byte_fallback && n_bytes != 256)
        return mt_err_set(err, MT_ERR_FORMAT, "%s: byte_fallback is set but only %d of 256 byte pieces exist",
                          name, n_bytes);
    if (n_match == 0)
        return mt_err_set(err, MT_ERR_FORMAT, "%s: no matchable (normal) pieces", name);

    tkey *keys = malloc((size_t)n_match * sizeof *keys);
    tkey *ukeys = n_user ? malloc((size_t)n_user * sizeof *ukeys) : NULL;
    if (!keys || (n_user && !ukeys)) {
        free(keys);
        free(ukeys);
        return mt_err_set(err, MT_ERR_NOMEM, "%s: out of memory", name);
    }
    int k = 0, u = 0;
    for (int i = 0; i < n; i++) {
        int t = m->type[i];
        tkey key = { m->piece[i].p, (uint32_t)m->piece[i].n, i };
        if (t == MT_SPM_NORMAL || t == MT_SPM_USER_DEFINED || t == MT_SPM_UNUSED)
            keys[k++] = key;
        if (t == MT_SPM_USER_DEFINED)
            ukeys[u++] = key;
    }
    /* spm allows one reserved and one normal piece per string, never two of a
     * class.  The id map above keeps one id per string (the reserved one wins),
     * so NORMAL "x", CONTROL "x", NORMAL "x" passed it, and ptrie_build, which
     * needs unique keys, read past the end of the duplicate (fuzz_spm_model,
     * tests/fuzz/crashers/spm_model/duplicate-normal-after-reserved).  The
     * matchable pieces are exactly the normal class: no two may be equal. */
    qsort(keys, (size_t)n_match, sizeof *keys, tkey_cmp);
    for (int j = 1; j < n_match; j++)
        if (tkey_cmp(&keys[j - 1], &keys[j]) == 0) {
            int a = keys[j - 1].id < keys[j].id ? keys[j - 1].id : keys[j].id;
            int b = keys[j - 1].id < keys[j].id ? keys[j].id : keys[j - 1].id;
            free(keys);
            free(ukeys);
            return mt_err_set(err, MT_ERR_FORMAT, "%s: piece %d \"%.*s\" is already defined (piece %d)", name, b,
                              (int)(m->piece[b].n > 64 ? 64 : m->piece[b].n), (const char *)m->piece[b].p, a);
        }
    int bad = ptrie_build(&sp->match, keys, (size_t)n_match);
    if (!bad && n_user) {
        bad = ptrie_build(&sp->user, ukeys, (size_t)n_user);
        sp->has_user = !bad;
    }
    free(keys);
    free(ukeys);
    if (bad)
        return mt_err_set(err, MT_ERR_NOMEM, "%s: out of memory building the piece trie", name);
    return MT_OK;
}

void mt_spm_free(mt_spm *sp)
{
    if (!sp)
        return;
    ptrie_free(&sp->match);
    ptrie_free(&sp->user);
    norm_free(&sp->norm);
    norm_free(&sp->denorm);
    free(sp->ids.e);
    free(sp->byte_val);
    free(sp->arena);
    mt_spm_proto_free(&sp->m);
    free(sp->buf);
    free(sp->name);
    free(sp);
}

/* Takes ownership of buf (freed on failure too). */
static mt_status spm_load_owned(uint8_t *buf, size_t len, const char *name, mt_spm **out, mt_err *err)
{
    *out = NULL;
    mt_spm *sp = calloc(1, sizeof *sp);
    if (!sp) {
        free(buf);
        return mt_err_set(err, MT_ERR_NOMEM, "%s: out of memory", name);
    }
    sp->buf = buf;
    sp->buf_len = len;
    sp->name = strdup(name);
    if (!sp->name) {
        mt_spm_free(sp);
        return mt_err_set(err, MT_ERR_NOMEM, "%s: out of memory", name);
    }
    mt_status st = mt_spm_proto_parse(buf, len, name, &sp->m, err);
    if (!st && sp->m.model_type != MT_SPM_UNIGRAM)
        st = mt_err_set(err, MT_ERR_UNSUPPORTED,
                        "%s: SentencePiece model type %s is not supported (only unigram models are)",
                        name, model_type_name(sp->m.model_type));
    if (!st)
        st = spm_init_pieces(sp, err);
    if (!st)
        st = norm_init(&sp->norm, &sp->m.normalizer, sp->m.treat_whitespace_as_suffix,
                       sp->has_user ? &sp->user : NULL, name, "normalizer", err);
    if (!st && sp->m.denormalizer.present && sp->m.denormalizer.charsmap.n) {
        st = norm_init(&sp->denorm, &sp->m.denormalizer, 0, NULL, name, "denormalizer", err);
        sp->has_denorm = !st;
    }
    if (st) {
        mt_spm_free(sp);
        return st;
    }
    *out = sp;
    return MT_OK;
}

mt_status mt_spm_load_mem(const void *data, size_t len, mt_spm **out, mt_err *err)
{
    if (!out || (!data && len))
        return mt_err_set(err, MT_ERR_INPUT, "mt_spm_load_mem: bad arguments");
    *out = NULL;
    uint8_t *buf = malloc(len ? len : 1);
    if (!buf)
        return mt_err_set(err, MT_ERR_NOMEM, "(memory): out of memory for %zu bytes", len);
    if (len)
        memcpy(buf, data, len);
    return spm_load_owned(buf, len, "(memory)", out, err);
}

static mt_status read_file(const char *path, uint8_t **out, size_t *out_len, mt_err *err)
{
    *out = NULL;
    FILE *f = fopen(path, "rb");
    if (!f)
        return mt_err_set(err, MT_ERR_IO, "%s: %s", path, strerror(errno));
    sbuf b = { 0 };
    for (;;) {
        if (sb_reserve(&b, 1 << 16)) {
            fclose(f);
            free(b.p);
            return mt_err_set(err, MT_ERR_NOMEM, "%s: out of memory reading the file", path);
        }
        size_t got = fread(b.p + b.n, 1, b.cap - b.n, f);
        b.n += got;
        if (got == 0)
            break;
    }
    int bad = ferror(f);
    fclose(f);
    if (bad) {
        free(b.p);
        return mt_err_set(err, MT_ERR_IO, "%s: read error", path);
    }
    *out = (uint8_t *)b.p;
    *out_len = b.n;
    return MT_OK;
}

mt_status mt_spm_load(const char *path, mt_spm **out, mt_err *err)
{
    if (!path || !out)
        return mt_err_set(err, MT_ERR_INPUT, "mt_spm_load: bad arguments");
    *out = NULL;
    uint8_t *buf;
    size_t len = 0;
    mt_status st = read_file(path, &buf, &len, err);
    if (st)
        return st;
    return spm_load_owned(buf, len, path, out, err);
}

int mt_spm_size(const mt_spm *sp)
{
    return sp ? sp->m.n_pieces : 0;
}

const char *mt_spm_piece(const mt_spm *sp, int32_t id, size_t *len)
{
    if (!sp || id < 0 || id >= sp->m.n_pieces)
        return NULL;
    if (len)
        *len = sp->m.piece[id].n;
    return (const char *)sp->m.piece[id].p;
}

int32_t mt_spm_unk_id(const mt_spm *sp)
{
    return sp ? sp->unk_id : -1;
}

mt_status mt_spm_normalize(const mt_spm *sp, const char *text, size_t len, char **out, size_t *out_len,
                           mt_err *err)
{
    if (!sp || (!text && len) || !out)
        return mt_err_set(err, MT_ERR_INPUT, "mt_spm_normalize: bad arguments");
    sbuf o = { 0 };
    if (norm_run(&sp->norm, (const uint8_t *)text, len, &o) || sb_reserve(&o, 1)) {
        free(o.p);
        return mt_err_set(err, MT_ERR_NOMEM, "mt_spm_normalize: out of memory");
    }
    o.p[o.n] = '\0';
    *out = o.p;
    if (out_len)
        *out_len = o.n;
    return MT_OK;
}

/* ---- unigram Viterbi ---------------------------------------------------------- */

typedef struct {
    float   score;   /* best path score ending here (float, as spm) */
    int32_t start;   /* start byte of the last piece, -1: unset     */
    int32_t id;
} vnode;

/* Model::EncodeOptimized over s[0..n); best has n + 1 entries. */
static void viterbi(const mt_spm *sp, const uint8_t *s, size_t n, vnode *best)
{
    const ptrie *t = &sp->match;
    const float *score = sp->m.score;
    const uint8_t *type = sp->m.type;
    const float unk_score = sp->min_score - 10.0f;     /* kUnkPenalty */
    for (size_t i = 0; i <= n; i++)
        best[i] = (vnode){ 0.0f, -1, -1 };
    size_t pos = 0;
    while (pos < n) {
        size_t mblen = one_char_len(s[pos]);
        if (mblen > n - pos)
            mblen = n - pos;
        const float base = best[pos].score;
        int has_single = 0;
        int32_t node = t->root[s[pos]];
        for (size_t L = 1; node >= 0; L++) {
            int32_t id = t->id[node];
            if (id >= 0 && type[id] != MT_SPM_UNUSED) {
                /* spm: `score` is double (the ternary mixes in 0.1), the sum is
                 * double, compared against and rounded to the stored float. */
                double sc = type[id] == MT_SPM_USER_DEFINED ? (double)((float)L * sp->max_score) - 0.1
                                                            : (double)score[id];
                double cand = sc + (double)base;
                vnode *e = &best[pos + L];
                if (e->start < 0 || cand > (double)e->score)
                    *e = (vnode){ (float)cand, (int32_t)pos, id };
                if (L == mblen)
                    has_single = 1;
            }
            if (pos + L >= n)
                break;
            node = ptrie_child(t, node, s[pos + L]);
        }
        if (!has_single) {
            float cand = unk_score + base;                 /* float arithmetic, as spm */
            vnode *e = &best[pos + mblen];
            if (e->start < 0 || cand > e->score)
                *e = (vnode){ cand, (int32_t)pos, sp->unk_id };
        }
        pos += mblen;
    }
}

void mt_pieces_free(mt_pieces *p)
{
    if (!p)
        return;
    free(p->id);
    free(p->off);
    free(p->len);
    free(p->text);
    memset(p, 0, sizeof *p);
}

static int pieces_reserve(mt_pieces *p, size_t n)
{
    if (n <= (size_t)p->cap)
        return 0;
    if (n > INT_MAX / 2)
        return -1;
    int cap = p->cap ? p->cap : 16;
    while ((size_t)cap < n)
        cap *= 2;
    int32_t *id = realloc(p->id, (size_t)cap * sizeof *id);
    if (id)
        p->id = id;
    uint32_t *off = realloc(p->off, (size_t)cap * sizeof *off);
    if (off)
        p->off = off;
    uint32_t *len = realloc(p->len, (size_t)cap * sizeof *len);
    if (len)
        p->len = len;
    if (!id || !off || !len)
        return -1;
    p->cap = cap;
    return 0;
}

/* The normalized text is out->text; pieces are its substrings, except byte
 * pieces ("<0xXX>"), whose strings are appended after it. */
static mt_status spm_encode_pieces(const mt_spm *sp, const uint8_t *text, size_t len, mt_pieces *out,
                                   mt_err *err)
{
    sbuf o = { out->text, 0, out->text_cap };
    out->n = 0;
    int bad = norm_run(&sp->norm, text, len, &o);
    out->text = o.p;
    out->text_cap = o.cap;
    out->text_len = o.n;
    if (bad)
        return mt_err_set(err, MT_ERR_NOMEM, "%s: out of memory normalizing %zu bytes", sp->name, len);
    size_t n = o.n;
    if (n > MAX_TEXT)
        return mt_err_set(err, MT_ERR_TOO_LONG, "%s: text too long (%zu normalized bytes)", sp->name, n);
    if (n == 0)
        return MT_OK;

    vnode *best = malloc((n + 1) * sizeof *best);
    if (!best)
        return mt_err_set(err, MT_ERR_NOMEM, "%s: out of memory for %zu bytes", sp->name, n);
    viterbi(sp, (const uint8_t *)o.p, n, best);

    size_t count = 0;
    for (size_t e = n; e > 0; e = (size_t)best[e].start) {
        if (best[e].start < 0 || (size_t)best[e].start >= e) {   /* cannot happen */
            free(best);
            return mt_err_set(err, MT_ERR_INTERNAL, "%s: broken Viterbi path at byte %zu", sp->name, e);
        }
        count++;
    }
    if (pieces_reserve(out, count)) {
        free(best);
        return mt_err_set(err, MT_ERR_NOMEM, "%s: out of memory for %zu pieces", sp->name, count);
    }
    size_t i = count;
    for (size_t e = n; e > 0; e = (size_t)best[e].start) {
        i--;
        out->id[i] = best[e].id;
        out->off[i] = (uint32_t)best[e].start;
        out->len[i] = (uint32_t)(e - (size_t)best[e].start);
    }
    free(best);

    /* PopulateSentencePieceText: merge runs of unknown pieces (contiguous in
     * the normalized text); with byte_fallback they are split into bytes
     * instead (spm_expand_bytes). */
    int unk = sp->unk_id, w = 0;
    for (size_t r = 0; r < count; r++) {
        if (out->id[r] == unk && w > 0 && out->id[w - 1] == unk && !sp->m.byte_fallback) {
            out->len[w - 1] += out->len[r];
            continue;
        }
        out->id[w] = out->id[r];
        out->off[w] = out->off[r];
        out->len[w] = out->len[r];
        w++;
    }
    out->n = w;
    return MT_OK;
}

/* With byte_fallback, replace every unknown piece by one <0xXX> piece per
 * byte; the piece strings are appended after the normalized text. */
static mt_status spm_expand_bytes(const mt_spm *sp, mt_pieces *out, mt_err *err)
{
    static const char hex[] = "0123456789ABCDEF";
    size_t n_unk = 0, n_unk_bytes = 0;
    for (int i = 0; i < out->n; i++) {
        if (out->id[i] == sp->unk_id) {
            n_unk++;
            n_unk_bytes += out->len[i];
        }
    }
    if (!n_unk)
        return MT_OK;
    size_t total = (size_t)out->n - n_unk + n_unk_bytes;
    sbuf t = { out->text, out->text_len, out->text_cap };
    int bad = pieces_reserve(out, total) || sb_reserve(&t, n_unk_bytes * 6 + 1);
    out->text = t.p;
    out->text_cap = t.cap;
    if (bad || t.n + n_unk_bytes * 6 > UINT32_MAX)
        return mt_err_set(err, MT_ERR_NOMEM, "%s: out of memory", sp->name);
    /* Fill from the back so that nothing is overwritten before it is read. */
    size_t w = total, toff = t.n + n_unk_bytes * 6;
    for (int r = out->n - 1; r >= 0; r--) {
        if (out->id[r] != sp->unk_id) {
            w--;
            out->id[w] = out->id[r];
            out->off[w] = out->off[r];
            out->len[w] = out->len[r];
            continue;
        }
        uint32_t off = out->off[r];
        for (uint32_t k = out->len[r]; k-- > 0;) {
            uint8_t b = (uint8_t)t.p[off + k];
            toff -= 6;
            memcpy(t.p + toff, "<0x", 3);
            t.p[toff + 3] = hex[b >> 4];
            t.p[toff + 4] = hex[b & 15];
            t.p[toff + 5] = '>';
            w--;
            out->id[w] = sp->byte_id[b];
            out->off[w] = (uint32_t)toff;
            out->len[w] = 6;
        }
    }
    t.n += n_unk_bytes * 6;
    t.p[t.n] = '\0';
    out->text_len = t.n;
    out->n = (int)total;
    return MT_OK;
}

mt_status mt_spm_encode(const mt_spm *sp, const char *text, size_t len, mt_pieces *out, mt_err *err)
{
    if (!sp || (!text && len) || !out)
        return mt_err_set(err, MT_ERR_INPUT, "mt_spm_encode: bad arguments");
    if (len > MAX_TEXT)
        return mt_err_set(err, MT_ERR_TOO_LONG, "%s: text too long (%zu bytes)", sp->name, len);
    mt_status st = spm_encode_pieces(sp, (const uint8_t *)text, len, out, err);
    if (!st && sp->m.byte_fallback)
        st = spm_expand_bytes(sp, out, err);
    if (st)
        out->n = 0;
    return st;
}

/* ---- spm decoding (SentencePieceProcessor::Decode on piece strings) --------- */

typedef struct {
    const char *p;     /* piece string */
    size_t      n;
    int32_t     id;    /* PieceToId(piece) in the decoding spm */
} dpiece;

/* PieceToId: reserved pieces first, then normal pieces, else the unknown id. */
static int32_t spm_piece_to_id(const mt_spm *sp, const char *p, size_t n)
{
    int32_t id = smap_get(&sp->ids, p, n);
    return id >= 0 ? id : sp->unk_id;
}

/* Consecutive byte pieces -> their bytes, one U+FFFD per malformed byte. */
static int spm_decode_bytes(const mt_spm *sp, const dpiece *pc, int lo, int hi, sbuf *o)
{
    if (lo >= hi)
        return 0;
    uint8_t small[64], *b = hi - lo <= 64 ? small : malloc((size_t)(hi - lo));
    if (!b)
        return -1;
    size_t n = 0;
    for (int i = lo; i < hi; i++)
        b[n++] = (uint8_t)sp->byte_val[pc[i].id];
    int bad = 0;
    for (size_t i = 0; i < n && !bad;) {
        uint32_t cp;
        size_t k = mt_utf8_decode(b + i, n - i, &cp);
        if (!k) {
            bad = sb_add(o, "\xEF\xBF\xBD", 3);
            i++;
        } else {
            bad = sb_add(o, b + i, k);
            i += k;
        }
    }
    if (b != small)
        free(b);
    return bad;
}

/* Appends the decoded text of pc[0..n) to o. */
static int spm_decode(const mt_spm *sp, const dpiece *pc, int n, sbuf *o)
{
    const size_t start = o->n;
    const uint8_t *type = sp->m.type;
    int byte_start = 0, is_bos_ws = 1, bos_ws_seen = 0;
    if (sb_reserve(o, 1))
        return -1;
    o->p[o->n] = '\0';
    for (int i = 0; i < n; i++) {
        int t = type[pc[i].id];
        if (t == MT_SPM_BYTE)
            continue;
        if (spm_decode_bytes(sp, pc, byte_start, i, o))
            return -1;
        if (bos_ws_seen || o->n > start)
            is_bos_ws = 0;
        byte_start = i + 1;
        bos_ws_seen = 0;
        const char *p = pc[i].p;
        size_t pn = pc[i].n;
        if (t == MT_SPM_CONTROL)
            continue;                                   /* <s>, </s>: invisible */
        if (t == MT_SPM_UNKNOWN) {
            const mt_spm_bytes *u = &sp->m.piece[pc[i].id];
            int is_unk_piece = u->n == pn && memcmp(u->p, p, pn) == 0;
            if (is_unk_piece ? sb_add(o, sp->m.unk_surface.p, sp->m.unk_surface.n) : sb_add(o, p, pn))
                return -1;
            continue;
        }
        if (is_bos_ws && (sp->norm.add_dummy_prefix || sp->norm.remove_extra_ws)) {
            if (pn >= SPACE_SYM_LEN && memcmp(p, SPACE_SYM, SPACE_SYM_LEN) == 0) {
                p += SPACE_SYM_LEN;
                pn -= SPACE_SYM_LEN;
                bos_ws_seen = 1;
            }
            if (sp->norm.remove_extra_ws)
                bos_ws_seen = 0;
        }
        if (sb_reserve(o, pn + 1))
            return -1;
        for (size_t k = 0; k < pn;) {
            if (pn - k >= SPACE_SYM_LEN && memcmp(p + k, SPACE_SYM, SPACE_SYM_LEN) == 0) {
                o->p[o->n++] = ' ';
                k += SPACE_SYM_LEN;
            } else {
                o->p[o->n++] = p[k++];
            }
        }
        o->p[o->n] = '\0';
    }
    if (spm_decode_bytes(sp, pc, byte_start, n, o))
        return -1;
    if (sp->has_denorm) {
        sbuf d = { 0 };
        if (norm_run(&sp->denorm, (const uint8_t *)o->p + start, o->n - start, &d)) {
            free(d.p);
            return -1;
        }
        o->n = start;
        int bad = sb_add(o, d.p ? d.p : "", d.n);
        free(d.p);
        return bad;
    }
    return 0;
}

/* ---- Marian vocabulary ----------------------------------------------------------- */

typedef struct {
    char        *arena;      /* every key, NUL-terminated                 */
    smap         map;        /* piece -> id                               */
    const char **piece;      /* [size] id -> piece (NULL for unused ids)  */
    uint32_t    *piece_len;  /* [size]                                    */
    int32_t      size;       /* max id + 1                                */
    int32_t      eos, unk, pad;
} vocab_t;

struct mt_tokenizer {
    mt_spm  *src, *tgt;
    vocab_t  vocab;          /* vocab.json                                      */
    vocab_t  tvocab;         /* target_vocab.json (separate_vocabs only)        */
    int      separate;
    int32_t *src_map;        /* [src spm size] spm id -> Marian id (vocab)      */
    int32_t *tgt_map;        /* [tgt spm size] spm id -> Marian id (dec vocab)  */
    int32_t *dec_spm;        /* [dec vocab size] target spm id of each piece    */
    int32_t  dec_unk_spm;    /* target spm id of "<unk>" (ids without a piece)  */
    int      clean_up;       /* clean_up_tokenization_spaces                    */
};

static void vocab_free(vocab_t *v)
{
    free(v->arena);
    free(v->map.e);
    free(v->piece);
    free(v->piece_len);
    memset(v, 0, sizeof *v);
}

static mt_status special_id(const vocab_t *v, const char *tok, int32_t *out, const char *path, mt_err *err)
{
    *out = smap_get(&v->map, tok, strlen(tok));
    if (*out < 0)
        return mt_err_set(err, MT_ERR_FORMAT, "%s: special token \"%s\" is missing", path, tok);
    return MT_OK;
}

typedef struct {
    const char *eos, *unk, *pad;
} special_tokens;

static mt_status vocab_load(vocab_t *v, const char *path, const special_tokens *sp_tok, mt_err *err)
{
    json_error_t je;
    memset(v, 0, sizeof *v);
    json_t *root = json_load_file(path, JSON_ALLOW_NUL, &je);
    if (!root) {
        FILE *f = fopen(path, "rb");
        if (!f)
            return mt_err_set(err, MT_ERR_IO, "%s: %s", path, strerror(errno));
        fclose(f);
        return mt_err_set(err, MT_ERR_FORMAT, "%s: line %d: %s", path, je.line, je.text);
    }
    mt_status st = MT_OK;
    const char *key;
    size_t klen, total = 0;
    json_t *val;
    int32_t max_id = -1;
    if (!json_is_object(root)) {
        st = mt_err_set(err, MT_ERR_FORMAT, "%s: not a JSON object", path);
        goto out;
    }
    json_object_keylen_foreach(root, key, klen, val) {
        json_int_t id = json_is_integer(val) ? json_integer_value(val) : -1;
        if (id < 0 || id >= MAX_VOCAB_ID || klen > UINT32_MAX / 2) {
            st = mt_err_set(err, MT_ERR_FORMAT, "%s: entry \"%.64s\" is not an id in [0, %d)", path, key,
                            MAX_VOCAB_ID);
            goto out;
        }
        if (id > max_id)
            max_id = (int32_t)id;
        total += klen + 1;
    }
    if (max_id < 0) {
        st = mt_err_set(err, MT_ERR_FORMAT, "%s: empty vocabulary", path);
        goto out;
    }
    v->size = max_id + 1;
    v->arena = malloc(total);
    v->piece = calloc((size_t)v->size, sizeof *v->piece);
    v->piece_len = calloc((size_t)v->size, sizeof *v->piece_len);
    if (!v->arena || !v->piece || !v->piece_len || smap_init(&v->map, json_object_size(root))) {
        st = mt_err_set(err, MT_ERR_NOMEM, "%s: out of memory", path);
        goto out;
    }
    size_t off = 0;
    json_object_keylen_foreach(root, key, klen, val) {
        int32_t id = (int32_t)json_integer_value(val);
        char *k = v->arena + off;
        memcpy(k, key, klen);
        k[klen] = '\0';
        off += klen + 1;
        smap_ent *e = smap_slot(&v->map, k, klen);
        *e = (smap_ent){ k, (uint32_t)klen, id };
        v->piece[id] = k;                   /* last key with this id wins, as {i: p} in Python */
        v->piece_len[id] = (uint32_t)klen;
    }
    if (!(st = special_id(v, sp_tok->eos, &v->eos, path, err)) &&
        !(st = special_id(v, sp_tok->unk, &v->unk, path, err)))
        st = special_id(v, sp_tok->pad, &v->pad, path, err);
out:
    json_decref(root);
    if (st)
        vocab_free(v);
    return st;
}

/* spm id -> Marian id for every piece of sp (absent pieces -> <unk>). */
static int32_t *map_spm(const mt_spm *sp, const vocab_t *v)
{
    int n = sp->m.n_pieces;
    int32_t *map = malloc((size_t)n * sizeof *map);
    if (!map)
        return NULL;
    for (int i = 0; i < n; i++) {
        int32_t id = smap_get(&v->map, (const char *)sp->m.piece[i].p, sp->m.piece[i].n);
        map[i] = id >= 0 ? id : v->unk;
    }
    return map;
}

/* A special-token string from tokenizer_config.json: "..." or {"content": "..."}. */
static const char *config_token(json_t *cfg, const char *field, const char *dflt)
{
    json_t *t = json_object_get(cfg, field);
    if (json_is_object(t))
        t = json_object_get(t, "content");
    return json_is_string(t) ? json_string_value(t) : dflt;
}

static mt_status join_path(char *buf, size_t cap, const char *dir, const char *file, mt_err *err)
{
    int n = snprintf(buf, cap, "%s/%s", dir, file);
    if (n < 0 || (size_t)n >= cap)
        return mt_err_set(err, MT_ERR_INPUT, "%s: path too long", dir);
    return MT_OK;
}

void mt_tokenizer_free(mt_tokenizer *tok)
{
    if (!tok)
        return;
    mt_spm_free(tok->src);
    mt_spm_free(tok->tgt);
    vocab_free(&tok->vocab);
    vocab_free(&tok->tvocab);
    free(tok->src_map);
    free(tok->tgt_map);
    free(tok->dec_spm);
    free(tok);
}

static const vocab_t *dec_vocab(const mt_tokenizer *tok)
{
    return tok->separate ? &tok->tvocab : &tok->vocab;
}

mt_status mt_tokenizer_load(const char *model_dir, mt_tokenizer **out, mt_err *err)
{
    char path[4096];
    json_t *cfg = NULL;
    mt_status st;
    if (!model_dir || !out)
        return mt_err_set(err, MT_ERR_INPUT, "mt_tokenizer_load: bad arguments");
    *out = NULL;
    mt_tokenizer *tok = calloc(1, sizeof *tok);
    if (!tok)
        return mt_err_set(err, MT_ERR_NOMEM, "%s: out of memory", model_dir);

    /* tokenizer_config.json is optional; when present it must parse. */
    if ((st = join_path(path, sizeof path, model_dir, "tokenizer_config.json", err)))
        goto fail;
    FILE *f = fopen(path, "rb");
    if (f) {
        json_error_t je;
        fclose(f);
        cfg = json_load_file(path, 0, &je);
        if (!json_is_object(cfg)) {
            st = mt_err_set(err, MT_ERR_FORMAT, "%s: line %d: %s", path, je.line,
                            cfg ? "not a JSON object" : je.text);
            goto fail;
        }
    }
    special_tokens sp_tok = {
        config_token(cfg, "eos_token", "</s>"),
        config_token(cfg, "unk_token", "<unk>"),
        config_token(cfg, "pad_token", "<pad>"),
    };
    tok->clean_up = json_is_true(json_object_get(cfg, "clean_up_tokenization_spaces"));
    tok->separate = json_is_true(json_object_get(cfg, "separate_vocabs"));

    if ((st = join_path(path, sizeof path, model_dir, "source.spm", err)) ||
        (st = mt_spm_load(path, &tok->src, err)) ||
        (st = join_path(path, sizeof path, model_dir, "target.spm", err)) ||
        (st = mt_spm_load(path, &tok->tgt, err)) ||
        (st = join_path(path, sizeof path, model_dir, "vocab.json", err)) ||
        (st = vocab_load(&tok->vocab, path, &sp_tok, err)))
        goto fail;
    if (tok->separate &&
        ((st = join_path(path, sizeof path, model_dir, "target_vocab.json", err)) ||
         (st = vocab_load(&tok->tvocab, path, &sp_tok, err))))
        goto fail;

    const vocab_t *dv = dec_vocab(tok);
    tok->src_map = map_spm(tok->src, &tok->vocab);
    tok->tgt_map = map_spm(tok->tgt, dv);
    tok->dec_spm = malloc((size_t)dv->size * sizeof *tok->dec_spm);
    if (!tok->src_map || !tok->tgt_map || !tok->dec_spm) {
        st = mt_err_set(err, MT_ERR_NOMEM, "%s: out of memory", model_dir);
        goto fail;
    }
    for (int32_t i = 0; i < dv->size; i++)
        tok->dec_spm[i] = dv->piece[i] ? spm_piece_to_id(tok->tgt, dv->piece[i], dv->piece_len[i]) : -1;
    tok->dec_unk_spm = spm_piece_to_id(tok->tgt, "<unk>", 5);
    json_decref(cfg);
    *out = tok;
    return MT_OK;
fail:
    json_decref(cfg);
    mt_tokenizer_free(tok);
    return st;
}

mt_status mt_tokenizer_encode(const mt_tokenizer *tok, const char *text, size_t len, int target,
                              int32_t *ids, int max_ids, int *n_ids, mt_err *err)
{
    if (!tok || (!text && len) || !n_ids || max_ids < 0 || (!ids && max_ids))
        return mt_err_set(err, MT_ERR_INPUT, "mt_tokenizer_encode: bad arguments");
    *n_ids = 0;
    size_t bad = utf8_invalid_at((const uint8_t *)text, len);
    if (bad < len)
        return mt_err_set(err, MT_ERR_INPUT, "input is not valid UTF-8 (byte 0x%02x at offset %zu)",
                          (uint8_t)text[bad], bad);
    const mt_spm *sp = target ? tok->tgt : tok->src;
    const vocab_t *v = target ? dec_vocab(tok) : &tok->vocab;
    const int32_t *map = target ? tok->tgt_map : tok->src_map;
    int count = 0;
#define EMIT(x) do { if (count < max_ids) ids[count] = (x); count++; } while (0)

    /* A leading ">>xx<<" language token is one vocab.json entry. */
    if (len >= 2 && text[0] == '>' && text[1] == '>') {
        const char *e = memmem(text, len, "<<", 2);
        if (e) {
            size_t n = (size_t)(e - text) + 2;
            int32_t id = smap_get(&v->map, text, n);
            EMIT(id >= 0 ? id : v->unk);
            text += n;
            len -= n;
        }
    }
    mt_pieces pc = { 0 };
    mt_status st = mt_spm_encode(sp, text, len, &pc, err);
    if (st) {
        mt_pieces_free(&pc);
        return st;
    }
    if ((size_t)pc.n + 2 > (size_t)INT_MAX) {
        mt_pieces_free(&pc);
        return mt_err_set(err, MT_ERR_TOO_LONG, "input too long (%d pieces)", pc.n);
    }
    for (int i = 0; i < pc.n; i++) {
        int32_t id = pc.id[i];
        if (id == sp->unk_id) {               /* a (merged) unknown surface: look the string up */
            id = smap_get(&v->map, pc.text + pc.off[i], pc.len[i]);
            EMIT(id >= 0 ? id : v->unk);
        } else {
            EMIT(map[id]);
        }
    }
    EMIT(v->eos);
#undef EMIT
    mt_pieces_free(&pc);
    *n_ids = count;
    if (count > max_ids)
        return mt_err_set(err, MT_ERR_TOO_LONG, "input needs %d token ids, at most %d allowed", count, max_ids);
    return MT_OK;
}

/* In-place str.replace(from, to) with strlen(to) <= strlen(from). */
static void replace_all(sbuf *b, const char *from, const char *to)
{
    size_t fn = strlen(from), tn = strlen(to), r = 0, w = 0;
    while (r < b->n) {
        if (b->n - r >= fn && memcmp(b->p + r, from, fn) == 0) {
            memmove(b->p + w, to, tn);
            w += tn;
            r += fn;
        } else {
            b->p[w++] = b->p[r++];
        }
    }
    b->n = w;
    b->p[w] = '\0';
}

/* HF v4 PreTrainedTokenizerBase.clean_up_tokenization. */
static void clean_up_tokenization(sbuf *b)
{
    static const char *const rep[][2] = {
        { " .", "." }, { " ?", "?" }, { " !", "!" }, { " ,", "," }, { " ' ", "'" },
        { " n't", "n't" }, { " 'm", "'m" }, { " 's", "'s" }, { " 've", "'ve" }, { " 're", "'re" },
    };
    for (size_t i = 0; i < sizeof rep / sizeof rep[0]; i++)
        replace_all(b, rep[i][0], rep[i][1]);
}

mt_status mt_tokenizer_decode(const mt_tokenizer *tok, const int32_t *ids, int n, char **out, mt_err *err)
{
    if (!tok || n < 0 || (!ids && n) || !out)
        return mt_err_set(err, MT_ERR_INPUT, "mt_tokenizer_decode: bad arguments");
    *out = NULL;
    const vocab_t *v = dec_vocab(tok);
    dpiece small[256], *pc = n <= 256 ? small : malloc((size_t)n * sizeof *pc);
    sbuf o = { 0 };
    if (!pc)
        return mt_err_set(err, MT_ERR_NOMEM, "mt_tokenizer_decode: out of memory for %d ids", n);
    int k = 0;
    for (int i = 0; i < n; i++) {
        int32_t id = ids[i];
        if (id == v->eos || id == v->unk || id == v->pad)
            continue;
        if (id >= 0 && id < v->size && v->piece[id])
            pc[k++] = (dpiece){ v->piece[id], v->piece_len[id], tok->dec_spm[id] };
        else                                    /* Python: inv.get(i, "<unk>") */
            pc[k++] = (dpiece){ "<unk>", 5, tok->dec_unk_spm };
    }
    int bad = sb_reserve(&o, 1);
    if (!bad) {
        o.p[0] = '\0';
        if (k)
            bad = spm_decode(tok->tgt, pc, k, &o);
    }
    if (pc != small)
        free(pc);
    if (bad) {
        free(o.p);
        return mt_err_set(err, MT_ERR_NOMEM, "mt_tokenizer_decode: out of memory");
    }
    py_strip(&o);
    if (tok->clean_up)
        clean_up_tokenization(&o);
    *out = o.p;
    return MT_OK;
}

const char *mt_tokenizer_piece(const mt_tokenizer *tok, int32_t id)
{
    if (!tok || id < 0 || id >= tok->vocab.size)
        return NULL;
    return tok->vocab.piece[id];
}

int32_t mt_tokenizer_piece_id(const mt_tokenizer *tok, const char *piece)
{
    return tok && piece ? smap_get(&tok->vocab.map, piece, strlen(piece)) : -1;
}

int mt_tokenizer_vocab_size(const mt_tokenizer *tok) { return tok ? tok->vocab.size : 0; }
int32_t mt_tokenizer_eos(const mt_tokenizer *tok) { return tok ? tok->vocab.eos : -1; }
int32_t mt_tokenizer_unk(const mt_tokenizer *tok) { return tok ? tok->vocab.unk : -1; }
int32_t mt_tokenizer_pad(const mt_tokenizer *tok) { return tok ? tok->vocab.pad : -1; }

mt_status mt_spm_decode(const mt_spm *sp, const int32_t *ids, int n, char **out, size_t *out_len, mt_err *err)
{
    if (!sp || n < 0 || (!ids && n) || !out)
        return mt_err_set(err, MT_ERR_INPUT, "mt_spm_decode: bad arguments");
    *out = NULL;
    dpiece small[256], *pc = n <= 256 ? small : malloc((size_t)n * sizeof *pc);
    if (!pc)
        return mt_err_set(err, MT_ERR_NOMEM, "mt_spm_decode: out of memory for %d ids", n);
    for (int i = 0; i < n; i++) {
        if (ids[i] < 0 || ids[i] >= sp->m.n_pieces) {
            if (pc != small)
                free(pc);
            return mt_err_set(err, MT_ERR_INPUT, "%s: invalid piece id %d (model has %d pieces)", sp->name,
                              ids[i], sp->m.n_pieces);
        }
        const mt_spm_bytes *p = &sp->m.piece[ids[i]];
        /* spm decodes IdToPiece(id) through PieceToId again */
        pc[i] = (dpiece){ (const char *)p->p, p->n, spm_piece_to_id(sp, (const char *)p->p, p->n) };
    }
    sbuf o = { 0 };
    int bad = sb_reserve(&o, 1);
    if (!bad) {
        o.p[0] = '\0';
        if (n)
            bad = spm_decode(sp, pc, n, &o);
    }
    if (pc != small)
        free(pc);
    if (bad) {
        free(o.p);
        return mt_err_set(err, MT_ERR_NOMEM, "mt_spm_decode: out of memory");
    }
    *out = o.p;
    if (out_len)
        *out_len = o.n;
    return MT_OK;
}
