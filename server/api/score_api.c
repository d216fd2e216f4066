/* POST /score  {"pairs": [{"source": string, "target": string}, ...], "model"?, "source_lang"?, "target_lang"?}
 *   -> {"model", "scores": [{"tokens", "token_ids", "log_probs", "score", "normalized_score"}], "timing_ms"}
 *
 * Teacher-forced scoring (CTranslate2's score_batch): each target is tokenized
 * with the target side (</s> appended) and scored given its source in one pass
 * with the causal mask: log_probs[t] = log p(target[t] | source, target[<t]),
 * </s> included, pad excluded from the normalizer.  score is their sum,
 * normalized_score their mean (per target token, </s> included).  The pairs
 * of a request are scored together (mt_score_batch: as few batched passes as
 * the session's rows allow), on a worker with a session of the model's pool.
 * A multilingual model's language tokens go where translation puts them
 * (srv_path_for_model names them): OPUS-MT's ">>fra<<" first in the source;
 * NLLB-200 / M2M-100's source language first in the source and the target
 * language first in the target, scored as its first token (the token a
 * translation forces: its log-prob says how likely the model finds that
 * language there).  "source_lang" / "target_lang" name them (the model's
 * codes or the clients'): NLLB / M2M-100 need both; OPUS-MT's target_lang
 * is optional (without it a source may lead with ">>fra<<" as written); a
 * model of one pair needs neither.
 * Limits: SRV_SCORE_MAX_PAIRS pairs; a source within the model's source
 * length, a target within its decoder length (</s> included); the sources'
 * tokens, and the targets', each within --max-tokens.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "http/body.h"
#include "handlers.h"
#include "service/pairs.h"
#include "service/residency.h"
#include "service/server.h"
#include "translate/text_ids.h"

#define SRV_SCORE_MAX_PAIRS 64

typedef struct {
    const char *source, *target;
    int32_t    *src, *tgt;          /* Marian ids, </s> appended */
    int         n_src, n_tgt;
    float      *logp;               /* [n_tgt] */
} score_pair;

typedef struct {
    srv_model  *m;
    score_pair *p;
    int         n;
    int32_t     src_lang, tgt_lang;     /* the language tokens put first in source / target; -1: none */
} score_req;

static void score_free(score_req *r)
{
    for (int i = 0; r->p && i < r->n; i++) {
        free(r->p[i].src);
        free(r->p[i].tgt);
        free(r->p[i].logp);
    }
    free(r->p);
}

/* pairs[i].name: a non-blank string. */
static int pair_text(json_t *pair, int i, const char *name, const char **out, srv_response *resp)
{
    json_t *v = json_object_get(pair, name);
    if (!v || json_is_null(v))
        return srv_fail(resp, SRV_E_INVALID_FIELD, "field 'pairs[%d].%s' is required", i, name);
    if (!json_is_string(v))
        return srv_fail(resp, SRV_E_INVALID_FIELD, "field 'pairs[%d].%s' must be a string", i, name);
    if (srv_is_blank(json_string_value(v), json_string_length(v)))
        return srv_fail(resp, SRV_E_EMPTY_TEXT, "field 'pairs[%d].%s' is empty", i, name);
    *out = json_string_value(v);
    return 0;
}

/* The language tokens of a multilingual model, as translation places them. */
static int languages(srv_request *req, srv_response *resp, score_req *r)
{
    const char *source = NULL, *target = NULL;
    srv_path path;
    r->src_lang = r->tgt_lang = -1;
    if (srv_field_string(req, resp, "source_lang", &source) < 0 ||
        srv_field_string(req, resp, "target_lang", &target) < 0)
        return -1;
    if (r->m->llm || (!r->m->multi && !r->m->n_targets))
        return 0;                       /* no language token: the fields change nothing */
    if (r->m->multi && (!source || !strcmp(source, "auto") || !target))
        return srv_fail(resp, SRV_E_INVALID_FIELD, "model '%s' is multilingual (%d languages): name \"source_lang\" "
                        "and \"target_lang\" (\"fr\" or the model's \"%s\")", r->m->id, r->m->n_targets, r->m->targets[0]);
    if (!r->m->multi && !target)
        return 0;                       /* OPUS-MT: a source may lead with its ">>fra<<" as written */
    if (srv_path_for_model(r->m, source, target, &path, resp))
        return -1;
    if (r->m->multi)
        r->src_lang = path.src_id[0], r->tgt_lang = path.lang_id[0];
    else
        r->src_lang = path.lang_id[0];
    return 0;
}

