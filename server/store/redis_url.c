/* redis_url: --redis URL -> srv_redis_url, the one place it is read (redis.h). */
#include "redis.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FORMS "redis://[[user]:password@]host[:port][/db] or unix:///path/to/socket[?db=N]"

/* A decimal number of 1..max_digits digits in s[0..n) within [0, max]: it, or -1. */
static long number(const char *s, size_t n, long max)
{
    if (n == 0 || n > 9)
        return -1;
    long v = 0;
    for (size_t i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9')
            return -1;
        v = v * 10 + (s[i] - '0');
    }
    return v <= max ? v : -1;
}

static int hexval(char c)
{
    return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
}

/* s[0..n) %-decoded into out[cap]: 0, or -1 (a bad escape, a NUL, too long). */
static int pct_decode(const char *s, size_t n, char *out, size_t cap)
{
    size_t o = 0;
    for (size_t i = 0; i < n; i++) {
        int c = (unsigned char)s[i];
        if (c == '%') {
            if (i + 2 >= n)
                return -1;
            int h = hexval(s[i + 1]), l = hexval(s[i + 2]);
            if (h < 0 || l < 0)
                return -1;
            c = h * 16 + l;
            i += 2;
        }
        if (c == 0 || o + 1 >= cap)
            return -1;
        out[o++] = (char)c;
    }
    out[o] = 0;
    return 0;
}

/* A host name or IPv4 address: letters, digits, '.', '-', '_'. */
static int name_ok(const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= 'A' && s[i] <= 'Z') || (s[i] >= '0' && s[i] <= '9') ||
              s[i] == '.' || s[i] == '-' || s[i] == '_'))
            return 0;
    return n > 0;
}

/* user:password of redis://USERINFO@... */
static int userinfo(const char *s, size_t n, srv_redis_url *u, char *err, size_t err_len)
{
    const char *colon = memchr(s, ':', n);
    if (!colon) {
        snprintf(err, err_len, "--redis: the part before '@' must be [user]:password");
        return -1;
    }
    if (pct_decode(s, (size_t)(colon - s), u->user, sizeof u->user) ||
        pct_decode(colon + 1, n - (size_t)(colon - s) - 1, u->password, sizeof u->password)) {
        snprintf(err, err_len, "--redis: the user or password has a bad %%-escape, a NUL or is too long");
        return -1;
    }
    if (!u->password[0]) {
        snprintf(err, err_len, "--redis: an empty password (leave out user:password@ for no AUTH)");
        return -1;
    }
    return 0;
}

/* host[:port] or [v6][:port] */
static int hostport(const char *s, size_t n, srv_redis_url *u, char *err, size_t err_len)
{
    const char *h = s, *port = NULL;
    size_t hn;
    if (n && s[0] == '[') {
        const char *close = memchr(s, ']', n);
        if (!close || close == s + 1) {
            snprintf(err, err_len, "--redis: an IPv6 address needs its closing ']'");
            return -1;
        }
        h = s + 1, hn = (size_t)(close - s) - 1;
        for (size_t i = 0; i < hn; i++)
            if (!(hexval(h[i]) >= 0 || h[i] == ':' || h[i] == '.')) {
                snprintf(err, err_len, "--redis: '%.*s' is not an IPv6 address", (int)hn, h);
                return -1;
            }
        if (close + 1 < s + n && close[1] != ':') {
            snprintf(err, err_len, "--redis: after ']' only :port may follow");
            return -1;
        }
        port = close + 1 < s + n ? close + 2 : NULL;
    } else {
        const char *colon = memchr(s, ':', n);
        hn = colon ? (size_t)(colon - s) : n;
        port = colon ? colon + 1 : NULL;
        if (!name_ok(h, hn)) {
            snprintf(err, err_len, "--redis: no host, or '%.*s' is not a host name or address", (int)hn, h);
            return -1;
        }
    }
    if (hn >= sizeof u->host) {
        snprintf(err, err_len, "--redis: the host name is too long");
        return -1;
    }
    memcpy(u->host, h, hn);
    u->host[hn] = 0;
    u->port = 6379;
    if (port) {
        long p = number(port, (size_t)(s + n - port), 65535);
        if (p < 1) {
            snprintf(err, err_len, "--redis: the port must be 1..65535");
            return -1;
        }
        u->port = (int)p;
    }
    return 0;
}

