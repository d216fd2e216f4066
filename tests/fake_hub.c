/* fake_hub: a Hugging Face hub on loopback (fake_hub.h). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <dirent.h>
#include <errno.h>
#include <jansson.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fake_hub.h"
#include "harness.h"

#define COMMIT FAKE_COMMIT
#define TOKEN  FAKE_TOKEN

const fake_repo fake_repos[] = {
    { "org/tiny", 0, NULL, NULL, 0 },
    { "org/gated", 1, NULL, NULL, 0 },
    { "org/evil", 0, "../../../outside.txt", NULL, 0 },
    { "org/badetag", 0, NULL, "../../../../escaped", 0 },
    { "Helsinki-NLP/opus-mt-en-mg", 0, NULL, NULL, 1 },
    { "Helsinki-NLP/opus-mt-ja-en", 0, NULL, NULL, 0 },    /* the legs of --pair ja-ht */
    { "Helsinki-NLP/opus-mt-en-ht", 0, NULL, NULL, 0 },
};
const int fake_n_repos = (int)(sizeof fake_repos / sizeof *fake_repos);

fake_hub_state fake_hub = { .mu = PTHREAD_MUTEX_INITIALIZER };

/* ---- the fake hub -------------------------------------------------------------------- */

static void hex(const unsigned char *md, unsigned n, char *out)
{
    for (unsigned i = 0; i < n; i++)
        sprintf(out + 2 * i, "%02x", md[i]);
}

/* git's blob id: sha1("blob LEN\0" + bytes) */
static void git_blob_id(const unsigned char *data, size_t len, char out[41])
{
    char head[32];
    int h = snprintf(head, sizeof head, "blob %zu", len) + 1;
    unsigned char *all = malloc(len + (size_t)h), md[EVP_MAX_MD_SIZE];
    unsigned n = 0;
    memcpy(all, head, (size_t)h);
    memcpy(all + h, data, len);
    assert_true(EVP_Digest(all, len + (size_t)h, md, &n, EVP_sha1(), NULL));
    free(all);
    hex(md, n, out);
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
        hex(md, n, f->etag);
        char pointer[256];          /* what git holds for it: the LFS pointer */
        int k = snprintf(pointer, sizeof pointer, "version https://git-lfs.github.com/spec/v1\noid sha256:%s\n"
                         "size %zu\n", f->etag, f->len);
        git_blob_id((const unsigned char *)pointer, (size_t)k, f->oid);
    } else {
        git_blob_id(f->data, f->len, f->etag);
        memcpy(f->oid, f->etag, sizeof f->oid);
    }
}

static void add_file(const char *name, int lfs, const char *path)
{
    add_file_to(fake_hub.files, &fake_hub.n_files, name, lfs, path);
}

static const fake_file *set_of(const fake_repo *repo, int *n)
{
    *n = repo && repo->opus ? fake_hub.n_opus : fake_hub.n_files;
    return repo && repo->opus ? fake_hub.opus : fake_hub.files;
}

const fake_file *fake_file_in(const fake_repo *repo, const char *name)
{
    int n;
    const fake_file *set = set_of(repo, &n);
    for (int i = 0; i < n; i++)
        if (strcmp(set[i].name, name) == 0)
            return &set[i];
    return NULL;
}

const fake_repo *fake_repo_named(const char *repo)
{
    for (int i = 0; i < fake_n_repos; i++)
        if (strcmp(fake_repos[i].repo, repo) == 0)
            return &fake_repos[i];
    return NULL;
}

const fake_file *fake_file_named(const char *name)
{
    return fake_file_in(NULL, name);
}