static int parse(srv_request *req, srv_response *resp, score_req *r)
{
    json_t *pairs = req->json ? json_object_get(req->json, "pairs") : NULL;
    if (!pairs || json_is_null(pairs))
        return srv_fail(resp, SRV_E_INVALID_FIELD, "field 'pairs' is required");
    if (!json_is_array(pairs))
        return srv_fail(resp, SRV_E_INVALID_FIELD, "field 'pairs' must be a list of {\"source\", \"target\"} objects");
    size_t n = json_array_size(pairs);
    if (n == 0)
        return srv_fail(resp, SRV_E_INVALID_FIELD, "field 'pairs' is an empty list");
    if (n > SRV_SCORE_MAX_PAIRS)
        return srv_fail(resp, SRV_E_INVALID_FIELD, "field 'pairs' has %zu entries; the limit is %d", n,
                        SRV_SCORE_MAX_PAIRS);
    if (!(r->m = srv_request_model(req, resp)) || languages(req, resp, r))
        return -1;
    if (!(r->p = calloc(n, sizeof *r->p)))
        return srv_fail(resp, SRV_E_INTERNAL, "out of memory");
    r->n = (int)n;
    for (int i = 0; i < r->n; i++) {
        json_t *e = json_array_get(pairs, (size_t)i);
        if (!json_is_object(e))
            return srv_fail(resp, SRV_E_INVALID_FIELD, "field 'pairs[%d]' must be an object with \"source\" and "
                            "\"target\"", i);
        if (pair_text(e, i, "source", &r->p[i].source, resp) || pair_text(e, i, "target", &r->p[i].target, resp))
            return -1;
    }
    return 0;
}

/* srv_text_ids with lang (>= 0) put first, or last when after (a source of
 * NLLB's legacy_behaviour: pieces + [</s>, lang], as translation builds it),
 * within max ids in all. */
static mt_status lang_ids(const mt_tokenizer *tok, const char *text, int target, int32_t lang, int after, int max,
                          const char *what, int32_t **ids, int *n, mt_err *err)
{
    int pre = lang >= 0;
    mt_status st = srv_text_ids(tok, text, target, max > 0 ? max - pre : 0, what, ids, n, err);
    if (st != MT_OK || !pre)
        return st;
    int32_t *grown = realloc(*ids, sizeof **ids * (size_t)(*n + 1));
    if (!grown)
        return mt_err_set(err, MT_ERR_NOMEM, "out of memory");
    if (after) {
        grown[*n] = lang;
        *ids = grown;
        ++*n;
        return MT_OK;
    }
    memmove(grown + 1, grown, sizeof *grown * (size_t)*n);
    grown[0] = lang;
    *ids = grown;
    ++*n;
    return MT_OK;
}

static int tokenize(const srv_request *req, score_req *r, srv_response *resp)
{
    const srv_model *m = r->m;
    long src_total = 0, tgt_total = 0, limit = req->srv->opts.max_tokens;
    const mt_multi_tokenizer *mt = mt_tokenizer_multi(m->tok);
    int after = mt && mt_multi_legacy(mt);
    for (int i = 0; i < r->n; i++) {
        score_pair *p = &r->p[i];
        char src_name[48], tgt_name[48];
        mt_err err = { 0 };
        snprintf(src_name, sizeof src_name, "field 'pairs[%d].source'", i);
        snprintf(tgt_name, sizeof tgt_name, "field 'pairs[%d].target'", i);
        if (lang_ids(m->tok, p->source, 0, r->src_lang, after, m->sparams.max_src_len, src_name, &p->src, &p->n_src,
                     &err) ||
            lang_ids(m->tok, p->target, 1, r->tgt_lang, 0, m->sparams.max_tgt_len, tgt_name, &p->tgt, &p->n_tgt, &err))
            return srv_fail_mt(resp, &err);
        if (!(p->logp = malloc(sizeof *p->logp * (size_t)p->n_tgt)))
            return srv_fail(resp, SRV_E_INTERNAL, "out of memory");
        src_total += p->n_src;
        tgt_total += p->n_tgt;
    }
    if (limit > 0 && (src_total > limit || tgt_total > limit))
        return srv_fail(resp, SRV_E_INPUT_TOO_LONG, "the pairs have %ld source and %ld target tokens; the limit "
                        "is %ld each", src_total, tgt_total, limit);
    return 0;
}

