/* http: libmicrohttpd glue.  Every MHD call of the program is in this file.
 *
 * Connection lifecycle: accepted and held by front.c until its request head
 * passed head_check.c -> handed to libmicrohttpd -> deadline.c guards it (a whole request
 * within --request-timeout, keep-alive idle within --timeout) -> closed.
 * Connections over --max-connections-per-ip are parked by the front (a 503
 * after PARK_S, never handed on); libmicrohttpd, with epoll, holds
 * thousands of idle ones cheaply.
 *
 * Request lifecycle (libmicrohttpd's access-handler protocol):
 *   1st call    *req_cls == NULL: allocate conn_state; refuse HTTP/1.1
 *               without Host, and framing that
 *               a proxy could read differently (duplicate Content-Length,
 *               Content-Length with Transfer-Encoding) with 400 and close.
 *               A header value with a control byte (but HTAB) gets 400;
 *               these early replies close with a lingering close
 *               (deadline.c): what the client still sends is read and
 *               dropped for a while, so a client that writes its whole body
 *               before it reads receives the reply, not a reset.  A declared
 *               Content-Length over the limit: 413 at once to a client that
 *               waits for "100 Continue"; otherwise the body is read and
 *               dropped and the 413 comes at its end, in the shape its first
 *               bytes tell, and a client that sends no body within
 *               BODY_GRACE_S gets the 413 from the sweeper (deadline.c).
 *   next calls  a body chunk: append it, or drop it once over the limit;
 *               *upload_data_size = 0 marks it consumed.  Past the request
 *               deadline: 408 and close.
 *   last call   *upload_data_size == 0: prepare (route, checks, light
 *               handlers) and reply, or suspend the connection and queue the
 *               request on a worker, which resumes it when the reply is ready;
 *               MHD then calls us once more and we queue that reply.
 *   completed   request_completed(): access log, free.
 */
#include "http.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <microhttpd.h>

#include "addr_limit.h"
#include "client_addr.h"
#include "deadline.h"
#include "errors.h"
#include "front.h"
#include "common/metrics.h"
#include "util/check.h"
#include "util/clock.h"
#include "util/utf8.h"

struct srv_http {
    struct MHD_Daemon *daemon;
    srv_http_config    cfg;
    srv_deadline      *deadline;
    srv_addr_limit    *addr_limit;  /* --max-connections-per-ip, parking over it */
    srv_front         *front;       /* the listening socket and each new connection's head */
    pthread_mutex_t    handed_mu;   /* front -> on_connection: each handed connection's count */
    struct handed     *handed;
    char              *park_reply;  /* the raw 503 the front writes to a parked connection */
    _Atomic int        draining;
    int                port;
};

typedef struct {
    srv_http   *h;
    struct MHD_Connection *conn;
    double      t_start;
    char       *body;
    size_t      len, cap;
    int         too_large;      /* the body went over max_body: the rest is dropped */
    size_t      max_body;       /* this request's limit (the router's for its path) */
    char        head[SRV_HTTP_BODY_HEAD];   /* the body's first bytes, kept: they tell its shape */
    size_t      head_len;
    size_t      dropped;        /* bytes dropped since */
    _Atomic int ready;          /* the work is over (set before resuming) */
    srv_request req;
    srv_response resp;
    char       *content_type, *authorization, *host;   /* copies of request headers */
    int         status;         /* queued status, for the log */
    size_t      bytes;          /* queued body bytes */
    char        method[16];
    char       *path;
    int         fd;             /* the client socket, for client_gone */
    char        client[SRV_ADDR_MAX];   /* whose request (client_addr.h) */
} conn_state;

/* What the front knew of a connection it hands to libmicrohttpd, until
 * on_connection takes it (on libmicrohttpd's thread), found by descriptor. */
struct handed {
    int            fd;
    srv_addr_slot *slot;
    struct handed *next;
};

/* A connection's own state (libmicrohttpd's socket context), from its
 * accept to its close. */
typedef struct {
    srv_deadline_conn *guard;
    srv_addr_slot     *slot;    /* its address's count */
} sock_ctx;

/* How long a connection over the per-address limit waits for its 503: a
 * client that reconnects at once loops once per park.  (wrk at 1,024
 * connections from one address, 512 parked: 460 refusals a second at a 1 s
 * park cost ~15% of the goodput of the 512 admitted; 51 at 5 s, nothing
 * measurable.) */
#define PARK_S 5.0

/* ---- responses ----------------------------------------------------------------- */

static int origin_allowed(const char *list, const char *origin, size_t olen)
{
    const char *p = list;
    while (*p) {
        while (*p == ' ' || *p == ',')
            p++;
        size_t n = strcspn(p, ", ");
        if (n && n == olen && strncmp(p, origin, n) == 0)
            return 1;
        p += n;
    }
    return 0;
}

