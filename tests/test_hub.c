/* test_hub: models by name from a Hugging Face hub (server/hub, `mtserve pull`,
 * `mtserve serve --model org/name`).
 *
 * The hub is a fake one inside this program (libmicrohttpd on a free loopback port),
 * laid out and answering as huggingface.co does (huggingface_hub's file_download.py):
 *   GET  /api/models/{repo}/revision/{rev}   {"sha": COMMIT, "siblings": [{"rfilename": F}...]}
 *   HEAD/GET /{repo}/resolve/{rev}/{file}    an LFS file: 302 to its blob URL with
 *        X-Linked-Etag (its sha256), X-Linked-Size, ETag, X-Repo-Commit; another file:
 *        200 with ETag (its git blob sha1) and the bytes
 *   GET  /blobs/{sha256}                     the bytes (Range honoured): the "CDN", on another
 *        host name (127.0.0.1) than the endpoint (localhost), so the token must not go there
 *   401 {"error": ...} for the gated repository without its token, 404 for the unknown.
 * Its content is models/tiny (a complete Marian model with random weights), plus
 * files mtserve must never fetch (tf_model.h5, flax, rust).  Faults, each once: the
 * connection cut after N bytes of a blob; one byte of a blob flipped. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <dirent.h>
#include <errno.h>
#include <microhttpd.h>
#include <openssl/evp.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "harness.h"
#include "hub/hub.h"

#define COMMIT "5a9c1e0b7d3f2a4c6e8b0d1f3a5c7e9b1d3f5a7c"
#define TOKEN  "hf_test_token"

typedef struct {
    char           name[64];
    int            lfs;
    unsigned char *data;
    size_t         len;
    char           etag[65];        /* sha256 (LFS) or git blob sha1 */
} fake_file;

typedef struct {
    const char *repo;
    int         gated;
    const char *unsafe_sibling;     /* a file name that walks out of the snapshot */
    const char *bad_etag;           /* the X-Linked-Etag sent for model.safetensors */
    int         opus;               /* its files: the generated OPUS-MT en-mg, not models/tiny */
} fake_repo;

static const fake_repo repos[] = {
    { "org/tiny", 0, NULL, NULL, 0 },
    { "org/gated", 1, NULL, NULL, 0 },
    { "org/evil", 0, "../../../outside.txt", NULL, 0 },
    { "org/badetag", 0, NULL, "../../../../escaped", 0 },
    { "Helsinki-NLP/opus-mt-en-mg", 0, NULL, NULL, 1 },
};
#define N_REPOS (int)(sizeof repos / sizeof *repos)

static struct {
    struct MHD_Daemon *d;
    int        port;
    char       endpoint[64];        /* http://localhost:PORT */
    fake_file  files[16];           /* models/tiny and files never fetched */
    int        n_files;
    fake_file  opus[16];            /* $MT_OPUS_DIR/en-mg/safetensors-f32, when generated */
    int        n_opus;
    pthread_mutex_t mu;
    int        api_requests, resolve_requests, blob_gets, never_files, auth_to_cdn;
    long       last_range_from;     /* -1: none */
    char       cut_etag[65];        /* cut the next GET of this blob after cut_after bytes */
    size_t     cut_after;
    char       corrupt_etag[65];    /* flip a byte of the next GET of this blob */
} hub = { .mu = PTHREAD_MUTEX_INITIALIZER };

/* ---- the fake hub -------------------------------------------------------------------- */

static void hex(const unsigned char *md, unsigned n, char *out)
{
    for (unsigned i = 0; i < n; i++)
        sprintf(out + 2 * i, "%02x", md[i]);
}

static void add_file_to(fake_file *set, int *n_set, const char *name, int lfs, const char *path)
{
    fake_file *f = &set[(*n_set)++];
    snprintf(f->name, sizeof f->name, "%s", name);
    f->lfs = lfs;
    FILE *in = fopen(path, "rb");
    assert_non_null(in);
    fseek(in, 0, SEEK_END);
    f->len = (size_t)ftell(in);
    fseek(in, 0, SEEK_SET);
    f->data = malloc(f->len + 64);
    assert_int_equal(fread(f->data, 1, f->len, in), f->len);
    fclose(in);
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned n = 0;
    if (lfs) {
        assert_true(EVP_Digest(f->data, f->len, md, &n, EVP_sha256(), NULL));
    } else {                        /* git's blob id: sha1("blob LEN\0" + bytes) */
        char head[32];
        int h = snprintf(head, sizeof head, "blob %zu", f->len) + 1;
        unsigned char *all = malloc(f->len + (size_t)h);
        memcpy(all, head, (size_t)h);
        memcpy(all + h, f->data, f->len);
        assert_true(EVP_Digest(all, f->len + (size_t)h, md, &n, EVP_sha1(), NULL));
        free(all);
    }
    hex(md, n, f->etag);
}

