/* html: translating HTML with its markup kept.
 *
 *   srv_html_parse   the page -> its translation units (plain texts)
 *   (the caller translates each unit as plain text, with word alignments)
 *   srv_html_set     unit i's translation and its word links
 *   srv_html_render  the page again, each unit replaced by its translation
 *                    with its inline tags put back around the aligned words
 *
 * Parsing is gumbo's (HTML5, as browsers do).  A page is a fragment unless it
 * starts with a doctype or <html>.
 *
 * Units.  Block elements (p, li, td, h1-h6, div, br, and every element not
 * listed below) separate units; inline elements (a, b, i, em, strong, span,
 * code, sub, sup, q, small, mark, ...: INLINE in html.c) stay inside their
 * sentence.  A unit's text is its text content, HTML whitespace runs made one
 * space, trimmed, entities decoded.  The title, alt and placeholder attributes
 * are units of their own.
 *
 * The <title> is a unit like a block's text.  A fragment that gumbo's
 * fragment parser would leave HTML inside svg or math (its older rule) is
 * parsed as a document's body instead, as browsers and html5lib read it.
 *
 * Not translated, kept byte for byte: script, style, pre, textarea, svg,
 * math, template (and the like: OPAQUE in html.c), elements with
 * translate="no" or class "notranslate" and everything inside them, comments,
 * the doctype, and every other attribute value.  Such an element inside a
 * sentence (an inline <code class="notranslate">, an <img>, a comment) is
 * left out of the unit's text and put back at the place the alignment gives.
 *
 * Inline tags.  Each inline element wraps the best-scoring run of target
 * words aligned to the source words it wrapped (html.c: best_run); an element
 * whose words have no link wraps the target words between its neighbours'
 * (at least one word); an element that held no word goes after the target
 * word aligned to the source word before it (at the start or the end when it
 * was there).  Nesting and sibling order are never changed: an element's range
 * is clamped inside its parent's and after its previous sibling's.  So the
 * output always parses to exactly the input's elements, and its text content
 * is each unit's translation, whatever the alignment says.
 *
 * The output: elements as written (their original start and end tags, the
 * translated attributes spliced in), end tags the parser implied written out,
 * text escaped (&amp; &lt; &gt;).  A unit without translation is written as
 * its source.
 */
#ifndef SRV_HTML_H
#define SRV_HTML_H

#include <stddef.h>

#include "util/status.h"

typedef struct srv_html srv_html;

/* The CPU time a parse may take.  HTML5 tree building is quadratic on nested
 * or misnested markup (html.c says where); an ordinary page of 1 MB parses in
 * ~60 ms on this project's machines, so the budget refuses only markup built to
 * be slow, and bounds what one request can cost a server thread. */
#define SRV_HTML_PARSE_CPU_MS 1000

/* Parses src[0..len) (kept: it must outlive the result).  max_depth: the
 * deepest element nesting accepted (a deeper page: MT_ERR_TOO_LONG, naming
 * the limit); a parse over SRV_HTML_PARSE_CPU_MS of the calling thread's CPU
 * time: MT_ERR_TOO_LONG; a NUL byte: MT_ERR_INPUT.  MT_OK and *out, or a
 * failure with err. */
mt_status   srv_html_parse(const char *src, size_t len, int max_depth, srv_html **out, mt_err *err);
/* The same, with DeepL's ignore_tags: elements of these names (any case) and
 * everything inside them never translated, as translate="no" is, and placed
 * as a point (an opaque item) wherever they stand, a block among them. */
mt_status   srv_html_parse_ignoring(const char *src, size_t len, int max_depth, const char *const *ignore,
                                    int n_ignore, srv_html **out, mt_err *err);
void        srv_html_free(srv_html *h);

/* The units to translate: never blank. */
int         srv_html_units(const srv_html *h);
const char *srv_html_unit(const srv_html *h, int i);

/* Unit i's translation text[0..len) and its word links [n_links][4]: source
 * [start, end) in the unit's text, target [start, end) in text, in code
 * points (the pipeline's srv_tr_result.words).  Copied.  MT_OK, or
 * MT_ERR_NOMEM / MT_ERR_INPUT (i out of range). */
mt_status   srv_html_set(srv_html *h, int i, const char *text, size_t len, const long *links, int n_links,
                         mt_err *err);

/* The page with every unit set so far translated: malloc'd, NUL-terminated,
 * *len its length.  MT_OK or MT_ERR_NOMEM. */
mt_status   srv_html_render(const srv_html *h, char **out, size_t *len, mt_err *err);

#endif
