/* harness: child servers and a libcurl client for the integration tests (harness.h). */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <cmocka.h>

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"

#define MAX_CHILDREN 8

/* ---- time, processes ---------------------------------------------------------- */

static pid_t children[MAX_CHILDREN];

double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

void sleep_ms(int ms)
{
    struct timespec t = { ms / 1000, (long)(ms % 1000) * 1000000L };
    nanosleep(&t, NULL);
}

const char *bin_path(void)
{
    const char *b = getenv("MTSERVE_BIN");
    return b && *b ? b : "build/mtserve";
}

/* A free loopback port: bind port 0, read it back, release it. */
int free_port(void)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = 0 };
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof a;
    if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof a) || getsockname(fd, (struct sockaddr *)&a, &len)) {
        if (fd >= 0)
            close(fd);
        return -1;
    }
    close(fd);
    return ntohs(a.sin_port);
}

void track(pid_t pid)
{
    for (int i = 0; i < MAX_CHILDREN; i++)
        if (!children[i]) {
            children[i] = pid;
            return;
        }
}

void untrack(pid_t pid)
{
    for (int i = 0; i < MAX_CHILDREN; i++)
        if (children[i] == pid)
            children[i] = 0;
}

/* Waits up to timeout_s for pid; returns its wait status, or -1. */
int wait_child(pid_t pid, double timeout_s)
{
    double until = now_s() + timeout_s;
    int status;
    while (now_s() < until) {
        pid_t r = waitpid(pid, &status, WNOHANG);
        if (r == pid)
            return status;
        if (r < 0)
            return -1;
        sleep_ms(20);
    }
    return -1;
}

void kill_child(pid_t pid)
{
    if (pid <= 0)
        return;
    kill(pid, SIGTERM);
    if (wait_child(pid, 20) == -1) {
        kill(pid, SIGKILL);
        wait_child(pid, 10);
    }
    untrack(pid);
}

void kill_all_children(void)
{
    for (int i = 0; i < MAX_CHILDREN; i++)
        if (children[i])
            kill_child(children[i]);
}

/* ---- HTTP client ----------------------------------------------------------------- */

static size_t on_body(char *data, size_t size, size_t n, void *arg)
{
    reply *r = arg;
    size_t k = size * n;
    char *p = realloc(r->body, r->len + k + 1);
    if (!p)
        return 0;
    r->body = p;
    memcpy(r->body + r->len, data, k);
    r->len += k;
    r->body[r->len] = 0;
    return k;
}

static size_t on_header(char *data, size_t size, size_t n, void *arg)
{
    reply *r = arg;
    size_t k = size * n;
    if (r->hlen + k < sizeof r->headers) {
        memcpy(r->headers + r->hlen, data, k);
        r->hlen += k;
        r->headers[r->hlen] = 0;
    }
    return k;
}

void reply_free(reply *r)
{
    free(r->body);
    memset(r, 0, sizeof *r);
}

int header(const reply *r, const char *name, char *out, size_t len)
{
    size_t n = strlen(name);
    for (const char *line = r->headers; *line;) {
        const char *end = strstr(line, "\r\n");
        if (!end)
            break;
        if (strncasecmp(line, name, n) == 0 && line[n] == ':') {
            const char *v = line + n + 1;
            while (*v == ' ')
                v++;
            size_t vl = (size_t)(end - v) < len - 1 ? (size_t)(end - v) : len - 1;
            memcpy(out, v, vl);
            out[vl] = 0;
            return 1;
        }
        line = end + 2;
    }
    return 0;
}

typedef struct {
    const char *data;
    size_t      len, at;
} upload;

static size_t on_read(char *buf, size_t size, size_t n, void *arg)
{
    upload *u = arg;
    size_t k = size * n < u->len - u->at ? size * n : u->len - u->at;
    memcpy(buf, u->data + u->at, k);
    u->at += k;
    return k;
}

