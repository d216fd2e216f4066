/* doc_html: an HTML file (document.h, format html): markup/html.h's units,
 * a document or a fragment, the nesting limit srv_doc_limits.max_depth. */
#include <stdlib.h>

#include "doc_format.h"
#include "markup/html.h"

static mt_status html_parse(srv_doc_kind kind, const char *data, size_t len, const srv_doc_limits *lim,
                            const srv_doc_options *opt, void **state, mt_err *err)
{
    srv_html *h = NULL;
    mt_status st = srv_html_parse(data, len, lim->max_depth, &h, err);
    if (st == MT_OK)
        *state = h;
    return st;
}

static int html_units(const void *state) { return srv_html_units(state); }
static const char *html_unit(const void *state, int i) { return srv_html_unit(state, i); }

static mt_status html_set(void *state, int i, const char *text, size_t len, const long *links, int n_links,
                          mt_err *err)
{
    return srv_html_set(state, i, text, len, links, n_links, err);
}

static mt_status html_render(const void *state, char **out, size_t *len, mt_err *err)
{
    return srv_html_render(state, out, len, err);
}

static void html_free(void *state) { srv_html_free(state); }

const srv_doc_format srv_doc_html_format = { html_parse, html_units, html_unit, html_set, html_render, html_free, NULL };