static void add_file(const char *name, int lfs, const char *path)
{
    add_file_to(hub.files, &hub.n_files, name, lfs, path);
}

static const fake_file *set_of(const fake_repo *repo, int *n)
{
    *n = repo && repo->opus ? hub.n_opus : hub.n_files;
    return repo && repo->opus ? hub.opus : hub.files;
}

static const fake_file *file_in(const fake_repo *repo, const char *name)
{
    int n;
    const fake_file *set = set_of(repo, &n);
    for (int i = 0; i < n; i++)
        if (strcmp(set[i].name, name) == 0)
            return &set[i];
    return NULL;
}

static const fake_file *file_named(const char *name)
{
    return file_in(NULL, name);
}

static const fake_repo *repo_at(const char *url, const char **rest)
{
    for (int i = 0; i < N_REPOS; i++) {
        size_t n = strlen(repos[i].repo);
        if (strncmp(url, repos[i].repo, n) == 0 && url[n] == '/') {
            *rest = url + n + 1;
            return &repos[i];
        }
    }
    return NULL;
}

static enum MHD_Result send_json(struct MHD_Connection *c, unsigned code, const char *body, const char *err_code)
{
    struct MHD_Response *r = MHD_create_response_from_buffer(strlen(body), (void *)body, MHD_RESPMEM_MUST_COPY);
    MHD_add_response_header(r, "Content-Type", "application/json");
    if (err_code)
        MHD_add_response_header(r, "X-Error-Code", err_code);
    enum MHD_Result ret = MHD_queue_response(c, code, r);
    MHD_destroy_response(r);
    return ret;
}

/* 401 as the hub sends it for a gated repository without a token; 0 when allowed */
static int refuse_gated(struct MHD_Connection *c, const fake_repo *repo, enum MHD_Result *ret)
{
    const char *auth = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Authorization");
    if (!repo->gated || (auth && strcmp(auth, "Bearer " TOKEN) == 0))
        return 0;
    char body[256];
    snprintf(body, sizeof body, "{\"error\":\"Access to model %s is restricted. You must have access to it and be "
             "authenticated to access it. Please log in.\"}", repo->repo);
    *ret = send_json(c, 401, body, "GatedRepo");
    return 1;
}

static int rev_known(const char *rev, size_t n)
{
    return (n == 4 && strncmp(rev, "main", 4) == 0) || (n == 2 && strncmp(rev, "v1", 2) == 0) ||
           (n == 40 && strncmp(rev, COMMIT, 40) == 0);
}

static enum MHD_Result answer_api(struct MHD_Connection *c, const char *url)
{
    const char *rest;
    const fake_repo *repo = repo_at(url, &rest);
    enum MHD_Result ret;
    if (!repo)
        return send_json(c, 404, "{\"error\":\"Repository not found\"}", "RepoNotFound");
    if (refuse_gated(c, repo, &ret))
        return ret;
    if (strncmp(rest, "revision/", 9) != 0 || !rev_known(rest + 9, strlen(rest + 9))) {
        char body[256];
        snprintf(body, sizeof body, "{\"error\":\"Invalid rev id: %.100s\"}", rest + 9);
        return send_json(c, 404, body, "RevisionNotFound");
    }
    char body[4096];
    int n = snprintf(body, sizeof body, "{\"_id\":\"x\",\"id\":\"%s\",\"sha\":\"" COMMIT "\",\"siblings\":["
                     "{\"rfilename\":\".gitattributes\"}", repo->repo);
    int n_set;
    const fake_file *set = set_of(repo, &n_set);
    for (int i = 0; i < n_set; i++)
        n += snprintf(body + n, sizeof body - (size_t)n, ",{\"rfilename\":\"%s\"}", set[i].name);
    if (repo->unsafe_sibling)
        n += snprintf(body + n, sizeof body - (size_t)n, ",{\"rfilename\":\"%s\"}", repo->unsafe_sibling);
    snprintf(body + n, sizeof body - (size_t)n, "]}");
    return send_json(c, 200, body, NULL);
}