static void add_cors(const srv_http *h, struct MHD_Connection *c, struct MHD_Response *r,
                     const srv_response *resp)
{
    const char *origins = h->cfg.cors_origins;
    const char *origin = MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_ORIGIN);
    if (strcmp(origins, "*") == 0) {
        MHD_add_response_header(r, MHD_HTTP_HEADER_ACCESS_CONTROL_ALLOW_ORIGIN, "*");
    } else if (origin && origin_allowed(origins, origin, strlen(origin))) {
        MHD_add_response_header(r, MHD_HTTP_HEADER_ACCESS_CONTROL_ALLOW_ORIGIN, origin);
        MHD_add_response_header(r, MHD_HTTP_HEADER_VARY, "Origin");
    } else {
        return;
    }
    MHD_add_response_header(r, "Access-Control-Expose-Headers", "Retry-After");
    if (resp->preflight) {
        MHD_add_response_header(r, "Access-Control-Allow-Methods", resp->allow);
        MHD_add_response_header(r, "Access-Control-Allow-Headers", "Authorization, Content-Type");
        MHD_add_response_header(r, "Access-Control-Max-Age", "86400");
    }
}

static void add_headers(const srv_http *h, struct MHD_Connection *c, struct MHD_Response *r,
                        const srv_response *resp, const char *content_type)
{
    char num[32];
    if (content_type)
        MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, content_type);
    if (resp->allow[0] && (resp->status == 405 || resp->preflight))
        MHD_add_response_header(r, MHD_HTTP_HEADER_ALLOW, resp->allow);
    if (resp->attachment[0] && resp->status == 200) {
        char cd[sizeof resp->attachment + 40];
        snprintf(cd, sizeof cd, "attachment; filename=\"%s\"", resp->attachment);
        MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_DISPOSITION, cd);
    }
    if (resp->retry_after > 0) {
        snprintf(num, sizeof num, "%d", resp->retry_after);
        MHD_add_response_header(r, MHD_HTTP_HEADER_RETRY_AFTER, num);
    }
    if (resp->status == 401)
        MHD_add_response_header(r, MHD_HTTP_HEADER_WWW_AUTHENTICATE, "Bearer");
    if (atomic_load(&h->draining))
        MHD_add_response_header(r, MHD_HTTP_HEADER_CONNECTION, "close");
    add_cors(h, c, r, resp);
}

/* A streamed body (server-sent events): libmicrohttpd asks for its bytes as
 * the connection can take them.  The holder outlives the request (the
 * response may be dropped after request_completed): it reaches only the
 * stream, never the conn_state. */
typedef struct {
    srv_body_stream s;
} stream_holder;

static ssize_t stream_reader(void *cls, uint64_t pos, char *buf, size_t max)
{
    stream_holder *sh = cls;
    (void)pos;
    long n = sh->s.read(sh->s.ctx, buf, max);
    return n < 0 ? MHD_CONTENT_READER_END_OF_STREAM : (ssize_t)n;   /* 0: suspended by the reader */
}

static void stream_release(void *cls)
{
    stream_holder *sh = cls;
    sh->s.release(sh->s.ctx);
    free(sh);
}

/* Queues a streamed reply: 200 now, the body as it comes (chunked).  Its
 * metrics are the stream's to count, when it ends. */
static enum MHD_Result send_stream(srv_http *h, struct MHD_Connection *c, conn_state *st, srv_response *resp)
{
    stream_holder *sh = malloc(sizeof *sh);
    struct MHD_Response *r = NULL;
    if (sh) {
        sh->s = resp->stream;
        r = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 4096, stream_reader, sh, stream_release);
    }
    resp->stream.read = NULL;
    if (!r) {
        free(sh);
        resp->stream.release(resp->stream.ctx);
        return MHD_NO;
    }
    add_headers(h, c, r, resp, resp->content_type);
    MHD_add_response_header(r, MHD_HTTP_HEADER_CACHE_CONTROL, "no-cache");
    MHD_add_response_header(r, "X-Accel-Buffering", "no");     /* nginx: pass events on at once */
    st->status = resp->status;
    enum MHD_Result ret = MHD_queue_response(c, (unsigned int)resp->status, r);
    MHD_destroy_response(r);
    return ret;
}

/* Queues resp (taking its body).  Metrics are counted here, before the client
 * can see the reply, so a client reading /metrics right after sees its request. */
static enum MHD_Result send_response(srv_http *h, struct MHD_Connection *c, conn_state *st,
                                     srv_response *resp)
{
    if (resp->stream.read)
        return send_stream(h, c, st, resp);
    srv_reply_serialize(resp);
    char *buf = resp->text;
    size_t len = resp->text_len;
    resp->text = NULL;
    struct MHD_Response *r = MHD_create_response_from_buffer(len, buf ? buf : (void *)"",
                                                             buf ? MHD_RESPMEM_MUST_FREE
                                                                 : MHD_RESPMEM_PERSISTENT);
    if (!r) {
        free(buf);
        return MHD_NO;
    }
    add_headers(h, c, r, resp, buf ? (resp->content_type ? resp->content_type
                                                         : "text/plain; charset=utf-8") : NULL);
    st->status = resp->status;
    st->bytes = len;
    srv_metrics_request(resp->route, resp->status, mt_now_s() - st->t_start);
    enum MHD_Result ret = MHD_queue_response(c, (unsigned int)resp->status, r);
    MHD_destroy_response(r);
    return ret;
}

