/* openai_req: the body of POST /v1/chat/completions and /v1/completions, read
 * into plain fields (openai_api.c); no server state, so the unit tests and
 * the fuzzer (tests/fuzz/fuzz_openai.c) call it alone.
 *
 * Checked here: types, the fields OpenAI documents and we support, the bounds
 * that do not depend on the model (temperature, top_p and seed from the
 * engine's table, mt_decode_limits: "sampling.temperature", "sampling.top_p",
 * "sampling.seed"; n <= OAI_MAX_N; stop: <= OAI_MAX_STOP strings of 1 to
 * OAI_MAX_STOP_LEN bytes).  Refused by name (a 400): what we do not do
 * (tools / function calling, logprobs, logit_bias, penalties, response
 * formats, images and audio, echo, best_of, suffix) and any field OpenAI
 * does not document ("Unrecognized request argument supplied: X", as its
 * API says).  The model-dependent bounds (max_tokens against the decoder
 * length, the prompt's length) are the handler's.
 */
#ifndef SRV_OPENAI_REQ_H
#define SRV_OPENAI_REQ_H

#include <jansson.h>

#include "tokenizer/tokenizer.h"

#define OAI_MAX_N        8
#define OAI_MAX_STOP     4
#define OAI_MAX_STOP_LEN 256
#define OAI_MAX_MESSAGES 1024

typedef struct {
    int          chat;          /* 1: /v1/chat/completions, 0: /v1/completions */
    const char  *model;         /* "model" (required) */
    mt_chat_msg *msgs;          /* chat: the messages ("developer" read as "system") */
    int          n_msgs;
    char       **joined;        /* [n_msgs]: contents given as parts, joined (owned; NULL for strings) */
    const char  *prompt;        /* completions: the prompt */
    size_t       prompt_len;
    int          max_tokens;    /* 0: not given (the model's default) */
    int          sample;        /* 1: temperature > 0 (absent: 1, OpenAI's default), else greedy */
    double       temperature, top_p;
    int          has_seed;
    long long    seed;
    const char  *stop[OAI_MAX_STOP];
    int          n_stop;
    int          n;             /* choices, 1..OAI_MAX_N */
    int          stream, include_usage;
} oai_req;

/* Reads body (borrowed: the strings point into it) into *r.  0, or -1 with
 * msg (what is wrong, naming the field: "messages[2].role ...") and *param
 * (the field's name as OpenAI's error "param", or NULL).  oai_req_free after
 * either. */
int  oai_parse(const json_t *body, int chat, oai_req *r, char *msg, size_t cap, const char **param);
void oai_req_free(oai_req *r);

#endif
