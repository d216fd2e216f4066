/* splitter: a rule-based sentence splitter for POST /translate.
 *
 * MarianMT models are trained on single sentences, so a paragraph is split into
 * sentences, each one translated on its own, and the translations are joined again
 * with the original whitespace.  The splitter never copies or allocates: it returns
 * byte spans into the caller's text.
 *
 * Usage:
 *     mt_span spans[64];
 *     int n = mt_split_sentences(text, len, spans, 64);
 *     if (n > 64) { ...allocate n spans and call again... }
 *     for (int i = 0; i < n; i++)
 *         translate(text + spans[i].start, spans[i].len);
 *     // output = text[0 .. spans[0].start) + tr[0] + text[end0 .. spans[1].start) + tr[1] + ...
 *
 * Rules, applied in this order:
 *
 *  1. Line breaks always end a sentence.  \n, \r\n, a lone \r, \v, \f, U+0085,
 *     U+2028 and U+2029 are line breaks, so a single newline, a blank line and every
 *     list item (one per line) give separate sentences.  Lines are split on their own;
 *     a sentence never spans two lines.
 *
 *  2. Inside a line, a sentence ends after a run of terminators -- "." "!" "?" "…"
 *     (U+2026), also ‼ ⁇ ⁈ ⁉ and the ideographic / fullwidth 。！？ -- in any mix,
 *     e.g. "?!", "...", "!!!", when the run is
 *        a. optionally followed by closing quotes / brackets, which stay in the
 *           sentence: " ' ) ] } » ” ’ › “ ‘  (a space or no-break space before "»" is
 *           French spacing and is also kept: « Viens ! » ),
 *        b. then by whitespace,
 *        c. then by the end of the line, or by a sentence opener: an uppercase
 *           letter (ASCII, Latin-1, Latin Extended-A, Greek, Cyrillic), a letter of a
 *           script without case (Hebrew, Arabic, Indic, Thai, CJK, Hangul...), a
 *           digit, or an opening quote / bracket " ' ( [ { « “ ‘ „ ‹ ¿ ¡.
 *     A terminator followed by a lowercase word does not end the sentence
 *     ("Wait... what?" is one sentence), nor does one followed by a non-space
 *     character: decimals (3.14, 1.000,50), versions (v1.2.3), URLs
 *     (https://x.org/a?b=1, www.x.org), e-mail addresses (a.b@c.fr) and file names
 *     (file.txt) are never cut.  A URL or file name at the end of a sentence still
 *     ends it ("See www.x.org. Then ..." gives two sentences).
 *
 *  3. Exceptions, where rule 2 would split but we don't:
 *        a. a single "." ending an abbreviation, e.g. "Dr. Smith":
 *             always: Mr. Mrs. Ms. Dr. Prof. St. Mt. Jr. Sr. vs. cf. e.g. i.e.
 *                     approx. al. (English), M. Mme. Mmes. Mlle. Mlles. MM. p.ex.
 *                     c.-à-d. env. (French);
 *             only before a digit ("No. 5", "Fig. 3", "Jan. 12"): No. Nos. no. Fig.
 *                     Figs. p. pp. vol. Vol. and the months Jan. .. Dec., which are
 *                     also words or may end a sentence ("Is it? No. It is not.").
 *           Matching is exact, except that an all-lowercase abbreviation may start
 *           with a capital (E.g. Cf.).  The word is taken from the previous
 *           whitespace, ignoring opening quotes/brackets, and must touch the next
 *           whitespace (no closing quote/bracket in between).
 *           "etc." is deliberately NOT on the list: it usually ends a sentence, and
 *           when it does not, a lowercase word follows, which rule 2c already keeps.
 *        b. a single "." after one capital letter, an initial: "J. R. R. Tolkien",
 *           "M. Dupont".
 *        c. a single "." closing a list marker that is the first word of a sentence:
 *           a number ("1. Buy milk", "2.3. Results"), one ASCII letter ("a. First")
 *           or a roman numeral of i/v/x ("iv. Fourth", "XII. Twelfth").
 *        d. an ellipsis in brackets: "[...]" and "(…)" mark an omission, not an end.
 *        e. a run at the very start of a sentence: "... And then" stays whole.
 *
 *  4. French spacing: a (no-break) space before ! ? : ; is part of the sentence
 *     ("Quoi ? Il est parti." splits after "?"); ":" and ";" never end a sentence.
 *
 *  5. Each span is trimmed: it neither starts nor ends with whitespace (ASCII
 *     whitespace, U+00A0, U+1680, U+2000-U+200B, U+202F, U+205F, U+3000, U+FEFF).
 *     All bytes outside the spans are such whitespace or line breaks.  Lines holding
 *     only whitespace give no span.
 *
 *  6. UTF-8: spans start and end on character boundaries of valid UTF-8.  Invalid
 *     bytes are never an error: each is an opaque one-byte character that is neither
 *     whitespace nor a letter.  The splitter reads only text[0 .. len) and writes only
 *     spans[0 .. max).
 *
 * Known limits (rules, not a model): a one-letter capital word before a "." never
 * ends a sentence ("I got an A. Then"), nor does "St." ("Main St. Then"); "p.m. Then"
 * does end one; German »quotes« are read the French way; hard-wrapped paragraphs are
 * cut at every line break, as rule 1 says.  Cost is linear in len.
 */
#ifndef MT_SPLITTER_H
#define MT_SPLITTER_H

#include <stddef.h>

/* A sentence: text[start .. start+len), no leading/trailing whitespace. */
typedef struct {
    size_t start, len;
} mt_span;

/* Splits text (UTF-8, len bytes; NULL is allowed when len is 0) into sentences by
 * the rules above.  Returns the number of sentences found and writes the first
 * min(found, max) of them to spans, in text order (spans may be NULL when max <= 0).
 * If the result is greater than max, the caller can retry with a larger array.
 * Empty or whitespace-only text gives 0.  Never allocates; thread-safe. */
int mt_split_sentences(const char *text, size_t len, mt_span *spans, int max);

#endif
