/* title_case: a Title Case sentence ("Restore From Trash") given to the model
 * in sentence case ("Restore from trash"), for "fold_title_case" (on by
 * default in the text APIs and the CLI; pipeline.h).
 *
 * Why: the models learn interface labels mostly as written in sentence case;
 * in Title Case they copied them or translated them badly (issue 53:
 * models/recipe/corpus-notes.md "Title Case at the input", 5.15 -> 10.95 BLEU
 * en->fr on Title Case UI strings, the written ones unchanged).  The output
 * is the model's: French writes interface text in sentence case, and English
 * references of the Title Case set scored lower re-capitalized.
 *
 * The rules, on words split at ASCII whitespace: a word's initial is its
 * first word character that is not an ASCII digit; a sentence is Title Case
 * when at least two words have an initial and every initial is uppercase
 * (a caseless script's initial is not: no fold).  Then each word after the
 * first with an initial gets its initial lowercased when it is the word's
 * only uppercase letter and the word holds no ASCII digit: acronyms
 * ("LDAP"), CamelCase ("LibreOffice") and "MP3" stay.  Words are taken in
 * parts split at hyphens and apostrophes (- ' U+2019), each part as a word
 * ("Copier Le Presse-Papiers" -> "Copier le presse-papiers", "D'Obtenir" ->
 * "d'obtenir", the first word's later parts too: "Auto-Test" -> "Auto-test"):
 * Title Case capitalizes after them, and unfolded they cost fr->en 2.6 BLEU
 * on Title Case UI strings (models/recipe/corpus-notes.md).  A letter is lowered
 * only when its lowercase has as many UTF-8 bytes, so every byte offset
 * (placeholders, glossary terms, word links) means the same in both texts.
 */
#ifndef SRV_TITLE_CASE_H
#define SRV_TITLE_CASE_H

#include <stddef.h>

/* When s[0..n) (UTF-8; invalid bytes are no letters) is Title Case by the
 * rules above: writes it in sentence case to out[0..n) (n bytes, no NUL)
 * and returns the number of letters lowered (>= 1); otherwise 0 and out is
 * left untouched.  Never allocates. */
int srv_title_fold(const char *s, size_t n, char *out);

/* A lone word in sentence case ("Alarm", "Hidden") is ambiguous in the same
 * way: a label, or a name the model gives back as it is.  The models copied
 * such words they did not know (issue 53: 118 of the 1,500 UI strings came
 * back unchanged from en->fr, most of them such words) and translated them
 * once lowercased ("alarm" -> "alarme"), while names stayed names.  So when
 * s[0..n) is one word (no ASCII whitespace inside; blanks around it allowed)
 * of letters only (word characters, no ASCII digit), at least two, the first
 * uppercase and no other: writes it to out[0..n) with that letter lowered
 * and returns 1; the caller upper-cases the translation's first letter
 * (srv_title_capitalize).  Otherwise 0, out untouched.  Measured in
 * models/recipe/corpus-notes.md ("A lone word"). */
int srv_word_fold(const char *s, size_t n, char *out);

/* The first letter of text[0..n) (its first word character, when that is
 * not an ASCII digit) upper-cased in place, when its uppercase
 * (srv_glossary_upper) has as many UTF-8 bytes; returns 1 when it changed. */
int srv_title_capitalize(char *text, size_t n);

#endif
