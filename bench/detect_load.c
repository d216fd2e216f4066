/* detect_load: POST /detect's latency with the decoders idle and with every decoder
 * row busy translating (issue 48: detection must not wait for translation).
 *
 *   detect_load --url http://127.0.0.1:PORT [--n 1000] [--every-ms 10] [--clients 24] [--warmup 3]
 *               [--probe-rt 1]
 *
 * Run by bench/detect_load.sh, which starts the servers.  One probe thread sends
 * POST /detect (LibreTranslate's {"q"}) on one keep-alive connection, one short
 * held-out line at a time (the first n/2 lines of 3-10 words of
 * tests/fixtures/tokenizer/inputs/test.en.txt and of test.fr.txt, alternating),
 * one request every every-ms, and times each from send to the whole reply.
 * Phase "idle": nothing else.  Phase "busy": clients threads first translate in a
 * closed loop (each its own connection; POST /translate of held-out lines of 15
 * words or more, half en->fr with "model": "en-fr", half fr->en with "model":
 * "fr-en"), warmup seconds, then the probe runs while they go on.  Read from
 * /metrics over the busy probe: the mean decoder rows of a continuous-batching
 * step, and the queue depth (requests waiting for rows) sampled every probe.
 * Prints one Markdown row per phase: requests, answers right (the line's
 * language first), latency mean / p50 / p90 / p99 / max in ms, and for busy the
 * translations done meanwhile (and their mean latency: what a detection that
 * needed a decoder would wait), the mean rows per step and the mean queue depth.
 * --probe-rt 1: the probe thread alone in SCHED_RR priority 1 (CAP_SYS_NICE),
 * the translating clients in SCHED_OTHER: this client shares the server's cores,
 * and a remote client's probe would not wait behind the server's decoders for a
 * core of its own; the translations' latency then shows what the server's
 * --http-sched costs them, not what a real-time load client would take. */
#include <curl/curl.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "bench_util.h"

#define MAX_LINES 4096

static char base[256];
static char *short_line[MAX_LINES], *long_line[2][MAX_LINES];
static const char *short_lang[MAX_LINES];
static int n_short, n_long[2];
static atomic_int stop, n_translated, n_translate_errors;
static atomic_long translate_us;            /* the successful translations' latencies, summed */

typedef struct {
    char  *p;
    size_t n, cap;
} buf;

static size_t collect(char *p, size_t sz, size_t n, void *u)
{
    buf *b = u;
    size_t k = sz * n;
    if (b->n + k + 1 > b->cap) {
        size_t cap = (b->n + k + 1) * 2;
        char *q = realloc(b->p, cap);
        if (!q)
            return 0;
        b->p = q;
        b->cap = cap;
    }
    memcpy(b->p + b->n, p, k);
    b->n += k;
    b->p[b->n] = 0;
    return k;
}

static int count_words(const char *s)
{
    int n = 0, in = 0;
    for (; *s; s++) {
        int sp = *s == ' ' || *s == '\t';
        n += !sp && !in;
        in = !sp;
    }
    return n;
}

/* A JSON string of s (ASCII escapes only: the lines are UTF-8 without controls). */
static char *json_str(const char *s)
{
    size_t n = strlen(s);
    char *o = malloc(2 * n + 3), *q = o;
    *q++ = '"';
    for (; *s; s++) {
        if (*s == '"' || *s == '\\')
            *q++ = '\\';
        *q++ = *s;
    }
    *q++ = '"';
    *q = 0;
    return o;
}

static void read_lines(const char *path, const char *lang, int side, int n_short_max)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        perror(path);
        exit(1);
    }
    char line[4096];
    int taken = 0;
    while (fgets(line, sizeof line, f)) {
        line[strcspn(line, "\n")] = 0;
        int w = count_words(line);
        if (w >= 3 && w <= 10 && taken < n_short_max && n_short < MAX_LINES) {
            short_line[n_short] = json_str(line);
            short_lang[n_short++] = lang;
            taken++;
        } else if (w >= 15 && n_long[side] < MAX_LINES) {
            long_line[side][n_long[side]++] = json_str(line);
        }
    }
    fclose(f);
}

