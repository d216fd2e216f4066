/* test_hub_cache: the Hugging Face cache as other programs share it (server/hub's
 * hub_scan.c and hub_pairs.c, `mtserve models`, `mtserve rm`, `mtserve pull --pair`,
 * `serve --pair`), a download into a full disk, and Hugging Face's own JavaScript
 * client (@huggingface/hub, tests/hubjs/) writing a cache mtserve serves and reading
 * the one mtserve writes.
 *
 * The hub is tests/fake_hub.c, in this process; node talks to it as mtserve does. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fake_hub.h"
#include "harness.h"
#include "hub/hub.h"

#define COMMIT  FAKE_COMMIT
#define COMMIT2 "0123456789abcdef0123456789abcdef01234567"    /* a second revision, made by hand */

static int hub_start(void **state)
{
    return fake_hub_start();
}

static int hub_stop(void **state)
{
    fake_hub_stop();
    return 0;
}

/* ---- helpers ----------------------------------------------------------------------------- */

/* cmd's stdout (malloc'd) and its exit status */
static char *run(const char *cmd, int *status)
{
    FILE *p = popen(cmd, "r");
    assert_non_null(p);
    size_t cap = 1 << 16, n = 0;
    char *out = malloc(cap);
    for (size_t k; (k = fread(out + n, 1, cap - n - 1, p)) > 0;) {
        n += k;
        if (n + 1 == cap)
            out = realloc(out, cap *= 2);
    }
    out[n] = 0;
    int st = pclose(p);
    *status = WIFEXITED(st) ? WEXITSTATUS(st) : 128;
    return out;
}

static json_t *run_json(const char *cmd)
{
    int status;
    char *out = run(cmd, &status);
    json_error_t jerr;
    json_t *j = json_loads(out, 0, &jerr);
    if (status != 0 || !j)
        print_error("%s: exit %d, %s\n%s\n", cmd, status, jerr.text, out);
    free(out);
    assert_int_equal(status, 0);
    assert_non_null(j);
    return j;
}

static void pull(const char *cache, const char *name)
{
    hub_config cfg;
    fake_config(&cfg, cache);
    hub_ref ref;
    fake_ref_of(name, &ref);
    char snap[1024];
    mt_err err = {0};
    mt_status st = hub_pull(&cfg, &ref, snap, sizeof snap, &err);
    if (st != MT_OK)
        print_error("pull %s: %s\n", name, err.msg);
    assert_int_equal(st, MT_OK);
}

static int exists(const char *path)
{
    struct stat st;
    return lstat(path, &st) == 0;
}

static void write_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

/* the bytes of models/tiny's form as the cache holds them: each distinct blob once */
static uint64_t form_bytes(void)
{
    uint64_t n = 0;
    for (int i = 0; i < fake_hub.n_files; i++) {
        const fake_file *f = &fake_hub.files[i];
        int seen = strstr(f->name, "tf_") || strstr(f->name, "flax") || strstr(f->name, "rust");
        for (int j = 0; j < i; j++)
            seen |= strcmp(fake_hub.files[j].etag, f->etag) == 0;
        if (!seen)
            n += f->len;
    }
    return n;
}

/* a second revision of org/tiny by hand: snapshots/COMMIT2 with config.json (shared
 * with COMMIT) and notes.txt (its own blob), refs/v2 naming it */
static uint64_t add_revision2(const char *cache)
{
    char p[1200], target[200];
    const char *repo = "models--org--tiny";
    snprintf(p, sizeof p, "%s/%s/snapshots/" COMMIT2, cache, repo);
    assert_int_equal(mkdir(p, 0755), 0);
    snprintf(p, sizeof p, "%s/%s/snapshots/" COMMIT2 "/config.json", cache, repo);
    snprintf(target, sizeof target, "../../blobs/%s", fake_file_named("config.json")->etag);
    assert_int_equal(symlink(target, p), 0);
    static const char notes[] = "only in v2\n";
    snprintf(p, sizeof p, "%s/%s/blobs/ffffffffffffffffffffffffffffffffffffffff", cache, repo);
    write_file(p, notes);
    snprintf(p, sizeof p, "%s/%s/snapshots/" COMMIT2 "/notes.txt", cache, repo);
    assert_int_equal(symlink("../../blobs/ffffffffffffffffffffffffffffffffffffffff", p), 0);
    snprintf(p, sizeof p, "%s/%s/refs/v2", cache, repo);
    write_file(p, COMMIT2);
    return sizeof notes - 1;
}

