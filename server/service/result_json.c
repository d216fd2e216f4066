/* result_json: see result_json.h */
#include "result_json.h"

#include <math.h>

static json_t *real_or_null(double x) { return isfinite(x) ? json_real(x) : json_null(); }

void srv_result_features_json(json_t *o, const srv_tr_result *r, int token_scores, int alignments)
{
    if (token_scores) {
        json_t *lp = json_array();
        for (int k = 0; k < r->n_ids; k++)
            json_array_append_new(lp, real_or_null(r->token_logp ? r->token_logp[k] : NAN));
        json_object_set_new(o, "token_scores", lp);
    }
    if (alignments) {
        json_t *al = json_array(), *words = json_array();
        for (int k = 0; k < r->n_align; k++)
            json_array_append_new(al, json_pack("[i,i]", r->align[2 * k], r->align[2 * k + 1]));
        for (int k = 0; k < r->n_words; k++) {
            const long *w = r->words + 4 * (long)k;
            json_array_append_new(words, json_pack("{s:[I,I],s:[I,I]}", "source", (json_int_t)w[0],
                                                   (json_int_t)w[1], "target", (json_int_t)w[2], (json_int_t)w[3]));
        }
        json_object_set_new(o, "alignments", al);
        json_object_set_new(o, "word_alignments", words);
    }
}