static CURL *handle(buf *b, struct curl_slist *h)
{
    CURL *c = curl_easy_init();
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, collect);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, b);
    curl_easy_setopt(c, CURLOPT_TIMEOUT, 120L);
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    return c;
}

/* One translating client: side 0 en->fr, 1 fr->en, lines in turn from its own offset. */
static void *translator(void *arg)
{
    long id = (long)arg;
    struct sched_param sp = {.sched_priority = 0};
    pthread_setschedparam(pthread_self(), SCHED_OTHER, &sp);   /* not the probe's class (--probe-rt) */
    int side = (int)(id % 2);
    static const char *const model[2] = {"en-fr", "fr-en"};
    struct curl_slist *h = curl_slist_append(NULL, "Content-Type: application/json");
    buf b = {0};
    CURL *c = handle(&b, h);
    char url[300], body[8192];
    snprintf(url, sizeof url, "%s/translate", base);
    curl_easy_setopt(c, CURLOPT_URL, url);
    for (int i = (int)id * 7; !atomic_load(&stop); i++) {
        snprintf(body, sizeof body, "{\"text\": %s, \"model\": \"%s\"}", long_line[side][i % n_long[side]],
                 model[side]);
        curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
        b.n = 0;
        long code = 0;
        double t0 = bench_now();
        if (curl_easy_perform(c) == CURLE_OK)
            curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &code);
        if (code == 200) {
            atomic_fetch_add(&translate_us, (long)(1e6 * (bench_now() - t0)));
            atomic_fetch_add(&n_translated, 1);
        } else
            atomic_fetch_add(&n_translate_errors, 1);
    }
    curl_easy_cleanup(c);
    curl_slist_free_all(h);
    free(b.p);
    return NULL;
}

/* A sample of /metrics: "name value" lines' value of the first line starting with prefix. */
static double metric(CURL *c, buf *b, const char *prefix)
{
    char url[300];
    snprintf(url, sizeof url, "%s/metrics", base);
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_HTTPGET, 1L);
    b->n = 0;
    if (curl_easy_perform(c) != CURLE_OK || !b->p)
        return -1;
    size_t k = strlen(prefix);
    for (char *l = b->p; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL)
        if (strncmp(l, prefix, k) == 0 && l[k] == ' ')
            return atof(l + k + 1);
    return -1;
}

static int by_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* n probes, one every every_ms; the row printed. */
static void probe(const char *phase, int n, int every_ms)
{
    struct curl_slist *h = curl_slist_append(NULL, "Content-Type: application/json");
    buf b = {0}, mb = {0};
    CURL *c = handle(&b, h), *m = handle(&mb, NULL);
    char url[300], body[4096];
    snprintf(url, sizeof url, "%s/detect", base);
    double *lat = malloc(sizeof *lat * (size_t)n), queue = 0;
    int right = 0, errors = 0, t_before = atomic_load(&n_translated);
    long us_before = atomic_load(&translate_us);
    double rows0 = metric(m, &mb, "mtserve_batch_rows_sum"), steps0 = metric(m, &mb, "mtserve_batch_rows_count");
    double t_start = bench_now();
    for (int i = 0; i < n; i++) {
        int k = (i % 2) * (n_short / 2) + (i / 2) % (n_short / 2);      /* en, fr, en, ... */
        snprintf(body, sizeof body, "{\"q\": %s}", short_line[k]);
        curl_easy_setopt(c, CURLOPT_URL, url);
        curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
        b.n = 0;
        double t0 = bench_now();
        long code = 0;
        if (curl_easy_perform(c) == CURLE_OK)
            curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &code);
        lat[i] = 1e3 * (bench_now() - t0);
        char want[32];
        snprintf(want, sizeof want, "\"language\":\"%s\"", short_lang[k]);
        char *first = b.p ? strstr(b.p, "\"language\":\"") : NULL;
        right += code == 200 && first && strncmp(first, want, strlen(want)) == 0;
        errors += code != 200;
        double q = metric(m, &mb, "mtserve_queue_depth");
        queue += q > 0 ? q : 0;
        double next = t_start + (i + 1) * every_ms / 1e3;
        while (bench_now() < next)
            usleep(200);
    }
    double rows = metric(m, &mb, "mtserve_batch_rows_sum") - rows0;
    double steps = metric(m, &mb, "mtserve_batch_rows_count") - steps0;
    int translated = atomic_load(&n_translated) - t_before;
    double t_ms = translated ? (atomic_load(&translate_us) - us_before) / 1e3 / translated : 0;
    double sum = 0;
    for (int i = 0; i < n; i++)
        sum += lat[i];
    qsort(lat, (size_t)n, sizeof *lat, by_double);
    printf("| %s | %d | %d (%.1f%%) | %.3f | %.3f | %.3f | %.3f | %.3f | %s%d (%.0f ms each) | %.1f | %.1f |\n", phase,
           n, right, 100.0 * right / n, sum / n, lat[n / 2], lat[(size_t)(n * 0.9)], lat[(size_t)(n * 0.99)],
           lat[n - 1], errors ? "errors! " : "", translated, t_ms, steps > 0 ? rows / steps : 0, queue / n);
    fflush(stdout);
    free(lat);
    curl_easy_cleanup(c);
    curl_easy_cleanup(m);
    curl_slist_free_all(h);
    free(b.p);
    free(mb.p);
}

