/* inline: a unit's text and records, and the unit written back (inline.h). */
#include "inline.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tgt_store.h"
#include "text/points.h"
#include "util/check.h"
#include "util/utf8.h"

int srv_markup_space(int c) { return c == ' ' || c == '\t' || c == '\n' || c == '\f' || c == '\r'; }

int srv_blank(const char *s)
{
    size_t n = strlen(s), i = 0;
    while (i < n) {
        uint32_t c;
        size_t k = mt_utf8_decode((const uint8_t *)s + i, n - i, &c);
        if (!k || !mt_utf8_is_space(c))
            return 0;
        i += k;
    }
    return 1;
}

/* ---- building a unit -------------------------------------------------------------------- */

static int new_rec(srv_ibuild *b, const void *node, long s)
{
    srv_irecs *rs = b->recs;
    if (mt_grow(&rs->r, &rs->cap, (size_t)rs->n + 1, sizeof *rs->r, 32)) {
        b->oom = 1;
        return -1;
    }
    rs->r[rs->n] = (srv_irec){ node, s, s, 0, 0, 0, 0 };
    return rs->n++;
}

void srv_ib_text(srv_ibuild *b, const char *s, size_t n)
{
    srv_irec *r = b->recs->r;
    for (size_t i = 0; i < n;) {
        uint32_t c;
        size_t k = mt_utf8_next(s + i, n - i, &c);     /* the parsers' text is valid UTF-8 */
        if (k == 1 && srv_markup_space((unsigned char)s[i])) {
            b->space = b->cp > 0;
            b->ws = (unsigned char)s[i];
            b->oom |= mt_sb_add(b->cp == 0 && !b->points ? &b->lead : &b->trail, s + i, 1);
            if (b->after >= 0)
                r[b->after].sp_after = (unsigned char)s[i];
            b->after = -1;
            i++;
            continue;
        }
        if (b->after >= 0)
            r[b->after].glued_after = srv_is_word_cp(c);
        b->after = -1;
        b->ws = 0;
        b->trail.n = 0;
        if (b->space) {
            b->oom |= mt_sb_add(&b->t, " ", 1);
            b->cp++;
            b->space = 0;
        }
        for (int p = 0; p < b->n_pend; p++)
            r[b->pend[p]].s = b->cp;
        b->n_pend = 0;
        b->oom |= mt_sb_add(&b->t, s + i, k);
        b->cp++;
        i += k;
    }
}

/* Record r becomes a point here, with ws the whitespace just before it. */
static void make_point(srv_ibuild *b, int r, int ws)
{
    srv_irec *rs = b->recs->r;
    rs[r].s = b->cp;
    rs[r].sp_before = (unsigned char)ws;
    if (b->after >= 0)
        rs[b->after].glued_after = 1;  /* two points glued ("%5.2f%%"): no space between */
    b->after = r;
    b->ws = 0;
    b->points++;
    b->trail.n = 0;
}

int srv_ib_point(srv_ibuild *b, const void *node)
{
    int r = new_rec(b, node, b->cp);
    if (r >= 0)
        make_point(b, r, b->ws);
    return r;
}

int srv_ib_open(srv_ibuild *b, const void *node)
{
    int r = new_rec(b, node, -1);
    if (r < 0)
        return -1;
    if (mt_grow(&b->pend, &b->cap_pend, (size_t)b->n_pend + 1, sizeof *b->pend, 8)) {
        b->oom = 1;
        return -1;
    }
    b->pend[b->n_pend++] = r;
    return r;
}

void srv_ib_close(srv_ibuild *b, int r, int ws)
{
    srv_irecs *rs = b->recs;
    if (r < 0)
        return;
    if (rs->r[r].s < 0) {                   /* no character inside: a point, where it was */
        make_point(b, r, ws);
        for (int p = 0; p < b->n_pend; p++)
            if (b->pend[p] == r)
                b->pend[p] = b->pend[--b->n_pend];
    }
    rs->r[r].e = b->cp;
    rs->r[r].n_desc = rs->n - r - 1;
}

