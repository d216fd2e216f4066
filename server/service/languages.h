/* languages: language codes and names, from the table server/service/languages.tsv
 * (ISO 639-1, ISO 639-3, English name) and script names from scripts.tsv (ISO
 * 15924: "Latn", "Latin"), both embedded in the binary.
 * LibreTranslate clients speak ISO 639-1 ("fr"); OPUS-MT's multilingual
 * models name their targets with tokens such as ">>fra<<" (mostly 639-3);
 * NLLB-200 with 639-3 and a script ("fra_Latn"), M2M-100 with 639-1 ("fr"). */
#ifndef SRV_LANGUAGES_H
#define SRV_LANGUAGES_H

#include <stddef.h>

/* The English name of code (either form), or code itself when unknown. */
const char *srv_lang_name(const char *code);
/* The code clients know a language by: its ISO 639-1 code, else its 639-3 one
 * ("arb" and "ara" give "ar", "ast" "ast"); code itself when unknown. */
const char *srv_lang_short(const char *code);
/* 1 when a and b name the same language: equal, or two codes of one row (639-1,
 * 639-3, the other codes NLLB-200 and M2M-100 use: "arb", "ns"). */
int         srv_lang_same(const char *a, const char *b);
/* The English name of an ISO 15924 script ("Latn": "Latin"; Han's variants
 * "Hans" and "Hant": "Simplified", "Traditional"), or NULL when unknown. */
const char *srv_script_name(const char *script);
/* The name of a language in a script, from a code such as NLLB's ("zho_Hant":
 * "Chinese (Traditional)", "ace_Arab": "Achinese (Arabic)") into buf; code
 * itself when its language or script is unknown (or the name longer than
 * cap).  Returns buf.  A multilingual model uses it for the languages it has
 * in two scripts (pairs.h srv_language_name). */
const char *srv_lang_script_name(const char *code, char *buf, size_t cap);

#endif