reply http_req_on(CURL *c, const server *s, const char *path, const req_opts *o)
{
    reply r = { 0 };
    char url[256], ctype[128];
    struct curl_slist *hdrs = NULL;
    upload up = { 0 };
    curl_easy_reset(c);             /* options only: the connection stays open */
    snprintf(url, sizeof url, "%s%s", s->base, path);
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, &r);
    curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, on_header);
    curl_easy_setopt(c, CURLOPT_HEADERDATA, &r);
    if (o && o->timeout_ms)
        curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, o->timeout_ms);
    else
        curl_easy_setopt(c, CURLOPT_TIMEOUT, (long)REQUEST_TIMEOUT_S);
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(c, CURLOPT_NOPROXY, "*");
    if (o && o->from)
        curl_easy_setopt(c, CURLOPT_INTERFACE, o->from);
    if (o && o->body) {
        size_t len = o->body_len ? o->body_len : strlen(o->body);
        snprintf(ctype, sizeof ctype, "Content-Type: %s", o->content_type ? o->content_type : "application/json");
        hdrs = curl_slist_append(hdrs, ctype);
        if (o->chunked) {
            up = (upload){ o->body, len, 0 };
            curl_easy_setopt(c, CURLOPT_POST, 1L);
            curl_easy_setopt(c, CURLOPT_READFUNCTION, on_read);
            curl_easy_setopt(c, CURLOPT_READDATA, &up);
            hdrs = curl_slist_append(hdrs, "Transfer-Encoding: chunked");
        } else {
            curl_easy_setopt(c, CURLOPT_POSTFIELDS, o->body);
            curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)len);
        }
        hdrs = curl_slist_append(hdrs, "Expect:");
    }
    for (int i = 0; o && i < 4 && o->extra[i]; i++)
        hdrs = curl_slist_append(hdrs, o->extra[i]);
    if (hdrs)
        curl_easy_setopt(c, CURLOPT_HTTPHEADER, hdrs);
    if (o && o->method) {
        curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, o->method);
        if (strcmp(o->method, "HEAD") == 0)
            curl_easy_setopt(c, CURLOPT_NOBODY, 1L);
    }
    r.curl_rc = (int)curl_easy_perform(c);
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &r.status);
    curl_slist_free_all(hdrs);
    return r;
}

reply http_req(const server *s, const char *path, const req_opts *o)
{
    CURL *c = curl_easy_init();
    if (!c) {
        reply r = { .curl_rc = CURLE_FAILED_INIT };
        return r;
    }
    reply r = http_req_on(c, s, path, o);
    curl_easy_cleanup(c);
    return r;
}

reply get(const server *s, const char *path)
{
    return http_req(s, path, NULL);
}

reply post(const server *s, const char *path, const char *body)
{
    req_opts o = { .body = body };
    return http_req(s, path, &o);
}

json_t *reply_json(const reply *r)
{
    json_error_t e;
    json_t *j = r->body ? json_loadb(r->body, r->len, 0, &e) : NULL;
    if (!j)
        print_error("not JSON (status %ld): %.300s\n", r->status, r->body ? r->body : "(none)");
    return j;
}

/* ---- servers ------------------------------------------------------------------------ */

int server_spawn(server *s, const char *const *args, const char *const *env)
{
    s->port = free_port();
    if (s->port <= 0)
        return -1;
    snprintf(s->base, sizeof s->base, "http://127.0.0.1:%d", s->port);
    char port[16], *log = s->log;
    const char *bin = bin_path(), *slash = strrchr(bin, '/');
    snprintf(port, sizeof port, "%d", s->port);
    snprintf(log, sizeof s->log, "%.*stests/server-%d.log", slash ? (int)(slash - bin + 1) : 0, bin, s->port);
    /* the translation cache off unless the test's args turn it on (a later
     * flag wins): two identical requests then both reach the decoder, which
     * is what every test comparing two paths means to compare */
    const char *argv[40] = { bin_path(), "serve", "--host", "127.0.0.1", "--port", port, "--cache-mb", "0" };
    int n = 8;
    for (int i = 0; args && args[i] && n < 38; i++)
        argv[n++] = args[i];
    argv[n] = NULL;
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0)
        return -1;
    if (pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        int fd = open(log, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        if (fd >= 0) {
            dup2(fd, 2);
            close(fd);
        }
        for (int i = 0; env && env[i]; i++)
            putenv((char *)env[i]);
        execv(argv[0], (char *const *)argv);
        _exit(127);
    }
    s->pid = pid;
    track(pid);
    return 0;
}

