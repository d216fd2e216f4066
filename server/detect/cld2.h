/* cld2: the few calls of CLD2 (Google's Compact Language Detector 2, Debian's
 * libcld2, a C++ library) that server/detect needs, behind C.  Folder-private:
 * only detect.c uses it (and bench/detect_eval.c, which measures CLD2 itself).
 *
 * CLD2 keeps its tables compiled in (read-only data) and keeps every scoring
 * state on the caller's stack, so each call here is thread-safe and reads no
 * file.  Languages are CLD2's own enum numbers, kept opaque as ints. */
#ifndef SRV_DETECT_CLD2_H
#define SRV_DETECT_CLD2_H

#ifdef __cplusplus
extern "C" {
#endif

/* One detection: up to three languages, best first (CLD2's language3[]);
 * unused entries hold detect_cld2_unknown(). */
typedef struct {
    int    lang[3];
    int    percent[3];      /* share of the text's letters in that language, 0..100 */
    double score[3];        /* normalized score: ~1000 when the text is as typical of
                               the language as ordinary text, far lower for a few words */
    int    reliable;        /* CLD2's is_reliable */
    int    valid_bytes;     /* the interchange-valid UTF-8 prefix CLD2 accepted */
} detect_cld2_result;

/* Detects the languages of text[0..len) (plain text, no HTML), which should be
 * interchange-valid UTF-8: CLD2 answers nothing for a text that is not
 * (valid_bytes < len).  hints: NULL, or comma-separated CLD2 codes ("fr,de") that
 * CLD2 favours (its content-language hint); best_effort: CLD2's
 * kCLDFlagBestEffort, an answer even for text too short to be reliable. */
void detect_cld2(const char *text, int len, const char *hints, int best_effort, detect_cld2_result *r);

/* CLD2's UNKNOWN_LANGUAGE. */
int detect_cld2_unknown(void);
/* 1 for a language, 0 for UNKNOWN, "Ignore" and CLD2's pseudo-languages (Pig
 * Latin, Klingon..., and "xx-Latn"-style script-only answers). */
int detect_cld2_is_language(int lang);
/* CLD2's code of a language: ISO 639-1 where there is one ("en"), else 639-2/3
 * ("ceb"), "zh-Hant" for traditional Chinese, and the retired "iw" (Hebrew) and
 * "jw" (Javanese); "un" when unknown.  A static string. */
const char *detect_cld2_code(int lang);
/* The language of a code or BCP 47 tag as CLD2 spells them ("fr", "fr-CA",
 * "zh-Hant", "he" or "iw"), or detect_cld2_unknown(). */
int detect_cld2_lang(const char *code);

#ifdef __cplusplus
}
#endif

#endif