static const hub_cached_repo *repo_in(const hub_cached_repo *repos, int n, const char *name)
{
    for (int i = 0; i < n; i++)
        if (strcmp(repos[i].repo, name) == 0)
            return &repos[i];
    return NULL;
}

/* ---- language pairs ------------------------------------------------------------------------ */

/* Every row of server/hub/opus_pairs.tsv, read here on its own, is found as the direct
 * repository of its pair and is named Helsinki-NLP/opus-mt-SRC-TGT; every pair of its
 * codes without a row goes through English exactly when both legs have rows. */
static void test_pairs_table(void **state)
{
    static char src[1024][8], tgt[1024][8];
    int n = 0;
    FILE *f = fopen("server/hub/opus_pairs.tsv", "r");
    assert_non_null(f);
    char line[256], repos[2][200], want[300];
    while (fgets(line, sizeof line, f)) {
        char a[8], b[8], r[200];
        if (line[0] == '#' || sscanf(line, "%7[^\t]\t%7[^\t]\t%199s", a, b, r) != 3)
            continue;
        assert_true(n < 1024);
        snprintf(src[n], sizeof src[n], "%s", a);
        snprintf(tgt[n], sizeof tgt[n], "%s", b);
        snprintf(want, sizeof want, "Helsinki-NLP/opus-mt-%s-%s", a, b);
        assert_string_equal(r, want);
        assert_int_equal(hub_pair_repos(a, b, repos), 1);
        assert_string_equal(repos[0], want);
        n++;
    }
    fclose(f);
    assert_int_equal(hub_pair_count(), n);
    assert_true(n > 500);
    static char codes[256][8];              /* every code of the table, once */
    int n_codes = 0;
    for (int i = 0; i < 2 * n; i++) {
        const char *c = i < n ? src[i] : tgt[i - n];
        int seen = 0;
        for (int k = 0; k < n_codes; k++)
            seen |= !strcmp(codes[k], c);
        if (!seen && n_codes < 256)
            memcpy(codes[n_codes++], c, sizeof codes[0]);
    }
    int pivots = 0;
    for (int i = 0; i < n_codes; i++)
        for (int j = 0; j < n_codes; j++) {
            const char *a = codes[i], *b = codes[j];
            int direct = 0, to_en = 0, from_en = 0;
            for (int k = 0; k < n; k++) {
                direct |= !strcmp(src[k], a) && !strcmp(tgt[k], b);
                to_en |= !strcmp(src[k], a) && !strcmp(tgt[k], "en");
                from_en |= !strcmp(src[k], "en") && !strcmp(tgt[k], b);
            }
            int want_n = !strcmp(a, b) ? 0 : direct ? 1 : to_en && from_en && strcmp(a, "en") && strcmp(b, "en") ? 2 : 0;
            int got = hub_pair_repos(a, b, repos);
            assert_int_equal(got, want_n);
            if (got == 2) {
                char leg[64];
                snprintf(leg, sizeof leg, "Helsinki-NLP/opus-mt-%.7s-en", a);
                assert_string_equal(repos[0], leg);
                snprintf(leg, sizeof leg, "Helsinki-NLP/opus-mt-en-%.7s", b);
                assert_string_equal(repos[1], leg);
                pivots++;
            }
        }
    assert_true(pivots > 0);
    assert_int_equal(hub_pair_repos("en", "de", repos), 1);
    assert_string_equal(repos[0], "Helsinki-NLP/opus-mt-en-de");
    assert_int_equal(hub_pair_repos("ja", "ht", repos), 2);
    assert_int_equal(hub_pair_repos("xx", "yy", repos), 0);
    assert_int_equal(hub_pair_repos("en", "en", repos), 0);
    assert_int_equal(hub_pair_repos("", "de", repos), 0);
}

/* `mtserve pull --pair ja-ht`: no repository of its own, both legs through English
 * pulled; `serve --pair ja-ht` offline serves both from the cache; a pair with no
 * route is named before any request */
