/* spm.c: one SentencePiece model, unigram or BPE (spm_api.h's mt_spm_*, spm.h).
 *
 * Reference behaviour: sentencepiece 0.1.97 (Debian's python3-sentencepiece);
 * algorithm notes in docs/MARIAN.md section 6.
 *
 *   load        the ModelProto (spm_proto.c) checked as spm's InitializePieces:
 *               one UNKNOWN piece, no duplicates, byte pieces; unigram or BPE
 *   normalize   spm_norm.c
 *   encode      BPE: spm_bpe.c's merges; unigram: Viterbi over the normalized bytes with spm's exact
 *               float/double arithmetic and first-wins tie-breaking; runs of
 *               unknown characters merged (or split into <0xXX> byte pieces)
 *   decode      SentencePieceProcessor::Decode on piece strings
 *   log_prob    the best path's score, the model read as a language model
 *               (language identification, server/detect)
 *
 * Everything loaded is immutable; per-call scratch is malloc'd per call.
 */
#include "spm.h"
#include "spm_bpe.h"
#include "spm_norm.h"
#include "spm_proto.h"
#include "util/check.h"
#include "util/strbuf.h"
#include "util/strmap.h"
#include "util/utf8.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_TEXT ((size_t)INT32_MAX / 4)   /* normalized bytes per call */

/* ---- the spm model ---------------------------------------------------------- */