/* ---- requests ------------------------------------------------------------------- */

/* Drop at most this much of an oversized body before answering 413 anyway
 * (and closing): past it, reading on costs more than a client deserves. */
#define MAX_DROPPED_BODY ((size_t)64 << 20)

/* libmicrohttpd's own idle timeout runs this much past --timeout */
#define IDLE_BACKSTOP_S 2

static sock_ctx *sock_of(struct MHD_Connection *c)
{
    const union MHD_ConnectionInfo *ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
    return ci ? ci->socket_context : NULL;
}

static srv_deadline_conn *guard_of(struct MHD_Connection *c)
{
    sock_ctx *sc = sock_of(c);
    return sc ? sc->guard : NULL;
}

/* 400 for framing that two parsers could read differently (request
 * smuggling behind a proxy): Content-Length more than once, or together with
 * Transfer-Encoding, or a Transfer-Encoding other than chunked.  NULL = fine. */
typedef struct {
    int n_length, n_encoding, chunked;
} framing;

static enum MHD_Result count_framing(void *cls, enum MHD_ValueKind kind, const char *key, const char *value)
{
    framing *f = cls;
    (void)kind;
    if (strcasecmp(key, MHD_HTTP_HEADER_CONTENT_LENGTH) == 0)
        f->n_length++;
    else if (strcasecmp(key, MHD_HTTP_HEADER_TRANSFER_ENCODING) == 0) {
        f->n_encoding++;
        f->chunked = value && strcasecmp(value, "chunked") == 0;
    }
    return MHD_YES;
}

static const char *bad_framing(struct MHD_Connection *c, const char *version)
{
    /* RFC 9112 3.2: a server MUST answer 400 to an HTTP/1.1 request without Host
     * (checked here, not by libmicrohttpd's strict mode, for a JSON error body) */
    if (strcmp(version, MHD_HTTP_VERSION_1_0) != 0 &&
        !MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_HOST))
        return "an HTTP/1.1 request needs a Host header";
    framing f = { 0 };
    MHD_get_connection_values(c, MHD_HEADER_KIND, count_framing, &f);
    if (f.n_length > 1)
        return "more than one Content-Length header";
    if (f.n_length && f.n_encoding)
        return "both Content-Length and Transfer-Encoding";
    if (f.n_encoding > 1 || (f.n_encoding && !f.chunked))
        return "unsupported Transfer-Encoding (only a single chunked is accepted)";
    return NULL;
}

/* An error decided by http.c itself (framing, size, deadline): rendered by
 * errors.c like any other, in the shape the router gives the request (from
 * what has arrived of it).  Queued before the body is read, it makes
 * libmicrohttpd close the connection after the reply. */
static enum MHD_Result send_error(srv_http *h, struct MHD_Connection *c, conn_state *st, srv_code code,
                                  const char *msg)
{
    const srv_http_router *rt = &h->cfg.router;
    srv_request req = {
        .method = st->method,
        .path = st->path,
        .content_type = MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_TYPE),
        .body = st->head,
        .body_len = st->head_len,
    };
    srv_response resp = { 0 };
    resp.route = rt->label(rt->ctx, st->path);
    srv_fail(&resp, code, "%s", msg);
    srv_error_render(&resp, (srv_shape)rt->error_shape(rt->ctx, &req));
    return send_response(h, c, st, &resp);
}

/* 413: the body is never handed to a handler. */
static enum MHD_Result send_too_large(srv_http *h, struct MHD_Connection *c, conn_state *st)
{
    char msg[96];
    snprintf(msg, sizeof msg, "the request body is over the limit of %zu bytes", st->max_body);
    return send_error(h, c, st, SRV_E_BODY_TOO_LARGE, msg);
}

/* An error answered before the body was read: libmicrohttpd closes after
 * the reply; the socket lingers (deadline.c) so the client's body does not
 * meet a reset before the client reads. */
static int expects_continue(struct MHD_Connection *c)
{
    const char *e = MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_EXPECT);
    return e && strcasecmp(e, "100-continue") == 0;
}

/* A whole error response as raw bytes (status line to body), rendered by
 * errors.c in shape (srv_shape), for the sweeper or the front to write;
 * retry_s > 0 adds Retry-After. */
static char *raw_reply(srv_code code, const char *reason, const char *msg, int shape, int retry_s)
{
    srv_response resp = { 0 };
    srv_fail(&resp, code, "%s", msg);
    srv_error_render(&resp, (srv_shape)shape);
    srv_reply_serialize(&resp);
    char retry[48] = "";
    if (retry_s > 0)
        snprintf(retry, sizeof retry, "Retry-After: %d\r\n", retry_s);
    char *raw = NULL;
    if (resp.text && asprintf(&raw, "HTTP/1.1 %d %s\r\nContent-Type: application/json\r\n"
                                    "%sConnection: close\r\nContent-Length: %zu\r\n\r\n%s",
                              resp.status, reason, retry, resp.text_len, resp.text) < 0)
        raw = NULL;
    free(resp.text);
    return raw;
}

