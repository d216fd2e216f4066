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
 * pulled; `serve --pair ja-ht --pair ja-en` offline serves both from the cache (the
 * shared leg once); a pair with no route is named before any request */
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
    const char *args[] = { "--pair", "ja-ht", "--pair=ja-en", NULL };    /* ja-en, a leg of both: loaded once */
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
    assert_non_null(strstr(out, "2 snapshots, 2 refs"));
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

/* ---- a full disk ------------------------------------------------------------------------ */

/* what a failed pull must not leave: a snapshot file, a ref, or a start that loads it */
static void nothing_loadable(const char *cache)
{
    char p[1200], cmd[2048];
    snprintf(p, sizeof p, "%s/models--org--tiny/snapshots/" COMMIT "/model.safetensors", cache);
    assert_false(exists(p));
    snprintf(p, sizeof p, "%s/models--org--tiny/refs/main", cache);
    assert_false(exists(p));
    hub_ref ref;
    char snap[1024];
    mt_err err = {0};
    fake_ref_of("org/tiny", &ref);
    assert_int_equal(hub_resolve_cached(cache, &ref, snap, sizeof snap, &err), MT_ERR_IO);
    snprintf(cmd, sizeof cmd, "echo 'Hello.' | HF_HUB_OFFLINE=1 HF_ENDPOINT=http://127.0.0.1:9 HF_HUB_CACHE=%s "
             "%s translate --model org/tiny 2>&1", cache, bin_path());
    int status;
    char *out = run(cmd, &status);
    assert_int_not_equal(status, 0);
    assert_non_null(strstr(out, "HF_HUB_OFFLINE"));
    free(out);
}

static char mounted[512];          /* the tmpfs of test_disk_full_tmpfs, unmounted however it ends */

static int unmount_tmpfs(void **state)
{
    if (mounted[0] && umount2(mounted, MNT_DETACH) != 0)
        print_error("umount %s: %s\n", mounted, strerror(errno));
    mounted[0] = 0;
    return 0;
}

/* A 1 MB tmpfs (root only) for a model of 1.2 MB: refused before a byte is written,
 * with the sizes named; once the disk is larger the pull succeeds. */
static void test_disk_full_tmpfs(void **state)
{
    char mnt[512], cache[600];
    fake_fresh_cache(mnt, sizeof mnt);
    if (geteuid() == 0 && mount("tmpfs", mnt, "tmpfs", 0, "size=1m") == 0) {
        snprintf(mounted, sizeof mounted, "%s", mnt);
    } else {
        print_message("no tmpfs can be mounted here (%s): skipped; test_disk_full_write covers a failed write\n",
                      geteuid() != 0 ? "not root" : strerror(errno));
        skip();
    }
    snprintf(cache, sizeof cache, "%s/hub", mnt);
    hub_config cfg;
    fake_config(&cfg, cache);
    hub_ref ref;
    fake_ref_of("org/tiny", &ref);
    char snap[1024], p[1200];
    mt_err err = {0};
    fake_hub_reset_counts();
    assert_int_equal(hub_pull(&cfg, &ref, snap, sizeof snap, &err), MT_ERR_IO);
    assert_non_null(strstr(err.msg, "not enough disk space"));
    assert_non_null(strstr(err.msg, "HF_HUB_CACHE"));
    assert_int_equal(fake_hub.blob_gets, 0);
    snprintf(p, sizeof p, "%s/models--org--tiny/blobs/%s.incomplete", cache, fake_file_named("config.json")->etag);
    assert_false(exists(p));
    nothing_loadable(cache);
    assert_int_equal(mount("tmpfs", mnt, NULL, MS_REMOUNT, "size=4m"), 0);
    assert_int_equal(hub_pull(&cfg, &ref, snap, sizeof snap, &err), MT_OK);
    fake_check_snapshot(cache, "models--org--tiny");
}

/* A write refused mid-file (RLIMIT_FSIZE of 500 kB through bash's ulimit, SIGXFSZ
 * ignored: write(2) fails with EFBIG as a full disk fails with ENOSPC): `mtserve pull`
 * stops at once with the reason and what to do, links nothing; the next pull resumes
 * from the 512,000 bytes kept. */
