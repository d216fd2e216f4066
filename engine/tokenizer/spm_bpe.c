/* spm_bpe.c: SentencePiece BPE encoding, as sentencepiece 0.1.97's
 * bpe::Model::Encode (bpe_model.cc), without BPE-dropout.  Contract: spm_bpe.h.
 *
 * Symbols form a doubly linked list over the text; every adjacent pair whose
 * concatenation is a piece is a candidate in a max-heap ordered by (score
 * descending, left index ascending): spm's priority_queue with its
 * SymbolPairComparator.  A popped candidate is stale when either side was
 * emptied by another merge or has grown since (sizes only grow, so the sum
 * of the sides' lengths equals the recorded size exactly while it is valid),
 * and then skipped, as spm does.  Each merge pushes at most two candidates,
 * so the heap never holds more than 3 n; all scratch is one block per call.
 */
#include "spm_bpe.h"
#include "spm_proto.h"

#include <stdlib.h>
#include <string.h>

typedef struct {
    int32_t  prev, next;   /* neighbours in the list, -1 at the ends   */
    uint32_t off, len;     /* the symbol's bytes; len 0: merged away   */
    uint8_t  freeze;       /* a USER_DEFINED piece: never merged       */
} sym;

typedef struct {
    float    score;
    int32_t  left, right;
    uint32_t size;         /* bytes of left + right when pushed        */
} cand;

typedef struct {
    int32_t  id;           /* an UNUSED piece made by a merge          */
    uint32_t left_len;     /* the left side's length at that merge     */
    uint32_t seq;          /* push order: the last one wins (spm's map) */
} revm;

typedef struct {
    const mt_spm_bpe *m;
    const uint8_t    *s;
    sym              *sy;
    cand             *heap;
    size_t            n_heap;
    revm             *rev;
    size_t            n_rev;
} bpe_state;

/* 1 when a pops before b: the higher score, then the leftmost. */
static inline int cand_first(const cand *a, const cand *b)
{
    return a->score > b->score || (a->score == b->score && a->left < b->left);
}

static void heap_push(bpe_state *st, cand c)
{
    size_t i = st->n_heap++;
    while (i > 0) {
        size_t parent = (i - 1) / 2;
        if (!cand_first(&c, &st->heap[parent]))
            break;
        st->heap[i] = st->heap[parent];
        i = parent;
    }
    st->heap[i] = c;
}

/* c sifted down from slot i of a heap of n entries. */
static void sift_down(cand *heap, size_t n, size_t i, cand c)
{
    for (;;) {
        size_t l = 2 * i + 1, best = l;
        if (l >= n)
            break;
        if (l + 1 < n && cand_first(&heap[l + 1], &heap[l]))
            best = l + 1;
        if (!cand_first(&heap[best], &c))
            break;
        heap[i] = heap[best];
        i = best;
    }
    heap[i] = c;
}

static cand heap_pop(bpe_state *st)
{
    cand top = st->heap[0];
    if (--st->n_heap)
        sift_down(st->heap, st->n_heap, 0, st->heap[st->n_heap]);
    return top;
}

/* The id of the normal-class piece s[0..n) (n >= 1), or -1: an exact walk of the trie. */
static int32_t trie_exact(const mt_ptrie *t, const uint8_t *s, size_t n)
{
    int32_t node = t->root[s[0]];
    for (size_t i = 1; node >= 0 && i < n; i++)
        node = mt_ptrie_child(t, node, s[i]);
    return node >= 0 ? t->id[node] : -1;
}

/* MaybeAddNewSymbolPair: the pair (left, right) as a candidate when its
 * concatenation is a piece. */
static void maybe_add(bpe_state *st, int32_t left, int32_t right, int append)
{
    if (left < 0 || right < 0 || st->sy[left].freeze || st->sy[right].freeze)
        return;
    const sym *l = &st->sy[left], *r = &st->sy[right];
    uint32_t size = l->len + r->len;
    int32_t id = trie_exact(st->m->match, st->s + l->off, size);
    if (id < 0)
        return;
    cand c = { st->m->score[id], left, right, size };
    if (append)
        st->heap[st->n_heap++] = c;
    else
        heap_push(st, c);
    if (st->rev && st->m->type[id] == MT_SPM_UNUSED) {
        st->rev[st->n_rev] = (revm){ id, l->len, (uint32_t)st->n_rev };
        st->n_rev++;
    }
}

/* The initial symbols: user-defined pieces whole (frozen), else one UTF-8
 * character as spm's OneCharLen announces it (cut at the end).  Returns the count. */
