/* stream: a /translate reply as server-sent events (stream.h). */
#include "stream.h"

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/metrics.h"
#include "util/check.h"

enum { WAIT_START, STARTING, RUNNING, SUSPENDED };

typedef struct {
    /* producer: ids[0..n) published under mu, ids past n written before */
    int32_t *ids;               /* [max_ids] */
    int      n, final;
    /* consumer (the HTTP thread) */
    int      text;              /* which text; its span there */
    size_t   start, len;
    int      read;              /* ids turned into events */
    int      complete;          /* its last event is out */
    int      whole;             /* its text is not its ids decoded (placeholders put back): sent once done */
    char    *sent;              /* its text as sent so far (the prefix rule is checked on it) */
    size_t   sent_len;
} sentence;

struct srv_stream {
    pthread_mutex_t   mu;
    int               refs, state, done, closed, progressed;
    unsigned          gen;      /* bumped by every publish: read() sleeps only on a seen gen */
    srv_request      *req;      /* NULL once the connection is closed */
    srv_stream_params p;
    /* layout (attach) */
    const srv_tr     *tr;
    int               n_sent, n_texts, max_ids;
    sentence         *s;
    int32_t          *idbuf;    /* [n_sent][max_ids] */
    int              *first;    /* [n_texts + 1] each text's first sentence */
    int              *cursor;   /* [n_texts] consumer: the sentence being sent */
    int              *snap_n, *snap_final;   /* [n_sent] consumer's copy of n, final */
    int               snap_done;              /* consumer's copy of done */
    /* consumer output */
    char             *out;
    size_t            out_len, out_pos, out_cap;
    int               ended, begun, counted;
    const char       *route;
    int               shape;    /* the request's error shape (errors.h) */
    double            t_start;
};

/* ---- references --------------------------------------------------------------------- */

static void stream_free(srv_stream *st)
{
    st->p.owner_free(st->p.owner);
    for (int i = 0; st->s && i < st->n_sent; i++)
        free(st->s[i].sent);
    free(st->s);
    free(st->idbuf);
    free(st->first);
    free(st->cursor);
    free(st->snap_n);
    free(st->snap_final);
    free(st->out);
    pthread_mutex_destroy(&st->mu);
    free(st);
}

static void unref(void *ctx)
{
    srv_stream *st = ctx;
    pthread_mutex_lock(&st->mu);
    int left = --st->refs;
    pthread_mutex_unlock(&st->mu);
    if (left == 0)
        stream_free(st);
}

/* Under mu: the connection may go on (the first time: the request's resume;
 * then the reader's suspension ends). */
static void wake(srv_stream *st)
{
    if (st->closed)
        return;
    if (st->state == WAIT_START) {
        st->state = STARTING;
        st->req->resume(st->req);
    } else if (st->state == SUSPENDED) {
        st->state = RUNNING;
        st->req->resume(st->req);
    }
}

/* ---- the sink: decoder side ---------------------------------------------------------- */

static int on_attach(void *ctx, const srv_tr *t, int max_ids, mt_err *err)
{
    srv_stream *st = ctx;
    int n = srv_tr_sentences(t), nt = srv_tr_texts(t);
    sentence *s = calloc((size_t)n + 1, sizeof *s);
    int32_t *ids = malloc(sizeof *ids * ((size_t)n * (size_t)max_ids + 1));
    int *first = calloc((size_t)nt + 1, sizeof *first), *cursor = calloc((size_t)nt + 1, sizeof *cursor);
    int *snap_n = calloc((size_t)n + 1, sizeof *snap_n), *snap_final = calloc((size_t)n + 1, sizeof *snap_final);
    if (!s || !ids || !first || !cursor || !snap_n || !snap_final) {
        free(s), free(ids), free(first), free(cursor), free(snap_n), free(snap_final);
        return mt_err_set(err, MT_ERR_NOMEM, "out of memory for the stream"), -1;
    }
    for (int i = 0; i < n; i++) {
        s[i].ids = ids + (long)i * max_ids;
        srv_tr_span(t, i, &s[i].text, &s[i].start, &s[i].len);
        s[i].whole = srv_tr_whole(t, i);
        if (srv_tr_cached(t, i)) {              /* answered by the cache: whole, at once */
            const mt_hyp *h = srv_tr_best(t, i);
            s[i].n = h->n_ids < max_ids ? h->n_ids : max_ids;
            memcpy(s[i].ids, h->ids, sizeof *ids * (size_t)s[i].n);
            s[i].final = 1;
        }
    }
    for (int k = 0, i = 0; k <= nt; k++) {        /* a text's sentences are consecutive */
        while (i < n && s[i].text < k)
            i++;
        first[k] = i;
    }
    for (int k = 0; k < nt; k++)
        cursor[k] = first[k];
    int cached = 0;
    for (int i = 0; i < n; i++)
        cached |= s[i].final || s[i].whole;
    pthread_mutex_lock(&st->mu);
    st->progressed |= cached;           /* a cached sentence is there to send */
    st->tr = t;
    st->n_sent = n, st->n_texts = nt, st->max_ids = max_ids;
    st->s = s, st->idbuf = ids, st->first = first, st->cursor = cursor;
    st->snap_n = snap_n, st->snap_final = snap_final;
    pthread_mutex_unlock(&st->mu);
    return 0;
}