static void test_disk_full_write(void **state)
{
    char cache[512], cmd[2048], p[1200];
    fake_fresh_cache(cache, sizeof cache);
    snprintf(cmd, sizeof cmd, "HF_ENDPOINT=%s HF_HUB_CACHE=%s bash -c \"trap '' XFSZ; ulimit -f 500; exec %s pull "
             "org/tiny\" 2>&1", fake_hub.endpoint, cache, bin_path());
    fake_hub_reset_counts();
    int status;
    char *out = run(cmd, &status);
    assert_int_equal(status, 1);
    assert_non_null(strstr(out, "File too large"));
    assert_non_null(strstr(out, "the disk of the Hugging Face cache is full"));
    assert_null(strstr(out, "retrying"));                      /* a full disk stays full */
    free(out);
    const fake_file *w = fake_file_named("model.safetensors");
    assert_true(w->len > 500 * 1024);
    snprintf(p, sizeof p, "%s/models--org--tiny/blobs/%s.incomplete", cache, w->etag);
    struct stat st;
    assert_int_equal(stat(p, &st), 0);
    assert_int_equal(st.st_size, 500 * 1024);
    nothing_loadable(cache);
    fake_hub_reset_counts();
    pull(cache, "org/tiny");
    assert_int_equal(fake_hub.last_range_from, 500 * 1024);
    fake_check_snapshot(cache, "models--org--tiny");
}

/* ---- Hugging Face's own JavaScript client ------------------------------------------------- */

static int have_hubjs(void)
{
    if (access("tests/hubjs/node_modules/@huggingface/hub/package.json", R_OK) == 0 &&
        system("node --version >/dev/null 2>&1") == 0)
        return 1;
    print_message("no node or tests/hubjs/node_modules (make deps installs @huggingface/hub): skipped\n");
    return 0;
}

/* its scanCacheDir of cache, as tests/hubjs/scan.mjs prints it */
static json_t *js_scan(const char *cache)
{
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "node tests/hubjs/scan.mjs %s", cache);
    return run_json(cmd);
}

static json_t *js_repo(json_t *scan, const char *name)
{
    size_t i;
    json_t *r;
    json_array_foreach(json_object_get(scan, "repos"), i, r)
        if (strcmp(json_string_value(json_object_get(r, "name")), name) == 0)
            return r;
    return NULL;
}

/* node tests/hubjs/snapshot.mjs: the client's snapshotDownload of name into cache;
 * asserts it ended well and printed the snapshot folder of the fake hub's commit */
static void js_snapshot(const char *cache, const char *name)
{
    char cmd[2048], p[1200], want[1200];
    snprintf(cmd, sizeof cmd, "node tests/hubjs/snapshot.mjs %s %s %s 2>%s.log", fake_hub.endpoint, cache, name,
             cache);
    int status;
    char *out = run(cmd, &status);
    if (status != 0) {
        snprintf(p, sizeof p, "%s.log", cache);
        char log[4096] = {0};
        fake_read_all(p, (unsigned char *)log, sizeof log - 1);
        print_error("%s: exit %d\n%s\n", cmd, status, log);
    }
    assert_int_equal(status, 0);
    const char *slash = strchr(name, '/');
    snprintf(want, sizeof want, "%s/models--%.*s--%s/snapshots/" COMMIT "\n", cache, (int)(slash - name), name,
             slash + 1);
    assert_string_equal(out, want);
    free(out);
}

/* /translate of each text by a server started with args (and env) */
static void translations(const char *const *args, const char *const *env, char *out[3])
{
    /* max_length: random weights run to the limit, which an ASan build takes minutes over */
    static const char *const bodies[] = { "{\"text\": \"Hello world.\", \"beam\": 1, \"max_length\": 24}",
                                          "{\"text\": \"The file is open.\", \"beam\": 1, \"max_length\": 24}",
                                          "{\"text\": \"Where is the station?\", \"beam\": 1, \"max_length\": 24}" };
    server s;
    assert_int_equal(env ? server_start_env(&s, args, env) : server_start(&s, args), 0);
    for (int i = 0; i < 3; i++) {
        reply r = post(&s, "/translate", bodies[i]);
        char why[256];
        out[i] = reply_text(&r, why, sizeof why);
        if (!out[i])
            print_error("translate: %s (%ld %s)\n", why, r.status, r.body ? r.body : "");
        assert_non_null(out[i]);
        reply_free(&r);
    }
    assert_int_equal(server_stop(&s), 0);
}

