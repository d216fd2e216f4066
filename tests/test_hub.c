/* test_hub: models by name from a Hugging Face hub (server/hub, `mtserve pull`,
 * `mtserve serve --model org/name`).
 *
 * The hub is tests/fake_hub.c, in this process, answering as huggingface.co does. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fake_hub.h"
#include "harness.h"
#include "hub/hub.h"

#define COMMIT FAKE_COMMIT
#define TOKEN  FAKE_TOKEN

static int hub_start(void **state)
{
    return fake_hub_start();
}

static int hub_stop(void **state)
{
    fake_hub_stop();
    return 0;
}

/* ---- names and the cache, no network ------------------------------------------------- */

static void test_names(void **state)
{
    hub_ref ref;
    assert_true(hub_ref_parse("Helsinki-NLP/opus-mt-en-de", &ref));
    assert_string_equal(ref.repo, "Helsinki-NLP/opus-mt-en-de");
    assert_string_equal(ref.rev, "main");
    assert_true(hub_ref_parse("org/name@v1.2", &ref));
    assert_string_equal(ref.repo, "org/name");
    assert_string_equal(ref.rev, "v1.2");
    assert_true(hub_ref_parse("org/name@refs/pr/3", &ref));
    assert_false(hub_ref_parse("models/tiny", &ref));      /* an existing directory stays a path */
    assert_false(hub_ref_parse("a/b/c", &ref));
    assert_false(hub_ref_parse("tiny", &ref));
    assert_false(hub_ref_parse("../x", &ref));
    assert_false(hub_ref_parse("org/..", &ref));
    assert_false(hub_ref_parse("/org/name", &ref));
    assert_false(hub_ref_parse("org/name@../../x", &ref));
    assert_false(hub_ref_parse("org/name@", &ref));
    assert_true(hub_safe_name("config.json"));
    assert_true(hub_safe_name("onnx/model.onnx"));
    assert_false(hub_safe_name("../config.json"));
    assert_false(hub_safe_name("a/../../b"));
    assert_false(hub_safe_name("/etc/passwd"));
    assert_false(hub_safe_name("a\\..\\b"));
    assert_false(hub_safe_name("a//b"));
    assert_false(hub_safe_name(""));
    char etag[80];
    assert_true(hub_parse_etag("W/\"0123456789abcdef0123456789abcdef01234567\"", 44, etag, sizeof etag));
    assert_string_equal(etag, "0123456789abcdef0123456789abcdef01234567");
    assert_false(hub_parse_etag("\"../../../../../../../../../../../../../x\"", 42, etag, sizeof etag));
}

/* a cache as huggingface_hub lays it out (made here): found through refs/main, through
 * the commit itself, not for a revision it lacks */
