/* loadgen: closed-loop HTTP load on mtserve's POST /translate (libcurl).
 *
 *   loadgen --url http://127.0.0.1:PORT/translate --input FILE [--n 64] [--clients 8]
 *           [--requests 256] [--seconds 20] [--beam 1] [--max-length 0] [--stream 0]
 *
 * `clients` threads, each with its own keep-alive connection, send one sentence
 * per request (the first n lines of FILE, taken in turn) and wait for the reply
 * before sending the next.  Stops after `requests` requests in all or
 * `seconds`, whichever comes first.  Only 127.0.0.1 / localhost URLs are
 * accepted.  Prints one JSON line: successful requests (HTTP 200), errors
 * (anything else, e.g. 503 when the queue is full), seconds, successful
 * requests/s, p50/p99 latency of the successful ones (ms).
 *
 * --stream 1 asks for server-sent events ("stream": true): a request counts
 * as successful when it ends with its done event; the line adds the time to
 * the first token event (p50/p99 ms), the token events received, their rate
 * over the whole run (tokens/s streamed, all clients) and the median rate of
 * one stream from its first token to its done event. */
#include <curl/curl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "bench_util.h"

static const char *url;
static char **bodies;
static int n_bodies, max_requests;
static double t_end;
static atomic_int next_req, n_errors;
static double *lat;             /* [max_requests] seconds, by request number */
static double *ttft, *rate;     /* [max_requests] streaming: time to first token, tokens/s of the stream */
static atomic_int n_done;
static atomic_long n_tokens;
static int stream;

static size_t sink(char *p, size_t sz, size_t n, void *u) { return sz * n; }

/* One streamed reply as it arrives: token events counted (a "data: {\"index\""
 * line each), the first one timed; the done event seen.  A line may straddle
 * two reads: the tail of the last one is kept. */
typedef struct {
    double t0, t_first;
    int    tokens, done;
    char   tail[32];
} stream_state;

static size_t on_events(char *p, size_t sz, size_t n, void *u)
{
    stream_state *s = u;
    size_t k = sz * n, tl = strlen(s->tail);
    char *buf = malloc(tl + k + 1);
    if (!buf)
        return 0;
    memcpy(buf, s->tail, tl);
    memcpy(buf + tl, p, k);
    buf[tl + k] = 0;
    char *line = buf, *nl;
    while ((nl = strchr(line, '\n'))) {
        *nl = 0;
        if (!strncmp(line, "data: {\"index\"", 14) && !s->tokens++)
            s->t_first = bench_now();
        if (!strcmp(line, "event: done"))
            s->done = 1;
        line = nl + 1;
    }
    snprintf(s->tail, sizeof s->tail, "%s", strlen(line) < sizeof s->tail ? line : "");
    free(buf);
    return k;
}

static void *client(void *arg)
{
    CURL *c = curl_easy_init();
    struct curl_slist *h = curl_slist_append(NULL, "Content-Type: application/json");
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, sink);
    curl_easy_setopt(c, CURLOPT_TIMEOUT, 120L);
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    for (;;) {
        int k = atomic_fetch_add(&next_req, 1);
        if (k >= max_requests || bench_now() > t_end)
            break;
        curl_easy_setopt(c, CURLOPT_POSTFIELDS, bodies[k % n_bodies]);
        stream_state ss = { .t0 = bench_now() };
        if (stream) {
            curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_events);
            curl_easy_setopt(c, CURLOPT_WRITEDATA, &ss);
        }
        double t0 = bench_now();
        CURLcode rc = curl_easy_perform(c);
        long code = 0;
        curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &code);
        if (rc != CURLE_OK || code != 200 || (stream && (!ss.done || !ss.tokens)))
            atomic_fetch_add(&n_errors, 1);     /* lat[k] stays 0: not counted */
        else {
            lat[k] = bench_now() - t0;
            if (stream) {
                ttft[k] = ss.t_first - t0;
                rate[k] = ss.tokens / (lat[k] - ttft[k] > 1e-6 ? lat[k] - ttft[k] : 1e-6);
                atomic_fetch_add(&n_tokens, ss.tokens);
            }
            atomic_fetch_add(&n_done, 1);
        }
    }
    curl_slist_free_all(h);
    curl_easy_cleanup(c);
    return NULL;
}

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* JSON string escape of s into a malloc'd buffer. */
static char *jstr(const char *s)
{
    size_t n = strlen(s);
    char *o = malloc(6 * n + 3), *p = o;
    *p++ = '"';
    for (; *s; s++) {
        unsigned char ch = (unsigned char)*s;
        if (ch == '"' || ch == '\\')
            *p++ = '\\', *p++ = (char)ch;
        else if (ch < 0x20)
            p += sprintf(p, "\\u%04x", ch);
        else
            *p++ = (char)ch;
    }
    *p++ = '"';
    *p = 0;
    return o;
}

