/* hub_fetch: downloads from a Hugging Face hub with libcurl (see hub.h).
 *
 * As huggingface_hub does (file_download.py): the revision's file list from
 * /api/models/{repo}/revision/{rev}; for each file a HEAD of
 * /{repo}/resolve/{commit}/{file} without following the hub's redirect, whose
 * headers name the blob (X-Linked-Etag for LFS files, else ETag) and its size
 * (X-Linked-Size, else Content-Length); then a GET of the redirect's target (or of
 * the resolve URL) into blobs/ETAG.incomplete, resumed with Range when it exists,
 * checked (size; sha256 for LFS, the git blob sha1 otherwise), renamed to
 * blobs/ETAG, and only then linked as snapshots/COMMIT/FILE -> ../../blobs/ETAG.
 * refs/REV is written last: a crash never leaves a snapshot a later start loads
 * with a file missing or unchecked.
 */
#include "hub.h"

#include <curl/curl.h>
#include <errno.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#define HUB_TRIES 4             /* attempts at one file: a dropped connection resumes */

typedef struct {
    long     code;
    char     location[2048];    /* the Location header as sent */
    char     etag[80], linked_etag[80], linked_size[32], length[32], error_msg[256];
    char     body[16384];       /* an API answer or an error body (cut) */
    size_t   body_len;
    FILE    *sink;              /* a 2xx body goes here when set */
    uint64_t written, total;
    int      write_failed;      /* errno of a failed write */
    const hub_config *cfg;
    const char *file;
    CURL    *curl;
} hub_resp;

static size_t on_header(char *line, size_t size, size_t n, void *ud)
{
    hub_resp *r = ud;
    size_t len = size * n;
    if (len > 5 && memcmp(line, "HTTP/", 5) == 0) {     /* a new response (after a 100 or a redirect) */
        r->location[0] = r->etag[0] = r->linked_etag[0] = r->linked_size[0] = r->length[0] = 0;
        r->error_msg[0] = 0;
    }
    hub_header_value(line, len, "Location", r->location, sizeof r->location);
    hub_header_value(line, len, "ETag", r->etag, sizeof r->etag);
    hub_header_value(line, len, "X-Linked-Etag", r->linked_etag, sizeof r->linked_etag);
    hub_header_value(line, len, "X-Linked-Size", r->linked_size, sizeof r->linked_size);
    hub_header_value(line, len, "Content-Length", r->length, sizeof r->length);
    hub_header_value(line, len, "X-Error-Message", r->error_msg, sizeof r->error_msg);
    return len;
}

static size_t on_body(char *data, size_t size, size_t n, void *ud)
{
    hub_resp *r = ud;
    size_t len = size * n;
    long code = 0;
    curl_easy_getinfo(r->curl, CURLINFO_RESPONSE_CODE, &code);
    if (r->sink && code >= 200 && code < 300) {
        if (fwrite(data, 1, len, r->sink) != len) {
            r->write_failed = errno ? errno : EIO;
            return 0;
        }
        r->written += len;
        if (r->cfg->progress)
            r->cfg->progress(r->cfg->progress_ud, r->file, r->written, r->total);
        return len;
    }
    size_t room = sizeof r->body - 1 - r->body_len;
    size_t k = len < room ? len : room;
    memcpy(r->body + r->body_len, data, k);
    r->body_len += k;
    r->body[r->body_len] = 0;
    return len;
}

/* One request.  head: HEAD; from > 0: Range bytes=from-.  The token goes only to the
 * endpoint itself, never to a CDN the hub redirects to. */