static char *raw_error(srv_code code, const char *reason, const char *msg, int shape)
{
    return raw_reply(code, reason, msg, shape, 0);
}

/* How long a declared-too-large body may take to start arriving before the
 * 413 goes out without it. */
#define BODY_GRACE_S 0.3

static enum MHD_Result send_early_error(srv_http *h, struct MHD_Connection *c, conn_state *st, srv_code code,
                                        const char *msg)
{
    srv_deadline_linger(h->deadline, guard_of(c));
    return send_error(h, c, st, code, msg);
}

/* RFC 9110 5.5: a field value is visible characters, SP and HTAB; a CR, LF
 * or NUL in it is a smuggling vector and other control bytes are no better.
 * (libmicrohttpd 0.9.75 stores a value up to its first NUL, so a NUL shows
 * here only as a shorter size; it also cuts the rest of the value.) */
static enum MHD_Result find_control_byte(void *cls, enum MHD_ValueKind kind, const char *key, size_t key_size,
                                         const char *value, size_t value_size)
{
    int *bad = cls;
    (void)kind;
    const char *parts[2] = { key, value };
    size_t sizes[2] = { key_size, value_size };
    for (int k = 0; k < 2; k++) {
        if (!parts[k])
            continue;
        if (strlen(parts[k]) != sizes[k])
            *bad = 1;
        for (size_t i = 0; i < sizes[k]; i++) {
            unsigned char b = (unsigned char)parts[k][i];
            if ((b < 0x20 && b != '\t') || b == 0x7f)
                *bad = 1;
        }
    }
    return *bad ? MHD_NO : MHD_YES;
}

static int bad_header_bytes(struct MHD_Connection *c)
{
    int bad = 0;
    MHD_get_connection_values_n(c, MHD_HEADER_KIND, find_control_byte, &bad);
    return bad;
}

static conn_state *conn_new(srv_http *h, struct MHD_Connection *c, const char *method,
                            const char *url)
{
    conn_state *st = calloc(1, sizeof *st);
    if (!st)
        return NULL;
    st->h = h;
    st->conn = c;
    st->t_start = mt_now_s();
    snprintf(st->method, sizeof st->method, "%s", method);
    if (!(st->path = strdup(url))) {
        free(st);
        return NULL;
    }
    st->max_body = h->cfg.router.max_body ? h->cfg.router.max_body(h->cfg.router.ctx, st->path) : h->cfg.max_body;
    atomic_fetch_add(h->cfg.in_flight, 1);
    return st;
}

static void conn_free(conn_state *st)
{
    if (st->req.pending && st->req.pending_free)   /* the request died before its finish */
        st->req.pending_free(st->req.pending);
    json_decref(st->req.json);
    json_decref(st->req.query);
    json_decref(st->resp.json);
    free(st->resp.text);
    free(st->body);
    free(st->content_type);
    free(st->authorization);
    free(st->host);
    free(st->path);
    free(st);
}

static int declared_too_large(const conn_state *st, struct MHD_Connection *c)
{
    const char *cl = MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
    return cl && strtoull(cl, NULL, 10) > st->max_body;     /* an overflow reads as ULLONG_MAX */
}

/* Appends a chunk, growing geometrically; drops everything once over the
 * limit but the first SRV_HTTP_BODY_HEAD bytes (send_error's shape). */
static int body_append(const srv_http *h, conn_state *st, const char *data, size_t n)
{
    size_t keep = sizeof st->head - st->head_len < n ? sizeof st->head - st->head_len : n;
    memcpy(st->head + st->head_len, data, keep);
    st->head_len += keep;
    if (st->too_large || n > st->max_body - st->len) {
        st->too_large = 1;
        st->dropped += n;
        free(st->body);
        st->body = NULL;
        st->len = st->cap = 0;
        return 0;
    }
    if (st->len + n > st->cap) {
        size_t cap = mt_grow_cap(st->cap, st->len + n, 1, 4096);
        if (cap > st->max_body || !cap)
            cap = st->max_body;         /* the body never outgrows it (checked above) */
        char *p = realloc(st->body, cap);
        if (!p)
            return -1;
        st->body = p;
        st->cap = cap;
    }
    memcpy(st->body + st->len, data, n);
    st->len += n;
    return 0;
}

static char *header_copy(struct MHD_Connection *c, const char *name)
{
    const char *v = MHD_lookup_connection_value(c, MHD_HEADER_KIND, name);
    return v ? strdup(v) : NULL;
}

/* A suspended connection is not polled by MHD, so its completion callback
 * cannot report a client that leaves while a worker waits on its behalf:
 * the worker asks here instead.  Peer closed (or reset) = gone; pending data
 * (a pipelined request) is not. */
static int conn_gone(void *arg)
{
    const conn_state *st = arg;
    if (st->fd < 0)
        return 0;
    struct pollfd p = { .fd = st->fd, .events = POLLRDHUP };
    return poll(&p, 1, 0) > 0 && (p.revents & (POLLRDHUP | POLLHUP | POLLERR | POLLNVAL));
}