static void test_resolve_existing_cache(void **state)
{
    char cache[512], p[1024], snap[1024];
    fake_fresh_cache(cache, sizeof cache);
    const char *repo = "models--Helsinki-NLP--opus-mt-en-xx";
    snprintf(p, sizeof p, "%s/%s/blobs", cache, repo);
    assert_int_equal(mkdir(cache, 0755) == 0 || errno == EEXIST, 1);
    snprintf(p, sizeof p, "%s/%s", cache, repo);
    assert_int_equal(mkdir(p, 0755), 0);
    snprintf(p, sizeof p, "%s/%s/blobs", cache, repo);
    assert_int_equal(mkdir(p, 0755), 0);
    snprintf(p, sizeof p, "%s/%s/refs", cache, repo);
    assert_int_equal(mkdir(p, 0755), 0);
    snprintf(p, sizeof p, "%s/%s/snapshots", cache, repo);
    assert_int_equal(mkdir(p, 0755), 0);
    snprintf(p, sizeof p, "%s/%s/snapshots/" COMMIT, cache, repo);
    assert_int_equal(mkdir(p, 0755), 0);
    snprintf(p, sizeof p, "%s/%s/blobs/%s", cache, repo, fake_hub.files[0].etag);
    FILE *f = fopen(p, "w");
    fputs("{}", f);
    fclose(f);
    snprintf(p, sizeof p, "%s/%s/snapshots/" COMMIT "/config.json", cache, repo);
    char target[128];
    snprintf(target, sizeof target, "../../blobs/%s", fake_hub.files[0].etag);
    assert_int_equal(symlink(target, p), 0);
    snprintf(p, sizeof p, "%s/%s/refs/main", cache, repo);
    f = fopen(p, "w");
    fputs(COMMIT, f);                /* huggingface_hub writes no newline */
    fclose(f);

    hub_ref ref;
    mt_err err = {0};
    char want[1024];
    snprintf(want, sizeof want, "%s/%s/snapshots/" COMMIT, cache, repo);
    fake_ref_of("Helsinki-NLP/opus-mt-en-xx", &ref);
    /* a config alone (a client that read only it) is not the model */
    assert_int_equal(hub_resolve_cached(cache, &ref, snap, sizeof snap, &err), MT_ERR_IO);
    assert_non_null(strstr(err.msg, "no model.safetensors or pytorch_model.bin"));
    snprintf(p, sizeof p, "%s/%s/blobs/%s", cache, repo, fake_file_named("model.safetensors")->etag);
    f = fopen(p, "w");
    fputs("weights", f);
    fclose(f);
    snprintf(p, sizeof p, "%s/%s/snapshots/" COMMIT "/pytorch_model.bin", cache, repo);
    snprintf(target, sizeof target, "../../blobs/%s", fake_file_named("model.safetensors")->etag);
    assert_int_equal(symlink(target, p), 0);
    assert_int_equal(hub_resolve_cached(cache, &ref, snap, sizeof snap, &err), MT_OK);
    assert_string_equal(snap, want);
    fake_ref_of("Helsinki-NLP/opus-mt-en-xx@" COMMIT, &ref);
    assert_int_equal(hub_resolve_cached(cache, &ref, snap, sizeof snap, &err), MT_OK);
    assert_string_equal(snap, want);
    fake_ref_of("Helsinki-NLP/opus-mt-en-xx@v2", &ref);
    assert_int_equal(hub_resolve_cached(cache, &ref, snap, sizeof snap, &err), MT_ERR_IO);
    assert_non_null(strstr(err.msg, "not in the Hugging Face cache"));
    fake_ref_of("Helsinki-NLP/opus-mt-en-yy", &ref);
    assert_int_equal(hub_resolve_cached(cache, &ref, snap, sizeof snap, &err), MT_ERR_IO);

    /* the environment's order: HF_HUB_CACHE, HF_HOME/hub, ~/.cache/huggingface/hub */
    char dir[1024], home[1024];
    snprintf(home, sizeof home, "%s", getenv("HOME") ? getenv("HOME") : "/");
    setenv("HF_HUB_CACHE", "/x/hub-cache", 1);
    setenv("HF_HOME", "/y/home", 1);
    assert_int_equal(hub_cache_dir(dir, sizeof dir), 0);
    assert_string_equal(dir, "/x/hub-cache");
    unsetenv("HF_HUB_CACHE");
    assert_int_equal(hub_cache_dir(dir, sizeof dir), 0);
    assert_string_equal(dir, "/y/home/hub");
    unsetenv("HF_HOME");
    unsetenv("XDG_CACHE_HOME");
    setenv("HOME", "/z", 1);
    assert_int_equal(hub_cache_dir(dir, sizeof dir), 0);
    assert_string_equal(dir, "/z/.cache/huggingface/hub");
    setenv("HOME", home, 1);
}

/* ---- downloads --------------------------------------------------------------------------- */

/* an empty cache: the form's 8 files, nothing of TF/Flax/Rust, every file checked and
 * linked; the token never leaves the endpoint; a second pull downloads nothing */
static void test_pull_empty_cache(void **state)
{
    char cache[512], snap[1024];
    fake_fresh_cache(cache, sizeof cache);
    hub_config cfg;
    fake_config(&cfg, cache);
    snprintf(cfg.token, sizeof cfg.token, "%s", TOKEN);
    hub_ref ref;
    fake_ref_of("org/tiny", &ref);
    mt_err err = {0};
    fake_hub_reset_counts();
    mt_status st = hub_pull(&cfg, &ref, snap, sizeof snap, &err);
    if (st != MT_OK)
        print_error("pull: %s\n", err.msg);
    assert_int_equal(st, MT_OK);
    fake_check_snapshot(cache, "models--org--tiny");
    assert_int_equal(fake_hub.never_files, 0);
    assert_int_equal(fake_form_blobs(), 2);
    assert_int_equal(fake_hub.blob_gets, fake_form_blobs());  /* each LFS blob once */
    assert_int_equal(fake_hub.auth_to_cdn, 0);
    assert_int_equal(fake_hub.api_requests, 1);
    char resolved[1024];
    assert_int_equal(hub_resolve_cached(cache, &ref, resolved, sizeof resolved, &err), MT_OK);
    assert_string_equal(resolved, snap);
    fake_hub_reset_counts();
    assert_int_equal(hub_pull(&cfg, &ref, snap, sizeof snap, &err), MT_OK);
    assert_int_equal(fake_hub.blob_gets, 0);             /* the blobs are there: only HEADs */
    /* by commit and by tag: the same snapshot, refs/v1 written */
    fake_ref_of("org/tiny@v1", &ref);
    assert_int_equal(hub_pull(&cfg, &ref, resolved, sizeof resolved, &err), MT_OK);
    assert_string_equal(resolved, snap);
    assert_int_equal(hub_resolve_cached(cache, &ref, resolved, sizeof resolved, &err), MT_OK);
}

