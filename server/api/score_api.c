/* POST /score  {"pairs": [{"source": string, "target": string}, ...], "model"?}
 *   -> {"model", "scores": [{"tokens", "token_ids", "log_probs", "score", "normalized_score"}], "timing_ms"}
 *
 * Teacher-forced scoring (CTranslate2's score_batch): each target is tokenized
 * with the target side (</s> appended) and scored given its source in one pass
 * with the causal mask: log_probs[t] = log p(target[t] | source, target[<t]),
 * </s> included, pad excluded from the normalizer.  score is their sum,
 * normalized_score their mean (per target token, </s> included).  The pairs
 * of a request are scored together (mt_score_batch: as few batched passes as
 * the session's rows allow), on a worker with a session of the model's pool.
 * Limits: SRV_SCORE_MAX_PAIRS pairs; a source within the model's source
 * length, a target within its decoder length (</s> included); the sources'
 * tokens, and the targets', each within --max-tokens.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "http/body.h"
#include "handlers.h"
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
    if (!(r->m = srv_request_model(req, resp)))
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

static int tokenize(const srv_request *req, score_req *r, srv_response *resp)
{
    const srv_model *m = r->m;
    long src_total = 0, tgt_total = 0, limit = req->srv->opts.max_tokens;
    for (int i = 0; i < r->n; i++) {
        score_pair *p = &r->p[i];
        char src_name[48], tgt_name[48];
        mt_err err = { 0 };
        snprintf(src_name, sizeof src_name, "field 'pairs[%d].source'", i);
        snprintf(tgt_name, sizeof tgt_name, "field 'pairs[%d].target'", i);
        if (srv_text_ids(m->tok, p->source, 0, m->sparams.max_src_len, src_name, &p->src, &p->n_src, &err) ||
            srv_text_ids(m->tok, p->target, 1, m->sparams.max_tgt_len, tgt_name, &p->tgt, &p->n_tgt, &err))
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