/* Any thread: the router's work for this request is over (or, streaming,
 * the suspended reader has something to send). */
static void conn_resume(srv_request *req)
{
    conn_state *st = req->conn;
    atomic_store(&st->ready, 1);
    MHD_resume_connection(st->conn);
}

/* From inside a streamed body's reader (libmicrohttpd allows it there). */
static void conn_suspend(srv_request *req)
{
    conn_state *st = req->conn;
    MHD_suspend_connection(st->conn);
}

/* One query argument into req->query: a string, or an array once the name repeats. */
static enum MHD_Result add_query_arg(void *cls, enum MHD_ValueKind kind, const char *key, size_t key_size,
                                     const char *value, size_t value_size)
{
    srv_request *req = cls;
    (void)kind;
    json_t *v = json_stringn(value ? value : "", value ? value_size : 0);
    if (!v || !mt_utf8_valid(key, key_size)) {
        json_decref(v);
        req->query_invalid = 1;
        return MHD_NO;
    }
    if (!req->query && !(req->query = json_object()))
        goto oom;
    char name[128];
    snprintf(name, sizeof name, "%.*s", (int)(key_size < sizeof name ? key_size : sizeof name - 1), key);
    json_t *had = json_object_get(req->query, name);
    if (!had)
        return json_object_set_new(req->query, name, v) == 0 ? MHD_YES : MHD_NO;
    if (json_is_string(had)) {
        json_t *list = json_pack("[O]", had);
        if (!list || json_object_set_new(req->query, name, list))
            goto oom;
        had = list;
    }
    return json_array_append_new(had, v) == 0 ? MHD_YES : MHD_NO;
oom:
    json_decref(v);
    return MHD_NO;
}

/* The client's address: the peer's, or behind a trusted proxy the one it forwards. */
static void client_of(const srv_http *h, struct MHD_Connection *c, char out[SRV_ADDR_MAX])
{
    char peer[SRV_ADDR_MAX] = "";
    const union MHD_ConnectionInfo *ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
    const struct sockaddr *sa = ci ? ci->client_addr : NULL;
    if (sa && sa->sa_family == AF_INET)
        inet_ntop(AF_INET, &((const struct sockaddr_in *)sa)->sin_addr, peer, sizeof peer);
    else if (sa && sa->sa_family == AF_INET6)
        inet_ntop(AF_INET6, &((const struct sockaddr_in6 *)sa)->sin6_addr, peer, sizeof peer);
    const char *xff = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "X-Forwarded-For");
    srv_client_address(h->cfg.trusted_proxies, peer, xff, out);
}

static enum MHD_Result dispatch(srv_http *h, struct MHD_Connection *c, conn_state *st)
{
    const srv_http_router *rt = &h->cfg.router;
    st->content_type = header_copy(c, MHD_HTTP_HEADER_CONTENT_TYPE);
    st->authorization = header_copy(c, MHD_HTTP_HEADER_AUTHORIZATION);
    st->host = header_copy(c, MHD_HTTP_HEADER_HOST);
    st->req = (srv_request){
        .method = st->method,
        .path = st->path,
        .content_type = st->content_type,
        .authorization = st->authorization,
        .host = st->host,
        .body = st->body ? st->body : "",
        .body_len = st->len,
        .t_start = st->t_start,
        .client_gone = conn_gone,
        .conn = st,
        .resume = conn_resume,
        .suspend = conn_suspend,
    };
    const union MHD_ConnectionInfo *ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
    st->fd = ci ? (int)ci->connect_fd : -1;
    client_of(h, c, st->client);
    st->req.client_addr = st->client;
    MHD_get_connection_values_n(c, MHD_GET_ARGUMENT_KIND, add_query_arg, &st->req);
    if (!rt->prepare(rt->ctx, &st->req, &st->resp))
        return send_response(h, c, st, &st->resp);
    MHD_suspend_connection(c);      /* before start: its resume may come at once */
    rt->start(rt->ctx, &st->req, &st->resp);
    return MHD_YES;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url,
                                  const char *method, const char *version, const char *upload_data,
                                  size_t *upload_data_size, void **req_cls)
{
    srv_http *h = cls;
    conn_state *st = *req_cls;
    if (!st) {
        if (!(st = conn_new(h, c, method, url)))
            return MHD_NO;
        *req_cls = st;
        const char *bad = bad_framing(c, version);
        if (bad)
            return send_early_error(h, c, st, SRV_E_BAD_REQUEST, bad);
        if (bad_header_bytes(c))
            return send_early_error(h, c, st, SRV_E_BAD_REQUEST,
                                    "a header has a control character (only HTAB is allowed)");
        if (declared_too_large(st, c)) {
            if (expects_continue(c)) {      /* the client sends no body until told to */
                srv_deadline_linger(h->deadline, guard_of(c));
                return send_too_large(h, c, st);
            }
            st->too_large = 1;              /* read and drop it, then answer */
            const srv_http_router *rt = &h->cfg.router;
            srv_request head = { .method = st->method, .path = st->path,
                                 .content_type = MHD_lookup_connection_value(c, MHD_HEADER_KIND,
                                                                             MHD_HTTP_HEADER_CONTENT_TYPE) };
            char msg[96];
            snprintf(msg, sizeof msg, "the request body is over the limit of %zu bytes", st->max_body);
            char *raw = raw_error(SRV_E_BODY_TOO_LARGE, "Content Too Large", msg, rt->error_shape(rt->ctx, &head));
            srv_deadline_answer_unless_body(h->deadline, guard_of(c), BODY_GRACE_S, raw);
            free(raw);
        }
        return MHD_YES;
    }
    if (*upload_data_size) {
        if (st->status)                     /* answered already: libmicrohttpd drops the rest */
            return MHD_YES;
        if (srv_deadline_expired(h->deadline, guard_of(c)))
            return send_error(h, c, st, SRV_E_REQUEST_TIMEOUT, "the request was not received in time");
        if (st->too_large && !st->head_len)
            srv_deadline_body_seen(h->deadline, guard_of(c));
        if (body_append(h, st, upload_data, *upload_data_size))
            return MHD_NO;
        *upload_data_size = 0;
        if (st->dropped > MAX_DROPPED_BODY)
            return send_too_large(h, c, st);
        return MHD_YES;
    }
    if (st->status)             /* already answered (early 413, 400, 408) */
        return MHD_YES;
    if (atomic_load(&st->ready)) {  /* resumed: the work is over */
        h->cfg.router.finish(h->cfg.router.ctx, &st->req, &st->resp);
        return send_response(h, c, st, &st->resp);
    }
    srv_deadline_request_done(h->deadline, guard_of(c));
    if (st->too_large)
        return send_too_large(h, c, st);
    return dispatch(h, c, st);
}

