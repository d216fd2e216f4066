/* doc_runs: a unit of runs, its translation split back over them (doc_runs.h). */
#include "doc_runs.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "util/utf8.h"

mt_status srv_runs_init(srv_runs *r, const char *const *runs, const size_t *lens, int n, mt_err *err)
{
    memset(r, 0, sizeof *r);
    size_t total = 1;
    for (int i = 0; i < n; i++)
        total += lens[i] + 1;
    r->text = malloc(total);
    r->start = malloc(sizeof *r->start * (size_t)(n ? n : 1));
    r->end = malloc(sizeof *r->end * (size_t)(n ? n : 1));
    r->opens = calloc((size_t)(n ? n : 1), 1);
    if (!r->text || !r->start || !r->end || !r->opens) {
        srv_runs_free(r);
        return mt_err_set(err, MT_ERR_NOMEM, "out of memory");
    }
    r->n = n;
    size_t o = 0;
    long cp = 0;
    int space = 0;
    uint32_t prev = ' ';
    for (int i = 0; i < n; i++) {
        r->start[i] = r->end[i] = -1;
        for (size_t k = 0; k < lens[i];) {
            uint32_t c;
            size_t m = mt_utf8_next(runs[i] + k, lens[i] - k, &c);     /* malformed: one byte, as U+FFFD */
            if (mt_utf8_is_space(c)) {
                space = o > 0;
            } else {
                if (o == 0 || space || mt_utf8_is_space(prev))
                    r->opens[i] = 1;            /* a word starts here */
                if (space) {
                    r->text[o++] = ' ';
                    cp++;
                    space = 0;
                }
                if (r->start[i] < 0)
                    r->start[i] = cp;
                if (c == 0xfffd && m == 1) {
                    memcpy(r->text + o, "\xef\xbf\xbd", 3);     /* the unit stays valid UTF-8 */
                    o += 3;
                } else {
                    memcpy(r->text + o, runs[i] + k, m);
                    o += m;
                }
                cp++;
                r->end[i] = cp;
            }
            prev = c;
            k += m;
        }
        if (r->start[i] < 0)                /* no word: a point where the text is */
            r->start[i] = r->end[i] = cp + (space ? 1 : 0);
    }
    r->text[o] = 0;
    return MT_OK;
}

void srv_runs_free(srv_runs *r)
{
    free(r->text);
    free(r->start);
    free(r->end);
    free(r->opens);
    memset(r, 0, sizeof *r);
}

void srv_run_units_free(srv_run_unit *u, int n)
{
    for (int i = 0; i < n; i++) {
        srv_runs_free(&u[i].runs);
        free(u[i].tgt);
        free(u[i].s);
        free(u[i].e);
    }
    free(u);
}

/* The run holding source code point p: the first whose span ends after it. */
static int run_of(const srv_runs *r, long p)
{
    for (int i = 0; i < r->n; i++)
        if (r->end[i] > r->start[i] && p < r->end[i])
            return i;
    return -1;
}

/* a[0..n) made non-decreasing by keeping its longest non-decreasing
 * subsequence and giving every other word its kept predecessor's run (the
 * next kept one's before the first).  O(n log n). */
static int monotone(int *a, int n)
{
    int *tail = malloc(sizeof *tail * (size_t)n), *tail_at = malloc(sizeof *tail_at * (size_t)n),
        *prev = malloc(sizeof *prev * (size_t)n), *keep = calloc((size_t)n, sizeof *keep);
    int rc = -1;
    if (!tail || !tail_at || !prev || !keep)
        goto done;
    int len = 0;
    for (int i = 0; i < n; i++) {
        int lo = 0, hi = len;               /* the first tail > a[i] */
        while (lo < hi) {
            int mid = (lo + hi) / 2;
            if (tail[mid] <= a[i])
                lo = mid + 1;
            else
                hi = mid;
        }
        tail[lo] = a[i];
        tail_at[lo] = i;
        prev[i] = lo ? tail_at[lo - 1] : -1;
        if (lo == len)
            len++;
    }
    for (int i = len ? tail_at[len - 1] : -1; i >= 0; i = prev[i])
        keep[i] = 1;
    int last = -1;
    for (int i = 0; i < n; i++) {
        if (keep[i])
            last = a[i];
        else if (last >= 0)
            a[i] = last;
    }
    int first = 0;                      /* words before the first kept one take its run */
    while (first < n && !keep[first])
        first++;
    for (int i = 0; i < first && first < n; i++)
        a[i] = a[first];
    rc = 0;
done:
    free(tail);
    free(tail_at);
    free(prev);
    free(keep);
    return rc;
}

/* The words of tgt[0..tgt_len) (runs of non-spaces): word w's code-point span
 * wcp[2w], wcp[2w + 1] and byte span wb[2w], wb[2w + 1]; their count. */
static int target_words(const char *tgt, size_t tgt_len, long *wcp, size_t *wb)
{
    int nw = 0, in = 0;
    long cp = 0;
    for (size_t k = 0; k < tgt_len;) {
        uint32_t c;
        size_t m = mt_utf8_next(tgt + k, tgt_len - k, &c);
        int sp = mt_utf8_is_space(c);
        if (!sp && !in) {
            wcp[2 * nw] = cp;
            wb[2 * nw] = k;
            in = 1;
        } else if (sp && in) {
            wcp[2 * nw + 1] = cp;
            wb[2 * nw + 1] = k;
            nw++;
            in = 0;
        }
        k += m;
        cp++;
    }
    if (in) {
        wcp[2 * nw + 1] = cp;
        wb[2 * nw + 1] = tgt_len;
        nw++;
    }
    return nw;
}

