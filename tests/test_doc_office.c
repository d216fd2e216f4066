/* test_doc_office: docx and odt (server/document/doc_office.c, doc_zip.c)
 * without a model, through document.h; then pptx, xlsx, odp, ods and EPUB
 * (doc_office.c, doc_epub.c) on archives built here: their units, the
 * entries a fake translation leaves byte for byte, what stays untranslated
 * (formulas, numbers, fields, sheet names, a master page), XHTML written back
 * well-formed (libxml2 reads it), dc:language set, and what is refused.
 *
 * On the fixtures of tests/fixtures/documents (made by
 * tests/documents/gen_office_fixtures.py: python-docx, odfpy): the units each
 * file gives; under a fake translation (every word upper-cased, in place or
 * reversed, each linked to its source word) the output is a zip with the same
 * entries in the same order, every entry but the translated parts identical
 * (data, CRC, compression; an odt's "mimetype" first and stored), the
 * translated parts parse with the same element tree (the same paragraphs,
 * runs and run properties; only text differs), their text is the
 * translation, and the output read again gives the translated units.
 * Then hostile and broken files, built here in memory with libzip: not a zip,
 * truncated and corrupt archives, a missing part, bad XML, a DOCTYPE with a
 * billion-laughs entity, a zip bomb (declared and lying sizes), too many
 * entries, too deep XML, too many or too long units: each the right status
 * and a message naming the problem.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "fixture_file.h"
#include <ctype.h>
#include <libxml/parser.h>
#include <libxml/tree.h>
#include <zip.h>

#include "document/document.h"
#include "util/strbuf.h"

#define FIX "tests/fixtures/documents/"

/* ---- archives built in memory --------------------------------------------- */

typedef struct {
    const char *name;
    const char *data;
    size_t      len;        /* 0: strlen(data) */
    int         store;
} entry;

/* A zip of e[0..n): malloc'd, *len. */
static char *mkzip(const entry *e, int n, size_t *len)
{
    zip_error_t ze;
    zip_error_init(&ze);
    zip_source_t *src = zip_source_buffer_create(NULL, 0, 0, &ze);
    assert_non_null(src);
    zip_t *za = zip_open_from_source(src, ZIP_TRUNCATE, &ze);
    assert_non_null(za);
    zip_source_keep(src);
    for (int i = 0; i < n; i++) {
        size_t l = e[i].len ? e[i].len : strlen(e[i].data);
        zip_source_t *s = zip_source_buffer(za, e[i].data, l, 0);
        assert_non_null(s);
        zip_int64_t k = zip_file_add(za, e[i].name, s, ZIP_FL_ENC_UTF_8);
        assert_true(k >= 0);
        zip_set_file_compression(za, (zip_uint64_t)k, e[i].store ? ZIP_CM_STORE : ZIP_CM_DEFLATE, 0);
    }
    assert_int_equal(zip_close(za), 0);
    zip_stat_t st;
    assert_int_equal(zip_source_stat(src, &st), 0);
    assert_int_equal(zip_source_open(src), 0);
    char *b = malloc(st.size + 1);
    assert_non_null(b);
    assert_int_equal(zip_source_read(src, b, st.size), (zip_int64_t)st.size);
    zip_source_close(src);
    zip_source_free(src);
    zip_error_fini(&ze);
    *len = st.size;
    return b;
}

static const char CT[] = "<?xml version=\"1.0\"?><Types xmlns=\"http://schemas.openxmlformats.org/package/2006/"
                         "content-types\"/>";
#define W_NS "http://schemas.openxmlformats.org/wordprocessingml/2006/main"

/* A docx of one word/document.xml. */
static char *mkdocx(const char *document, size_t *len)
{
    entry e[] = { { "[Content_Types].xml", CT, 0, 0 }, { "word/document.xml", document, 0, 0 } };
    return mkzip(e, 2, len);
}

/* An archive read back: names, data, CRC, compression, in order. */
typedef struct {
    int     n;
    char  **name;
    char  **data;
    size_t *len;
    uint32_t *crc;
    int    *method;
} listing;

static listing list_zip(const char *data, size_t len)
{
    listing l = { 0 };
    zip_error_t ze;
    zip_error_init(&ze);
    zip_source_t *src = zip_source_buffer_create(data, len, 0, &ze);
    zip_t *za = zip_open_from_source(src, ZIP_RDONLY | ZIP_CHECKCONS, &ze);
    assert_non_null(za);
    l.n = (int)zip_get_num_entries(za, 0);
    l.name = calloc((size_t)l.n, sizeof *l.name);
    l.data = calloc((size_t)l.n, sizeof *l.data);
    l.len = calloc((size_t)l.n, sizeof *l.len);
    l.crc = calloc((size_t)l.n, sizeof *l.crc);
    l.method = calloc((size_t)l.n, sizeof *l.method);
    for (int i = 0; i < l.n; i++) {
        zip_stat_t st;
        assert_int_equal(zip_stat_index(za, (zip_uint64_t)i, 0, &st), 0);
        l.name[i] = strdup(st.name);
        l.len[i] = st.size;
        l.crc[i] = st.crc;
        l.method[i] = st.comp_method;
        l.data[i] = malloc(st.size + 1);
        zip_file_t *zf = zip_fopen_index(za, (zip_uint64_t)i, 0);
        assert_non_null(zf);
        assert_int_equal(zip_fread(zf, l.data[i], st.size), (zip_int64_t)st.size);   /* CRC checked at the end */
        zip_fclose(zf);
        l.data[i][st.size] = 0;
    }
    zip_discard(za);
    zip_error_fini(&ze);
    return l;
}

static void list_free(listing *l)
{
    for (int i = 0; i < l->n; i++)
        free(l->name[i]), free(l->data[i]);
    free(l->name), free(l->data), free(l->len), free(l->crc), free(l->method);
}

static int list_find(const listing *l, const char *name)
{
    for (int i = 0; i < l->n; i++)
        if (!strcmp(l->name[i], name))
            return i;
    return -1;
}

/* Entry i of a and b the same: data, CRC, compression. */
static void same_entry(const listing *a, const listing *b, int i)
{
    assert_int_equal(a->len[i], b->len[i]);
    assert_memory_equal(a->data[i], b->data[i], a->len[i]);
    assert_int_equal(a->crc[i], b->crc[i]);
    assert_int_equal(a->method[i], b->method[i]);
}

/* ---- the fake translation ------------------------------------------------- */