static CURLcode http_do(const hub_config *cfg, const char *url, int head, uint64_t from, hub_resp *r)
{
    CURL *c = curl_easy_init();
    if (!c)
        return CURLE_FAILED_INIT;
    struct curl_slist *hdrs = NULL;
    char auth[600], range[64];
    size_t elen = strlen(cfg->endpoint);
    if (cfg->token[0] && strncmp(url, cfg->endpoint, elen) == 0 && (url[elen] == '/' || url[elen] == 0)) {
        snprintf(auth, sizeof auth, "Authorization: Bearer %s", cfg->token);
        hdrs = curl_slist_append(hdrs, auth);
    }
    hdrs = curl_slist_append(hdrs, "Accept-Encoding: identity");    /* the sizes are the bytes' */
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, hdrs);
    curl_easy_setopt(c, CURLOPT_USERAGENT, "mtserve; hf_hub-compatible");
    curl_easy_setopt(c, CURLOPT_NOBODY, head ? 1L : 0L);
    curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, on_header);
    curl_easy_setopt(c, CURLOPT_HEADERDATA, r);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, r);
    curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT, 20L);
    curl_easy_setopt(c, CURLOPT_LOW_SPEED_LIMIT, 1L);              /* stalled 60 s: give up, resume later */
    curl_easy_setopt(c, CURLOPT_LOW_SPEED_TIME, 60L);
    curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(c, CURLOPT_FOLLOWLOCATION, head ? 0L : 1L);   /* a GET follows the CDN's own redirects */
    curl_easy_setopt(c, CURLOPT_REDIR_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(c, CURLOPT_MAXREDIRS, 5L);
    if (from > 0) {
        snprintf(range, sizeof range, "%llu-", (unsigned long long)from);
        curl_easy_setopt(c, CURLOPT_RANGE, range);
    }
    r->code = 0;
    r->curl = c;
    CURLcode rc = curl_easy_perform(c);
    long code = 0;
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &code);
    r->code = code;
    curl_slist_free_all(hdrs);
    curl_easy_cleanup(c);
    return rc;
}

/* A hub's error answer as a message: its own words (X-Error-Message or the body's
 * "error") after what the status means for the caller. */
static mt_status hub_refusal(const hub_resp *r, const hub_ref *ref, const char *what, mt_err *err)
{
    char msg[256];
    hub_error_message(r->body, r->body_len, msg, sizeof msg);
    if (!msg[0])
        snprintf(msg, sizeof msg, "%s", r->error_msg);
    const char *meaning = r->code == 401 || r->code == 403
        ? "the repository is gated or private: accept its terms on the hub and set HF_TOKEN"
        : r->code == 404 ? "repository or revision not found" : "the hub refused";
    return mt_err_set(err, r->code == 404 ? MT_ERR_INPUT : MT_ERR_IO, "%s@%s: %s (HTTP %ld%s%s%s)", ref->repo,
                      ref->rev, meaning, r->code, msg[0] ? ": " : "", msg, what);
}

static mt_status fetch_file_list(const hub_config *cfg, const hub_ref *ref, hub_file_list *list, mt_err *err)
{
    char url[1200];
    snprintf(url, sizeof url, "%s/api/models/%s/revision/%s", cfg->endpoint, ref->repo, ref->rev);
    hub_resp *r = calloc(1, sizeof *r);
    if (!r)
        return mt_err_set(err, MT_ERR_NOMEM, "out of memory");
    r->cfg = cfg;
    mt_status st = MT_OK;
    CURLcode rc = http_do(cfg, url, 0, 0, r);
    if (rc != CURLE_OK)
        st = mt_err_set(err, MT_ERR_IO, "%s: %s", url, curl_easy_strerror(rc));
    else if (r->code != 200)
        st = hub_refusal(r, ref, "", err);
    else
        st = hub_parse_file_list(r->body, r->body_len, list, err);
    free(r);
    return st;
}

/* The file's digest as its etag names it: sha256 (64 hex, an LFS file) or git's
 * blob sha1 (40 hex: sha1 of "blob SIZE\0" and the bytes). */
