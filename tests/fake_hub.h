/* fake_hub: a Hugging Face hub inside a test program (libmicrohttpd on a free
 * loopback port), laid out and answering as huggingface.co does
 * (huggingface_hub's file_download.py):
 *   GET  /api/models/{repo}/revision/{rev}   {"sha": COMMIT, "siblings": [{"rfilename": F}...]}
 *   HEAD/GET /{repo}/resolve/{rev}/{file}    an LFS file: 302 to its blob URL with
 *        X-Linked-Etag (its sha256), X-Linked-Size, ETag, X-Repo-Commit; another file:
 *        200 with ETag (its git blob sha1) and the bytes
 *   GET  /blobs/{sha256}                     the bytes (Range honoured): the "CDN", on another
 *        host name (127.0.0.1) than the endpoint (localhost), so the token must not go there
 *   401 {"error": ...} for the gated repository without its token, 404 for the unknown.
 * Its content is models/tiny (a complete Marian model with random weights), plus
 * files mtserve must never fetch (tf_model.h5, flax, rust), and the generated
 * OPUS-MT en-mg when $MT_OPUS_DIR (or build/opus-mt) holds it.  Faults, each
 * once: the connection cut after N bytes of a blob; one byte of a blob flipped;
 * and blobs sent slowly (fake_hub_slow).
 *
 * Used by test_hub.c (the downloader, `mtserve pull`, `serve --model NAME`) and
 * test_admin.c (POST /admin/models by name).  Include <cmocka.h> first.
 */
#ifndef MTSERVE_TESTS_FAKE_HUB_H
#define MTSERVE_TESTS_FAKE_HUB_H

#include <pthread.h>
#include <stddef.h>

#define FAKE_HUB_COMMIT "5a9c1e0b7d3f2a4c6e8b0d1f3a5c7e9b1d3f5a7c"
#define FAKE_HUB_TOKEN  "hf_test_token"

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

/* org/tiny, org/gated, org/evil, org/badetag, then Helsinki-NLP/opus-mt-en-mg (the last) */
extern const fake_repo fake_repos[];
extern const int       fake_n_repos;

typedef struct {
    struct MHD_Daemon *d;
    int        port;
    char       endpoint[64];        /* http://localhost:PORT */
    fake_file  files[16];           /* models/tiny and files never fetched */
    int        n_files;
    fake_file  opus[16];            /* $MT_OPUS_DIR/en-mg/safetensors-f32, when generated */
    int        n_opus;
    pthread_mutex_t mu;             /* the counts and faults below */
    int        api_requests, resolve_requests, blob_gets, never_files, auth_to_cdn;
    long       last_range_from;     /* -1: none */
    char       cut_etag[65];        /* cut the next GET of this blob after cut_after bytes */
    size_t     cut_after;
    char       corrupt_etag[65];    /* flip a byte of the next GET of this blob */
    int        slow_ms;             /* sleep this long before each chunk of a blob (fake_hub_slow) */
} fake_hub_state;

extern fake_hub_state fake_hub;

/* Reads the files and starts the hub: 0, or -1. */
int  fake_hub_start(void);
void fake_hub_stop(void);
void fake_hub_reset_counts(void);
/* Every chunk (4 KB) of a blob sent ms later from now on (0: at once). */
void fake_hub_slow(int ms);
/* The file name of repo (NULL: models/tiny's set), or NULL. */
const fake_file *fake_hub_file(const fake_repo *repo, const char *name);

#endif
