/* hub: models by name from the Hugging Face Hub, in the cache its own clients use.
 *
 * A name is "org/name[@revision]".  The cache is the hub's standard layout
 * (huggingface_hub, transformers and @huggingface/hub read and write it):
 *     CACHE/models--org--name/refs/REV            the commit REV points at
 *     CACHE/models--org--name/snapshots/COMMIT/F  a symlink to ../../blobs/ETAG
 *     CACHE/models--org--name/blobs/ETAG          the file (sha256 for LFS files)
 * CACHE is $HF_HUB_CACHE, else $HF_HOME/hub, else ~/.cache/huggingface/hub.
 *
 * hub_cache.c resolves a name in the cache (no network); hub_parse.c reads what a
 * hub answers (the revision's JSON file list, header values: fuzzed); hub_fetch.c
 * downloads with libcurl from $HF_ENDPOINT.  Nothing a hub sends names a path
 * outside the cache: file names, etags and commits are checked before use.
 */
#ifndef SRV_HUB_H
#define SRV_HUB_H

#include <stddef.h>
#include <stdint.h>

#include "util/status.h"

#define HUB_MAX_FILES 16

typedef struct {
    char repo[200];             /* "org/name" */
    char rev[128];              /* "main" unless @rev was given */
} hub_ref;

/* 1 when s names a hub repository: org/name[@rev] with exactly one '/', characters
 * the hub allows, and no existing directory of that path (a path stays a path). */
int hub_ref_parse(const char *s, hub_ref *ref);
/* the same without the directory check: whether s is written as a hub name */
int hub_ref_syntax(const char *s, hub_ref *ref);

/* 1 when a file name from a hub is safe under a snapshot directory: relative, no
 * "..", "." or empty segment, no backslash, no control character. */
int hub_safe_name(const char *name);
/* 1 when s is n lowercase hex digits (etags and commits, which name cache files) */
int hub_is_hex(const char *s, size_t n);

/* the cache directory from the environment (see above) */
int hub_cache_dir(char *out, size_t cap);
/* the repository's folder in the cache: CACHE/models--org--name */
void hub_repo_dir(const char *cache, const hub_ref *ref, char *out, size_t cap);

/* The snapshot directory of ref in cache (refs/REV, or REV itself when it is a
 * commit), with a config.json and weights (model.safetensors or pytorch_model.bin)
 * in it.  MT_ERR_IO when it is not there. */
mt_status hub_resolve_cached(const char *cache, const hub_ref *ref, char *snap, size_t cap, mt_err *err);

/* the commit a refs/ file holds (40 lowercase hex digits, a newline allowed): 0, else -1 */
int hub_read_ref(const char *path, char commit[41]);

/* ---- what the cache holds, and removing from it (hub_scan.c) ------------------------ */

typedef struct {
    char     commit[41];        /* the snapshot folder's name (a commit in a well-formed cache) */
    char     refs[256];         /* the refs naming it, ", " between them ("main, v1"); "" = none */
    int      n_files;           /* its files (links into blobs/, or copies), subfolders included */
    int      missing;           /* of them, links whose blob is gone */
    uint64_t size;              /* bytes of its files, a blob linked twice counted once */
    char     dir[4096];         /* its path */
} hub_snapshot;

typedef struct {
    char     repo[200];         /* "org/name" */
    char     dir[4096];         /* CACHE/models--org--name */
    uint64_t size;              /* bytes of the blobs its snapshots link, each once (as huggingface_hub counts) */
    uint64_t incomplete;        /* bytes of unfinished downloads (blobs/ETAG.incomplete) */
    int      dangling_refs;     /* refs naming a commit with no snapshot */
    char     problem[128];      /* a folder not laid out as the hub's ("" = none) */
    int      n_snapshots;
    hub_snapshot *snapshots;    /* by commit */
} hub_cached_repo;

/* The model repositories in cache (its models--org--name folders; datasets, spaces
 * and other files are not listed), by name.  A missing cache is an empty one. */
mt_status hub_scan(const char *cache, hub_cached_repo **repos, int *n, mt_err *err);
void hub_scan_free(hub_cached_repo *repos, int n);

