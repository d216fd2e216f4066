/* xml: translating XML with its markup kept (DeepL's tag_handling "xml").
 *
 *   srv_xmarkup_parse   the text -> its translation units (plain texts)
 *   (the caller translates each unit as plain text, with word alignments)
 *   srv_xmarkup_set     unit i's translation and its word links
 *   srv_xmarkup_render  the text again, each unit replaced by its translation
 *                       with its inline tags put back around the aligned words
 *
 * Parsing.  The text is an XML fragment: it is parsed by expat (xml_tree.h,
 * comments and processing instructions kept) inside a root of ours, so that
 * several elements, or text and elements, may stand side by side; an XML
 * declaration at its start stays before that root.  Not well-formed XML, a
 * DOCTYPE, an encoding other than UTF-8, nesting deeper than max_depth:
 * refused, with expat's message and line.  Names are case-sensitive and
 * matched as written (prefix included: "x:b" is not "b").
 *
 * Units (as html.h's, by other rules).  An element is
 *   ignored      (its name in tags.ignore): never translated; inside a
 *                sentence a point kept byte for byte at the place the
 *                alignment gives, like a comment, a processing instruction or
 *                a CDATA section (none of which is translated either);
 *   splitting    (tags.splitting): a block, its text a unit of its own;
 *   non-splitting (tags.non_splitting): inline, inside its sentence;
 *   any other    with outline detection (tags.outline, DeepL's default): inline
 *                when it stands in text (its parent, or an inline ancestor up to
 *                the nearest block, has characters of its own beside it), a block
 *                when it holds only elements and whitespace or stands among
 *                elements only; without it: inline.
 * An element meant to be inline that holds a block is a block (a sentence
 * cannot hold a unit boundary).  A unit's text: its characters decoded
 * (references, &amp;), whitespace runs made one space, trimmed.  Attributes
 * are never translated.
 *
 * Inline tags are placed as html.h says (inline.h, shared with html.c).
 *
 * The output: every byte not translated is the input's own (declaration,
 * tags with their attributes and quoting, comments, PIs, CDATA, entities and
 * whitespace outside the units); a translated unit is its whitespace before
 * and after as it was, the translation escaped (&amp; &lt; &gt;) and its
 * inline elements' start and end tags as written.  A unit without a
 * translation is written as its source bytes: no translation, same bytes.
 */
#ifndef SRV_XML_MARKUP_H
#define SRV_XML_MARKUP_H

#include <stddef.h>

#include "util/status.h"

/* DeepL's tag lists and outline detection. */
typedef struct {
    const char *const *ignore;          /* [n_ignore] element names, as written */
    int                n_ignore;
    const char *const *splitting;
    int                n_splitting;
    const char *const *non_splitting;
    int                n_non_splitting;
    int                outline;         /* 1: structure detected (see above); 0: only splitting ones split */
} srv_xml_tags;

typedef struct srv_xmarkup srv_xmarkup;

/* Parses src[0..len) (kept: it must outlive the result).  MT_OK and *out;
 * MT_ERR_INPUT (not well-formed, with the line; a DOCTYPE; another
 * encoding), MT_ERR_TOO_LONG (nesting deeper than max_depth), MT_ERR_NOMEM. */
mt_status   srv_xmarkup_parse(const char *src, size_t len, const srv_xml_tags *tags, int max_depth,
                              srv_xmarkup **out, mt_err *err);
void        srv_xmarkup_free(srv_xmarkup *x);

/* The units to translate: never blank. */
int         srv_xmarkup_units(const srv_xmarkup *x);
const char *srv_xmarkup_unit(const srv_xmarkup *x, int i);

/* As srv_html_set (html.h). */
mt_status   srv_xmarkup_set(srv_xmarkup *x, int i, const char *text, size_t len, const long *links, int n_links,
                            mt_err *err);
/* The text with every unit set so far translated: malloc'd, NUL-terminated,
 * *len its length.  MT_OK or MT_ERR_NOMEM. */
mt_status   srv_xmarkup_render(const srv_xmarkup *x, char **out, size_t *len, mt_err *err);

#endif
