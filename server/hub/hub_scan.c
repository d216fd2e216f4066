/* hub_scan: what the cache holds and removing from it, as huggingface_hub's
 * scan_cache_dir and delete_revisions do (see hub.h).  No network.
 *
 * The cache is another program's as much as ours: nothing here follows a link to
 * remove what it points at unless it is a blob of the same repository's blobs/
 * folder, and a repository folder that is itself a link is refused. */
#include "hub.h"

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define SCAN_MAX_DEPTH 8        /* snapshot subfolders ("onnx/...") and refs/pr/N, not a maze */

/* out = a "/" b (b NULL: a alone); -1 when it does not fit PATH_MAX */
static int path_of(char *out, const char *a, const char *b)
{
    size_t na = strlen(a), nb = b ? strlen(b) : 0;
    if (na + 1 + nb >= PATH_MAX)
        return -1;
    memmove(out, a, na);
    if (b) {
        out[na++] = '/';
        memcpy(out + na, b, nb);
    }
    out[na + nb] = 0;
    return 0;
}

/* ---- a set of files by (device, inode): a blob linked twice is counted once ---- */

typedef struct {
    struct { dev_t dev; ino_t ino; } *v;
    int n, cap;
} file_set;

/* 1 when added, 0 when already there, -1 out of memory */
static int set_add(file_set *s, const struct stat *st)
{
    for (int i = 0; i < s->n; i++)
        if (s->v[i].dev == st->st_dev && s->v[i].ino == st->st_ino)
            return 0;
    if (s->n == s->cap) {
        int cap = s->cap ? 2 * s->cap : 32;
        void *v = realloc(s->v, (size_t)cap * sizeof *s->v);
        if (!v)
            return -1;
        s->v = v, s->cap = cap;
    }
    s->v[s->n].dev = st->st_dev, s->v[s->n].ino = st->st_ino;
    s->n++;
    return 1;
}

static int set_has(const file_set *s, const struct stat *st)
{
    for (int i = 0; i < s->n; i++)
        if (s->v[i].dev == st->st_dev && s->v[i].ino == st->st_ino)
            return 1;
    return 0;
}

/* ---- a walk of a folder's files, links not followed into folders ---- */

/* fn(ud, path, lstat of path) for each entry that is not a folder; -1 from fn stops */
typedef int (*walk_fn)(void *ud, const char *path, const struct stat *lst);

static int walk_files(const char *dir, int depth, walk_fn fn, void *ud)
{
    DIR *d = opendir(dir);
    if (!d)
        return errno == ENOENT ? 0 : -1;
    int rc = 0;
    for (struct dirent *e; rc == 0 && (e = readdir(d));) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
            continue;
        char path[PATH_MAX];
        struct stat lst;
        if (path_of(path, dir, e->d_name) != 0 || lstat(path, &lst) != 0)
            continue;
        if (S_ISDIR(lst.st_mode))
            rc = depth < SCAN_MAX_DEPTH ? walk_files(path, depth + 1, fn, ud) : 0;
        else
            rc = fn(ud, path, &lst);
    }
    closedir(d);
    return rc;
}

/* removes dir and everything under it; a link is removed, never what it points at */
static int remove_tree(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d)
        return errno == ENOENT ? 0 : -1;
    int rc = 0;
    for (struct dirent *e; (e = readdir(d));) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
            continue;
        char path[PATH_MAX];
        struct stat lst;
        if (path_of(path, dir, e->d_name) != 0 || lstat(path, &lst) != 0) {
            rc = -1;
            continue;
        }
        if (S_ISDIR(lst.st_mode) ? remove_tree(path) != 0 : unlink(path) != 0)
            rc = -1;
    }
    closedir(d);
    return rmdir(dir) == 0 ? rc : -1;
}

/* ---- scanning ---- */

typedef struct {
    file_set *seen_repo, seen_snap;
    hub_snapshot *snap;
    uint64_t *repo_size;
    int oom;
} snap_walk;

static int count_file(void *ud, const char *path, const struct stat *lst)
{
    snap_walk *w = ud;
    struct stat st;
    w->snap->n_files++;
    if (stat(path, &st) != 0 || !S_ISREG(st.st_mode)) {
        w->snap->missing++;                 /* a link to a blob that is gone */
        return 0;
    }
    int a = set_add(&w->seen_snap, &st), b = set_add(w->seen_repo, &st);
    if (a < 0 || b < 0) {
        w->oom = 1;
        return -1;
    }
    if (a)
        w->snap->size += (uint64_t)st.st_size;
    if (b)
        *w->repo_size += (uint64_t)st.st_size;
    return 0;
}

