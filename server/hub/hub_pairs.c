/* hub_pairs: which published OPUS-MT repositories translate a language pair (hub.h).
 * The table is server/hub/opus_pairs.tsv, embedded with the assembler's .incbin (as
 * server/service/languages.c embeds languages.tsv): ours, read as it is, a few
 * hundred rows looked up linearly. */
#include "hub.h"

#include <stdio.h>
#include <string.h>

__asm__(".section .rodata\n"
        ".global srv_opus_pairs_tsv\n"
        ".type srv_opus_pairs_tsv, @object\n"
        "srv_opus_pairs_tsv:\n"
        ".incbin \"server/hub/opus_pairs.tsv\"\n"
        ".byte 0\n"
        ".size srv_opus_pairs_tsv, . - srv_opus_pairs_tsv\n"
        ".previous\n");
extern const char srv_opus_pairs_tsv[];

/* Calls fn(src, tgt, repo, ud) for each row, as [start, end) slices; stops when fn
 * returns nonzero and gives that value. */
typedef int (*row_fn)(const char *s, size_t ns, const char *t, size_t nt, const char *r, size_t nr, void *ud);

static int each_row(row_fn fn, void *ud)
{
    for (const char *p = srv_opus_pairs_tsv; *p;) {
        const char *eol = strchr(p, '\n');
        if (!eol)
            eol = p + strlen(p);
        const char *t1 = memchr(p, '\t', (size_t)(eol - p));
        const char *t2 = t1 ? memchr(t1 + 1, '\t', (size_t)(eol - t1 - 1)) : NULL;
        if (*p != '#' && t2) {
            int rc = fn(p, (size_t)(t1 - p), t1 + 1, (size_t)(t2 - t1 - 1), t2 + 1, (size_t)(eol - t2 - 1), ud);
            if (rc)
                return rc;
        }
        p = *eol ? eol + 1 : eol;
    }
    return 0;
}

typedef struct {
    const char *src, *tgt;
    char *repo;                 /* 200 bytes */
} pair_query;

static int match(const char *s, size_t ns, const char *t, size_t nt, const char *r, size_t nr, void *ud)
{
    pair_query *q = ud;
    if (strlen(q->src) != ns || strncmp(q->src, s, ns) != 0 || strlen(q->tgt) != nt || strncmp(q->tgt, t, nt) != 0 ||
        nr >= 200)
        return 0;
    memcpy(q->repo, r, nr);
    q->repo[nr] = 0;
    return 1;
}

static int find(const char *src, const char *tgt, char repo[200])
{
    pair_query q = { src, tgt, repo };
    return each_row(match, &q);
}

int hub_pair_repos(const char *src, const char *tgt, char repos[2][200])
{
    if (!src || !tgt || !src[0] || !tgt[0] || strcmp(src, tgt) == 0)
        return 0;
    if (find(src, tgt, repos[0]))
        return 1;
    if (strcmp(src, "en") != 0 && strcmp(tgt, "en") != 0 && find(src, "en", repos[0]) && find("en", tgt, repos[1]))
        return 2;
    return 0;
}

static int count_row(const char *s, size_t ns, const char *t, size_t nt, const char *r, size_t nr, void *ud)
{
    (*(int *)ud)++;
    return 0;
}

int hub_pair_count(void)
{
    int n = 0;
    each_row(count_row, &n);
    return n;
}