int wait_health(server *s, long status)
{
    double until = now_s() + START_TIMEOUT_S;
    while (now_s() < until) {
        int ws;
        if (waitpid(s->pid, &ws, WNOHANG) == s->pid) {
            untrack(s->pid);
            s->pid = 0;
            print_error("server exited during startup (status %d); see %s\n", ws, s->log);
            return -1;
        }
        reply r = get(s, "/health");
        long st = r.status;
        reply_free(&r);
        if (st == status)
            return 0;
        sleep_ms(20);
    }
    print_error("/health never answered %ld within %d s; see %s\n", status, START_TIMEOUT_S, s->log);
    return -1;
}

int server_start_env(server *s, const char *const *args, const char *const *env)
{
    if (server_spawn(s, args, env))
        return -1;
    if (wait_health(s, 200) == 0)
        return 0;
    kill_child(s->pid);
    return -1;
}

int server_start(server *s, const char *const *args)
{
    return server_start_env(s, args, NULL);
}

int server_alive(const server *s)
{
    siginfo_t si = { 0 };
    /* WNOWAIT: look without reaping, so server_stop still gets the status */
    if (s->pid <= 0 || waitid(P_PID, (id_t)s->pid, &si, WEXITED | WNOHANG | WNOWAIT) != 0)
        return 0;
    return si.si_pid == 0;
}

long server_rss_kb(const server *s)
{
    char path[64], line[256];
    long kb = -1;
    snprintf(path, sizeof path, "/proc/%d/status", (int)s->pid);
    FILE *f = fopen(path, "r");
    while (f && fgets(line, sizeof line, f))
        if (strncmp(line, "VmRSS:", 6) == 0)
            kb = strtol(line + 6, NULL, 10);
    if (f)
        fclose(f);
    return kb;
}

/* The marks of a sanitizer report, one line each: "Sanitizer" is in
 * ThreadSanitizer's "WARNING: ThreadSanitizer: data race" and its closing
 * "ThreadSanitizer: reported N warnings", in AddressSanitizer's and
 * LeakSanitizer's "ERROR: ...Sanitizer: ..." and every "SUMMARY: ...Sanitizer"
 * line; UBSan reports "file:line:col: runtime error: ...". */
static const char *const report_marks[] = { "Sanitizer", "runtime error:" };

int log_clean(const server *s)
{
    FILE *f = fopen(s->log, "r");
    char line[1024];
    int clean = 1;
    while (f && fgets(line, sizeof line, f))
        for (size_t i = 0; i < sizeof report_marks / sizeof report_marks[0]; i++)
            if (strstr(line, report_marks[i])) {
                print_error("%s: %s", s->log, line);
                clean = 0;
                break;
            }
    if (f)
        fclose(f);
    return clean;
}

/* A server that did not stop: what each of its threads blocks and has
 * pending, where it sleeps, and (gdb permitting) its stacks, on stderr.  So a
 * CI log tells whether SIGTERM was never delivered, taken by some thread, or
 * delivered to a main thread stuck elsewhere. */
static void dump_stuck(pid_t pid)
{
    char cmd[512];
    snprintf(cmd, sizeof cmd,
             "for t in /proc/%d/task/*; do echo \"# thread $(basename $t) $(cat $t/comm) wchan=$(cat $t/wchan)\"; "
             "grep -E '^(State|SigPnd|ShdPnd|SigBlk|SigIgn|SigCgt):' $t/status; done 1>&2; "
             "command -v gdb >/dev/null && timeout 30 gdb -q -batch -p %d -ex 'thread apply all bt 12' 1>&2 2>&1",
             (int)pid, (int)pid);
    print_error("server pid %d did not stop within 40 s of SIGTERM; its threads:\n", (int)pid);
    fflush(NULL);
    if (system(cmd) == -1)
        print_error("cannot run the dump\n");
}

