/* client_addr: the client's address behind trusted proxies (client_addr.h). */
#include "client_addr.h"

#include <arpa/inet.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/check.h"

typedef struct {
    int           family;       /* AF_INET or AF_INET6 */
    unsigned char addr[16];
    int           bits;         /* prefix length */
} cidr;

struct srv_proxies {
    cidr  *v;
    int    n;
    size_t cap;
};

/* Numeric text -> family and bytes; an IPv4 address mapped into IPv6
 * (::ffff:a.b.c.d, how a dual-stack socket reports IPv4 peers) reads as IPv4. */
static int parse_ip(const char *s, size_t n, int *family, unsigned char out[16])
{
    char buf[SRV_ADDR_MAX + 8];
    if (n == 0 || n >= sizeof buf)
        return -1;
    memcpy(buf, s, n);
    buf[n] = 0;
    if (inet_pton(AF_INET, buf, out) == 1) {
        *family = AF_INET;
        return 0;
    }
    if (inet_pton(AF_INET6, buf, out) != 1)
        return -1;
    static const unsigned char mapped[12] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff };
    if (memcmp(out, mapped, 12) == 0) {
        memmove(out, out + 12, 4);
        *family = AF_INET;
    } else {
        *family = AF_INET6;
    }
    return 0;
}

static int cidr_contains(const cidr *c, int family, const unsigned char *a)
{
    if (c->family != family)
        return 0;
    int full = c->bits / 8, rest = c->bits % 8;
    if (memcmp(c->addr, a, (size_t)full) != 0)
        return 0;
    if (!rest)
        return 1;
    unsigned char mask = (unsigned char)(0xff << (8 - rest));
    return (c->addr[full] & mask) == (a[full] & mask);
}

srv_proxies *srv_proxies_parse(const char *list, char *err, size_t err_len)
{
    srv_proxies *p = calloc(1, sizeof *p);
    if (!p) {
        snprintf(err, err_len, "out of memory");
        return NULL;
    }
    for (const char *s = list; s && *s;) {
        s += strspn(s, " ,");
        size_t n = strcspn(s, " ,");
        if (!n)
            break;
        const char *slash = memchr(s, '/', n);
        cidr c = { 0 };
        size_t alen = slash ? (size_t)(slash - s) : n;
        int ok = parse_ip(s, alen, &c.family, c.addr) == 0;
        int max = c.family == AF_INET ? 32 : 128;
        c.bits = max;
        if (ok && slash) {
            char *end;
            long bits = strtol(slash + 1, &end, 10);
            ok = end == s + n && end > slash + 1 && bits >= 0 && bits <= max;
            c.bits = (int)bits;
        }
        if (!ok || MT_GROW(p->v, p->cap, (size_t)p->n + 1)) {
            snprintf(err, err_len, ok ? "out of memory" : "bad --trusted-proxy entry '%.*s' (an address or CIDR block)",
                     (int)(n < 64 ? n : 64), s);
            srv_proxies_free(p);
            return NULL;
        }
        p->v[p->n++] = c;
        s += n;
    }
    return p;
}

void srv_proxies_free(srv_proxies *p)
{
    if (!p)
        return;
    free(p->v);
    free(p);
}

static int trusted(const srv_proxies *p, int family, const unsigned char *a)
{
    for (int i = 0; p && i < p->n; i++)
        if (cidr_contains(&p->v[i], family, a))
            return 1;
    return 0;
}

int srv_proxies_trust(const srv_proxies *p, const char *addr)
{
    int family;
    unsigned char a[16];
    return parse_ip(addr, strlen(addr), &family, a) == 0 && trusted(p, family, a);
}

/* Canonical text of an address (so one client is one key, however written). */
static void format_ip(int family, const unsigned char *a, char out[SRV_ADDR_MAX])
{
    if (!inet_ntop(family, a, out, SRV_ADDR_MAX))
        out[0] = 0;
}

int srv_client_address(const srv_proxies *p, const char *peer, const char *xff, char out[SRV_ADDR_MAX])
{
    int family;
    unsigned char a[16];
    if (parse_ip(peer, strlen(peer), &family, a) != 0) {
        snprintf(out, SRV_ADDR_MAX, "%s", peer);    /* not an IP (a unix socket): as it is */
        return 0;
    }
    format_ip(family, a, out);
    if (!xff || !trusted(p, family, a))
        return 0;
    /* right to left: each hop was appended by the one after it */
    size_t end = strlen(xff);
    int from_xff = 0;
    while (end > 0) {
        size_t start = end;
        while (start > 0 && xff[start - 1] != ',')
            start--;
        size_t s = start, e = end;
        while (s < e && (xff[s] == ' ' || xff[s] == '\t'))
            s++;
        while (e > s && (xff[e - 1] == ' ' || xff[e - 1] == '\t'))
            e--;
        if (parse_ip(xff + s, e - s, &family, a) != 0)
            break;                  /* garbage: the last trusted hop's address stands */
        format_ip(family, a, out);
        from_xff = 1;
        if (!trusted(p, family, a))
            break;                  /* the first untrusted hop: the client as far as we can tell */
        end = start ? start - 1 : 0;
    }
    return from_xff;
}