int srv_ib_finish(srv_ibuild *b, srv_iunit *u)
{
    srv_irecs *rs = b->recs;
    for (int p = 0; p < b->n_pend; p++)         /* inline elements that held no character */
        rs->r[b->pend[p]].s = rs->r[b->pend[p]].e = b->cp;
    free(b->pend);
    b->pend = NULL;
    int ok = !b->oom && !mt_sb_add(&b->lead, "", 0) && !mt_sb_add(&b->trail, "", 0), rc = -1;
    if (!ok || !b->t.n || srv_blank(b->t.p)) {   /* nothing to translate: written as it is */
        rs->n = b->rec0;
        rc = ok ? 0 : -1;
    } else {
        u->text = b->t.p;
        u->lead = b->lead.p;
        u->trail = b->trail.p;
        u->first_rec = b->rec0;
        u->n_rec = rs->n - b->rec0;
        b->t.p = b->lead.p = b->trail.p = NULL;
        rc = 1;
    }
    free(b->t.p);
    free(b->lead.p);
    free(b->trail.p);
    b->t.p = b->lead.p = b->trail.p = NULL;
    return rc;
}

/* ---- placing the records ------------------------------------------------------------------ */

typedef struct {
    const char *tgt_bytes;
    const long *links;
    int         n_links;
    const long *cpb;            /* [n_cp + 1] byte offset of each code point of the target */
    const uint32_t *src, *tgt;  /* the code points of the source [n_src] and target [n_cp] */
    long        n_src;
    long        n_cp;
    const srv_irec *recs;       /* [n_rec] the unit's records */
    long       *ts, *te;        /* [n_rec] each record's target range, code points */
    int         next;           /* the next record */
    long       *tw;             /* [n_tw][2] the target's words, code points */
    int         n_tw;
    float      *score;          /* [n_tw] scratch */
    srv_aligned a;              /* the same, for text/points.h */
    const srv_iwriter *w;
} unit_writer;

static long clamp(long x, long lo, long hi) { return x < lo ? lo : x > hi ? hi : x; }

/* Words are runs of non-space characters, so a tag around "documentation" in
 * "documentation." links the whole word "documentation.": when the element's
 * text does not end (start) with punctuation, the target's punctuation at that
 * end is left out of it. */
static void trim_punct(const unit_writer *uw, const srv_irec *r, long *ts, long *te)
{
    if (!srv_all_punct(uw->src, r->s, r->s + 1))
        while (*ts < *te && srv_is_punct(uw->tgt[*ts]))
            (*ts)++;
    if (!srv_all_punct(uw->src, r->e - 1, r->e))
        while (*te > *ts && srv_is_punct(uw->tgt[*te - 1]))
            (*te)--;
}

/* The target words an element wraps: the run of target words that scores best,
 * a word linked to one of the element's source words +1, a word linked only
 * to other source words -1, a word without link -1/4; the run starts and ends
 * on a word of its own (so at least one).  The hull of every linked word
 * would let one stray link swallow the words between.  0 when no word of the
 * target is linked to the element's. */
static int best_run(unit_writer *uw, const srv_irec *r, long *ts, long *te)
{
    for (int j = 0; j < uw->n_tw; j++)
        uw->score[j] = -0.25f;
    for (int k = 0; k < uw->n_links; k++) {
        const long *l = uw->links + 4 * k;
        int j = srv_word_starting(&uw->a, l[2]);
        if (j < 0)
            continue;
        if (l[0] < r->e && l[1] > r->s)
            uw->score[j] = 1.0f;
        else if (uw->score[j] < 0)
            uw->score[j] = -1.0f;
    }
    /* best sum over runs [a, b] with a and b words of its own: prefix sums, the
     * least prefix before an own word so far */
    float prefix = 0, min_prefix = 0, best = 0;
    int min_at = -1, ba = -1, bb = -1;
    for (int j = 0; j < uw->n_tw; j++) {
        int own = uw->score[j] > 0;
        if (own && (min_at < 0 || prefix <= min_prefix)) {
            min_prefix = prefix;
            min_at = j;
        }
        prefix += uw->score[j];
        if (own && (ba < 0 || prefix - min_prefix > best)) {
            best = prefix - min_prefix;
            ba = min_at;
            bb = j;
        }
    }
    if (ba < 0)
        return 0;
    *ts = uw->tw[2 * ba];
    *te = uw->tw[2 * bb + 1];
    return 1;
}

