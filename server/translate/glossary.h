/* glossary: terminology for a translation request ("source term" -> "target
 * term"), and where its source terms occur in a text.
 *
 * A request may carry "glossary": {"source term": "target term", ...} and the
 * server may load one TSV file per language pair (--glossary PAIR=FILE.tsv);
 * the two are merged, the request's entries winning.  This module only holds
 * and matches entries: no JSON (the API layer iterates the object and calls
 * srv_glossary_add), no files (the caller reads them, srv_glossary_add_tsv
 * parses the bytes).
 *
 * Usage:
 *     srv_glossary_limits lim = { .max_entries = 1000, .max_term_bytes = 256 };
 *     srv_glossary *req = srv_glossary_new(&lim), *all;
 *     for each key/value of the JSON object:
 *         if (srv_glossary_add(req, k, klen, v, vlen, &err)) -> 400 with err.msg
 *     srv_glossary_merge(server_glossary, req, NULL, &all, &err);
 *     srv_term_match m[64];
 *     int n = srv_glossary_match(all, text, len, m, 64);   // n > 64: retry bigger
 *
 * Entries.  Both terms are trimmed of whitespace at their ends (mt_utf8_is_space:
 * ASCII whitespace, NBSP, the Unicode spaces, the BOM) and must then be non-empty,
 * at most max_term_bytes long, valid UTF-8, and free of control characters
 * (U+0000-001F, U+007F-009F: a tab or line break inside a term).  The source is
 * stored with each inner run of whitespace as one ASCII space (that is what it
 * matches, below); the target is kept as given.
 *
 * The case rule.  A source term with no uppercase letter is "lowercase": it
 * matches case-insensitively, and its key is its case folding, so two lowercase
 * spellings that fold alike are one entry.  A term with an uppercase letter
 * matches exactly and is its own key: "Apple" and "apple" are two entries, and
 * where both match the same span ("Apple" in the text) the exact one wins.
 * Folding is Unicode's simple case folding (CaseFolding.txt C + S, Unicode 14,
 * every script but Cherokee); "uppercase" means a letter that folds to another
 * one and is uppercase or titlecase (so "ſ", "ς", "µ" are lowercase).
 *
 * Matching.  A term matches at whole words: the character before the match and
 * the character after it are not word characters (or are the ends of the text).
 * Word characters are letters, digits and combining marks of every script, the
 * format characters (soft hyphen, ZWNJ, ZWJ...) except the bidi controls, and
 * unassigned code points; everything else (punctuation, symbols, spaces,
 * controls, invalid UTF-8 bytes) is not.  So "package" matches in "package,"
 * and "(package)" but not in "packages", and "mail" matches in "e-mail".  The
 * rule is the same for a term that begins or ends with punctuation: "C++" does
 * not match in "C++x".  Inner whitespace of a term matches any run of whitespace
 * in the text ("New York" matches "New \n York").  Leftmost-longest: the text is
 * scanned from the start; at the first position where terms match, the longest
 * one is taken ("New York City" over "New York") and the scan goes on after it,
 * so matches never overlap.  Cost: linear in the text, times the length of the
 * longest term prefix found at a word start (the entries sit in a trie of folded
 * characters, entered only where a word may start), whatever the entry count.
 *
 * A glossary is built by one thread; once built, every const function may be
 * called from many threads at once.
 */
#ifndef SRV_GLOSSARY_H
#define SRV_GLOSSARY_H

#include <stddef.h>
#include <stdint.h>

#include "util/status.h"

typedef struct srv_glossary srv_glossary;

/* Limits checked by srv_glossary_add (the caller takes them from its options). */
typedef struct {
    int max_entries;       /* distinct keys, > 0 */
    int max_term_bytes;    /* of a trimmed source or target term, > 0 */
    int unique;            /* 1: a source whose key is there already is an error (DeepL's
                              glossaries), not a replacement */
} srv_glossary_limits;

/* bytes [start, end) of the text match the source of entry `entry` */
typedef struct {
    size_t start, end;
    int    entry;
} srv_term_match;

/* An empty glossary with a copy of *lim.  NULL when out of memory, or when lim
 * is NULL or holds a value <= 0.  Free with srv_glossary_free. */
srv_glossary *srv_glossary_new(const srv_glossary_limits *lim);
/* Frees g and its strings; NULL is a no-op. */
void srv_glossary_free(srv_glossary *g);

