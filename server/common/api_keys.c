/* api_keys: the keys file (api_keys.h). */
#include "api_keys.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/check.h"

static int valid_key(const char *k, size_t n)
{
    if (n == 0 || n >= SRV_KEY_MAX)
        return 0;
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)k[i] <= ' ' || (unsigned char)k[i] >= 0x7f)
            return 0;
    return 1;
}

static int append(srv_api_keys *keys, const char *k, size_t n, long req, long chars, long quota)
{
    if (MT_GROW(keys->v, keys->cap, (size_t)keys->n + 1))
        return -1;
    srv_api_key *e = &keys->v[keys->n++];
    memcpy(e->key, k, n);
    e->key[n] = 0;
    e->req_limit = req;
    e->char_limit = chars;
    e->char_quota = quota;
    e->revoked = 0;
    return 0;
}

int srv_api_keys_add(srv_api_keys *keys, const char *key, char *err, size_t err_len)
{
    if (!valid_key(key, strlen(key))) {
        snprintf(err, err_len, "bad API key (printable ASCII without spaces, at most %d bytes)", SRV_KEY_MAX - 1);
        return -1;
    }
    if (append(keys, key, strlen(key), -1, -1, -1)) {
        snprintf(err, err_len, "out of memory");
        return -1;
    }
    return 0;
}

/* "name=N" with N >= 0 into *out; 1 if word is that setting, -1 if it is but N is bad. */
static int setting(const char *word, size_t n, const char *name, long *out)
{
    size_t ln = strlen(name);
    if (n <= ln + 1 || strncmp(word, name, ln) != 0 || word[ln] != '=')
        return 0;
    char buf[24];
    size_t vn = n - ln - 1;
    if (vn >= sizeof buf)
        return -1;
    memcpy(buf, word + ln + 1, vn);
    buf[vn] = 0;
    char *end;
    errno = 0;
    long v = strtol(buf, &end, 10);
    if (*end || errno || v < 0 || v > 1000000000L)
        return -1;
    *out = v;
    return 1;
}

static int parse_line(srv_api_keys *keys, const char *p, const char *end, int line, char *err, size_t err_len)
{
    const char *k = NULL;
    size_t kn = 0;
    long req = -1, chars = -1, quota = -1;
    while (p < end) {
        while (p < end && (*p == ' ' || *p == '\t' || *p == '\r'))
            p++;
        const char *w = p;
        while (p < end && *p != ' ' && *p != '\t' && *p != '\r')
            p++;
        size_t n = (size_t)(p - w);
        if (!n)
            break;
        if (!k) {
            k = w;
            kn = n;
            continue;
        }
        int a = setting(w, n, "req-limit", &req), b = a ? 0 : setting(w, n, "char-limit", &chars);
        int c = a || b ? 0 : setting(w, n, "char-quota", &quota);
        if (a < 0 || b < 0 || c < 0 || (!a && !b && !c)) {
            snprintf(err, err_len, "line %d: '%.*s' is not req-limit=N, char-limit=N or char-quota=N (N >= 0)", line,
                     (int)(n < 40 ? n : 40), w);
            return -1;
        }
    }
    if (!k)
        return 0;               /* blank */
    if (!valid_key(k, kn)) {
        snprintf(err, err_len, "line %d: bad key (printable ASCII without spaces, at most %d bytes)", line,
                 SRV_KEY_MAX - 1);
        return -1;
    }
    char tmp[SRV_KEY_MAX];
    memcpy(tmp, k, kn);
    tmp[kn] = 0;
    if (srv_api_keys_find(keys, tmp) >= 0) {
        snprintf(err, err_len, "line %d: the key is listed twice", line);
        return -1;
    }
    if (append(keys, k, kn, req, chars, quota)) {
        snprintf(err, err_len, "out of memory");
        return -1;
    }
    return 0;
}

