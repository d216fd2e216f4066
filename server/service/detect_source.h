/* detect_source: `source: "auto"` and POST /detect, over the loaded models.
 *
 * The candidates are the languages the loaded models translate from; the
 * detector (detect/detect.h: CLD2 with the candidates as hints) may still
 * answer another language, which is then reported, never translated by a
 * model of another language.  A request is one language, as LibreTranslate
 * has it: its texts are detected together.
 */
#ifndef SRV_DETECT_SOURCE_H
#define SRV_DETECT_SOURCE_H

#include "detect/detect.h"
#include "server.h"

/* The guesses for texts[0..n) (their first SRV_DETECT_MAX_BYTES together),
 * best first, at most max; their count.  0 with resp failed (400): blank texts. */
int srv_detect_texts(const srv_server *srv, const char *const *texts, int n, srv_lang_guess *out, int max,
                     srv_response *resp);

/* The source language for `source: "auto"` towards target: *out the detected
 * language when a loaded model (or a pivot) translates it into target.  0, or
 * -1 with resp failed (400 unsupported_language) saying what was detected and
 * what is available: nothing recognised, a language no model translates from,
 * or the target itself. */
int srv_detect_source(srv_server *srv, const char *const *texts, int n, const char *target, srv_lang_guess *out,
                      srv_response *resp);

#endif
