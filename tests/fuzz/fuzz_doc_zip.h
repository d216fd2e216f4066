/* fuzz_doc_zip.h: what the targets of the archive formats share
 * (fuzz_doc_office.c: docx, odt; fuzz_doc_zipformats.c: pptx, xlsx, odp, ods,
 * EPUB): a fake translation, an archive built around a few parts, and the
 * checks of document.h's contract on one file:
 *   - parsing fails only with MT_ERR_INPUT or MT_ERR_TOO_LONG (and a message);
 *   - every unit is non-blank, valid UTF-8;
 *   - under a fake translation (the words upper-cased, in place or reversed,
 *     each linked to its source word; the target language set: EPUB's
 *     dc:language and XHTML lang attributes) the output is a file of the same kind
 *     again that parses to the same number of units; with the words in
 *     place, to the same units upper-cased (ASCII letters). */
#ifndef FUZZ_DOC_ZIP_H
#define FUZZ_DOC_ZIP_H

#include "fuzz_common.h"

#include <ctype.h>
#include <zip.h>

#include "document/document.h"
#include "util/strbuf.h"
#include "util/utf8.h"

static int ws(int c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

static void fake_translate(srv_doc *d, int i, int reversed, mt_sbuf *sb)
{
    enum { CAP = 4096 };
    static long wb[CAP][2], wc[CAP][2], links[4 * CAP];
    const char *t = srv_doc_unit(d, i);
    int n = 0;
    long cp = 0;
    for (long k = 0; t[k] && n < CAP;) {
        while (t[k] && ws((unsigned char)t[k]))
            k++, cp++;
        if (!t[k])
            break;
        wb[n][0] = k, wc[n][0] = cp;
        while (t[k] && !ws((unsigned char)t[k]))
            cp += ((unsigned char)t[k++] & 0xc0) != 0x80;
        wb[n][1] = k, wc[n++][1] = cp;
    }
    sb->n = 0;
    mt_sb_add(sb, "", 0);
    long at = 0;
    for (int k = 0; k < n; k++) {
        int w = reversed ? n - 1 - k : k;
        if (k) {
            mt_sb_add(sb, " ", 1);
            at++;
        }
        size_t from = sb->n;
        mt_sb_add(sb, t + wb[w][0], (size_t)(wb[w][1] - wb[w][0]));
        for (size_t j = from; j < sb->n; j++)
            if (sb->p[j] >= 'a' && sb->p[j] <= 'z')
                sb->p[j] = (char)(sb->p[j] - 32);
        long l = wc[w][1] - wc[w][0];
        links[4 * k] = wc[w][0], links[4 * k + 1] = wc[w][1], links[4 * k + 2] = at, links[4 * k + 3] = at + l;
        at += l;
    }
    mt_err err = { 0 };
    FUZZ_CHECK(srv_doc_set(d, i, sb->p, sb->n, links, n, &err) == MT_OK);
}

/* An archive of the n entries name[k] with data[k] (len[k] bytes; SIZE_MAX:
 * strlen), a "mimetype" entry stored: malloc'd, *len. */
static char *zip_of(const char *const *name, const char *const *data, const size_t *lens, int n, size_t *len)
{
    zip_error_t ze;
    zip_error_init(&ze);
    zip_source_t *src = zip_source_buffer_create(NULL, 0, 0, &ze);
    FUZZ_CHECK(src);
    zip_t *za = zip_open_from_source(src, ZIP_TRUNCATE, &ze);
    FUZZ_CHECK(za);
    zip_source_keep(src);
    for (int k = 0; k < n; k++) {
        size_t l = lens[k] == SIZE_MAX ? strlen(data[k]) : lens[k];
        zip_source_t *s = zip_source_buffer(za, data[k], l, 0);
        FUZZ_CHECK(s && zip_file_add(za, name[k], s, 0) == k);
        if (!strcmp(name[k], "mimetype"))
            zip_set_file_compression(za, (zip_uint64_t)k, ZIP_CM_STORE, 0);
    }
    FUZZ_CHECK(zip_close(za) == 0);
    zip_stat_t st;
    FUZZ_CHECK(zip_source_stat(src, &st) == 0 && zip_source_open(src) == 0);
    char *b = malloc(st.size + 1);
    FUZZ_CHECK(b && zip_source_read(src, b, st.size) == (zip_int64_t)st.size);
    zip_source_close(src);
    zip_source_free(src);
    zip_error_fini(&ze);
    *len = st.size;
    return b;
}

/* The input's bytes after the selector, exactly (ASan sees any overread): malloc'd. */
static char *input_copy(const uint8_t *data, size_t size, size_t *n)
{
    *n = size - 1;
    char *file = malloc(*n ? *n : 1);
    FUZZ_CHECK(file);
    memcpy(file, data + 1, *n);
    return file;
}

/* document.h's contract on file[0..n) read as kind (see the top); frees file. */
static void fuzz_doc_check(srv_doc_kind kind, char *file, size_t n, int reversed)
{
    srv_doc_limits lim = srv_doc_default_limits();
    lim.max_inflated = 8u << 20;
    lim.max_depth = 64;
    srv_doc *d = NULL;
    mt_err err = { 0 };
    mt_status st = srv_doc_parse(kind, file, n, &lim, &d, &err);
    if (st != MT_OK) {
        FUZZ_CHECK((st == MT_ERR_INPUT || st == MT_ERR_TOO_LONG) && !d && err.msg[0]);
        free(file);
        return;
    }
    int nu = srv_doc_units(d);
    mt_sbuf sb = { 0 };
    for (int i = 0; i < nu; i++) {
        const char *u = srv_doc_unit(d, i);
        FUZZ_CHECK(u && *u && fuzz_utf8_valid(u, strlen(u)));
        int blank = 1;
        for (const char *c = u; *c; c++)
            blank &= ws((unsigned char)*c);
        FUZZ_CHECK(!blank);
        fake_translate(d, i, reversed, &sb);
    }
    srv_doc_target(d, "pt-BR");
    char *out = NULL;
    size_t len = 0;
    st = srv_doc_render(d, &out, &len, &err);
    if (st != MT_OK)
        fprintf(stderr, "render: %s\n", err.msg);
    FUZZ_CHECK(st == MT_OK);
    srv_doc *e = NULL;
    st = srv_doc_parse(kind, out, len, &lim, &e, &err);
    if (st != MT_OK)
        fprintf(stderr, "the output does not parse: %s\n", err.msg);
    FUZZ_CHECK(st == MT_OK);
    if (srv_doc_units(e) != nu)
        fprintf(stderr, "units: %d in, %d out\n", nu, srv_doc_units(e));
    FUZZ_CHECK(srv_doc_units(e) == nu);
    for (int i = 0; !reversed && i < nu; i++) {
        fake_translate(d, i, 0, &sb);       /* sb: the unit upper-cased */
        if (strcmp(srv_doc_unit(e, i), sb.p))
            fprintf(stderr, "unit %d: \"%s\" for \"%s\"\n", i, srv_doc_unit(e, i), sb.p);
        FUZZ_CHECK(strcmp(srv_doc_unit(e, i), sb.p) == 0);
    }
    free(sb.p);
    srv_doc_free(e);
    free(out);
    srv_doc_free(d);
    free(file);
}

#endif