static void test_pull_pair(void **state)
{
    char cache[512], cmd[2048];
    fake_fresh_cache(cache, sizeof cache);
    snprintf(cmd, sizeof cmd, "HF_ENDPOINT=%s HF_HUB_CACHE=%s %s pull --pair ja-ht 2>/dev/null", fake_hub.endpoint,
             cache, bin_path());
    int status;
    char *out = run(cmd, &status);
    assert_int_equal(status, 0);
    char want[2048];
    snprintf(want, sizeof want, "%s/models--Helsinki-NLP--opus-mt-ja-en/snapshots/" COMMIT "\n"
             "%s/models--Helsinki-NLP--opus-mt-en-ht/snapshots/" COMMIT "\n", cache, cache);
    assert_string_equal(out, want);
    free(out);
    fake_check_snapshot(cache, "models--Helsinki-NLP--opus-mt-ja-en");
    fake_check_snapshot(cache, "models--Helsinki-NLP--opus-mt-en-ht");

    fake_hub_reset_counts();
    snprintf(cmd, sizeof cmd, "HF_ENDPOINT=%s HF_HUB_CACHE=%s %s pull --pair xx-yy 2>&1", fake_hub.endpoint, cache,
             bin_path());
    out = run(cmd, &status);
    assert_int_equal(status, 1);
    assert_non_null(strstr(out, "no published OPUS-MT repository translates xx into yy"));
    free(out);
    assert_int_equal(fake_hub.api_requests + fake_hub.resolve_requests, 0);

    char env_cache[600];
    snprintf(env_cache, sizeof env_cache, "HF_HUB_CACHE=%s", cache);
    const char *env[] = { "HF_ENDPOINT=http://127.0.0.1:9", env_cache, "HF_HUB_OFFLINE=1", NULL };
    const char *args[] = { "--pair", "ja-ht", NULL };
    server s;
    assert_int_equal(server_start_env(&s, args, env), 0);
    reply r = get(&s, "/models");
    assert_int_equal(r.status, 200);
    assert_non_null(strstr(r.body, "opus-mt-ja-en"));
    assert_non_null(strstr(r.body, "opus-mt-en-ht"));
    reply_free(&r);
    assert_int_equal(server_stop(&s), 0);
    assert_int_equal(fake_hub.api_requests + fake_hub.resolve_requests + fake_hub.blob_gets, 0);
}

/* ---- mtserve models -------------------------------------------------------------------------- */

/* Two revisions of org/tiny (one sharing a blob with the other), a snapshot whose blob
 * is gone, a folder without snapshots, folders that are no model repository: hub_scan's
 * sizes count each blob once, as computed here from the hub's files; `mtserve models
 * --json` says which load (the loader's verdict) and why the others do not. */