static int file_digest(const char *path, size_t hex_len, char *out)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return -1;
    EVP_MD_CTX *ctx = EVP_MD_CTX_new();
    int ok = ctx && EVP_DigestInit_ex(ctx, hex_len == 64 ? EVP_sha256() : EVP_sha1(), NULL);
    if (ok && hex_len == 40) {
        struct stat st;
        char head[64];
        ok = fstat(fileno(f), &st) == 0;
        int n = snprintf(head, sizeof head, "blob %lld", (long long)st.st_size);
        ok = ok && EVP_DigestUpdate(ctx, head, (size_t)n + 1);
    }
    static __thread unsigned char buf[1 << 16];
    size_t n;
    while (ok && (n = fread(buf, 1, sizeof buf, f)) > 0)
        ok = EVP_DigestUpdate(ctx, buf, n);
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int md_len = 0;
    ok = ok && !ferror(f) && EVP_DigestFinal_ex(ctx, md, &md_len);
    for (unsigned int i = 0; ok && i < md_len; i++)
        sprintf(out + 2 * i, "%02x", md[i]);
    EVP_MD_CTX_free(ctx);
    fclose(f);
    return ok ? 0 : -1;
}

static int mkdir_p(const char *path)
{
    char tmp[2048];
    snprintf(tmp, sizeof tmp, "%s", path);
    for (char *p = tmp + 1; *p; p++)
        if (*p == '/') {
            *p = 0;
            if (mkdir(tmp, 0755) != 0 && errno != EEXIST)
                return -1;
            *p = '/';
        }
    return mkdir(tmp, 0755) != 0 && errno != EEXIST ? -1 : 0;
}

static uint64_t file_size(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 ? (uint64_t)st.st_size : 0;
}

typedef struct {
    char     etag[65];          /* the blob's name: its sha256 (LFS) or git sha1 */
    uint64_t size;
    char     url[2048];         /* where its bytes are: the redirect's target or the resolve URL */
} hub_blob;

/* HEAD of the resolve URL; a relative redirect (a renamed repository) is followed,
 * the hub's redirect to its CDN is not: its headers name the blob. */
static mt_status blob_info(const hub_config *cfg, const hub_ref *ref, const char *commit, const char *file,
                           hub_blob *b, mt_err *err)
{
    char url[2048];
    snprintf(url, sizeof url, "%s/%s/resolve/%s/%s", cfg->endpoint, ref->repo, commit, file);
    hub_resp *r = calloc(1, sizeof *r);
    if (!r)
        return mt_err_set(err, MT_ERR_NOMEM, "out of memory");
    r->cfg = cfg;
    mt_status st = MT_OK;
    for (int hop = 0;; hop++) {
        CURLcode rc = http_do(cfg, url, 1, 0, r);
        if (rc != CURLE_OK) {
            st = mt_err_set(err, MT_ERR_IO, "%s: %s", url, curl_easy_strerror(rc));
            goto done;
        }
        if (r->code >= 300 && r->code < 400 && r->location[0] == '/' && hop < 5) {
            snprintf(url, sizeof url, "%s%.1500s", cfg->endpoint, r->location);
            continue;
        }
        break;
    }
    if (r->code >= 400) {
        char what[128];
        snprintf(what, sizeof what, ", for %.100s", file);
        st = hub_refusal(r, ref, what, err);
        goto done;
    }
    const char *etag = r->linked_etag[0] ? r->linked_etag : r->etag;
    const char *size = r->linked_size[0] ? r->linked_size : r->length;
    char *end;
    b->size = strtoull(size, &end, 10);
    if (!hub_parse_etag(etag, strlen(etag), b->etag, sizeof b->etag) || !size[0] || *end) {
        st = mt_err_set(err, MT_ERR_FORMAT, "%s: the hub sent no usable ETag and size for %s (ETag '%.80s')",
                        ref->repo, file, etag);
        goto done;
    }
    if (r->code >= 300 && r->code < 400 && r->location[0])
        snprintf(b->url, sizeof b->url, "%s", r->location);
    else
        snprintf(b->url, sizeof b->url, "%s", url);
done:
    free(r);
    return st;
}

/* a write refused for want of room: no retry helps, the message says what to do */
static int disk_full(int e)
{
    return e == ENOSPC || e == EDQUOT || e == EFBIG;
}

/* One GET into path, appended from its present size (Range).  MT_OK when the
 * transfer ended; the caller checks the bytes.  *write_errno: why a write failed. */