static enum MHD_Result answer_resolve(struct MHD_Connection *c, const char *url)
{
    const char *rest;
    const fake_repo *repo = repo_at(url, &rest);
    enum MHD_Result ret;
    if (!repo)
        return send_json(c, 404, "{\"error\":\"Repository not found\"}", "RepoNotFound");
    if (refuse_gated(c, repo, &ret))
        return ret;
    const char *slash = strncmp(rest, "resolve/", 8) == 0 ? strchr(rest + 8, '/') : NULL;
    if (!slash || !rev_known(rest + 8, (size_t)(slash - rest - 8)))
        return send_json(c, 404, "{\"error\":\"Invalid rev id\"}", "RevisionNotFound");
    const fake_file *f = file_in(repo, slash + 1);
    if (!f)
        return send_json(c, 404, "{\"error\":\"Entry not found\"}", "EntryNotFound");
    if (strstr(f->name, "tf_") || strstr(f->name, "flax") || strstr(f->name, "rust")) {
        pthread_mutex_lock(&hub.mu);
        hub.never_files++;
        pthread_mutex_unlock(&hub.mu);
    }
    char size[32], quoted[80];
    snprintf(size, sizeof size, "%zu", f->len);
    snprintf(quoted, sizeof quoted, "\"%s\"", f->etag);
    struct MHD_Response *r;
    unsigned code;
    if (f->lfs) {
        char loc[256];
        snprintf(loc, sizeof loc, "http://127.0.0.1:%d/blobs/%s", hub.port, f->etag);
        r = MHD_create_response_from_buffer(0, (void *)"", MHD_RESPMEM_PERSISTENT);
        MHD_add_response_header(r, "Location", loc);
        const char *linked = repo->bad_etag && strcmp(f->name, "model.safetensors") == 0 ? repo->bad_etag : quoted;
        MHD_add_response_header(r, "X-Linked-Etag", linked);
        MHD_add_response_header(r, "X-Linked-Size", size);
        code = 302;
    } else {
        r = MHD_create_response_from_buffer(f->len, f->data, MHD_RESPMEM_PERSISTENT);
        code = 200;
    }
    MHD_add_response_header(r, "ETag", quoted);
    MHD_add_response_header(r, "X-Repo-Commit", COMMIT);
    ret = MHD_queue_response(c, code, r);
    MHD_destroy_response(r);
    return ret;
}

typedef struct {
    const unsigned char *data;
    size_t from, end, cut;          /* bytes [from, end) of data; the connection dies at cut */
    unsigned char *copy;            /* a corrupted copy, freed with the response */
} blob_body;

static ssize_t blob_read(void *cls, uint64_t pos, char *buf, size_t max)
{
    blob_body *b = cls;
    size_t at = b->from + (size_t)pos;
    if (at >= b->cut)
        return MHD_CONTENT_READER_END_WITH_ERROR;
    size_t n = b->end - at;
    if (n > max)
        n = max;
    if (n > b->cut - at)
        n = b->cut - at;
    memcpy(buf, b->data + at, n);
    return (ssize_t)n;
}

static void blob_free(void *cls)
{
    blob_body *b = cls;
    free(b->copy);
    free(b);
}

