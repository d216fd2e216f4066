/* test_models_demand: models loaded on demand (--model-dir, --memory-budget;
 * server/service/residency.c) over real HTTP (cmocka + libcurl).
 *
 * A temp --model-dir holds six models made from models/tiny (its files
 * symlinked, tokenizer_config.json written with a pair of its own: en-fr,
 * fr-de, de-es, es-it, it-nl, nl-pt, so routing is well defined and en -> de
 * goes through fr), a seventh, "zbig", from models/en-fr labelled en -> ru,
 * which is larger than the whole budget, and two directories that are not
 * models ("notes": no config; "bad id": not a valid id), which are skipped.
 *
 * A reference server first serves the six with --model (all loaded at
 * start): its translations, and one model's bytes (weights + a session, as
 * /models reports them).  The server under test gets --memory-budget 2.5x
 * those bytes: two fit, a third does not.
 *
 *   test_listing      before any request: /health 200, /models lists all
 *                     seven with loaded false and no bytes, /languages every
 *                     pair (pivots included), no load counted
 *   test_round_robin  client threads round-robin over the six (by pair and by
 *                     name, and one pivot) concurrently: every reply 200 and
 *                     equal to the reference; a sampler polls /metrics
 *                     throughout: never more than two models, nor more bytes
 *                     than the budget, resident; loads and unloads counted
 *   test_in_use       a long streamed request holds en-fr while the other
 *                     five are loaded in turn through the one slot left:
 *                     en-fr is not unloaded while it is in use, and the stream
 *                     ends with the reference's translation
 *   test_too_big      zbig: a clear 500 naming it and the budget, at once;
 *                     /score (a worker's blocking acquire) loads a model too
 *
 * MTSERVE_TSAN=1 (make tsan): fewer requests per client.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include <ftw.h>
#include <pthread.h>
#include <stdatomic.h>
#include <sys/stat.h>
#include <unistd.h>

#include "harness.h"

#define N_MODELS 6
#define N_TEXTS  4
#define CLIENTS  4

static const char *const ids[N_MODELS] = { "en-fr", "fr-de", "de-es", "es-it", "it-nl", "nl-pt" };
static const char *const texts[N_TEXTS] = { "hello world", "The cat sat on the mat.", "bindings",
                                            "Good morning, how are you today?" };
static char *ref[N_MODELS][N_TEXTS];    /* the reference server's translations */
static char *ref_pivot;                 /* en -> de of texts[0]: en-fr then fr-de */
static char *long_text, *ref_long;      /* the long request's text and en-fr's translation */
static size_t model_bytes, budget;
static char tmp[256];
static server srv;
static int tsan;

/* ---- model directories ------------------------------------------------------------ */

/* tmp/id: from_dir's files, labelled source -> target. */
static void make_model(const char *from_dir, const char *id, const char *source, const char *target)
{
    char dir[512];
    snprintf(dir, sizeof dir, "%s/%s", tmp, id);
    harness_model_link(from_dir, dir, source, target);
}

static int rm_entry(const char *p, const struct stat *sb, int flag, struct FTW *ftw)
{
    (void)sb, (void)flag, (void)ftw;
    return remove(p);
}

/* ---- requests ---------------------------------------------------------------------- */

static char *translate_body(const char *text, const char *model, const char *source, const char *target)
{
    json_t *b = json_pack("{s:s}", "text", text);
    if (model)
        json_object_set_new(b, "model", json_string(model));
    if (source)
        json_object_set_new(b, "source", json_string(source));
    if (target)
        json_object_set_new(b, "target", json_string(target));
    char *s = json_dumps(b, 0);
    json_decref(b);
    return s;
}

/* The translation (malloc'd), or NULL with the reply printed. */
static char *translate(const server *s, CURL *c, const char *text, const char *model, const char *source,
                       const char *target)
{
    char *body = translate_body(text, model, source, target), why[256];
    req_opts o = { .body = body };
    reply r = c ? http_req_on(c, s, "/translate", &o) : http_req(s, "/translate", &o);
    char *t = r.status == 200 ? reply_text(&r, why, sizeof why) : NULL;
    if (!t)
        print_message("# /translate %s -> %ld %s\n", body, r.status, r.body ? r.body : "");
    reply_free(&r);
    free(body);
    return t;
}