static mt_status get_into(const hub_config *cfg, const hub_blob *b, const char *file, const char *path,
                          int *write_errno, mt_err *err)
{
    uint64_t have = file_size(path);
    if (have >= b->size && b->size > 0)
        return MT_OK;
    hub_resp *r = calloc(1, sizeof *r);
    FILE *f = fopen(path, "ab");
    mt_status st = MT_OK;
    if (!r || !f) {
        st = mt_err_set(err, MT_ERR_IO, "cannot write %s: %s", path, strerror(errno));
        goto done;
    }
    r->cfg = cfg, r->file = file, r->sink = f, r->total = b->size, r->written = have;
    CURLcode rc = http_do(cfg, b->url, 0, have, r);
    if (rc == CURLE_OK && r->code == 200 && have > 0) {
        /* the server ignored Range: what it sent is the whole file, from byte 0 */
        fclose(f);
        f = NULL;
        st = mt_err_set(err, MT_ERR_IO, "%s: the server ignored the range, starting over", file);
        unlink(path);
        goto done;
    }
    if (fflush(f) != 0 && !r->write_failed)
        r->write_failed = errno;
    if (r->write_failed) {
        *write_errno = r->write_failed;
        st = mt_err_set(err, MT_ERR_IO, "writing %s: %s%s", path, strerror(r->write_failed),
                        disk_full(r->write_failed) ? " (the disk of the Hugging Face cache is full: free space there "
                        "or set HF_HUB_CACHE to another disk; the part downloaded is kept and the next pull resumes "
                        "it, `mtserve rm` removes it)" : "");
    }
    else if (rc != CURLE_OK)
        st = mt_err_set(err, MT_ERR_IO, "%s: %s after %llu of %llu bytes", file, curl_easy_strerror(rc),
                        (unsigned long long)r->written, (unsigned long long)b->size);
    else if (r->code != 200 && r->code != 206)
        st = mt_err_set(err, MT_ERR_IO, "%s: HTTP %ld from %s", file, r->code, b->url);
done:
    if (f && fclose(f) != 0 && st == MT_OK) {
        *write_errno = errno;
        st = mt_err_set(err, MT_ERR_IO, "writing %s: %s", path, strerror(errno));
    }
    free(r);
    return st;
}

/* blobs/ETAG: downloaded into ETAG.incomplete (resumed, a few tries), checked, renamed */
static mt_status fetch_blob(const hub_config *cfg, const char *repo_dir, const char *file, const hub_blob *b,
                            mt_err *err)
{
    char blob[2400], part[2450], digest[129] = {0};
    snprintf(blob, sizeof blob, "%s/blobs/%s", repo_dir, b->etag);
    if (file_size(blob) == b->size && access(blob, R_OK) == 0)
        return MT_OK;                   /* another revision or client already has it */
    snprintf(part, sizeof part, "%s.incomplete", blob);
    if (file_size(part) > b->size)
        unlink(part);
    mt_status st = MT_ERR_IO;
    int write_errno = 0;                /* a disk that is full stays full: no retry */
    for (int t = 0; t < HUB_TRIES && st != MT_OK && !disk_full(write_errno); t++) {
        if ((st = get_into(cfg, b, file, part, &write_errno, err)) != MT_OK && cfg->progress &&
            !disk_full(write_errno))
            fprintf(stderr, "\nmtserve: %s; retrying\n", err->msg);
    }
    if (st != MT_OK)
        return st;
    uint64_t got = file_size(part);
    if (got != b->size)
        return mt_err_set(err, MT_ERR_FORMAT, "%s: %llu bytes received, the hub declared %llu", file,
                          (unsigned long long)got, (unsigned long long)b->size);
    if (file_digest(part, strlen(b->etag), digest) != 0)
        return mt_err_set(err, MT_ERR_IO, "cannot read back %s", part);
    if (strcmp(digest, b->etag) != 0) {
        unlink(part);                   /* never linked; the next try starts over */
        return mt_err_set(err, MT_ERR_FORMAT, "%s: the downloaded bytes do not match the hub's %s %s (got %s): "
                          "refused", file, strlen(b->etag) == 64 ? "sha256" : "git sha1", b->etag, digest);
    }
    if (rename(part, blob) != 0)
        return mt_err_set(err, MT_ERR_IO, "rename %s: %s", part, strerror(errno));
    return MT_OK;
}