/* one byte flipped in model.safetensors: refused by its sha256, never linked, the
 * partial file removed; the next pull gets the right bytes */
static void test_corrupted_byte_refused(void **state)
{
    char cache[512], snap[1024], path[1200];
    fake_fresh_cache(cache, sizeof cache);
    hub_config cfg;
    fake_config(&cfg, cache);
    hub_ref ref;
    fake_ref_of("org/tiny", &ref);
    const fake_file *w = fake_file_named("model.safetensors");
    pthread_mutex_lock(&fake_hub.mu);
    snprintf(fake_hub.corrupt_etag, sizeof fake_hub.corrupt_etag, "%s", w->etag);
    pthread_mutex_unlock(&fake_hub.mu);
    mt_err err = {0};
    assert_int_equal(hub_pull(&cfg, &ref, snap, sizeof snap, &err), MT_ERR_FORMAT);
    assert_non_null(strstr(err.msg, "model.safetensors"));
    assert_non_null(strstr(err.msg, "sha256"));
    struct stat st;
    snprintf(path, sizeof path, "%s/models--org--tiny/snapshots/" COMMIT "/model.safetensors", cache);
    assert_int_not_equal(lstat(path, &st), 0);
    snprintf(path, sizeof path, "%s/models--org--tiny/blobs/%s", cache, w->etag);
    assert_int_not_equal(lstat(path, &st), 0);
    snprintf(path, sizeof path, "%s/models--org--tiny/blobs/%s.incomplete", cache, w->etag);
    assert_int_not_equal(lstat(path, &st), 0);
    snprintf(path, sizeof path, "%s/models--org--tiny/refs/main", cache);
    assert_int_not_equal(lstat(path, &st), 0);      /* no ref to a half snapshot */
    assert_int_equal(hub_resolve_cached(cache, &ref, snap, sizeof snap, &err), MT_ERR_IO);
    assert_int_equal(hub_pull(&cfg, &ref, snap, sizeof snap, &err), MT_OK);
    fake_check_snapshot(cache, "models--org--tiny");
}

/* the connection dies after 100 kB of model.safetensors: the pull resumes from there
 * with Range and the file checks out; so does a later pull after a crashed one */
static void test_cut_connection_resumed(void **state)
{
    char cache[512], snap[1024];
    fake_fresh_cache(cache, sizeof cache);
    hub_config cfg;
    fake_config(&cfg, cache);
    hub_ref ref;
    fake_ref_of("org/tiny", &ref);
    const fake_file *w = fake_file_named("model.safetensors");
    fake_hub_reset_counts();
    pthread_mutex_lock(&fake_hub.mu);
    snprintf(fake_hub.cut_etag, sizeof fake_hub.cut_etag, "%s", w->etag);
    fake_hub.cut_after = 100000;
    pthread_mutex_unlock(&fake_hub.mu);
    mt_err err = {0};
    mt_status st = hub_pull(&cfg, &ref, snap, sizeof snap, &err);
    if (st != MT_OK)
        print_error("pull: %s\n", err.msg);
    assert_int_equal(st, MT_OK);
    assert_int_equal(fake_hub.blob_gets, fake_form_blobs() + 1);     /* and the resumed one */
    fake_check_snapshot(cache, "models--org--tiny");
    /* the resumed GET asked for the rest: a Range from what had arrived (at least the
     * part libmicrohttpd flushed before the cut, at most the cut) */
    assert_true(fake_hub.last_range_from > 0 && fake_hub.last_range_from <= 100000);

    /* a later run: the 50,000 bytes a crashed pull left in blobs/ETAG.incomplete are kept,
     * the rest asked for with Range */
    char path[1200];
    fake_fresh_cache(cache, sizeof cache);
    snprintf(path, sizeof path, "%s/models--org--tiny", cache);
    assert_int_equal(mkdir(path, 0755), 0);
    snprintf(path, sizeof path, "%s/models--org--tiny/blobs", cache);
    assert_int_equal(mkdir(path, 0755), 0);
    snprintf(path, sizeof path, "%s/models--org--tiny/blobs/%s.incomplete", cache, w->etag);
    FILE *f = fopen(path, "wb");
    assert_int_equal(fwrite(w->data, 1, 50000, f), 50000);
    fclose(f);
    fake_config(&cfg, cache);
    fake_hub_reset_counts();
    assert_int_equal(hub_pull(&cfg, &ref, snap, sizeof snap, &err), MT_OK);
    assert_int_equal(fake_hub.last_range_from, 50000);
    fake_check_snapshot(cache, "models--org--tiny");
}

