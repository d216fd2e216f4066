/* fuzz_client_addr: srv_proxies_parse and srv_client_address
 * (server/http/client_addr.c) on arbitrary bytes.
 *
 * The input is three parts cut at NULs: a --trusted-proxy list, the peer's
 * address text, and an X-Forwarded-For value (absent when the input has
 * fewer parts).  Checked, when the list parses:
 *   - the result is NUL-terminated within SRV_ADDR_MAX;
 *   - a peer that is no IP address is returned as it is (cut to fit), and
 *     the header is not read;
 *   - an untrusted peer, or no header, gives the peer in canonical form and
 *     "not from the header";
 *   - otherwise the result equals a reference walk written here differently
 *     (the header split into all its entries first, then read from the
 *     right): the first entry that is no address ends the walk, the first
 *     untrusted one is the client, and with every entry trusted the leftmost
 *     stands.
 * The address parsing is inet_pton's, as in the module. */
#include "fuzz_common.h"

#include <arpa/inet.h>

#include "http/client_addr.h"

/* Canonical text of an address (IPv4-mapped IPv6 read as IPv4), or -1. */
static int canon(const char *s, size_t n, char out[SRV_ADDR_MAX])
{
    char buf[128];
    unsigned char a[16];
    if (n == 0 || n >= sizeof buf)
        return -1;
    memcpy(buf, s, n);
    buf[n] = 0;
    if (inet_pton(AF_INET, buf, a) == 1)
        return inet_ntop(AF_INET, a, out, SRV_ADDR_MAX) ? 0 : -1;
    if (inet_pton(AF_INET6, buf, a) != 1)
        return -1;
    static const unsigned char mapped[12] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff };
    if (memcmp(a, mapped, 12) == 0)
        return inet_ntop(AF_INET, a + 12, out, SRV_ADDR_MAX) ? 0 : -1;
    return inet_ntop(AF_INET6, a, out, SRV_ADDR_MAX) ? 0 : -1;
}

#define MAX_ENTRIES 512

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *buf = malloc(size + 3);
    if (!buf)
        return 0;
    memcpy(buf, data, size);
    buf[size] = buf[size + 1] = buf[size + 2] = 0;
    const char *list = buf;
    const char *peer = list + strlen(list) + 1;
    const char *xff = (size_t)(peer - buf) <= size ? peer + strlen(peer) + 1 : NULL;
    if (peer > buf + size)
        peer = "";
    if (xff && xff > buf + size)
        xff = NULL;
    char err[160];
    srv_proxies *p = srv_proxies_parse(list, err, sizeof err);
    if (!p) {
        FUZZ_CHECK(strstr(err, "--trusted-proxy") || strstr(err, "memory"));
        free(buf);
        return 0;
    }
    char out[SRV_ADDR_MAX + 1];
    out[SRV_ADDR_MAX] = 'X';            /* a canary just past the result */
    int from = srv_client_address(p, peer, xff, out);
    FUZZ_CHECK(out[SRV_ADDR_MAX] == 'X');
    FUZZ_CHECK(memchr(out, 0, SRV_ADDR_MAX) != NULL);
    char cpeer[SRV_ADDR_MAX];
    if (canon(peer, strlen(peer), cpeer) != 0) {
        FUZZ_CHECK(from == 0);
        FUZZ_CHECK(strncmp(out, peer, SRV_ADDR_MAX - 1) == 0);
    } else if (!xff || !srv_proxies_trust(p, cpeer)) {
        FUZZ_CHECK(from == 0);
        FUZZ_CHECK(strcmp(out, cpeer) == 0);
    } else {
        /* the reference walk */
        const char *start[MAX_ENTRIES];
        size_t len[MAX_ENTRIES];
        int n = 0, overflow = 0;
        for (const char *s = xff;; ) {
            const char *comma = strchr(s, ',');
            size_t l = comma ? (size_t)(comma - s) : strlen(s);
            if (n == MAX_ENTRIES) {
                overflow = 1;
                break;
            }
            start[n] = s;
            len[n++] = l;
            if (!comma)
                break;
            s = comma + 1;
        }
        if (!overflow) {
            char want[SRV_ADDR_MAX];
            strcpy(want, cpeer);
            int want_from = 0;
            for (int i = n - 1; i >= 0; i--) {
                const char *s = start[i];
                size_t l = len[i];
                while (l && (*s == ' ' || *s == '\t'))
                    s++, l--;
                while (l && (s[l - 1] == ' ' || s[l - 1] == '\t'))
                    l--;
                char c[SRV_ADDR_MAX];
                if (canon(s, l, c) != 0)
                    break;
                strcpy(want, c);
                want_from = 1;
                if (!srv_proxies_trust(p, c))
                    break;
            }
            FUZZ_CHECK(from == want_from);
            FUZZ_CHECK(strcmp(out, want) == 0);
        }
    }
    srv_proxies_free(p);
    free(buf);
    return 0;
}