static int parse_tcp(const char *rest, srv_redis_url *u, char *err, size_t err_len)
{
    size_t n = strlen(rest);
    const char *slash = memchr(rest, '/', n);
    size_t auth_end = slash ? (size_t)(slash - rest) : n;
    const char *at = NULL;
    for (size_t i = 0; i < auth_end; i++)       /* the last '@' before the path: passwords may hold '@' */
        if (rest[i] == '@')
            at = rest + i;
    if (at && userinfo(rest, (size_t)(at - rest), u, err, err_len))
        return -1;
    const char *hp = at ? at + 1 : rest;
    if (hostport(hp, (size_t)(rest + auth_end - hp), u, err, err_len))
        return -1;
    if (slash && slash[1]) {
        long db = number(slash + 1, strlen(slash + 1), 1000000);
        if (db < 0) {
            snprintf(err, err_len, "--redis: after the host only /db (a number) may follow, not '%s'", slash);
            return -1;
        }
        u->db = (int)db;
    }
    return 0;
}

static int parse_unix(const char *rest, srv_redis_url *u, char *err, size_t err_len)
{
    const char *q = strchr(rest, '?');
    size_t n = q ? (size_t)(q - rest) : strlen(rest);
    if (n == 0 || rest[0] != '/') {
        snprintf(err, err_len, "--redis: unix:// needs an absolute socket path (unix:///run/redis.sock)");
        return -1;
    }
    if (n >= sizeof u->path) {
        snprintf(err, err_len, "--redis: the socket path is longer than %zu bytes", sizeof u->path - 1);
        return -1;
    }
    if (q) {
        long db = strncmp(q, "?db=", 4) == 0 ? number(q + 4, strlen(q + 4), 1000000) : -1;
        if (db < 0) {
            snprintf(err, err_len, "--redis: after the socket path only ?db=N may follow");
            return -1;
        }
        u->db = (int)db;
    }
    memcpy(u->path, rest, n);
    u->path[n] = 0;
    u->is_unix = 1;
    return 0;
}

int srv_redis_url_parse(const char *url, srv_redis_url *out, char *err, size_t err_len)
{
    memset(out, 0, sizeof *out);
    if (!url || !*url) {
        snprintf(err, err_len, "--redis: empty; expected " FORMS);
        return -1;
    }
    for (const char *p = url; *p; p++)
        if ((unsigned char)*p <= ' ' || *p == 0x7f) {
            snprintf(err, err_len, "--redis: the URL holds a space or a control character");
            return -1;
        }
    int rc;
    if (strncmp(url, "rediss://", 9) == 0) {
        snprintf(err, err_len, "--redis: rediss:// (TLS) is not available: this build's hiredis (Debian 12's "
                 "libhiredis 0.14) has no TLS; use redis:// on a private network, a unix:// socket, or a TLS "
                 "tunnel (stunnel, spiped) to a local port");
        rc = -1;
    } else if (strncmp(url, "redis://", 8) == 0) {
        rc = parse_tcp(url + 8, out, err, err_len);
    } else if (strncmp(url, "unix://", 7) == 0) {
        rc = parse_unix(url + 7, out, err, err_len);
    } else {
        snprintf(err, err_len, "--redis: '%.40s' is not a Redis URL; expected " FORMS, url);
        rc = -1;
    }
    if (rc)
        memset(out, 0, sizeof *out);
    return rc;
}

void srv_redis_url_print(const srv_redis_url *u, char *out, size_t out_len)
{
    char auth[160] = "";
    if (u->password[0])     /* the user is no secret; the password is never shown */
        snprintf(auth, sizeof auth, "%.128s:***@", u->user);
    if (u->is_unix)
        snprintf(out, out_len, "unix://%s?db=%d", u->path, u->db);
    else if (strchr(u->host, ':'))
        snprintf(out, out_len, "redis://%s[%s]:%d/%d", auth, u->host, u->port, u->db);
    else
        snprintf(out, out_len, "redis://%s%s:%d/%d", auth, u->host, u->port, u->db);
}
