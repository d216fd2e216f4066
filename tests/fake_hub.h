/* fake_hub: a Hugging Face hub on loopback for tests/test_hub.c, test_hub_cache.c and
 * test_admin.c (POST /admin/models by name), in the test's own
 * process (libmicrohttpd on a free port), laid out and answering as huggingface.co
 * does (huggingface_hub's file_download.py, @huggingface/hub's snapshot download):
 *   GET  /api/models/{repo}/revision/{rev}   {"sha": COMMIT, "siblings": [{"rfilename": F}...]}
 *   GET  /api/models/{repo}/tree/{rev}       [{"type": "file", "path", "oid", "size", "lfs"}...]
 *   POST /api/models/{repo}/paths-info/{rev} the same for the paths asked, with "lastCommit"
 *   HEAD/GET /{repo}/resolve/{rev}/{file}    an LFS file: 302 to its blob URL with
 *        X-Linked-Etag (its sha256), X-Linked-Size, ETag, X-Repo-Commit; another file:
 *        200 with ETag (its git blob sha1) and the bytes (206 for a Range)
 *   GET  /blobs/{sha256}                     the bytes (Range honoured) and an ETag: the "CDN",
 *        on another host name (127.0.0.1) than the endpoint (localhost), so the token must
 *        not go there
 *   401 {"error": ...} for the gated repository without its token, 404 for the unknown.
 * Its content is models/tiny (a complete Marian model with random weights), plus
 * files mtserve must never fetch (tf_model.h5, flax, rust), and for the OPUS-MT en-mg
 * repository the model of `make opus-models` when it was generated.  Faults, each
 * once: the connection cut after N bytes of a blob; one byte of a blob flipped. */
#ifndef FAKE_HUB_H
#define FAKE_HUB_H

#include <microhttpd.h>
#include <pthread.h>
#include <stddef.h>

#include "hub/hub.h"

#define FAKE_COMMIT "5a9c1e0b7d3f2a4c6e8b0d1f3a5c7e9b1d3f5a7c"
#define FAKE_TOKEN  "hf_test_token"

typedef struct {
    char           name[64];
    int            lfs;
    unsigned char *data;
    size_t         len;
    char           etag[65];        /* sha256 (LFS) or git blob sha1 */
    char           oid[41];         /* git's blob id: of the file, or of its LFS pointer */
} fake_file;

typedef struct {
    const char *repo;
    int         gated;
    const char *unsafe_sibling;     /* a file name that walks out of the snapshot */
    const char *bad_etag;           /* the X-Linked-Etag sent for model.safetensors */
    int         opus;               /* its files: the generated OPUS-MT en-mg, not models/tiny */
} fake_repo;

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
    pthread_mutex_t mu;
    int        api_requests, resolve_requests, blob_gets, never_files, auth_to_cdn;
    long       last_range_from;     /* -1: none */
    char       cut_etag[65];        /* cut the next GET of this blob after cut_after bytes */
    size_t     cut_after;
    char       corrupt_etag[65];    /* flip a byte of the next GET of this blob */
    int        slow_ms;             /* sleep this long before each chunk of a blob (fake_hub_slow) */
} fake_hub_state;

extern fake_hub_state fake_hub;     /* counts and faults under its mu */

int  fake_hub_start(void);          /* 0, or -1 */
void fake_hub_stop(void);
void fake_hub_reset_counts(void);
/* Every chunk (4 KB) of a blob sent ms later from now on (0: at once). */
void fake_hub_slow(int ms);
const fake_repo *fake_repo_named(const char *repo);
const fake_file *fake_file_in(const fake_repo *repo, const char *name);   /* repo NULL: models/tiny's */
const fake_file *fake_file_named(const char *name);

/* ---- for the tests that use it ---- */
void fake_fresh_cache(char *out, size_t cap);               /* an empty cache beside the binary */
void fake_config(hub_config *cfg, const char *cache);       /* the fake hub, that cache */
void fake_ref_of(const char *name, hub_ref *ref);           /* asserted to parse */
long fake_read_all(const char *path, unsigned char *buf, size_t cap);   /* its bytes, or -1 */
/* the snapshot holds exactly the form's files of models/tiny, each a link to
 * ../../blobs/ETAG with the hub's bytes; refs/main names the commit; no .incomplete */
void fake_check_snapshot(const char *cache, const char *repo_folder);
int  fake_form_blobs(void);         /* the distinct LFS blobs of models/tiny's form */

#endif