static enum MHD_Result answer_blob(struct MHD_Connection *c, const char *etag)
{
    const fake_file *f = NULL;
    for (int i = 0; i < hub.n_files; i++)
        if (hub.files[i].lfs && strcmp(hub.files[i].etag, etag) == 0)
            f = &hub.files[i];
    for (int i = 0; i < hub.n_opus; i++)
        if (hub.opus[i].lfs && strcmp(hub.opus[i].etag, etag) == 0)
            f = &hub.opus[i];
    if (!f)
        return send_json(c, 404, "{\"error\":\"no such blob\"}", NULL);
    blob_body *b = calloc(1, sizeof *b);
    b->data = f->data, b->end = f->len, b->cut = (size_t)-1;
    const char *range = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Range");
    unsigned long long from = 0;
    if (range && sscanf(range, "bytes=%llu-", &from) == 1 && from < f->len)
        b->from = (size_t)from;
    pthread_mutex_lock(&hub.mu);
    hub.blob_gets++;
    hub.last_range_from = range ? (long)from : -1;
    if (MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Authorization"))
        hub.auth_to_cdn++;
    if (strcmp(hub.cut_etag, etag) == 0) {
        b->cut = hub.cut_after;
        hub.cut_etag[0] = 0;
    }
    if (strcmp(hub.corrupt_etag, etag) == 0) {
        b->copy = malloc(f->len);
        memcpy(b->copy, f->data, f->len);
        b->copy[f->len / 2] ^= 0x01;
        b->data = b->copy;
        hub.corrupt_etag[0] = 0;
    }
    pthread_mutex_unlock(&hub.mu);
    struct MHD_Response *r = MHD_create_response_from_callback(b->end - b->from, 16384, blob_read, b, blob_free);
    unsigned code = 200;
    if (b->from > 0) {
        char cr[96];
        snprintf(cr, sizeof cr, "bytes %zu-%zu/%zu", b->from, f->len - 1, f->len);
        MHD_add_response_header(r, "Content-Range", cr);
        code = 206;
    }
    enum MHD_Result ret = MHD_queue_response(c, code, r);
    MHD_destroy_response(r);
    return ret;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url, const char *method,
                                  const char *version, const char *upload, size_t *upload_len, void **state)
{
    if (strncmp(url, "/api/models/", 12) == 0) {
        pthread_mutex_lock(&hub.mu);
        hub.api_requests++;
        pthread_mutex_unlock(&hub.mu);
        return answer_api(c, url + 12);
    }
    if (strncmp(url, "/blobs/", 7) == 0)
        return answer_blob(c, url + 7);
    pthread_mutex_lock(&hub.mu);
    hub.resolve_requests++;
    pthread_mutex_unlock(&hub.mu);
    return answer_resolve(c, url + 1);
}

static void reset_counts(void)
{
    pthread_mutex_lock(&hub.mu);
    hub.api_requests = hub.resolve_requests = hub.blob_gets = hub.never_files = hub.auth_to_cdn = 0;
    hub.last_range_from = -1;
    pthread_mutex_unlock(&hub.mu);
}

static int hub_start(void **state)
{
    static const struct { const char *name; int lfs; } tiny[] = {
        { "config.json", 0 }, { "generation_config.json", 0 }, { "model.safetensors", 1 },
        { "source.spm", 1 }, { "target.spm", 1 }, { "special_tokens_map.json", 0 },
        { "tokenizer_config.json", 0 }, { "vocab.json", 0 },
    };
    char path[1024];
    for (size_t i = 0; i < sizeof tiny / sizeof *tiny; i++) {
        snprintf(path, sizeof path, "models/tiny/%s", tiny[i].name);
        add_file(tiny[i].name, tiny[i].lfs, path);
    }
    /* the forms mtserve must never fetch (their bytes do not matter) */
    add_file("tf_model.h5", 1, "models/tiny/config.json");
    add_file("flax_model.msgpack", 1, "models/tiny/generation_config.json");
    add_file("rust_model.ot", 1, "models/tiny/vocab.json");
    /* the OPUS-MT en-mg of `make opus-models` (real config and tokenizers of ../shared/opus-mt,
     * random weights), when it has been generated: test_serve_opus_by_name */
    const char *opus = getenv("MT_OPUS_DIR");
    char dir[900];
    snprintf(dir, sizeof dir, "%.800s/en-mg/safetensors-f32", opus ? opus : "build/opus-mt");
    snprintf(path, sizeof path, "%s/config.json", dir);
    if (access(path, R_OK) == 0) {
        static const struct { const char *name; int lfs; } mg[] = {
            { "config.json", 0 }, { "tokenizer_config.json", 0 }, { "vocab.json", 0 },
            { "source.spm", 1 }, { "target.spm", 1 }, { "model.safetensors", 1 },
        };
        for (size_t i = 0; i < sizeof mg / sizeof *mg; i++) {
            snprintf(path, sizeof path, "%s/%s", dir, mg[i].name);
            add_file_to(hub.opus, &hub.n_opus, mg[i].name, mg[i].lfs, path);
        }
    }
    hub.port = free_port();
    hub.d = MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_THREAD_PER_CONNECTION, (uint16_t)hub.port,
                             NULL, NULL, on_request, NULL, MHD_OPTION_END);
    if (!hub.d)
        return -1;
    snprintf(hub.endpoint, sizeof hub.endpoint, "http://localhost:%d", hub.port);
    return 0;
}

static int hub_stop(void **state)
{
    MHD_stop_daemon(hub.d);
    for (int i = 0; i < hub.n_files; i++)
        free(hub.files[i].data);
    for (int i = 0; i < hub.n_opus; i++)
        free(hub.opus[i].data);
    return 0;
}

/* ---- helpers --------------------------------------------------------------------------- */

