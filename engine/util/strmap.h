/* strmap: byte string -> int32 id lookup, the two structures the tokenizer
 * files build at load and then only read.  Internal to engine/.
 *
 *   mt_smap   exact match: open-addressing hash table (FNV-1a, linear probing).
 *             Keys are borrowed: they live in the owner's storage, which must
 *             outlive the map.  The owner fills slots with mt_smap_slot and
 *             frees e.
 *   mt_ptrie  prefix match: a byte trie over piece strings, built once from
 *             unique non-empty keys.  Nodes in BFS order; the edges of node i
 *             are [first[i], first[i+1]), sorted by label; the root's children
 *             also sit in a 256-entry table.
 */
#ifndef MT_STRMAP_H
#define MT_STRMAP_H

#include <stddef.h>
#include <stdint.h>

/* ---- string -> int32 hash map ---------------------------------------------- */

typedef struct {
    const char *k;     /* NULL: free slot */
    uint32_t    n;
    int32_t     v;
} mt_smap_ent;

typedef struct {
    mt_smap_ent *e;
    size_t       mask;
} mt_smap;

/* Room for count keys (zeroed table): 0, or -1 without memory. */
int          mt_smap_init(mt_smap *m, size_t count);
/* The slot holding key k[0..n), or the free slot where it would go (e->k NULL). */
mt_smap_ent *mt_smap_slot(const mt_smap *m, const char *k, size_t n);
/* Value for key, or -1. */
int32_t      mt_smap_get(const mt_smap *m, const char *k, size_t n);

/* ---- byte trie over piece strings ------------------------------------------ */

typedef struct {
    int32_t  *id;      /* [n_nodes] piece id ending at the node, or -1 */
    uint32_t *first;   /* [n_nodes + 1]                                 */
    uint8_t  *label;   /* [n_edges]                                     */
    int32_t  *child;   /* [n_edges]                                     */
    int32_t   root[256];
    int32_t   n_nodes;
} mt_ptrie;

typedef struct {
    const uint8_t *p;
    uint32_t       n;
    int32_t        id;
} mt_ptrie_key;

/* qsort order of keys: bytewise, a prefix first. */
int    mt_ptrie_key_cmp(const void *a, const void *b);
/* Build from keys (sorted here; must be unique and non-empty): 0, or -1 without memory. */
int    mt_ptrie_build(mt_ptrie *t, mt_ptrie_key *keys, size_t nk);
void   mt_ptrie_free(mt_ptrie *t);
/* Length of the longest key that is a prefix of s[0..n), 0 if none. */
size_t mt_ptrie_longest(const mt_ptrie *t, const uint8_t *s, size_t n);

/* The child of node along byte c, or -1 (inline: the Viterbi inner loop walks it). */
static inline int32_t mt_ptrie_child(const mt_ptrie *t, int32_t node, uint8_t c)
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

#endif
