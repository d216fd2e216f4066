/* deadline: every connection gets a bounded time to deliver its request.
 *
 * libmicrohttpd's own timeout is an idle timeout: a client that sends one
 * byte a second (slowloris) or trickles a body never trips it and holds its
 * connection forever.  This module tracks each connection's phase and a
 * sweeper thread closes the ones past their deadline:
 *
 *   WAIT_FIRST  accepted, no request line yet        first_s  (408, close)
 *   REQUEST     request line seen, body not complete  request_s (408, close)
 *   HANDLING    request complete, being answered      no deadline
 *   IDLE        keep-alive, between two requests     idle_s   (closed quietly)
 *
 * In HANDLING and IDLE a reply may sit unsent: a client that stops reading
 * (its receive window at zero) is closed once no byte of it was acknowledged
 * for write_s (a streamed reply's decoder rows are then released through the
 * stream's abort check, which sees the socket shut).
 *
 * It also releases sockets whose client has gone but which libmicrohttpd
 * has not noticed (deadline.c says when that happens).
 *
 * Closing = a prepared "408 Request Timeout" written to the socket, then
 * shutdown(): libmicrohttpd sees the end of stream and closes the connection
 * through its normal path.  The socket is only touched under the registry
 * lock, and a connection leaves the registry (srv_deadline_remove, called
 * from libmicrohttpd's CLOSED notification, before it closes the socket)
 * under the same lock, so a descriptor is never used after it was closed.
 */
#ifndef SRV_DEADLINE_H
#define SRV_DEADLINE_H

typedef struct srv_deadline srv_deadline;
typedef struct srv_deadline_conn srv_deadline_conn;

typedef struct {
    double first_s;     /* accept -> first request line and whole request */
    double request_s;   /* request line -> whole request (head and body) */
    double idle_s;      /* keep-alive: reply sent -> next request line */
    double write_s;     /* a reply the client does not take: this long without an
                           acknowledged byte while bytes wait in the socket's send
                           queue closes it (0 = never) */
    int    tick_ms;     /* how often the sweeper looks */
    const char *timeout_reply;  /* the whole HTTP response written before closing
                                   (status line, headers, body: http.c renders it
                                   from errors.c); copied; NULL = close silently */
    /* called (under the registry lock: keep it short) for each connection the
     * sweeper closes: why = 0 deadline (408), 1 keep-alive idle, 2 client gone,
     * 3 write timeout */
    void (*on_close)(void *ctx, int why);
    void  *on_close_ctx;
} srv_deadline_params;

srv_deadline_params srv_deadline_default_params(void);

/* Starts the sweeper thread; NULL on failure. */
srv_deadline *srv_deadline_new(const srv_deadline_params *p);
/* Stops the sweeper.  Connections still registered are forgotten, not closed. */
void          srv_deadline_free(srv_deadline *d);

/* A connection was accepted on fd (phase WAIT_FIRST); NULL when out of memory
 * (the connection is then simply not guarded). */
srv_deadline_conn *srv_deadline_add(srv_deadline *d, int fd);
/* libmicrohttpd is about to close it: forget it (NULL is ignored). */
void srv_deadline_remove(srv_deadline *d, srv_deadline_conn *c);

/* The connection was answered before its body was read (a 413, a 400): when
 * libmicrohttpd closes it, keep the socket a few seconds more and drop what
 * the client still sends, so that a client writing its body before reading
 * sees the reply rather than a reset (a lingering close).  NULL is ignored. */
void srv_deadline_linger(srv_deadline *d, srv_deadline_conn *c);

/* A declared body is over the limit and will be dropped: if none of it has
 * arrived within grace_s (the client waits before sending), the sweeper
 * writes reply (copied; the whole HTTP response) and closes, instead of
 * letting the request deadline answer 408 much later.  srv_deadline_body_seen
 * cancels it (the body is being read and dropped; the caller answers at its
 * end, in the shape its first bytes tell).  NULL is ignored. */
void srv_deadline_answer_unless_body(srv_deadline *d, srv_deadline_conn *c, double grace_s, const char *reply);
void srv_deadline_body_seen(srv_deadline *d, srv_deadline_conn *c);

/* Phase changes (NULL is ignored). */
void srv_deadline_request_line(srv_deadline *d, srv_deadline_conn *c);   /* -> REQUEST */
void srv_deadline_request_done(srv_deadline *d, srv_deadline_conn *c);   /* -> HANDLING */
void srv_deadline_reply_sent(srv_deadline *d, srv_deadline_conn *c);     /* -> IDLE */

/* 1 when the connection's request deadline has passed (a body still being
 * received is then answered 408 by the caller instead of waiting for the
 * sweeper). */
int  srv_deadline_expired(srv_deadline *d, srv_deadline_conn *c);


#endif
