/* head_check: what the front (front.c) checks of a request head before
 * libmicrohttpd parses it.
 *
 * libmicrohttpd 0.9.75 decides some framing on its own, before mtserve sees
 * the request, and gets it wrong: a Content-Length over 2^64-1 is answered
 * with its own HTML 413 whose header block is sent twice; a NUL byte in a
 * header value silently cuts the value; a chunk size of ffffffffffffffff is
 * taken as valid and the request waits for its bytes until the request
 * timeout.  These checks run on the raw bytes of the head (and of the first
 * chunk-size line when it came with the head), so each gets one well-formed
 * error at once:
 *   - a byte below 0x20 other than HTAB, CR and LF, or 0x7f, anywhere in the
 *     head (RFC 9110 5.5: field values are visible characters, SP and HTAB;
 *     the request line has no control bytes either): 400;
 *   - a Content-Length that is not digits only: 400; one longer than 19
 *     digits: 413 (a shorter one over the limit is http.c's, as before: it
 *     answers in the shape the body's first bytes tell);
 *   - with Transfer-Encoding chunked, a first chunk size (when its line is
 *     there) of more than 16 hex digits or with no digit: 400; over
 *     max_body: 413.
 * Everything else (the request line's form, duplicate headers, Host) is
 * left to libmicrohttpd and http.c, as before.
 */
#ifndef SRV_HEAD_CHECK_H
#define SRV_HEAD_CHECK_H

#include <stddef.h>

typedef struct {
    int    status;          /* 0: fine; 400 or 413 */
    char   msg[160];        /* why, for the error body */
    char   path[256];       /* the request target up to '?' (cut to fit): the route, for the shape */
    char   content_type[128];   /* the Content-Type header, "" when absent (the shape) */
} srv_head_verdict;

/* The path's body limit (the router's), for the 413s. */
typedef size_t (*srv_head_limit_fn)(void *ctx, const char *path);

/* buf[0..n): the bytes received so far.  Returns 0 while the head is
 * incomplete (no CRLF CRLF yet), else the head's length (through its CRLF
 * CRLF) with *v filled.  A head longer than n is never looked at. */
size_t srv_head_check(const char *buf, size_t n, srv_head_limit_fn limit, void *ctx, srv_head_verdict *v);

#endif
