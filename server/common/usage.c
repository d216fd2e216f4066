/* usage: characters per API key against its quota, in a state file (usage.h). */
#include "usage.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "util/clock.h"
#include "util/hash.h"

#define USAGE_MAGIC "mtserve-usage 1"

struct srv_usage {
    const srv_api_keys *keys;
    pthread_mutex_t     lock;
    long               *count;      /* [n_keys + 1]: the keys', then no key's */
    int                 n_slots;
    char               *path;       /* NULL: no file */
    double              saved_at;   /* mt_now_s() of the last save */
    int                 dirty;
};

static int slot_of(const srv_usage *u, int key) { return key >= 0 && key < u->n_slots - 1 ? key : u->n_slots - 1; }

/* The name of slot s in the file: a hash of its key, "-" for no key. */
static void slot_name(const srv_usage *u, int s, char out[20])
{
    if (s == u->n_slots - 1) {
        snprintf(out, 20, "-");
        return;
    }
    uint64_t h = 0xcbf29ce484222325ULL;
    for (const unsigned char *p = (const unsigned char *)u->keys->v[s].key; *p; p++)
        h = (h ^ *p) * 0x100000001b3ULL;
    snprintf(out, 20, "%016" PRIx64, mt_hash_mix64(h));
}

/* One "NAME COUNT" line of the file into its slot (unknown names dropped). */
static int read_line(srv_usage *u, const char *line)
{
    char name[20], n20[20];
    long long count;
    if (sscanf(line, "%19s %lld", name, &count) != 2 || count < 0)
        return -1;
    for (int s = 0; s < u->n_slots; s++) {
        slot_name(u, s, n20);
        if (!strcmp(n20, name))
            u->count[s] = (long)count;
    }
    return 0;
}

static int load(srv_usage *u, char *err, size_t err_len)
{
    FILE *f = fopen(u->path, "r");
    if (!f) {
        if (errno == ENOENT)
            return 0;           /* the first start: counts from 0 */
        snprintf(err, err_len, "%s: %s", u->path, strerror(errno));
        return -1;
    }
    char line[256];
    int rc = 0, n = 0;
    if (!fgets(line, sizeof line, f) || strncmp(line, USAGE_MAGIC "\n", sizeof USAGE_MAGIC) != 0) {
        snprintf(err, err_len, "%s: not a usage file (its first line is not \"%s\")", u->path, USAGE_MAGIC);
        rc = -1;
    }
    while (rc == 0 && fgets(line, sizeof line, f)) {
        n++;
        if (read_line(u, line)) {
            snprintf(err, err_len, "%s: line %d is not NAME COUNT", u->path, n + 1);
            rc = -1;
        }
    }
    fclose(f);
    return rc;
}

int srv_usage_open(srv_usage **out, const srv_api_keys *keys, const char *path, char *err, size_t err_len)
{
    *out = NULL;
    srv_usage *u = calloc(1, sizeof *u);
    if (!u)
        goto oom;
    u->keys = keys;
    u->n_slots = keys->n + 1;
    u->count = calloc((size_t)u->n_slots, sizeof *u->count);
    if (!u->count || (path && *path && !(u->path = strdup(path))))
        goto oom;
    pthread_mutex_init(&u->lock, NULL);
    if (u->path && load(u, err, err_len)) {
        srv_usage_close(u);
        return -1;
    }
    u->saved_at = mt_now_s();
    *out = u;
    return 0;
oom:
    if (u) {
        free(u->count);
        free(u);
    }
    snprintf(err, err_len, "out of memory");
    return -1;
}

/* Writes path.tmp, syncs it and renames it over path: a reader (or a crash)
 * sees the old file or the new one, never half of one.  Under the lock. */
static int save_locked(srv_usage *u, char *err, size_t err_len)
{
    char tmp[4096];
    if (snprintf(tmp, sizeof tmp, "%s.tmp", u->path) >= (int)sizeof tmp) {
        snprintf(err, err_len, "%s: path too long", u->path);
        return -1;
    }
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    FILE *f = fd >= 0 ? fdopen(fd, "w") : NULL;
    if (!f) {
        snprintf(err, err_len, "%s: %s", tmp, strerror(errno));
        if (fd >= 0)
            close(fd);
        return -1;
    }
    fprintf(f, "%s\n", USAGE_MAGIC);
    for (int s = 0; s < u->n_slots; s++) {
        char name[20];
        slot_name(u, s, name);
        if (u->count[s])
            fprintf(f, "%s %ld\n", name, u->count[s]);
    }
    int bad = fflush(f) != 0 || fsync(fileno(f)) != 0;
    bad |= fclose(f) != 0;
    if (bad || rename(tmp, u->path) != 0) {
        snprintf(err, err_len, "%s: %s", u->path, strerror(errno));
        unlink(tmp);
        return -1;
    }
    u->saved_at = mt_now_s();
    u->dirty = 0;
    return 0;
}

int srv_usage_save(srv_usage *u, char *err, size_t err_len)
{
    if (!u->path)
        return 0;
    pthread_mutex_lock(&u->lock);
    int rc = save_locked(u, err, err_len);
    pthread_mutex_unlock(&u->lock);
    return rc;
}

void srv_usage_close(srv_usage *u)
{
    if (!u)
        return;
    char err[256];
    if (u->path && u->dirty && srv_usage_save(u, err, sizeof err))
        fprintf(stderr, "mtserve: usage not saved: %s\n", err);
    pthread_mutex_destroy(&u->lock);
    free(u->count);
    free(u->path);
    free(u);
}

long srv_usage_quota(const srv_usage *u, int key)
{
    int s = slot_of(u, key);
    return s < u->n_slots - 1 ? u->keys->v[s].char_quota : -1;
}

int srv_usage_take(srv_usage *u, int key, long chars)
{
    int s = slot_of(u, key), rc = 0;
    long quota = srv_usage_quota(u, key);
    pthread_mutex_lock(&u->lock);
    if (quota >= 0 && chars > quota - u->count[s]) {
        rc = -1;
    } else {
        u->count[s] += chars;
        u->dirty |= chars != 0;
    }
    char err[256];
    if (u->path && u->dirty && mt_now_s() - u->saved_at >= 1.0 && save_locked(u, err, sizeof err))
        fprintf(stderr, "mtserve: usage not saved: %s\n", err);
    pthread_mutex_unlock(&u->lock);
    return rc;
}

void srv_usage_give_back(srv_usage *u, int key, long chars)
{
    int s = slot_of(u, key);
    pthread_mutex_lock(&u->lock);
    u->count[s] -= chars < u->count[s] ? chars : u->count[s];
    u->dirty = 1;
    pthread_mutex_unlock(&u->lock);
}

int srv_usage_slots(const srv_usage *u) { return u->n_slots; }

void srv_usage_slot_name(const srv_usage *u, int key, char out[20]) { slot_name(u, slot_of(u, key), out); }

long srv_usage_count(srv_usage *u, int key)
{
    int s = slot_of(u, key);
    pthread_mutex_lock(&u->lock);
    long n = u->count[s];
    pthread_mutex_unlock(&u->lock);
    return n;
}
