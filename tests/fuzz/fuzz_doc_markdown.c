/* fuzz_doc_markdown: Markdown (server/document/doc_markdown.c on cmark-gfm).
 * Byte 0 picks the translation, the rest is the file:
 *   - srv_doc_sniff never fails; a parse refuses only with MT_ERR_INPUT or
 *     MT_ERR_TOO_LONG and a message; units are non-blank UTF-8;
 *   - a render with nothing set gives the input back byte for byte;
 *   - every unit translated (tests/fake_translate.h: bits 0-1 the words in
 *     place, reversed or shuffled with links dropped and stray ones; bit 2:
 *     Markdown's own characters added, "*_`[]<>&#|~\!" and a leading "- 1.",
 *     no links): the rendered file is UTF-8 and parses again;
 *   - words in place, nothing added: cmark renders it to the input's HTML
 *     (its tags in order, its text's characters, an item glued inside a word
 *     going to the word's edge) but for whitespace (a point placed by text/points.h may gain a space
 *     before a punctuation mark), code spans, images, raw HTML and emphasis
 *     tags (emphasis soup such as "*****a**" may not pair the same once its
 *     literal stars are escaped: such a unit is written without emphasis, its
 *     text exact); not for a file starting "---" (front matter, which cmark
 *     does not know);
 *   - characters added: as many units, each exactly the translation given
 *     (the escaping is right). */
#include "fuzz_common.h"

#include <cmark-gfm-core-extensions.h>
#include <cmark-gfm.h>

#include "document/document.h"
#include "../fake_translate.h"
#include "util/utf8.h"

static char *html_of(const char *s, size_t n)
{
    cmark_gfm_core_extensions_ensure_registered();
    cmark_parser *p = cmark_parser_new(CMARK_OPT_DEFAULT);
    cmark_parser_attach_syntax_extension(p, cmark_find_syntax_extension("table"));
    cmark_parser_attach_syntax_extension(p, cmark_find_syntax_extension("strikethrough"));
    cmark_parser_feed(p, s, n);
    cmark_node *doc = cmark_parser_finish(p);
    char *h = cmark_render_html(doc, CMARK_OPT_DEFAULT, cmark_parser_get_syntax_extensions(p));
    cmark_node_free(doc);
    cmark_parser_free(p);
    /* the opaque items out: code spans, images, raw HTML (inline.h places an item glued inside
     * a word at the word's edge, which is not where the identity had it) */
    static const char *const cut[][2] = { { "<code>", "</code>" }, { "<img ", "/>" },
                                          { "<!-- raw HTML omitted -->", "" } };
    /* and the emphasis tags: a unit whose delimiters would not pair again is written without them */
    static const char *const tags[] = { "<em>", "</em>", "<strong>", "</strong>", "<del>", "</del>" };
    for (size_t t = 0; t < sizeof tags / sizeof tags[0]; t++)
        for (char *p; (p = strstr(h, tags[t]));)
            memmove(p, p + strlen(tags[t]), strlen(p + strlen(tags[t])) + 1);
    for (size_t c = 0; c < sizeof cut / sizeof cut[0]; c++)
        for (char *p; (p = strstr(h, cut[c][0]));) {
            char *e = cut[c][1][0] ? strstr(p, cut[c][1]) : p + strlen(cut[c][0]);
            e = e ? e + (cut[c][1][0] ? strlen(cut[c][1]) : 0) : p + strlen(p);
            memmove(p, e, strlen(e) + 1);
        }
    size_t k = 0;                               /* no whitespace: the spaces around an item placed aside */
    for (size_t i = 0; h[i]; i++)
        if (!strchr(" \n\t\f\r", h[i]))
            h[k++] = h[i];
    h[k] = 0;
    return h;
}

static int by_char(const void *x, const void *y) { return *(const char *)x - *(const char *)y; }

/* h as its tags in order, then its text's characters sorted: an item glued inside a word
 * (an autolink in "a<x@y>b") is placed at the word's edge, which moves characters, not tags. */
