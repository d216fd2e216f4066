/* test_xml_tree: the XML tree on expat under docx, odt and tag_handling "xml" (server/markup/xml_tree.c)
 * directly: namespaces resolved by hand (prefixes rebound, default namespace,
 * an unbound prefix), the byte range of each node, text decoded (references,
 * CDATA, CRLF), and the writer: a text node replaced, text added to <a/> and
 * to <a></a>, an attribute added, changed or left when it already holds the
 * value, escaping; every byte not changed kept.  Then the refusals: DOCTYPE,
 * nesting (max_depth and the layer's own bound), another encoding, broken XML.
 * Comments and PIs kept as nodes on request (markup/xml.c), CDATA marked.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "markup/xml_tree.h"
#include "util/strbuf.h"

static srv_xml_doc *parse_ok(const char *xml)
{
    srv_xml_doc *d = NULL;
    mt_err err = { 0 };
    mt_status st = srv_xml_parse("part.xml", xml, strlen(xml), 64, &d, &err);
    if (st != MT_OK)
        fprintf(stderr, "parse: %s\n", err.msg);
    assert_int_equal(st, MT_OK);
    assert_non_null(d);
    return d;
}

static void parse_fails(const char *xml, int max_depth, mt_status want, const char *msg)
{
    srv_xml_doc *d = NULL;
    mt_err err = { 0 };
    assert_int_equal(srv_xml_parse("word/x.xml", xml, strlen(xml), max_depth, &d, &err), want);
    assert_null(d);
    if (!strstr(err.msg, msg))
        fprintf(stderr, "message \"%s\" lacks \"%s\"\n", err.msg, msg);
    assert_non_null(strstr(err.msg, msg));
}

static char *write_ok(const srv_xml_doc *d)
{
    char *out = NULL;
    size_t len = 0;
    mt_err err = { 0 };
    assert_int_equal(srv_xml_write(d, &out, &len, &err), MT_OK);
    assert_int_equal(strlen(out), len);
    return out;
}

/* The i-th child (elements and text nodes counted). */
static const srv_xml_node *child(const srv_xml_node *n, int i)
{
    const srv_xml_node *c = n->children;
    while (c && i--)
        c = c->next;
    assert_non_null(c);
    return c;
}

static void test_tree(void **state)
{
    const char *xml = "<?xml version='1.0'?>\r\n<r xmlns='urn:d' xmlns:p='urn:p1'>"
                      "<p:a>x &amp; &#x41;&#66;\r\nz</p:a>"
                      "<b xmlns:p='urn:p2'><p:c/></b><p:d/><q:e/>"
                      "<f>one<!-- c -->two<![CDATA[<three>]]><?pi x?>four</f></r>";
    srv_xml_doc *d = parse_ok(xml);
    const srv_xml_node *r = srv_xml_root(d);
    assert_int_equal(r->type, SRV_XML_ELEMENT);
    assert_string_equal(r->ns, "urn:d");
    assert_string_equal(r->name, "r");
    assert_null(r->parent);
    assert_int_equal(r->start, strstr(xml, "<r ") - xml);
    assert_int_equal(r->end, strlen(xml));
    const srv_xml_node *a = child(r, 0);
    assert_string_equal(a->ns, "urn:p1");
    assert_string_equal(a->name, "a");
    assert_ptr_equal(a->parent, r);
    const srv_xml_node *t = child(a, 0);
    assert_int_equal(t->type, SRV_XML_TEXT);
    assert_string_equal(t->text, "x & AB\nz");                /* references decoded, CRLF one newline */
    assert_int_equal(t->text_len, 8);
    assert_int_equal(t->end - t->start, strlen("x &amp; &#x41;&#66;\r\nz"));
    assert_memory_equal(xml + t->start, "x &amp;", 7);
    assert_null(t->next);
    /* p rebound inside b, back outside it */
    const srv_xml_node *b = child(r, 1);
    assert_string_equal(child(b, 0)->ns, "urn:p2");
    assert_string_equal(child(r, 2)->ns, "urn:p1");
    /* an unbound prefix: no namespace, not an error */
    assert_string_equal(child(r, 3)->ns, "");
    assert_string_equal(child(r, 3)->name, "e");
    /* an empty tag: its start tag is all of it */
    const srv_xml_node *pd = child(r, 2);
    assert_int_equal(pd->tag_end, pd->end);
    assert_int_equal(pd->content_end, pd->end);
    assert_memory_equal(xml + pd->start, "<p:d/>", pd->end - pd->start);
    /* a comment and a PI end a text node; a CDATA section is one of its own */
    const srv_xml_node *f = child(r, 4);
    const char *want[] = { "one", "two", "<three>", "four" };
    const srv_xml_node *c = f->children;
    for (int i = 0; i < 4; i++, c = c->next) {
        assert_int_equal(c->type, SRV_XML_TEXT);
        assert_string_equal(c->text, want[i]);
    }
    assert_null(c);
    assert_memory_equal(xml + child(f, 2)->start, "<![CDATA[<three>]]>", child(f, 2)->end - child(f, 2)->start);
    /* nothing recorded: the bytes as they came */
    char *out = write_ok(d);
    assert_string_equal(out, xml);
    free(out);
    srv_xml_free(d);
}