static void fresh_cache(char *out, size_t cap)
{
    char tmpl[512];
    const char *bin = bin_path(), *slash = strrchr(bin, '/');
    snprintf(tmpl, sizeof tmpl, "%.*s/tests/hubcache-XXXXXX", slash ? (int)(slash - bin) : 1, slash ? bin : ".");
    char dir[512];
    snprintf(dir, sizeof dir, "%.*s/tests", slash ? (int)(slash - bin) : 1, slash ? bin : ".");
    mkdir(dir, 0755);
    assert_non_null(mkdtemp(tmpl));
    snprintf(out, cap, "%s", tmpl);
}

static void config(hub_config *cfg, const char *cache)
{
    memset(cfg, 0, sizeof *cfg);
    snprintf(cfg->endpoint, sizeof cfg->endpoint, "%s", hub.endpoint);
    snprintf(cfg->cache, sizeof cfg->cache, "%s", cache);
}

static void ref_of(const char *name, hub_ref *ref)
{
    assert_true(hub_ref_parse(name, ref));
}

/* the bytes of path, or -1 length */
static long read_all(const char *path, unsigned char *buf, size_t cap)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return -1;
    size_t n = fread(buf, 1, cap, f);
    fclose(f);
    return (long)n;
}

/* the snapshot holds exactly the form's files, each a link to ../../blobs/ETAG with the
 * hub's bytes; refs/main names the commit; no .incomplete is left */
static void check_snapshot(const char *cache, const char *repo_folder)
{
    static unsigned char buf[1 << 20];
    char path[1024], target[256], want[256];
    int linked = 0;
    for (int i = 0; i < hub.n_files; i++) {
        const fake_file *f = &hub.files[i];
        snprintf(path, sizeof path, "%s/%s/snapshots/" COMMIT "/%s", cache, repo_folder, f->name);
        struct stat st;
        int never = strstr(f->name, "tf_") || strstr(f->name, "flax") || strstr(f->name, "rust");
        if (never) {
            assert_int_not_equal(lstat(path, &st), 0);
            continue;
        }
        assert_int_equal(lstat(path, &st), 0);
        assert_true(S_ISLNK(st.st_mode));
        ssize_t n = readlink(path, target, sizeof target - 1);
        assert_true(n > 0);
        target[n] = 0;
        snprintf(want, sizeof want, "../../blobs/%s", f->etag);
        assert_string_equal(target, want);
        assert_int_equal(read_all(path, buf, sizeof buf), (long)f->len);
        assert_memory_equal(buf, f->data, f->len);
        linked++;
    }
    assert_int_equal(linked, 8);
    snprintf(path, sizeof path, "%s/%s/refs/main", cache, repo_folder);
    char ref[64] = {0};
    assert_int_equal(read_all(path, (unsigned char *)ref, sizeof ref - 1), 40);
    assert_string_equal(ref, COMMIT);
    snprintf(path, sizeof path, "%s/%s/blobs", cache, repo_folder);
    DIR *d = opendir(path);
    assert_non_null(d);
    for (struct dirent *e; (e = readdir(d));)
        assert_null(strstr(e->d_name, ".incomplete"));
    closedir(d);
}

/* the distinct LFS blobs of the form (source.spm and target.spm of models/tiny are the
 * same bytes: one blob, fetched once, linked twice) */
