/* doc_parts: an archive of XML parts whose text is translated (private to
 * server/document): the machinery of doc_office.c (docx, odt, pptx, xlsx,
 * odp, ods), which doc_epub.c drives with parts of its own kinds.
 *
 *   srv_parts_new   an empty set of parts over the archive's bytes
 *   srv_parts_add   one entry of the archive read, its units collected by
 *                   the rules of its kind (srv_part_kind)
 *   srv_parts_format's calls  units, set, render, free, target: render writes
 *                   again only the parts with a translated unit (or, for the
 *                   package of an EPUB, a target language), their own bytes
 *                   with the changed text spliced in (markup/xml_tree.h),
 *                   every other entry copied (doc_zip.h)
 *
 * SRV_PART_XHTML is a document through the HTML path (markup/html.h); the
 * XHTML side of it, that it goes in as XML and comes out as XML, is
 * doc_epub.c's (srv_xhtml_*).
 */
#ifndef SRV_DOC_PARTS_H
#define SRV_DOC_PARTS_H

#include "doc_format.h"
#include "doc_zip.h"

typedef enum {
    SRV_PART_DOCX,          /* w:p paragraphs */
    SRV_PART_ODT_CONTENT,   /* text:p, text:h */
    SRV_PART_ODT_STYLES,    /* text:p, text:h inside office:master-styles */
    SRV_PART_PPTX,          /* a:p paragraphs (slides, notes; their tables) */
    SRV_PART_XLSX,          /* shared strings' si, a sheet's inline strings (is) */
    SRV_PART_ODS_CONTENT,   /* text:p, text:h of cells of office:value-type "string" */
    SRV_PART_OPF,           /* an EPUB package: dc:title, dc:description; dc:language set */
    SRV_PART_NCX,           /* an EPUB 2 table of contents: docTitle and navLabel texts */
    SRV_PART_XHTML          /* an EPUB's XHTML document (spine, EPUB 3 navigation) */
} srv_part_kind;

typedef struct srv_parts srv_parts;

/* data[0..len) must outlive the result.  MT_OK or MT_ERR_NOMEM. */
mt_status srv_parts_new(srv_doc_kind kind, const char *data, size_t len, const srv_doc_limits *lim,
                        srv_parts **out, mt_err *err);
/* Entry `entry` of z (the archive of srv_parts_new) as a part of kind pk
 * (an entry added before is not added again).  MT_OK, or a failure with err
 * (its XML bad, over a limit).  A sheet without inline strings is left
 * out. */
mt_status srv_parts_add(srv_parts *o, srv_zip *z, int entry, srv_part_kind pk, mt_err *err);

/* srv_doc_format's calls on a srv_parts (state). */
int         srv_parts_units(const void *state);
const char *srv_parts_unit(const void *state, int i);
mt_status   srv_parts_set(void *state, int i, const char *text, size_t len, const long *links, int n_links,
                          mt_err *err);
mt_status   srv_parts_render(const void *state, char **out, size_t *len, mt_err *err);
void        srv_parts_free(void *state);
void        srv_parts_target(void *state, const char *lang);

/* doc_epub.c: an XHTML document through markup/html.h. */
typedef struct srv_xhtml srv_xhtml;
/* xml[0..len) (named name, kept: it must outlive the result) checked as XML
 * and parsed as HTML, then written once untranslated and read again as XML.
 * MT_OK and *out; MT_ERR_INPUT (not well-formed XML, or markup HTML's parser
 * rebuilds, so that it could not be written back as XML: a <div> in a <p>),
 * MT_ERR_TOO_LONG (a limit), MT_ERR_NOMEM. */
mt_status   srv_xhtml_open(const char *name, const char *xml, size_t len, const srv_doc_limits *lim,
                           srv_xhtml **out, mt_err *err);
void        srv_xhtml_free(srv_xhtml *x);
int         srv_xhtml_units(const srv_xhtml *x);
const char *srv_xhtml_unit(const srv_xhtml *x, int i);
mt_status   srv_xhtml_set(srv_xhtml *x, int i, const char *text, size_t len, const long *links, int n_links,
                          mt_err *err);
/* The document with its translations, well-formed XML (else MT_ERR_INTERNAL
 * naming it), the root's lang and xml:lang, those it has, set to lang (NULL:
 * kept): malloc'd. */
mt_status   srv_xhtml_render(const srv_xhtml *x, const char *lang, char **out, size_t *len, mt_err *err);
/* Whether the root has a lang or xml:lang (which a target language changes). */
int         srv_xhtml_has_lang(const srv_xhtml *x);

/* doc_epub.c: a DOCTYPE that declares nothing (no internal subset, as XHTML
 * and NCX files have) blanked out in xml[0..len) with spaces, so that every
 * offset stays, for markup/xml_tree.h, which refuses any DOCTYPE: *saved its
 * bytes (malloc'd, NUL-terminated) and *at their offset, to be put back in
 * what srv_xml_write makes of it (nothing before the root changes).  *saved
 * NULL: none, or one with an internal subset, left for xml_tree to refuse.
 * 0, or -1 out of memory. */
int         srv_xml_mask_doctype(char *xml, size_t len, size_t *at, char **saved);

#endif