static void test_write(void **state)
{
    const char *xml = "<?xml version=\"1.0\" encoding=\"UTF-8\" standalone=\"yes\"?>\n"
                      "<w:d xmlns:w=\"urn:w\">\r\n"
                      "<w:t>old</w:t><w:t a='1' />"
                      "<w:t xml:space = 'default'></w:t><w:t xml:space=\"preserve\">k</w:t>"
                      "<w:t><![CDATA[cd]]></w:t><w:t>same &#233;</w:t></w:d>\r\n";
    srv_xml_doc *d = parse_ok(xml);
    const srv_xml_node *r = srv_xml_root(d);
    const srv_xml_node *t0 = child(r, 1), *t1 = child(r, 2), *t2 = child(r, 3), *t3 = child(r, 4), *t4 = child(r, 5);
    assert_string_equal(child(r, 0)->text, "\n");             /* the CRLF between tags, a text node */
    assert_int_equal(srv_xml_set_text(d, child(t0, 0), "a<b>&c\r\"'", 9), 0);
    assert_int_equal(srv_xml_add_text(d, t1, " new", 4), 0);
    assert_int_equal(srv_xml_set_attr(d, t1, "xml:space", "preserve"), 0);
    assert_int_equal(srv_xml_add_text(d, t2, "in", 2), 0);
    assert_int_equal(srv_xml_set_attr(d, t2, "xml:space", "pre\"serve"), 0);
    assert_int_equal(srv_xml_set_attr(d, t3, "xml:space", "preserve"), 0);      /* already: nothing */
    assert_int_equal(srv_xml_set_text(d, child(t4, 0), "]]>", 3), 0);
    char *out = write_ok(d);
    const char *want = "<?xml version=\"1.0\" encoding=\"UTF-8\" standalone=\"yes\"?>\n"
                             "<w:d xmlns:w=\"urn:w\">\r\n"
                             "<w:t>a&lt;b&gt;&amp;c&#13;\"'</w:t><w:t a='1' xml:space=\"preserve\" > new</w:t>"
                             "<w:t xml:space = 'pre\"serve'>in</w:t><w:t xml:space=\"preserve\">k</w:t>"
                             "<w:t>]]&gt;</w:t><w:t>same &#233;</w:t></w:d>\r\n";
    assert_string_equal(out, want);
    /* read again: the characters written */
    srv_xml_doc *e = parse_ok(out);
    const srv_xml_node *s = srv_xml_root(e);
    assert_string_equal(child(child(s, 1), 0)->text, "a<b>&c\r\"'");
    assert_string_equal(child(child(s, 2), 0)->text, " new");
    assert_string_equal(child(child(s, 3), 0)->text, "in");
    assert_string_equal(child(child(s, 5), 0)->text, "]]>");
    assert_string_equal(child(child(s, 6), 0)->text, "same \xc3\xa9");
    srv_xml_free(e);
    free(out);
    /* a second write of the same changes: the same bytes */
    char *again = write_ok(d);
    assert_string_equal(again, want);
    free(again);
    srv_xml_free(d);
    /* <a/> with no attribute: the attribute before the "/>" that becomes the content */
    d = parse_ok("<a><b/></a>");
    const srv_xml_node *bb = child(srv_xml_root(d), 0);
    assert_int_equal(srv_xml_add_text(d, bb, "x", 1), 0);
    assert_int_equal(srv_xml_set_attr(d, bb, "xml:space", "preserve"), 0);
    out = write_ok(d);
    assert_string_equal(out, "<a><b xml:space=\"preserve\">x</b></a>");
    free(out);
    srv_xml_free(d);
}