typedef struct {
    int      snapshots, refs, blobs;    /* what was removed */
    uint64_t bytes;                     /* bytes of the blobs removed */
    int      whole;                     /* the repository's folder went */
} hub_removed;

/* Removes from the cache as huggingface_hub's delete_revisions does.  whole: the
 * repository's folder.  Else ref's revision (refs/REV or a commit): its snapshot, the
 * refs naming its commit and the blobs no other snapshot links; the folder goes with
 * its last snapshot.  Refused (MT_ERR_INPUT) when the repository or revision is not
 * in the cache, or the repository's folder is a link or lies outside the cache; only
 * files of the repository's own blobs/ are removed for a link, never another target. */
mt_status hub_remove(const char *cache, const hub_ref *ref, int whole, hub_removed *out, mt_err *err);

/* ---- language pairs: the published OPUS-MT repositories (hub_pairs.c) --------------- */

/* The Helsinki-NLP/opus-mt-SRC-TGT repositories that translate src into tgt, from the
 * table server/hub/opus_pairs.tsv (embedded): 1 and the direct one, else 2 and the
 * pivot through English (src-en, then en-tgt), else 0. */
int hub_pair_repos(const char *src, const char *tgt, char repos[2][200]);
/* how many pairs the table holds */
int hub_pair_count(void);

/* ---- what a hub sends (hub_parse.c) ------------------------------------------------ */

typedef struct {
    char sha[41];                           /* the revision's commit */
    int  n_files;
    char files[HUB_MAX_FILES][64];          /* the files the model's form needs */
    char weights[64];                       /* which of them holds the weights */
} hub_file_list;

/* Reads GET /api/models/{repo}/revision/{rev}: its "sha" and "siblings"[].rfilename,
 * and chooses the config, the tokenizer files and one weights file (model.safetensors
 * before pytorch_model.bin; never TF, Flax, ONNX or Rust weights).  MT_ERR_FORMAT for
 * a malformed answer or an unsafe file name, MT_ERR_UNSUPPORTED when the repository
 * holds no form mtserve loads (said before anything is downloaded). */
mt_status hub_parse_file_list(const char *json, size_t len, hub_file_list *list, mt_err *err);

/* An ETag header's value as the cache names blobs: W/ and quotes removed; 0 when it
 * is not 40 or 64 lowercase hex digits (a git blob sha1 or an LFS sha256). */
int hub_parse_etag(const char *value, size_t len, char *out, size_t cap);
/* A header line "Name: value\r\n": 1 and the trimmed value when its name is name
 * (case-insensitive) and the value fits in cap; else 0 and out untouched. */
int hub_header_value(const char *line, size_t len, const char *name, char *out, size_t cap);
/* The message of a hub's error body {"error": "..."}, else "" */
void hub_error_message(const char *body, size_t len, char *out, size_t cap);

/* ---- downloads (hub_fetch.c) ------------------------------------------------------ */

typedef void (*hub_progress_fn)(void *ud, const char *file, uint64_t done, uint64_t total);

typedef struct {
    char endpoint[512];         /* $HF_ENDPOINT, default https://huggingface.co */
    char token[512];            /* $HF_TOKEN, "" = none */
    char cache[1024];
    int  offline;               /* $HF_HUB_OFFLINE=1 */
    hub_progress_fn progress;   /* NULL = silent */
    void *progress_ud;
} hub_config;

/* from HF_ENDPOINT, HF_TOKEN, HF_HUB_OFFLINE and the cache variables */
int hub_config_from_env(hub_config *cfg);

/* Downloads ref's files into the cache (each verified, then linked into the
 * snapshot, then refs/REV written) and gives the snapshot directory. */
mt_status hub_pull(const hub_config *cfg, const hub_ref *ref, char *snap, size_t cap, mt_err *err);

/* The snapshot directory: from the cache, else downloaded unless offline. */
mt_status hub_model_dir(const hub_config *cfg, const hub_ref *ref, char *snap, size_t cap, mt_err *err);

#endif
