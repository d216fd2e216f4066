/* strmap.c: the string -> id hash map and the byte trie (strmap.h). */
#include "strmap.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

/* ---- string -> int32 hash map ---------------------------------------------- */

static uint64_t hash_bytes(const void *s, size_t n)
{
    const uint8_t *p = s;
    uint64_t h = 0xcbf29ce484222325ull;   /* FNV-1a */
    for (size_t i = 0; i < n; i++)
        h = (h ^ p[i]) * 0x100000001b3ull;
    return h ^ (h >> 29);
}

int mt_smap_init(mt_smap *m, size_t count)
{
    size_t cap = 16;
    while (cap < count * 2)
        cap *= 2;
    m->e = calloc(cap, sizeof *m->e);
    m->mask = cap - 1;
    return m->e ? 0 : -1;
}

mt_smap_ent *mt_smap_slot(const mt_smap *m, const char *k, size_t n)
{
    size_t i = (size_t)hash_bytes(k, n) & m->mask;
    for (;; i = (i + 1) & m->mask) {
        mt_smap_ent *e = &m->e[i];
        if (!e->k || (e->n == n && memcmp(e->k, k, n) == 0))
            return e;
    }
}

/* Value for key, or -1. */
int32_t mt_smap_get(const mt_smap *m, const char *k, size_t n)
{
    if (!m->e || n > UINT32_MAX)
        return -1;
    const mt_smap_ent *e = mt_smap_slot(m, k, n);
    return e->k ? e->v : -1;
}

/* ---- byte trie over piece strings ------------------------------------------ */

int mt_ptrie_key_cmp(const void *a, const void *b)
{
    const mt_ptrie_key *x = a, *y = b;
    size_t n = x->n < y->n ? x->n : y->n;
    int c = memcmp(x->p, y->p, n);
    if (c)
        return c;
    return (x->n > y->n) - (x->n < y->n);
}

void mt_ptrie_free(mt_ptrie *t)
{
    free(t->id);
    free(t->first);
    free(t->label);
    free(t->child);
    memset(t, 0, sizeof *t);
}

/* Build from keys (sorted here; must be unique and non-empty). */
int mt_ptrie_build(mt_ptrie *t, mt_ptrie_key *keys, size_t nk)
{
    struct work { uint32_t lo, hi, depth; } *w = NULL;
    size_t max_nodes = 1;
    for (size_t i = 0; i < nk; i++)
        max_nodes += keys[i].n;
    memset(t, 0, sizeof *t);
    if (max_nodes > INT32_MAX / 2)
        return -1;
    qsort(keys, nk, sizeof *keys, mt_ptrie_key_cmp);
    t->id = malloc(max_nodes * sizeof *t->id);
    t->first = malloc((max_nodes + 1) * sizeof *t->first);
    t->label = malloc(max_nodes * sizeof *t->label);
    t->child = malloc(max_nodes * sizeof *t->child);
    w = malloc(max_nodes * sizeof *w);
    int rc = -1;
    if (!t->id || !t->first || !t->label || !t->child || !w) {
        mt_ptrie_free(t);
        goto done;
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
    rc = 0;
done:
    free(w);
    return rc;
}

/* Length of the longest key that is a prefix of s[0..n), 0 if none. */
size_t mt_ptrie_longest(const mt_ptrie *t, const uint8_t *s, size_t n)
{
    size_t best = 0;
    int32_t node = n ? t->root[s[0]] : -1;
    for (size_t L = 1; node >= 0; L++) {
        if (t->id[node] >= 0)
            best = L;
        if (L >= n)
            break;
        node = mt_ptrie_child(t, node, s[L]);
    }
    return best;
}