/* The target words inside [a, b), when there are any: *ts, *te their hull.  An
 * element whose source words got no link (the model gave their attention to
 * a neighbour) still wraps the words the translation has in their place, so
 * that a link keeps its text and a bold its word. */
static void gap_words(const unit_writer *uw, long a, long b, long *ts, long *te)
{
    int first = -1, last = -1;
    for (int j = 0; j < uw->n_tw; j++) {
        if (uw->tw[2 * j] >= a && uw->tw[2 * j + 1] <= b) {
            if (first < 0)
                first = j;
            last = j;
        }
    }
    if (first < 0) {        /* none: the word after a */
        for (int j = 0; j < uw->n_tw && first < 0; j++)
            if (uw->tw[2 * j] >= a)
                first = last = j;
        if (first < 0 && uw->n_tw)
            first = last = uw->n_tw - 1;
    }
    if (first >= 0) {
        *ts = uw->tw[2 * first];
        *te = uw->tw[2 * last + 1];
    }
}

/* Where a record goes in the target: the best run of target words linked to
 * its source words (best_run); a point as text/points.h places it; else (words,
 * none linked) the target words between its neighbours'. */
static void place(unit_writer *uw, const srv_irec *r, long *ts, long *te)
{
    if (r->e > r->s && best_run(uw, r, ts, te)) {
        *ts = srv_copied_boundary(&uw->a, r->s, *ts, 0);
        *te = srv_copied_boundary(&uw->a, r->e, *te, 1);
        return;
    }
    if (r->e == r->s) {
        *ts = *te = srv_point_target(&uw->a, r->s);
        return;
    }
    long pos, npos;
    srv_neighbours(&uw->a, r->s, r->e, &pos, &npos);
    *ts = *te = pos >= 0 ? pos : npos >= 0 ? npos : 0;
    gap_words(uw, pos >= 0 ? pos : 0, npos >= 0 ? npos : uw->n_cp, ts, te);
}

/* The code points of s[0..n) into out (room for n); their count. */
static long decode_all(const char *s, size_t n, uint32_t *out, long *byte_of)
{
    long k = 0;
    for (size_t i = 0; i < n;) {
        uint32_t c;
        size_t m = mt_utf8_next(s + i, n - i, &c);
        if (byte_of)
            byte_of[k] = (long)i;
        out[k++] = c;
        i += m;
    }
    if (byte_of)
        byte_of[k] = (long)n;
    return k;
}

/* ---- writing the unit ---------------------------------------------------------------------- */

static void put_target(const unit_writer *uw, long a, long b)
{
    if (b > a)
        uw->w->text(uw->w->ctx, uw->tgt_bytes + uw->cpb[a], (size_t)(uw->cpb[b] - uw->cpb[a]));
}

/* A point (record r) at target p (>= *cur), with the spaces the source had
 * around it (text/points.h). */
static void write_point(unit_writer *uw, int r, long p, long *cur, long hi)
{
    const srv_irec *rr = &uw->recs[r];
    long at;
    uint32_t before, after;         /* markup whitespace: ASCII */
    srv_point_spaces(&uw->a, (srv_point_ws){ rr->sp_before, rr->sp_after, rr->glued_after }, p, hi, &at, &before,
                     &after);
    char b = (char)before, a = (char)after;
    put_target(uw, *cur, at);
    if (b)
        uw->w->text(uw->w->ctx, &b, 1);
    uw->w->whole(uw->w->ctx, rr->node);
    if (a)
        uw->w->text(uw->w->ctx, &a, 1);
    *cur = at;
}