static int ws(int c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

/* Unit i: its words upper-cased (ASCII), in place (mode 0) or reversed (mode 1), each linked to its source word. */
static void fake_translate(srv_doc *d, int i, int mode)
{
    const char *t = srv_doc_unit(d, i);
    long wb[512][2], wc[512][2];
    int n = 0;
    long cp = 0;
    for (long k = 0; t[k] && n < 512;) {
        while (t[k] && ws((unsigned char)t[k]))
            k++, cp++;
        if (!t[k])
            break;
        wb[n][0] = k, wc[n][0] = cp;
        while (t[k] && !ws((unsigned char)t[k]))
            cp += ((unsigned char)t[k++] & 0xc0) != 0x80;
        wb[n][1] = k, wc[n++][1] = cp;
    }
    mt_sbuf sb = { 0 };
    long *links = malloc(sizeof *links * 4 * (size_t)(n + 1));
    long at = 0;
    for (int k = 0; k < n; k++) {
        int w = mode ? n - 1 - k : k;
        if (k) {
            mt_sb_add(&sb, " ", 1);
            at++;
        }
        size_t from = sb.n;
        mt_sb_add(&sb, t + wb[w][0], (size_t)(wb[w][1] - wb[w][0]));
        for (size_t j = from; j < sb.n; j++)
            sb.p[j] = (char)toupper((unsigned char)sb.p[j]);
        long l = wc[w][1] - wc[w][0];
        links[4 * k] = wc[w][0], links[4 * k + 1] = wc[w][1], links[4 * k + 2] = at, links[4 * k + 3] = at + l;
        at += l;
    }
    mt_err err = { 0 };
    assert_int_equal(srv_doc_set(d, i, sb.p ? sb.p : "", sb.n, links, n, &err), MT_OK);
    free(sb.p);
    free(links);
}

/* s without its whitespace (paragraphs still end in '\n'). */
static void squeeze(char *s)
{
    char *o = s;
    for (; *s; s++)
        if (*s != ' ' && *s != '\t')
            *o++ = *s;
    *o = 0;
}

static void upper(char *s)
{
    for (; *s; s++)
        *s = (char)toupper((unsigned char)*s);
}

static srv_doc *parse_ok(srv_doc_kind k, const char *data, size_t len)
{
    srv_doc *d = NULL;
    mt_err err = { 0 };
    mt_status st = srv_doc_parse(k, data, len, NULL, &d, &err);
    if (st != MT_OK)
        fprintf(stderr, "parse: %s\n", err.msg);
    assert_int_equal(st, MT_OK);
    return d;
}

static char *render_ok(srv_doc *d, size_t *len)
{
    char *out = NULL;
    mt_err err = { 0 };
    mt_status st = srv_doc_render(d, &out, len, &err);
    if (st != MT_OK)
        fprintf(stderr, "render: %s\n", err.msg);
    assert_int_equal(st, MT_OK);
    return out;
}

/* Parse failure expected: its status and a piece of its message. */
static void parse_fails(srv_doc_kind k, const char *data, size_t len, const srv_doc_limits *lim, mt_status want,
                        const char *msg_part)
{
    srv_doc *d = (srv_doc *)1;
    mt_err err = { 0 };
    mt_status st = srv_doc_parse(k, data, len, lim, &d, &err);
    if (st != want || !strstr(err.msg, msg_part))
        fprintf(stderr, "got %s: \"%s\"; wanted %s and \"%s\"\n", mt_status_name(st), err.msg, mt_status_name(want),
                msg_part);
    assert_int_equal(st, want);
    assert_null(d);
    assert_non_null(strstr(err.msg, msg_part));
}

/* ---- the element trees of two XML parts ----------------------------------- */

/* The tree as text: one line per element with its attributes (but xml:space,
 * and XHTML's alt, which is translated),
 * the w:rPr and w:pPr subtrees serialized whole; no text. */
static void shape(xmlNodePtr n, int depth, mt_sbuf *sb)
{
    for (; n; n = n->next) {
        if (n->type != XML_ELEMENT_NODE)
            continue;
        char line[512];
        snprintf(line, sizeof line, "%d %s:%s", depth, n->ns && n->ns->prefix ? (char *)n->ns->prefix : "",
                 (char *)n->name);
        mt_sb_add(sb, line, strlen(line));
        for (xmlAttrPtr a = n->properties; a; a = a->next) {
            if ((a->ns && !strcmp((char *)a->name, "space")) || !strcmp((char *)a->name, "alt"))
                continue;
            xmlChar *v = xmlNodeListGetString(n->doc, a->children, 1);
            snprintf(line, sizeof line, " %s=%s", (char *)a->name, v ? (char *)v : "");
            xmlFree(v);
            mt_sb_add(sb, line, strlen(line));
        }
        mt_sb_add(sb, "\n", 1);
        shape(n->children, depth + 1, sb);
    }
}

static char *xml_shape(const char *xml, size_t len)
{
    xmlDocPtr doc = xmlReadMemory(xml, (int)len, NULL, NULL, XML_PARSE_NONET | XML_PARSE_NOERROR);
    assert_non_null(doc);
    mt_sbuf sb = { 0 };
    shape(xmlDocGetRootElement(doc), 0, &sb);
    xmlFreeDoc(doc);
    return sb.p;
}

/* The text of every w:t (docx) or text:p/text:h (odt) element, one a line. */
static void texts(xmlNodePtr n, const char *tag, mt_sbuf *sb)
{
    for (; n; n = n->next) {
        if (n->type != XML_ELEMENT_NODE)
            continue;
        if (!strcmp((char *)n->name, tag)) {
            xmlChar *c = xmlNodeGetContent(n);
            mt_sb_add(sb, c, strlen((char *)c));
            mt_sb_add(sb, "\n", 1);
            xmlFree(c);
        }
        texts(n->children, tag, sb);
    }
}

static char *xml_texts(const char *xml, size_t len, const char *tag)
{
    xmlDocPtr doc = xmlReadMemory(xml, (int)len, NULL, NULL, XML_PARSE_NONET | XML_PARSE_NOERROR);
    assert_non_null(doc);
    mt_sbuf sb = { 0 };
    mt_sb_add(&sb, "", 0);
    texts(xmlDocGetRootElement(doc), tag, &sb);
    xmlFreeDoc(doc);
    return sb.p;
}

/* ---- the fixtures ---------------------------------------------------------- */

static const char *const DOCX_UNITS[] = {
    "Installing the package",
    "This package provides the documentation of the library.",
    "It is free software and it runs on every architecture.",
    "Name: value of the field on a second line.",
    "Package name",
    "Description",
    "libfoo",
    "A small fast library.",
    "The end of the document.",
    "Debian manual",
    "Free software page",
};

static const char *const ODT_UNITS[] = {
    "Installing the package",
    "This package provides the documentation of the library.",
    "It is free software and it runs on every architecture.",
    "Name: value of the field on a second line, see the web site.",
    "A note follows this sentence.",
    "The footnote text.",
    "Package name",
    "Description",
    "libfoo",
    "A small fast library.",
    "First item of the list.",
    "Second item.",
    "The end of the document.",
    "Debian manual",
    "Free software page",
};

static void check_units(srv_doc *d, const char *const *want, int n)
{
    for (int i = 0; i < srv_doc_units(d) && i < n; i++)
        if (strcmp(srv_doc_unit(d, i), want[i]))
            fprintf(stderr, "unit %d: \"%s\", wanted \"%s\"\n", i, srv_doc_unit(d, i), want[i]);
    assert_int_equal(srv_doc_units(d), n);
    for (int i = 0; i < n; i++)
        assert_string_equal(srv_doc_unit(d, i), want[i]);
}

static void test_sniff(void **state)
{
    size_t n;
    char *docx = slurp(FIX "office.docx", &n);
    assert_int_equal(srv_doc_sniff(docx, n, NULL), SRV_DOC_DOCX);
    assert_int_equal(srv_doc_sniff(docx, n, "x.txt"), SRV_DOC_DOCX);
    free(docx);
    char *odt = slurp(FIX "office.odt", &n);
    assert_int_equal(srv_doc_sniff(odt, n, NULL), SRV_DOC_ODT);
    free(odt);
    entry other[] = { { "a.txt", "hello", 0, 0 } };
    char *z = mkzip(other, 1, &n);
    assert_int_equal(srv_doc_sniff(z, n, "a.docx"), SRV_DOC_UNKNOWN);
    free(z);
    /* an odt template's mimetype is not an odt; a mimetype not first neither */
    entry ott[] = { { "mimetype", "application/vnd.oasis.opendocument.text-template", 0, 1 },
                    { "content.xml", "<a/>", 0, 0 } };
    z = mkzip(ott, 2, &n);
    assert_int_equal(srv_doc_sniff(z, n, NULL), SRV_DOC_UNKNOWN);
    free(z);
    entry late[] = { { "content.xml", "<a/>", 0, 0 },
                     { "mimetype", "application/vnd.oasis.opendocument.text", 0, 1 } };
    z = mkzip(late, 2, &n);
    assert_int_equal(srv_doc_sniff(z, n, NULL), SRV_DOC_UNKNOWN);
    free(z);
    assert_int_equal(srv_doc_sniff("PK\x03\x04 not really", 16, NULL), SRV_DOC_UNKNOWN);
}

static void test_units(void **state)
{
    size_t n;
    char *docx = slurp(FIX "office.docx", &n);
    srv_doc *d = parse_ok(SRV_DOC_DOCX, docx, n);
    check_units(d, DOCX_UNITS, (int)(sizeof DOCX_UNITS / sizeof *DOCX_UNITS));
    srv_doc_free(d);
    free(docx);
    char *odt = slurp(FIX "office.odt", &n);
    d = parse_ok(SRV_DOC_ODT, odt, n);
    check_units(d, ODT_UNITS, (int)(sizeof ODT_UNITS / sizeof *ODT_UNITS));
    srv_doc_free(d);
    free(odt);
}

/* No translation set: the same bytes. */
static void test_render_untranslated(void **state)
{
    const char *files[] = { FIX "office.docx", FIX "office.odt" };
    for (int f = 0; f < 2; f++) {
        size_t n, m;
        char *data = slurp(files[f], &n);
        srv_doc *d = parse_ok(f ? SRV_DOC_ODT : SRV_DOC_DOCX, data, n);
        char *out = render_ok(d, &m);
        assert_int_equal(m, n);
        assert_memory_equal(out, data, n);
        free(out);
        srv_doc_free(d);
        free(data);
    }
}

/* The round trip of one fixture under mode: see the file's top comment. */
static void round_trip(const char *path, srv_doc_kind kind, int mode)
{
    size_t n, m;
    char *data = slurp(path, &n);
    srv_doc *d = parse_ok(kind, data, n);
    int nu = srv_doc_units(d);
    for (int i = 0; i < nu; i++)
        fake_translate(d, i, mode);
    char *out = render_ok(d, &m);
    assert_int_equal(srv_doc_sniff(out, m, NULL), kind);
    /* DOC_OFFICE_OUT=dir: the outputs kept for tests/documents/check_office.py */
    const char *dir = getenv("DOC_OFFICE_OUT");
    if (dir && *dir) {
        char p[512];
        snprintf(p, sizeof p, "%s/%s-%s", dir, mode ? "reversed" : "in-place", strrchr(path, '/') + 1);
        FILE *f = fopen(p, "wb");
        assert_non_null(f);
        assert_int_equal(fwrite(out, 1, m, f), m);
        fclose(f);
    }

    listing a = list_zip(data, n), b = list_zip(out, m);
    assert_int_equal(a.n, b.n);
    const char *parts_docx[] = { "word/document.xml", "word/header1.xml", "word/footer1.xml" };
    const char *parts_odt[] = { "content.xml", "styles.xml" };
    const char *const *parts = kind == SRV_DOC_DOCX ? parts_docx : parts_odt;
    int np = kind == SRV_DOC_DOCX ? 3 : 2;
    const char *text_tag = "p";
    for (int i = 0; i < a.n; i++) {
        assert_string_equal(a.name[i], b.name[i]);
        int translated = 0;
        for (int k = 0; k < np; k++)
            translated |= !strcmp(a.name[i], parts[k]);
        if (!translated) {
            same_entry(&a, &b, i);
            continue;
        }
        /* the same elements and attributes (run and paragraph properties included), other text */
        char *sa = xml_shape(a.data[i], a.len[i]), *sb = xml_shape(b.data[i], b.len[i]);
        assert_string_equal(sa, sb);
        free(sa), free(sb);
        char *ta = xml_texts(a.data[i], a.len[i], text_tag), *tb = xml_texts(b.data[i], b.len[i], text_tag);
        assert_string_not_equal(ta, tb);
        if (mode == 0) {            /* words in place: each paragraph's text upper-cased (spaces may move) */
            upper(ta);
            squeeze(ta);
            squeeze(tb);
            assert_string_equal(ta, tb);
        }
        free(ta), free(tb);
        /* the XML declaration kept, byte for byte (python-docx and odfpy quote with ') */
        const char *da = strstr(a.data[i], "?>"), *db = strstr(b.data[i], "?>");
        assert_true(!strncmp(a.data[i], "<?xml version=", 14) && da && db);
        assert_int_equal(da - a.data[i], db - b.data[i]);
        assert_memory_equal(a.data[i], b.data[i], (size_t)(da - a.data[i]));
        assert_non_null(strstr(b.data[i], "encoding='UTF-8'"));
        if (kind == SRV_DOC_DOCX)
            assert_non_null(strstr(b.data[i], "standalone='yes'?>"));
    }
    if (kind == SRV_DOC_ODT) {      /* mimetype first, stored */
        assert_string_equal(b.name[0], "mimetype");
        assert_int_equal(b.method[0], ZIP_CM_STORE);
        assert_memory_equal(out + 30, "mimetypeapplication/vnd.oasis.opendocument.text", 47);
    }
    list_free(&a);
    list_free(&b);

    /* read again: the translated units (their words upper-cased, maybe reversed) */
    srv_doc *e = parse_ok(kind, out, m);
    assert_int_equal(srv_doc_units(e), nu);
    for (int i = 0; i < nu; i++) {
        char *want = strdup(srv_doc_unit(d, i));
        upper(want);
        if (mode == 0) {
            assert_string_equal(srv_doc_unit(e, i), want);
        } else {                    /* the same characters */
            char *got = strdup(srv_doc_unit(e, i));
            assert_int_equal(strlen(got), strlen(want));
            int count[256] = { 0 };
            for (char *c = want; *c; c++)
                count[(unsigned char)*c]++;
            for (char *c = got; *c; c++)
                count[(unsigned char)*c]--;
            for (int c = 0; c < 256; c++)
                assert_int_equal(count[c], 0);
            free(got);
        }
        free(want);
    }
    srv_doc_free(e);
    /* a second render gives the same bytes */
    size_t m2;
    char *out2 = render_ok(d, &m2);
    assert_int_equal(m2, m);
    free(out2);
    free(out);
    srv_doc_free(d);
    free(data);
}

static void test_docx_in_place(void **state) { round_trip(FIX "office.docx", SRV_DOC_DOCX, 0); }
static void test_docx_reversed(void **state) { round_trip(FIX "office.docx", SRV_DOC_DOCX, 1); }
static void test_odt_in_place(void **state) { round_trip(FIX "office.odt", SRV_DOC_ODT, 0); }
static void test_odt_reversed(void **state) { round_trip(FIX "office.odt", SRV_DOC_ODT, 1); }

/* Formatting follows the words: "documentation" bold stays bold where the
 * alignment puts it; the space before "now" stays outside the bold run; a
 * drawing and a proofErr stay where they were. */
static void test_docx_runs_follow_words(void **state)
{
    const char *xml = "<?xml version=\"1.0\" encoding=\"UTF-8\" standalone=\"yes\"?>\n"
                      "<w:document xmlns:w=\"" W_NS "\"><w:body><w:p>"
                      "<w:r><w:t xml:space=\"preserve\">read the </w:t></w:r>"
                      "<w:r><w:rPr><w:b/></w:rPr><w:t>documentation</w:t></w:r>"
                      "<w:r><w:t xml:space=\"preserve\"> now</w:t></w:r>"
                      "<w:r><w:drawing/></w:r><w:proofErr w:type=\"spellStart\"/>"
                      "</w:p></w:body></w:document>";
    size_t n, m;
    char *z = mkdocx(xml, &n);
    srv_doc *d = parse_ok(SRV_DOC_DOCX, z, n);
    assert_int_equal(srv_doc_units(d), 1);
    assert_string_equal(srv_doc_unit(d, 0), "read the documentation now");
    const char tr[] = "lisez la documentation maintenant";
    const long links[] = { 0, 4, 0, 5, 5, 8, 6, 8, 9, 22, 9, 22, 23, 26, 23, 33 };
    mt_err err = { 0 };
    assert_int_equal(srv_doc_set(d, 0, tr, sizeof tr - 1, links, 4, &err), MT_OK);
    char *out = render_ok(d, &m);
    listing l = list_zip(out, m);
    int k = list_find(&l, "word/document.xml");
    assert_true(k >= 0);
    assert_non_null(strstr(l.data[k], "<w:r><w:t xml:space=\"preserve\">lisez la </w:t></w:r>"
                                      "<w:r><w:rPr><w:b/></w:rPr><w:t>documentation</w:t></w:r>"
                                      "<w:r><w:t xml:space=\"preserve\"> maintenant</w:t></w:r>"
                                      "<w:r><w:drawing/></w:r><w:proofErr w:type=\"spellStart\"/>"));
    list_free(&l);
    free(out);
    /* reversed, the runs keep their order (doc_runs.h): every run still gets words, the bold one included */
    fake_translate(d, 0, 1);
    out = render_ok(d, &m);
    srv_doc *e = parse_ok(SRV_DOC_DOCX, out, m);
    assert_string_equal(srv_doc_unit(e, 0), "NOW DOCUMENTATION THE READ");
    srv_doc_free(e);
    free(out);
    srv_doc_free(d);
    free(z);
}

/* A translated part is its own bytes with only the changed text spliced in:
 * the declaration and its quotes, a comment, CRLF, attribute spacing and
 * quoting, character references of an untranslated paragraph all kept; a
 * CDATA section written as escaped text; xml:space="preserve" added to a w:t
 * (or its 'default' changed) when its new text starts with a space. */
static void test_splice_keeps_bytes(void **state)
{
    const char *head = "<?xml version='1.0' encoding='UTF-8' standalone='yes'?>\r\n<!-- made by hand -->\n"
                       "<w:document xmlns:w='" W_NS "'  xmlns:x = \"urn:x\"><w:body>\r\n";
    const char *keep = "<w:p><w:r><w:rPr><w:b  w:val = 'true' /></w:rPr><w:t>caf&#xE9; &amp; &#60;more&gt;</w:t>"
                       "</w:r></w:p>\r\n";
    const char *tail = "</w:body></w:document>\r\n";
    char xml[2048], want[2048];
    snprintf(xml, sizeof xml, "%s%s%s%s", head, keep,
             "<w:p><w:r><w:t>one</w:t></w:r><w:r><w:t xml:space='default'> two</w:t></w:r>"
             "<w:r><w:t><![CDATA[ three]]></w:t></w:r></w:p>", tail);
    snprintf(want, sizeof want, "%s%s%s%s", head, keep,
             "<w:p><w:r><w:t>ONE</w:t></w:r><w:r><w:t xml:space='preserve'> TWO</w:t></w:r>"
             "<w:r><w:t xml:space=\"preserve\"> THREE</w:t></w:r></w:p>", tail);
    size_t n, m;
    char *z = mkdocx(xml, &n);
    srv_doc *d = parse_ok(SRV_DOC_DOCX, z, n);
    const char *units[] = { "caf\xc3\xa9 & <more>", "one two three" };
    check_units(d, units, 2);
    const char tr[] = "ONE TWO THREE";
    const long links[] = { 0, 3, 0, 3, 4, 7, 4, 7, 8, 13, 8, 13 };
    mt_err err = { 0 };
    assert_int_equal(srv_doc_set(d, 1, tr, sizeof tr - 1, links, 3, &err), MT_OK);
    char *out = render_ok(d, &m);
    listing l = list_zip(out, m);
    int k = list_find(&l, "word/document.xml");
    assert_true(k >= 0);
    assert_string_equal(l.data[k], want);
    list_free(&l);
    srv_doc *e = parse_ok(SRV_DOC_DOCX, out, m);
    const char *units2[] = { "caf\xc3\xa9 & <more>", "ONE TWO THREE" };
    check_units(e, units2, 2);
    srv_doc_free(e);
    free(out);
    srv_doc_free(d);
    free(z);
}

/* Characters and markup in a translation are escaped; characters XML cannot hold are dropped. */
static void test_escaping(void **state)
{
    const char *xml = "<w:document xmlns:w=\"" W_NS "\"><w:body><w:p><w:r><w:t>a &amp; b</w:t></w:r></w:p>"
                      "</w:body></w:document>";
    size_t n, m;
    char *z = mkdocx(xml, &n);
    srv_doc *d = parse_ok(SRV_DOC_DOCX, z, n);
    assert_string_equal(srv_doc_unit(d, 0), "a & b");
    mt_err err = { 0 };
    const char tr[] = "<x> & \x01y";
    assert_int_equal(srv_doc_set(d, 0, tr, sizeof tr - 1, NULL, 0, &err), MT_OK);
    assert_int_equal(srv_doc_set(d, 0, "\xff", 1, NULL, 0, &err), MT_ERR_INPUT);     /* not UTF-8: refused */
    char *out = render_ok(d, &m);
    srv_doc *e = parse_ok(SRV_DOC_DOCX, out, m);
    assert_string_equal(srv_doc_unit(e, 0), "<x> & y");
    srv_doc_free(e);
    free(out);
    srv_doc_free(d);
    free(z);
}

/* ---- hostile and broken files --------------------------------------------- */

static void test_not_a_zip(void **state)
{
    parse_fails(SRV_DOC_DOCX, "hello world, this is not a zip archive", 38, NULL, MT_ERR_INPUT, "not a zip");
    size_t n;
    char *docx = slurp(FIX "office.docx", &n);
    /* every truncation: refused, never a crash */
    for (size_t cut = 0; cut < n; cut += cut < 64 ? 1 : 97) {
        char *t = malloc(cut ? cut : 1);
        memcpy(t, docx, cut);
        srv_doc *d = NULL;
        mt_err err = { 0 };
        mt_status st = srv_doc_parse(SRV_DOC_DOCX, t, cut, NULL, &d, &err);
        assert_int_equal(st, MT_ERR_INPUT);
        assert_null(d);
        free(t);
    }
    parse_fails(SRV_DOC_DOCX, docx, n - 10, NULL, MT_ERR_INPUT, "not a valid zip archive");
    free(docx);
}

static void test_corrupt(void **state)
{
    /* the deflated bytes of word/document.xml damaged: the CRC or the inflater says so, naming it */
    const char *xml = "<w:document xmlns:w=\"" W_NS "\"><w:body><w:p><w:r><w:t>some words in a paragraph that "
                      "deflate</w:t></w:r></w:p><w:p><w:r><w:t>and more words</w:t></w:r></w:p></w:body>"
                      "</w:document>";
    size_t n;
    char *z = mkdocx(xml, &n);
    char *at = memmem(z + 4, n - 4, "PK\x03\x04", 4);     /* the second local header: word/document.xml */
    assert_non_null(at);
    size_t data = (size_t)(at - z) + 30 + strlen("word/document.xml");
    for (int k = 0; k < 8; k++)
        z[data + 10 + k] ^= 0x5a;
    parse_fails(SRV_DOC_DOCX, z, n, NULL, MT_ERR_INPUT, "word/document.xml");
    free(z);
}

static void test_missing_part(void **state)
{
    entry e[] = { { "[Content_Types].xml", CT, 0, 0 } };
    size_t n;
    char *z = mkzip(e, 1, &n);
    parse_fails(SRV_DOC_DOCX, z, n, NULL, MT_ERR_INPUT, "no word/document.xml");
    parse_fails(SRV_DOC_ODT, z, n, NULL, MT_ERR_INPUT, "no content.xml");
    free(z);
}

static void test_bad_xml(void **state)
{
    size_t n;
    char *z = mkdocx("<w:document xmlns:w=\"" W_NS "\"><w:body><w:p></w:body>", &n);
    parse_fails(SRV_DOC_DOCX, z, n, NULL, MT_ERR_INPUT, "word/document.xml is not well-formed XML (line 1)");
    free(z);
    z = mkdocx("", &n);
    parse_fails(SRV_DOC_DOCX, z, n, NULL, MT_ERR_INPUT, "word/document.xml");
    free(z);
    /* a header that does not parse: named */
    entry e[] = { { "[Content_Types].xml", CT, 0, 0 },
                  { "word/document.xml", "<w:document xmlns:w=\"" W_NS "\"/>", 0, 0 },
                  { "word/header2.xml", "<w:hdr><", 0, 0 } };
    z = mkzip(e, 3, &n);
    parse_fails(SRV_DOC_DOCX, z, n, NULL, MT_ERR_INPUT, "word/header2.xml");
    free(z);
    /* an encoding other than UTF-8 declared: refused by name (both formats write UTF-8) */
    z = mkdocx("<?xml version=\"1.0\" encoding=\"ISO-8859-1\"?><w:document xmlns:w=\"" W_NS "\"/>", &n);
    parse_fails(SRV_DOC_DOCX, z, n, NULL, MT_ERR_INPUT, "word/document.xml declares the encoding ISO-8859-1");
    free(z);
}

static void test_entity_bomb(void **state)
{
    const char *bomb =
        "<?xml version=\"1.0\"?>\n<!DOCTYPE lolz [\n <!ENTITY lol \"lol\">\n"
        " <!ENTITY lol1 \"&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;\">\n"
        " <!ENTITY lol2 \"&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;\">\n"
        " <!ENTITY lol3 \"&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;\">\n"
        " <!ENTITY lol4 \"&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;\">\n"
        " <!ENTITY lol5 \"&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;\">\n"
        " <!ENTITY lol6 \"&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;\">\n"
        " <!ENTITY lol7 \"&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;\">\n"
        " <!ENTITY lol8 \"&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;\">\n"
        " <!ENTITY lol9 \"&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;\">\n]>\n"
        "<w:document xmlns:w=\"" W_NS "\"><w:body><w:p><w:r><w:t>&lol9;</w:t></w:r></w:p></w:body></w:document>";
    size_t n;
    char *z = mkdocx(bomb, &n);
    parse_fails(SRV_DOC_DOCX, z, n, NULL, MT_ERR_INPUT, "word/document.xml has a DOCTYPE");
    free(z);
    /* an external entity: refused the same way, nothing fetched */
    z = mkdocx("<!DOCTYPE x [<!ENTITY e SYSTEM \"file:///etc/passwd\">]><w:document xmlns:w=\"" W_NS "\">"
               "<w:body><w:p><w:r><w:t>&e;</w:t></w:r></w:p></w:body></w:document>", &n);
    parse_fails(SRV_DOC_DOCX, z, n, NULL, MT_ERR_INPUT, "has a DOCTYPE");
    free(z);
    /* in an odt's styles.xml too */
    entry e[] = { { "mimetype", "application/vnd.oasis.opendocument.text", 0, 1 },
                  { "content.xml", "<office:document-content xmlns:office=\"urn:oasis:names:tc:opendocument:"
                                   "xmlns:office:1.0\"/>", 0, 0 },
                  { "styles.xml", bomb, 0, 0 } };
    z = mkzip(e, 3, &n);
    parse_fails(SRV_DOC_ODT, z, n, NULL, MT_ERR_INPUT, "styles.xml has a DOCTYPE");
    free(z);
}

/* A paragraph of size bytes of "word ". */
static char *big_document(size_t size)
{
    const char *head = "<w:document xmlns:w=\"" W_NS "\"><w:body><w:p><w:r><w:t>";
    const char *tail = "</w:t></w:r></w:p></w:body></w:document>";
    char *x = malloc(strlen(head) + size + strlen(tail) + 1);
    strcpy(x, head);
    char *p = x + strlen(head);
    for (size_t i = 0; i < size; i++)
        p[i] = "word "[i % 5];
    strcpy(p + size, tail);
    return x;
}

static void test_zip_bomb(void **state)
{
    srv_doc_limits lim = srv_doc_default_limits();
    lim.max_inflated = 64 << 10;
    char *x = big_document(1 << 20);                    /* 1 MB that deflates to a few KB */
    size_t n;
    char *z = mkdocx(x, &n);
    assert_true(n < 16 << 10);
    parse_fails(SRV_DOC_DOCX, z, n, &lim, MT_ERR_TOO_LONG, "more than 65536 bytes (max_inflated) at entry "
                                                           "word/document.xml");
    /* the sizes in both headers lowered: the inflater's bytes are counted, not trusted */
    char *lh = memmem(z + 4, n - 4, "PK\x03\x04", 4), *ch = NULL;
    for (char *c = z; (c = memmem(c, n - (size_t)(c - z), "PK\x01\x02", 4)); c += 4)
        if (!memcmp(c + 46, "word/document.xml", 17))
            ch = c;
    assert_non_null(lh);
    assert_non_null(ch);
    memcpy(lh + 22, "\x00\x01\x00\x00", 4);         /* 256 bytes */
    memcpy(ch + 24, "\x00\x01\x00\x00", 4);
    srv_doc *d = NULL;
    mt_err err = { 0 };
    mt_status st = srv_doc_parse(SRV_DOC_DOCX, z, n, &lim, &d, &err);
    assert_true(st == MT_ERR_INPUT || st == MT_ERR_TOO_LONG);
    assert_null(d);
    assert_non_null(strstr(err.msg, "word/document.xml"));
    free(z);
    /* many entries each under the limit, together over it */
    entry e[] = { { "[Content_Types].xml", CT, 0, 0 }, { "word/document.xml", x, 40000, 0 },
                  { "word/a.bin", x, 40000, 0 } };
    z = mkzip(e, 3, &n);
    parse_fails(SRV_DOC_DOCX, z, n, &lim, MT_ERR_TOO_LONG, "at entry word/a.bin");
    free(z);
    free(x);
}

static void test_too_many_entries(void **state)
{
    entry e[40];
    char names[40][32];
    e[0] = (entry){ "[Content_Types].xml", CT, 0, 0 };
    e[1] = (entry){ "word/document.xml", "<w:document xmlns:w=\"" W_NS "\"/>", 0, 0 };
    for (int i = 2; i < 40; i++) {
        snprintf(names[i], sizeof names[i], "media/%d.png", i);
        e[i] = (entry){ names[i], "x", 0, 0 };
    }
    size_t n;
    char *z = mkzip(e, 40, &n);
    srv_doc_limits lim = srv_doc_default_limits();
    lim.max_entries = 39;
    parse_fails(SRV_DOC_DOCX, z, n, &lim, MT_ERR_TOO_LONG, "40 entries; the limit is 39 (max_entries)");
    lim.max_entries = 40;
    srv_doc *d = NULL;
    mt_err err = { 0 };
    assert_int_equal(srv_doc_parse(SRV_DOC_DOCX, z, n, &lim, &d, &err), MT_OK);
    assert_int_equal(srv_doc_units(d), 0);
    srv_doc_free(d);
    free(z);
}

static void test_xml_part_limit(void **state)
{
    (void)state;
    const char *xml = "<w:document xmlns:w=\"" W_NS "\"><w:body><w:p><w:r><w:t>Some text here.</w:t></w:r></w:p>"
                      "</w:body></w:document>";
    size_t n;
    char *z = mkdocx(xml, &n);
    srv_doc_limits lim = srv_doc_default_limits();
    lim.max_xml_part = strlen(xml) - 1;
    parse_fails(SRV_DOC_DOCX, z, n, &lim, MT_ERR_TOO_LONG, "(max_xml_part)");
    lim.max_xml_part = strlen(xml);
    srv_doc *d = NULL;
    mt_err err = { 0 };
    assert_int_equal(srv_doc_parse(SRV_DOC_DOCX, z, n, &lim, &d, &err), MT_OK);
    assert_int_equal(srv_doc_units(d), 1);
    srv_doc_free(d);
    free(z);
}

static void test_depth(void **state)
{
    mt_sbuf sb = { 0 };
    const char *head = "<w:document xmlns:w=\"" W_NS "\"><w:body><w:p><w:r><w:t>x</w:t></w:r>";
    mt_sb_add(&sb, head, strlen(head));
    for (int i = 0; i < 40; i++)
        mt_sb_add(&sb, "<w:hyperlink>", 13);
    for (int i = 0; i < 40; i++)
        mt_sb_add(&sb, "</w:hyperlink>", 14);
    mt_sb_add(&sb, "</w:p></w:body></w:document>", 28);
    size_t n;
    char *z = mkdocx(sb.p, &n);
    srv_doc_limits lim = srv_doc_default_limits();
    lim.max_depth = 32;
    parse_fails(SRV_DOC_DOCX, z, n, &lim, MT_ERR_TOO_LONG, "word/document.xml: XML nesting deeper than 32");
    lim.max_depth = 43;
    srv_doc *d = NULL;
    mt_err err = { 0 };
    assert_int_equal(srv_doc_parse(SRV_DOC_DOCX, z, n, &lim, &d, &err), MT_OK);
    srv_doc_free(d);
    free(z);
    free(sb.p);
    /* deeper than libxml2's own bound (256): refused as too deep, not as broken */
    sb = (mt_sbuf){ 0 };
    mt_sb_add(&sb, "<w:document xmlns:w=\"" W_NS "\">", strlen(W_NS) + 23);
    for (int i = 0; i < 300; i++)
        mt_sb_add(&sb, "<w:b>", 5);
    for (int i = 0; i < 300; i++)
        mt_sb_add(&sb, "</w:b>", 6);
    mt_sb_add(&sb, "</w:document>", 13);
    z = mkdocx(sb.p, &n);
    lim.max_depth = 1000;
    parse_fails(SRV_DOC_DOCX, z, n, &lim, MT_ERR_TOO_LONG, "XML nesting deeper than");
    free(z);
    free(sb.p);
}

static void test_unit_limits(void **state)
{
    size_t n;
    char *docx = slurp(FIX "office.docx", &n);
    srv_doc_limits lim = srv_doc_default_limits();
    lim.max_units = 5;
    parse_fails(SRV_DOC_DOCX, docx, n, &lim, MT_ERR_TOO_LONG, "more than 5 translation units");
    lim = srv_doc_default_limits();
    lim.max_unit_bytes = 40;
    parse_fails(SRV_DOC_DOCX, docx, n, &lim, MT_ERR_TOO_LONG, "word/document.xml: paragraph 2 is 55 bytes; the "
                                                              "limit is 40");
    free(docx);
}

/* Paragraphs in a text box are units of their own; deleted text, field codes and blank paragraphs are not. */
static void test_docx_structure(void **state)
{
    const char *xml =
        "<w:document xmlns:w=\"" W_NS "\" xmlns:mc=\"http://schemas.openxmlformats.org/markup-compatibility/2006\">"
        "<w:body><w:p><w:r><w:t>Outer text</w:t></w:r>"
        "<w:r><mc:AlternateContent><mc:Choice><w:drawing><w:txbxContent><w:p><w:r><w:t>In the box</w:t></w:r></w:p>"
        "</w:txbxContent></w:drawing></mc:Choice><mc:Fallback><w:pict><w:txbxContent><w:p><w:r><w:t>In the box</w:t>"
        "</w:r></w:p></w:txbxContent></w:pict></mc:Fallback></mc:AlternateContent></w:r>"
        "<w:r><w:t xml:space=\"preserve\"> goes on</w:t></w:r></w:p>"
        "<w:p><w:del><w:r><w:delText>gone</w:delText></w:r></w:del><w:r><w:instrText>PAGE</w:instrText></w:r></w:p>"
        "<w:p><w:r><w:t>   </w:t></w:r></w:p>"
        "<w:p><w:hyperlink><w:r><w:t>link</w:t></w:r></w:hyperlink><w:ins><w:r><w:t xml:space=\"preserve\"> inserted"
        "</w:t></w:r></w:ins></w:p>"
        "</w:body></w:document>";
    size_t n;
    char *z = mkdocx(xml, &n);
    srv_doc *d = parse_ok(SRV_DOC_DOCX, z, n);
    const char *want[] = { "Outer text goes on", "In the box", "In the box", "link inserted" };
    check_units(d, want, 4);
    for (int i = 0; i < 4; i++)
        fake_translate(d, i, 0);
    size_t m;
    char *out = render_ok(d, &m);
    srv_doc *e = parse_ok(SRV_DOC_DOCX, out, m);
    const char *want2[] = { "OUTER TEXT GOES ON", "IN THE BOX", "IN THE BOX", "LINK INSERTED" };
    check_units(e, want2, 4);
    srv_doc_free(e);
    free(out);
    srv_doc_free(d);
    free(z);
}

/* ---- pptx, xlsx, odp, ods, EPUB (issue 52) ---------------------------------- */

#define A_NS "http://schemas.openxmlformats.org/drawingml/2006/main"
#define P_NS "http://schemas.openxmlformats.org/presentationml/2006/main"
#define S_NS "http://schemas.openxmlformats.org/spreadsheetml/2006/main"
#define ODF_NS                                                                                                   \
    "xmlns:office=\"urn:oasis:names:tc:opendocument:xmlns:office:1.0\" "                                       \
    "xmlns:text=\"urn:oasis:names:tc:opendocument:xmlns:text:1.0\" "                                           \
    "xmlns:table=\"urn:oasis:names:tc:opendocument:xmlns:table:1.0\" "                                         \
    "xmlns:draw=\"urn:oasis:names:tc:opendocument:xmlns:drawing:1.0\" "                                        \
    "xmlns:presentation=\"urn:oasis:names:tc:opendocument:xmlns:presentation:1.0\" "                           \
    "xmlns:style=\"urn:oasis:names:tc:opendocument:xmlns:style:1.0\""
static const char PNG[] = "\x89PNG\r\n\x1a\n\0\0\0\rIHDR\0\0\0\1\0\0\0\1\b\2\0\0\0\x90wS\xde";

static const char SLIDE[] =
    "<?xml version=\"1.0\" encoding=\"UTF-8\" standalone=\"yes\"?>\r\n<p:sld xmlns:a=\"" A_NS "\" xmlns:p=\"" P_NS
    "\"><p:cSld><p:spTree><p:sp><p:txBody><a:bodyPr/><a:p><a:r><a:rPr lang=\"en-US\"/><a:t>Quarterly report</a:t>"
    "</a:r></a:p></p:txBody></p:sp><p:sp><p:txBody><a:bodyPr/><a:p><a:pPr lvl=\"1\"/><a:r><a:rPr lang=\"en-US\"/>"
    "<a:t>The team </a:t></a:r><a:r><a:rPr lang=\"en-US\" b=\"1\"/><a:t>finished</a:t></a:r><a:r><a:rPr "
    "lang=\"en-US\"/><a:t> the new design.</a:t></a:r></a:p><a:p><a:r><a:t>Next year</a:t></a:r><a:br/><a:r>"
    "<a:t>we will open two offices.</a:t></a:r><a:endParaRPr lang=\"en-US\"/></a:p><a:p><a:fld id=\"{1}\" "
    "type=\"slidenum\"><a:t>7</a:t></a:fld></a:p></p:txBody></p:sp><p:graphicFrame><a:graphic><a:graphicData>"
    "<a:tbl><a:tr><a:tc><a:txBody><a:p><a:r><a:t>Revenue</a:t></a:r></a:p></a:txBody></a:tc><a:tc><a:txBody>"
    "<a:p><a:r><a:t>Sales grew &amp; held.</a:t></a:r></a:p></a:txBody></a:tc></a:tr></a:tbl></a:graphicData>"
    "</a:graphic></p:graphicFrame></p:spTree></p:cSld></p:sld>";
static const char NOTES[] = "<p:notes xmlns:a=\"" A_NS "\" xmlns:p=\"" P_NS "\"><p:cSld><p:spTree><p:sp><p:txBody>"
                            "<a:p><a:r><a:t>Thank the team.</a:t></a:r></a:p></p:txBody></p:sp></p:spTree>"
                            "</p:cSld></p:notes>";
static const char LAYOUT[] = "<p:sldLayout xmlns:a=\"" A_NS "\" xmlns:p=\"" P_NS "\"><a:p><a:r><a:t>Click to edit"
                             "</a:t></a:r></a:p></p:sldLayout>";

static char *mkpptx(size_t *len)
{
    entry e[] = { { "[Content_Types].xml", CT, 0, 0 },
                  { "ppt/presentation.xml", "<p:presentation xmlns:p=\"" P_NS "\"/>", 0, 0 },
                  { "ppt/slideLayouts/slideLayout1.xml", LAYOUT, 0, 0 },
                  { "ppt/slides/slide1.xml", SLIDE, 0, 0 },
                  { "ppt/notesSlides/notesSlide1.xml", NOTES, 0, 0 },
                  { "ppt/media/image1.png", PNG, sizeof PNG - 1, 1 } };
    return mkzip(e, 6, len);
}

static const char SST[] =
    "<?xml version=\"1.0\" encoding=\"UTF-8\" standalone=\"yes\"?>\n<sst xmlns=\"" S_NS "\" count=\"4\" "
    "uniqueCount=\"4\"><si><t>Office rent</t></si><si><r><t xml:space=\"preserve\">The order was </t></r><r><rPr>"
    "<b/></rPr><t>delayed</t></r><r><t xml:space=\"preserve\"> by the supplier.</t></r></si><si><t>Tokyo office</t>"
    "<rPh sb=\"0\" eb=\"5\"><t>TOKYO</t></rPh></si><si><t>   </t></si></sst>";
static const char SHEET1[] =
    "<worksheet xmlns=\"" S_NS "\"><sheetData><row r=\"1\"><c r=\"A1\" t=\"s\"><v>0</v></c><c r=\"B1\"><v>1200</v>"
    "</c></row><row r=\"2\"><c r=\"A2\" t=\"inlineStr\"><is><t>Checked by the accountant.</t></is></c><c r=\"B2\">"
    "<f>SUM(B1:B1)</f><v>1200</v></c><c r=\"C2\" t=\"str\"><f>A1&amp;\" total\"</f><v>Office rent total</v></c>"
    "</row></sheetData></worksheet>";
static const char SHEET2[] = "<worksheet xmlns=\"" S_NS "\"><sheetData><row r=\"1\"><c r=\"A1\" t=\"s\"><v>2</v>"
                             "</c></row></sheetData></worksheet>";

static char *mkxlsx(size_t *len)
{
    entry e[] = { { "[Content_Types].xml", CT, 0, 0 },
                  { "xl/workbook.xml", "<workbook xmlns=\"" S_NS "\"><sheets><sheet name=\"Budget\" sheetId=\"1\"/>"
                                       "<sheet name=\"Plans\" sheetId=\"2\"/></sheets></workbook>", 0, 0 },
                  { "xl/sharedStrings.xml", SST, 0, 0 },
                  { "xl/worksheets/sheet1.xml", SHEET1, 0, 0 },
                  { "xl/worksheets/sheet2.xml", SHEET2, 0, 0 } };
    return mkzip(e, 5, len);
}

static const char ODP_CONTENT[] =
    "<?xml version='1.0' encoding='UTF-8'?>\n<office:document-content " ODF_NS "><office:body><office:presentation>"
    "<draw:page draw:name=\"page1\"><draw:frame><draw:text-box><text:p>Our plans for the autumn</text:p>"
    "</draw:text-box></draw:frame><draw:frame><draw:text-box><text:p>The library will <text:span "
    "text:style-name=\"T1\">reopen</text:span> in October.</text:p></draw:text-box></draw:frame><draw:frame>"
    "<table:table><table:table-row><table:table-cell><text:p>Opening time</text:p></table:table-cell>"
    "</table:table-row></table:table></draw:frame><presentation:notes><draw:frame><draw:text-box><text:p>Speak "
    "slowly.</text:p></draw:text-box></draw:frame></presentation:notes></draw:page></office:presentation>"
    "</office:body></office:document-content>";
static const char ODF_STYLES[] = "<office:document-styles " ODF_NS "><office:master-styles><style:master-page>"
                                 "<draw:frame><draw:text-box><text:p>Click to add a title</text:p></draw:text-box>"
                                 "</draw:frame></style:master-page></office:master-styles></office:document-styles>";

static char *mkodp(size_t *len)
{
    entry e[] = { { "mimetype", "application/vnd.oasis.opendocument.presentation", 0, 1 },
                  { "content.xml", ODP_CONTENT, 0, 0 },
                  { "styles.xml", ODF_STYLES, 0, 0 },
                  { "Pictures/1.png", PNG, sizeof PNG - 1, 1 } };
    return mkzip(e, 4, len);
}

static const char ODS_CONTENT[] =
    "<office:document-content " ODF_NS "><office:body><office:spreadsheet><table:table table:name=\"Expenses\">"
    "<table:table-row><table:table-cell office:value-type=\"string\"><text:p>Train tickets</text:p>"
    "</table:table-cell><table:table-cell office:value-type=\"float\" office:value=\"84.5\"><text:p>84.5</text:p>"
    "</table:table-cell><table:table-cell office:value-type=\"string\"><office:annotation><text:p>A reviewer's "
    "note</text:p></office:annotation><text:p>Two nights, <text:span>breakfast</text:span> included.</text:p>"
    "</table:table-cell></table:table-row><table:table-row><table:table-cell table:formula=\"of:=SUM([.B1])\" "
    "office:value-type=\"float\" office:value=\"84.5\"><text:p>84.5</text:p></table:table-cell>"
    "<table:table-cell office:value-type=\"date\" office:date-value=\"2026-03-01\"><text:p>March first</text:p>"
    "</table:table-cell><table:table-cell><text:p>No type at all</text:p></table:table-cell></table:table-row>"
    "</table:table></office:spreadsheet></office:body></office:document-content>";

static char *mkods(size_t *len)
{
    entry e[] = { { "mimetype", "application/vnd.oasis.opendocument.spreadsheet", 0, 1 },
                  { "content.xml", ODS_CONTENT, 0, 0 },
                  { "meta.xml", "<office:document-meta " ODF_NS "/>", 0, 0 } };
    return mkzip(e, 3, len);
}

static const char CONTAINER[] =
    "<?xml version=\"1.0\"?>\n<container version=\"1.0\" xmlns=\"urn:oasis:names:tc:opendocument:xmlns:container\">"
    "<rootfiles><rootfile full-path=\"OEBPS/content.opf\" media-type=\"application/oebps-package+xml\"/>"
    "</rootfiles></container>";
static const char OPF[] =
    "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<package xmlns=\"http://www.idpf.org/2007/opf\" version=\"3.0\" "
    "unique-identifier=\"id\"><metadata xmlns:dc=\"http://purl.org/dc/elements/1.1/\"><dc:identifier id=\"id\">"
    "urn:x</dc:identifier><dc:title>The Keeper of the Light</dc:title><dc:language>en</dc:language><dc:creator>"
    "A. Writer</dc:creator><dc:description>A story about the sea.</dc:description></metadata><manifest>"
    "<item id=\"ncx\" href=\"toc.ncx\" media-type=\"application/x-dtbncx+xml\"/><item id=\"nav\" href=\"nav.xhtml\" "
    "media-type=\"application/xhtml+xml\" properties=\"nav\"/><item id=\"c1\" href=\"./text/../text/ch1.xhtml\" "
    "media-type=\"application/xhtml+xml\"/><item id=\"c2\" href=\"text/chapter%202.xhtml\" "
    "media-type=\"application/xhtml+xml\"/><item id=\"x\" href=\"extra.xhtml\" media-type=\"application/xhtml+xml\"/>"
    "<item id=\"css\" href=\"style.css\" media-type=\"text/css\"/></manifest><spine toc=\"ncx\"><itemref "
    "idref=\"c1\"/><itemref idref=\"c2\"/></spine></package>";
static const char CH1[] =
    "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<!DOCTYPE html PUBLIC \"-//W3C//DTD XHTML 1.1//EN\" "
    "\"http://www.w3.org/TR/xhtml11/DTD/xhtml11.dtd\">\n<html xmlns=\"http://www.w3.org/1999/xhtml\"><head><title>"
    "Chapter one</title><link rel=\"stylesheet\" href=\"../style.css\"/><script src=\"x.js\"/></head><body>"
    "<h1 id=\"c1\">The harbour</h1><p><a id=\"p1\"/>The keeper was <em>very</em> happy.<br/>He slept.</p>"
    "<div class=\"x\"/><p>Ships &amp; boats <span/>passed by.</p><img src=\"../lamp.png\" alt=\"The lamp\"/>"
    "<![CDATA[]]></body></html>\n";
static const char CH2[] = "<html xmlns=\"http://www.w3.org/1999/xhtml\"><head><title>Two</title></head><body><p>"
                          "The end.</p></body></html>";
static const char NAV[] = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<!DOCTYPE html>\n<html xmlns=\"http://www.w3"
                          ".org/1999/xhtml\" xmlns:epub=\"http://www.idpf.org/2007/ops\"><head><title>Contents"
                          "</title></head><body><nav epub:type=\"toc\"><ol><li><a href=\"text/ch1.xhtml\">The "
                          "harbour</a></li></ol></nav></body></html>";
static const char NCX[] =
    "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<!DOCTYPE ncx PUBLIC \"-//NISO//DTD ncx 2005-1//EN\" "
    "\"http://www.daisy.org/z3986/2005/ncx-2005-1.dtd\">\n<ncx xmlns=\"http://www.daisy.org/z3986/2005/ncx/\" "
    "version=\"2005-1\"><docTitle><text>The Keeper of the Light</text></docTitle><docAuthor><text>A. Writer</text>"
    "</docAuthor><navMap><navPoint id=\"n1\"><navLabel><text>The harbour</text></navLabel><content "
    "src=\"text/ch1.xhtml\"/></navPoint></navMap></ncx>";

/* An EPUB with chapter one's bytes ch1 (NULL: CH1) and its package opf (NULL: OPF). */
static char *mkepub(const char *ch1, const char *opf, size_t *len)
{
    entry e[] = { { "mimetype", "application/epub+zip", 0, 1 },
                  { "META-INF/container.xml", CONTAINER, 0, 0 },
                  { "OEBPS/content.opf", opf ? opf : OPF, 0, 0 },
                  { "OEBPS/style.css", "p { margin: 0 }\n", 0, 0 },
                  { "OEBPS/lamp.png", PNG, sizeof PNG - 1, 1 },
                  { "OEBPS/text/ch1.xhtml", ch1 ? ch1 : CH1, 0, 0 },
                  { "OEBPS/text/chapter 2.xhtml", CH2, 0, 0 },
                  { "OEBPS/extra.xhtml", CH2, 0, 0 },
                  { "OEBPS/nav.xhtml", NAV, 0, 0 },
                  { "OEBPS/toc.ncx", NCX, 0, 0 } };
    return mkzip(e, 10, len);
}

/* Every unit upper-cased in place; the output: the same entries in the same
 * order, those not in changed[] byte for byte (data, CRC, method), the changed
 * ones the same element tree (libxml2) and each listed text present; read
 * again, the upper-cased units.  *out: the output. */
static void zip_round_trip(srv_doc_kind kind, const char *data, size_t n, const char *const *want, int nw,
                           const char *const *changed, int nc, char **out, size_t *m)
{
    srv_doc *d = parse_ok(kind, data, n);
    check_units(d, want, nw);
    for (int i = 0; i < nw; i++)
        fake_translate(d, i, 0);
    srv_doc_target(d, "pt-BR");
    *out = render_ok(d, m);
    assert_int_equal(srv_doc_sniff(*out, *m, NULL), kind);
    listing a = list_zip(data, n), b = list_zip(*out, *m);
    assert_int_equal(a.n, b.n);
    int seen = 0;
    for (int i = 0; i < a.n; i++) {
        assert_string_equal(a.name[i], b.name[i]);
        int ch = 0;
        for (int k = 0; k < nc; k++)
            ch |= !strcmp(a.name[i], changed[k]);
        if (!ch) {
            same_entry(&a, &b, i);
            continue;
        }
        seen++;
        assert_memory_not_equal(a.data[i], b.data[i], a.len[i] < b.len[i] ? a.len[i] : b.len[i]);
        char *sa = xml_shape(a.data[i], a.len[i]), *sb = xml_shape(b.data[i], b.len[i]);
        assert_string_equal(sa, sb);
        free(sa), free(sb);
    }
    assert_int_equal(seen, nc);
    if (a.n && !strcmp(a.name[0], "mimetype")) {
        assert_string_equal(b.name[0], "mimetype");
        assert_int_equal(b.method[0], ZIP_CM_STORE);
    }
    list_free(&a);
    list_free(&b);
    srv_doc *e = parse_ok(kind, *out, *m);
    assert_int_equal(srv_doc_units(e), nw);
    for (int i = 0; i < nw; i++) {
        char *w = strdup(want[i]);
        upper(w);
        assert_string_equal(srv_doc_unit(e, i), w);
        free(w);
    }
    srv_doc_free(e);
    srv_doc_free(d);
}

/* The inflated entry name of the archive out. */
static char *entry_of(const char *out, size_t m, const char *name)
{
    listing l = list_zip(out, m);
    int k = list_find(&l, name);
    assert_true(k >= 0);
    char *s = strdup(l.data[k]);
    list_free(&l);
    return s;
}

/* Entry name of the archive out holds each string of the NULL-terminated list. */
static void entry_has(const char *out, size_t m, const char *name, ...)
{
    char *s = entry_of(out, m, name);
    va_list ap;
    va_start(ap, name);
    for (const char *want; (want = va_arg(ap, const char *));) {
        if (!strstr(s, want))
            fprintf(stderr, "%s lacks \"%s\"\n", name, want);
        assert_non_null(strstr(s, want));
    }
    va_end(ap);
    free(s);
}

static void test_zipformats_sniff(void **state)
{
    size_t n;
    char *z;
    z = mkpptx(&n);
    assert_int_equal(srv_doc_sniff(z, n, "x.docx"), SRV_DOC_PPTX);
    free(z);
    z = mkxlsx(&n);
    assert_int_equal(srv_doc_sniff(z, n, NULL), SRV_DOC_XLSX);
    free(z);
    z = mkodp(&n);
    assert_int_equal(srv_doc_sniff(z, n, NULL), SRV_DOC_ODP);
    free(z);
    z = mkods(&n);
    assert_int_equal(srv_doc_sniff(z, n, NULL), SRV_DOC_ODS);
    free(z);
    z = mkepub(NULL, NULL, &n);
    assert_int_equal(srv_doc_sniff(z, n, "book.zip"), SRV_DOC_EPUB);
    free(z);
    /* another ODF kind; an EPUB's mimetype not first: not ours */
    entry g[] = { { "mimetype", "application/vnd.oasis.opendocument.graphics", 0, 1 }, { "content.xml", "<x/>", 0, 0 } };
    z = mkzip(g, 2, &n);
    assert_int_equal(srv_doc_sniff(z, n, NULL), SRV_DOC_UNKNOWN);
    free(z);
    entry h[] = { { "META-INF/container.xml", CONTAINER, 0, 0 }, { "mimetype", "application/epub+zip", 0, 1 } };
    z = mkzip(h, 2, &n);
    assert_int_equal(srv_doc_sniff(z, n, NULL), SRV_DOC_UNKNOWN);
    free(z);
    assert_string_equal(srv_doc_kind_name(SRV_DOC_EPUB), "epub");
    assert_string_equal(srv_doc_kind_ext(SRV_DOC_XLSX), ".xlsx");
    assert_string_equal(srv_doc_kind_mime(SRV_DOC_ODS), "application/vnd.oasis.opendocument.spreadsheet");
    for (const char *const *x = (const char *const[]){ ".pptx", ".xlsx", ".odp", ".ods", ".epub", NULL }; *x; x++)
        assert_non_null(strstr(srv_doc_supported(), *x));
}

static void test_pptx(void **state)
{
    size_t n, m;
    char *z = mkpptx(&n), *out;
    const char *want[] = { "Quarterly report", "The team finished the new design.",
                           "Next year we will open two offices.", "Revenue", "Sales grew & held.", "Thank the team." };
    const char *changed[] = { "ppt/slides/slide1.xml", "ppt/notesSlides/notesSlide1.xml" };
    zip_round_trip(SRV_DOC_PPTX, z, n, want, 6, changed, 2, &out, &m);
    /* the runs kept their words; the field and the break kept; & escaped; no xml:space on a:t; the declaration */
    entry_has(out, m, "ppt/slides/slide1.xml",
              "<a:t>THE TEAM </a:t></a:r><a:r><a:rPr lang=\"en-US\" b=\"1\"/><a:t>FINISHED</a:t>",
              "<a:t>NEXT YEAR</a:t></a:r><a:br/><a:r><a:t>WE WILL OPEN TWO OFFICES.</a:t>",
              "type=\"slidenum\"><a:t>7</a:t></a:fld>", "<a:t>SALES GREW &amp; HELD.</a:t>", NULL);
    char *s = entry_of(out, m, "ppt/slides/slide1.xml");
    assert_null(strstr(s, "xml:space"));
    assert_memory_equal(s, SLIDE, strstr(SLIDE, "<p:sld") - SLIDE);
    free(s);
    free(out);
    free(z);
}

static void test_xlsx(void **state)
{
    size_t n, m;
    char *z = mkxlsx(&n), *out;
    const char *want[] = { "Office rent", "The order was delayed by the supplier.", "Tokyo office",
                           "Checked by the accountant." };
    const char *changed[] = { "xl/sharedStrings.xml", "xl/worksheets/sheet1.xml" };
    zip_round_trip(SRV_DOC_XLSX, z, n, want, 4, changed, 2, &out, &m);
    entry_has(out, m, "xl/sharedStrings.xml",
              "<t xml:space=\"preserve\">THE ORDER WAS </t></r><r><rPr><b/></rPr><t>DELAYED</t>",
              "<t>TOKYO OFFICE</t><rPh sb=\"0\" eb=\"5\"><t>TOKYO</t></rPh>", "count=\"4\" uniqueCount=\"4\"", NULL);
    /* formulas, numbers, a formula's string value untouched */
    entry_has(out, m, "xl/worksheets/sheet1.xml", "<f>SUM(B1:B1)</f><v>1200</v>",
              "<f>A1&amp;\" total\"</f><v>Office rent total</v>", "<is><t>CHECKED BY THE ACCOUNTANT.</t></is>", NULL);
    free(out);
    free(z);
}

/* The shared strings part found through xl/_rels/workbook.xml.rels: a Target
 * relative to xl/ or from the top ("/..."), not the usual name (a decoy part
 * there is not read); without rels, xl/sharedStrings.xml (test_xlsx). */
static void test_xlsx_rels(void **state)
{
    static const char DECOY[] = "<sst xmlns=\"" S_NS "\"><si><t>Not the workbook's strings</t></si></sst>";
    const char *targets[] = { "strings/shared.xml", "/xl/strings/shared.xml" };
    for (int k = 0; k < 2; k++) {
        char rels[1024];
        snprintf(rels, sizeof rels,
                 "<?xml version=\"1.0\"?>\n<Relationships xmlns=\"http://schemas.openxmlformats.org/package/2006/"
                 "relationships\"><Relationship Id=\"rId1\" Type=\"http://schemas.openxmlformats.org/officeDocument/"
                 "2006/relationships/worksheet\" Target=\"worksheets/sheet2.xml\"/><Relationship Id=\"rId9\" "
                 "Type=\"http://schemas.openxmlformats.org/officeDocument/2006/relationships/sharedStrings\" "
                 "Target=\"%s\"/></Relationships>", targets[k]);
        entry e[] = { { "[Content_Types].xml", CT, 0, 0 },
                      { "xl/workbook.xml", "<workbook xmlns=\"" S_NS "\"><sheets><sheet name=\"Plans\" "
                                           "sheetId=\"1\"/></sheets></workbook>", 0, 0 },
                      { "xl/_rels/workbook.xml.rels", rels, 0, 0 },
                      { "xl/sharedStrings.xml", DECOY, 0, 0 },
                      { "xl/strings/shared.xml", SST, 0, 0 },
                      { "xl/worksheets/sheet2.xml", SHEET2, 0, 0 } };
        size_t n, m;
        char *z = mkzip(e, 6, &n), *out;
        const char *want[] = { "Office rent", "The order was delayed by the supplier.", "Tokyo office" };
        const char *changed[] = { "xl/strings/shared.xml" };
        zip_round_trip(SRV_DOC_XLSX, z, n, want, 3, changed, 1, &out, &m);
        entry_has(out, m, "xl/strings/shared.xml", "<t>OFFICE RENT</t>", NULL);
        free(out);
        free(z);
    }
    /* rels that name no shared strings: the usual part */
    entry e[] = { { "[Content_Types].xml", CT, 0, 0 },
                  { "xl/workbook.xml", "<workbook xmlns=\"" S_NS "\"><sheets/></workbook>", 0, 0 },
                  { "xl/_rels/workbook.xml.rels", "<Relationships xmlns=\"http://schemas.openxmlformats.org/package/"
                                                  "2006/relationships\"/>", 0, 0 },
                  { "xl/sharedStrings.xml", DECOY, 0, 0 } };
    size_t n;
    char *z = mkzip(e, 4, &n);
    srv_doc *d = parse_ok(SRV_DOC_XLSX, z, n);
    assert_int_equal(srv_doc_units(d), 1);
    assert_string_equal(srv_doc_unit(d, 0), "Not the workbook's strings");
    srv_doc_free(d);
    free(z);
}

static void test_odp_ods(void **state)
{
    size_t n, m;
    char *z = mkodp(&n), *out;
    const char *want[] = { "Our plans for the autumn", "The library will reopen in October.", "Opening time",
                           "Speak slowly." };
    const char *changed[] = { "content.xml" };       /* the master page's placeholder text is not translated */
    zip_round_trip(SRV_DOC_ODP, z, n, want, 4, changed, 1, &out, &m);
    entry_has(out, m, "content.xml",
              "<text:p>THE LIBRARY WILL <text:span text:style-name=\"T1\">REOPEN</text:span> IN OCTOBER.</text:p>",
              NULL);
    free(out);
    free(z);
    z = mkods(&n);
    const char *want2[] = { "Train tickets", "Two nights, breakfast included." };
    zip_round_trip(SRV_DOC_ODS, z, n, want2, 2, changed, 1, &out, &m);
    /* numbers, dates, formulas, untyped cells, notes, sheet names kept */
    entry_has(out, m, "content.xml", "table:name=\"Expenses\"", "<text:p>84.5</text:p>",
              "<text:p>March first</text:p>", "<text:p>No type at all</text:p>", "<text:p>A reviewer's note</text:p>",
              NULL);
    free(out);
    free(z);
}

/* libxml2 reads the XHTML as XML (no DTD fetched): 1 when it is well-formed. */
static int well_formed(const char *s)
{
    xmlDocPtr doc = xmlReadMemory(s, (int)strlen(s), NULL, NULL, XML_PARSE_NONET | XML_PARSE_NOERROR |
                                                                 XML_PARSE_NOWARNING);
    xmlFreeDoc(doc);
    return doc != NULL;
}

static void test_epub(void **state)
{
    size_t n, m;
    char *z = mkepub(NULL, NULL, &n), *out;
    const char *want[] = { "The Keeper of the Light", "A story about the sea.",
                           "Chapter one", "The harbour", "The keeper was very happy.", "He slept.",
                           "Ships & boats passed by.", "The lamp",
                           "Two", "The end.",
                           "Contents", "The harbour",
                           "The Keeper of the Light", "The harbour" };
    const char *changed[] = { "OEBPS/content.opf", "OEBPS/text/ch1.xhtml", "OEBPS/text/chapter 2.xhtml",
                              "OEBPS/nav.xhtml", "OEBPS/toc.ncx" };
    zip_round_trip(SRV_DOC_EPUB, z, n, want, 14, changed, 5, &out, &m);
    char *s = entry_of(out, m, "OEBPS/content.opf");
    assert_non_null(strstr(s, "<dc:language>pt-BR</dc:language>"));
    assert_non_null(strstr(s, "<dc:title>THE KEEPER OF THE LIGHT</dc:title>"));
    assert_non_null(strstr(s, "<dc:creator>A. Writer</dc:creator>"));
    free(s);
    s = entry_of(out, m, "OEBPS/text/ch1.xhtml");
    assert_true(well_formed(s));
    /* the bytes before the root as they were (declaration, DOCTYPE); XML's empty elements written open and shut */
    assert_memory_equal(s, CH1, strstr(CH1, "<html") - CH1);
    free(s);
    entry_has(out, m, "OEBPS/text/ch1.xhtml", "<a id=\"p1\"></a>THE KEEPER WAS <em>VERY</em> HAPPY.<br/>HE SLEPT.</p>",
              "<script src=\"x.js\"></script>", "<div class=\"x\"></div>", "SHIPS &amp; BOATS <span></span>PASSED BY.",
              "alt=\"THE LAMP\"", NULL);
    s = entry_of(out, m, "OEBPS/toc.ncx");
    assert_true(well_formed(s));
    assert_memory_equal(s, NCX, strstr(NCX, "<ncx") - NCX);      /* the DOCTYPE put back */
    assert_non_null(strstr(s, "<docAuthor><text>A. Writer</text></docAuthor>"));
    assert_non_null(strstr(s, "<navLabel><text>THE HARBOUR</text></navLabel>"));
    free(s);
    s = entry_of(out, m, "OEBPS/nav.xhtml");
    assert_true(well_formed(s));
    free(s);
    assert_memory_equal(out + 30, "mimetypeapplication/epub+zip", 28);
    free(out);
    free(z);
    /* EPUB 2: no nav, an ncx by media type only; untranslated, the file's own bytes */
    char *opf2 = strdup(OPF);
    char *p = strstr(opf2, " properties=\"nav\"");
    memset(p, ' ', strlen(" properties=\"nav\""));
    p = strstr(opf2, " toc=\"ncx\"");
    memset(p, ' ', strlen(" toc=\"ncx\""));
    z = mkepub(NULL, opf2, &n);
    srv_doc *d = parse_ok(SRV_DOC_EPUB, z, n);
    assert_int_equal(srv_doc_units(d), 12);
    assert_string_equal(srv_doc_unit(d, 10), "The Keeper of the Light");
    out = render_ok(d, &m);
    assert_int_equal(m, n);
    assert_memory_equal(out, z, n);
    free(out);
    srv_doc_free(d);
    free(z);
    free(opf2);
}

/* The XHTML root's lang and xml:lang set to the target, as dc:language is,
 * where the root has them: that document rewritten even with no unit set
 * (its DOCTYPE kept), one without them left byte for byte; without a target
 * they stay the source's. */
static void test_epub_lang(void **state)
{
    char *ch1 = strdup(CH1);
    static const char ROOT[] = "<html xmlns=\"http://www.w3.org/1999/xhtml\"";
    const char *at = strstr(ch1, ROOT) + strlen(ROOT);
    char lang_ch1[4096];
    snprintf(lang_ch1, sizeof lang_ch1, "%.*s xml:lang=\"en\" lang=\"en-GB\"%s", (int)(at - ch1), ch1, at);
    size_t n, m;
    char *z = mkepub(lang_ch1, NULL, &n);
    srv_doc *d = parse_ok(SRV_DOC_EPUB, z, n);
    char *out = render_ok(d, &m);
    char *s = entry_of(out, m, "OEBPS/text/ch1.xhtml");
    assert_string_equal(s, lang_ch1);                   /* no target: as it was */
    free(s);
    free(out);
    srv_doc_target(d, "pt-BR");
    out = render_ok(d, &m);
    s = entry_of(out, m, "OEBPS/text/ch1.xhtml");
    assert_true(well_formed(s));
    assert_memory_equal(s, CH1, strstr(CH1, "<html") - CH1);        /* the declaration and DOCTYPE kept */
    assert_non_null(strstr(s, "xml:lang=\"pt-BR\""));
    assert_non_null(strstr(s, " lang=\"pt-BR\""));
    assert_null(strstr(s, "\"en"));
    assert_non_null(strstr(s, "The keeper was <em>very</em> happy."));   /* untranslated */
    free(s);
    s = entry_of(out, m, "OEBPS/text/chapter 2.xhtml");
    assert_string_equal(s, CH2);                        /* no lang: not rewritten */
    free(s);
    s = entry_of(out, m, "OEBPS/content.opf");
    assert_non_null(strstr(s, "<dc:language>pt-BR</dc:language>"));
    free(s);
    free(out);
    srv_doc_free(d);
    free(z);
    free(ch1);
}

/* EPUB 2's XHTML with the XHTML DTD's entities (declared by the DTD its DOCTYPE
 * names, which no reader here fetches): read as their characters; an entity
 * of no DTD, or one without that DOCTYPE, refused (further down). */
static void test_epub_entities(void **state)
{
    const char *ch = "<?xml version=\"1.0\"?>\n<!DOCTYPE html PUBLIC \"-//W3C//DTD XHTML 1.1//EN\" \"http://www.w3.org/"
                     "TR/xhtml11/DTD/xhtml11.dtd\">\n<html xmlns=\"http://www.w3.org/1999/xhtml\"><head><title>T"
                     "</title></head><body><p>caf&eacute;&nbsp;au lait &mdash; &copy; &amp; &#233;t&eacute;<!-- &foo; -->"
                     "</p><p title=\"&laquo;x&raquo;\">Two</p></body></html>";
    size_t n, m;
    char *z = mkepub(ch, NULL, &n);
    srv_doc *d = parse_ok(SRV_DOC_EPUB, z, n);
    assert_string_equal(srv_doc_unit(d, 3), "caf\xc3\xa9\xc2\xa0" "au lait \xe2\x80\x94 \xc2\xa9 & \xc3\xa9t\xc3\xa9");
    assert_string_equal(srv_doc_unit(d, 4), "\xc2\xabx\xc2\xbb");
    for (int i = 0; i < srv_doc_units(d); i++)
        fake_translate(d, i, 0);
    char *out = render_ok(d, &m);
    char *s = entry_of(out, m, "OEBPS/text/ch1.xhtml");
    assert_true(well_formed(s));
    assert_memory_equal(s, ch, strstr(ch, "<html") - ch);          /* the DOCTYPE as it was */
    assert_non_null(strstr(s, "CAF\xc3\xa9\xc2\xa0" "AU LAIT \xe2\x80\x94 \xc2\xa9 &amp; \xc3\xa9T\xc3\xa9<!-- &foo; -->"));
    free(s);
    free(out);
    srv_doc_free(d);
    free(z);
    z = mkepub("<!DOCTYPE html PUBLIC \"-//W3C//DTD XHTML 1.1//EN\" \"x.dtd\"><html xmlns=\"http://www.w3.org/1999/"
               "xhtml\"><body><p>a &foo; b</p></body></html>", NULL, &n);
    parse_fails(SRV_DOC_EPUB, z, n, NULL, MT_ERR_INPUT, "OEBPS/text/ch1.xhtml is not well-formed XML");
    free(z);
}

static void test_zipformats_refused(void **state)
{
    size_t n;
    char *z;
    entry e[] = { { "[Content_Types].xml", CT, 0, 0 }, { "ppt/slides/slide1.xml", SLIDE, 0, 0 } };
    z = mkzip(e, 2, &n);
    parse_fails(SRV_DOC_PPTX, z, n, NULL, MT_ERR_INPUT, "not a pptx: the archive has no ppt/presentation.xml");
    free(z);
    entry f[] = { { "mimetype", "application/epub+zip", 0, 1 }, { "OEBPS/content.opf", OPF, 0, 0 } };
    z = mkzip(f, 2, &n);
    parse_fails(SRV_DOC_EPUB, z, n, NULL, MT_ERR_INPUT, "not an EPUB: the archive has no META-INF/container.xml");
    free(z);
    /* a spine document missing; a package that is not one */
    char *opf = strdup(OPF);
    memcpy(strstr(opf, "text/ch1.xhtml"), "text/ch9", 8);       /* "./text/../text/ch9.xhtml" */
    z = mkepub(NULL, opf, &n);
    parse_fails(SRV_DOC_EPUB, z, n, NULL, MT_ERR_INPUT, "the package's ./text/../text/ch9.xhtml is not in the archive");
    free(z);
    free(opf);
    z = mkepub(NULL, "<metadata/>", &n);
    parse_fails(SRV_DOC_EPUB, z, n, NULL, MT_ERR_INPUT, "OEBPS/content.opf is not an OPF package");
    free(z);
    /* XHTML that is not XML, an entity bomb, an undeclared entity, too deep */
    z = mkepub("<html xmlns=\"http://www.w3.org/1999/xhtml\"><body><p>open</body></html>", NULL, &n);
    parse_fails(SRV_DOC_EPUB, z, n, NULL, MT_ERR_INPUT, "OEBPS/text/ch1.xhtml is not well-formed XML");
    free(z);
    z = mkepub("<!DOCTYPE html [<!ENTITY a \"aaaaaaaaaa\"><!ENTITY b \"&a;&a;&a;&a;&a;&a;&a;&a;\">]><html "
               "xmlns=\"http://www.w3.org/1999/xhtml\"><body><p>&b;</p></body></html>", NULL, &n);
    parse_fails(SRV_DOC_EPUB, z, n, NULL, MT_ERR_INPUT, "OEBPS/text/ch1.xhtml has a DOCTYPE");
    free(z);
    z = mkepub("<html xmlns=\"http://www.w3.org/1999/xhtml\"><body><p>a&nbsp;b</p></body></html>", NULL, &n);
    parse_fails(SRV_DOC_EPUB, z, n, NULL, MT_ERR_INPUT, "OEBPS/text/ch1.xhtml is not well-formed XML");
    free(z);
    /* well-formed XML that HTML's parser rebuilds (a div closes the p): refused before any translation */
    z = mkepub("<html xmlns=\"http://www.w3.org/1999/xhtml\"><body><p>a<div>b</div>c</p></body></html>", NULL, &n);
    parse_fails(SRV_DOC_EPUB, z, n, NULL, MT_ERR_INPUT, "ch1.xhtml: its markup, read as HTML, cannot be written back");
    free(z);
    srv_doc_limits lim = srv_doc_default_limits();
    lim.max_depth = 8;
    z = mkepub("<html xmlns=\"http://www.w3.org/1999/xhtml\"><body><div><div><div><div><div><div><div><div><p>x"
               "</p></div></div></div></div></div></div></div></div></body></html>", NULL, &n);
    parse_fails(SRV_DOC_EPUB, z, n, &lim, MT_ERR_TOO_LONG, "OEBPS/text/ch1.xhtml");
    free(z);
    /* the limits: units, a part's bytes, the inflated total */
    z = mkepub(NULL, NULL, &n);
    lim = srv_doc_default_limits();
    lim.max_units = 5;
    parse_fails(SRV_DOC_EPUB, z, n, &lim, MT_ERR_TOO_LONG, "more than 5 translation units");
    lim = srv_doc_default_limits();
    lim.max_entries = 9;
    parse_fails(SRV_DOC_EPUB, z, n, &lim, MT_ERR_TOO_LONG, "the archive has 10 entries; the limit is 9");
    free(z);
    z = mkxlsx(&n);
    lim = srv_doc_default_limits();
    lim.max_xml_part = 300;
    parse_fails(SRV_DOC_XLSX, z, n, &lim, MT_ERR_TOO_LONG, "xl/sharedStrings.xml is 4");
    lim = srv_doc_default_limits();
    lim.max_inflated = 600;
    parse_fails(SRV_DOC_XLSX, z, n, &lim, MT_ERR_TOO_LONG, "max_inflated");
    free(z);
    z = mkpptx(&n);
    lim = srv_doc_default_limits();
    lim.max_unit_bytes = 20;
    parse_fails(SRV_DOC_PPTX, z, n, &lim, MT_ERR_TOO_LONG, "ppt/slides/slide1.xml: paragraph 2 is 33 bytes");
    free(z);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sniff),
        cmocka_unit_test(test_units),
        cmocka_unit_test(test_render_untranslated),
        cmocka_unit_test(test_docx_in_place),
        cmocka_unit_test(test_docx_reversed),
        cmocka_unit_test(test_odt_in_place),
        cmocka_unit_test(test_odt_reversed),
        cmocka_unit_test(test_docx_runs_follow_words),
        cmocka_unit_test(test_escaping),
        cmocka_unit_test(test_splice_keeps_bytes),
        cmocka_unit_test(test_docx_structure),
        cmocka_unit_test(test_not_a_zip),
        cmocka_unit_test(test_corrupt),
        cmocka_unit_test(test_missing_part),
        cmocka_unit_test(test_bad_xml),
        cmocka_unit_test(test_entity_bomb),
        cmocka_unit_test(test_zip_bomb),
        cmocka_unit_test(test_too_many_entries),
        cmocka_unit_test(test_xml_part_limit),
        cmocka_unit_test(test_depth),
        cmocka_unit_test(test_unit_limits),
        cmocka_unit_test(test_zipformats_sniff),
        cmocka_unit_test(test_pptx),
        cmocka_unit_test(test_xlsx),
        cmocka_unit_test(test_xlsx_rels),
        cmocka_unit_test(test_odp_ods),
        cmocka_unit_test(test_epub),
        cmocka_unit_test(test_epub_lang),
        cmocka_unit_test(test_epub_entities),
        cmocka_unit_test(test_zipformats_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