/* file names, etags and revisions that would walk out of the cache are refused and
 * nothing is written outside it */
static void test_path_traversal_refused(void **state)
{
    char cache[512], snap[1024], path[1200];
    fake_fresh_cache(cache, sizeof cache);
    hub_config cfg;
    fake_config(&cfg, cache);
    hub_ref ref;
    mt_err err = {0};
    fake_ref_of("org/evil", &ref);
    assert_int_equal(hub_pull(&cfg, &ref, snap, sizeof snap, &err), MT_ERR_FORMAT);
    assert_non_null(strstr(err.msg, "unsafe path"));
    fake_ref_of("org/badetag", &ref);
    assert_int_equal(hub_pull(&cfg, &ref, snap, sizeof snap, &err), MT_ERR_FORMAT);
    assert_non_null(strstr(err.msg, "ETag"));
    struct stat st;
    snprintf(path, sizeof path, "%s/../outside.txt", cache);
    assert_int_not_equal(stat(path, &st), 0);
    snprintf(path, sizeof path, "%s/../escaped", cache);
    assert_int_not_equal(stat(path, &st), 0);
    snprintf(path, sizeof path, "%s/models--org--badetag/snapshots", cache);
    assert_int_not_equal(stat(path, &st), 0);       /* refused before a byte was written */
    assert_false(hub_ref_parse("org/tiny@../../../x", &ref));
}

/* offline: the cache only, not one request; a model not there is named */
static void test_offline(void **state)
{
    char cache[512], snap[1024];
    fake_fresh_cache(cache, sizeof cache);
    hub_config cfg;
    fake_config(&cfg, cache);
    cfg.offline = 1;
    hub_ref ref;
    fake_ref_of("org/tiny", &ref);
    mt_err err = {0};
    fake_hub_reset_counts();
    assert_int_equal(hub_model_dir(&cfg, &ref, snap, sizeof snap, &err), MT_ERR_IO);
    assert_non_null(strstr(err.msg, "HF_HUB_OFFLINE"));
    assert_non_null(strstr(err.msg, "org/tiny"));
    assert_int_equal(fake_hub.api_requests + fake_hub.resolve_requests + fake_hub.blob_gets, 0);
    cfg.offline = 0;
    assert_int_equal(hub_model_dir(&cfg, &ref, snap, sizeof snap, &err), MT_OK);
    cfg.offline = 1;
    fake_hub_reset_counts();
    char again[1024];
    assert_int_equal(hub_model_dir(&cfg, &ref, again, sizeof again, &err), MT_OK);
    assert_string_equal(again, snap);
    assert_int_equal(fake_hub.api_requests + fake_hub.resolve_requests + fake_hub.blob_gets, 0);
}

/* gated without a token: the hub's own words and what to do; with it: downloaded.
 * Unknown repository, unknown revision: named. */
static void test_gated_and_unknown(void **state)
{
    char cache[512], snap[1024];
    fake_fresh_cache(cache, sizeof cache);
    hub_config cfg;
    fake_config(&cfg, cache);
    hub_ref ref;
    mt_err err = {0};
    fake_ref_of("org/gated", &ref);
    assert_int_equal(hub_pull(&cfg, &ref, snap, sizeof snap, &err), MT_ERR_IO);
    assert_non_null(strstr(err.msg, "Access to model org/gated is restricted"));
    assert_non_null(strstr(err.msg, "HF_TOKEN"));
    assert_non_null(strstr(err.msg, "401"));
    snprintf(cfg.token, sizeof cfg.token, "%s", TOKEN);
    assert_int_equal(hub_pull(&cfg, &ref, snap, sizeof snap, &err), MT_OK);
    fake_check_snapshot(cache, "models--org--gated");
    fake_ref_of("org/nothing", &ref);
    assert_int_equal(hub_pull(&cfg, &ref, snap, sizeof snap, &err), MT_ERR_INPUT);
    assert_non_null(strstr(err.msg, "Repository not found"));
    fake_ref_of("org/tiny@v9", &ref);
    assert_int_equal(hub_pull(&cfg, &ref, snap, sizeof snap, &err), MT_ERR_INPUT);
    assert_non_null(strstr(err.msg, "Invalid rev id: v9"));
}

/* ---- the binary --------------------------------------------------------------------------- */

/* `mtserve pull org/tiny` prints the snapshot, `mtserve translate --model org/tiny` reads
 * it offline; HF_HUB_OFFLINE=1 with an empty cache fails */