static int form_blobs(void)
{
    int n = 0;
    for (int i = 0; i < hub.n_files; i++) {
        const fake_file *f = &hub.files[i];
        if (!f->lfs || strstr(f->name, "tf_") || strstr(f->name, "flax") || strstr(f->name, "rust"))
            continue;
        int seen = 0;
        for (int j = 0; j < i; j++)
            seen |= hub.files[j].lfs && strcmp(hub.files[j].etag, f->etag) == 0;
        n += !seen;
    }
    return n;
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
    fresh_cache(cache, sizeof cache);
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
    snprintf(p, sizeof p, "%s/%s/blobs/%s", cache, repo, hub.files[0].etag);
    FILE *f = fopen(p, "w");
    fputs("{}", f);
    fclose(f);
    snprintf(p, sizeof p, "%s/%s/snapshots/" COMMIT "/config.json", cache, repo);
    char target[128];
    snprintf(target, sizeof target, "../../blobs/%s", hub.files[0].etag);
    assert_int_equal(symlink(target, p), 0);
    snprintf(p, sizeof p, "%s/%s/refs/main", cache, repo);
    f = fopen(p, "w");
    fputs(COMMIT, f);                /* huggingface_hub writes no newline */
    fclose(f);

    hub_ref ref;
    mt_err err = {0};
    char want[1024];
    snprintf(want, sizeof want, "%s/%s/snapshots/" COMMIT, cache, repo);
    ref_of("Helsinki-NLP/opus-mt-en-xx", &ref);
    /* a config alone (a client that read only it) is not the model */
    assert_int_equal(hub_resolve_cached(cache, &ref, snap, sizeof snap, &err), MT_ERR_IO);
    assert_non_null(strstr(err.msg, "no model.safetensors or pytorch_model.bin"));
    snprintf(p, sizeof p, "%s/%s/blobs/%s", cache, repo, file_named("model.safetensors")->etag);
    f = fopen(p, "w");
    fputs("weights", f);
    fclose(f);
    snprintf(p, sizeof p, "%s/%s/snapshots/" COMMIT "/pytorch_model.bin", cache, repo);
    snprintf(target, sizeof target, "../../blobs/%s", file_named("model.safetensors")->etag);
    assert_int_equal(symlink(target, p), 0);
    assert_int_equal(hub_resolve_cached(cache, &ref, snap, sizeof snap, &err), MT_OK);
    assert_string_equal(snap, want);
    ref_of("Helsinki-NLP/opus-mt-en-xx@" COMMIT, &ref);
    assert_int_equal(hub_resolve_cached(cache, &ref, snap, sizeof snap, &err), MT_OK);
    assert_string_equal(snap, want);
    ref_of("Helsinki-NLP/opus-mt-en-xx@v2", &ref);
    assert_int_equal(hub_resolve_cached(cache, &ref, snap, sizeof snap, &err), MT_ERR_IO);
    assert_non_null(strstr(err.msg, "not in the Hugging Face cache"));
    ref_of("Helsinki-NLP/opus-mt-en-yy", &ref);
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
    fresh_cache(cache, sizeof cache);
    hub_config cfg;
    config(&cfg, cache);
    snprintf(cfg.token, sizeof cfg.token, "%s", TOKEN);
    hub_ref ref;
    ref_of("org/tiny", &ref);
    mt_err err = {0};
    reset_counts();
    mt_status st = hub_pull(&cfg, &ref, snap, sizeof snap, &err);
    if (st != MT_OK)
        print_error("pull: %s\n", err.msg);
    assert_int_equal(st, MT_OK);
    check_snapshot(cache, "models--org--tiny");
    assert_int_equal(hub.never_files, 0);
    assert_int_equal(form_blobs(), 2);
    assert_int_equal(hub.blob_gets, form_blobs());  /* each LFS blob once */
    assert_int_equal(hub.auth_to_cdn, 0);
    assert_int_equal(hub.api_requests, 1);
    char resolved[1024];
    assert_int_equal(hub_resolve_cached(cache, &ref, resolved, sizeof resolved, &err), MT_OK);
    assert_string_equal(resolved, snap);
    reset_counts();
    assert_int_equal(hub_pull(&cfg, &ref, snap, sizeof snap, &err), MT_OK);
    assert_int_equal(hub.blob_gets, 0);             /* the blobs are there: only HEADs */
    /* by commit and by tag: the same snapshot, refs/v1 written */
    ref_of("org/tiny@v1", &ref);
    assert_int_equal(hub_pull(&cfg, &ref, resolved, sizeof resolved, &err), MT_OK);
    assert_string_equal(resolved, snap);
    assert_int_equal(hub_resolve_cached(cache, &ref, resolved, sizeof resolved, &err), MT_OK);
}

/* one byte flipped in model.safetensors: refused by its sha256, never linked, the
 * partial file removed; the next pull gets the right bytes */
static void test_corrupted_byte_refused(void **state)
{
    char cache[512], snap[1024], path[1200];
    fresh_cache(cache, sizeof cache);
    hub_config cfg;
    config(&cfg, cache);
    hub_ref ref;
    ref_of("org/tiny", &ref);
    const fake_file *w = file_named("model.safetensors");
    pthread_mutex_lock(&hub.mu);
    snprintf(hub.corrupt_etag, sizeof hub.corrupt_etag, "%s", w->etag);
    pthread_mutex_unlock(&hub.mu);
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
    check_snapshot(cache, "models--org--tiny");
}

/* the connection dies after 100 kB of model.safetensors: the pull resumes from there
 * with Range and the file checks out; so does a later pull after a crashed one */
