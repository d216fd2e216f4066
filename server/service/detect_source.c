/* detect_source: the source language of a request (detect_source.h). */
#include "detect_source.h"

#include <stdio.h>
#include <string.h>

#include "http/body.h"
#include "http/errors.h"
#include "languages.h"
#include "pairs.h"

/* ---- the candidates and their language models ---- */

void srv_detect_lms_init(srv_detect_lms *l, const char *const *source_lang, const mt_tokenizer *const *tok, int n)
{
    memset(l, 0, sizeof *l);
    for (int i = 0; i < n; i++) {
        const char *s = source_lang[i];
        if (!s || !s[0])
            continue;
        int k = 0;
        while (k < l->n && !srv_lang_same(l->cand[k], s))
            k++;
        if (k == l->n) {
            if (l->n == SRV_MAX_SOURCES)
                continue;
            l->cand[l->n++] = s;
        }
        const mt_spm *src = mt_tokenizer_spm(tok[i], 0);
        if (!l->spm[k] && src && !mt_spm_same(src, mt_tokenizer_spm(tok[i], 1)))
            l->spm[k] = src;            /* not a joint source+target model */
    }
    int shared[SRV_MAX_SOURCES] = { 0 };
    for (int i = 0; i < l->n; i++)
        for (int j = 0; j < l->n; j++)
            shared[i] |= j != i && mt_spm_same(l->spm[i], l->spm[j]);
    for (int i = 0; i < l->n; i++)
        if (shared[i])
            l->spm[i] = NULL;           /* one model for two languages: a model of neither */
}

static int spm_score(void *ctx, int i, const char *text, size_t len, double *logp)
{
    const srv_detect_lms *l = ctx;
    if (i < 0 || i >= l->n || !l->spm[i])
        return -1;
    return mt_spm_log_prob(l->spm[i], text, len, logp, NULL) == MT_OK ? 0 : -1;
}

static int charlm_score(void *ctx, int i, const char *text, size_t len, double *logp)
{
    const srv_detect_lms *l = ctx;
    if (i < 0 || i >= l->n || !l->charlm[i])
        return -1;
    *logp = srv_charlm_log_prob(l->charlm[i], text, len, NULL);
    return 0;
}

void srv_detect_lms_add_charlms(srv_detect_lms *l, const srv_charlm *const *lm, int n)
{
    for (int i = 0; i < l->n; i++)
        for (int j = 0; j < n && !l->charlm[i]; j++)
            if (lm[j] && srv_lang_same(srv_charlm_lang(lm[j]), l->cand[i]))
                l->charlm[i] = lm[j];
}

void srv_detect_lms_params(const srv_detect_lms *l, srv_detect_params *p)
{
    int spms = 0, charlms = 0;
    for (int i = 0; i < l->n; i++) {
        spms += l->spm[i] != NULL;
        charlms += l->charlm[i] != NULL;
    }
    p->cand = l->cand;
    p->n_cand = l->n;
    p->score = charlms >= 2 ? charlm_score : spms >= 2 ? spm_score : NULL;
    p->score_ctx = p->score ? (void *)l : NULL;
    if (p->score)
        p->cld2_weight = charlms >= 2 ? SRV_CHARLM_CLD2_WEIGHT : SRV_DETECT_CLD2_WEIGHT;
}

static void server_lms(const srv_server *srv, srv_detect_lms *l)
{
    const char *src[SRV_MAX_SOURCES], *x;
    const mt_tokenizer *tok[SRV_MAX_SOURCES];
    const srv_charlm *lm[SRV_MAX_MODELS];
    int n = 0, n_lm = 0;
    for (int i = 0; i < srv->n_models; i++) {  /* a decoder-only model: each declared source, no spm */
        if (!srv_model_listed(&srv->models[i]))
            continue;
        for (int k = 0; n < SRV_MAX_SOURCES && (x = srv_model_source_at(&srv->models[i], k)); k++) {
            src[n] = x;
            tok[n++] = srv->models[i].llm ? NULL : srv->models[i].tok;
        }
        for (int k = 0; k < srv->models[i].n_charlm && n_lm < SRV_MAX_MODELS; k++)
            lm[n_lm++] = srv->models[i].charlm[k];
    }
    srv_detect_lms_init(l, src, tok, n);
    srv_detect_lms_add_charlms(l, lm, n_lm);
}

/* The distinct source languages of the loaded models: their count. */
static int sources(const srv_server *srv, const char **out, int max)
{
    srv_detect_lms l;
    server_lms(srv, &l);
    int n = l.n < max ? l.n : max;
    memcpy(out, l.cand, sizeof *out * (size_t)n);
    return n;
}

/* "English (en), French (fr)" */
static void sources_text(const srv_server *srv, char *buf, size_t cap)
{
    const char *src[SRV_MAX_SOURCES];
    int n = sources(srv, src, SRV_MAX_SOURCES);
    size_t k = 0;
    buf[0] = 0;
    for (int i = 0; i < n && k < cap; i++)
        k += (size_t)snprintf(buf + k, cap - k, "%s%s (%s)", i ? ", " : "", srv_language_name(srv, src[i]), src[i]);
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
    srv_detect_lms l;
    server_lms(srv, &l);
    srv_detect_params p = srv_detect_default_params();
    srv_detect_lms_params(&l, &p);
    return srv_detect(buf, len, &p, out, max);
}

/* Nothing recognised: the first source with a path to target, confidence 0
 * (LibreTranslate's fallback); 0, or -1 when there is none. */
static int fallback_source(srv_server *srv, const char *target, srv_lang_guess *out)
{
    const char *src[SRV_MAX_SOURCES];
    int n = sources(srv, src, SRV_MAX_SOURCES);
    for (int i = 0; i < n; i++) {
        srv_path path;
        srv_response scratch = { 0 };       /* srv_fail only writes into it */
        if (srv_lang_same(src[i], target) || srv_path_for_pair(srv, src[i], target, &path, &scratch))
            continue;
        memset(out, 0, sizeof *out);
        snprintf(out->code, sizeof out->code, "%s", src[i]);
        out->confidence = 0.0f;
        return 0;
    }
    return -1;
}

int srv_detect_source(srv_server *srv, const char *const *texts, int n, const char *target, srv_lang_guess *out,
                      srv_response *resp)
{
    srv_lang_guess g[3];
    char avail[512];
    sources_text(srv, avail, sizeof avail);
    int k = srv_detect_texts(srv, texts, n, g, 3, resp);
    if (k == 0) {
        if (resp->error != SRV_OK)
            return -1;                      /* blank */
        if (fallback_source(srv, target, out) == 0)
            return 0;
        return srv_fail(resp, SRV_E_UNSUPPORTED_LANGUAGE, "could not detect the language of the text; name the "
                        "source (available: %s)", avail);
    }
    *out = g[0];
    const char *name = srv_language_name(srv, g[0].code);
    if (srv_lang_same(g[0].code, target))
        return srv_fail(resp, SRV_E_UNSUPPORTED_LANGUAGE, "detected %s (%s, confidence %.0f), which is the target "
                        "language: nothing to translate (sources available: %s)", name, g[0].code,
                        g[0].confidence, avail);
    int known = 0;
    for (int i = 0; i < srv->n_models; i++)
        known |= srv_model_listed(&srv->models[i]) && srv_model_sources_lang(&srv->models[i], g[0].code);
    if (!known)
        return srv_fail(resp, SRV_E_UNSUPPORTED_LANGUAGE, "detected %s (%s, confidence %.0f); no loaded model "
                        "translates from it (sources available: %s)", name, g[0].code, g[0].confidence, avail);
    return 0;
}
