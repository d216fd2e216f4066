/* fuzz_copy_gate: server/translate/copy_gate.c on arbitrary bytes.
 *
 * Byte 0 odd: the rest is a gate file (srv_copy_gate_parse).  A refusal is
 * MT_ERR_FORMAT with a message naming a line or the file; a gate that loads
 * has no more words than lines, and each of its words, given as a text, arms
 * it (the file's words and the text's rule agree).
 * Byte 0 even: the rest is a text.  Its words (srv_copy_gate_words) are
 * non-empty, at most SRV_COPY_GATE_MAX_WORD bytes, valid UTF-8 and already
 * folded; the count is the callback's; a gate file made of them (sorted, no
 * repeat) parses, and it arms the text exactly when the text has a word; the
 * empty gate arms nothing. */
#include "fuzz_common.h"

#include "translate/copy_gate.h"
#include "translate/glossary.h"
#include "util/utf8.h"

typedef struct {
    char  *w[4096];
    size_t n[4096];
    int    k, calls;
} words;

static void take(void *ctx, const char *w, size_t n)
{
    words *ws = ctx;
    ws->calls++;
    FUZZ_CHECK(n > 0 && n <= SRV_COPY_GATE_MAX_WORD && mt_utf8_valid(w, n));
    for (size_t i = 0; i < n;) {
        uint32_t c;
        i += mt_utf8_next(w + i, n - i, &c);
        FUZZ_CHECK(srv_glossary_fold(c) == c);
    }
    if (ws->k < 4096) {
        ws->w[ws->k] = malloc(n);
        FUZZ_CHECK(ws->w[ws->k]);
        memcpy(ws->w[ws->k], w, n);
        ws->n[ws->k++] = n;
    }
}


/* qsort_r's order of word indices: by bytes, as the gate file wants. */
static int by_bytes(const void *a, const void *b, void *ctx)
{
    const words *ws = ctx;
    int i = *(const int *)a, j = *(const int *)b;
    size_t m = ws->n[i] < ws->n[j] ? ws->n[i] : ws->n[j];
    int r = memcmp(ws->w[i], ws->w[j], m);
    return r ? r : (ws->n[i] > ws->n[j]) - (ws->n[i] < ws->n[j]);
}

static void text_case(const char *text, size_t size)
{
    static words ws;
    ws.k = ws.calls = 0;
    int n = srv_copy_gate_words(text, size, take, &ws);
    FUZZ_CHECK(n == ws.calls);
    int order[4096];
    for (int i = 0; i < ws.k; i++)
        order[i] = i;
    qsort_r(order, (size_t)ws.k, sizeof order[0], by_bytes, &ws);
    char *file = malloc((size_t)ws.k * (SRV_COPY_GATE_MAX_WORD + 1) + 1);
    FUZZ_CHECK(file);
    size_t len = 0;
    for (int i = 0; i < ws.k; i++) {
        if (i && by_bytes(&order[i - 1], &order[i], &ws) == 0)
            continue;
        memcpy(file + len, ws.w[order[i]], ws.n[order[i]]);
        len += ws.n[order[i]];
        file[len++] = '\n';
    }
    srv_copy_gate *g = NULL, *empty = NULL;
    mt_err err = { 0 };
    FUZZ_CHECK(srv_copy_gate_parse(file, len, &g, &err) == MT_OK);
    FUZZ_CHECK(srv_copy_gate_arms(g, text, size) == (n > 0));
    FUZZ_CHECK(srv_copy_gate_parse("", 0, &empty, &err) == MT_OK);
    FUZZ_CHECK(!srv_copy_gate_arms(empty, text, size));
    srv_copy_gate_free(g);
    srv_copy_gate_free(empty);
    free(file);
    for (int i = 0; i < ws.k; i++)
        free(ws.w[i]);
}

static void file_case(const char *buf, size_t size)
{
    srv_copy_gate *g = NULL;
    mt_err err = { 0 };
    mt_status st = srv_copy_gate_parse(buf, size, &g, &err);
    if (st != MT_OK) {
        FUZZ_CHECK(st == MT_ERR_FORMAT && g == NULL && err.msg[0]);
        return;
    }
    long lines = 0;
    for (size_t i = 0; i < size; i++)
        lines += buf[i] == '\n';
    FUZZ_CHECK(srv_copy_gate_size(g) <= lines);
    /* every word line (after the comments) arms the gate alone */
    int words_started = 0;
    for (size_t at = 0; at < size;) {
        const char *s = buf + at, *nl = memchr(s, '\n', size - at);
        FUZZ_CHECK(nl);
        size_t n = (size_t)(nl - s);
        at += n + 1;
        if (!words_started && n && s[0] == '#')
            continue;
        words_started = 1;
        FUZZ_CHECK(srv_copy_gate_arms(g, s, n));
    }
    srv_copy_gate_free(g);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size == 0)
        return 0;
    if (data[0] & 1)
        file_case((const char *)data + 1, size - 1);
    else
        text_case((const char *)data + 1, size - 1);
    return 0;
}