static void test_cut_connection_resumed(void **state)
{
    char cache[512], snap[1024];
    fresh_cache(cache, sizeof cache);
    hub_config cfg;
    config(&cfg, cache);
    hub_ref ref;
    ref_of("org/tiny", &ref);
    const fake_file *w = file_named("model.safetensors");
    reset_counts();
    pthread_mutex_lock(&hub.mu);
    snprintf(hub.cut_etag, sizeof hub.cut_etag, "%s", w->etag);
    hub.cut_after = 100000;
    pthread_mutex_unlock(&hub.mu);
    mt_err err = {0};
    mt_status st = hub_pull(&cfg, &ref, snap, sizeof snap, &err);
    if (st != MT_OK)
        print_error("pull: %s\n", err.msg);
    assert_int_equal(st, MT_OK);
    assert_int_equal(hub.blob_gets, form_blobs() + 1);     /* and the resumed one */
    check_snapshot(cache, "models--org--tiny");
    /* the resumed GET asked for the rest: a Range from what had arrived (at least the
     * part libmicrohttpd flushed before the cut, at most the cut) */
    assert_true(hub.last_range_from > 0 && hub.last_range_from <= 100000);

    /* a later run: the 50,000 bytes a crashed pull left in blobs/ETAG.incomplete are kept,
     * the rest asked for with Range */
    char path[1200];
    fresh_cache(cache, sizeof cache);
    snprintf(path, sizeof path, "%s/models--org--tiny", cache);
    assert_int_equal(mkdir(path, 0755), 0);
    snprintf(path, sizeof path, "%s/models--org--tiny/blobs", cache);
    assert_int_equal(mkdir(path, 0755), 0);
    snprintf(path, sizeof path, "%s/models--org--tiny/blobs/%s.incomplete", cache, w->etag);
    FILE *f = fopen(path, "wb");
    assert_int_equal(fwrite(w->data, 1, 50000, f), 50000);
    fclose(f);
    config(&cfg, cache);
    reset_counts();
    assert_int_equal(hub_pull(&cfg, &ref, snap, sizeof snap, &err), MT_OK);
    assert_int_equal(hub.last_range_from, 50000);
    check_snapshot(cache, "models--org--tiny");
}

/* file names, etags and revisions that would walk out of the cache are refused and
 * nothing is written outside it */
static void test_path_traversal_refused(void **state)
{
    char cache[512], snap[1024], path[1200];
    fresh_cache(cache, sizeof cache);
    hub_config cfg;
    config(&cfg, cache);
    hub_ref ref;
    mt_err err = {0};
    ref_of("org/evil", &ref);
    assert_int_equal(hub_pull(&cfg, &ref, snap, sizeof snap, &err), MT_ERR_FORMAT);
    assert_non_null(strstr(err.msg, "unsafe path"));
    ref_of("org/badetag", &ref);
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
    fresh_cache(cache, sizeof cache);
    hub_config cfg;
    config(&cfg, cache);
    cfg.offline = 1;
    hub_ref ref;
    ref_of("org/tiny", &ref);
    mt_err err = {0};
    reset_counts();
    assert_int_equal(hub_model_dir(&cfg, &ref, snap, sizeof snap, &err), MT_ERR_IO);
    assert_non_null(strstr(err.msg, "HF_HUB_OFFLINE"));
    assert_non_null(strstr(err.msg, "org/tiny"));
    assert_int_equal(hub.api_requests + hub.resolve_requests + hub.blob_gets, 0);
    cfg.offline = 0;
    assert_int_equal(hub_model_dir(&cfg, &ref, snap, sizeof snap, &err), MT_OK);
    cfg.offline = 1;
    reset_counts();
    char again[1024];
    assert_int_equal(hub_model_dir(&cfg, &ref, again, sizeof again, &err), MT_OK);
    assert_string_equal(again, snap);
    assert_int_equal(hub.api_requests + hub.resolve_requests + hub.blob_gets, 0);
}

/* gated without a token: the hub's own words and what to do; with it: downloaded.
 * Unknown repository, unknown revision: named. */