/* Adds src[0..src_len) -> tgt[0..tgt_len) (neither NUL-terminated, NULL only
 * with a length of 0).  A source with the same key as an earlier entry
 * replaces it (its source spelling and target; its index stays), or with
 * limits.unique is refused (MT_ERR_INPUT "duplicate source term").  MT_OK;
 * MT_ERR_INPUT with a message naming the problem and the term (empty source or
 * target, over max_term_bytes, invalid UTF-8, a control character, a new key
 * past max_entries; g is then unchanged); MT_ERR_NOMEM. */
mt_status srv_glossary_add(srv_glossary *g, const char *src, size_t src_len, const char *tgt, size_t tgt_len,
                           mt_err *err);

/* Adds every line of a TSV file's contents data[0..len): "source<TAB>target",
 * lines ending in LF or CRLF; a UTF-8 BOM at the start, blank lines and lines
 * whose first character after spaces or tabs is '#' are skipped (so a source
 * term cannot begin with '#').  A line without a tab, or with more than one,
 * is an error, and so is any entry srv_glossary_add refuses; the message
 * starts with "line N: ".  On an error the lines before it stay added. */
mt_status srv_glossary_add_tsv(srv_glossary *g, const char *data, size_t len, mt_err *err);

/* Adds every line of CSV entries data[0..len) as DeepL's glossaries take them:
 * "source,target" or "source,target,source_lang,target_lang", a field quoted
 * with '"' when it holds a comma or a quote (a quote inside doubled: ""),
 * lines ending in LF or CRLF, blank lines skipped, a UTF-8 BOM at the start
 * skipped.  Language columns, when a line has them, must equal (any case)
 * source_lang and target_lang.  Errors as srv_glossary_add_tsv's ("line N: "). */
mt_status srv_glossary_add_csv(srv_glossary *g, const char *data, size_t len, const char *source_lang,
                               const char *target_lang, mt_err *err);

/* *out = a new glossary holding base's entries, then over's (an entry of over
 * replaces base's entry with the same key); base and over may be NULL and are
 * not changed.  lim NULL: no new limits, i.e. room for every entry of both and
 * terms as long as the larger of their max_term_bytes; otherwise every entry
 * is checked against *lim and an excess is MT_ERR_INPUT as in srv_glossary_add.
 * On an error *out is NULL. */
mt_status srv_glossary_merge(const srv_glossary *base, const srv_glossary *over, const srv_glossary_limits *lim,
                             srv_glossary **out, mt_err *err);

/* Number of entries (0 for NULL).  Entries are numbered 0..size-1 in the
 * order their keys were first added. */
int srv_glossary_size(const srv_glossary *g);
/* Entry i's source (trimmed, inner whitespace as single spaces) and target
 * (trimmed), NUL-terminated, owned by g; NULL when i is out of range. */
const char *srv_glossary_source(const srv_glossary *g, int i);
const char *srv_glossary_target(const srv_glossary *g, int i);
/* 1 when entry i matches exactly (its source has an uppercase letter), 0 when
 * it matches case-insensitively, -1 when i is out of range. */
int srv_glossary_case_sensitive(const srv_glossary *g, int i);

/* Finds the terms of g in text[0..len) (UTF-8; invalid bytes are never an
 * error: each is a one-byte non-word character that no term matches) by the
 * rules above.  Writes the first min(found, max) matches to out, in text order,
 * and returns how many were found (which may exceed max: retry with more room);
 * -1 when g is NULL, text is NULL with len > 0, max < 0, or out is NULL with
 * max > 0.  Reads only text[0..len); never allocates. */
int srv_glossary_match(const srv_glossary *g, const char *text, size_t len, srv_term_match *out, int max);

/* A canonical byte string of the whole glossary, for cache keys: one line per
 * entry, sorted by key, "=" (exact) or "~" (case-insensitive), the key (the
 * source, folded when case-insensitive), a tab, the target, "\n".  Equal
 * strings mean glossaries that match and translate alike, whatever the order
 * the entries came in.  malloc'd and NUL-terminated ("" when empty), its
 * length in *len (len may be NULL); NULL when out of memory or g is NULL. */
char *srv_glossary_canonical(const srv_glossary *g, size_t *len);

/* The character classes the matcher uses, for callers that check or show
 * matches: c's simple case folding (c itself when it has none), 1 if c is an
 * uppercase letter in the sense of the case rule, 1 if c is a word character. */
uint32_t srv_glossary_fold(uint32_t c);
int      srv_glossary_is_upper(uint32_t c);
int      srv_glossary_is_word(uint32_t c);
/* The uppercase letter whose fold is c (c itself when none): the inverse of
 * srv_glossary_fold on the letters it lowers, the smallest when several fold
 * to c. */
uint32_t srv_glossary_upper(uint32_t c);

#endif
