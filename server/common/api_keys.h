/* api_keys: the keys a client may present, each with its own limits.
 *
 * From --api-key (one key, the default limits) and --api-keys FILE, one key
 * per line:
 *     KEY [req-limit=N] [char-limit=N] [char-quota=N]
 * '#' starts a comment line; a limit not given is the server's
 * (--req-limit, --char-limit), 0 lifts it for that key.  char-quota: the
 * characters the key may have translated in all (usage.h; DeepL's
 * character_limit, 456 past it); none by default.  Keys are printable
 * ASCII without spaces, at most SRV_KEY_MAX - 1 bytes; a bad line fails the
 * start with its line number.
 */
#ifndef SRV_API_KEYS_H
#define SRV_API_KEYS_H

#include <stddef.h>

#define SRV_KEY_MAX 256

typedef struct {
    char key[SRV_KEY_MAX];
    long req_limit, char_limit;     /* per minute; -1: the server's */
    long char_quota;                /* in all (usage.h); -1: none */
    int  revoked;                   /* gone from the file at a reload: never found, its index kept */
} srv_api_key;

typedef struct {
    srv_api_key *v;
    int          n;
    size_t       cap;       /* v's allocation, in keys */
} srv_api_keys;

/* Parses text (a keys file's contents, NUL-terminated) and appends its keys.
 * 0, or -1 with "line N: ..." in err. */
int  srv_api_keys_parse(srv_api_keys *keys, const char *text, char *err, size_t err_len);
/* Reads and parses a keys file (at most 16 MB).  0, or -1 with a message. */
int  srv_api_keys_load(srv_api_keys *keys, const char *path, char *err, size_t err_len);
/* Appends one key with the server's limits.  0 or -1 (out of memory, bad key). */
int  srv_api_keys_add(srv_api_keys *keys, const char *key, char *err, size_t err_len);
void srv_api_keys_free(srv_api_keys *keys);

/* SIGHUP: the keys of fresh (the file read again) with the indices of old
 * kept -- a key's index names its usage slot, its glossaries and its rate
 * limits' client --: a key of both gets fresh's limits, a key only in old is
 * revoked, a key only in fresh is appended.  0, or -1 (out of memory). */
int  srv_api_keys_merge(const srv_api_keys *old, const srv_api_keys *fresh, srv_api_keys *out);
/* A copy of from into to (freed with srv_api_keys_free).  0 or -1. */
int  srv_api_keys_copy(const srv_api_keys *from, srv_api_keys *to);
/* The keys not revoked. */
int  srv_api_keys_active(const srv_api_keys *keys);

/* The index of given among the keys (never a revoked one), or -1.  Every key is compared in full
 * whatever matches, so the time taken does not tell how much of a key was
 * right. */
int  srv_api_keys_find(const srv_api_keys *keys, const char *given);

#endif
