/* ref_params.h: decode settings for the tests that compare the engine with
 * the PyTorch / transformers references (test_engine.c, test_shortlist.c).
 * Those references have no length cap and no loop guard, so the shipped
 * models' (generation_config.json max_length_factor and
 * loop_no_repeat_ngram_size, engine/mt.h) are off here; test_decode.c tests
 * them. */
#ifndef MT_TEST_REF_PARAMS_H
#define MT_TEST_REF_PARAMS_H

#include "mt.h"

static inline mt_decode_params ref_params(void)
{
    mt_decode_params dp = mt_decode_default_params();
    dp.lengths.max_length_factor = MT_LENGTH_FACTOR_NONE;
    dp.penalties.loop_no_repeat = -1;
    return dp;
}

#endif
