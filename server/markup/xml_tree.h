/* xml_tree: the XML layer of docx, odt and Android strings.xml
 * (server/document/doc_office.c, doc_android.c) and of tag_handling "xml"
 * (markup/xml.c), on expat: a read-only tree of a part, and the part again
 * with some text changed and every other byte as it was.
 *
 *   srv_xml_parse     a part's bytes -> its elements and text nodes, each with
 *                     the byte range it came from
 *   srv_xml_set_text  record: a text node's characters replaced
 *   srv_xml_add_text  record: characters appended to an element with no text
 *   srv_xml_set_attr  record: an attribute of an element set (added or changed)
 *   srv_xml_write     the source bytes with the recorded changes spliced in:
 *                     the XML declaration, names, prefixes, attribute quoting,
 *                     comments, character references of untouched text all
 *                     kept byte for byte
 *
 * Why not a general tree and serializer: the formats only ever change text,
 * so splicing keeps the part exactly as its writer made it; and expat needs
 * nothing beyond libc, where Debian's libxml2 brings ICU, 33 MB of the image
 * (docker/README.md).
 *
 * Safety: a DOCTYPE stops the parse (neither format has one: no entity can be
 * declared, so none can expand; expat fetches nothing); nesting is bounded by
 * max_depth and by SRV_XML_MAX_DEPTH; the bytes are read as UTF-8 whatever
 * they declare, and a part declaring another encoding is refused (both
 * formats write UTF-8).  Namespaces are resolved here (expat's namespace
 * processing off): an element's prefix as its nearest xmlns:prefix binds it,
 * an unbound prefix giving no namespace rather than an error. */
#ifndef SRV_XML_TREE_H
#define SRV_XML_TREE_H

#include <stddef.h>

#include "util/status.h"

/* The nesting a part may never exceed, whatever max_depth says: the walks
 * over the tree recurse once per level. */
#define SRV_XML_MAX_DEPTH 256

/* SRV_XML_MISC: a comment or a processing instruction, only with
 * SRV_XML_KEEP_MISC (the office formats do without them). */
typedef enum { SRV_XML_ELEMENT, SRV_XML_TEXT, SRV_XML_MISC } srv_xml_type;

/* srv_xml_parse_flags: comments and processing instructions kept as nodes. */
#define SRV_XML_KEEP_MISC 1

typedef struct srv_xml_node srv_xml_node;
struct srv_xml_node {
    srv_xml_type  type;
    srv_xml_node *parent, *children, *last, *next;
    const char   *ns;           /* element: its namespace name ("" for none) */
    const char   *name;         /* element: its local name */
    const char   *text;         /* text: its characters, decoded, NUL-terminated */
    size_t        text_len;
    size_t        start, end;   /* source bytes: an element from its "<" to past its end tag; a text
                                   node's characters as written (a CDATA section whole); a misc node whole */
    int           cdata;        /* text: a CDATA section (its own node, never merged with the text around) */
    int           mark;         /* the reader's own (0 after the parse): markup/xml.c's kind of a node */
    size_t        tag_end;      /* element: past its start tag */
    size_t        content_end;  /* element: where its end tag starts (tag_end for an empty tag) */
};

typedef struct srv_xml_doc srv_xml_doc;

/* xml[0..len) must outlive the result.  name is the part's, for messages.
 * MT_OK and *out; MT_ERR_INPUT (not well-formed, with its line; a DOCTYPE; an
 * encoding other than UTF-8), MT_ERR_TOO_LONG (nesting deeper than max_depth
 * or SRV_XML_MAX_DEPTH), MT_ERR_NOMEM. */
mt_status           srv_xml_parse(const char *name, const char *xml, size_t len, int max_depth, srv_xml_doc **out,
                                  mt_err *err);
/* The same, with flags (SRV_XML_KEEP_MISC). */
mt_status           srv_xml_parse_flags(const char *name, const char *xml, size_t len, int max_depth, int flags,
                                        srv_xml_doc **out, mt_err *err);
void                srv_xml_free(srv_xml_doc *d);
const srv_xml_node *srv_xml_root(const srv_xml_doc *d);

/* Attribute qname (as written, with its prefix) of element el: its value as
 * written (character references not decoded) and *n its length, or NULL. */
const char         *srv_xml_attr(const srv_xml_doc *d, const srv_xml_node *el, const char *qname, size_t *n);

/* Changes, recorded against the source bytes (escaped as needed; s is UTF-8
 * XML can hold).  Each node is changed at most once.  0, or -1 out of memory. */
int srv_xml_set_text(srv_xml_doc *d, const srv_xml_node *text, const char *s, size_t n);
int srv_xml_add_text(srv_xml_doc *d, const srv_xml_node *el, const char *s, size_t n);
int srv_xml_set_attr(srv_xml_doc *d, const srv_xml_node *el, const char *qname, const char *value);

/* The source with every recorded change: malloc'd, NUL-terminated (not
 * counted in *len). */
mt_status srv_xml_write(const srv_xml_doc *d, char **out, size_t *len, mt_err *err);

#endif
