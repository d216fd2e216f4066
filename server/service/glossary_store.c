/* glossary_store: API-made glossaries by id, reference-counted (glossary_store.h). */
#include "glossary_store.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "util/check.h"

struct srv_gstore {
    pthread_mutex_t lock;
    srv_gstored   **v;          /* in creation order */
    int             n, max;
};

srv_gstore *srv_gstore_new(int max)
{
    srv_gstore *s = calloc(1, sizeof *s);
    if (!s || !(s->v = calloc((size_t)(max > 0 ? max : 1), sizeof *s->v))) {
        free(s);
        return NULL;
    }
    s->max = max > 0 ? max : 1;
    pthread_mutex_init(&s->lock, NULL);
    return s;
}

void srv_gstore_free(srv_gstore *s)
{
    if (!s)
        return;
    for (int i = 0; i < s->n; i++)
        srv_gstored_free(s->v[i]);
    pthread_mutex_destroy(&s->lock);
    free(s->v);
    free(s);
}

/* ---- one glossary ------------------------------------------------------------------ */

srv_gstored *srv_gstored_new(const char *name, int owner)
{
    srv_gstored *g = calloc(1, sizeof *g);
    if (!g)
        return NULL;
    snprintf(g->name, sizeof g->name, "%s", name);
    g->owner = owner;
    g->created = time(NULL);
    return g;
}

void srv_gstored_free(srv_gstored *g)
{
    for (int i = 0; g && i < g->n_dicts; i++)
        srv_glossary_free(g->dicts[i].terms);
    free(g);
}

static int dict_index(const srv_gstored *g, const char *source, const char *target)
{
    for (int i = 0; i < g->n_dicts; i++)
        if (!strcmp(g->dicts[i].source, source) && !strcmp(g->dicts[i].target, target))
            return i;
    return -1;
}

int srv_gstored_add_dict(srv_gstored *g, const char *source, const char *target, srv_glossary *terms)
{
    int i = dict_index(g, source, target);
    if (i >= 0) {
        srv_glossary_free(g->dicts[i].terms);
        g->dicts[i].terms = terms;
        return 0;
    }
    if (g->n_dicts == SRV_GSTORE_MAX_DICTS) {
        srv_glossary_free(terms);
        return -1;
    }
    srv_gdict *d = &g->dicts[g->n_dicts++];
    snprintf(d->source, sizeof d->source, "%s", source);
    snprintf(d->target, sizeof d->target, "%s", target);
    d->terms = terms;
    return 0;
}

int srv_gstored_remove_dict(srv_gstored *g, const char *source, const char *target)
{
    int i = dict_index(g, source, target);
    if (i < 0)
        return -1;
    srv_glossary_free(g->dicts[i].terms);
    memmove(&g->dicts[i], &g->dicts[i + 1], sizeof g->dicts[0] * (size_t)(g->n_dicts - i - 1));
    g->n_dicts--;
    return 0;
}

const srv_gdict *srv_gstored_dict(const srv_gstored *g, const char *source, const char *target)
{
    int i = dict_index(g, source, target);
    return i < 0 ? NULL : &g->dicts[i];
}

srv_gstored *srv_gstored_copy(const srv_gstored *g)
{
    srv_gstored *c = calloc(1, sizeof *c);
    if (!c)
        return NULL;
    /* field by field: refs is the store's, written under its lock by the readers (TSan found the copy) */
    memcpy(c->id, g->id, sizeof c->id);
    memcpy(c->name, g->name, sizeof c->name);
    c->owner = g->owner;
    c->created = g->created;
    c->n_dicts = g->n_dicts;
    for (int i = 0; i < g->n_dicts; i++) {
        memcpy(c->dicts[i].source, g->dicts[i].source, sizeof c->dicts[i].source);
        memcpy(c->dicts[i].target, g->dicts[i].target, sizeof c->dicts[i].target);
        mt_err err;
        if (srv_glossary_merge(g->dicts[i].terms, NULL, NULL, &c->dicts[i].terms, &err) != MT_OK) {
            c->n_dicts = i;
            srv_gstored_free(c);
            return NULL;
        }
    }
    return c;
}