static void request_completed(void *cls, struct MHD_Connection *c, void **req_cls,
                              enum MHD_RequestTerminationCode toe)
{
    srv_http *h = cls;
    conn_state *st = *req_cls;
    (void)c;
    srv_deadline_reply_sent(h->deadline, guard_of(c));
    if (!st)
        return;
    if (h->cfg.access_log)
        fprintf(stderr, "access: %s %s %d %zu %.1fms%s\n", st->method, st->path, st->status,
                st->bytes, (mt_now_s() - st->t_start) * 1e3,
                toe == MHD_REQUEST_TERMINATED_COMPLETED_OK ? "" : " (aborted)");
    conn_free(st);
    *req_cls = NULL;
    atomic_fetch_sub(h->cfg.in_flight, 1);
}

/* ---- connections ------------------------------------------------------------------ */

/* Accepted: guard it; closing: forget it (before libmicrohttpd closes the
 * socket, so the sweeper never touches a reused descriptor). */
static void on_connection(void *cls, struct MHD_Connection *c, void **socket_context,
                          enum MHD_ConnectionNotificationCode code)
{
    srv_http *h = cls;
    if (code == MHD_CONNECTION_NOTIFY_STARTED) {
        sock_ctx *sc = calloc(1, sizeof *sc);
        *socket_context = sc;
        if (!sc)
            return;
        const union MHD_ConnectionInfo *ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
        int fd = ci ? (int)ci->connect_fd : -1;
        sc->guard = fd >= 0 ? srv_deadline_add(h->deadline, fd) : NULL;
        pthread_mutex_lock(&h->handed_mu);      /* what the front counted and decided */
        for (struct handed **pp = &h->handed; *pp; pp = &(*pp)->next)
            if ((*pp)->fd == fd) {
                struct handed *x = *pp;
                *pp = x->next;
                sc->slot = x->slot;
                free(x);
                break;
            }
        pthread_mutex_unlock(&h->handed_mu);
    } else if (code == MHD_CONNECTION_NOTIFY_CLOSED) {
        sock_ctx *sc = *socket_context;
        if (sc) {
            srv_deadline_remove(h->deadline, sc->guard);
            srv_addr_limit_leave(h->addr_limit, sc->slot);
            free(sc);
        }
        *socket_context = NULL;
    }
}

/* The request line arrived: its head and body are now on the clock.  The
 * return value would become *req_cls: NULL keeps on_request's protocol. */
static void *on_request_line(void *cls, const char *uri, struct MHD_Connection *c)
{
    srv_http *h = cls;
    (void)uri;
    srv_deadline_request_line(h->deadline, guard_of(c));
    return NULL;
}

/* The whole 408 the sweeper writes before closing, rendered by errors.c. */
static char *timeout_reply(void)
{
    return raw_error(SRV_E_REQUEST_TIMEOUT, "Request Timeout", "the request was not received in time", 0);
}

/* The 503 the front writes to a parked connection. */
static char *park_reply(int limit)
{
    char msg[128];
    snprintf(msg, sizeof msg, "too many connections from this address (over --max-connections-per-ip %d); retry",
             limit);
    return raw_reply(SRV_E_QUEUE_FULL, "Service Unavailable", msg, 0, (int)PARK_S);
}