static void test_models_list(void **state)
{
    char cache[512], p[1200], cmd[2048];
    fake_fresh_cache(cache, sizeof cache);
    pull(cache, "org/tiny");
    uint64_t notes = add_revision2(cache);
    pull(cache, "Helsinki-NLP/opus-mt-ja-en");
    const fake_file *w = fake_file_named("model.safetensors");
    snprintf(p, sizeof p, "%s/models--Helsinki-NLP--opus-mt-ja-en/blobs/%s", cache, w->etag);
    assert_int_equal(unlink(p), 0);
    snprintf(p, sizeof p, "%s/models--org--nosnap", cache);
    assert_int_equal(mkdir(p, 0755), 0);
    snprintf(p, sizeof p, "%s/datasets--org--data", cache);
    assert_int_equal(mkdir(p, 0755), 0);
    snprintf(p, sizeof p, "%s/models--no-separator", cache);
    assert_int_equal(mkdir(p, 0755), 0);

    hub_cached_repo *repos;
    int n;
    mt_err err = {0};
    assert_int_equal(hub_scan(cache, &repos, &n, &err), MT_OK);
    assert_int_equal(n, 3);
    const hub_cached_repo *tiny = repo_in(repos, n, "org/tiny");
    assert_non_null(tiny);
    assert_int_equal(tiny->n_snapshots, 2);
    assert_string_equal(tiny->snapshots[0].commit, COMMIT2);    /* by commit */
    assert_string_equal(tiny->snapshots[0].refs, "v2");
    assert_int_equal(tiny->snapshots[0].n_files, 2);
    assert_int_equal(tiny->snapshots[0].size, fake_file_named("config.json")->len + notes);
    assert_string_equal(tiny->snapshots[1].commit, COMMIT);
    assert_string_equal(tiny->snapshots[1].refs, "main");
    assert_int_equal(tiny->snapshots[1].n_files, 8);
    assert_int_equal(tiny->snapshots[1].missing, 0);
    assert_int_equal(tiny->snapshots[1].size, form_bytes());
    assert_int_equal(tiny->size, form_bytes() + notes);         /* config.json once */
    const hub_cached_repo *ja = repo_in(repos, n, "Helsinki-NLP/opus-mt-ja-en");
    assert_non_null(ja);
    assert_int_equal(ja->snapshots[0].missing, 1);
    assert_int_equal(ja->size, form_bytes() - w->len);
    const hub_cached_repo *nosnap = repo_in(repos, n, "org/nosnap");
    assert_non_null(nosnap);
    assert_int_equal(nosnap->n_snapshots, 0);
    assert_non_null(strstr(nosnap->problem, "no snapshots"));
    hub_scan_free(repos, n);

    snprintf(cmd, sizeof cmd, "HF_HUB_CACHE=%s %s models --json", cache, bin_path());
    json_t *j = run_json(cmd);
    json_t *list = json_object_get(j, "repos");
    assert_int_equal(json_array_size(list), 3);
    json_t *jt = NULL, *jj = NULL;
    size_t i;
    json_t *r;
    json_array_foreach(list, i, r) {
        const char *name = json_string_value(json_object_get(r, "repo"));
        if (!strcmp(name, "org/tiny"))
            jt = r;
        if (!strcmp(name, "Helsinki-NLP/opus-mt-ja-en"))
            jj = r;
    }
    assert_non_null(jt);
    assert_non_null(jj);
    assert_int_equal(json_integer_value(json_object_get(jt, "size")), form_bytes() + notes);
    json_t *revs = json_object_get(jt, "revisions");
    json_t *r2 = json_array_get(revs, 0), *r1 = json_array_get(revs, 1);
    assert_true(json_is_true(json_object_get(r1, "loads")));
    assert_string_equal(json_string_value(json_object_get(r1, "model")), "marian en-fr, safetensors");
    assert_true(json_is_false(json_object_get(r2, "loads")));
    assert_true(strlen(json_string_value(json_object_get(r2, "reason"))) > 0);
    json_t *rj = json_array_get(json_object_get(jj, "revisions"), 0);
    assert_true(json_is_false(json_object_get(rj, "loads")));
    assert_non_null(strstr(json_string_value(json_object_get(rj, "reason")), "blob that is gone"));
    json_decref(j);

    int status;
    snprintf(cmd, sizeof cmd, "HF_HUB_CACHE=%s %s models", cache, bin_path());
    char *text = run(cmd, &status);
    assert_int_equal(status, 0);
    assert_non_null(strstr(text, "loads: marian en-fr, safetensors"));
    assert_non_null(strstr(text, "cannot load:"));
    assert_non_null(strstr(text, "3 repositories"));
    free(text);
}

/* ---- mtserve rm ---------------------------------------------------------------------------- */

/* rm org/tiny@v2: its snapshot, refs/v2 and its own blob go, the blob it shared stays
 * and COMMIT still loads; rm org/tiny@main, the last snapshot: the folder goes; rm
 * org/tiny: the whole folder; a name not cached, a path: refused */
