/* inline: the part of markup translation that does not depend on the markup
 * language, shared by html.c (gumbo) and xml.c (expat), and by
 * server/document's Markdown (doc_markdown.c) and XLIFF (doc_xliff.c).
 *
 * A unit is a run of text with inline elements and opaque items in it.  While
 * a reader walks the run it tells the builder what it meets:
 *   srv_ib_text    characters (whitespace runs become one space, the ends are
 *                  trimmed: the unit's text)
 *   srv_ib_point   an opaque item (a comment, an ignored element, an <img>):
 *                  left out of the text, a point to be put back
 *   srv_ib_open / srv_ib_close  an inline element around what came between
 * and gets the unit's text and one record per inline element or point, in
 * document order (a record's descendants follow it: n_desc).
 *
 * When the translation comes, srv_inline_write places every record in the
 * target by the word links (the rules of markup/html.h, "Inline tags": the
 * best-scoring run of linked target words, text/points.h for points, the
 * neighbours' gap otherwise; nesting and sibling order never change) and
 * writes the unit through the reader's callbacks: target text, start and end
 * tags, points written whole.
 */
#ifndef SRV_INLINE_H
#define SRV_INLINE_H

#include <stddef.h>

#include "util/status.h"
#include "util/strbuf.h"

typedef struct {
    const void *node;           /* the reader's: an inline element or an opaque item */
    long s, e;                  /* its source span in the unit's text, code points (a point: s == e) */
    int  n_desc;                /* records of its descendants, which follow it */
    /* a point: the whitespace character the source had just before / after
     * it (0: none), which the unit's text (one space between words, none at the
     * ends) does not say */
    unsigned char sp_before, sp_after;
    unsigned char glued_after;  /* a point: the source went on right after it with a letter, a digit or
                                   another point (nothing to put between them) */
} srv_irec;

/* The records of a whole document, unit after unit. */
typedef struct {
    srv_irec *r;
    int       n;
    size_t    cap;
} srv_irecs;

/* A unit: what is translated, its whitespace around, its records; once set,
 * its translation and word links. */
typedef struct {
    char  *text;                /* what is translated */
    char  *lead, *trail;        /* its whitespace before and after, written as they were */
    int    first_rec, n_rec;    /* its records in the document's srv_irecs */
    char  *tgt;                 /* srv_iunit_set: the translation ... */
    size_t tgt_len;
    long  *links;               /* ... its links [n_links][4] */
    int    n_links;
} srv_iunit;

/* A unit's text as it is built.  Zero it with .recs set and .after = -1
 * (SRV_IBUILD), free what it holds with srv_ib_done. */
typedef struct {
    srv_irecs *recs;
    int     rec0;           /* the unit's first record */
    mt_sbuf t;              /* the text */
    long    cp;             /* code points in t */
    int     space;          /* a space is owed before the next character */
    int    *pend;           /* records waiting for their first character */
    int     n_pend;
    size_t  cap_pend;
    int     after;          /* the last point record, waiting to learn whether a space follows; -1 */
    int     ws;             /* the last whitespace character since the last character or point; 0 */
    mt_sbuf lead, trail;    /* the whitespace before the first character and point, after the last */
    int     points;         /* points so far */
    int     oom;
} srv_ibuild;

#define SRV_IBUILD(rs) ((srv_ibuild){ .recs = (rs), .rec0 = (rs)->n, .after = -1 })

/* Markup whitespace: space, tab, LF, FF, CR. */
int  srv_markup_space(int c);
/* 1 when s is empty or only white space (Unicode's). */
int  srv_blank(const char *s);

void srv_ib_text(srv_ibuild *b, const char *s, size_t n);
/* An opaque item: its record, or -1 (out of memory: b->oom set). */
int  srv_ib_point(srv_ibuild *b, const void *node);
/* An inline element starts: its record (give it to srv_ib_close), or -1. */
int  srv_ib_open(srv_ibuild *b, const void *node);
/* Its end; ws: b->ws as it was when it opened. */
void srv_ib_close(srv_ibuild *b, int r, int ws);
/* The run is over: 1 when it has words, and then u (zeroed before) holds its
 * text, whitespace and records (free with srv_iunit_free); 0: nothing to
 * translate (its records are dropped); -1 out of memory.  Frees the rest. */
int  srv_ib_finish(srv_ibuild *b, srv_iunit *u);
void srv_iunit_free(srv_iunit *u);
/* Its translation text[0..len) and links [n_links][4] (html.h's srv_html_set), copied. */
mt_status srv_iunit_set(srv_iunit *u, const char *text, size_t len, const long *links, int n_links, mt_err *err);

/* How a unit is written: every callback gets ctx. */
typedef struct {
    void (*text)(void *ctx, const char *s, size_t n);   /* translated text (the callee escapes it) */
    void (*open)(void *ctx, const void *node);          /* an inline element's start tag */
    void (*close)(void *ctx, const void *node);         /* its end tag */
    void (*whole)(void *ctx, const void *node);         /* a point, as it was */
    void  *ctx;
} srv_iwriter;

/* The unit whose text is src (built as above), records recs[0..n_rec),
 * translated as tgt[0..tgt_len) with links [n_links][4] (source [start, end)
 * in src, target [start, end) in tgt, code points), written through w.  0,
 * or -1 out of memory (nothing sensible written). */
int  srv_inline_write(const char *src, const char *tgt, size_t tgt_len, const long *links, int n_links,
                      const srv_irec *recs, int n_rec, const srv_iwriter *w);
/* A translated unit whole: its lead, the translation with its records
 * (srv_inline_write), its trail (the whitespace through w->text).  0, or -1
 * out of memory. */
int  srv_iunit_write(const srv_iunit *u, const srv_irecs *recs, const srv_iwriter *w);

#endif