static void count_closed(void *ctx, int why)
{
    (void)ctx;
    static const srv_close_reason reason[] = { SRV_CLOSE_REQUEST_TIMEOUT, SRV_CLOSE_IDLE, SRV_CLOSE_CLIENT_GONE,
                                               SRV_CLOSE_WRITE_TIMEOUT };
    srv_metrics_connection_closed(reason[why]);
}

static srv_deadline *deadline_start(const srv_http_config *cfg)
{
    srv_deadline_params p = srv_deadline_default_params();
    p.on_close = count_closed;
    p.first_s = p.request_s = cfg->request_timeout_s;
    p.idle_s = cfg->timeout_s;
    p.write_s = cfg->write_timeout_s;
    char *reply = timeout_reply();
    p.timeout_reply = reply;
    srv_deadline *d = srv_deadline_new(&p);
    free(reply);
    return d;
}

/* ---- the front (front.h) ------------------------------------------------------------ */

/* A connection whose head passed: libmicrohttpd's from here. */
static void front_admit(void *ctx, int fd, const struct sockaddr *addr, socklen_t len, srv_addr_slot *slot)
{
    srv_http *h = ctx;
    struct handed *x = malloc(sizeof *x);
    if (x) {
        *x = (struct handed){ .fd = fd, .slot = slot };
        pthread_mutex_lock(&h->handed_mu);
        for (struct handed **pp = &h->handed; *pp; pp = &(*pp)->next)
            if ((*pp)->fd == fd) {          /* left by a connection libmicrohttpd dropped unannounced */
                struct handed *old = *pp;
                *pp = old->next;
                srv_addr_limit_leave(h->addr_limit, old->slot);
                free(old);
                break;
            }
        x->next = h->handed;
        h->handed = x;
        pthread_mutex_unlock(&h->handed_mu);
    }
    if (MHD_add_connection(h->daemon, fd, addr, len) != MHD_YES) {     /* it closed fd */
        pthread_mutex_lock(&h->handed_mu);
        for (struct handed **pp = &h->handed; *pp; pp = &(*pp)->next)
            if (*pp == x) {
                *pp = x->next;
                break;
            }
        pthread_mutex_unlock(&h->handed_mu);
        free(x);
        srv_addr_limit_leave(h->addr_limit, slot);
    }
}

/* The raw reply to a head the front refused (or did not get in time). */
static char *front_reply(void *ctx, int status, const char *msg, const char *path, const char *content_type)
{
    srv_http *h = ctx;
    if (status == 503)
        return strdup(h->park_reply);
    const srv_http_router *rt = &h->cfg.router;
    srv_request head = { .method = "", .path = path, .content_type = content_type[0] ? content_type : NULL };
    int shape = path[0] ? rt->error_shape(rt->ctx, &head) : SRV_SHAPE_OURS;
    return status == 413   ? raw_error(SRV_E_BODY_TOO_LARGE, "Content Too Large", msg, shape)
           : status == 408 ? raw_error(SRV_E_REQUEST_TIMEOUT, "Request Timeout", msg, shape)
                           : raw_error(SRV_E_BAD_REQUEST, "Bad Request", msg, shape);
}

static void front_closed(void *ctx, int why)
{
    (void)ctx;
    if (why == 0)
        srv_metrics_connection_closed(SRV_CLOSE_REQUEST_TIMEOUT);
    else if (why == 2)
        srv_metrics_connection_closed(SRV_CLOSE_CLIENT_GONE);
    else if (why == 3)
        srv_metrics_connection_closed(SRV_CLOSE_PER_IP);
}

static size_t front_body_limit(void *ctx, const char *path)
{
    const srv_http *h = ctx;
    return h->cfg.router.max_body ? h->cfg.router.max_body(h->cfg.router.ctx, path) : h->cfg.max_body;
}

/* The listening socket: ours, so that the front reads each head first. */
static int listen_on(const struct sockaddr_storage *addr, char *err, size_t err_len)
{
    int fd = socket(addr->ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    int one = 1;
    socklen_t len = addr->ss_family == AF_INET6 ? sizeof(struct sockaddr_in6) : sizeof(struct sockaddr_in);
    if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) != 0 ||
        bind(fd, (const struct sockaddr *)addr, len) != 0 || listen(fd, 1024) != 0) {
        snprintf(err, err_len, "cannot listen: %s (address in use?)", strerror(errno));
        if (fd >= 0)
            close(fd);
        return -1;
    }
    return fd;
}

static int bound_port(int fd)
{
    struct sockaddr_storage a;
    socklen_t al = sizeof a;
    if (getsockname(fd, (struct sockaddr *)&a, &al) != 0)
        return -1;
    return ntohs(a.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&a)->sin6_port
                                         : ((struct sockaddr_in *)&a)->sin_port);
}

/* ---- daemon ---------------------------------------------------------------------- */

static int resolve(const char *host, int port, struct sockaddr_storage *addr, char *err, size_t err_len)
{
    struct addrinfo hints = { .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM,
                              .ai_flags = AI_PASSIVE | AI_NUMERICSERV };
    struct addrinfo *res = NULL;
    char service[16];
    snprintf(service, sizeof service, "%d", port);
    int rc = getaddrinfo(host, service, &hints, &res);
    if (rc != 0 || !res) {
        snprintf(err, err_len, "cannot resolve host '%s': %s", host, gai_strerror(rc));
        return -1;
    }
    memcpy(addr, res->ai_addr, res->ai_addrlen);
    freeaddrinfo(res);
    return 0;
}