int server_stop(server *s)
{
    kill(s->pid, SIGTERM);
    int status = wait_child(s->pid, 40);
    if (status == -1) {
        dump_stuck(s->pid);
        kill_child(s->pid);
    }
    untrack(s->pid);
    s->pid = 0;
    return log_clean(s) ? status : -2;
}

/* The single translation of a /translate reply (malloc'ed), or NULL with
 * what is wrong in why. */
char *reply_text(const reply *r, char *why, size_t why_len)
{
    json_error_t e;
    json_t *j = r->body ? json_loadb(r->body, r->len, 0, &e) : NULL;
    json_t *tr = json_object_get(j, "translations");
    const char *t = json_string_value(json_object_get(json_array_get(tr, 0), "text"));
    char *out = NULL;
    if (!j)
        snprintf(why, why_len, "not JSON: %.200s", r->body ? r->body : "(no body)");
    else if (json_array_size(tr) != 1 || !t || !*t)
        snprintf(why, why_len, "no translation: %.200s", r->body);
    else
        out = strdup(t);
    json_decref(j);
    return out;
}

/* The value of a /metrics sample line "prefix value", or -1. */
double metric(const server *s, const char *prefix) { return metric_auth(s, prefix, NULL); }

double metric_auth(const server *s, const char *prefix, const char *auth)
{
    req_opts o = { .extra = { auth } };
    reply r = http_req(s, "/metrics", &o);
    double v = -1;
    size_t n = strlen(prefix);
    for (char *line = r.body; line && *line;) {
        char *nl = strchr(line, '\n');
        if (strncmp(line, prefix, n) == 0 && line[n] == ' ')
            v = atof(line + n + 1);
        line = nl ? nl + 1 : NULL;
    }
    reply_free(&r);
    return v;
}

json_t *load_jsonl(const char *path)
{
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    json_t *list = json_array();
    char *line = NULL;
    size_t cap = 0;
    while (getline(&line, &cap, f) > 0) {
        json_error_t je;
        json_t *j = json_loads(line, 0, &je);
        assert_non_null(j);
        json_array_append_new(list, j);
    }
    free(line);
    fclose(f);
    return list;
}

/* Asserts the status and returns the parsed body (caller decrefs). */
json_t *expect_json(reply *r, long status)
{
    if (r->status != status)
        print_error("expected %ld, got %ld (curl %d): %.400s\n", status, r->status, r->curl_rc,
                    r->body ? r->body : "");
    assert_int_equal(r->status, status);
    json_t *j = reply_json(r);
    assert_non_null(j);
    return j;
}

int ids_of(json_t *a, int32_t *out, int cap)
{
    int n = (int)json_array_size(a);
    assert_true(n <= cap);
    for (int i = 0; i < n; i++)
        out[i] = (int32_t)json_integer_value(json_array_get(a, (size_t)i));
    return n;
}

static size_t collect_buf(char *data, size_t size, size_t n, void *ud)
{
    http_buf *b = ud;
    char *p = realloc(b->p, b->n + size * n + 1);
    if (!p)
        return 0;
    memcpy(p + b->n, data, size * n);
    b->p = p;
    b->n += size * n;
    b->p[b->n] = 0;
    return size * n;
}

long post_file(const server *s, const char *name, const char *data, size_t len, http_buf *out, long timeout_ms, ...)
{
    CURL *c = curl_easy_init();
    curl_mime *m = curl_mime_init(c);
    if (name) {
        curl_mimepart *p = curl_mime_addpart(m);
        curl_mime_name(p, "file");
        curl_mime_filename(p, name);
        curl_mime_data(p, data, len);
    }
    va_list ap;
    va_start(ap, timeout_ms);
    for (const char *k; (k = va_arg(ap, const char *));) {
        curl_mimepart *p = curl_mime_addpart(m);
        curl_mime_name(p, k);
        curl_mime_data(p, va_arg(ap, const char *), CURL_ZERO_TERMINATED);
    }
    va_end(ap);
    char url[256];
    snprintf(url, sizeof url, "%s/translate_file", s->base);
    memset(out, 0, sizeof *out);
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_MIMEPOST, m);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, collect_buf);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, out);
    curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, timeout_ms ? timeout_ms : 120000L);
    long status = 0;
    if (curl_easy_perform(c) == CURLE_OK)
        curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
    curl_mime_free(m);
    curl_easy_cleanup(c);
    return status;
}

