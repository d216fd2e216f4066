/* fuzz_html: server/markup/html.c on arbitrary bytes, checked against the
 * contract of server/markup/html.h:
 *   - parsing never fails but for the nesting limit (MT_ERR_TOO_LONG) and a NUL byte (MT_ERR_INPUT);
 *   - every unit is non-blank, NUL-terminated UTF-8 of its own;
 *   - under each fake translation (tests/html_check.h: the words in place,
 *     reversed, or shuffled with links dropped and doubled) the output parses
 *     to exactly the input's element tree (gumbo re-parses both);
 *   - with the words in place, the output's text content has the input's
 *     characters (spaces aside), but for a repaired page that ends inside a
 *     script in the tokenizer's escaped states with nodes after it in the
 *     tree (html_eof_escaped_script: no serializer can write such a tree
 *     back; html.c writes nothing after a script the end closed when it can).
 * The first byte picks the translation (mod 3) and, (byte / 3) odd, an
 * ignore list (DeepL's ignore_tags: b, div, x-keep); the rest is the page. */
#include "fuzz_common.h"

#include "../html_check.h"
#include "util/utf8.h"

static void squeeze(char *t)
{
    char *o = t;
    for (; *t; t++)
        if (*t != ' ')
            *o++ = *t;
    *o = 0;
}

static int cmp_byte(const void *a, const void *b) { return *(const char *)a - *(const char *)b; }

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    int mode = data[0] % 3;
    static const char *const ignore[] = { "b", "div", "x-keep" };
    int n_ignore = (data[0] / 3) % 2 ? 3 : 0;
    const char *page = (const char *)data + 1;
    size_t n = size - 1;
    srv_html *h = NULL;
    mt_err err = { 0 };
    mt_status st = srv_html_parse_ignoring(page, n, 64, ignore, n_ignore, &h, &err);
    if (st != MT_OK) {
        FUZZ_CHECK((st == MT_ERR_TOO_LONG || (st == MT_ERR_INPUT && memchr(page, 0, n))) && h == NULL);
        return 0;
    }
    mt_sbuf sb = { 0 };
    for (int i = 0; i < srv_html_units(h); i++) {
        const char *u = srv_html_unit(h, i);
        FUZZ_CHECK(u && *u && mt_utf8_valid(u, strlen(u)));
        FUZZ_CHECK(html_fake_translate(h, i, mode, size, &sb) == 0);
    }
    free(sb.p);
    char *out = NULL;
    size_t len = 0;
    FUZZ_CHECK(srv_html_render(h, &out, &len, &err) == MT_OK && out[len] == 0);   /* NULs of the page may stay */
    char *a = html_shape(page, n), *b = html_shape(out, len);
    /* The known exception: a page with parse errors, or a tree the parser
     * rebuilt (html_repaired), may not come back the same from any markup;
     * its characters still must (below).  tests/test_html.c checks its
     * broken-markup cases exactly. */
    int repaired = html_repaired(page, n);
    if (strcmp(a, b) && !repaired)
        fprintf(stderr, "tree differs\n%s---\n%s", a, b);
    FUZZ_CHECK(strcmp(a, b) == 0 || repaired);
    if (mode == 0 && !(repaired && html_eof_escaped_script(page, n))) {
        char *ta = html_text(page, n), *tb = html_text(out, len);
        squeeze(ta);
        squeeze(tb);
        if (repaired) {                 /* the same characters, maybe elsewhere in a rebuilt tree */
            qsort(ta, strlen(ta), 1, cmp_byte);
            qsort(tb, strlen(tb), 1, cmp_byte);
        }
        if (strcmp(ta, tb))
            fprintf(stderr, "text differs\n%s\n---\n%s\n", ta, tb);
        FUZZ_CHECK(strcmp(ta, tb) == 0);
        free(ta);
        free(tb);
    }
    free(a);
    free(b);
    free(out);
    srv_html_free(h);
    return 0;
}