/* ---- the store ------------------------------------------------------------------------ */

/* A random UUID, version 4 (RFC 9562): what DeepL's glossary ids look like. */
static void new_id(char out[37])
{
    unsigned char b[16];
    if (getrandom(b, sizeof b, 0) != (ssize_t)sizeof b) {     /* never short for 16 bytes; a fallback anyway */
        static unsigned long counter;
        unsigned long x = (unsigned long)time(NULL) ^ (++counter * 0x9e3779b97f4a7c15UL);
        for (int i = 0; i < 16; i++, x = x * 6364136223846793005UL + 1442695040888963407UL)
            b[i] = (unsigned char)(x >> 56);
    }
    b[6] = (unsigned char)((b[6] & 0x0f) | 0x40);
    b[8] = (unsigned char)((b[8] & 0x3f) | 0x80);
    snprintf(out, 37, "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", b[0], b[1], b[2],
             b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13], b[14], b[15]);
}

static int find_locked(const srv_gstore *s, const char *id, int owner)
{
    for (int i = 0; i < s->n; i++)
        if (!strcmp(s->v[i]->id, id) && s->v[i]->owner == owner)
            return i;
    return -1;
}

/* Drops the store's own reference (under the lock); frees g when it was the last. */
static void unref_locked(srv_gstored *g)
{
    MT_ASSERT_OR(g->refs > 0, return);
    if (--g->refs == 0)
        srv_gstored_free(g);
}

int srv_gstore_add(srv_gstore *s, srv_gstored *g, char *err, size_t err_len)
{
    pthread_mutex_lock(&s->lock);
    if (s->n == s->max) {
        pthread_mutex_unlock(&s->lock);
        snprintf(err, err_len, "the server holds its limit of %d glossaries; delete one first", s->max);
        srv_gstored_free(g);
        return -1;
    }
    do
        new_id(g->id);
    while (find_locked(s, g->id, g->owner) >= 0);
    g->refs = 1;                            /* the store's */
    s->v[s->n++] = g;
    pthread_mutex_unlock(&s->lock);
    return 0;
}

int srv_gstore_replace(srv_gstore *s, srv_gstored *g)
{
    pthread_mutex_lock(&s->lock);
    int i = find_locked(s, g->id, g->owner);
    if (i >= 0) {
        g->refs = 1;
        unref_locked(s->v[i]);
        s->v[i] = g;
    }
    pthread_mutex_unlock(&s->lock);
    if (i < 0)
        srv_gstored_free(g);
    return i >= 0 ? 0 : -1;
}

srv_gstored *srv_gstore_get(srv_gstore *s, const char *id, int owner)
{
    pthread_mutex_lock(&s->lock);
    int i = find_locked(s, id, owner);
    srv_gstored *g = i >= 0 ? s->v[i] : NULL;
    if (g)
        g->refs++;
    pthread_mutex_unlock(&s->lock);
    return g;
}

int srv_gstore_list(srv_gstore *s, int owner, srv_gstored ***out)
{
    pthread_mutex_lock(&s->lock);
    int n = 0;
    *out = malloc(sizeof **out * (size_t)(s->n + 1));
    for (int i = 0; *out && i < s->n; i++)
        if (s->v[i]->owner == owner) {
            s->v[i]->refs++;
            (*out)[n++] = s->v[i];
        }
    pthread_mutex_unlock(&s->lock);
    return *out ? n : -1;
}

int srv_gstore_remove(srv_gstore *s, const char *id, int owner)
{
    pthread_mutex_lock(&s->lock);
    int i = find_locked(s, id, owner);
    if (i >= 0) {
        unref_locked(s->v[i]);
        memmove(&s->v[i], &s->v[i + 1], sizeof s->v[0] * (size_t)(s->n - i - 1));
        s->n--;
    }
    pthread_mutex_unlock(&s->lock);
    return i >= 0 ? 0 : -1;
}

void srv_gstore_release(srv_gstore *s, srv_gstored *g)
{
    if (!g)
        return;
    pthread_mutex_lock(&s->lock);
    unref_locked(g);
    pthread_mutex_unlock(&s->lock);
}