typedef struct {
    hub_cached_repo *repo;
    const char *refs_dir;
} refs_walk;

/* refs/NAME holding a commit: NAME added to that snapshot's refs */
static int note_ref(void *ud, const char *path, const struct stat *lst)
{
    refs_walk *w = ud;
    char commit[41];
    if (!S_ISREG(lst->st_mode) || hub_read_ref(path, commit) != 0)
        return 0;
    const char *name = path + strlen(w->refs_dir) + 1;
    for (int i = 0; i < w->repo->n_snapshots; i++) {
        hub_snapshot *s = &w->repo->snapshots[i];
        if (strcmp(s->commit, commit) != 0)
            continue;
        size_t n = strlen(s->refs);
        snprintf(s->refs + n, sizeof s->refs - n, "%s%s", n ? ", " : "", name);
        return 0;
    }
    w->repo->dangling_refs++;
    return 0;
}

static int by_commit(const void *a, const void *b)
{
    return strcmp(((const hub_snapshot *)a)->commit, ((const hub_snapshot *)b)->commit);
}

static int incomplete_size(void *ud, const char *path, const struct stat *lst)
{
    size_t n = strlen(path);
    if (S_ISREG(lst->st_mode) && n > 11 && strcmp(path + n - 11, ".incomplete") == 0)
        *(uint64_t *)ud += (uint64_t)lst->st_size;
    return 0;
}

/* one models--org--name folder: its snapshots, their refs and sizes */
static mt_status scan_repo(hub_cached_repo *r, mt_err *err)
{
    char path[PATH_MAX];
    path_of(path, r->dir, "snapshots");
    DIR *d = opendir(path);
    if (!d) {
        snprintf(r->problem, sizeof r->problem, "no snapshots folder");
        return MT_OK;
    }
    file_set seen = {0};
    mt_status st = MT_OK;
    for (struct dirent *e; st == MT_OK && (e = readdir(d));) {
        char snap_dir[PATH_MAX];
        struct stat lst;
        if (e->d_name[0] == '.' || path_of(snap_dir, path, e->d_name) != 0 ||
            lstat(snap_dir, &lst) != 0 || !S_ISDIR(lst.st_mode))
            continue;
        hub_snapshot *grown = realloc(r->snapshots, (size_t)(r->n_snapshots + 1) * sizeof *grown);
        if (!grown) {
            st = mt_err_set(err, MT_ERR_NOMEM, "out of memory");
            break;
        }
        r->snapshots = grown;
        hub_snapshot *s = &r->snapshots[r->n_snapshots++];
        memset(s, 0, sizeof *s);
        snprintf(s->commit, sizeof s->commit, "%.40s", e->d_name);
        path_of(s->dir, snap_dir, NULL);
        snap_walk w = { .seen_repo = &seen, .snap = s, .repo_size = &r->size };
        walk_files(snap_dir, 0, count_file, &w);
        free(w.seen_snap.v);
        if (w.oom)
            st = mt_err_set(err, MT_ERR_NOMEM, "out of memory");
    }
    closedir(d);
    free(seen.v);
    if (st != MT_OK)
        return st;
    qsort(r->snapshots, (size_t)r->n_snapshots, sizeof *r->snapshots, by_commit);
    path_of(path, r->dir, "refs");
    refs_walk rw = { r, path };
    walk_files(path, 0, note_ref, &rw);
    path_of(path, r->dir, "blobs");
    walk_files(path, 0, incomplete_size, &r->incomplete);
    return MT_OK;
}

/* "models--org--name" -> "org/name"; 0 when the folder is no model repository's */
static int repo_name(const char *folder, char *out, size_t cap)
{
    if (strncmp(folder, "models--", 8) != 0)
        return 0;
    const char *sep = strstr(folder + 8, "--");
    if (!sep || sep == folder + 8 || !sep[2] || strstr(sep + 2, "--"))
        return 0;
    char name[400];
    snprintf(name, sizeof name, "%.*s/%s", (int)(sep - folder - 8), folder + 8, sep + 2);
    hub_ref ref;
    if (!hub_ref_syntax(name, &ref))
        return 0;
    return snprintf(out, cap, "%s", ref.repo) < (int)cap;
}

static int by_name(const void *a, const void *b)
{
    return strcmp(((const hub_cached_repo *)a)->repo, ((const hub_cached_repo *)b)->repo);
}