int srv_api_keys_parse(srv_api_keys *keys, const char *text, char *err, size_t err_len)
{
    int line = 0;
    for (const char *p = text; *p;) {
        const char *nl = strchr(p, '\n');
        const char *end = nl ? nl : p + strlen(p);
        line++;
        const char *q = p;
        while (q < end && (*q == ' ' || *q == '\t'))
            q++;
        if (q < end && *q != '#' && parse_line(keys, q, end, line, err, err_len))
            return -1;
        p = nl ? nl + 1 : end;
    }
    return 0;
}

#define MAX_KEYS_FILE (16 << 20)
int srv_api_keys_load(srv_api_keys *keys, const char *path, char *err, size_t err_len)
{
    FILE *f = fopen(path, "rb");
    char *buf = f ? malloc(MAX_KEYS_FILE + 1) : NULL;
    size_t n = buf ? fread(buf, 1, MAX_KEYS_FILE + 1, f) : 0;
    int bad = !buf || ferror(f) || n > MAX_KEYS_FILE;
    if (f)
        fclose(f);
    if (bad) {
        snprintf(err, err_len, "--api-keys %s: %s", path, !f ? strerror(errno) : !buf ? "out of memory"
                                                          : n > MAX_KEYS_FILE ? "over 16 MB" : "read error");
        free(buf);
        return -1;
    }
    buf[n] = 0;
    char perr[200];
    int rc = memchr(buf, 0, n) ? (snprintf(perr, sizeof perr, "a NUL byte in the file"), -1)
                               : srv_api_keys_parse(keys, buf, perr, sizeof perr);
    free(buf);
    if (rc)
        snprintf(err, err_len, "--api-keys %s: %s", path, perr);
    return rc;
}

void srv_api_keys_free(srv_api_keys *keys)
{
    free(keys->v);
    keys->v = NULL;
    keys->n = 0;
    keys->cap = 0;
}

/* Compares without an early exit, so the time does not leak a key's prefix. */
static int key_equal(const char *a, const char *b)
{
    size_t la = strlen(a), lb = strlen(b);
    unsigned char diff = la != lb;
    for (size_t i = 0; i < la; i++)
        diff |= (unsigned char)(a[i] ^ b[i % (lb ? lb : 1)]);
    return diff == 0;
}

int srv_api_keys_find(const srv_api_keys *keys, const char *given)
{
    int found = -1;
    for (int i = 0; i < keys->n; i++)
        if (key_equal(given, keys->v[i].key) && found < 0 && !keys->v[i].revoked)
            found = i;
    return found;
}

int srv_api_keys_copy(const srv_api_keys *from, srv_api_keys *to)
{
    *to = (srv_api_keys){ 0 };
    if (from->n && !(to->v = malloc((size_t)from->n * sizeof *to->v)))
        return -1;
    if (from->n)
        memcpy(to->v, from->v, (size_t)from->n * sizeof *to->v);
    to->n = from->n;
    to->cap = (size_t)from->n;
    return 0;
}

/* The index of key among keys (revoked ones too), or -1. */
static int index_of(const srv_api_keys *keys, const char *key)
{
    for (int i = 0; i < keys->n; i++)
        if (!strcmp(keys->v[i].key, key))
            return i;
    return -1;
}

int srv_api_keys_merge(const srv_api_keys *old, const srv_api_keys *fresh, srv_api_keys *out)
{
    if (srv_api_keys_copy(old, out))
        return -1;
    for (int i = 0; i < out->n; i++) {
        int k = index_of(fresh, out->v[i].key);
        if (k >= 0)
            out->v[i] = fresh->v[k];
        out->v[i].revoked = k < 0;
    }
    for (int k = 0; k < fresh->n; k++) {
        const srv_api_key *e = &fresh->v[k];
        if (index_of(out, e->key) < 0 &&
            append(out, e->key, strlen(e->key), e->req_limit, e->char_limit, e->char_quota)) {
            srv_api_keys_free(out);
            return -1;
        }
    }
    return 0;
}

int srv_api_keys_active(const srv_api_keys *keys)
{
    int n = 0;
    for (int i = 0; i < keys->n; i++)
        n += !keys->v[i].revoked;
    return n;
}