/* The decoder's thread: copy the new ids, publish, wake.  Never waits on the
 * client: the buffer holds a whole sentence. */
static void on_progress(void *ctx, int item, const int32_t *ids, int n, int final)
{
    srv_stream *st = ctx;
    if (!final && !st->p.per_token)
        return;
    sentence *s = &st->s[srv_tr_item_sentence(st->tr, item)];
    if (n > st->max_ids)
        n = st->max_ids;
    int have = s->n;                    /* only this thread writes n */
    if (n > have)                       /* past the published count: the reader does not look there */
        memcpy(s->ids + have, ids + have, sizeof *ids * (size_t)(n - have));
    pthread_mutex_lock(&st->mu);
    if (n > have)
        s->n = n;
    s->final |= final;
    st->progressed = 1;
    st->gen++;
    wake(st);
    pthread_mutex_unlock(&st->mu);
}

static int on_gone(void *ctx)
{
    srv_stream *st = ctx;
    pthread_mutex_lock(&st->mu);
    /* the socket is polled under mu: the connection cannot be freed meanwhile */
    int gone = st->closed || (st->req->client_gone && st->req->client_gone(st->req->conn));
    pthread_mutex_unlock(&st->mu);
    return gone;
}

static void on_done(void *ctx)
{
    srv_stream *st = ctx;
    pthread_mutex_lock(&st->mu);
    st->done = 1;
    st->gen++;
    wake(st);
    pthread_mutex_unlock(&st->mu);
    unref(st);
}

/* ---- events: the HTTP thread ----------------------------------------------------------- */

static int out_add(srv_stream *st, const char *a, size_t n)
{
    if (n > SIZE_MAX - st->out_len || mt_grow(&st->out, &st->out_cap, st->out_len + n, 1, 4096))
        return -1;
    memcpy(st->out + st->out_len, a, n);
    st->out_len += n;
    return 0;
}

/* data: {"index": text, "delta": a + b + c} */
static void emit(srv_stream *st, int text, const char *a, size_t na, const char *b, size_t nb, const char *c,
                 size_t nc)
{
    char *d = malloc(na + nb + nc + 1);
    if (!d)
        return;
    memcpy(d, a, na);
    memcpy(d + na, b, nb);
    memcpy(d + na + nb, c, nc);
    d[na + nb + nc] = '\0';
    if (st->p.delta_event) {
        char *ev = st->p.delta_event(st->p.owner, text, d, na + nb + nc);
        if (ev && out_add(st, ev, strlen(ev)))
            fprintf(stderr, "mtserve: stream: out of memory\n");
        free(ev);
        free(d);
        return;
    }
    json_t *j = json_pack("{s:i,s:s%}", "index", text, "delta", d, na + nb + nc);
    char *s = j ? json_dumps(j, JSON_COMPACT) : NULL;
    if (s && (out_add(st, "data: ", 6) || out_add(st, s, strlen(s)) || out_add(st, "\n\n", 2)))
        fprintf(stderr, "mtserve: stream: out of memory\n");
    free(s);
    json_decref(j);
    free(d);
}

/* The original bytes before sentence c (from the previous span's end, or the
 * text's start) and, for its text's last sentence, after it. */