srv_http *srv_http_start(const srv_http_config *cfg, char *err, size_t err_len)
{
    struct sockaddr_storage addr = { 0 };
    if (resolve(cfg->host, cfg->port, &addr, err, err_len))
        return NULL;
    srv_http *h = calloc(1, sizeof *h);
    if (!h) {
        snprintf(err, err_len, "out of memory");
        return NULL;
    }
    h->cfg = *cfg;
    pthread_mutex_init(&h->handed_mu, NULL);
    int lfd = -1;                       /* the front's once it starts */
    if (!(h->deadline = deadline_start(cfg))) {
        snprintf(err, err_len, "cannot start the request deadline thread");
        goto fail;
    }
    srv_addr_limit_params lp = { .limit = cfg->max_connections_per_ip };
    h->park_reply = park_reply(cfg->max_connections_per_ip);
    if (!h->park_reply || !(h->addr_limit = srv_addr_limit_new(&lp))) {
        snprintf(err, err_len, "cannot start the connection limits (out of memory)");
        goto fail;
    }
    if ((lfd = listen_on(&addr, err, err_len)) < 0)
        goto fail;
    h->port = bound_port(lfd);
    /* epoll: thousands of idle connections cost no poll() scan.  The
     * listening socket, the request heads and the per-address limit are the
     * front's (front.h, addr_limit.h): libmicrohttpd gets each connection
     * once its head passed. */
    unsigned int flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL | MHD_USE_ITC | MHD_USE_NO_LISTEN_SOCKET |
                         MHD_ALLOW_SUSPEND_RESUME | MHD_USE_ERROR_LOG;
    h->daemon = MHD_start_daemon(flags, 0, NULL, NULL, &on_request, h,
                                 MHD_OPTION_THREAD_POOL_SIZE, (unsigned int)cfg->threads,
                                 MHD_OPTION_CONNECTION_LIMIT, (unsigned int)cfg->max_connections,
                                 /* a backstop: the sweeper closes (and counts) idle
                                  * connections first; at the same timeout libmicrohttpd
                                  * won about half the races, uncounted */
                                 MHD_OPTION_CONNECTION_TIMEOUT, (unsigned int)cfg->timeout_s + IDLE_BACKSTOP_S,
                                 MHD_OPTION_NOTIFY_COMPLETED, &request_completed, h,
                                 MHD_OPTION_NOTIFY_CONNECTION, &on_connection, h,
                                 MHD_OPTION_URI_LOG_CALLBACK, &on_request_line, h,
                                 MHD_OPTION_END);
    if (!h->daemon) {
        snprintf(err, err_len, "cannot start libmicrohttpd on %s:%d", cfg->host, cfg->port);
        goto fail;
    }
    srv_front_params fp = { .listen_fd = lfd, .head_timeout_s = cfg->request_timeout_s, .park_s = PARK_S,
                            .addr_limit = h->addr_limit, .body_limit = front_body_limit, .body_limit_ctx = h,
                            .max_pending = cfg->max_connections,
                            .admit = front_admit, .reply = front_reply, .closed = front_closed, .ctx = h };
    if (!(h->front = srv_front_start(&fp, err, err_len))) {
        MHD_stop_daemon(h->daemon);
        goto fail;
    }
    return h;
fail:
    if (lfd >= 0)
        close(lfd);
    srv_addr_limit_free(h->addr_limit);
    pthread_mutex_destroy(&h->handed_mu);
    free(h->park_reply);
    srv_deadline_free(h->deadline);
    free(h);
    return NULL;
}

int srv_http_port(const srv_http *h)
{
    return h->port;
}

int srv_http_stop(srv_http *h, int drain_s)
{
    if (!h)
        return 0;
    atomic_store(&h->draining, 1);
    srv_front_quiesce(h->front);            /* no new connections */
    double until = mt_now_s() + drain_s;
    while (atomic_load(h->cfg.in_flight) > 0 && mt_now_s() < until) {
        struct timespec ts = { 0, 10 * 1000000L };
        nanosleep(&ts, NULL);
    }
    int left = atomic_load(h->cfg.in_flight);
    if (left > 0) {
        /* MHD must not be stopped with suspended connections (a worker still
         * holds them); leave it to the process exit. */
        fprintf(stderr, "mtserve: %d request(s) still running after %d s\n", left, drain_s);
        return -1;
    }
    srv_front_free(h->front);               /* hands nothing more to libmicrohttpd */
    MHD_stop_daemon(h->daemon);             /* its last CLOSED notifications still count down */
    srv_addr_limit_free(h->addr_limit);
    while (h->handed) {
        struct handed *x = h->handed;
        h->handed = x->next;
        free(x);
    }
    pthread_mutex_destroy(&h->handed_mu);
    free(h->park_reply);
    srv_deadline_free(h->deadline);
    free(h);
    return 0;
}
