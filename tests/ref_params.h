/* ref_params.h: decode settings for the tests that compare the engine with
 * the PyTorch / transformers references (test_engine.c, test_shortlist.c).
 * Those references have no length cap, so the shipped models' cap
 * (generation_config.json max_length_factor, engine/mt.h) is off here;
 * test_decode.c tests the cap itself. */
#ifndef MT_TEST_REF_PARAMS_H
#define MT_TEST_REF_PARAMS_H

#include "mt.h"

static inline mt_decode_params ref_params(void)
{
    mt_decode_params dp = mt_decode_default_params();
    dp.lengths.max_length_factor = MT_LENGTH_FACTOR_NONE;
    return dp;
}

#endif