static void test_cli_pull(void **state)
{
    char cache[512], cmd[2048], line[1200] = {0};
    fake_fresh_cache(cache, sizeof cache);
    snprintf(cmd, sizeof cmd, "HF_ENDPOINT=%s HF_HUB_CACHE=%s %s pull org/tiny 2>/dev/null", fake_hub.endpoint, cache,
             bin_path());
    FILE *p = popen(cmd, "r");
    assert_non_null(p);
    assert_non_null(fgets(line, sizeof line, p));
    assert_int_equal(pclose(p), 0);
    char want[1200];
    snprintf(want, sizeof want, "%s/models--org--tiny/snapshots/" COMMIT "\n", cache);
    assert_string_equal(line, want);
    fake_check_snapshot(cache, "models--org--tiny");
    /* mtserve translate --model org/tiny, offline from that cache: as --model models/tiny */
    char by_name[512] = {0}, by_path[512] = {0};
    snprintf(cmd, sizeof cmd, "echo 'The file is open.' | HF_HUB_OFFLINE=1 HF_ENDPOINT=http://127.0.0.1:9 "
             "HF_HUB_CACHE=%s %s translate --model org/tiny 2>/dev/null", cache, bin_path());
    p = popen(cmd, "r");
    assert_non_null(fgets(by_name, sizeof by_name, p));
    assert_int_equal(pclose(p), 0);
    snprintf(cmd, sizeof cmd, "echo 'The file is open.' | %s translate --model models/tiny 2>/dev/null", bin_path());
    p = popen(cmd, "r");
    assert_non_null(fgets(by_path, sizeof by_path, p));
    assert_int_equal(pclose(p), 0);
    assert_true(strlen(by_path) > 1);
    assert_string_equal(by_name, by_path);
    fake_fresh_cache(cache, sizeof cache);
    snprintf(cmd, sizeof cmd, "HF_HUB_OFFLINE=1 HF_ENDPOINT=%s HF_HUB_CACHE=%s %s pull org/tiny 2>&1", fake_hub.endpoint,
             cache, bin_path());
    p = popen(cmd, "r");
    assert_non_null(fgets(line, sizeof line, p));
    int status = pclose(p);
    assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 1);
    assert_non_null(strstr(line, "HF_HUB_OFFLINE"));
}

static int log_has(const server *s, const char *words);

static char *translate(server *s, const char *text)
{
    char body[512], why[256];
    /* max_length: random weights run to the limit, which an ASan build takes minutes over */
    snprintf(body, sizeof body, "{\"text\": \"%s\", \"beam\": 1, \"max_length\": 24}", text);
    reply r = post(s, "/translate", body);
    char *out = reply_text(&r, why, sizeof why);
    if (!out)
        print_error("translate: %s (%ld %s)\n", why, r.status, r.body ? r.body : "");
    reply_free(&r);
    return out;
}

/* serve --model NAME downloads from the hub, then answers as --model DIR does; a second
 * start offline (the hub unreachable) serves the cache with not one request.  Returns
 * the seconds the first start by name took (download, checks, load). */
static double serve_compare(const char *name, const char *dir, int blobs)
{
    char cache[512], env_ep[128], env_cache[600], model_dir[1024];
    fake_fresh_cache(cache, sizeof cache);
    snprintf(env_ep, sizeof env_ep, "HF_ENDPOINT=%s", fake_hub.endpoint);
    snprintf(env_cache, sizeof env_cache, "HF_HUB_CACHE=%s", cache);
    snprintf(model_dir, sizeof model_dir, "%s", dir);
    static const char *const texts[] = { "Hello world.", "The file is open.", "Where is the station?" };
    char *by_path[3];
    server s;
    const char *path_args[] = { "--model", model_dir, NULL };
    assert_int_equal(server_start(&s, path_args), 0);
    for (int i = 0; i < 3; i++)
        assert_non_null(by_path[i] = translate(&s, texts[i]));
    assert_int_equal(server_stop(&s), 0);

    const char *name_args[] = { "--model", name, NULL };
    const char *env[] = { env_ep, env_cache, NULL };
    fake_hub_reset_counts();
    double t0 = now_s();
    assert_int_equal(server_start_env(&s, name_args, env), 0);
    double took = now_s() - t0;
    assert_int_equal(fake_hub.blob_gets, blobs);
    reply r = get(&s, "/models");
    assert_int_equal(r.status, 200);
    assert_non_null(strstr(r.body, strrchr(name, '/') + 1));
    reply_free(&r);
    for (int i = 0; i < 3; i++) {
        char *t = translate(&s, texts[i]);
        assert_non_null(t);
        assert_string_equal(t, by_path[i]);
        free(t);
    }
    assert_int_equal(server_stop(&s), 0);

    const char *offline_env[] = { "HF_ENDPOINT=http://127.0.0.1:9", env_cache, "HF_HUB_OFFLINE=1", NULL };
    fake_hub_reset_counts();
    assert_int_equal(server_start_env(&s, name_args, offline_env), 0);
    char cached[400];
    snprintf(cached, sizeof cached, "is %s in ", name);
    assert_true(log_has(&s, cached));
    assert_false(log_has(&s, "in the background"));        /* from the cache at once, as a path */
    for (int i = 0; i < 3; i++) {
        char *t = translate(&s, texts[i]);
        assert_non_null(t);
        assert_string_equal(t, by_path[i]);
        free(t);
    }
    assert_int_equal(server_stop(&s), 0);
    assert_int_equal(fake_hub.api_requests + fake_hub.resolve_requests + fake_hub.blob_gets, 0);
    for (int i = 0; i < 3; i++)
        free(by_path[i]);
    return took;
}

