/* xml_check: the markup of an XML fragment, for test_xml_markup.c and
 * fuzz_xml.c: read by xml_tree.c directly (not by markup/xml.c, which is what
 * they test), every start tag, end tag, comment, PI and CDATA section as its
 * bytes, in document order and nesting; text left out. */
#ifndef XML_CHECK_H
#define XML_CHECK_H

#include <stdlib.h>
#include <string.h>

#include "markup/xml_tree.h"
#include "util/strbuf.h"

static void xml_skeleton_node(const char *buf, const srv_xml_node *n, mt_sbuf *out)
{
    if (n->type == SRV_XML_TEXT && !n->cdata)
        return;
    if (n->type != SRV_XML_ELEMENT) {
        mt_sb_add(out, buf + n->start, n->end - n->start);
        return;
    }
    mt_sb_add(out, buf + n->start, n->tag_end - n->start);
    for (const srv_xml_node *c = n->children; c; c = c->next)
        xml_skeleton_node(buf, c, out);
    mt_sb_add(out, buf + n->content_end, n->end - n->content_end);
    mt_sb_add(out, "|", 1);
}

/* s[0..n)'s skeleton (malloc'd), or NULL when it is not a well-formed
 * fragment.  A byte order mark and an XML declaration stay before the root
 * put around it. */
static char *xml_skeleton(const char *s, size_t n)
{
    size_t pre = n >= 3 && !memcmp(s, "\xef\xbb\xbf", 3) ? 3 : 0;
    if (n - pre >= 6 && !memcmp(s + pre, "<?xml", 5) && strchr(" \t\r\n", s[pre + 5]) && s[pre + 5]) {
        const char *e = memmem(s + pre, n - pre, "?>", 2);
        pre = e ? (size_t)(e - s) + 2 : pre;
    }
    mt_sbuf w = { 0 }, out = { 0 };
    mt_sb_add(&w, s, pre);
    mt_sb_add(&w, "<R>", 3);
    mt_sb_add(&w, s + pre, n - pre);
    mt_sb_add(&w, "</R>", 4);
    srv_xml_doc *d = NULL;
    mt_err err = { 0 };
    if (srv_xml_parse_flags("out", w.p, w.n, 300, SRV_XML_KEEP_MISC, &d, &err) == MT_OK) {
        xml_skeleton_node(w.p, srv_xml_root(d), &out);
        mt_sb_add(&out, "", 0);
    }
    srv_xml_free(d);
    free(w.p);
    return out.p;
}

#endif
