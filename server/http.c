/* http: libmicrohttpd glue.  Every MHD call of the program is in this file.
 *
 * Request lifecycle (libmicrohttpd's access-handler protocol):
 *   1st call    *req_cls == NULL: allocate conn_state; refuse a declared
 *               Content-Length over the limit with 413 right away (the body
 *               is never read).
 *   next calls  a body chunk: append it, or drop it once over the limit;
 *               *upload_data_size = 0 marks it consumed.
 *   last call   *upload_data_size == 0: dispatch and queue the reply.
 *   completed   request_completed(): access log, metrics, free.
 */
#include "http.h"

#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <microhttpd.h>

#include "errors.h"
#include "metrics.h"
#include "routes.h"

struct srv_http {
    struct MHD_Daemon *daemon;
    srv_http_config    cfg;
    _Atomic int        draining;
    int                port;
};

typedef struct {
    double  t_start;
    char   *body;
    size_t  len, cap;
    int     too_large;      /* the body went over max_body: the rest is dropped */
    int     status;         /* queued status, for the log and metrics */
    size_t  bytes;          /* queued body bytes */
    const char *route;
    char    method[16];
    char    path[200];
} conn_state;

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

/* Serializes resp and queues it; takes ownership of resp's body. */
static enum MHD_Result send_response(srv_http *h, struct MHD_Connection *c, conn_state *st,
                                     srv_response *resp)
{
    char *buf = NULL;
    size_t len = 0;
    const char *type = NULL;
    if (resp->json) {
        buf = json_dumps(resp->json, JSON_COMPACT | JSON_REAL_PRECISION(10));
        json_decref(resp->json);
        resp->json = NULL;
        if (!buf) {         /* our own failure: say so with a fixed body */
            resp->status = 500;
            buf = strdup("{\"error\":{\"code\":\"internal_error\",\"message\":\"cannot serialize the reply\"}}");
        }
        len = buf ? strlen(buf) : 0;
        type = "application/json";
    } else if (resp->text) {
        buf = resp->text;
        len = resp->text_len;
        type = resp->content_type ? resp->content_type : "text/plain; charset=utf-8";
        resp->text = NULL;
    }
    struct MHD_Response *r = MHD_create_response_from_buffer(len, buf ? buf : (void *)"",
                                                             buf ? MHD_RESPMEM_MUST_FREE
                                                                 : MHD_RESPMEM_PERSISTENT);
    if (!r) {
        free(buf);
        return MHD_NO;
    }
    add_headers(h, c, r, resp, type);
    st->status = resp->status;
    st->bytes = len;
    st->route = resp->route;
    enum MHD_Result ret = MHD_queue_response(c, (unsigned int)resp->status, r);
    MHD_destroy_response(r);
    return ret;
}

static enum MHD_Result send_error(srv_http *h, struct MHD_Connection *c, conn_state *st,
                                  srv_code code, const char *msg)
{
    srv_response resp = { 0 };
    resp.route = srv_route_label(st->path);
    srv_fail(&resp, code, "%s", msg);
    srv_error_render(&resp, 0);
    return send_response(h, c, st, &resp);
}

/* ---- requests ------------------------------------------------------------------- */

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static conn_state *conn_new(srv_http *h, const char *method, const char *url)
{
    conn_state *st = calloc(1, sizeof *st);
    if (!st)
        return NULL;
    st->t_start = now_s();
    snprintf(st->method, sizeof st->method, "%s", method);
    snprintf(st->path, sizeof st->path, "%s", url);
    atomic_fetch_add(h->cfg.in_flight, 1);
    return st;
}

static int declared_too_large(const srv_http *h, struct MHD_Connection *c)
{
    const char *cl = MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
    return cl && strtoull(cl, NULL, 10) > h->cfg.max_body;
}

