/* doc_runs: a unit made of runs (a paragraph's formatting runs, a sentence's
 * subtitle cues), its translation split back over them by the alignment.
 *
 *   srv_runs_init    the runs' texts -> the unit's text (the runs joined,
 *                    whitespace runs made one space, trimmed) and each run's
 *                    span in it
 *   srv_runs_split   the unit's translation and word links -> each run's
 *                    share of it, in order
 *
 * How a translation is split: every target word goes to the run of the
 * source words it is linked to (the first link's, when it has several), a
 * word without a link to the run of the word before it (the first run at the
 * start); then the runs are made to follow their source order (the target
 * words of a run form one span, runs in order: the longest order-keeping
 * choice, the other words take their neighbour's run), and every run in which
 * a word starts gets at least one when there are enough target words.  Concatenated,
 * the shares are the translation exactly: nothing is dropped or repeated.
 */
#ifndef SRV_DOC_RUNS_H
#define SRV_DOC_RUNS_H

#include <stddef.h>

#include "util/status.h"

typedef struct {
    char *text;         /* the unit: malloc'd, NUL-terminated */
    long *start, *end;  /* [n] run i's span in text, code points (start == end: no word) */
    unsigned char *opens; /* [n] 1 when a word starts in run i (a run holding only the end of a
                             word, "." after an italic "library", gets no share of its own) */
    int   n;
} srv_runs;

/* A unit of the formats whose units are runs of their lines or cues
 * (doc_text.c, doc_subtitles.c). */
typedef struct {
    int      first, n;      /* lines or cues [first, first + n) */
    srv_runs runs;
    char    *tgt;           /* the translation (NULL: not set) */
    size_t  *s, *e;         /* [n] each run's share of tgt, bytes */
} srv_run_unit;

/* runs[0..n) (lens[i] bytes each, UTF-8) -> r.  MT_OK or MT_ERR_NOMEM. */
mt_status srv_runs_init(srv_runs *r, const char *const *runs, const size_t *lens, int n, mt_err *err);
void      srv_runs_free(srv_runs *r);
/* Frees units u[0..n) and the array u itself. */
void      srv_run_units_free(srv_run_unit *u, int n);

/* The translation tgt[0..tgt_len) of r->text with its word links [n_links][4]
 * (source [s, e) in r->text, target [s, e) in tgt, code points) split over the
 * runs: out_start[i], out_end[i] are run i's byte span in tgt (out_start[i] ==
 * out_end[i]: nothing).  The spans are in run order and tile tgt: the first
 * run with words starts at 0, each ends where the next one with words starts
 * (the spaces between ride with the run before them), the last ends at
 * tgt_len; so their concatenation is tgt (all of it the first run's when no
 * run held a word).  MT_OK or MT_ERR_NOMEM. */
mt_status srv_runs_split(const srv_runs *r, const char *tgt, size_t tgt_len, const long *links, int n_links,
                         size_t *out_start, size_t *out_end, mt_err *err);

/* A unit's translation taken: tgt[0..len) copied (NUL-terminated) and split
 * over r's runs (srv_runs_split into out_start, out_end); on success *copy
 * (freed first) holds it, on failure *copy is left as it was.  What every
 * format made of runs does in its srv_doc_set.  MT_OK or MT_ERR_NOMEM. */
mt_status srv_runs_take(const srv_runs *r, const char *tgt, size_t len, const long *links, int n_links, char **copy,
                        size_t *out_start, size_t *out_end, mt_err *err);

/* srv_runs_take for unit u: its translation in u->tgt, each run's share in
 * u->s, u->e.  What doc_text's and doc_subtitles' srv_doc_set do. */
mt_status srv_run_unit_set(srv_run_unit *u, const char *tgt, size_t len, const long *links, int n_links,
                           mt_err *err);

#endif