mt_status hub_scan(const char *cache, hub_cached_repo **out, int *n_out, mt_err *err)
{
    *out = NULL;
    *n_out = 0;
    DIR *d = opendir(cache);
    if (!d)
        return errno == ENOENT ? MT_OK : mt_err_set(err, MT_ERR_IO, "%s: %s", cache, strerror(errno));
    hub_cached_repo *repos = NULL;
    int n = 0;
    mt_status st = MT_OK;
    for (struct dirent *e; st == MT_OK && (e = readdir(d));) {
        char name[200], dir[PATH_MAX];
        struct stat lst;
        if (!repo_name(e->d_name, name, sizeof name) ||
            path_of(dir, cache, e->d_name) != 0 || lstat(dir, &lst) != 0 ||
            !S_ISDIR(lst.st_mode))
            continue;
        hub_cached_repo *grown = realloc(repos, (size_t)(n + 1) * sizeof *grown);
        if (!grown) {
            st = mt_err_set(err, MT_ERR_NOMEM, "out of memory");
            break;
        }
        repos = grown;
        hub_cached_repo *r = &repos[n++];
        memset(r, 0, sizeof *r);
        snprintf(r->repo, sizeof r->repo, "%s", name);
        path_of(r->dir, dir, NULL);
        st = scan_repo(r, err);
    }
    closedir(d);
    if (st != MT_OK) {
        hub_scan_free(repos, n);
        return st;
    }
    qsort(repos, (size_t)n, sizeof *repos, by_name);
    *out = repos;
    *n_out = n;
    return MT_OK;
}

void hub_scan_free(hub_cached_repo *repos, int n)
{
    for (int i = 0; i < n; i++)
        free(repos[i].snapshots);
    free(repos);
}

/* ---- removing ---- */

typedef struct {
    char      blobs_real[PATH_MAX];     /* realpath of the repository's blobs/ */
    file_set *set;
    int       oom;
} blob_walk;

/* a snapshot file's blob, when it is a file directly in this repository's blobs/ */
static int blob_of(const blob_walk *w, const char *path, char *real, struct stat *st)
{
    if (!realpath(path, real) || stat(real, st) != 0 || !S_ISREG(st->st_mode))
        return 0;
    size_t n = strlen(w->blobs_real);
    return strncmp(real, w->blobs_real, n) == 0 && real[n] == '/' && !strchr(real + n + 1, '/');
}

static int collect_blob(void *ud, const char *path, const struct stat *lst)
{
    blob_walk *w = ud;
    char real[PATH_MAX];
    struct stat st;
    if (blob_of(w, path, real, &st) && set_add(w->set, &st) < 0) {
        w->oom = 1;
        return -1;
    }
    return 0;
}

typedef struct {
    const char *commit;
    hub_removed *out;
} ref_drop;

static int drop_ref(void *ud, const char *path, const struct stat *lst)
{
    ref_drop *w = ud;
    char commit[41];
    if (S_ISREG(lst->st_mode) && hub_read_ref(path, commit) == 0 && strcmp(commit, w->commit) == 0 &&
        unlink(path) == 0)
        w->out->refs++;
    return 0;
}

typedef struct {
    const file_set *drop, *keep;
    hub_removed *out;
    int failed;
} blob_drop;

static int drop_blob(void *ud, const char *path, const struct stat *lst)
{
    blob_drop *w = ud;
    if (!S_ISREG(lst->st_mode) || !set_has(w->drop, lst) || set_has(w->keep, lst))
        return 0;
    if (unlink(path) != 0) {
        w->failed = errno;
        return 0;
    }
    w->out->blobs++;
    w->out->bytes += (uint64_t)lst->st_size;
    return 0;
}

static int sum_blob(void *ud, const char *path, const struct stat *lst)
{
    hub_removed *out = ud;
    if (S_ISREG(lst->st_mode)) {
        out->blobs++;
        out->bytes += (uint64_t)lst->st_size;
    }
    return 0;
}

static int count_ref(void *ud, const char *path, const struct stat *lst)
{
    char commit[41];
    if (S_ISREG(lst->st_mode) && hub_read_ref(path, commit) == 0)
        ((hub_removed *)ud)->refs++;
    return 0;
}

/* the whole repository folder, its blobs and refs counted first */
static mt_status remove_repo(const char *repo_dir, hub_removed *out, mt_err *err)
{
    char path[PATH_MAX];
    path_of(path, repo_dir, "blobs");
    walk_files(path, 0, sum_blob, out);
    path_of(path, repo_dir, "refs");
    walk_files(path, 0, count_ref, out);
    path_of(path, repo_dir, "snapshots");
    DIR *d = opendir(path);
    for (struct dirent *e; d && (e = readdir(d));)
        out->snapshots += e->d_name[0] != '.';
    if (d)
        closedir(d);
    if (remove_tree(repo_dir) != 0)
        return mt_err_set(err, MT_ERR_IO, "removing %s: %s", repo_dir, strerror(errno));
    out->whole = 1;
    return MT_OK;
}