static void test_serve_by_name(void **state)
{
    serve_compare("org/tiny", "models/tiny", fake_form_blobs());
}

/* the issue's case: Helsinki-NLP/opus-mt-en-mg, the real OPUS-MT config and tokenizers
 * with random weights (141 MB of model.safetensors), when `make opus-models` made it */
static void test_serve_opus_by_name(void **state)
{
    if (fake_hub.n_opus == 0) {
        print_message("no $MT_OPUS_DIR/en-mg/safetensors-f32 (make opus-models): skipped\n");
        skip();
    }
    char dir[1024];
    const char *opus = getenv("MT_OPUS_DIR");
    snprintf(dir, sizeof dir, "%.900s/en-mg/safetensors-f32", opus ? opus : "build/opus-mt");
    double took = serve_compare("Helsinki-NLP/opus-mt-en-mg", dir, 3);
    print_message("opus-mt-en-mg by name: downloaded (%.1f MB), checked and loaded in %.2f s\n",
                  (double)fake_file_in(fake_repo_named("Helsinki-NLP/opus-mt-en-mg"), "model.safetensors")->len / 1e6, took);
}

/* ---- serve --model org/name: the server listens, then downloads ------------------------- */

/* the hub's environment for a fresh cache: env[0..2] (HF_ENDPOINT, HF_HUB_CACHE, NULL) */
static void fresh_env(char ep[128], char cache_env[600], const char *env[3])
{
    char cache[512];
    fake_fresh_cache(cache, sizeof cache);
    snprintf(ep, 128, "HF_ENDPOINT=%s", fake_hub.endpoint);
    snprintf(cache_env, 600, "HF_HUB_CACHE=%s", cache);
    env[0] = ep;
    env[1] = cache_env;
    env[2] = NULL;
}

/* 1 if the server's log holds words */
static int log_has(const server *s, const char *words)
{
    static char text[1 << 16];
    long n = fake_read_all(s->log, (unsigned char *)text, sizeof text - 1);
    if (n < 0)
        return 0;
    text[n] = 0;
    return strstr(text, words) != NULL;
}

/* POST /translate of text to model (NULL: none named): its reply */
static reply translate_to(server *s, const char *text, const char *model)
{
    char body[512], field[128] = "";
    if (model)
        snprintf(field, sizeof field, ", \"model\": \"%s\"", model);
    snprintf(body, sizeof body, "{\"text\": \"%s\", \"beam\": 1, \"max_length\": 24%s}", text, field);
    return post(s, "/translate", body);
}

/* A request for a model still downloading: 503, Retry-After, the message naming the download. */
static void expect_downloading(reply *r, const char *id)
{
    char retry[16];
    if (r->status != 503)
        print_error("expected 503, got %ld %s\n", r->status, r->body ? r->body : "");
    assert_int_equal(r->status, 503);
    assert_true(header(r, "Retry-After", retry, sizeof retry) && atoi(retry) > 0);
    assert_non_null(r->body);
    assert_non_null(strstr(r->body, id));
    assert_non_null(strstr(r->body, "org/tiny"));
}

typedef struct {
    int    polls, seen;             /* /health answers; those showing the download with bytes */
    long long done, total;          /* the last seen */
    int    refused;                 /* requests answered 503 meanwhile */
    double served_s;                /* from spawn to /health 200 "ok" */
} watch;

/* Polls /health every 10 ms from spawn until it answers 200 "ok": while org/tiny (id
 * "tiny") downloads it must answer want_status with status word want_word and the
 * download's bytes; once per poll showing them, request is sent and must get 503. */