static const fake_repo *repo_at(const char *url, const char **rest)
{
    for (int i = 0; i < fake_n_repos; i++) {
        size_t n = strlen(fake_repos[i].repo);
        if (strncmp(url, fake_repos[i].repo, n) == 0 && url[n] == '/') {
            *rest = url + n + 1;
            return &fake_repos[i];
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

/* one file as the tree and paths-info APIs describe it */
static json_t *tree_entry(const fake_file *f, int with_commit)
{
    json_t *e = json_pack("{s:s, s:s, s:s, s:I}", "type", "file", "path", f->name, "oid", f->oid, "size",
                          (json_int_t)f->len);
    if (f->lfs)
        json_object_set_new(e, "lfs", json_pack("{s:s, s:I, s:i}", "oid", f->etag, "size", (json_int_t)f->len,
                                                "pointerSize", 134));
    if (with_commit)
        json_object_set_new(e, "lastCommit", json_pack("{s:s, s:s, s:s}", "id", COMMIT, "title", "Upload",
                                                       "date", "2024-01-01T00:00:00.000Z"));
    return e;
}

/* GET tree/{rev}[/path]: every file; POST paths-info/{rev}: the paths of the body
 * {"paths": [...]} (asked) that exist */
static enum MHD_Result answer_tree(struct MHD_Connection *c, const fake_repo *repo, const char *rest,
                                   const char *asked)
{
    int paths_info = rest[0] == 'p';
    const char *rev = strchr(rest, '/') + 1, *rev_end = strchr(rev, '/');
    if (!rev_known(rev, rev_end ? (size_t)(rev_end - rev) : strlen(rev)))
        return send_json(c, 404, "{\"error\":\"Invalid rev id\"}", "RevisionNotFound");
    json_t *req = paths_info ? json_loads(asked ? asked : "", 0, NULL) : NULL;
    json_t *want = json_object_get(req, "paths");
    json_t *out = json_array();
    int n_set;
    const fake_file *set = set_of(repo, &n_set);
    for (int i = 0; i < n_set; i++) {
        int listed = !paths_info;
        size_t k;
        json_t *p;
        json_array_foreach(want, k, p)
            listed |= json_is_string(p) && strcmp(json_string_value(p), set[i].name) == 0;
        if (listed)
            json_array_append_new(out, tree_entry(&set[i], paths_info));
    }
    json_decref(req);
    char *body = json_dumps(out, JSON_COMPACT);
    enum MHD_Result ret = send_json(c, 200, body, NULL);
    free(body);
    json_decref(out);
    return ret;
}

static enum MHD_Result answer_api(struct MHD_Connection *c, const char *url, const char *asked)
{
    const char *rest;
    const fake_repo *repo = repo_at(url, &rest);
    enum MHD_Result ret;
    if (!repo)
        return send_json(c, 404, "{\"error\":\"Repository not found\"}", "RepoNotFound");
    if (refuse_gated(c, repo, &ret))
        return ret;
    if (strncmp(rest, "tree/", 5) == 0 || strncmp(rest, "paths-info/", 11) == 0)
        return answer_tree(c, repo, rest, asked);
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

/* A Range header "bytes=A-" or "bytes=A-B" over len bytes: 1 and [from, end), else 0 */
static int range_of(struct MHD_Connection *c, size_t len, size_t *from, size_t *end)
{
    const char *range = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Range");
    unsigned long long a = 0, b = 0;
    if (!range || sscanf(range, "bytes=%llu-", &a) != 1 || a >= len)
        return 0;
    *from = (size_t)a;
    *end = sscanf(range, "bytes=%llu-%llu", &a, &b) == 2 && b + 1 < len ? (size_t)b + 1 : len;
    return *end > *from;
}

static void content_range(struct MHD_Response *r, size_t from, size_t end, size_t len)
{
    char cr[96];
    snprintf(cr, sizeof cr, "bytes %zu-%zu/%zu", from, end - 1, len);
    MHD_add_response_header(r, "Content-Range", cr);
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
    const fake_file *f = fake_file_in(repo, slash + 1);
    if (!f)
        return send_json(c, 404, "{\"error\":\"Entry not found\"}", "EntryNotFound");
    if (strstr(f->name, "tf_") || strstr(f->name, "flax") || strstr(f->name, "rust")) {
        pthread_mutex_lock(&fake_hub.mu);
        fake_hub.never_files++;
        pthread_mutex_unlock(&fake_hub.mu);
    }
    char size[32], quoted[80];
    snprintf(size, sizeof size, "%zu", f->len);
    snprintf(quoted, sizeof quoted, "\"%s\"", f->etag);
    struct MHD_Response *r;
    unsigned code;
    if (f->lfs) {
        char loc[256];
        snprintf(loc, sizeof loc, "http://127.0.0.1:%d/blobs/%s", fake_hub.port, f->etag);
        r = MHD_create_response_from_buffer(0, (void *)"", MHD_RESPMEM_PERSISTENT);
        MHD_add_response_header(r, "Location", loc);
        const char *linked = repo->bad_etag && strcmp(f->name, "model.safetensors") == 0 ? repo->bad_etag : quoted;
        MHD_add_response_header(r, "X-Linked-Etag", linked);
        MHD_add_response_header(r, "X-Linked-Size", size);
        code = 302;
    } else {                        /* the bytes, or the part a Range asks for (206) */
        size_t from = 0, end = f->len;
        code = range_of(c, f->len, &from, &end) ? 206 : 200;
        r = MHD_create_response_from_buffer(end - from, f->data + from, MHD_RESPMEM_PERSISTENT);
        if (code == 206)
            content_range(r, from, end, f->len);
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
    pthread_mutex_lock(&fake_hub.mu);
    int slow = fake_hub.slow_ms;
    pthread_mutex_unlock(&fake_hub.mu);
    if (slow > 0) {                 /* a slow link: 4 KB every slow ms */
        usleep((useconds_t)slow * 1000);
        if (max > 4096)
            max = 4096;
    }
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
    for (int i = 0; i < fake_hub.n_files; i++)
        if (fake_hub.files[i].lfs && strcmp(fake_hub.files[i].etag, etag) == 0)
            f = &fake_hub.files[i];
    for (int i = 0; i < fake_hub.n_opus; i++)
        if (fake_hub.opus[i].lfs && strcmp(fake_hub.opus[i].etag, etag) == 0)
            f = &fake_hub.opus[i];
    if (!f)
        return send_json(c, 404, "{\"error\":\"no such blob\"}", NULL);
    blob_body *b = calloc(1, sizeof *b);
    b->data = f->data, b->end = f->len, b->cut = (size_t)-1;
    int ranged = range_of(c, f->len, &b->from, &b->end);
    pthread_mutex_lock(&fake_hub.mu);
    fake_hub.blob_gets++;
    fake_hub.last_range_from = ranged ? (long)b->from : -1;
    if (MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Authorization"))
        fake_hub.auth_to_cdn++;
    if (strcmp(fake_hub.cut_etag, etag) == 0) {
        b->cut = fake_hub.cut_after;
        fake_hub.cut_etag[0] = 0;
    }
    if (strcmp(fake_hub.corrupt_etag, etag) == 0) {
        b->copy = malloc(f->len);
        memcpy(b->copy, f->data, f->len);
        b->copy[f->len / 2] ^= 0x01;
        b->data = b->copy;
        fake_hub.corrupt_etag[0] = 0;
    }
    pthread_mutex_unlock(&fake_hub.mu);
    struct MHD_Response *r = MHD_create_response_from_callback(b->end - b->from, 16384, blob_read, b, blob_free);
    unsigned code = ranged ? 206 : 200;
    if (ranged)
        content_range(r, b->from, b->end, f->len);
    char quoted[80];                /* a CDN's own ETag (@huggingface/hub wants one) */
    snprintf(quoted, sizeof quoted, "\"%s\"", f->etag);
    MHD_add_response_header(r, "ETag", quoted);
    enum MHD_Result ret = MHD_queue_response(c, code, r);
    MHD_destroy_response(r);
    return ret;
}

typedef struct {
    char  *data;                    /* a POST's body, NUL-terminated */
    size_t len;
} post_body;

/* a POST's body gathered over libmicrohttpd's calls: 1 while it is still coming */
static int gather(const char *method, const char *upload, size_t *upload_len, void **state)
{
    if (strcmp(method, "POST") != 0)
        return 0;
    post_body *p = *state;
    if (!p) {
        *state = calloc(1, sizeof *p);
        return 1;
    }
    if (*upload_len == 0)
        return 0;
    if (p->len + *upload_len < (1 << 16)) {
        p->data = realloc(p->data, p->len + *upload_len + 1);
        memcpy(p->data + p->len, upload, *upload_len);
        p->len += *upload_len;
        p->data[p->len] = 0;
    }
    *upload_len = 0;
    return 1;
}

static void on_completed(void *cls, struct MHD_Connection *c, void **state, enum MHD_RequestTerminationCode toe)
{
    post_body *p = *state;
    if (p)
        free(p->data);
    free(p);
    *state = NULL;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url, const char *method,
                                  const char *version, const char *upload, size_t *upload_len, void **state)
{
    if (gather(method, upload, upload_len, state))
        return MHD_YES;
    if (strncmp(url, "/api/models/", 12) == 0) {
        pthread_mutex_lock(&fake_hub.mu);
        fake_hub.api_requests++;
        pthread_mutex_unlock(&fake_hub.mu);
        post_body *p = *state;
        return answer_api(c, url + 12, p ? p->data : NULL);
    }
    if (strncmp(url, "/blobs/", 7) == 0)
        return answer_blob(c, url + 7);
    pthread_mutex_lock(&fake_hub.mu);
    fake_hub.resolve_requests++;
    pthread_mutex_unlock(&fake_hub.mu);
    return answer_resolve(c, url + 1);
}

void fake_hub_reset_counts(void)
{
    pthread_mutex_lock(&fake_hub.mu);
    fake_hub.api_requests = fake_hub.resolve_requests = fake_hub.blob_gets = fake_hub.never_files = fake_hub.auth_to_cdn = 0;
    fake_hub.last_range_from = -1;
    pthread_mutex_unlock(&fake_hub.mu);
}

int fake_hub_start(void)
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
            add_file_to(fake_hub.opus, &fake_hub.n_opus, mg[i].name, mg[i].lfs, path);
        }
    }
    /* free_port's port can be taken before MHD binds it (two test programs run at once):
     * another port then, a few times */
    fake_hub.d = NULL;
    for (int attempt = 0; attempt < 20 && !fake_hub.d; attempt++) {
        fake_hub.port = free_port();
        fake_hub.d = MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_THREAD_PER_CONNECTION,
                                      (uint16_t)fake_hub.port, NULL, NULL, on_request, NULL,
                                      MHD_OPTION_NOTIFY_COMPLETED, on_completed, NULL, MHD_OPTION_END);
    }
    if (!fake_hub.d) {
        fprintf(stderr, "fake_hub: no port could be bound in 20 attempts\n");
        return -1;
    }
    snprintf(fake_hub.endpoint, sizeof fake_hub.endpoint, "http://localhost:%d", fake_hub.port);
    return 0;
}

void fake_hub_stop(void)
{
    MHD_stop_daemon(fake_hub.d);
    for (int i = 0; i < fake_hub.n_files; i++)
        free(fake_hub.files[i].data);
    for (int i = 0; i < fake_hub.n_opus; i++)
        free(fake_hub.opus[i].data);
}

/* ---- helpers --------------------------------------------------------------------------- */

void fake_fresh_cache(char *out, size_t cap)
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

void fake_config(hub_config *cfg, const char *cache)
{
    memset(cfg, 0, sizeof *cfg);
    snprintf(cfg->endpoint, sizeof cfg->endpoint, "%s", fake_hub.endpoint);
    snprintf(cfg->cache, sizeof cfg->cache, "%s", cache);
}

void fake_ref_of(const char *name, hub_ref *ref)
{
    assert_true(hub_ref_parse(name, ref));
}

/* the bytes of path, or -1 length */
long fake_read_all(const char *path, unsigned char *buf, size_t cap)
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
void fake_check_snapshot(const char *cache, const char *repo_folder)
{
    static unsigned char buf[1 << 20];
    char path[1024], target[256], want[256];
    int linked = 0;
    for (int i = 0; i < fake_hub.n_files; i++) {
        const fake_file *f = &fake_hub.files[i];
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
        assert_int_equal(fake_read_all(path, buf, sizeof buf), (long)f->len);
        assert_memory_equal(buf, f->data, f->len);
        linked++;
    }
    assert_int_equal(linked, 8);
    snprintf(path, sizeof path, "%s/%s/refs/main", cache, repo_folder);
    char ref[64] = {0};
    assert_int_equal(fake_read_all(path, (unsigned char *)ref, sizeof ref - 1), 40);
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
int fake_form_blobs(void)
{
    int n = 0;
    for (int i = 0; i < fake_hub.n_files; i++) {
        const fake_file *f = &fake_hub.files[i];
        if (!f->lfs || strstr(f->name, "tf_") || strstr(f->name, "flax") || strstr(f->name, "rust"))
            continue;
        int seen = 0;
        for (int j = 0; j < i; j++)
            seen |= fake_hub.files[j].lfs && strcmp(fake_hub.files[j].etag, f->etag) == 0;
        n += !seen;
    }
    return n;
}


void fake_hub_slow(int ms)
{
    pthread_mutex_lock(&fake_hub.mu);
    fake_hub.slow_ms = ms;
    pthread_mutex_unlock(&fake_hub.mu);
}
