/* glossary_store: API-made glossaries by id, reference-counted (glossary_store.h). */
#include "glossary_store.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include <jansson.h>

#include "glossary_share.h"
#include "util/check.h"

struct srv_gstore {
    pthread_mutex_t lock;
    srv_gstored   **v;          /* in creation order (with r: in the order they were used first) */
    int             n, max;
    srv_redis      *r;          /* --redis: the glossaries are there, v the copies used here */
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

void srv_gstore_share(srv_gstore *s, srv_redis *r) { s->r = r; }

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

static int add_local(srv_gstore *s, srv_gstored *g, char *err, size_t err_len)
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

static int replace_local(srv_gstore *s, srv_gstored *g)
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

static srv_gstored *get_local(srv_gstore *s, const char *id, int owner)
{
    pthread_mutex_lock(&s->lock);
    int i = find_locked(s, id, owner);
    srv_gstored *g = i >= 0 ? s->v[i] : NULL;
    if (g)
        g->refs++;
    pthread_mutex_unlock(&s->lock);
    return g;
}

static int list_local(srv_gstore *s, int owner, srv_gstored ***out)
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

static int remove_local(srv_gstore *s, const char *id, int owner)
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

/* ---- a glossary as JSON, for Redis (glossary_share.h) --------------------------------------------------------------------------- */

static json_t *dict_json(const srv_gdict *d)
{
    json_t *entries = json_array();
    for (int i = 0; entries && i < srv_glossary_size(d->terms); i++)
        if (json_array_append_new(entries, json_pack("[s,s]", srv_glossary_source(d->terms, i),
                                                     srv_glossary_target(d->terms, i)))) {
            json_decref(entries);
            return NULL;
        }
    return entries ? json_pack("{s:s,s:s,s:o}", "source", d->source, "target", d->target, "entries", entries) : NULL;
}

/* g as JSON (malloc'd), or NULL. */
static char *encode(const srv_gstored *g)
{
    json_t *dicts = json_array();
    for (int i = 0; dicts && i < g->n_dicts; i++)
        if (json_array_append_new(dicts, dict_json(&g->dicts[i]))) {
            json_decref(dicts);
            dicts = NULL;
        }
    json_t *o = dicts ? json_pack("{s:s,s:I,s:o}", "name", g->name, "created", (json_int_t)g->created, "dicts",
                                  dicts) : NULL;
    char *text = o ? json_dumps(o, JSON_COMPACT) : NULL;
    json_decref(o);
    return text;
}

/* One dictionary of the JSON into g: 0, or -1. */
static int decode_dict(srv_gstored *g, json_t *d)
{
    const char *src, *tgt;
    json_t *entries;
    if (json_unpack(d, "{s:s,s:s,s:o}", "source", &src, "target", &tgt, "entries", &entries) ||
        !json_is_array(entries) || strlen(src) >= sizeof g->dicts[0].source ||
        strlen(tgt) >= sizeof g->dicts[0].target)
        return -1;
    /* checked when they were taken: room for every entry, any term's length */
    srv_glossary_limits lim = { .max_entries = json_array_size(entries) ? (int)json_array_size(entries) : 1,
                                .max_term_bytes = 1 << 20, .unique = 1 };
    srv_glossary *terms = srv_glossary_new(&lim);
    size_t i;
    json_t *e;
    mt_err err = { 0 };
    json_array_foreach(entries, i, e) {
        const char *s, *t;
        if (!terms || json_unpack(e, "[s,s]", &s, &t) ||
            srv_glossary_add(terms, s, strlen(s), t, strlen(t), &err) != MT_OK) {
            srv_glossary_free(terms);
            return -1;
        }
    }
    return terms ? srv_gstored_add_dict(g, src, tgt, terms) : -1;
}

/* The glossary of json (owner -1, no id, rev 0), or NULL: not one of ours,
 * or out of memory.  The terms were checked against the limits of the replica
 * that took them: not again. */
static srv_gstored *decode(const char *json, size_t len)
{
    json_t *o = json_loadb(json, len, 0, NULL), *dicts, *d;
    const char *name;
    json_int_t created;
    srv_gstored *g = NULL;
    if (!o || json_unpack(o, "{s:s,s:I,s:o}", "name", &name, "created", &created, "dicts", &dicts) ||
        !json_is_array(dicts) || json_array_size(dicts) > SRV_GSTORE_MAX_DICTS || !(g = srv_gstored_new(name, -1)))
        goto fail;
    g->created = (time_t)created;
    size_t i;
    json_array_foreach(dicts, i, d) {
        if (decode_dict(g, d))
            goto fail;
    }
    json_decref(o);
    return g;
fail:
    srv_gstored_free(g);
    json_decref(o);
    return NULL;
}

/* ---- shared through Redis (glossary_share.h) ---------------------------------------- */

/* Under the lock: g (refs 1, the store's) in place of its id's copy, or
 * added, the copy used least recently dropped when the store is full. */
static void put_locked(srv_gstore *s, srv_gstored *g)
{
    g->refs = 1;
    int i = find_locked(s, g->id, g->owner);
    if (i >= 0) {
        unref_locked(s->v[i]);
        s->v[i] = g;
        return;
    }
    if (s->n == s->max) {
        unref_locked(s->v[0]);
        memmove(&s->v[0], &s->v[1], sizeof s->v[0] * (size_t)(s->n - 1));
        s->n--;
    }
    s->v[s->n++] = g;
}

static int add_shared(srv_gstore *s, srv_gstored *g, char *err, size_t err_len)
{
    long rev = 0;
    char why[200] = "out of memory", *json = encode(g);
    srv_gshare_rc rc = SRV_GSHARE_DOWN;
    if (json)
        do
            new_id(g->id);
        while ((rc = srv_gshare_add(s->r, g->id, g->owner, json, s->max, &rev, why, sizeof why)) ==
               SRV_GSHARE_TAKEN);
    free(json);
    if (rc != SRV_GSHARE_OK) {
        if (rc == SRV_GSHARE_FULL)
            snprintf(err, err_len, "the server holds its limit of %d glossaries; delete one first", s->max);
        else
            snprintf(err, err_len, "glossaries are shared through Redis, which does not answer (%s); retry later",
                     why);
        srv_gstored_free(g);
        return rc == SRV_GSHARE_FULL ? -1 : -2;
    }
    g->rev = rev;
    pthread_mutex_lock(&s->lock);
    put_locked(s, g);
    pthread_mutex_unlock(&s->lock);
    return 0;
}

static int replace_shared(srv_gstore *s, srv_gstored *g)
{
    long rev = 0;
    char why[200], *json = encode(g);
    srv_gshare_rc rc = json ? srv_gshare_replace(s->r, g->id, g->owner, json, &rev, why, sizeof why)
                            : SRV_GSHARE_DOWN;
    free(json);
    if (rc == SRV_GSHARE_OK) {
        g->rev = rev;
        pthread_mutex_lock(&s->lock);
        put_locked(s, g);
        pthread_mutex_unlock(&s->lock);
        return 0;
    }
    if (rc == SRV_GSHARE_NONE)
        remove_local(s, g->id, g->owner);
    srv_gstored_free(g);
    return rc == SRV_GSHARE_NONE ? -1 : -2;
}

/* srv_gshare_get, its JSON read: OK with *out (refs 0), or another answer. */
static srv_gshare_rc fetch(srv_gstore *s, const char *id, int owner, long known, srv_gstored **out, char *why,
                           size_t why_len)
{
    char *json;
    size_t len;
    long rev;
    *out = NULL;
    srv_gshare_rc rc = srv_gshare_get(s->r, id, owner, known, &json, &len, &rev, why, why_len);
    if (rc != SRV_GSHARE_OK)
        return rc;
    *out = decode(json, len);
    free(json);
    if (!*out)
        return SRV_GSHARE_DOWN;         /* not ours, or no memory: as if Redis had not answered */
    snprintf((*out)->id, sizeof (*out)->id, "%s", id);
    (*out)->owner = owner;
    (*out)->rev = rev;
    return SRV_GSHARE_OK;
}

/* The copy held here when it is Redis's current one (its revision asked
 * there), else Redis's, which replaces it; Redis down: the copy held here. */
static srv_gstored *get_shared(srv_gstore *s, const char *id, int owner)
{
    for (int tries = 0; tries < 2; tries++) {
        pthread_mutex_lock(&s->lock);
        int i = find_locked(s, id, owner);
        long known = i >= 0 && tries == 0 ? s->v[i]->rev : 0;
        pthread_mutex_unlock(&s->lock);
        srv_gstored *fresh = NULL, *g = NULL;
        char why[200];
        switch (fetch(s, id, owner, known, &fresh, why, sizeof why)) {
        case SRV_GSHARE_OK:
            pthread_mutex_lock(&s->lock);
            put_locked(s, fresh);
            fresh->refs++;
            pthread_mutex_unlock(&s->lock);
            return fresh;
        case SRV_GSHARE_SAME:
            pthread_mutex_lock(&s->lock);
            i = find_locked(s, id, owner);
            if (i >= 0 && s->v[i]->rev == known) {
                g = s->v[i];
                g->refs++;
            }
            pthread_mutex_unlock(&s->lock);
            if (g)
                return g;
            continue;           /* dropped or replaced meanwhile: fetch it whole */
        case SRV_GSHARE_NONE:
            remove_local(s, id, owner);      /* deleted through another replica */
            return NULL;
        default:
            return get_local(s, id, owner);
        }
    }
    return NULL;
}

static int list_shared(srv_gstore *s, int owner, srv_gstored ***out)
{
    char (*ids)[37];
    int n = srv_gshare_list(s->r, owner, &ids);
    if (n < 0)
        return list_local(s, owner, out);
    int k = 0;
    *out = malloc(sizeof **out * (size_t)(n + 1));
    for (int i = 0; *out && i < n; i++)
        if (((*out)[k] = get_shared(s, ids[i], owner)))
            k++;
    free(ids);
    return *out ? k : -1;
}

static int remove_shared(srv_gstore *s, const char *id, int owner)
{
    char why[200];
    srv_gshare_rc rc = srv_gshare_remove(s->r, id, owner, why, sizeof why);
    if (rc == SRV_GSHARE_DOWN)
        return -2;
    remove_local(s, id, owner);
    return rc == SRV_GSHARE_OK ? 0 : -1;
}

/* ---- the calls: local, or through Redis ---------------------------------------------- */

int srv_gstore_add(srv_gstore *s, srv_gstored *g, char *err, size_t err_len)
{
    return s->r ? add_shared(s, g, err, err_len) : add_local(s, g, err, err_len);
}

int srv_gstore_replace(srv_gstore *s, srv_gstored *g)
{
    return s->r ? replace_shared(s, g) : replace_local(s, g);
}

srv_gstored *srv_gstore_get(srv_gstore *s, const char *id, int owner)
{
    return s->r ? get_shared(s, id, owner) : get_local(s, id, owner);
}

int srv_gstore_list(srv_gstore *s, int owner, srv_gstored ***out)
{
    return s->r ? list_shared(s, owner, out) : list_local(s, owner, out);
}

int srv_gstore_remove(srv_gstore *s, const char *id, int owner)
{
    return s->r ? remove_shared(s, id, owner) : remove_local(s, id, owner);
}
