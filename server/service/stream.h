/* stream: a /translate reply as server-sent events ("stream": true).
 *
 *   data: {"index": i, "delta": "..."}       text i grew by delta
 *   ...
 *   event: done                               the reply without stream, exactly
 *   data: {"model", "translations", ...}
 * or, when the job fails after the stream began,
 *   event: error
 *   data: {"error": {"code", "message"}}
 *
 * Greedy decoding sends one event per generated token (</s> included: it
 * carries what the end of the sentence adds, usually nothing); beam search,
 * and a tokenizer whose decoding rewrites earlier text (HF's clean-up, spm
 * denormalization: mt_tokenizer_decode_appends), one event per sentence as
 * it finishes.  A delta is whole UTF-8 characters: the text of the tokens so
 * far, decoded as the final text is (mt_tokenizer_decode: spm's leading "▁"
 * dropped, the strip), minus what was sent; a byte piece (<0xE2>) waits for
 * its character.  Sentences of a text (splitter.c) are sent in order, each
 * with the original bytes before it (and the last with those after it), so
 * the deltas of text i concatenated are its final text.  A later sentence
 * that decodes while an earlier one runs is sent when the earlier finishes.
 * A sentence whose placeholders were kept out of the model (pipeline.h,
 * "placeholders") is sent whole once the job is done: they go back by the
 * alignment of the whole sentence.
 *
 * Threads.  The decoder thread (scheduler or session decoder) calls the sink's
 * progress hook after every step: it copies the new ids into the sentence's
 * buffer (sized once to the decoder's length: it never fills, so the decoder
 * never waits or drops) and wakes the connection.  The connection's HTTP
 * thread turns ids into events in read().  One mutex guards what both see;
 * the suspend/resume protocol of libmicrohttpd runs under it, so a wake-up
 * never misses a reader that is about to sleep:
 *
 *   WAIT_START  the request is suspended (http.c) until the first tokens or
 *               the end: then req->resume, and the handler's finish calls
 *               srv_stream_begin: a job that failed before any token gets its
 *               ordinary JSON error (status and all); else 200 and the stream.
 *   RUNNING     read() sends what there is; with nothing to send it sets
 *               SUSPENDED and suspends the connection (req->suspend, from
 *               inside the reader as libmicrohttpd requires), all under the
 *               mutex; the producer resumes it under the same mutex.
 *
 * Lifetime: three references (the decoder until done, the connection until
 * its request is freed, the response until libmicrohttpd drops it); the
 * last one frees the stream and its owner (the handler's state, which holds
 * the decode job).  A client that leaves: libmicrohttpd frees the request
 * (or the decoder's poll of the suspended socket sees it), the gone hook
 * says so, and the scheduler cancels the job's rows at its next step.
 */
#ifndef SRV_STREAM_H
#define SRV_STREAM_H

#include "http/request.h"
#include "translate_job.h"

typedef struct srv_stream srv_stream;

typedef struct {
    const mt_tokenizer *tok;    /* the last leg's model's */
    int32_t eos_id;
    /* 1: an event per token (greedy, decoding that appends: mt_tokenizer_decode_appends);
     * 2: the same for decoding that grows but for its end (mt_tokenizer_decode_grows):
     * a trailing U+FFFD run is held back, and a text that is not a continuation
     * of what was sent waits for one that is; 0: a sentence at once */
    int     per_token;
    /* On the HTTP thread, once the decoder is done: the reply the request
     * would get without stream, into resp (the final event, or the ordinary
     * reply of a job that failed before the stream began). */
    void  (*reply)(void *owner, srv_request *req, srv_response *resp);
    void  (*owner_free)(void *owner);
    void   *owner;
    /* Another dialect's events (OpenAI's chunks: api/openai_api.c), on the
     * HTTP thread; NULL: ours above.  delta_event: the bytes to send for
     * text's delta (malloc'd, NUL-terminated; NULL: nothing); end_events:
     * the last bytes, given the reply (its JSON: the reply, or the error
     * rendered in the request's shape). */
    char *(*delta_event)(void *owner, int text, const char *delta, size_t n);
    char *(*end_events)(void *owner, const srv_response *r);
} srv_stream_params;

/* The stream of req (a pending request), holding the decoder's and the
 * connection's references; NULL without memory. */
srv_stream *srv_stream_new(srv_request *req, const srv_stream_params *p);
/* Its hooks for srv_translate_start. */
srv_tr_sink srv_stream_sink(srv_stream *st);
/* srv_translate_start failed: nothing holds it; frees it and its owner. */
void        srv_stream_abandon(srv_stream *st);
/* In the handler's finish (HTTP thread, after the first resume): 0 and resp
 * is the stream (resp->stream); -1 and resp is the ordinary reply of a job
 * over before any token (the caller then drops the connection's share). */
int         srv_stream_begin(srv_stream *st, srv_request *req, srv_response *resp);
/* The connection's share (the request's pending_free). */
void        srv_stream_conn_release(void *st);

#endif