static void tags_then_sorted_text(char *h)
{
    size_t n = strlen(h), t = 0, k = 0;
    char *tags = malloc(n + 1), *text = malloc(n + 1);
    FUZZ_CHECK(tags && text);
    for (size_t i = 0; i < n; i++) {
        if (h[i] == '<') {
            const char *e = strchr(h + i, '>');
            size_t m = e ? (size_t)(e - (h + i)) + 1 : n - i;
            memcpy(tags + t, h + i, m);
            t += m;
            i += m - 1;
        } else {
            text[k++] = h[i];
        }
    }
    qsort(text, k, 1, by_char);
    memcpy(h, tags, t);
    memcpy(h + t, text, k);
    h[t + k] = 0;
    free(tags);
    free(text);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1 || size > (1 << 15))
        return 0;
    int mode = data[0] & 3, marks = data[0] & 4;
    if (mode == 3)
        mode = 0;
    const char *file = (const char *)data + 1;
    size_t n = size - 1;
    srv_doc_kind k = srv_doc_sniff(file, n, "x");
    FUZZ_CHECK(k == SRV_DOC_UNKNOWN || (k >= 0 && k < SRV_DOC_N));
    srv_doc_limits lim = srv_doc_default_limits();
    lim.max_depth = 64;
    lim.max_unit_bytes = 4096;
    srv_doc *d = NULL, *d2 = NULL;
    mt_err err = { 0 };
    mt_status st = srv_doc_parse(SRV_DOC_MARKDOWN, file, n, &lim, &d, &err);
    if (st != MT_OK) {
        FUZZ_CHECK((st == MT_ERR_INPUT || st == MT_ERR_TOO_LONG) && !d && err.msg[0]);
        return 0;
    }
    char *out;
    size_t len;
    FUZZ_CHECK(srv_doc_render(d, &out, &len, &err) == MT_OK && len == n && !memcmp(out, file, n));
    free(out);
    int units = srv_doc_units(d);
    char **tr = calloc((size_t)units + 1, sizeof *tr);
    FUZZ_CHECK(tr);
    mt_sbuf scratch = { 0 };
    for (int i = 0; i < units; i++) {
        const char *u = srv_doc_unit(d, i);
        FUZZ_CHECK(u && *u && mt_utf8_valid(u, strlen(u)));
        const long *links;
        int nl = fake_translation(u, i, mode, size, &scratch, &links);
        size_t tl = scratch.n + 64;
        FUZZ_CHECK((tr[i] = malloc(tl)));
        if (marks)
            snprintf(tr[i], tl, "- 1. *_`[ ]<b>&amp; #|~\\! %s #", scratch.p);
        else
            memcpy(tr[i], scratch.p, scratch.n + 1);
        FUZZ_CHECK(srv_doc_set(d, i, tr[i], strlen(tr[i]), marks ? NULL : links, marks ? 0 : nl, &err) == MT_OK);
    }
    free(scratch.p);
    FUZZ_CHECK(srv_doc_render(d, &out, &len, &err) == MT_OK && mt_utf8_valid(out, len));
    lim.max_unit_bytes = 8192;
    st = srv_doc_parse(SRV_DOC_MARKDOWN, out, len, &lim, &d2, &err);
    if (st != MT_OK)
        fprintf(stderr, "the rendered file does not parse: %s\n", err.msg);
    FUZZ_CHECK(st == MT_OK);
    if (!marks && mode == 0 && !(n >= 3 && !memcmp(file, "---", 3))) {    /* front matter: not cmark's */
        char *a = html_of(file, n), *b = html_of(out, len);
        tags_then_sorted_text(a);
        tags_then_sorted_text(b);
        if (strcmp(a, b))
            fprintf(stderr, "HTML differs:\n%s\n--\n%s\n-- output --\n%s\n", a, b, out);
        FUZZ_CHECK(!strcmp(a, b));
        free(a);
        free(b);
    } else if (marks) {
        if (srv_doc_units(d2) != units)
            fprintf(stderr, "%d units, %d after:\n%s\n", units, srv_doc_units(d2), out);
        FUZZ_CHECK(srv_doc_units(d2) == units);
        for (int i = 0; i < units; i++) {
            if (strcmp(srv_doc_unit(d2, i), tr[i]))
                fprintf(stderr, "unit %d: '%s' read back as '%s'\n", i, tr[i], srv_doc_unit(d2, i));
            FUZZ_CHECK(!strcmp(srv_doc_unit(d2, i), tr[i]));
        }
    }
    for (int i = 0; i < units; i++)
        free(tr[i]);
    free(tr);
    free(out);
    srv_doc_free(d2);
    srv_doc_free(d);
    return 0;
}
