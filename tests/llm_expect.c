/* llm_expect: the decoder-only model tests' shared fixtures and comparisons (llm_expect.h). */
#include "llm_expect.h"

#include <stdarg.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <cmocka.h>

int llm_is_dir(const char *p)
{
    struct stat sb;
    return stat(p, &sb) == 0 && S_ISDIR(sb.st_mode);
}

const char *llm_set_dir(char *buf, size_t n, const char *env, const char *sub)
{
    const char *e = getenv(env), *bin = getenv("MTSERVE_BIN");
    if (e && *e) {
        snprintf(buf, n, "%s", e);
        return buf;
    }
    if (bin && strrchr(bin, '/')) {
        snprintf(buf, n, "%.*s/%s", (int)(strrchr(bin, '/') - bin), bin, sub);
        if (llm_is_dir(buf))
            return buf;
    }
    snprintf(buf, n, "build/%s", sub);
    return buf;
}

static int read_ids(const char *s, int32_t *out)
{
    int n = 0;
    char *end;
    for (long v = strtol(s, &end, 10); end != s && n < LLM_MAX_IDS; v = strtol(s, &end, 10)) {
        out[n++] = (int32_t)v;
        s = end;
    }
    return n;
}

void llm_expected_read(const char *path, const char *key, llm_expected *e, int max, const char *make_hint)
{
    FILE *f = fopen(path, "r");
    if (!f)
        fail_msg("%s: missing: run %s", path, make_hint);
    char line[8192];
    size_t kn = strlen(key);
    memset(e, 0, sizeof *e);
    while (fgets(line, sizeof line, f)) {
        if (!strncmp(line, "prompt ", 7)) {
            assert_true(e->n < LLM_MAX_PROMPTS);
            e->plen[e->n] = read_ids(line + 7, e->prompt[e->n]);
            e->n++;
        } else if (!strncmp(line, key, kn) && line[kn] == ' ') {
            assert_true(e->n > 0);              /* an ids line follows its prompt */
            e->ilen[e->n - 1] = read_ids(line + kn + 1, e->ids[e->n - 1]);
        }
    }
    fclose(f);
    if (max > 0 && e->n > max) {
        printf("   (sanitizer build: the first %d of %d prompts of %s)\n", max, e->n, path);
        e->n = max;
    }
}

mt_model *llm_load(const char *dir, const char *sub, mt_weights w)
{
    char path[4200];
    snprintf(path, sizeof path, "%s/%s", dir, sub);
    mt_model_params mp = mt_model_default_params();
    mp.weights = w;
    mt_model *m = NULL;
    mt_err err = {0};
    if (mt_model_load(path, &mp, &m, &err) != MT_OK)
        fail_msg("%s: %s", path, err.msg);
    return m;
}

mt_session *llm_session(const mt_model *m, int batch, int max_src, int gen, int kv_f16)
{
    mt_session_params sp = {.max_batch = batch, .max_src_len = max_src, .max_tgt_len = gen + 2, .kv_f16 = kv_f16};
    mt_session *s = NULL;
    mt_err err = {0};
    if (mt_session_new(m, &sp, &s, &err) != MT_OK)
        fail_msg("session: %s", err.msg);
    return s;
}

mt_decode_params llm_greedy(int gen)
{
    mt_decode_params q = mt_decode_default_params();
    q.beam_size = 1;
    q.lengths.max_length = gen + 2;          /* gen free ids, then the forced eos of a full-length sequence */
    return q;
}

void llm_generate_all(mt_session *s, const llm_expected *e, int gen, mt_hyp *out)
{
    const int32_t *src[LLM_MAX_PROMPTS];
    for (int i = 0; i < e->n; i++)
        src[i] = e->prompt[i];
    mt_decode_params q = llm_greedy(gen);
    mt_err err = {0};
    if (mt_generate(s, src, e->plen, e->n, &q, out, &err) != MT_OK)
        fail_msg("mt_generate: %s", err.msg);
}

int llm_cut(const mt_hyp *h, int32_t eos, int gen)
{
    int n = h->n_ids < gen ? h->n_ids : gen;
    for (int i = 0; i < n; i++)
        if (h->ids[i] == eos)
            return i + 1;
    return n;
}

void llm_agreement(const llm_expected *e, const mt_hyp *out, int32_t eos, int gen, int *seq_eq, int *tok_eq,
                   int *tok_all)
{
    *seq_eq = *tok_eq = *tok_all = 0;
    for (int i = 0; i < e->n; i++) {
        int n = llm_cut(&out[i], eos, gen), k = 0;
        while (k < n && k < e->ilen[i] && out[i].ids[k] == e->ids[i][k])
            k++;
        *seq_eq += n == e->ilen[i] && k == e->ilen[i];
        *tok_eq += k;
        *tok_all += e->ilen[i];
    }
}
