/* points: where a point of a source text goes in its translation, by the
 * word links.  A point is something at a place of the source that has no
 * word of its own and that the model never saw: a placeholder taken out of a
 * sentence (translate/protect.c), an opaque item or an empty inline element
 * of an HTML unit (markup/html.c, which also places .po placeholders).
 *
 * The rule (html.h's, for "an element that held no word"): a point inside a
 * source word goes to the same place inside that word's copy in the target
 * when the target has one linked to it ("H<sub>2</sub>O", "file%sname"); a
 * point inside a word before the punctuation that ends it ("read<br>." for
 * the word "read.") goes after the last target word linked to that word,
 * before that target word's own trailing punctuation ("lire<br>.");
 * a point before (after) every source word goes to the target's start (end);
 * else after the last target word linked to the last source word before it,
 * or, when no word before it has a link, before the first target word linked
 * to a source word after it.  Then its spaces: the source's space before it
 * and after it are written where the target has none there, and a point
 * between two words of the source with no space after it but glued to
 * nothing ("Hello %s, you" -> "Bonjour %s vous") gets one before a word.
 *
 * Offsets are code points; words are runs of non-space characters
 * (mt_utf8_is_space); links are [n][4]: source [start, end), target [start,
 * end) (the pipeline's srv_tr_result.words).
 */
#ifndef SRV_POINTS_H
#define SRV_POINTS_H

#include <stdint.h>

/* A source text and its translation, with their word links. */
typedef struct {
    const uint32_t *src;        /* [n_src] the source's code points */
    long            n_src;
    const uint32_t *tgt;        /* [n_tgt] the translation's */
    long            n_tgt;
    const long     *tw;         /* [n_tw][2] the translation's words (srv_text_words) */
    int             n_tw;
    const long     *links;      /* [n_links][4] */
    int             n_links;
} srv_aligned;

/* The spaces the source had around a point, which a text made of words one
 * space apart does not say. */
typedef struct {
    uint32_t before, after;         /* the whitespace character just before / after it; 0: none */
    int      glued_after;           /* the source went on right after it with a letter, a digit or another point */
} srv_point_ws;

/* A letter or digit (any non-ASCII code point counts: no table of scripts here). */
int  srv_is_word_cp(uint32_t c);
/* Punctuation: ASCII's, the Latin-1 quotes and inverted marks, U+2010-205E, CJK's U+3001-303F. */
int  srv_is_punct(uint32_t c);
/* 1 when c[a..b) is not empty and all punctuation. */
int  srv_all_punct(const uint32_t *c, long a, long b);
/* The words of c[0..n) into tw[2 * k], tw[2 * k + 1] (room for n words): their count. */
int  srv_text_words(const uint32_t *c, long n, long *tw);
/* The target word starting at code point start: its index, -1 when none. */
int  srv_word_starting(const srv_aligned *a, long start);
/* A boundary t of the target (end: t ends a word, else starts one) for a
 * source boundary i strictly inside a source word: the same place inside the
 * target word at t when that word is the source word copied; else t. */
long srv_copied_boundary(const srv_aligned *a, long i, long t, int end);
/* The neighbours of source span [s, e): *pos the end of the target word linked
 * to the last source word ending at or before s (-1: none), *npos the start of
 * the target word linked to the first source word starting at or after e (-1: none). */
void srv_neighbours(const srv_aligned *a, long s, long e, long *pos, long *npos);
/* Where a point at source code point s goes: a target code point, 0..n_tgt. */
long srv_point_target(const srv_aligned *a, long s);
/* The point placed at target p (lo <= p <= hi: hi the end of what holds it)
 * written with its spaces: the target up to *at, then *before (0: nothing),
 * the point, *after (0: nothing), then the target from *at. */
void srv_point_spaces(const srv_aligned *a, srv_point_ws ws, long p, long hi, long *at, uint32_t *before,
                      uint32_t *after);

#endif