static double metric_sum(const server *s, const char *name)
{
    double sum = 0;
    for (int i = 0; i < N_MODELS; i++) {
        char p[128];
        snprintf(p, sizeof p, "%s{model=\"%s\"}", name, ids[i]);
        double v = metric(s, p);
        sum += v > 0 ? v : 0;
    }
    return sum;
}

static double model_metric(const server *s, const char *name, const char *id)
{
    char p[128];
    snprintf(p, sizeof p, "%s{model=\"%s\"}", name, id);
    return metric(s, p);
}

/* text's beam-4 translation by model id (malloc'd), or NULL. */
static char *beam_translate(const server *s, const char *text, const char *id)
{
    json_t *b = json_pack("{s:s,s:s,s:i}", "text", text, "model", id, "beam_size", 4);
    char *body = json_dumps(b, 0), why[256];
    json_decref(b);
    req_opts o = { .body = body };
    reply r = http_req(s, "/translate", &o);
    char *t = r.status == 200 ? reply_text(&r, why, sizeof why) : NULL;
    if (!t)
        print_message("# beam /translate -> %ld %s\n", r.status, r.body ? r.body : "");
    reply_free(&r);
    free(body);
    return t;
}

/* ---- setup: the reference, then the server on demand ------------------------------ */

static int setup(void **state)
{
    (void)state;
    tsan = getenv("MTSERVE_TSAN") != NULL;
    snprintf(tmp, sizeof tmp, "/tmp/mt_test_demand_XXXXXX");
    if (!mkdtemp(tmp))
        return -1;
    static const char *const pairs[N_MODELS][2] = { { "en", "fr" }, { "fr", "de" }, { "de", "es" },
                                                    { "es", "it" }, { "it", "nl" }, { "nl", "pt" } };
    for (int i = 0; i < N_MODELS; i++)
        make_model("models/tiny", ids[i], pairs[i][0], pairs[i][1]);
    make_model("models/en-fr", "zbig", "en", "ru");
    char notes[600], bad[600];
    snprintf(notes, sizeof notes, "%s/notes", tmp);
    snprintf(bad, sizeof bad, "%s/bad id", tmp);
    if (mkdir(notes, 0755) || mkdir(bad, 0755))
        return -1;
    /* the long request: many sentences, each decoded to the model's max_length */
    size_t cap = 1 << 14, at = 0;
    long_text = malloc(cap);
    for (int i = 0; i < (tsan ? 24 : 80); i++)
        at += (size_t)snprintf(long_text + at, cap - at, "Sentence number %d is here. ", i);

    /* the reference: every model loaded at start */
    server ref_srv;
    char a[N_MODELS][600];
    const char *args[2 * N_MODELS + 3];
    for (int i = 0; i < N_MODELS; i++) {
        snprintf(a[i], sizeof a[i], "%s=%s/%s", ids[i], tmp, ids[i]);
        args[2 * i] = "--model", args[2 * i + 1] = a[i];
    }
    args[2 * N_MODELS] = "--queue-timeout", args[2 * N_MODELS + 1] = "600000";  /* the long beam job, sanitized */
    args[2 * N_MODELS + 2] = NULL;
    if (server_start(&ref_srv, args))
        return -1;
    for (int i = 0; i < N_MODELS; i++)
        for (int j = 0; j < N_TEXTS; j++)
            if (!(ref[i][j] = translate(&ref_srv, NULL, texts[j], ids[i], NULL, NULL)))
                return -1;
    ref_pivot = translate(&ref_srv, NULL, ref[0][0], "fr-de", NULL, NULL);
    ref_long = beam_translate(&ref_srv, long_text, "en-fr");
    reply r = get(&ref_srv, "/models");
    json_t *models = reply_json(&r);
    json_t *size = json_object_get(json_array_get(json_object_get(models, "models"), 0), "size");
    model_bytes = (size_t)(json_integer_value(json_object_get(size, "weight_bytes")) +
                           json_integer_value(json_object_get(size, "session_bytes")));
    json_decref(models);
    reply_free(&r);
    if (server_stop(&ref_srv) != 0 || !ref_pivot || !ref_long || model_bytes == 0)
        return -1;

    /* on demand: two fit the budget, three do not */
    budget = model_bytes * 5 / 2;
    char b[32];
    snprintf(b, sizeof b, "%zu", budget);
    const char *const dargs[] = { "--model-dir", tmp, "--memory-budget", b, "--load-timeout", "60",
                                  "--queue-timeout", "600000", NULL };
    print_message("# one model: %zu bytes (weights + a session); --memory-budget %zu\n", model_bytes, budget);
    return server_start(&srv, dargs);
}

