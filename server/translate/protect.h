/* protect: a sentence's placeholders kept out of the model and put back into
 * its translation by the word links (srv_tr_params.placeholders: the
 * "placeholders" field of the text APIs, on by default).
 *
 *   srv_protect     the sentence -> the text the model sees (every placeholder
 *                   of text/placeholders.h taken out, markup not read) and
 *                   where each one was in it: a point, with the whitespace the
 *                   sentence had around it
 *   (the pipeline tokenizes, caches, matches glossaries on and decodes that
 *   text, with alignments)
 *   srv_unprotect   its translation and word links -> the sentence's
 *                   translation: each placeholder's bytes at the place
 *                   text/points.h gives, in the sentence's order
 *
 * The text the model sees: the sentence without its placeholders, each run of
 * whitespace made one space, trimmed, as markup/html.c builds an HTML unit's
 * text (whose opaque items are points alike), but for one thing: punctuation
 * right after a placeholder takes no space before it ("Open %s: %s." ->
 * "Open:", not "Open :", which the model reads as a word apart; the space
 * comes back around the placeholder).  A sentence with no placeholder
 * is left alone (n == 0): the model sees it as it is, byte for byte.  A
 * sentence with nothing to translate outside its placeholders ("%s: %s",
 * "(%d)", "{{count}}": no letter, digit or non-ASCII character left) is
 * verbatim: its own translation, never decoded.
 *
 * Placing: a point never goes before the one before it (printf's %s then %d
 * keep their order, whatever the alignment); one the alignment cannot place
 * goes after the target word linked to the source word before it (the start
 * or the end for a point there).  A point the sentence glued to no word on a
 * side (punctuation there: "<%s>", "(%s)") is not glued to a target word on
 * that side either: a space goes between (the model may drop the brackets).  The output holds every placeholder byte for
 * byte, once, in order; the rest of it is the translation as decoded, with at
 * most a space added on each side of a point (the sentence's, where the
 * translation has none).
 */
#ifndef SRV_PROTECT_H
#define SRV_PROTECT_H

#include <stddef.h>

#include "text/points.h"
#include "util/status.h"

typedef struct {
    size_t       at, len;       /* its bytes in the sentence */
    long         cp;            /* where it was in the text, code points */
    srv_point_ws ws;            /* the whitespace around it in the sentence */
    int          glued_before;  /* a letter, a digit or another point right before it */
} srv_ph_point;

typedef struct {
    char         *text;         /* what the model sees: malloc'd, NUL-terminated */
    size_t        len;
    long         *orig;         /* [n_cp + 1] code point k of text is code point orig[k] of the sentence
                                   (orig[n_cp]: the sentence's count) */
    long          n_cp;
    srv_ph_point *pts;          /* [n] in the sentence's order */
    int           n;            /* 0: no placeholder, nothing held */
    int           verbatim;     /* no word outside the placeholders */
} srv_protected;

/* The sentence s[0..n) (UTF-8; an invalid byte counts as one character, and
 * is U+FFFD in p->text) into *p.  MT_OK (p->n == 0: it has no placeholder),
 * or MT_ERR_NOMEM. */
mt_status srv_protect(const char *s, size_t n, srv_protected *p, mt_err *err);
void      srv_protected_free(srv_protected *p);

/* The translation tgt[0..len) of p->text, with its word links [n_links][4]
 * (source offsets in p->text, target in tgt, code points), back into the
 * sentence s (the one given to srv_protect): *out (malloc'd, NUL-terminated)
 * holds the placeholders at their places; map (NULL: not wanted) gets
 * [cp(tgt) + 1] entries, code point k of tgt being code point map[k] of *out
 * (map[cp(tgt)]: *out's count); at (NULL: not wanted) [p->n] the byte offset
 * of each placeholder in *out.  0, or -1 out of memory. */
int srv_unprotect(const srv_protected *p, const char *s, const char *tgt, size_t len, const long *links,
                  int n_links, char **out, long **map, size_t *at);

#endif
