/* llm_expect: what the decoder-only model tests share (test_llm, test_gemma3): where a
 * generated model set lives, its expected ids (written by the independent float64
 * references, tests/llm/gen_llm.py and gen_gemma3.py), a model and a session made for them, and how a batch's
 * greedy ids are compared with the reference's. */
#ifndef TESTS_LLM_EXPECT_H
#define TESTS_LLM_EXPECT_H

#include <stddef.h>
#include <stdint.h>

#include "mt.h"

#define LLM_MAX_PROMPTS 64
#define LLM_MAX_IDS     64

typedef struct {
    int n;                                              /* prompts read */
    int32_t prompt[LLM_MAX_PROMPTS][LLM_MAX_IDS];       /* [n][plen] */
    int32_t ids[LLM_MAX_PROMPTS][LLM_MAX_IDS];          /* [n][ilen]: the reference's greedy ids */
    int plen[LLM_MAX_PROMPTS], ilen[LLM_MAX_PROMPTS];
} llm_expected;

/* 1 when P is a directory. */
int llm_is_dir(const char *p);

/* The folder of a generated model set: $ENV when set, else SUB beside $MTSERVE_BIN
 * when that folder exists, else build/SUB.  Written into buf[n]. */
const char *llm_set_dir(char *buf, size_t n, const char *env, const char *sub);

/* PATH's "prompt ids..." lines and the "KEY ids..." line after each (KEY "greedy": the
 * reference's greedy ids; "target": teacher-forced ids); a missing file fails the test,
 * saying MAKE_HINT (how to make it).  At most max prompts when max > 0 (sanitizer
 * builds), said on stdout. */
void llm_expected_read(const char *path, const char *key, llm_expected *e, int max, const char *make_hint);

/* DIR/SUB loaded with weights W; any error fails the test. */
mt_model *llm_load(const char *dir, const char *sub, mt_weights w);

/* A session of BATCH rows for prompts of up to MAX_SRC ids and GEN + 2 generated. */
mt_session *llm_session(const mt_model *m, int batch, int max_src, int gen, int kv_f16);

/* Greedy decoding of GEN free ids (then the forced eos of a full-length sequence). */
mt_decode_params llm_greedy(int gen);

/* Every prompt of E in one continuous batch, greedy; out[e->n]. */
void llm_generate_all(mt_session *s, const llm_expected *e, int gen, mt_hyp *out);

/* A hypothesis' ids as the reference gives them: at most GEN, up to and with eos. */
int llm_cut(const mt_hyp *h, int32_t eos, int gen);

/* Whole sequences equal to the reference's, and ids equal before each one's first
 * difference, of how many. */
void llm_agreement(const llm_expected *e, const mt_hyp *out, int32_t eos, int gen, int *seq_eq, int *tok_eq,
                   int *tok_all);

#endif