/* SRV_XML_KEEP_MISC: comments and PIs inside the root are nodes with their
 * bytes; CDATA sections are text nodes marked; without the flag, neither. */
static void test_misc_and_cdata(void **state)
{
    (void)state;
    const char *xml = "<?xml version=\"1.0\"?><!-- out --><r>a<!-- c -->b<?pi  x y?><![CDATA[<d>]]>e</r>";
    const char *want[] = { "a", "<!-- c -->", "b", "<?pi  x y?>", "<![CDATA[<d>]]>", "e" };
    const srv_xml_type types[] = { SRV_XML_TEXT, SRV_XML_MISC, SRV_XML_TEXT, SRV_XML_MISC, SRV_XML_TEXT, SRV_XML_TEXT };
    srv_xml_doc *d = NULL;
    mt_err err = { 0 };
    assert_int_equal(srv_xml_parse_flags("m.xml", xml, strlen(xml), 8, SRV_XML_KEEP_MISC, &d, &err), MT_OK);
    const srv_xml_node *r = srv_xml_root(d);
    int k = 0;
    for (const srv_xml_node *c = r->children; c; c = c->next, k++) {
        assert_true(k < 6);
        assert_int_equal(c->type, types[k]);
        assert_int_equal(c->end - c->start, strlen(want[k]));
        assert_memory_equal(xml + c->start, want[k], strlen(want[k]));
        assert_int_equal(c->cdata, k == 4);
    }
    assert_int_equal(k, 6);
    assert_string_equal(child(r, 4)->text, "<d>");
    srv_xml_free(d);
    d = parse_ok(xml);                              /* without the flag: a, b, the CDATA, e */
    r = srv_xml_root(d);
    k = 0;
    for (const srv_xml_node *c = r->children; c; c = c->next)
        assert_int_equal(c->type, SRV_XML_TEXT), k++;
    assert_int_equal(k, 4);
    srv_xml_free(d);
}

static void test_refused(void **state)
{
    parse_fails("<!DOCTYPE a [<!ENTITY e 'x'>]><a>&e;</a>", 64, MT_ERR_INPUT, "word/x.xml has a DOCTYPE");
    parse_fails("<a><b><c/></b></a>", 2, MT_ERR_TOO_LONG, "word/x.xml: XML nesting deeper than 2 (max_depth)");
    mt_sbuf sb = { 0 };
    for (int i = 0; i < SRV_XML_MAX_DEPTH + 1; i++)
        mt_sb_add(&sb, "<a>", 3);
    for (int i = 0; i < SRV_XML_MAX_DEPTH + 1; i++)
        mt_sb_add(&sb, "</a>", 4);
    parse_fails(sb.p, 100000, MT_ERR_TOO_LONG, "XML nesting deeper than 256 (the XML layer's bound)");
    free(sb.p);
    parse_fails("<?xml version='1.0' encoding='UTF-16'?><a/>", 64, MT_ERR_INPUT, "declares the encoding UTF-16");
    parse_fails("<a>\n<b></a>", 64, MT_ERR_INPUT, "word/x.xml is not well-formed XML (line 2)");
    parse_fails("<a>&nbsp;</a>", 64, MT_ERR_INPUT, "undefined entity");
    parse_fails("", 64, MT_ERR_INPUT, "word/x.xml is not well-formed XML");
    parse_fails("<a>\xff</a>", 64, MT_ERR_INPUT, "not well-formed");
    /* a declared UTF-8 in any case, and a UTF-8 byte order mark: read */
    srv_xml_doc *d = parse_ok("\xef\xbb\xbf<?xml version='1.0' encoding='utf-8'?><a>\xc3\xa9</a>");
    assert_string_equal(child(srv_xml_root(d), 0)->text, "\xc3\xa9");
    srv_xml_free(d);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_tree),
        cmocka_unit_test(test_write),
        cmocka_unit_test(test_misc_and_cdata),
        cmocka_unit_test(test_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