/* snapshots/COMMIT/FILE -> ../../blobs/ETAG (FILE is one of the form's top-level names) */
static mt_status link_file(const char *repo_dir, const char *commit, const char *file, const char *etag, mt_err *err)
{
    char dir[2400], link[2500], target[128];
    snprintf(dir, sizeof dir, "%s/snapshots/%s", repo_dir, commit);
    if (mkdir_p(dir) != 0)
        return mt_err_set(err, MT_ERR_IO, "mkdir %s: %s", dir, strerror(errno));
    snprintf(link, sizeof link, "%s/%s", dir, file);
    snprintf(target, sizeof target, "../../blobs/%s", etag);
    unlink(link);
    if (symlink(target, link) != 0)
        return mt_err_set(err, MT_ERR_IO, "symlink %s: %s", link, strerror(errno));
    return MT_OK;
}

/* refs/REV holds the commit, written atomically (REV may be "refs/pr/1": its folders) */
static mt_status write_ref(const char *repo_dir, const char *rev, const char *commit, mt_err *err)
{
    char path[2400], tmp[2450];
    snprintf(path, sizeof path, "%s/refs/%s", repo_dir, rev);
    snprintf(tmp, sizeof tmp, "%s", path);
    *strrchr(tmp, '/') = 0;
    if (mkdir_p(tmp) != 0)
        return mt_err_set(err, MT_ERR_IO, "mkdir %s: %s", tmp, strerror(errno));
    snprintf(tmp, sizeof tmp, "%s.tmp%d", path, (int)getpid());
    FILE *f = fopen(tmp, "w");
    int ok = f && fputs(commit, f) >= 0;
    ok = (f && fclose(f) == 0) && ok;
    if (!ok || rename(tmp, path) != 0) {
        unlink(tmp);
        return mt_err_set(err, MT_ERR_IO, "cannot write %s: %s", path, strerror(errno));
    }
    return MT_OK;
}

/* The bytes still to download (blobs not there yet, less what their .incomplete
 * holds; a blob two files link counted once) against the room on the cache's disk,
 * as huggingface_hub checks before it downloads: a model that cannot fit is named
 * before a byte is written rather than filling the disk. */
static mt_status check_room(const char *repo_dir, const hub_blob *blobs, int n, mt_err *err)
{
    uint64_t need = 0;
    char path[2400], part[2450];
    for (int i = 0; i < n; i++) {
        int dup = 0;
        for (int j = 0; j < i; j++)
            dup |= strcmp(blobs[j].etag, blobs[i].etag) == 0;
        snprintf(path, sizeof path, "%s/blobs/%s", repo_dir, blobs[i].etag);
        snprintf(part, sizeof part, "%s.incomplete", path);
        uint64_t have = file_size(part);
        if (!dup && file_size(path) != blobs[i].size && have < blobs[i].size)
            need += blobs[i].size - have;
    }
    struct statvfs vfs;
    snprintf(path, sizeof path, "%s/blobs", repo_dir);
    if (need == 0 || statvfs(path, &vfs) != 0)
        return MT_OK;
    uint64_t room = (uint64_t)vfs.f_bavail * vfs.f_frsize;
    if (room >= need)
        return MT_OK;
    return mt_err_set(err, MT_ERR_IO, "not enough disk space: the model needs %.1f MB more and the disk of %s has "
                      "%.1f MB free (free space there or set HF_HUB_CACHE to another disk); nothing was downloaded",
                      (double)need / 1e6, path, (double)room / 1e6);
}