/* Every pair in one mt_score_batch call on a pooled session. */
static int run(srv_server *srv, score_req *r, srv_response *resp)
{
    mt_session *s;
    mt_err err = { 0 };
    if (srv_model_acquire(srv, r->m, resp))     /* on demand: loads it (this is a worker) */
        return -1;
    if (srv_sessions_get(r->m->sessions, &s, &err) != MT_OK) {
        srv_model_release(srv, r->m);
        return srv_fail(resp, SRV_E_INTERNAL, "cannot get a session: %s", err.msg);
    }
    const int32_t **src = malloc(sizeof *src * (size_t)r->n), **tgt = malloc(sizeof *tgt * (size_t)r->n);
    int *ns = malloc(sizeof *ns * (size_t)r->n), *nt = malloc(sizeof *nt * (size_t)r->n);
    float **lp = malloc(sizeof *lp * (size_t)r->n);
    int rc = 0;
    if (!src || !tgt || !ns || !nt || !lp) {
        rc = srv_fail(resp, SRV_E_INTERNAL, "out of memory");
    } else {
        for (int i = 0; i < r->n; i++)
            src[i] = r->p[i].src, ns[i] = r->p[i].n_src, tgt[i] = r->p[i].tgt, nt[i] = r->p[i].n_tgt,
            lp[i] = r->p[i].logp;
        if (mt_score_batch(s, r->n, src, ns, tgt, nt, lp, &err) != MT_OK)
            rc = srv_fail_mt(resp, &err);
    }
    srv_sessions_put(r->m->sessions, s);
    srv_model_release(srv, r->m);
    free(src);
    free(tgt);
    free(ns);
    free(nt);
    free(lp);
    return rc;
}

/* JSON has no -inf (a pad target, which the tokenizer never gives): null. */
static json_t *real_or_null(double x)
{
    return isfinite(x) ? json_real(x) : json_null();
}

static json_t *pair_json(const srv_model *m, const score_pair *p)
{
    json_t *tokens = json_array(), *ids = json_array(), *lps = json_array();
    double sum = 0;
    for (int t = 0; t < p->n_tgt; t++) {
        const char *piece = mt_tokenizer_piece(m->tok, p->tgt[t]);
        json_array_append_new(tokens, json_string(piece ? piece : ""));
        json_array_append_new(ids, json_integer(p->tgt[t]));
        json_array_append_new(lps, real_or_null(p->logp[t]));
        sum += p->logp[t];
    }
    return json_pack("{s:o,s:o,s:o,s:o,s:o}", "tokens", tokens, "token_ids", ids, "log_probs", lps,
                     "score", real_or_null(sum), "normalized_score", real_or_null(sum / p->n_tgt));
}

void srv_handle_score(srv_request *req, srv_response *resp)
{
    score_req r = { 0 };
    if (parse(req, resp, &r) || tokenize(req, &r, resp) || run(req->srv, &r, resp))
        goto done;
    json_t *list = json_array();
    for (int i = 0; i < r.n; i++)
        json_array_append_new(list, pair_json(r.m, &r.p[i]));
    srv_reply_json(resp, 200, json_pack("{s:s,s:o,s:f}", "model", r.m->id, "scores", list, "timing_ms",
                                        (srv_now() - req->t_start) * 1e3));
done:
    score_free(&r);
}