static void gaps(const srv_stream *st, int c, const char **before, size_t *nb, const char **after, size_t *na)
{
    const sentence *s = &st->s[c];
    const char *t = srv_tr_text(st->tr, s->text);
    size_t from = c > st->first[s->text] ? st->s[c - 1].start + st->s[c - 1].len : 0;
    *before = t + from;
    *nb = s->start - from;
    *after = "";
    *na = 0;
    if (c == st->first[s->text + 1] - 1) {
        *after = t + s->start + s->len;
        *na = strlen(*after);
    }
}

/* The length of text[0..len) without its trailing U+FFFD run (a character
 * whose bytes have not all come yet). */
static size_t complete_part(const char *text, size_t len)
{
    while (len >= 3 && !memcmp(text + len - 3, "\xEF\xBF\xBD", 3))
        len -= 3;
    return len;
}

/* The text of sentence c's first k ids, the part not sent yet into *delta
 * (last: the sentence's last id; per_token 2 sends no unfinished end before). */
static int grow(srv_stream *st, int c, int k, int last, const char **delta, size_t *n)
{
    sentence *s = &st->s[c];
    char *text = NULL;
    mt_err err = { 0 };
    *delta = "";
    *n = 0;
    if (mt_tokenizer_decode(st->p.tok, s->ids, k, &text, &err) != MT_OK)
        return -1;
    size_t len = strlen(text);
    int grows = st->p.per_token == 2 && !last;
    if (grows)
        len = complete_part(text, len);
    if (len < s->sent_len || memcmp(text, s->sent ? s->sent : "", s->sent_len) != 0) {
        free(text);
        if (grows)                      /* not a continuation yet: wait for one */
            return 0;
        /* decoding rewrote what was sent: cannot happen when it appends (stream.h) */
        fprintf(stderr, "mtserve: stream: the text of sentence %d is not a continuation of what was sent\n", c);
        return -1;
    }
    text[len] = '\0';
    free(s->sent);
    s->sent = text;
    *delta = text + s->sent_len;
    *n = len - s->sent_len;
    s->sent_len = len;
    return 0;
}

/* Events of sentence c from the ids published (snapshot); 1 once it is complete. */
static int sentence_events(srv_stream *st, int c)
{
    sentence *s = &st->s[c];
    int n = st->snap_n[c], final = st->snap_final[c];
    const char *before, *after, *delta;
    size_t nb, na, nd;
    gaps(st, c, &before, &nb, &after, &na);
    if (s->whole) {                                     /* placeholders: the sentence at the end, whole */
        if (!st->snap_done)
            return 0;
        char *text = srv_tr_sentence_text(st->tr, c);
        if (text)
            emit(st, s->text, before, nb, text, strlen(text), after, na);
        else
            fprintf(stderr, "mtserve: stream: out of memory\n");
        free(text);
        return s->complete = 1;
    }
    if (!st->p.per_token) {                             /* beam: the sentence at once */
        if (!final)
            return 0;
        grow(st, c, n, 1, &delta, &nd);
        emit(st, s->text, before, nb, delta, nd, after, na);
        s->read = n;
        return s->complete = 1;
    }
    while (s->read < n && !s->complete) {               /* one event per token */
        int k = ++s->read;
        int32_t id = s->ids[k - 1];
        int last = id == st->p.eos_id || (final && k == n);
        const char *b = s->read == 1 ? before : "", *a = last ? after : "";
        size_t bl = s->read == 1 ? nb : 0, al = last ? na : 0;
        delta = "", nd = 0;
        if (last || !mt_tokenizer_is_byte_piece(st->p.tok, id))   /* a byte piece waits for its character */
            grow(st, c, k, last, &delta, &nd);
        emit(st, s->text, b, bl, delta, nd, a, al);
        s->complete = last;
    }
    return s->complete;
}

/* Every event the published ids allow, texts side by side, sentences in order. */
static void produce(srv_stream *st)
{
    for (int t = 0; t < st->n_texts; t++)
        while (st->cursor[t] < st->first[t + 1] && sentence_events(st, st->cursor[t]))
            st->cursor[t]++;
}

