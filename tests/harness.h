/* harness: the real `mtserve serve` as a child process, and a small libcurl client.
 *
 * Shared by the integration tests (test_server.c, test_load.c).  A server is
 * started from $MTSERVE_BIN (default build/mtserve) on a free loopback port
 * with --host/--port added to the caller's arguments; its stderr goes to
 * <dir of MTSERVE_BIN>/tests/server-<port>.log, which is scanned for
 * sanitizer reports (ASan, UBSan, LSan, TSan) when it stops.  Every child
 * is tracked, killed by kill_all_children() and on our own death
 * (PR_SET_PDEATHSIG); every wait is bounded.
 *
 * The Makefile links this file into every test binary (TEST_SUPPORT); only
 * the tests that include harness.h use it.  Failures are reported with
 * cmocka's print_error, so include <cmocka.h> first.
 */
#ifndef MTSERVE_TESTS_HARNESS_H
#define MTSERVE_TESTS_HARNESS_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <curl/curl.h>
#include <jansson.h>

#if defined(__SANITIZE_THREAD__) || defined(__SANITIZE_ADDRESS__)
#define START_TIMEOUT_S   180       /* from spawn to /health 200: loading runs 5-20x slower */
#else
#define START_TIMEOUT_S   60        /* from spawn to /health 200 */
#endif
#define REQUEST_TIMEOUT_S 120       /* a request without its own timeout_ms */

/* ---- time, processes ---------------------------------------------------------- */

double      now_s(void);            /* CLOCK_MONOTONIC seconds */
void        sleep_ms(int ms);
const char *bin_path(void);         /* $MTSERVE_BIN or build/mtserve */
int         free_port(void);        /* a free loopback port, or -1 */

void track(pid_t pid);              /* killed by kill_all_children() */
void untrack(pid_t pid);
int  wait_child(pid_t pid, double timeout_s);   /* wait status, or -1 on timeout */
void kill_child(pid_t pid);         /* SIGTERM, then SIGKILL after 20 s; reaped */
void kill_all_children(void);

/* ---- HTTP client ------------------------------------------------------------------ */

typedef struct {
    pid_t pid;
    int   port;
    char  base[64];                 /* http://127.0.0.1:<port> */
    char  log[512];                 /* the server's stderr */
} server;

typedef struct {
    long   status;                  /* 0 if no reply */
    char  *body;                    /* NUL-terminated, or NULL */
    size_t len;
    char   headers[4096];
    size_t hlen;
    int    curl_rc;                 /* CURLcode; 0 = transport fine */
} reply;

typedef struct {
    const char *method;             /* default: GET without body, POST with */
    const char *body;
    size_t      body_len;           /* 0 = strlen(body) */
    const char *content_type;       /* default application/json when body */
    const char *extra[4];           /* more header lines */
    int         chunked;            /* send the body chunked (no Content-Length) */
    long        timeout_ms;         /* give up (and close) after this; 0 = REQUEST_TIMEOUT_S */
    const char *from;               /* connect from this local address ("127.0.0.2"); NULL: any */
} req_opts;

/* A request on a new handle (a new connection). */
reply http_req(const server *s, const char *path, const req_opts *o);
/* The same on the caller's handle c: its options are reset, its open
 * connection is reused (keep-alive).  One thread per handle. */
reply http_req_on(CURL *c, const server *s, const char *path, const req_opts *o);
reply get(const server *s, const char *path);
reply post(const server *s, const char *path, const char *body);
/* POST /translate_file (multipart) of data[0..len) as the part "file" named name
 * (none when name is NULL), then the form fields given as NULL-terminated
 * name, value pairs; the status, *out the body (malloc'd, NUL-terminated).
 * timeout_ms 0: 120 s. */
typedef struct {
    char  *p;
    size_t n;
} http_buf;
long  post_file(const server *s, const char *name, const char *data, size_t len, http_buf *out, long timeout_ms,
                ...);
void  reply_free(reply *r);
/* The value of header name (case-insensitive) in out; 0 if absent. */
int   header(const reply *r, const char *name, char *out, size_t len);
/* The parsed body (caller decrefs), or NULL (printed). */
json_t *reply_json(const reply *r);
/* The single, non-empty translation of a /translate reply (malloc'ed), or
 * NULL with what is wrong in why. */
char *reply_text(const reply *r, char *why, size_t why_len);
/* Asserts the reply's status (printing the body if it differs) and returns the
 * parsed body (caller decrefs). */
json_t *expect_json(reply *r, long status);
/* A JSON array of integers into out[cap] (fails the test if longer); its length. */
int ids_of(json_t *a, int32_t *out, int cap);
/* Every line of a JSON-lines fixture as one array (caller decrefs); fails the test
 * if the file is missing or a line is not JSON. */
json_t *load_jsonl(const char *path);
/* The value of a /metrics sample line "prefix value" ("name{labels}"), or -1. */
double metric(const server *s, const char *prefix);
/* The same, GET /metrics with the header line auth ("Authorization: Bearer KEY"; NULL: none). */
double metric_auth(const server *s, const char *prefix, const char *auth);

/* ---- servers ------------------------------------------------------------------------ */

/* Starts the binary with `serve`, --host/--port, --cache-mb 0 (args may say
 * otherwise) and args (NULL-terminated), env entries ("NAME=value") added;
 * does not wait.  0 or -1. */
int server_spawn(server *s, const char *const *args, const char *const *env);
/* Polls /health until it answers status (bounded).  0, or -1 (server gone or timeout). */
int wait_health(server *s, long status);
/* Spawns and waits for /health 200; 0 or -1 (the child is killed). */
int server_start_env(server *s, const char *const *args, const char *const *env);
int server_start(server *s, const char *const *args);
/* 1 if the server has not exited (it is not reaped). */
int server_alive(const server *s);
/* VmRSS of the server in kB, or -1. */
long server_rss_kb(const server *s);
/* 1 if the log holds no sanitizer report (printed otherwise). */
int log_clean(const server *s);
/* SIGTERM, then the wait status (-1 on timeout: killed); -2 if the log holds
 * a sanitizer report. */
int server_stop(server *s);

/* The files tests (test_files_i18n, test_files_markup): the model en-fr's translation of
 * text as POST /translate gives it (NULL and a printed reason on failure); s without its
 * leading and trailing ASCII whitespace (malloc'd); bytes written to path (asserted); the
 * file posted to /translate_file en->fr and its rendering fetched from translatedFileUrl,
 * whose name holds want_name and Content-Type want_mime (asserted), *out_len its size. */
char *translate_en_fr(const server *s, const char *text);
char *trimmed_copy(const char *s);
void  harness_write_file(const char *path, const char *data, size_t len);
char *translate_file_en_fr(const server *s, const char *name, const char *data, size_t len, const char *want_name,
                 const char *want_mime, size_t *out_len);

/* DIR (made if missing): links to the files of the Marian model directory FROM (a path
 * from the current directory), relabelled SOURCE -> TARGET by a tokenizer_config.json of
 * its own; with SOURCE NULL, FROM's tokenizer_config.json is linked too.  Asserted. */
void harness_model_link(const char *from, const char *dir, const char *source, const char *target);

#endif