int hub_config_from_env(hub_config *cfg)
{
    memset(cfg, 0, sizeof *cfg);
    const char *v = getenv("HF_ENDPOINT");
    snprintf(cfg->endpoint, sizeof cfg->endpoint, "%s", v && v[0] ? v : "https://huggingface.co");
    size_t n = strlen(cfg->endpoint);
    while (n > 0 && cfg->endpoint[n - 1] == '/')
        cfg->endpoint[--n] = 0;
    v = getenv("HF_TOKEN");
    snprintf(cfg->token, sizeof cfg->token, "%s", v ? v : "");
    v = getenv("HF_HUB_OFFLINE");
    cfg->offline = v && (strcmp(v, "1") == 0 || strcasecmp(v, "true") == 0 || strcasecmp(v, "yes") == 0 ||
                         strcasecmp(v, "on") == 0);
    return hub_cache_dir(cfg->cache, sizeof cfg->cache);
}

mt_status hub_pull(const hub_config *cfg, const hub_ref *ref, char *snap, size_t cap, mt_err *err)
{
    if (cfg->offline)
        return mt_err_set(err, MT_ERR_IO, "%s@%s: HF_HUB_OFFLINE=1 forbids downloading", ref->repo, ref->rev);
    static int curl_ready;              /* the process's first pull, from main's thread */
    if (!curl_ready && curl_global_init(CURL_GLOBAL_DEFAULT) == 0)
        curl_ready = 1;
    hub_file_list *list = calloc(1, sizeof *list);
    hub_blob *blobs = calloc(HUB_MAX_FILES, sizeof *blobs);
    char repo_dir[1400];
    mt_status st = MT_OK;
    if (!list || !blobs) {
        st = mt_err_set(err, MT_ERR_NOMEM, "out of memory");
        goto done;
    }
    if ((st = fetch_file_list(cfg, ref, list, err)) != MT_OK)
        goto done;
    hub_repo_dir(cfg->cache, ref, repo_dir, sizeof repo_dir);
    for (int i = 0; i < list->n_files; i++)     /* every blob named before a byte is written */
        if ((st = blob_info(cfg, ref, list->sha, list->files[i], &blobs[i], err)) != MT_OK)
            goto done;
    /* refs/ too, even when the revision is a commit and no ref is written: @huggingface/hub's
     * cache scan counts a repository without refs/ as broken */
    static const char *const dirs[] = { "blobs", "refs" };
    for (int i = 0; i < 2; i++) {
        char sub[1500];
        snprintf(sub, sizeof sub, "%s/%s", repo_dir, dirs[i]);
        if (mkdir_p(sub) != 0) {
            st = mt_err_set(err, MT_ERR_IO, "mkdir %s: %s", sub, strerror(errno));
            goto done;
        }
    }
    if ((st = check_room(repo_dir, blobs, list->n_files, err)) != MT_OK)
        goto done;
    for (int i = 0; i < list->n_files; i++) {
        if ((st = fetch_blob(cfg, repo_dir, list->files[i], &blobs[i], err)) != MT_OK)
            goto done;
        if ((st = link_file(repo_dir, list->sha, list->files[i], blobs[i].etag, err)) != MT_OK)
            goto done;
    }
    if (strcmp(ref->rev, list->sha) != 0 && (st = write_ref(repo_dir, ref->rev, list->sha, err)) != MT_OK)
        goto done;
    if (snprintf(snap, cap, "%s/snapshots/%s", repo_dir, list->sha) >= (int)cap)
        st = mt_err_set(err, MT_ERR_INPUT, "the cache path %s is too long", cfg->cache);
done:
    free(list);
    free(blobs);
    return st;
}

mt_status hub_model_dir(const hub_config *cfg, const hub_ref *ref, char *snap, size_t cap, mt_err *err)
{
    mt_err cached;
    if (hub_resolve_cached(cfg->cache, ref, snap, cap, &cached) == MT_OK)
        return MT_OK;
    if (cfg->offline)
        return mt_err_set(err, MT_ERR_IO, "%s (HF_HUB_OFFLINE=1: nothing is downloaded)", cached.msg);
    return hub_pull(cfg, ref, snap, cap, err);
}