static void watch_download(server *s, long want_status, const char *want_word, const char *request_model,
                           watch *w)
{
    double t0 = now_s();
    memset(w, 0, sizeof *w);
    for (;;) {
        assert_true(now_s() - t0 < START_TIMEOUT_S);
        assert_true(server_alive(s));
        reply r = get(s, "/health");
        if (r.status == 0) {                        /* not listening yet */
            reply_free(&r);
            sleep_ms(10);
            continue;
        }
        json_t *j = reply_json(&r);
        assert_non_null(j);
        const char *status = json_string_value(json_object_get(j, "status"));
        w->polls++;
        if (r.status == 200 && !strcmp(status, "ok")) {
            assert_null(json_object_get(j, "downloads"));
            json_decref(j);
            reply_free(&r);
            break;
        }
        json_t *d = json_array_get(json_object_get(j, "downloads"), 0);
        if (d && json_integer_value(json_object_get(d, "done")) > 0) {
            assert_int_equal(r.status, want_status);
            assert_string_equal(status, want_word);
            assert_string_equal(json_string_value(json_object_get(d, "id")), "tiny");
            assert_string_equal(json_string_value(json_object_get(d, "name")), "org/tiny");
            assert_true(json_is_true(json_object_get(d, "at_start")));
            w->done = json_integer_value(json_object_get(d, "done"));
            w->total = json_integer_value(json_object_get(d, "total"));
            assert_true(w->done <= w->total);
            w->seen++;
            reply t = translate_to(s, "Hello world.", request_model);
            if (t.status == 503) {                  /* else it was served between the two requests */
                expect_downloading(&t, "tiny");
                w->refused++;
            }
            reply_free(&t);
        }
        json_decref(j);
        reply_free(&r);
        sleep_ms(10);
    }
    w->served_s = now_s() - t0;
}

static char *text_of(reply *r)
{
    char why[256];
    char *t = reply_text(r, why, sizeof why);
    if (!t)
        print_error("translate: %s (%ld %s)\n", why, r->status, r->body ? r->body : "");
    return t;
}

/* serve --model org/tiny into an empty cache over a slow link: the server listens
 * first, /health answers 503 "downloading" with the bytes, a request 503 + Retry-After
 * naming the download; then 200 "ok" and the answers of --model models/tiny. */
static void test_serve_listens_while_downloading(void **state)
{
    int tsan = getenv("MTSERVE_TSAN") != NULL;
    char ep[128], cache_env[600], dir[] = "models/tiny";
    const char *env[3];
    fresh_env(ep, cache_env, env);
    server s;
    const char *path_args[] = { "--model", dir, NULL };
    assert_int_equal(server_start(&s, path_args), 0);
    reply r = translate_to(&s, "Hello world.", NULL);
    char *want = text_of(&r);
    reply_free(&r);
    assert_non_null(want);
    assert_int_equal(server_stop(&s), 0);

    fake_hub_slow(tsan ? 20 : 8);                   /* ms a 4 KB chunk: 1-3 s for models/tiny */
    const char *args[] = { "--model", "org/tiny", NULL };
    assert_int_equal(server_spawn(&s, args, env), 0);
    watch w;
    watch_download(&s, 503, "downloading", NULL, &w);
    fake_hub_slow(0);
    print_message("# serve --model org/tiny: /health answered %d times during the download (%d with its bytes, "
                  "last %lld of %lld), %d requests 503; served %.2f s after spawn\n", w.polls, w.seen, w.done,
                  w.total, w.refused, w.served_s);
    assert_true(w.seen >= 1 && w.refused >= 1 && w.total > 0);
    assert_true(log_has(&s, "downloading org/tiny in the background"));
    r = translate_to(&s, "Hello world.", NULL);
    char *got = text_of(&r);
    reply_free(&r);
    assert_non_null(got);
    assert_string_equal(got, want);
    free(got);
    free(want);
    r = get(&s, "/admin/models");                   /* the mechanism only: no --admin-key, no admin API */
    assert_int_equal(r.status, 403);
    reply_free(&r);
    assert_int_equal(server_stop(&s), 0);
}

/* --model org/tiny --model local=models/tiny: "local" serves at once and /health is 200
 * "partial" (a load balancer may send traffic), "tiny" and the default (tiny, the first
 * --model) 503 until downloaded; then tiny is the default again. */