struct mt_spm {
    char         *name;         /* file name for messages */
    uint8_t      *buf;          /* the file; piece strings point into it */
    size_t        buf_len;
    uint64_t      fingerprint;  /* FNV-1a 64 of the file (mt_spm_same) */
    mt_spm_proto  m;
    int           unk_id;       /* index of the UNKNOWN piece */
    float         min_score, max_score;
    char         *arena;        /* NUL-terminated copies of the pieces; m.piece points here */
    mt_ptrie      match;        /* NORMAL, USER_DEFINED, UNUSED pieces */
    mt_ptrie      user;         /* USER_DEFINED pieces only            */
    int           has_user;
    mt_spm_norm   norm, denorm;
    int           has_denorm;
    mt_smap       ids;          /* piece -> id (PieceToId: reserved pieces win) */
    int32_t       byte_id[256]; /* <0xXX> piece ids (byte_fallback)    */
    int16_t      *byte_val;     /* [n_pieces] byte of a BYTE piece, or -1 (NULL without byte_fallback) */
    mt_spm_bpe    bpe;          /* model_type BPE: what spm_bpe.c reads (bpe.match NULL for unigram) */
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

/* How many pieces of each kind spm_init_pieces met. */
typedef struct {
    int match;      /* NORMAL, USER_DEFINED, UNUSED: the ones the lattice matches */
    int user;       /* USER_DEFINED: matched before normalization splits them */
    int bytes;      /* distinct bytes with a BYTE piece */
} piece_counts;

/* The pieces as C strings in one arena (the model's bytes are not kept), and
 * the id map sized for them. */
static mt_status copy_pieces(mt_spm *sp, mt_err *err)
{
    const mt_spm_proto *m = &sp->m;
    int n = m->n_pieces;
    size_t total = 0;
    for (int i = 0; i < n; i++)
        total += m->piece[i].n + 1;
    sp->arena = malloc(total);
    if (!sp->arena || mt_smap_init(&sp->ids, (size_t)n))
        return mt_err_set(err, MT_ERR_NOMEM, "%s: out of memory", sp->name);
    for (size_t i = 0, off = 0; i < (size_t)n; i++) {
        mt_spm_bytes *p = &sp->m.piece[i];
        if (p->n)
            memcpy(sp->arena + off, p->p, p->n);
        sp->arena[off + p->n] = '\0';
        p->p = (const uint8_t *)sp->arena + off;
        off += p->n + 1;
    }
    return MT_OK;
}

/* Piece i, a BYTE piece: the id of its byte. */
static mt_status add_byte_piece(mt_spm *sp, int i, piece_counts *c, mt_err *err)
{
    const mt_spm_bytes *p = &sp->m.piece[i];
    int b = piece_to_byte(p->p, p->n);
    if (!sp->m.byte_fallback)
        return mt_err_set(err, MT_ERR_FORMAT, "%s: byte piece %d found although byte_fallback is false",
                          sp->name, i);
    if (b < 0)
        return mt_err_set(err, MT_ERR_FORMAT, "%s: byte piece %d \"%.*s\" is invalid", sp->name, i,
                          (int)(p->n > 64 ? 64 : p->n), (const char *)p->p);
    if (sp->byte_id[b] < 0)
        c->bytes++;
    sp->byte_id[b] = i;
    sp->byte_val[i] = (int16_t)b;
    return MT_OK;
}

/* Piece i checked, entered in the id map, counted, and its score, UNKNOWN
 * or byte role recorded. */
static mt_status add_piece(mt_spm *sp, int i, piece_counts *c, mt_err *err)
{
    const mt_spm_proto *m = &sp->m;
    const char *name = sp->name;
    const mt_spm_bytes *p = &m->piece[i];
    int t = m->type[i];
    if (p->n == 0)
        return mt_err_set(err, MT_ERR_FORMAT, "%s: piece %d is empty", name, i);
    if (memchr(p->p, 0, p->n) || p->n > UINT32_MAX / 2)
        return mt_err_set(err, MT_ERR_FORMAT, "%s: piece %d contains a NUL byte", name, i);
    mt_smap_ent *e = mt_smap_slot(&sp->ids, (const char *)p->p, p->n);
    if (e->k) {
        int same_class = is_reserved_type(t) == is_reserved_type(m->type[e->v]);
        if (same_class)
            return mt_err_set(err, MT_ERR_FORMAT, "%s: piece %d \"%.*s\" is already defined (piece %d)",
                              name, i, (int)(p->n > 64 ? 64 : p->n), (const char *)p->p, e->v);
        if (is_reserved_type(t))
            e->v = i;                   /* PieceToId looks at reserved pieces first */
    } else {
        *e = (mt_smap_ent){ (const char *)p->p, (uint32_t)p->n, i };
    }
    if (sp->byte_val)
        sp->byte_val[i] = -1;
    if (t == MT_SPM_NORMAL || t == MT_SPM_USER_DEFINED || t == MT_SPM_UNUSED)
        c->match++;
    if (t == MT_SPM_USER_DEFINED)
        c->user++;
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
    return t == MT_SPM_BYTE ? add_byte_piece(sp, i, c, err) : MT_OK;
}

/* The tries of the matchable pieces (c->match of them) and of the
 * user-defined ones (c->user). */
static mt_status build_tries(mt_spm *sp, const piece_counts *c, mt_err *err)
{
    const mt_spm_proto *m = &sp->m;
    const char *name = sp->name;
    int n = m->n_pieces, n_match = c->match, n_user = c->user;
    mt_status st = MT_OK;
    mt_ptrie_key *keys = malloc((size_t)n_match * sizeof *keys);
    mt_ptrie_key *ukeys = n_user ? malloc((size_t)n_user * sizeof *ukeys) : NULL;
    if (!keys || (n_user && !ukeys)) {
        st = mt_err_set(err, MT_ERR_NOMEM, "%s: out of memory", name);
        goto done;
    }
    int k = 0, u = 0;
    for (int i = 0; i < n; i++) {
        int t = m->type[i];
        mt_ptrie_key key = { m->piece[i].p, (uint32_t)m->piece[i].n, i };
        if (t == MT_SPM_NORMAL || t == MT_SPM_USER_DEFINED || t == MT_SPM_UNUSED)
            keys[k++] = key;
        if (t == MT_SPM_USER_DEFINED)
            ukeys[u++] = key;
    }
    /* spm allows one reserved and one normal piece per string, never two of a
     * class.  The id map keeps one id per string (the reserved one wins),
     * so NORMAL "x", CONTROL "x", NORMAL "x" passed it, and mt_ptrie_build, which
     * needs unique keys, read past the end of the duplicate (fuzz_spm_model,
     * tests/fuzz/crashers/spm_model/duplicate-normal-after-reserved).  The
     * matchable pieces are exactly the normal class: no two may be equal. */
    qsort(keys, (size_t)n_match, sizeof *keys, mt_ptrie_key_cmp);
    for (int j = 1; j < n_match; j++)
        if (mt_ptrie_key_cmp(&keys[j - 1], &keys[j]) == 0) {
            int a = keys[j - 1].id < keys[j].id ? keys[j - 1].id : keys[j].id;
            int b = keys[j - 1].id < keys[j].id ? keys[j].id : keys[j - 1].id;
            st = mt_err_set(err, MT_ERR_FORMAT, "%s: piece %d \"%.*s\" is already defined (piece %d)", name, b,
                            (int)(m->piece[b].n > 64 ? 64 : m->piece[b].n), (const char *)m->piece[b].p, a);
            goto done;
        }
    int bad = mt_ptrie_build(&sp->match, keys, (size_t)n_match);
    if (!bad && n_user) {
        bad = mt_ptrie_build(&sp->user, ukeys, (size_t)n_user);
        sp->has_user = !bad;
    }
    if (bad)
        st = mt_err_set(err, MT_ERR_NOMEM, "%s: out of memory building the piece trie", name);
done:
    free(keys);
    free(ukeys);
    return st;
}

/* ModelInterface::InitializePieces + unigram::Model setup. */
static mt_status spm_init_pieces(mt_spm *sp, mt_err *err)
{
    const mt_spm_proto *m = &sp->m;
    const char *name = sp->name;
    int n = m->n_pieces;
    mt_status st = copy_pieces(sp, err);
    if (st != MT_OK)
        return st;
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
    piece_counts c = { 0, 0, 0 };
    for (int i = 0; i < n; i++)
        if ((st = add_piece(sp, i, &c, err)) != MT_OK)
            return st;
    if (sp->unk_id < 0)
        return mt_err_set(err, MT_ERR_FORMAT, "%s: no UNKNOWN piece", name);
    if (m->byte_fallback && c.bytes != 256)
        return mt_err_set(err, MT_ERR_FORMAT, "%s: byte_fallback is set but only %d of 256 byte pieces exist",
                          name, c.bytes);
    if (c.match == 0)
        return mt_err_set(err, MT_ERR_FORMAT, "%s: no matchable (normal) pieces", name);
    return build_tries(sp, &c, err);
}

/* What spm_bpe.c reads of a BPE model. */
static void spm_init_bpe(mt_spm *sp)
{
    int has_unused = 0;
    for (int i = 0; i < sp->m.n_pieces; i++)
        has_unused |= sp->m.type[i] == MT_SPM_UNUSED;
    sp->bpe = (mt_spm_bpe){ &sp->match, sp->has_user ? &sp->user : NULL, &sp->ids, sp->m.score, sp->m.type,
                            sp->unk_id, has_unused };
}

void mt_spm_free(mt_spm *sp)
{
    if (!sp)
        return;
    mt_ptrie_free(&sp->match);
    mt_ptrie_free(&sp->user);
    mt_spm_norm_free(&sp->norm);
    mt_spm_norm_free(&sp->denorm);
    free(sp->ids.e);
    free(sp->byte_val);
    free(sp->arena);
    mt_spm_proto_free(&sp->m);
    free(sp->buf);
    free(sp->name);
    free(sp);
}

/* FNV-1a, 64 bits: the file's fingerprint for mt_spm_same. */
static uint64_t fnv1a64(const uint8_t *p, size_t n)
{
    uint64_t h = 0xcbf29ce484222325u;
    for (size_t i = 0; i < n; i++)
        h = (h ^ p[i]) * 0x100000001b3u;
    return h;
}

/* Takes ownership of buf (freed on failure too). */
static mt_status spm_load_owned(uint8_t *buf, size_t len, const char *name, mt_spm **out, mt_err *err)
{
    *out = NULL;
    mt_status st;
    mt_spm *sp = calloc(1, sizeof *sp);
    if (!sp) {
        st = mt_err_set(err, MT_ERR_NOMEM, "%s: out of memory", name);
        goto fail;
    }
    sp->buf = buf;
    buf = NULL; /* sp owns it now; mt_spm_free releases it */
    sp->buf_len = len;
    sp->fingerprint = fnv1a64(sp->buf, len);
    sp->name = strdup(name);
    st = sp->name ? mt_spm_proto_parse(sp->buf, len, name, &sp->m, err)
                  : mt_err_set(err, MT_ERR_NOMEM, "%s: out of memory", name);
    if (!st && sp->m.model_type != MT_SPM_UNIGRAM && sp->m.model_type != MT_SPM_BPE)
        st = mt_err_set(err, MT_ERR_UNSUPPORTED,
                        "%s: SentencePiece model type %s is not supported (only unigram and BPE models are)",
                        name, model_type_name(sp->m.model_type));
    if (!st)
        st = spm_init_pieces(sp, err);
    if (!st && sp->m.model_type == MT_SPM_BPE)
        spm_init_bpe(sp);
    if (!st)
        st = mt_spm_norm_init(&sp->norm, &sp->m.normalizer, sp->m.treat_whitespace_as_suffix,
                              sp->has_user ? &sp->user : NULL, name, "normalizer", err);
    if (!st && sp->m.denormalizer.present && sp->m.denormalizer.charsmap.n) {
        st = mt_spm_norm_init(&sp->denorm, &sp->m.denormalizer, 0, NULL, name, "denormalizer", err);
        sp->has_denorm = !st;
    }
    if (st)
        goto fail;
    *out = sp;
    return MT_OK;
fail:
    free(buf);
    mt_spm_free(sp);
    return st;
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

mt_status mt_spm_load(const char *path, mt_spm **out, mt_err *err)
{
    if (!path || !out)
        return mt_err_set(err, MT_ERR_INPUT, "mt_spm_load: bad arguments");
    *out = NULL;
    mt_sbuf b = { 0 };
    mt_status st = mt_sb_read_file(&b, path, err);
    if (st)
        return st;
    return spm_load_owned((uint8_t *)b.p, b.n, path, out, err);
}

int mt_spm_is_bpe(const mt_spm *sp)
{
    return sp && sp->bpe.match;
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
    mt_sbuf o = { 0 };
    if (mt_spm_norm_run(&sp->norm, (const uint8_t *)text, len, &o) || mt_sb_reserve(&o, 1)) {
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

/* spm's OneCharLen: the UTF-8 sequence length announced by the lead byte. */
static inline size_t one_char_len(uint8_t b)
{
    static const uint8_t t[16] = { 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 3, 4 };
    return t[b >> 4];
}

typedef struct {
    float   score;   /* best path score ending here (float, as spm) */
    int32_t start;   /* start byte of the last piece, -1: unset     */
    int32_t id;
} vnode;

/* Model::EncodeOptimized over s[0..n); best has n + 1 entries. */
static void viterbi(const mt_spm *sp, const uint8_t *s, size_t n, vnode *best)
{
    const mt_ptrie *t = &sp->match;
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
            node = mt_ptrie_child(t, node, s[pos + L]);
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
    size_t cap = mt_grow_cap((size_t)p->cap, n, sizeof *p->id, 16);     /* id, off, len share it */
    int32_t *id = realloc(p->id, cap * sizeof *id);
    if (id)
        p->id = id;
    uint32_t *off = realloc(p->off, cap * sizeof *off);
    if (off)
        p->off = off;
    uint32_t *len = realloc(p->len, cap * sizeof *len);
    if (len)
        p->len = len;
    if (!id || !off || !len)
        return -1;
    p->cap = (int)cap;
    return 0;
}

/* The normalized text is out->text; pieces are its substrings, except byte
 * pieces ("<0xXX>"), whose strings are appended after it. */
/* The best path best[0..n] back from its end into out's pieces (*count of them). */
static mt_status best_pieces(const mt_spm *sp, const vnode *best, size_t n, mt_pieces *out, size_t *count,
                             mt_err *err)
{
    size_t c = 0;
    for (size_t e = n; e > 0; e = (size_t)best[e].start) {
        if (best[e].start < 0 || (size_t)best[e].start >= e)    /* cannot happen */
            return mt_err_set(err, MT_ERR_INTERNAL, "%s: broken Viterbi path at byte %zu", sp->name, e);
        c++;
    }
    if (pieces_reserve(out, c))
        return mt_err_set(err, MT_ERR_NOMEM, "%s: out of memory for %zu pieces", sp->name, c);
    size_t i = c;
    for (size_t e = n; e > 0; e = (size_t)best[e].start) {
        i--;
        out->id[i] = best[e].id;
        out->off[i] = (uint32_t)best[e].start;
        out->len[i] = (uint32_t)(e - (size_t)best[e].start);
    }
    *count = c;
    return MT_OK;
}

/* Unigram: the Viterbi best path over the normalized s[0..n). */
static mt_status viterbi_pieces(const mt_spm *sp, const uint8_t *s, size_t n, mt_pieces *out, size_t *count,
                                mt_err *err)
{
    vnode *best = malloc((n + 1) * sizeof *best);
    if (!best)
        return mt_err_set(err, MT_ERR_NOMEM, "%s: out of memory for %zu bytes", sp->name, n);
    viterbi(sp, s, n, best);
    mt_status st = best_pieces(sp, best, n, out, count, err);
    free(best);
    return st;
}

/* BPE: spm_bpe.c's merges over the normalized s[0..n) (at most n pieces). */
static mt_status bpe_pieces(const mt_spm *sp, const uint8_t *s, size_t n, mt_pieces *out, size_t *count,
                            mt_err *err)
{
    int c = pieces_reserve(out, n) ? -1 : mt_spm_bpe_encode(&sp->bpe, s, n, out->off, out->len, out->id);
    if (c < 0)
        return mt_err_set(err, MT_ERR_NOMEM, "%s: out of memory for %zu bytes", sp->name, n);
    *count = (size_t)c;
    return MT_OK;
}

static mt_status spm_encode_pieces(const mt_spm *sp, const uint8_t *text, size_t len, mt_pieces *out,
                                   mt_err *err)
{
    mt_sbuf o = { out->text, 0, out->text_cap };
    out->n = 0;
    int bad = mt_spm_norm_run(&sp->norm, text, len, &o);
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

    size_t count = 0;
    mt_status st = sp->bpe.match ? bpe_pieces(sp, (const uint8_t *)o.p, n, out, &count, err)
                                 : viterbi_pieces(sp, (const uint8_t *)o.p, n, out, &count, err);
    if (st != MT_OK)
        return st;

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
    mt_sbuf t = { out->text, out->text_len, out->text_cap };
    int bad = pieces_reserve(out, total) || mt_sb_reserve(&t, n_unk_bytes * 6 + 1);
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

/* ---- the model as a language model -------------------------------------------- */

mt_status mt_spm_log_prob(const mt_spm *sp, const char *text, size_t len, double *logp, mt_err *err)
{
    if (!sp || (!text && len) || !logp)
        return mt_err_set(err, MT_ERR_INPUT, "mt_spm_log_prob: bad arguments");
    *logp = 0.0;
    if (sp->bpe.match)
        return mt_err_set(err, MT_ERR_UNSUPPORTED, "%s: a BPE model is not a language model (no log-probability)",
                          sp->name);
    if (len > MT_SPM_LOG_PROB_MAX)
        return mt_err_set(err, MT_ERR_TOO_LONG, "%s: %zu bytes to score, at most %d", sp->name, len,
                          MT_SPM_LOG_PROB_MAX);
    /* One buffer: the normalized text (n bytes), then the n + 1 lattice nodes
     * at the next aligned offset.  Normalization grows a text by a bounded
     * factor (the charsmap's longest replacement), so the buffer is bounded. */
    mt_sbuf o = { 0 };
    mt_status st = MT_OK;
    if (mt_spm_norm_run(&sp->norm, (const uint8_t *)text, len, &o)) {
        st = mt_err_set(err, MT_ERR_NOMEM, "%s: out of memory normalizing %zu bytes", sp->name, len);
        goto done;
    }
    size_t n = o.n;
    if (n == 0)
        goto done;
    size_t at = (n + _Alignof(vnode) - 1) / _Alignof(vnode) * _Alignof(vnode);
    if (mt_sb_reserve(&o, at - n + (n + 1) * sizeof(vnode))) {
        st = mt_err_set(err, MT_ERR_NOMEM, "%s: out of memory for %zu bytes", sp->name, n);
        goto done;
    }
    vnode *best = (vnode *)(void *)(o.p + at);
    viterbi(sp, (const uint8_t *)o.p, n, best);
    *logp = (double)best[n].score;
done:
    free(o.p);
    return st;
}

int mt_spm_same(const mt_spm *a, const mt_spm *b)
{
    return a && b && a->buf_len == b->buf_len && a->fingerprint == b->fingerprint;
}

/* ---- spm decoding (SentencePieceProcessor::Decode on piece strings) --------- */

int32_t mt_spm_piece_to_id(const mt_spm *sp, const char *p, size_t n)
{
    int32_t id = mt_smap_get(&sp->ids, p, n);
    return id >= 0 ? id : sp->unk_id;
}

/* Consecutive byte pieces -> their bytes, one U+FFFD per malformed byte. */
static int spm_decode_bytes(const mt_spm *sp, const mt_spm_dpiece *pc, int lo, int hi, mt_sbuf *o)
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
            bad = mt_sb_add(o, "\xEF\xBF\xBD", 3);
            i++;
        } else {
            bad = mt_sb_add(o, b + i, k);
            i += k;
        }
    }
    if (b != small)
        free(b);
    return bad;
}

/* Appends the decoded text of pc[0..n) to o. */
int mt_spm_has_denorm(const mt_spm *sp) { return sp->has_denorm; }

int mt_spm_is_byte(const mt_spm *sp, int32_t id)
{
    return id >= 0 && id < mt_spm_size(sp) && sp->m.type[id] == MT_SPM_BYTE;
}

int mt_spm_decode_pieces(const mt_spm *sp, const mt_spm_dpiece *pc, int n, mt_sbuf *o)
{
    const size_t start = o->n;
    const uint8_t *type = sp->m.type;
    int byte_start = 0, is_bos_ws = 1, bos_ws_seen = 0;
    if (mt_sb_reserve(o, 1))
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
            if (is_unk_piece ? mt_sb_add(o, sp->m.unk_surface.p, sp->m.unk_surface.n) : mt_sb_add(o, p, pn))
                return -1;
            continue;
        }
        if (is_bos_ws && (sp->norm.add_dummy_prefix || sp->norm.remove_extra_ws)) {
            if (pn >= MT_SPM_SPACE_LEN && memcmp(p, MT_SPM_SPACE, MT_SPM_SPACE_LEN) == 0) {
                p += MT_SPM_SPACE_LEN;
                pn -= MT_SPM_SPACE_LEN;
                bos_ws_seen = 1;
            }
            if (sp->norm.remove_extra_ws)
                bos_ws_seen = 0;
        }
        if (mt_sb_reserve(o, pn + 1))
            return -1;
        for (size_t k = 0; k < pn;) {
            if (pn - k >= MT_SPM_SPACE_LEN && memcmp(p + k, MT_SPM_SPACE, MT_SPM_SPACE_LEN) == 0) {
                o->p[o->n++] = ' ';
                k += MT_SPM_SPACE_LEN;
            } else {
                o->p[o->n++] = p[k++];
            }
        }
        o->p[o->n] = '\0';
    }
    if (spm_decode_bytes(sp, pc, byte_start, n, o))
        return -1;
    if (sp->has_denorm) {
        mt_sbuf d = { 0 };
        int bad = mt_spm_norm_run(&sp->denorm, (const uint8_t *)o->p + start, o->n - start, &d);
        if (!bad) {
            o->n = start;
            bad = mt_sb_add(o, d.p ? d.p : "", d.n);
        }
        free(d.p);
        return bad;
    }
    return 0;
}