/* the cache the client wrote, served by name with HF_HUB_OFFLINE=1 and not one request,
 * answers as the model directory dir loaded by path */
static void served_as(const char *cache, const char *name, const char *dir)
{
    char env_cache[600], model_dir[1024], *by_path[3], *by_name[3];
    snprintf(env_cache, sizeof env_cache, "HF_HUB_CACHE=%s", cache);
    snprintf(model_dir, sizeof model_dir, "%s", dir);
    const char *path_args[] = { "--model", model_dir, NULL };
    translations(path_args, NULL, by_path);
    const char *env[] = { "HF_ENDPOINT=http://127.0.0.1:9", env_cache, "HF_HUB_OFFLINE=1", NULL };
    const char *name_args[] = { "--model", name, NULL };
    fake_hub_reset_counts();
    translations(name_args, env, by_name);
    for (int i = 0; i < 3; i++) {
        assert_string_equal(by_name[i], by_path[i]);
        free(by_name[i]);
        free(by_path[i]);
    }
    assert_int_equal(fake_hub.api_requests + fake_hub.resolve_requests + fake_hub.blob_gets, 0);
}

/* @huggingface/hub's snapshotDownload from the fake hub: the same layout, blob names
 * and links as mtserve's; mtserve lists it as loadable and serves it with
 * HF_HUB_OFFLINE=1 and not one request, answering as the model loaded by path:
 * models/tiny, and the OPUS-MT en-mg of `make opus-models` when it was generated. */
static void test_js_cache_served(void **state)
{
    if (!have_hubjs())
        skip();
    char cache[512], cmd[2048], p[1200], target[256], want[256];
    fake_fresh_cache(cache, sizeof cache);
    fake_hub_reset_counts();
    js_snapshot(cache, "org/tiny");
    assert_true(fake_hub.api_requests > 0 && fake_hub.resolve_requests > 0);
    for (int i = 0; i < fake_hub.n_files; i++) {      /* every file, tf_model.h5 too: the client takes all */
        const fake_file *f = &fake_hub.files[i];
        snprintf(p, sizeof p, "%s/models--org--tiny/snapshots/" COMMIT "/%s", cache, f->name);
        ssize_t n = readlink(p, target, sizeof target - 1);
        assert_true(n > 0);
        target[n] = 0;
        snprintf(want, sizeof want, "../../blobs/%s", f->etag);
        assert_string_equal(target, want);
    }
    snprintf(cmd, sizeof cmd, "HF_HUB_CACHE=%s %s models --json", cache, bin_path());
    json_t *j = run_json(cmd);
    json_t *rev = json_array_get(json_object_get(json_array_get(json_object_get(j, "repos"), 0), "revisions"), 0);
    assert_string_equal(json_string_value(json_object_get(rev, "refs")), "main");
    assert_true(json_is_true(json_object_get(rev, "loads")));
    json_decref(j);
    served_as(cache, "org/tiny", "models/tiny");

    if (fake_hub.n_opus == 0) {
        print_message("no $MT_OPUS_DIR/en-mg/safetensors-f32 (make opus-models): OPUS-MT en-mg not tried\n");
        return;
    }
    double t0 = now_s();
    js_snapshot(cache, "Helsinki-NLP/opus-mt-en-mg");
    print_message("@huggingface/hub downloaded opus-mt-en-mg (%.1f MB) in %.2f s\n",
                  (double)fake_file_in(fake_repo_named("Helsinki-NLP/opus-mt-en-mg"), "model.safetensors")->len / 1e6,
                  now_s() - t0);
    const char *opus = getenv("MT_OPUS_DIR");
    char dir[1024];
    snprintf(dir, sizeof dir, "%.900s/en-mg/safetensors-f32", opus ? opus : "build/opus-mt");
    served_as(cache, "Helsinki-NLP/opus-mt-en-mg", dir);
}

/* What `mtserve pull` writes (by branch, by commit alone, both legs of a pair, after an
 * rm of a revision) is read by @huggingface/hub's scanCacheDir without a warning, with
 * the same revisions, refs, blobs and sizes as hub_scan counts. */
