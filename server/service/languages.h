/* languages: language codes and names, from the table server/service/languages.tsv
 * (ISO 639-1, ISO 639-3, English name), embedded in the binary.
 * LibreTranslate clients speak ISO 639-1 ("fr"); OPUS-MT's multilingual
 * models name their targets with tokens such as ">>fra<<" (mostly 639-3). */
#ifndef SRV_LANGUAGES_H
#define SRV_LANGUAGES_H

/* The English name of code (either form), or code itself when unknown. */
const char *srv_lang_name(const char *code);
/* 1 when a and b name the same language: equal, or the 639-1 and 639-3 codes of one row. */
int         srv_lang_same(const char *a, const char *b);

#endif