/* The records [uw->next, end) (siblings and their descendants) inside target [*cur, hi). */
static void write_items(unit_writer *uw, int end, long *cur, long hi)
{
    while (uw->next < end) {
        int r = uw->next;
        const srv_irec *rr = &uw->recs[r];
        if (rr->s == rr->e) {   /* an opaque item, or an inline element without a character: as it was */
            uw->next += 1 + rr->n_desc;
            write_point(uw, r, clamp(uw->ts[r], *cur, hi), cur, hi);
            continue;
        }
        uw->next++;
        long a = clamp(uw->ts[r], *cur, hi), b = clamp(uw->te[r], a, hi), in = a;
        put_target(uw, *cur, a);
        uw->w->open(uw->w->ctx, rr->node);
        write_items(uw, r + 1 + rr->n_desc, &in, b);
        put_target(uw, in, b);
        uw->w->close(uw->w->ctx, rr->node);
        *cur = b;
    }
}

int srv_inline_write(const char *src, const char *tgt, size_t tgt_len, const long *links, int n_links,
                     const srv_irec *recs, int n_rec, const srv_iwriter *w)
{
    size_t src_len = strlen(src);
    long *cpb = malloc(sizeof *cpb * (tgt_len + 1)), *ts = malloc(sizeof *ts * (size_t)(n_rec + 1)),
         *te = malloc(sizeof *te * (size_t)(n_rec + 1));
    uint32_t *sc = malloc(sizeof *sc * (src_len + 1)), *tc = malloc(sizeof *tc * (tgt_len + 1));
    long *tw = malloc(sizeof *tw * 2 * (tgt_len + 1));
    float *score = malloc(sizeof *score * (tgt_len + 1));
    int rc = -1;
    if (!cpb || !ts || !te || !sc || !tc || !tw || !score)
        goto done;
    long n_cp = decode_all(tgt, tgt_len, tc, cpb), n_src = decode_all(src, src_len, sc, NULL);
    unit_writer uw = { tgt, links, n_links, cpb, sc, tc, n_src, n_cp, recs, ts, te, 0, tw, 0, score, { 0 }, w };
    uw.n_tw = srv_text_words(tc, n_cp, tw);
    uw.a = (srv_aligned){ sc, n_src, tc, n_cp, tw, uw.n_tw, links, n_links };
    for (int r = 0; r < n_rec; r++) {
        place(&uw, &recs[r], &ts[r], &te[r]);
        ts[r] = clamp(ts[r], 0, n_cp);
        te[r] = clamp(te[r], ts[r], n_cp);
        if (recs[r].e > recs[r].s && recs[r].s >= 0 && recs[r].e <= n_src)
            trim_punct(&uw, &recs[r], &ts[r], &te[r]);
    }
    long cur = 0;
    write_items(&uw, n_rec, &cur, n_cp);
    put_target(&uw, cur, n_cp);
    rc = 0;
done:
    free(tw);
    free(score);
    free(sc);
    free(tc);
    free(cpb);
    free(ts);
    free(te);
    return rc;
}

void srv_iunit_free(srv_iunit *u)
{
    free(u->text);
    free(u->lead);
    free(u->trail);
    free(u->tgt);
    free(u->links);
    memset(u, 0, sizeof *u);
}

mt_status srv_iunit_set(srv_iunit *u, const char *text, size_t len, const long *links, int n_links, mt_err *err)
{
    return srv_tgt_store(&u->tgt, &u->tgt_len, &u->links, &u->n_links, text, len, links, n_links, err);
}

int srv_iunit_write(const srv_iunit *u, const srv_irecs *recs, const srv_iwriter *w)
{
    const srv_irec *r = recs->r ? recs->r + u->first_rec : NULL;    /* none yet: no pointer */
    w->text(w->ctx, u->lead, strlen(u->lead));
    int rc = srv_inline_write(u->text, u->tgt, u->tgt_len, u->links, u->n_links, r, u->n_rec, w);
    w->text(w->ctx, u->trail, strlen(u->trail));
    return rc;
}
