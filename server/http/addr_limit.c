/* addr_limit: connections per address (addr_limit.h). */
#include "addr_limit.h"

#include <netinet/in.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define BUCKETS 1024

struct srv_addr_slot {
    unsigned char key[17];      /* family byte, then the address (16 bytes, IPv4 in the first 4) */
    int           n;            /* its open connections */
    srv_addr_slot *next;
};

struct srv_addr_limit {
    srv_addr_limit_params p;
    pthread_mutex_t mu;         /* the table */
    srv_addr_slot  *table[BUCKETS];
};

/* The address as a fixed key (an IPv4-mapped IPv6 peer is its IPv4 address);
 * 0 when the family is neither. */
static int key_of(const struct sockaddr *sa, unsigned char key[17])
{
    memset(key, 0, 17);
    if (sa && sa->sa_family == AF_INET) {
        key[0] = 4;
        memcpy(key + 1, &((const struct sockaddr_in *)sa)->sin_addr, 4);
        return 1;
    }
    if (sa && sa->sa_family == AF_INET6) {
        const unsigned char *a = ((const struct sockaddr_in6 *)sa)->sin6_addr.s6_addr;
        static const unsigned char mapped[12] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff };
        if (memcmp(a, mapped, 12) == 0) {
            key[0] = 4;
            memcpy(key + 1, a + 12, 4);
        } else {
            key[0] = 6;
            memcpy(key + 1, a, 16);
        }
        return 1;
    }
    return 0;
}

static unsigned bucket_of(const unsigned char key[17])
{
    uint32_t h = 2166136261u;
    for (int i = 0; i < 17; i++)
        h = (h ^ key[i]) * 16777619u;
    return h % BUCKETS;
}

srv_addr_verdict srv_addr_limit_enter(srv_addr_limit *l, const struct sockaddr *addr, srv_addr_slot **slot)
{
    *slot = NULL;
    unsigned char key[17];
    if (!l || l->p.limit <= 0 || !key_of(addr, key))
        return SRV_ADDR_ADMIT;
    pthread_mutex_lock(&l->mu);
    srv_addr_slot **b = &l->table[bucket_of(key)], *s = *b;
    while (s && memcmp(s->key, key, sizeof key) != 0)
        s = s->next;
    if (!s && (s = calloc(1, sizeof *s))) {
        memcpy(s->key, key, sizeof key);
        s->next = *b;
        *b = s;
    }
    int n = s ? ++s->n : 0;
    pthread_mutex_unlock(&l->mu);
    *slot = s;
    if (n > 2 * l->p.limit)
        return SRV_ADDR_REFUSE;
    return n > l->p.limit ? SRV_ADDR_PARK : SRV_ADDR_ADMIT;
}

void srv_addr_limit_leave(srv_addr_limit *l, srv_addr_slot *slot)
{
    if (!l || !slot)
        return;
    pthread_mutex_lock(&l->mu);
    if (--slot->n == 0) {
        for (srv_addr_slot **pp = &l->table[bucket_of(slot->key)]; *pp; pp = &(*pp)->next)
            if (*pp == slot) {
                *pp = slot->next;
                free(slot);
                break;
            }
    }
    pthread_mutex_unlock(&l->mu);
}

srv_addr_limit *srv_addr_limit_new(const srv_addr_limit_params *p)
{
    srv_addr_limit *l = calloc(1, sizeof *l);
    if (!l)
        return NULL;
    l->p = *p;
    pthread_mutex_init(&l->mu, NULL);
    return l;
}

void srv_addr_limit_free(srv_addr_limit *l)
{
    if (!l)
        return;
    for (int i = 0; i < BUCKETS; i++)
        while (l->table[i]) {
            srv_addr_slot *s = l->table[i];
            l->table[i] = s->next;
            free(s);
        }
    pthread_mutex_destroy(&l->mu);
    free(l);
}