static void test_serve_partial_while_downloading(void **state)
{
    int tsan = getenv("MTSERVE_TSAN") != NULL;
    char ep[128], cache_env[600], local[] = "local=models/tiny";
    const char *env[3];
    fresh_env(ep, cache_env, env);
    fake_hub_slow(tsan ? 20 : 8);
    server s;
    const char *args[] = { "--model", "org/tiny", "--model", local, NULL };
    assert_int_equal(server_spawn(&s, args, env), 0);
    assert_int_equal(wait_health(&s, 200), 0);      /* "local" is served: ready */
    reply r = translate_to(&s, "Hello world.", "local");
    char *want = text_of(&r);
    reply_free(&r);
    assert_non_null(want);
    r = translate_to(&s, "Hello world.", "tiny");
    long first = r.status;
    if (first == 503)
        expect_downloading(&r, "tiny");
    reply_free(&r);
    watch w;
    watch_download(&s, 200, "partial", NULL, &w);   /* no model named: the default, tiny */
    fake_hub_slow(0);
    print_message("# --model org/tiny --model local=...: /health 200 \"partial\" %d times with the download's "
                  "bytes, %d requests for the default 503 (the first for tiny: %ld); all served %.2f s after "
                  "ready\n", w.seen, w.refused, first, w.served_s);
    assert_true(w.seen >= 1 && w.refused >= 1);
    r = get(&s, "/models");
    json_t *j = expect_json(&r, 200);
    assert_string_equal(json_string_value(json_object_get(j, "default")), "tiny");
    json_decref(j);
    reply_free(&r);
    r = translate_to(&s, "Hello world.", NULL);
    char *got = text_of(&r);
    reply_free(&r);
    assert_non_null(got);
    assert_string_equal(got, want);                 /* the same weights as local */
    free(got);
    free(want);
    assert_int_equal(server_stop(&s), 0);
}

/* A download at start that fails: alone, the server exits 1 naming it; beside a model
 * that serves, the log names it and the others serve on. */
static void test_serve_download_fails(void **state)
{
    char ep[128], cache_env[600], local[] = "local=models/tiny";
    const char *env[3];
    fresh_env(ep, cache_env, env);
    server s;
    const char *alone[] = { "--model", "org/unknown", NULL };
    assert_int_equal(server_spawn(&s, alone, env), 0);
    int ws = wait_child(s.pid, 60);
    untrack(s.pid);
    s.pid = 0;
    assert_true(ws != -1 && WIFEXITED(ws));
    assert_int_equal(WEXITSTATUS(ws), 1);
    assert_true(log_has(&s, "model unknown (--model org/unknown) cannot be served"));
    assert_true(log_has(&s, "no model could be served"));

    /* offline, not in the cache: refused before the server listens, as before */
    const char *offline_env[] = { env[0], env[1], "HF_HUB_OFFLINE=1", NULL };
    const char *tiny[] = { "--model", "org/tiny", NULL };
    assert_int_equal(server_spawn(&s, tiny, offline_env), 0);
    ws = wait_child(s.pid, 60);
    untrack(s.pid);
    s.pid = 0;
    assert_true(ws != -1 && WIFEXITED(ws));
    assert_int_equal(WEXITSTATUS(ws), 1);
    assert_true(log_has(&s, "HF_HUB_OFFLINE=1: nothing is downloaded"));
    assert_false(log_has(&s, "listening on"));

    const char *beside[] = { "--model", local, "--model", "org/gated", NULL };
    assert_int_equal(server_start_env(&s, beside, env), 0);
    double t0 = now_s();
    while (!log_has(&s, "model gated (--model org/gated) cannot be served") && now_s() - t0 < 30)
        sleep_ms(20);
    assert_true(log_has(&s, "model gated (--model org/gated) cannot be served"));
    reply r = get(&s, "/health");
    json_t *j = expect_json(&r, 200);
    assert_string_equal(json_string_value(json_object_get(j, "status")), "ok");
    json_decref(j);
    reply_free(&r);
    r = translate_to(&s, "Hello world.", "gated");
    assert_int_equal(r.status, 404);
    reply_free(&r);
    r = translate_to(&s, "Hello world.", "local");
    assert_int_equal(r.status, 200);
    reply_free(&r);
    assert_int_equal(server_stop(&s), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_names),
        cmocka_unit_test(test_resolve_existing_cache),
        cmocka_unit_test(test_pull_empty_cache),
        cmocka_unit_test(test_corrupted_byte_refused),
        cmocka_unit_test(test_cut_connection_resumed),
        cmocka_unit_test(test_path_traversal_refused),
        cmocka_unit_test(test_offline),
        cmocka_unit_test(test_gated_and_unknown),
        cmocka_unit_test(test_cli_pull),
        cmocka_unit_test(test_serve_by_name),
        cmocka_unit_test(test_serve_opus_by_name),
        cmocka_unit_test(test_serve_listens_while_downloading),
        cmocka_unit_test(test_serve_partial_while_downloading),
        cmocka_unit_test(test_serve_download_fails),
    };
    int rc = cmocka_run_group_tests(tests, hub_start, hub_stop);
    kill_all_children();
    return rc;
}