/* The last event: the reply without stream, or the error. */
static void final_event(srv_stream *st)
{
    srv_response r = { 0 };
    r.route = st->route;
    st->p.reply(st->p.owner, st->req, &r);
    if (r.error == SRV_OK && r.status == 0)
        srv_fail(&r, SRV_E_INTERNAL, "the stream's reply is missing");
    if (st->p.end_events) {                     /* another dialect: its error shape, its events */
        r.shape = st->shape;
        srv_error_render(&r, (srv_shape)r.shape);
        char *end = st->p.end_events(st->p.owner, &r);
        if (!end || out_add(st, end, strlen(end)))
            fprintf(stderr, "mtserve: stream: out of memory\n");
        free(end);
    } else {
        srv_error_render(&r, SRV_SHAPE_OURS);
        srv_reply_serialize(&r);
        const char *kind = r.error == SRV_OK ? "event: done\ndata: " : "event: error\ndata: ";
        if (out_add(st, kind, strlen(kind)) || out_add(st, r.text ? r.text : "{}", r.text ? r.text_len : 2) ||
            out_add(st, "\n\n", 2))
            fprintf(stderr, "mtserve: stream: out of memory\n");
    }
    free(r.text);
    json_decref(r.json);
    srv_metrics_request(st->route, r.status, srv_now() - st->t_start);
    pthread_mutex_lock(&st->mu);
    st->counted = 1;
    pthread_mutex_unlock(&st->mu);
    st->ended = 1;
}

/* srv_body_stream.read, on the connection's HTTP thread. */
static long stream_read(void *ctx, char *buf, size_t max)
{
    srv_stream *st = ctx;
    for (;;) {
        if (st->out_pos < st->out_len) {
            size_t n = st->out_len - st->out_pos < max ? st->out_len - st->out_pos : max;
            memcpy(buf, st->out + st->out_pos, n);
            st->out_pos += n;
            if (st->out_pos == st->out_len)
                st->out_pos = st->out_len = 0;
            return (long)n;
        }
        if (st->ended)
            return -1;
        pthread_mutex_lock(&st->mu);
        unsigned gen = st->gen;
        int done = st->done;
        st->snap_done = done;
        for (int i = 0; i < st->n_sent; i++)
            st->snap_n[i] = st->s[i].n, st->snap_final[i] = st->s[i].final;
        pthread_mutex_unlock(&st->mu);
        produce(st);
        if (st->out_len)
            continue;
        if (done) {
            final_event(st);
            continue;
        }
        pthread_mutex_lock(&st->mu);
        if (st->gen != gen) {                   /* published meanwhile: look again */
            pthread_mutex_unlock(&st->mu);
            continue;
        }
        st->state = SUSPENDED;                  /* the producer's next wake resumes */
        st->req->suspend(st->req);
        pthread_mutex_unlock(&st->mu);
        return 0;
    }
}

/* ---- API ------------------------------------------------------------------------------ */

srv_stream *srv_stream_new(srv_request *req, const srv_stream_params *p)
{
    srv_stream *st = calloc(1, sizeof *st);
    if (!st)
        return NULL;
    pthread_mutex_init(&st->mu, NULL);
    st->refs = 2;                               /* the decoder's and the connection's */
    st->state = WAIT_START;
    st->req = req;
    st->p = *p;
    st->t_start = req->t_start;
    return st;
}

srv_tr_sink srv_stream_sink(srv_stream *st)
{
    return (srv_tr_sink){ .attach = on_attach, .progress = { .fn = on_progress, .ctx = st }, .gone = on_gone,
                          .done = on_done, .ctx = st };
}

void srv_stream_abandon(srv_stream *st)
{
    stream_free(st);
}

int srv_stream_begin(srv_stream *st, srv_request *req, srv_response *resp)
{
    pthread_mutex_lock(&st->mu);
    int stream = st->progressed && st->s;
    if (stream) {
        st->state = RUNNING;
        st->begun = 1;
        st->refs++;                             /* the response's */
        st->route = resp->route;
        st->shape = resp->shape;
    }
    pthread_mutex_unlock(&st->mu);
    if (!stream) {              /* no token before the end: the job failed (or had nothing to send) */
        st->p.reply(st->p.owner, req, resp);
        return -1;
    }
    resp->status = 200;
    resp->content_type = "text/event-stream";
    resp->stream = (srv_body_stream){ .read = stream_read, .release = unref, .ctx = st };
    return 0;
}

void srv_stream_conn_release(void *ctx)
{
    srv_stream *st = ctx;
    pthread_mutex_lock(&st->mu);
    st->closed = 1;
    st->req = NULL;
    if (st->begun && !st->counted) {            /* the client left mid-stream */
        st->counted = 1;
        srv_metrics_request(st->route, 499, srv_now() - st->t_start);
    }
    pthread_mutex_unlock(&st->mu);
    unref(st);
}