int main(int argc, char **argv)
{
    const char *url = NULL, *label = "";
    int n = 1000, every_ms = 10, clients = 24, warmup = 3, probe_rt = 0;
    for (int i = 1; i + 1 < argc; i += 2) {
        const char *a = argv[i], *v = argv[i + 1];
        if (!strcmp(a, "--url"))
            url = v;
        else if (!strcmp(a, "--n"))
            n = atoi(v);
        else if (!strcmp(a, "--every-ms"))
            every_ms = atoi(v);
        else if (!strcmp(a, "--clients"))
            clients = atoi(v);
        else if (!strcmp(a, "--warmup"))
            warmup = atoi(v);
        else if (!strcmp(a, "--probe-rt"))
            probe_rt = atoi(v);
        else if (!strcmp(a, "--label"))
            label = v;
        else {
            fprintf(stderr, "unknown option %s\n", a);
            return 2;
        }
    }
    if (!url || (strncmp(url, "http://127.0.0.1:", 17) && strncmp(url, "http://localhost:", 17)) || n < 2 ||
        clients < 2 || clients > 256) {
        fprintf(stderr, "usage: detect_load --url http://127.0.0.1:PORT [--n N] [--every-ms MS] [--clients C] "
                        "[--warmup S] [--probe-rt 0|1] [--label TEXT]\n");
        return 2;
    }
    snprintf(base, sizeof base, "%s", url);
    read_lines("tests/fixtures/tokenizer/inputs/test.en.txt", "en", 0, 500);
    read_lines("tests/fixtures/tokenizer/inputs/test.fr.txt", "fr", 1, 500);
    if (n_short != 1000 || n_long[0] < 50 || n_long[1] < 50) {
        fprintf(stderr, "run from the repository root (%d short lines, %d + %d long)\n", n_short, n_long[0], n_long[1]);
        return 1;
    }
    if (probe_rt) {
        struct sched_param sp = {.sched_priority = 1};
        int rc = pthread_setschedparam(pthread_self(), SCHED_RR, &sp);
        if (rc) {
            fprintf(stderr, "detect_load: --probe-rt: SCHED_RR: %s (needs CAP_SYS_NICE)\n", strerror(rc));
            return 1;
        }
    }
    curl_global_init(CURL_GLOBAL_DEFAULT);
    char phase[300];
    snprintf(phase, sizeof phase, "%s idle", label);
    probe(phase, n, every_ms);
    pthread_t t[256];
    for (long i = 0; i < clients; i++)
        pthread_create(&t[i], NULL, translator, (void *)i);
    sleep((unsigned)warmup);
    snprintf(phase, sizeof phase, "%s busy: %d clients translating", label, clients);
    probe(phase, n, every_ms);
    atomic_store(&stop, 1);
    for (int i = 0; i < clients; i++)
        pthread_join(t[i], NULL);
    if (atomic_load(&n_translate_errors))
        fprintf(stderr, "detect_load: %d translations failed\n", atomic_load(&n_translate_errors));
    curl_global_cleanup();
    return 0;
}
