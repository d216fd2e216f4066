/* client_addr: which address a request comes from, for fairness and rate
 * limits.  The peer's own address, unless the peer is a proxy the operator
 * trusts (--trusted-proxy): then the address that proxy saw, read from
 * X-Forwarded-For right to left, skipping the trusted proxies of the chain
 * (the leftmost entries are whatever the client wrote: never believed past
 * the first untrusted hop).
 */
#ifndef SRV_CLIENT_ADDR_H
#define SRV_CLIENT_ADDR_H

#include <stddef.h>

/* Longest address text (IPv6 with its zone cut off): INET6_ADDRSTRLEN. */
#define SRV_ADDR_MAX 46

/* A parsed --trusted-proxy list: addresses and CIDR blocks, IPv4 or IPv6. */
typedef struct srv_proxies srv_proxies;

/* Parses "10.0.0.1, 192.168.0.0/16, ::1"; NULL with a message for a bad
 * entry ("" gives an empty list: nothing trusted). */
srv_proxies *srv_proxies_parse(const char *list, char *err, size_t err_len);
void         srv_proxies_free(srv_proxies *p);
/* 1 if addr (numeric text) is in the list. */
int          srv_proxies_trust(const srv_proxies *p, const char *addr);

/* The client's address into out[SRV_ADDR_MAX]: peer (numeric text), or, when
 * the peer is trusted and xff (the X-Forwarded-For header, NULL if absent)
 * names one, the rightmost untrusted valid address of xff; an invalid entry
 * ends the walk (the peer's last trusted hop then stands).  Returns 1 when
 * the address came from xff. */
int srv_client_address(const srv_proxies *p, const char *peer, const char *xff, char out[SRV_ADDR_MAX]);

#endif