static void test_gated_and_unknown(void **state)
{
    char cache[512], snap[1024];
    fresh_cache(cache, sizeof cache);
    hub_config cfg;
    config(&cfg, cache);
    hub_ref ref;
    mt_err err = {0};
    ref_of("org/gated", &ref);
    assert_int_equal(hub_pull(&cfg, &ref, snap, sizeof snap, &err), MT_ERR_IO);
    assert_non_null(strstr(err.msg, "Access to model org/gated is restricted"));
    assert_non_null(strstr(err.msg, "HF_TOKEN"));
    assert_non_null(strstr(err.msg, "401"));
    snprintf(cfg.token, sizeof cfg.token, "%s", TOKEN);
    assert_int_equal(hub_pull(&cfg, &ref, snap, sizeof snap, &err), MT_OK);
    check_snapshot(cache, "models--org--gated");
    ref_of("org/nothing", &ref);
    assert_int_equal(hub_pull(&cfg, &ref, snap, sizeof snap, &err), MT_ERR_INPUT);
    assert_non_null(strstr(err.msg, "Repository not found"));
    ref_of("org/tiny@v9", &ref);
    assert_int_equal(hub_pull(&cfg, &ref, snap, sizeof snap, &err), MT_ERR_INPUT);
    assert_non_null(strstr(err.msg, "Invalid rev id: v9"));
}

/* ---- the binary --------------------------------------------------------------------------- */

/* `mtserve pull org/tiny` prints the snapshot, `mtserve translate --model org/tiny` reads
 * it offline; HF_HUB_OFFLINE=1 with an empty cache fails */
static void test_cli_pull(void **state)
{
    char cache[512], cmd[2048], line[1200] = {0};
    fresh_cache(cache, sizeof cache);
    snprintf(cmd, sizeof cmd, "HF_ENDPOINT=%s HF_HUB_CACHE=%s %s pull org/tiny 2>/dev/null", hub.endpoint, cache,
             bin_path());
    FILE *p = popen(cmd, "r");
    assert_non_null(p);
    assert_non_null(fgets(line, sizeof line, p));
    assert_int_equal(pclose(p), 0);
    char want[1200];
    snprintf(want, sizeof want, "%s/models--org--tiny/snapshots/" COMMIT "\n", cache);
    assert_string_equal(line, want);
    check_snapshot(cache, "models--org--tiny");
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
    fresh_cache(cache, sizeof cache);
    snprintf(cmd, sizeof cmd, "HF_HUB_OFFLINE=1 HF_ENDPOINT=%s HF_HUB_CACHE=%s %s pull org/tiny 2>&1", hub.endpoint,
             cache, bin_path());
    p = popen(cmd, "r");
    assert_non_null(fgets(line, sizeof line, p));
    int status = pclose(p);
    assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 1);
    assert_non_null(strstr(line, "HF_HUB_OFFLINE"));
}

static char *translate(server *s, const char *text)
{
    char body[512], why[256];
    snprintf(body, sizeof body, "{\"text\": \"%s\", \"beam\": 1}", text);
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
    fresh_cache(cache, sizeof cache);
    snprintf(env_ep, sizeof env_ep, "HF_ENDPOINT=%s", hub.endpoint);
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
    reset_counts();
    double t0 = now_s();
    assert_int_equal(server_start_env(&s, name_args, env), 0);
    double took = now_s() - t0;
    assert_int_equal(hub.blob_gets, blobs);
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
    reset_counts();
    assert_int_equal(server_start_env(&s, name_args, offline_env), 0);
    for (int i = 0; i < 3; i++) {
        char *t = translate(&s, texts[i]);
        assert_non_null(t);
        assert_string_equal(t, by_path[i]);
        free(t);
    }
    assert_int_equal(server_stop(&s), 0);
    assert_int_equal(hub.api_requests + hub.resolve_requests + hub.blob_gets, 0);
    for (int i = 0; i < 3; i++)
        free(by_path[i]);
    return took;
}

static void test_serve_by_name(void **state)
{
    serve_compare("org/tiny", "models/tiny", form_blobs());
}

/* the issue's case: Helsinki-NLP/opus-mt-en-mg, the real OPUS-MT config and tokenizers
 * with random weights (141 MB of model.safetensors), when `make opus-models` made it */
static void test_serve_opus_by_name(void **state)
{
    if (hub.n_opus == 0) {
        print_message("no $MT_OPUS_DIR/en-mg/safetensors-f32 (make opus-models): skipped\n");
        skip();
    }
    char dir[1024];
    const char *opus = getenv("MT_OPUS_DIR");
    snprintf(dir, sizeof dir, "%.900s/en-mg/safetensors-f32", opus ? opus : "build/opus-mt");
    double took = serve_compare("Helsinki-NLP/opus-mt-en-mg", dir, 3);
    print_message("opus-mt-en-mg by name: downloaded (%.1f MB), checked and loaded in %.2f s\n",
                  (double)file_in(&repos[N_REPOS - 1], "model.safetensors")->len / 1e6, took);
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
    };
    int rc = cmocka_run_group_tests(tests, hub_start, hub_stop);
    kill_all_children();
    return rc;
}