/* The model's translation of text, as POST /translate gives it (placeholders on, its default). */
char *translate_en_fr(const server *s, const char *text)
{
    json_t *q = json_pack("{s:s,s:s}", "text", text, "model", "en-fr");
    char *body = json_dumps(q, 0);
    reply r = post(s, "/translate", body);
    char why[256];
    char *t = reply_text(&r, why, sizeof why);
    if (!t)
        print_error("%s\n", why);
    reply_free(&r);
    free(body);
    json_decref(q);
    return t;
}

static int ascii_sp(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

/* s without its leading and trailing ASCII whitespace (malloc'd). */
char *trimmed_copy(const char *s)
{
    while (*s && ascii_sp(*s))
        s++;
    size_t n = strlen(s);
    while (n && ascii_sp(s[n - 1]))
        n--;
    return strndup(s, n);
}

void harness_write_file(const char *path, const char *data, size_t len)
{
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(data, 1, len, f), len);
    fclose(f);
}

/* The file translated: its rendering fetched; *len its size. */
char *translate_file_en_fr(const server *s, const char *name, const char *data, size_t len, const char *want_name, const char *want_mime,
                        size_t *out_len)
{
    http_buf b;
    long st = post_file(s, name, data, len, &b, 300000L, "source", "en", "target", "fr", NULL);
    if (st != 200)
        print_error("%s: %ld %s\n", name, st, b.p ? b.p : "");
    assert_int_equal(st, 200);
    json_error_t e;
    json_t *j = json_loads(b.p, 0, &e);
    const char *url = json_string_value(json_object_get(j, "translatedFileUrl"));
    assert_non_null(url);
    assert_non_null(strstr(url, want_name));
    reply r = get(s, strchr(strstr(url, "://") + 3, '/'));
    assert_int_equal(r.status, 200);
    char ct[128];
    assert_true(header(&r, "Content-Type", ct, sizeof ct));
    assert_non_null(strstr(ct, want_mime));
    char *out = malloc(r.len + 1);
    memcpy(out, r.body, r.len);
    out[r.len] = 0;
    *out_len = r.len;
    reply_free(&r);
    json_decref(j);
    free(b.p);
    return out;
}

static void link_into(const char *from, const char *dir, const char *name)
{
    char src[1400], dst[1400], cwd[1024];
    assert_non_null(getcwd(cwd, sizeof cwd));
    snprintf(src, sizeof src, "%s/%s/%s", cwd, from, name);
    snprintf(dst, sizeof dst, "%s/%s", dir, name);
    unlink(dst);                                /* made again by a test that changes one file */
    assert_int_equal(symlink(src, dst), 0);
}

void harness_model_link(const char *from, const char *dir, const char *source, const char *target)
{
    static const char *const files[] = { "config.json", "generation_config.json", "model.safetensors", "source.spm",
                                         "target.spm", "special_tokens_map.json", "vocab.json" };
    assert_true(mkdir(dir, 0755) == 0 || errno == EEXIST);
    for (size_t i = 0; i < sizeof files / sizeof *files; i++)
        link_into(from, dir, files[i]);
    if (!source) {
        link_into(from, dir, "tokenizer_config.json");
        return;
    }
    char path[1400], json[256];
    snprintf(path, sizeof path, "%s/tokenizer_config.json", dir);
    int n = snprintf(json, sizeof json, "{\"source_lang\": \"%s\", \"target_lang\": \"%s\"}\n", source, target);
    unlink(path);
    harness_write_file(path, json, (size_t)n);
}
