/* markup_job: pages -> units -> pages (markup_job.h). */
#include "markup_job.h"

#include <stdlib.h>
#include <string.h>

#include "http/errors.h"

/* Page i's units and calls, HTML or XML. */
static int page_units(const srv_markup *m, int i)
{
    return m->xml ? srv_xmarkup_units(m->xml[i]) : srv_html_units(m->pages[i]);
}

static const char *page_unit(const srv_markup *m, int i, int k)
{
    return m->xml ? srv_xmarkup_unit(m->xml[i], k) : srv_html_unit(m->pages[i], k);
}

static mt_status parse_page(srv_markup *m, int i, const char *page, const srv_xml_tags *tags, int max_depth,
                            mt_err *err)
{
    if (m->xml)
        return srv_xmarkup_parse(page, strlen(page), tags, max_depth, &m->xml[i], err);
    return srv_html_parse_ignoring(page, strlen(page), max_depth, tags ? tags->ignore : NULL,
                                   tags ? tags->n_ignore : 0, &m->pages[i], err);
}

static int parse_all(srv_markup *m, const char *const *pages, int n, int xml, const srv_xml_tags *tags,
                     int max_depth, srv_response *resp)
{
    /* DeepL's words for XML it cannot read; then expat's */
    const char *why = xml ? "Tag handling parsing failed, please check input: " : "";
    memset(m, 0, sizeof *m);
    if (xml)
        m->xml = calloc((size_t)n + 1, sizeof *m->xml);
    else
        m->pages = calloc((size_t)n + 1, sizeof *m->pages);
    m->first = calloc((size_t)n + 1, sizeof *m->first);
    if ((!m->pages && !m->xml) || !m->first)
        return srv_fail(resp, SRV_E_INTERNAL, "out of memory");
    int total = 0;
    for (int i = 0; i < n; i++, m->n_pages++) {
        mt_err err = { 0 };
        mt_status st = parse_page(m, i, pages[i], tags, max_depth, &err);
        if (st == MT_ERR_NOMEM)
            return srv_fail(resp, SRV_E_INTERNAL, "out of memory");
        if (st != MT_OK)
            return n > 1 ? srv_fail(resp, SRV_E_BAD_REQUEST, "%stext %d: %s", why, i, err.msg)
                         : srv_fail(resp, SRV_E_BAD_REQUEST, "%s%s", why, err.msg);
        total += page_units(m, i);
    }
    m->units = malloc(sizeof *m->units * ((size_t)total + 1));
    if (!m->units)
        return srv_fail(resp, SRV_E_INTERNAL, "out of memory");
    for (int i = 0; i < n; i++) {
        m->first[i] = m->n_units;
        for (int k = 0; k < page_units(m, i); k++)
            m->units[m->n_units++] = page_unit(m, i, k);
    }
    m->first[n] = m->n_units;
    return 0;
}

int srv_markup_parse(srv_markup *m, const char *const *pages, int n, int max_depth, srv_response *resp)
{
    return parse_all(m, pages, n, 0, NULL, max_depth, resp);
}

int srv_markup_parse_tags(srv_markup *m, const char *const *pages, int n, int xml, const srv_xml_tags *tags,
                          int max_depth, srv_response *resp)
{
    return parse_all(m, pages, n, xml, tags, max_depth, resp);
}

static mt_status set_unit(srv_markup *m, int i, int k, const srv_tr_result *r, mt_err *err)
{
    size_t len = strlen(r->alts[0]);
    if (m->xml)
        return srv_xmarkup_set(m->xml[i], k, r->alts[0], len, r->words, r->n_words, err);
    return srv_html_set(m->pages[i], k, r->alts[0], len, r->words, r->n_words, err);
}

int srv_markup_render(srv_markup *m, const srv_tr_result *res, char **out, srv_response *resp)
{
    mt_err err = { 0 };
    for (int i = 0; i < m->n_pages; i++)
        out[i] = NULL;
    for (int i = 0; i < m->n_pages; i++) {
        for (int u = m->first[i]; u < m->first[i + 1]; u++)
            if (set_unit(m, i, u - m->first[i], &res[u], &err) != MT_OK)
                goto fail;
        size_t len;
        mt_status st = m->xml ? srv_xmarkup_render(m->xml[i], &out[i], &len, &err)
                              : srv_html_render(m->pages[i], &out[i], &len, &err);
        if (st != MT_OK)
            goto fail;
    }
    return 0;
fail:
    for (int i = 0; i < m->n_pages; i++) {
        free(out[i]);
        out[i] = NULL;
    }
    return srv_fail_mt(resp, &err);
}

void srv_markup_free(srv_markup *m)
{
    for (int i = 0; m->pages && i < m->n_pages; i++)
        srv_html_free(m->pages[i]);
    for (int i = 0; m->xml && i < m->n_pages; i++)
        srv_xmarkup_free(m->xml[i]);
    free(m->pages);
    free(m->xml);
    free(m->first);
    free(m->units);
    memset(m, 0, sizeof *m);
}