mt_status mt_spm_decode(const mt_spm *sp, const int32_t *ids, int n, char **out, size_t *out_len, mt_err *err)
{
    if (!sp || n < 0 || (!ids && n) || !out)
        return mt_err_set(err, MT_ERR_INPUT, "mt_spm_decode: bad arguments");
    *out = NULL;
    mt_spm_dpiece small[256], *pc = n <= 256 ? small : malloc((size_t)n * sizeof *pc);
    if (!pc)
        return mt_err_set(err, MT_ERR_NOMEM, "mt_spm_decode: out of memory for %d ids", n);
    mt_status st = MT_OK;
    mt_sbuf o = { 0 };
    for (int i = 0; i < n; i++) {
        if (ids[i] < 0 || ids[i] >= sp->m.n_pieces) {
            st = mt_err_set(err, MT_ERR_INPUT, "%s: invalid piece id %d (model has %d pieces)", sp->name,
                            ids[i], sp->m.n_pieces);
            goto done;
        }
        const mt_spm_bytes *p = &sp->m.piece[ids[i]];
        /* spm decodes IdToPiece(id) through PieceToId again */
        pc[i] = (mt_spm_dpiece){ (const char *)p->p, p->n, mt_spm_piece_to_id(sp, (const char *)p->p, p->n) };
    }
    int bad = mt_sb_reserve(&o, 1);
    if (!bad) {
        o.p[0] = '\0';
        if (n)
            bad = mt_spm_decode_pieces(sp, pc, n, &o);
    }
    if (bad) {
        st = mt_err_set(err, MT_ERR_NOMEM, "mt_spm_decode: out of memory");
        goto done;
    }
    *out = o.p;
    if (out_len)
        *out_len = o.n;
    o.p = NULL;
done:
    if (pc != small)
        free(pc);
    free(o.p);
    return st;
}