static int teardown(void **state)
{
    (void)state;
    int rc = server_stop(&srv);
    nftw(tmp, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
    for (int i = 0; i < N_MODELS; i++)
        for (int j = 0; j < N_TEXTS; j++)
            free(ref[i][j]);
    free(ref_pivot);
    free(ref_long);
    free(long_text);
    return rc == 0 ? 0 : -1;
}

/* ---- tests -------------------------------------------------------------------------- */

static void test_listing(void **state)
{
    (void)state;
    reply h = get(&srv, "/health");
    assert_int_equal(h.status, 200);
    reply_free(&h);
    reply r = get(&srv, "/models");
    json_t *j = expect_json(&r, 200), *list = json_object_get(j, "models"), *m;
    assert_int_equal(json_array_size(list), N_MODELS + 1);     /* notes and "bad id" skipped */
    size_t k;
    int seen = 0;
    json_array_foreach(list, k, m) {
        const char *id = json_string_value(json_object_get(m, "id"));
        assert_false(json_is_true(json_object_get(m, "loaded")));
        assert_int_equal(json_integer_value(json_object_get(json_object_get(m, "size"), "resident_bytes")), 0);
        for (int i = 0; i < N_MODELS; i++)
            seen += strcmp(id, ids[i]) == 0;
    }
    assert_int_equal(seen, N_MODELS);
    json_decref(j);
    reply_free(&r);

    /* every pair, pivots too: en reaches fr directly and de, es, ... through the chain's first pivot */
    r = get(&srv, "/languages");
    j = expect_json(&r, 200);
    int pairs = 0, en_de = 0;
    json_array_foreach(j, k, m) {
        json_t *t;
        size_t q;
        json_array_foreach(json_object_get(m, "targets"), q, t) {
            pairs++;
            en_de |= !strcmp(json_string_value(json_object_get(m, "code")), "en") &&
                     !strcmp(json_string_value(t), "de");
        }
    }
    assert_true(en_de);
    assert_true(pairs >= N_MODELS + 1);         /* six direct pairs, zbig's, and pivots */
    json_decref(j);
    reply_free(&r);
    assert_true(metric_sum(&srv, "mtserve_model_loads_total") == 0);
    assert_true(metric(&srv, "mtserve_models_loaded") == 0);
}

typedef struct {
    int id, n, ok, wrong;
} client;

static void *client_main(void *arg)
{
    client *c = arg;
    static const char *const src[N_MODELS] = { "en", "fr", "de", "es", "it", "nl" };
    static const char *const tgt[N_MODELS] = { "fr", "de", "es", "it", "nl", "pt" };
    CURL *h = curl_easy_init();
    for (int i = 0; i < c->n; i++) {
        int m = (c->id + i) % N_MODELS, t = (c->id * 3 + i) % N_TEXTS;
        char *got = i % 2 ? translate(&srv, h, texts[t], ids[m], NULL, NULL)
                          : translate(&srv, h, texts[t], NULL, src[m], tgt[m]);
        if (got && strcmp(got, ref[m][t]) == 0)
            c->ok++;
        else
            c->wrong++;
        free(got);
        if (c->id == 0 && i % 6 == 5) {         /* now and then a pivot: two models, one after the other */
            got = translate(&srv, h, texts[0], NULL, "en", "de");
            if (got && strcmp(got, ref_pivot) == 0)
                c->ok++;
            else
                c->wrong++;
            free(got);
        }
    }
    curl_easy_cleanup(h);
    return NULL;
}

typedef struct {
    _Atomic int stop;
    int samples;
    double max_loaded, max_bytes;
} sampler;

/* One scrape of /metrics: the models loaded and the sum of their resident
 * bytes, as of one moment (one reply).  -1 when the scrape failed. */
static int scrape(double *loaded, double *bytes)
{
    reply r = get(&srv, "/metrics");
    *loaded = -1, *bytes = 0;
    for (const char *line = r.body; line && *line;) {
        const char *end = strchr(line, '\n');
        double v;
        if (sscanf(line, "mtserve_models_loaded %lf", &v) == 1)
            *loaded = v;
        else if (!strncmp(line, "mtserve_model_resident_bytes{", 29) && strchr(line, ' ') &&
                 sscanf(strchr(line, ' '), "%lf", &v) == 1)
            *bytes += v;
        line = end ? end + 1 : NULL;
    }
    reply_free(&r);
    return *loaded >= 0 ? 0 : -1;
}

static void *sampler_main(void *arg)
{
    sampler *s = arg;
    while (!atomic_load(&s->stop)) {
        double n, b;
        if (scrape(&n, &b) == 0) {
            if (n > s->max_loaded)
                s->max_loaded = n;
            if (b > s->max_bytes)
                s->max_bytes = b;
            s->samples++;
        }
        sleep_ms(5);
    }
    return NULL;
}

static void test_round_robin(void **state)
{
    (void)state;
    client cs[CLIENTS];
    pthread_t th[CLIENTS], st;
    sampler smp = { 0 };
    double t0 = now_s();
    assert_int_equal(pthread_create(&st, NULL, sampler_main, &smp), 0);
    for (int i = 0; i < CLIENTS; i++) {
        cs[i] = (client){ .id = i, .n = tsan ? 12 : 36 };
        assert_int_equal(pthread_create(&th[i], NULL, client_main, &cs[i]), 0);
    }
    int ok = 0, wrong = 0;
    for (int i = 0; i < CLIENTS; i++) {
        pthread_join(th[i], NULL);
        ok += cs[i].ok, wrong += cs[i].wrong;
    }
    atomic_store(&smp.stop, 1);
    pthread_join(st, NULL);
    double loads = metric_sum(&srv, "mtserve_model_loads_total"), unloads = metric_sum(&srv,
                                                                                      "mtserve_model_unloads_total");
    print_message("# %d clients: %d replies equal to the reference, %d not, in %.2f s; %.0f loads, %.0f unloads; "
                  "%d samples of /metrics: at most %.0f models, %.0f bytes resident (budget %zu)\n", CLIENTS, ok,
                  wrong, now_s() - t0, loads, unloads, smp.samples, smp.max_loaded, smp.max_bytes, budget);
    assert_int_equal(wrong, 0);
    assert_true(loads >= N_MODELS);
    assert_true(unloads >= N_MODELS - 2);
    assert_true(smp.max_loaded <= 2);
    assert_true(smp.max_bytes <= (double)budget);
    assert_true(metric(&srv, "mtserve_models_loaded") <= 2);
}

typedef struct {
    char *body;
    long status;
    char *text;
} stream_req;

/* POST a streamed /translate; the done event's translation. */
static void *stream_main(void *arg)
{
    stream_req *s = arg;
    json_t *b = json_pack("{s:s,s:s,s:b,s:i}", "text", long_text, "model", "en-fr", "stream", 1, "beam_size", 4);
    char *body = json_dumps(b, 0);
    json_decref(b);
    req_opts o = { .body = body };
    reply r = http_req(&srv, "/translate", &o);
    s->status = r.status;
    const char *done = r.body ? strstr(r.body, "event: done\ndata: ") : NULL;
    if (done) {
        json_t *j = json_loads(done + strlen("event: done\ndata: "), JSON_DISABLE_EOF_CHECK, NULL);
        const char *t = json_string_value(json_object_get(json_array_get(json_object_get(j, "translations"), 0),
                                                          "text"));
        s->text = t ? strdup(t) : NULL;
        json_decref(j);
    }
    reply_free(&r);
    free(body);
    return NULL;
}

/* en-fr's "in_use" in /models (-1: not found). */
static int in_use(const char *id)
{
    reply r = get(&srv, "/models");
    json_t *j = reply_json(&r), *m;
    size_t k;
    int n = -1;
    json_array_foreach(json_object_get(j, "models"), k, m)
        if (!strcmp(json_string_value(json_object_get(m, "id")), id))
            n = (int)json_integer_value(json_object_get(m, "in_use"));
    json_decref(j);
    reply_free(&r);
    return n;
}

static void test_in_use(void **state)
{
    (void)state;
    stream_req s = { 0 };
    pthread_t th;
    double t0 = now_s();
    assert_int_equal(pthread_create(&th, NULL, stream_main, &s), 0);
    int held = 0;
    for (int i = 0; i < 2000 && !held; i++) {    /* until the stream holds en-fr */
        held = in_use("en-fr") > 0;
        if (!held)
            sleep_ms(2);
    }
    double unloads0 = model_metric(&srv, "mtserve_model_unloads_total", "en-fr");
    int rounds = 0, still_held = held;
    for (int i = 1; held && i < N_MODELS; i++) {       /* the other five, through the one slot left */
        char *got = translate(&srv, NULL, texts[1], ids[i], NULL, NULL);
        assert_non_null(got);
        assert_string_equal(got, ref[i][1]);
        free(got);
        rounds++;
        still_held = in_use("en-fr") > 0;
        if (!still_held)
            break;
        assert_true(model_metric(&srv, "mtserve_model_unloads_total", "en-fr") == unloads0);
        assert_true(metric(&srv, "mtserve_models_loaded") <= 2);
    }
    pthread_join(th, NULL);
    print_message("# a streamed request held en-fr for %.2f s while %d other models were loaded (%s); "
                  "en-fr unloads %.0f -> %.0f while it was held\n", now_s() - t0, rounds,
                  still_held ? "en-fr in use throughout" : "the stream ended before the last", unloads0,
                  model_metric(&srv, "mtserve_model_unloads_total", "en-fr"));
    assert_true(held);
    assert_true(rounds >= 1);
    assert_int_equal(s.status, 200);
    assert_non_null(s.text);
    assert_string_equal(s.text, ref_long);
    free(s.text);
}

static void test_too_big(void **state)
{
    (void)state;
    double t0 = now_s();
    char *body = translate_body("hello", NULL, "en", "ru");
    reply r = post(&srv, "/translate", body);
    json_t *j = expect_json(&r, 500);
    const char *msg = json_string_value(json_object_get(json_object_get(j, "error"), "message"));
    print_message("# zbig: %ld in %.0f ms: %s\n", r.status, (now_s() - t0) * 1e3, msg);
    assert_non_null(strstr(msg, "zbig"));
    assert_non_null(strstr(msg, "--memory-budget"));
    json_decref(j);
    reply_free(&r);
    free(body);
    /* a worker's use (/score) loads its model too and holds it while it scores */
    r = post(&srv, "/score", "{\"model\": \"nl-pt\", \"pairs\": [{\"source\": \"a b\", \"target\": \"c d\"}]}");
    j = expect_json(&r, 200);
    json_decref(j);
    reply_free(&r);
    assert_true(metric(&srv, "mtserve_models_loaded") <= 2);
}

int main(void)
{
    if (getenv("TEST_FILTER"))
        cmocka_set_test_filter(getenv("TEST_FILTER"));
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_listing),
        cmocka_unit_test(test_round_robin),
        cmocka_unit_test(test_in_use),
        cmocka_unit_test(test_too_big),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