/* Appends a chunk, growing geometrically; drops everything once over the limit. */
static int body_append(const srv_http *h, conn_state *st, const char *data, size_t n)
{
    if (st->too_large || n > h->cfg.max_body - st->len) {
        st->too_large = 1;
        free(st->body);
        st->body = NULL;
        st->len = st->cap = 0;
        return 0;
    }
    if (st->len + n > st->cap) {
        size_t cap = st->cap ? st->cap * 2 : 4096;
        while (cap < st->len + n)
            cap *= 2;
        if (cap > h->cfg.max_body)
            cap = h->cfg.max_body;
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

static enum MHD_Result dispatch(srv_http *h, struct MHD_Connection *c, conn_state *st,
                                const char *url, const char *method)
{
    srv_request req = {
        .method = method,
        .path = url,
        .content_type = MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_TYPE),
        .authorization = MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_AUTHORIZATION),
        .body = st->body ? st->body : "",
        .body_len = st->len,
        .t_start = st->t_start,
    };
    srv_response resp = { 0 };
    h->cfg.dispatch(h->cfg.ctx, &req, &resp);
    json_decref(req.json);
    return send_response(h, c, st, &resp);
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url,
                                  const char *method, const char *version, const char *upload_data,
                                  size_t *upload_data_size, void **req_cls)
{
    srv_http *h = cls;
    conn_state *st = *req_cls;
    (void)version;
    if (!st) {
        if (!(st = conn_new(h, method, url)))
            return MHD_NO;
        *req_cls = st;
        if (declared_too_large(h, c))
            return send_error(h, c, st, SRV_E_BODY_TOO_LARGE, "the request body is over the size limit");
        return MHD_YES;
    }
    if (*upload_data_size) {
        if (!st->status && body_append(h, st, upload_data, *upload_data_size))
            return MHD_NO;
        *upload_data_size = 0;
        return MHD_YES;
    }
    if (st->status)         /* already answered (early 413) */
        return MHD_YES;
    if (st->too_large)
        return send_error(h, c, st, SRV_E_BODY_TOO_LARGE, "the request body is over the size limit");
    return dispatch(h, c, st, url, method);
}

static void request_completed(void *cls, struct MHD_Connection *c, void **req_cls,
                              enum MHD_RequestTerminationCode toe)
{
    srv_http *h = cls;
    conn_state *st = *req_cls;
    (void)c;
    if (!st)
        return;
    double secs = now_s() - st->t_start;
    srv_metrics_request(st->route ? st->route : srv_route_label(st->path), st->status, secs);
    if (h->cfg.access_log)
        fprintf(stderr, "access: %s %s %d %zu %.1fms%s\n", st->method, st->path, st->status,
                st->bytes, secs * 1e3, toe == MHD_REQUEST_TERMINATED_COMPLETED_OK ? "" : " (aborted)");
    free(st->body);
    free(st);
    *req_cls = NULL;
    atomic_fetch_sub(h->cfg.in_flight, 1);
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
    unsigned int flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_AUTO | MHD_USE_ITC |
                         MHD_USE_ERROR_LOG | (addr.ss_family == AF_INET6 ? MHD_USE_IPv6 : 0);
    h->daemon = MHD_start_daemon(flags, (uint16_t)cfg->port, NULL, NULL, &on_request, h,
                                 MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&addr,
                                 MHD_OPTION_THREAD_POOL_SIZE, (unsigned int)cfg->threads,
                                 MHD_OPTION_CONNECTION_LIMIT, (unsigned int)cfg->max_connections,
                                 MHD_OPTION_CONNECTION_TIMEOUT, (unsigned int)cfg->timeout_s,
                                 MHD_OPTION_NOTIFY_COMPLETED, &request_completed, h,
                                 MHD_OPTION_LISTENING_ADDRESS_REUSE, (unsigned int)1,
                                 MHD_OPTION_END);
    if (!h->daemon) {
        snprintf(err, err_len, "cannot listen on %s:%d (address in use?)", cfg->host, cfg->port);
        free(h);
        return NULL;
    }
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(h->daemon, MHD_DAEMON_INFO_BIND_PORT);
    h->port = info ? info->port : cfg->port;
    return h;
}

int srv_http_port(const srv_http *h)
{
    return h->port;
}

void srv_http_stop(srv_http *h, int drain_s)
{
    if (!h)
        return;
    atomic_store(&h->draining, 1);
    MHD_socket fd = MHD_quiesce_daemon(h->daemon);
    if (fd != MHD_INVALID_SOCKET)
        close(fd);
    double until = now_s() + drain_s;
    while (atomic_load(h->cfg.in_flight) > 0 && now_s() < until) {
        struct timespec ts = { 0, 10 * 1000000L };
        nanosleep(&ts, NULL);
    }
    int left = atomic_load(h->cfg.in_flight);
    if (left > 0)
        fprintf(stderr, "mtserve: %d request(s) still running after %d s; closing them\n", left, drain_s);
    MHD_stop_daemon(h->daemon);
    free(h);
}