static void test_js_scans_mtserve_cache(void **state)
{
    if (!have_hubjs())
        skip();
    char cache[512], cmd[2048];
    fake_fresh_cache(cache, sizeof cache);
    snprintf(cmd, sizeof cmd, "HF_ENDPOINT=%s HF_HUB_CACHE=%s %s pull org/tiny@" COMMIT " >/dev/null 2>&1",
             fake_hub.endpoint, cache, bin_path());
    assert_int_equal(system(cmd), 0);
    json_t *scan = js_scan(cache);             /* by commit alone: no ref, refs/ there all the same */
    assert_int_equal(json_array_size(json_object_get(scan, "warnings")), 0);
    json_t *tiny = js_repo(scan, "org/tiny");
    assert_non_null(tiny);
    assert_int_equal(json_array_size(json_object_get(json_array_get(json_object_get(tiny, "revisions"), 0), "refs")), 0);
    json_decref(scan);

    snprintf(cmd, sizeof cmd, "HF_ENDPOINT=%s HF_HUB_CACHE=%s %s pull org/tiny >/dev/null 2>&1 && HF_ENDPOINT=%s "
             "HF_HUB_CACHE=%s %s pull --pair ja-ht >/dev/null 2>&1", fake_hub.endpoint, cache, bin_path(),
             fake_hub.endpoint, cache, bin_path());
    assert_int_equal(system(cmd), 0);
    add_revision2(cache);
    snprintf(cmd, sizeof cmd, "HF_HUB_CACHE=%s %s rm org/tiny@v2 >/dev/null", cache, bin_path());
    assert_int_equal(system(cmd), 0);
    scan = js_scan(cache);
    json_t *warnings = json_object_get(scan, "warnings");
    if (json_array_size(warnings))
        print_error("scanCacheDir warned: %s\n", json_string_value(json_array_get(warnings, 0)));
    assert_int_equal(json_array_size(warnings), 0);
    assert_int_equal(json_array_size(json_object_get(scan, "repos")), 3);
    hub_cached_repo *repos;
    int n;
    mt_err err = {0};
    assert_int_equal(hub_scan(cache, &repos, &n, &err), MT_OK);
    assert_int_equal(n, 3);
    for (int i = 0; i < n; i++) {
        json_t *r = js_repo(scan, repos[i].repo);
        assert_non_null(r);
        assert_string_equal(json_string_value(json_object_get(r, "type")), "model");
        assert_int_equal(json_integer_value(json_object_get(r, "size")), repos[i].size);
        assert_int_equal(json_integer_value(json_object_get(r, "size")), form_bytes());
        json_t *revs = json_object_get(r, "revisions");
        assert_int_equal(json_array_size(revs), 1);
        json_t *rev = json_array_get(revs, 0);
        assert_string_equal(json_string_value(json_object_get(rev, "commitOid")), COMMIT);
        assert_string_equal(json_string_value(json_array_get(json_object_get(rev, "refs"), 0)), "main");
        json_t *files = json_object_get(rev, "files");
        assert_int_equal(json_array_size(files), 8);
        size_t k;
        json_t *f;
        json_array_foreach(files, k, f) {
            const fake_file *ff = fake_file_named(json_string_value(json_object_get(f, "path")));
            assert_non_null(ff);
            char want[128];
            snprintf(want, sizeof want, "blobs/%s", ff->etag);
            assert_string_equal(json_string_value(json_object_get(f, "blob")), want);
            assert_int_equal(json_integer_value(json_object_get(f, "size")), ff->len);
        }
    }
    hub_scan_free(repos, n);
    json_decref(scan);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_pairs_table),
        cmocka_unit_test(test_pull_pair),
        cmocka_unit_test(test_models_list),
        cmocka_unit_test(test_rm),
        cmocka_unit_test(test_rm_stays_inside),
        cmocka_unit_test_teardown(test_disk_full_tmpfs, unmount_tmpfs),
        cmocka_unit_test(test_disk_full_write),
        cmocka_unit_test(test_js_cache_served),
        cmocka_unit_test(test_js_scans_mtserve_cache),
    };
    int rc = cmocka_run_group_tests(tests, hub_start, hub_stop);
    kill_all_children();
    return rc;
}
