/* markup_job: format "html" for the translate handlers (api/translate_api.c,
 * api/libretranslate_api.c, api/deepl_api.c) and the CLI; tag_handling "xml"
 * for api/deepl_api.c.
 *
 * The pages are parsed (markup/html.h, markup/xml.h) into their units, which are what the
 * pipeline translates, with word alignments (dp.alignments); the results go
 * back into the pages, whose markup is kept.  Units of every page are
 * translated together, in one decode job.
 */
#ifndef SRV_MARKUP_JOB_H
#define SRV_MARKUP_JOB_H

#include "http/request.h"
#include "markup/html.h"
#include "markup/xml.h"
#include "translate/pipeline.h"

typedef struct {
    srv_html   **pages;      /* [n_pages] HTML, or NULL ... */
    srv_xmarkup **xml;       /* ... [n_pages] XML */
    int          n_pages;
    const char **units;      /* [n_units] the texts to translate, page after page */
    int         *first;      /* [n_pages + 1] page i's units are [first[i], first[i + 1]) */
    int          n_units;
} srv_markup;

/* Parses pages[0..n) (they must outlive m).  0, or -1 with resp failed: 400
 * for a page nested deeper than max_depth. */
int  srv_markup_parse(srv_markup *m, const char *const *pages, int n, int max_depth, srv_response *resp);
/* The same with DeepL's tag lists: xml 0, HTML pages with tags->ignore
 * (srv_html_parse_ignoring; the other lists are not read); xml 1, XML
 * fragments (markup/xml.h), 400 "Tag handling parsing failed, ..." with
 * expat's message for one that is not well-formed. */
int  srv_markup_parse_tags(srv_markup *m, const char *const *pages, int n, int xml, const srv_xml_tags *tags,
                           int max_depth, srv_response *resp);
/* res[0..n_units) (with their word links) back into the pages: out[0..n_pages)
 * malloc'd strings.  0, or -1 with resp failed (out of memory). */
int  srv_markup_render(srv_markup *m, const srv_tr_result *res, char **out, srv_response *resp);
void srv_markup_free(srv_markup *m);

#endif
