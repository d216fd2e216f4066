/* utf8: the project's one UTF-8 decoder, a leaf module.
 *
 * SentencePiece's validity rules (its DecodeUTF8): no overlong forms, no
 * surrogates, nothing above U+10FFFF.  The tokenizer decodes with it and
 * the server validates request bodies and messages with it, so both agree
 * on what is valid.
 */
#ifndef MT_UTF8_H
#define MT_UTF8_H

#include <stddef.h>
#include <stdint.h>

/* One well-formed character at s[0..len) (len >= 1): its length, or 0 if
 * invalid; *cp gets the code point. */
size_t mt_utf8_decode(const uint8_t *s, size_t len, uint32_t *cp);
/* Lossy decoding, which never fails: the character at s[0..len) (len >= 1)
 * and its length, or U+FFFD and 1 for a byte that does not start a valid
 * one (each bad byte stands for one character, as a browser shows it). */
size_t mt_utf8_next(const char *s, size_t len, uint32_t *cp);
/* cp (at most U+10FFFF, not a surrogate) as UTF-8 into out (room for 4):
 * its length, 1 to 4. */
size_t mt_utf8_encode(uint32_t cp, char *out);
/* Length of the longest valid prefix of s[0..len). */
size_t mt_utf8_valid_prefix(const char *s, size_t len);
/* 1 if all of s[0..len) is valid. */
int    mt_utf8_valid(const char *s, size_t len);
/* The code points of s[0..len): its bytes that are not continuation bytes
 * (what DeepL and LibreTranslate count as characters). */
long   mt_utf8_count(const char *s, size_t len);
/* How many bytes of s[0..len) to quote in a message: at most max, never
 * half a character (continuation bytes are stepped back over). */
int    mt_utf8_clip(const char *s, size_t len, size_t max);
/* Make the NUL-terminated s valid in place: every byte that does not start
 * a valid character becomes '?'.  Returns how many bytes were replaced. */
size_t mt_utf8_scrub(char *s);
/* 1 for the Unicode spaces the server splits and trims at: ASCII whitespace,
 * NEL, NBSP, U+1680, U+2000-200B, the line and paragraph separators, U+202F,
 * U+205F, U+3000 and the BOM (the splitter, blank texts, word alignment, HTML units). */
int    mt_utf8_is_space(uint32_t c);

#endif