int main(int argc, char **argv)
{
    const char *input = "tests/fixtures/tokenizer/inputs/test.en.txt";
    int n = 64, clients = 8, beam = 1, max_length = 0;
    double seconds = 20;
    max_requests = 256;
    for (int i = 1; i + 1 < argc; i += 2) {
        const char *a = argv[i], *v = argv[i + 1];
        if (!strcmp(a, "--url")) url = v;
        else if (!strcmp(a, "--input")) input = v;
        else if (!strcmp(a, "--n")) n = atoi(v);
        else if (!strcmp(a, "--clients")) clients = atoi(v);
        else if (!strcmp(a, "--requests")) max_requests = atoi(v);
        else if (!strcmp(a, "--seconds")) seconds = atof(v);
        else if (!strcmp(a, "--beam")) beam = atoi(v);
        else if (!strcmp(a, "--max-length")) max_length = atoi(v);
        else if (!strcmp(a, "--stream")) stream = atoi(v);
        else {
            fprintf(stderr, "loadgen: unknown option %s\n", a);
            return 2;
        }
    }
    if (!url || (strncmp(url, "http://127.0.0.1:", 17) && strncmp(url, "http://localhost:", 17))) {
        fprintf(stderr, "loadgen: --url must be http://127.0.0.1:PORT/... (local only)\n");
        return 2;
    }
    if (clients < 1 || clients > 1024 || max_requests < 1) {
        fprintf(stderr, "loadgen: bad --clients or --requests\n");
        return 2;
    }
    FILE *f = fopen(input, "rb");
    if (!f) {
        perror(input);
        return 1;
    }
    bodies = calloc((size_t)n, sizeof *bodies);
    char *line = NULL;
    size_t cap = 0;
    ssize_t got;
    while (n_bodies < n && (got = getline(&line, &cap, f)) >= 0) {
        while (got > 0 && (line[got - 1] == '\n' || line[got - 1] == '\r'))
            line[--got] = 0;
        char *js = jstr(line);
        size_t len = strlen(js) + 128;
        bodies[n_bodies] = malloc(len);
        int at = snprintf(bodies[n_bodies], len, "{\"text\": %s, \"beam_size\": %d", js, beam);
        if (max_length > 0)
            at += snprintf(bodies[n_bodies] + at, len - (size_t)at, ", \"max_length\": %d", max_length);
        snprintf(bodies[n_bodies] + at, len - (size_t)at, "%s}", stream ? ", \"stream\": true" : "");
        free(js);
        n_bodies++;
    }
    free(line);
    fclose(f);
    if (!n_bodies) {
        fprintf(stderr, "loadgen: no input lines\n");
        return 1;
    }
    curl_global_init(CURL_GLOBAL_DEFAULT);
    lat = calloc((size_t)max_requests, sizeof *lat);
    ttft = calloc((size_t)max_requests, sizeof *ttft);
    rate = calloc((size_t)max_requests, sizeof *rate);
    pthread_t *th = calloc((size_t)clients, sizeof *th);
    double t0 = bench_now();
    t_end = t0 + seconds;
    for (int i = 0; i < clients; i++)
        pthread_create(&th[i], NULL, client, NULL);
    for (int i = 0; i < clients; i++)
        pthread_join(th[i], NULL);
    double dt = bench_now() - t0;
    int done = atomic_load(&n_done);
    /* lat[i] > 0 exactly for the successful requests */
    double *l = malloc(sizeof(double) * (size_t)(done ? done : 1));
    int k = 0;
    for (int i = 0; i < max_requests && k < done; i++)
        if (lat[i] > 0)
            l[k++] = lat[i];
    qsort(l, (size_t)k, sizeof *l, cmp);
    double p50 = k ? l[(k - 1) / 2] : 0, p99 = k ? l[(int)((k - 1) * 0.99 + 0.5)] : 0;
    printf("{\"clients\": %d, \"requests\": %d, \"errors\": %d, \"seconds\": %.3f, \"req_per_s\": %.2f, "
           "\"p50_ms\": %.1f, \"p99_ms\": %.1f",
           clients, k, atomic_load(&n_errors), dt, k / dt, p50 * 1e3, p99 * 1e3);
    if (stream) {
        double *tf = malloc(sizeof(double) * (size_t)(k ? k : 1)), *rt = malloc(sizeof(double) * (size_t)(k ? k : 1));
        int m = 0;
        for (int i = 0; i < max_requests && m < k; i++)
            if (lat[i] > 0)
                tf[m] = ttft[i], rt[m++] = rate[i];
        qsort(tf, (size_t)m, sizeof *tf, cmp);
        qsort(rt, (size_t)m, sizeof *rt, cmp);
        printf(", \"ttft_p50_ms\": %.1f, \"ttft_p99_ms\": %.1f, \"tokens\": %ld, \"tokens_per_s\": %.1f, "
               "\"stream_tokens_per_s_p50\": %.1f",
               m ? tf[(m - 1) / 2] * 1e3 : 0, m ? tf[(int)((m - 1) * 0.99 + 0.5)] * 1e3 : 0,
               atomic_load(&n_tokens), atomic_load(&n_tokens) / dt, m ? rt[(m - 1) / 2] : 0);
        free(tf);
        free(rt);
    }
    printf("}\n");
    curl_global_cleanup();
    return 0;
}
