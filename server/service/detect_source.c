/* detect_source: the source language of a request (detect_source.h). */
#include "detect_source.h"

#include <stdio.h>
#include <string.h>

#include "http/body.h"
#include "http/errors.h"
#include "languages.h"
#include "pairs.h"

/* The distinct source languages of the loaded models: their count. */
static int sources(const srv_server *srv, const char **out, int max)
{
    int n = 0;
    for (int i = 0; i < srv->n_models && n < max; i++) {
        const char *s = srv->models[i].info->source_lang;
        int seen = !s[0];
        for (int k = 0; k < n && !seen; k++)
            seen = srv_lang_same(out[k], s);
        if (!seen)
            out[n++] = s;
    }
    return n;
}

/* "English (en), French (fr)" */
static void sources_text(const srv_server *srv, char *buf, size_t cap)
{
    const char *src[SRV_MAX_MODELS];
    int n = sources(srv, src, SRV_MAX_MODELS);
    size_t k = 0;
    buf[0] = 0;
    for (int i = 0; i < n && k < cap; i++)
        k += (size_t)snprintf(buf + k, cap - k, "%s%s (%s)", i ? ", " : "", srv_lang_name(src[i]), src[i]);
}

int srv_detect_texts(const srv_server *srv, const char *const *texts, int n, srv_lang_guess *out, int max,
                     srv_response *resp)
{
    char buf[SRV_DETECT_MAX_BYTES];
    size_t len = 0;
    for (int i = 0; i < n && len < sizeof buf; i++) {
        size_t k = strlen(texts[i]);
        if (srv_is_blank(texts[i], k))
            continue;
        if (len && len < sizeof buf)
            buf[len++] = '\n';
        k = k < sizeof buf - len ? k : sizeof buf - len;    /* detect.c cuts on a character boundary */
        memcpy(buf + len, texts[i], k);
        len += k;
    }
    if (len == 0) {
        srv_fail(resp, SRV_E_EMPTY_TEXT, "the text is empty or whitespace only: there is no language to detect");
        return 0;
    }
    const char *cand[SRV_MAX_MODELS];
    int n_cand = sources(srv, cand, SRV_MAX_MODELS);
    return srv_detect_languages(buf, len, cand, n_cand, out, max);
}

int srv_detect_source(srv_server *srv, const char *const *texts, int n, const char *target, srv_lang_guess *out,
                      srv_response *resp)
{
    srv_lang_guess g[3];
    char avail[512];
    sources_text(srv, avail, sizeof avail);
    int k = srv_detect_texts(srv, texts, n, g, 3, resp);
    if (k == 0)
        return resp->error != SRV_OK ? -1 : srv_fail(resp, SRV_E_UNSUPPORTED_LANGUAGE, "could not detect the language of the "
                                          "text; name the source (available: %s)", avail);
    *out = g[0];
    const char *name = srv_lang_name(g[0].code);
    if (srv_lang_same(g[0].code, target))
        return srv_fail(resp, SRV_E_UNSUPPORTED_LANGUAGE, "detected %s (%s, confidence %.0f), which is the target "
                        "language: nothing to translate (sources available: %s)", name, g[0].code,
                        g[0].confidence, avail);
    int known = 0;
    for (int i = 0; i < srv->n_models; i++)
        known |= srv_model_sources_lang(&srv->models[i], g[0].code);
    if (!known)
        return srv_fail(resp, SRV_E_UNSUPPORTED_LANGUAGE, "detected %s (%s, confidence %.0f); no loaded model "
                        "translates from it (sources available: %s)", name, g[0].code, g[0].confidence, avail);
    return 0;
}