/* one snapshot, the refs naming it, the blobs only it linked */
static mt_status remove_revision(const char *repo_dir, const char *commit, hub_removed *out, mt_err *err)
{
    char snaps[PATH_MAX], snap[PATH_MAX], path[PATH_MAX];
    file_set drop = {0}, keep = {0};
    blob_walk w = { .set = &drop };
    mt_status st = MT_OK;
    path_of(path, repo_dir, "blobs");
    if (!realpath(path, w.blobs_real))
        w.blobs_real[0] = 0;            /* no blobs/: files of the snapshot, nothing shared to count */
    path_of(snaps, repo_dir, "snapshots");
    path_of(snap, snaps, commit);
    walk_files(snap, 0, collect_blob, &w);
    DIR *d = opendir(snaps);
    for (struct dirent *e; d && !w.oom && (e = readdir(d));) {
        if (e->d_name[0] == '.' || strcmp(e->d_name, commit) == 0)
            continue;
        if (path_of(path, snaps, e->d_name) != 0)
            continue;
        w.set = &keep;
        walk_files(path, 0, collect_blob, &w);
    }
    if (d)
        closedir(d);
    if (w.oom) {
        st = mt_err_set(err, MT_ERR_NOMEM, "out of memory");
        goto done;
    }
    if (remove_tree(snap) != 0) {
        st = mt_err_set(err, MT_ERR_IO, "removing %s: %s", snap, strerror(errno));
        goto done;
    }
    out->snapshots = 1;
    path_of(path, repo_dir, "refs");
    ref_drop rd = { commit, out };
    walk_files(path, 0, drop_ref, &rd);
    path_of(path, repo_dir, "blobs");
    blob_drop bd = { &drop, &keep, out, 0 };
    walk_files(path, 0, drop_blob, &bd);
    if (bd.failed)
        st = mt_err_set(err, MT_ERR_IO, "removing a blob of %s: %s", repo_dir, strerror(bd.failed));
    if (st == MT_OK && rmdir(snaps) == 0) {     /* the last snapshot: the folder goes, as huggingface_hub's does */
        hub_removed rest = {0};
        st = remove_repo(repo_dir, &rest, err);
        out->blobs += rest.blobs, out->bytes += rest.bytes, out->refs += rest.refs, out->whole = 1;
    }
done:
    free(drop.v);
    free(keep.v);
    return st;
}

mt_status hub_remove(const char *cache, const hub_ref *ref, int whole, hub_removed *out, mt_err *err)
{
    memset(out, 0, sizeof *out);
    char repo_dir[PATH_MAX], cache_real[PATH_MAX], repo_real[PATH_MAX], path[PATH_MAX];
    hub_repo_dir(cache, ref, repo_dir, sizeof repo_dir);
    struct stat lst;
    if (lstat(repo_dir, &lst) != 0)
        return mt_err_set(err, MT_ERR_INPUT, "%s is not in the Hugging Face cache %s", ref->repo, cache);
    /* a folder that is a link (or resolves elsewhere) holds another tree than the cache's */
    if (!S_ISDIR(lst.st_mode) || !realpath(cache, cache_real) || !realpath(repo_dir, repo_real) ||
        strncmp(repo_real, cache_real, strlen(cache_real)) != 0 || repo_real[strlen(cache_real)] != '/' ||
        strchr(repo_real + strlen(cache_real) + 1, '/'))
        return mt_err_set(err, MT_ERR_INPUT, "%s is not a folder inside the cache %s: refused", repo_dir, cache);
    if (whole)
        return remove_repo(repo_dir, out, err);
    char commit[41];
    if (hub_is_hex(ref->rev, 40)) {
        memcpy(commit, ref->rev, 41);
    } else {
        char refs[PATH_MAX];
        if (path_of(refs, repo_dir, "refs") != 0 || path_of(path, refs, ref->rev) != 0 || hub_read_ref(path, commit) != 0)
            return mt_err_set(err, MT_ERR_INPUT, "%s has no revision %s in the cache", ref->repo, ref->rev);
    }
    char snaps[PATH_MAX];
    if (path_of(snaps, repo_dir, "snapshots") != 0 || path_of(path, snaps, commit) != 0 || lstat(path, &lst) != 0 || !S_ISDIR(lst.st_mode))
        return mt_err_set(err, MT_ERR_INPUT, "%s@%s: no snapshot %s in the cache", ref->repo, ref->rev, commit);
    return remove_revision(repo_dir, commit, out, err);
}
