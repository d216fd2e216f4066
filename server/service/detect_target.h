/* detect_target: `source: "auto"` for the APIs that send text already in the
 * target language back as it is.  LibreTranslate translates it with argos'
 * identity translation (its app.py picks the detected language as the source,
 * whatever the target) and DeepL returns it unchanged; neither refuses it, as
 * srv_detect_source does for our API. */
#ifndef SRV_DETECT_TARGET_H
#define SRV_DETECT_TARGET_H

#include "detect_source.h"

/* The source of texts[0..n) towards target: *same = 1 with *out the guess when
 * the texts (detected together) are in the target language itself, else
 * *same = 0 and *out is srv_detect_source's answer.  0, or -1 with resp
 * failed as srv_detect_source fails (never for the target language). */
int srv_detect_auto(srv_server *srv, const char *const *texts, int n, const char *target, srv_lang_guess *out,
                    int *same, srv_response *resp);

#endif