/* a[w], the run of each of the nw target words: its first link's source run,
 * else its predecessor's (the first linked word's, or the first run, at the start). */
static void link_runs(const srv_runs *r, const long *links, int n_links, const long *wcp, int nw, int *a)
{
    int first_linked = -1;
    for (int w = 0; w < nw; w++) {
        a[w] = -1;
        for (int l = 0; l < n_links && a[w] < 0; l++) {
            const long *L = links + 4 * l;
            if (L[2] < wcp[2 * w + 1] && L[3] > wcp[2 * w])
                a[w] = run_of(r, L[0]);
        }
        if (a[w] >= 0 && first_linked < 0)
            first_linked = a[w];
    }
    int first_run = run_of(r, 0);
    for (int w = 0; w < nw; w++)
        if (a[w] < 0)
            a[w] = w ? a[w - 1] : first_linked >= 0 ? first_linked : first_run >= 0 ? first_run : 0;
}

/* Every run that held words gets one of the nw words (a[], in run order),
 * while words last: a boundary moves one word at a time from the nearest run
 * that has two.  cnt: [r->n] scratch. */
static void share_words(const srv_runs *r, int *a, int nw, int *cnt)
{
    for (int w = 0; w < nw; w++)
        cnt[a[w]]++;
    int need = 0;
    for (int i = 0; i < r->n; i++)
        need += r->opens[i];
    for (int i = 0; nw >= need && i < r->n; i++) {
        if (!r->opens[i] || cnt[i])
            continue;
        int best = -1;
        for (int d = 1; d < r->n && best < 0; d++) {
            if (i - d >= 0 && cnt[i - d] >= 2)
                best = i - d;
            else if (i + d < r->n && cnt[i + d] >= 2)
                best = i + d;
        }
        if (best < 0)
            break;
        /* the chain of runs from best to i that hold words: each passes one
         * word to the next one towards i (its last word when moving right, its
         * first when moving left), so only best loses one and i gains one */
        int step = best < i ? 1 : -1;
        for (int x = best; x != i;) {
            int y = x + step;
            while (y != i && !cnt[y])
                y += step;
            int k;
            if (step > 0)
                for (k = nw - 1; a[k] != x; k--)
                    ;
            else
                for (k = 0; a[k] != x; k++)
                    ;
            a[k] = y;
            x = y;
        }
        for (int j = 0; j < r->n; j++)
            cnt[j] = 0;
        for (int w = 0; w < nw; w++)
            cnt[a[w]]++;
    }
}

mt_status srv_runs_split(const srv_runs *r, const char *tgt, size_t tgt_len, const long *links, int n_links,
                         size_t *out_start, size_t *out_end, mt_err *err)
{
    mt_status st = MT_OK;
    for (int i = 0; i < r->n; i++)
        out_start[i] = out_end[i] = 0;
    /* the target's words: code-point and byte spans */
    size_t cap = tgt_len / 2 + 2;
    long *wcp = malloc(sizeof *wcp * 2 * cap);
    size_t *wb = malloc(sizeof *wb * 2 * cap);
    int *a = malloc(sizeof *a * cap), *cnt = calloc((size_t)(r->n ? r->n : 1), sizeof *cnt);
    int nw = 0, prev_run = -1;
    if (!wcp || !wb || !a || !cnt) {
        st = mt_err_set(err, MT_ERR_NOMEM, "out of memory");
        goto done;
    }
    nw = target_words(tgt, tgt_len, wcp, wb);
    link_runs(r, links, n_links, wcp, nw, a);
    if (nw && monotone(a, nw)) {
        st = mt_err_set(err, MT_ERR_NOMEM, "out of memory");
        goto done;
    }
    share_words(r, a, nw, cnt);
    /* spans: from a run's first word to the next run's first word (the spaces
     * between ride with the run before them), the first from 0, the last to the end */
    for (int w = 0; w < nw; w++) {
        if (a[w] == prev_run)
            continue;
        size_t at = prev_run < 0 ? 0 : wb[2 * w];
        if (prev_run >= 0)
            out_end[prev_run] = at;
        out_start[a[w]] = at;
        prev_run = a[w];
    }
    if (prev_run >= 0)
        out_end[prev_run] = tgt_len;
done:
    free(wcp);
    free(wb);
    free(a);
    free(cnt);
    return st;
}

mt_status srv_runs_take(const srv_runs *r, const char *tgt, size_t len, const long *links, int n_links, char **copy,
                        size_t *out_start, size_t *out_end, mt_err *err)
{
    char *c = malloc(len + 1);
    if (!c)
        return mt_err_set(err, MT_ERR_NOMEM, "out of memory");
    memcpy(c, tgt, len);
    c[len] = 0;
    mt_status st = srv_runs_split(r, c, len, links, n_links, out_start, out_end, err);
    if (st != MT_OK) {
        free(c);
        return st;
    }
    free(*copy);
    *copy = c;
    return MT_OK;
}

mt_status srv_run_unit_set(srv_run_unit *u, const char *tgt, size_t len, const long *links, int n_links,
                           mt_err *err)
{
    return srv_runs_take(&u->runs, tgt, len, links, n_links, &u->tgt, u->s, u->e, err);
}