static int32_t split_symbols(bpe_state *st, size_t n)
{
    static const uint8_t char_len[16] = { 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 3, 4 };
    int32_t k = 0;
    for (size_t pos = 0; pos < n; k++) {
        size_t mblen = st->m->user ? mt_ptrie_longest(st->m->user, st->s + pos, n - pos) : 0;
        uint8_t freeze = mblen > 0;
        if (!mblen) {
            mblen = char_len[st->s[pos] >> 4];
            if (mblen > n - pos)
                mblen = n - pos;
        }
        st->sy[k] = (sym){ k - 1, -1, (uint32_t)pos, (uint32_t)mblen, freeze };
        if (k > 0)
            st->sy[k - 1].next = k;
        pos += mblen;
    }
    return k;
}

static void merge_all(bpe_state *st)
{
    while (st->n_heap) {
        cand top = heap_pop(st);
        sym *l = &st->sy[top.left], *r = &st->sy[top.right];
        if (!l->len || !r->len || l->len + r->len != top.size)
            continue;                                   /* stale */
        l->len += r->len;
        l->next = r->next;
        if (r->next >= 0)
            st->sy[r->next].prev = top.left;
        r->len = 0;
        maybe_add(st, l->prev, top.left, 0);
        maybe_add(st, top.left, l->next, 0);
    }
}

static int revm_cmp(const void *a, const void *b)
{
    const revm *x = a, *y = b;
    if (x->id != y->id)
        return x->id < y->id ? -1 : 1;
    return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* The left length of the last recorded merge into piece id, or 0. */
static uint32_t rev_find(const bpe_state *st, int32_t id)
{
    size_t lo = 0, hi = st->n_rev;           /* first entry with an id > id */
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (st->rev[mid].id <= id)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo > 0 && st->rev[lo - 1].id == id ? st->rev[lo - 1].left_len : 0;
}

static int32_t piece_to_id(const mt_spm_bpe *m, const uint8_t *p, size_t n)
{
    int32_t id = mt_smap_get(m->ids, (const char *)p, n);
    return id >= 0 ? id : m->unk_id;
}

/* spm's resegment: a final piece that is UNUSED is split back, recursively,
 * along the pair that made it (an explicit stack: stk has room for the
 * piece's length + 1 entries, each split leaf being at least one byte). */
static int emit(const bpe_state *st, uint32_t o, uint32_t l, uint32_t (*stk)[2], uint32_t *off, uint32_t *len,
                int32_t *id, int w)
{
    size_t top = 0;
    stk[top][0] = o;
    stk[top++][1] = l;
    while (top) {
        top--;
        uint32_t po = stk[top][0], pl = stk[top][1];
        int32_t pid = piece_to_id(st->m, st->s + po, pl);
        uint32_t ll = st->m->type[pid] == MT_SPM_UNUSED && st->rev ? rev_find(st, pid) : 0;
        if (ll == 0 || ll >= pl) {
            off[w] = po;
            len[w] = pl;
            id[w++] = pid;
            continue;
        }
        stk[top][0] = po + ll;               /* right, popped second */
        stk[top++][1] = pl - ll;
        stk[top][0] = po;                    /* left, popped first   */
        stk[top++][1] = ll;
    }
    return w;
}

int mt_spm_bpe_encode(const mt_spm_bpe *m, const uint8_t *s, size_t n, uint32_t *off, uint32_t *len,
                      int32_t *id)
{
    /* One block: n symbols, 3 n candidates, n + 1 stack entries, 3 n rev entries. */
    size_t rev_n = m->has_unused ? 3 * n : 0;
    size_t bytes = n * sizeof(sym) + 3 * n * sizeof(cand) + (n + 1) * 2 * sizeof(uint32_t) + rev_n * sizeof(revm);
    char *block = malloc(bytes);
    if (!block)
        return -1;
    bpe_state st = { m, s, (sym *)(void *)block, NULL, 0, NULL, 0 };
    st.heap = (cand *)(void *)(block + n * sizeof(sym));
    uint32_t (*stk)[2] = (uint32_t (*)[2])(void *)((char *)st.heap + 3 * n * sizeof(cand));
    if (rev_n)
        st.rev = (revm *)(void *)((char *)stk + (n + 1) * 2 * sizeof(uint32_t));

    int32_t k = split_symbols(&st, n);
    for (int32_t i = 1; i < k; i++)                 /* every first pair, then heapified: O(n) */
        maybe_add(&st, i - 1, i, 1);
    for (size_t i = st.n_heap / 2; i-- > 0;)
        sift_down(st.heap, st.n_heap, i, st.heap[i]);
    merge_all(&st);
    if (st.n_rev)
        qsort(st.rev, st.n_rev, sizeof *st.rev, revm_cmp);
    int w = 0;
    for (int32_t i = 0; i >= 0; i = st.sy[i].next)
        w = emit(&st, st.sy[i].off, st.sy[i].len, stk, off, len, id, w);
    free(block);
    return w;
}