static void test_rm(void **state)
{
    char cache[512], p[1200], cmd[2048], snap[1024];
    fake_fresh_cache(cache, sizeof cache);
    pull(cache, "org/tiny");
    uint64_t notes = add_revision2(cache);
    int status;
    snprintf(cmd, sizeof cmd, "HF_HUB_CACHE=%s %s rm org/tiny@v2", cache, bin_path());
    char *out = run(cmd, &status);
    assert_int_equal(status, 0);
    char want[256];
    snprintf(want, sizeof want, "removed org/tiny@v2: 1 snapshot, 1 ref, 1 blob (%.1f kB)\n", (double)notes / 1e3);
    assert_string_equal(out, want);
    free(out);
    snprintf(p, sizeof p, "%s/models--org--tiny/snapshots/" COMMIT2, cache);
    assert_false(exists(p));
    snprintf(p, sizeof p, "%s/models--org--tiny/refs/v2", cache);
    assert_false(exists(p));
    snprintf(p, sizeof p, "%s/models--org--tiny/blobs/ffffffffffffffffffffffffffffffffffffffff", cache);
    assert_false(exists(p));
    fake_check_snapshot(cache, "models--org--tiny");              /* config.json's blob kept */
    hub_ref ref;
    mt_err err = {0};
    fake_ref_of("org/tiny", &ref);
    assert_int_equal(hub_resolve_cached(cache, &ref, snap, sizeof snap, &err), MT_OK);

    /* by commit, the last snapshot: the repository's folder goes with it */
    hub_removed rm;
    fake_ref_of("org/tiny@" COMMIT, &ref);
    assert_int_equal(hub_remove(cache, &ref, 0, &rm, &err), MT_OK);
    assert_int_equal(rm.snapshots, 1);
    assert_int_equal(rm.refs, 1);
    assert_int_equal(rm.bytes, form_bytes());
    assert_true(rm.whole);
    snprintf(p, sizeof p, "%s/models--org--tiny", cache);
    assert_false(exists(p));

    pull(cache, "org/tiny");
    add_revision2(cache);
    snprintf(cmd, sizeof cmd, "HF_HUB_CACHE=%s %s rm org/tiny 2>&1", cache, bin_path());
    out = run(cmd, &status);
    assert_int_equal(status, 0);
    assert_non_null(strstr(out, "2 snapshots"));
    assert_non_null(strstr(out, "the repository's folder"));
    free(out);
    assert_false(exists(p));

    snprintf(cmd, sizeof cmd, "HF_HUB_CACHE=%s %s rm org/tiny 2>&1", cache, bin_path());
    out = run(cmd, &status);
    assert_int_equal(status, 1);
    assert_non_null(strstr(out, "not in the Hugging Face cache"));
    free(out);
    snprintf(cmd, sizeof cmd, "HF_HUB_CACHE=%s %s rm models/tiny ../x /etc 2>&1", cache, bin_path());
    out = run(cmd, &status);
    assert_int_equal(status, 2);
    assert_non_null(strstr(out, "'../x' is not a hub name"));
    free(out);
    assert_true(exists("models/tiny/model.safetensors"));          /* a path is never a name to rm */
}

/* A repository folder that is a link out of the cache, a snapshot file linking to a file
 * outside blobs/: refused, or removed as a link while its target stays. */
static void test_rm_stays_inside(void **state)
{
    char cache[512], outside[512], p[1200], q[1200];
    fake_fresh_cache(cache, sizeof cache);
    fake_fresh_cache(outside, sizeof outside);
    /* CACHE/models--org--linked -> OUTSIDE/models--org--linked, a full repository there */
    pull(outside, "org/tiny");
    snprintf(p, sizeof p, "%s/models--org--tiny", outside);
    snprintf(q, sizeof q, "%s/models--org--linked", cache);
    assert_int_equal(symlink(p, q), 0);
    hub_ref ref;
    hub_removed rm;
    mt_err err = {0};
    fake_ref_of("org/linked", &ref);
    assert_int_equal(hub_remove(cache, &ref, 1, &rm, &err), MT_ERR_INPUT);
    assert_non_null(strstr(err.msg, "refused"));
    fake_check_snapshot(outside, "models--org--tiny");
    fake_ref_of("org/linked@main", &ref);
    assert_int_equal(hub_remove(cache, &ref, 0, &rm, &err), MT_ERR_INPUT);
    fake_check_snapshot(outside, "models--org--tiny");

    /* a snapshot whose config.json links to OUTSIDE/precious.txt: the link goes, the file stays */
    pull(cache, "org/tiny");
    snprintf(p, sizeof p, "%s/precious.txt", outside);
    write_file(p, "keep me");
    snprintf(q, sizeof q, "%s/models--org--tiny/snapshots/" COMMIT "/extra.txt", cache);
    assert_int_equal(symlink(p, q), 0);
    fake_ref_of("org/tiny@main", &ref);
    assert_int_equal(hub_remove(cache, &ref, 0, &rm, &err), MT_OK);
    assert_true(rm.whole);
    assert_true(exists(p));
    unsigned char buf[16] = {0};
    assert_int_equal(fake_read_all(p, buf, sizeof buf), 7);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_pairs_table),
        cmocka_unit_test(test_pull_pair),
        cmocka_unit_test(test_models_list),
        cmocka_unit_test(test_rm),
        cmocka_unit_test(test_rm_stays_inside),
    };
    int rc = cmocka_run_group_tests(tests, hub_start, hub_stop);
    kill_all_children();
    return rc;
}
