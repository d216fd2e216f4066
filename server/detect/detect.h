/* detect: the language of a text, for `source: "auto"` and POST /detect.
 *
 * Built on CLD2 (Debian's libcld2: tables compiled in, no file read at run time,
 * every state on the caller's stack), called through cld2.h.
 *
 * Usage:
 *     const char *cand[] = {"en", "fr"};          // the languages the models translate from
 *     srv_lang_guess g[3];
 *     int n = srv_detect_languages(text, len, cand, 2, g, 3);
 *     if (n == 0)                    ... no language recognised (empty, digits, symbols)
 *     else if (g[0] is a candidate)  ... translate from g[0].code
 *     else                           ... "detected German (de); available: en, fr"
 *
 * THE RULE.  CLD2 is asked once, with the candidates as its content-language
 * hints (they raise those languages' scores); its best language is the answer,
 * candidate or not.  When plain CLD2 names no language (short or odd text), it is
 * asked again with its best-effort flag, and that answer's confidence is halved.
 * English is never passed as a hint: CLD2 already opens every Latin-script span
 * with an English entry (its debug output shows it), and hinting English undoes
 * the hint of the others.  CLD2 reads four hints and ignores a fifth, so the
 * first four non-English candidates are passed.
 *
 * Why, measured by bench/detect_eval.sh (CLD2 vs libexttextcat, figures in
 * BENCHMARKS.md) on 500 English + 500 French held-out lines of 3-10 words (the
 * test split of models/en-fr, Debian package descriptions) and 450 German,
 * Spanish and Italian Debian package synopses (tests/fixtures/detect/):
 *   - Debian's CLD2 scores few quadgrams of a short text, and leans English: plain
 *     CLD2 gets en 96.6% / fr 84.4% right (the rest mostly "unknown" or English);
 *     it names one language for such text, so "the first candidate of CLD2's top
 *     3" instead of its top 1 changes no answer of the 1450 lines.
 *   - hints {fr} for candidates {en, fr}: 97.7% of the 1000 lines right (en 99.0%,
 *     fr 96.4%); hints {en, fr}: 96.4%; no hint: 93.4% (best effort).
 *   - the price: German/Spanish/Italian reported as en or fr: 23.3% of the 450 with
 *     hints {fr}, 18.7% without hints: mostly synopses that CLD2 reads as English
 *     even unhinted ("Xorg X Server - Quelltexte", "base de datos de ajedrez").
 *     The confidence below separates most of them: keeping answers of
 *     confidence >= 20 gives 97.3% right and 16.0% false en/fr; >= 30: 96.1% / 12.4%.
 *   - the target of issue 27 (>= 99% with candidates {en, fr}) is NOT met on this
 *     data: neither library reaches it (libexttextcat restricted to en+fr: 96.0%).
 * Restricting the answer to the candidates outright would turn every German text
 * into English or French; the hint only tips texts CLD2 finds close.
 *
 * CONFIDENCE (0..100): percent * min(1, score / 1000), halved for a best-effort
 * answer, where percent is CLD2's share of the text's letters in that language
 * and score its normalized score (~1000 for text as typical of the language as
 * ordinary prose, far lower for a few words that fit badly).  Measured on the
 * 1450 lines above, the answer was right for 99% of confidences >= 90, ~94% of
 * 60-90, 81% of 50-60, 70% of 40-50, 62% of 30-40, 48% of 20-30, 18% of 10-20.
 */
#ifndef SRV_DETECT_H
#define SRV_DETECT_H

#include <stddef.h>

/* Only the first SRV_DETECT_MAX_BYTES of a text are read (cut on a character
 * boundary): CLD2 settles long before, and the cost stays bounded. */
#define SRV_DETECT_MAX_BYTES (16 * 1024)

typedef struct {
    char  code[16];       /* ISO 639-1 where there is one ("en"), else 639-2/3 ("ceb"),
                             "zh-Hant" for traditional Chinese; NUL-terminated, non-empty */
    float confidence;     /* 0..100, defined above */
} srv_lang_guess;

/* The languages of text[0..len), best first (confidence non-increasing), at most
 * min(max, 3) of them; returns their count (0: none recognised).
 *
 * cand[0..n_cand): the languages the caller can use (NULL / 0: any), as ISO 639-1
 * codes or BCP 47 tags in any case, '-' or '_' ("fr", "FR", "pt_BR", "zh-Hant");
 * they are CLD2 hints (the rule above), so an answer may still be another language.
 * A code CLD2 does not know (a 639-3 code such as "fra": map it with
 * server/service/languages.h first) is ignored.
 *
 * Any bytes are accepted: malformed UTF-8 and characters CLD2 refuses (controls,
 * noncharacters) count as spaces.  Empty or whitespace-only text, and text
 * without letters, give 0.  Thread-safe, no globals.  The text is copied once
 * (CLD2 reads past the end of its buffer, the copy is padded); 0 also when out
 * of memory. */
int srv_detect_languages(const char *text, size_t len, const char *const *cand, int n_cand,
                         srv_lang_guess *out, int max);

#endif
