/* markup_job: pages -> units -> pages (markup_job.h). */
#include "markup_job.h"

#include <stdlib.h>
#include <string.h>

#include "http/errors.h"

int srv_markup_parse(srv_markup *m, const char *const *pages, int n, int max_depth, srv_response *resp)
{
    memset(m, 0, sizeof *m);
    m->pages = calloc((size_t)n + 1, sizeof *m->pages);
    m->first = calloc((size_t)n + 1, sizeof *m->first);
    if (!m->pages || !m->first)
        return srv_fail(resp, SRV_E_INTERNAL, "out of memory");
    int total = 0;
    for (int i = 0; i < n; i++, m->n_pages++) {
        mt_err err = { 0 };
        mt_status st = srv_html_parse(pages[i], strlen(pages[i]), max_depth, &m->pages[i], &err);
        if (st == MT_ERR_NOMEM)
            return srv_fail(resp, SRV_E_INTERNAL, "out of memory");
        if (st != MT_OK)
            return n > 1 ? srv_fail(resp, SRV_E_BAD_REQUEST, "text %d: %s", i, err.msg)
                         : srv_fail(resp, SRV_E_BAD_REQUEST, "%s", err.msg);
        total += srv_html_units(m->pages[i]);
    }
    m->units = malloc(sizeof *m->units * ((size_t)total + 1));
    if (!m->units)
        return srv_fail(resp, SRV_E_INTERNAL, "out of memory");
    for (int i = 0; i < n; i++) {
        m->first[i] = m->n_units;
        for (int k = 0; k < srv_html_units(m->pages[i]); k++)
            m->units[m->n_units++] = srv_html_unit(m->pages[i], k);
    }
    m->first[n] = m->n_units;
    return 0;
}

int srv_markup_render(srv_markup *m, const srv_tr_result *res, char **out, srv_response *resp)
{
    mt_err err = { 0 };
    for (int i = 0; i < m->n_pages; i++)
        out[i] = NULL;
    for (int i = 0; i < m->n_pages; i++) {
        for (int u = m->first[i]; u < m->first[i + 1]; u++) {
            const srv_tr_result *r = &res[u];
            if (srv_html_set(m->pages[i], u - m->first[i], r->alts[0], strlen(r->alts[0]), r->words, r->n_words,
                             &err) != MT_OK)
                goto fail;
        }
        size_t len;
        if (srv_html_render(m->pages[i], &out[i], &len, &err) != MT_OK)
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
    free(m->pages);
    free(m->first);
    free(m->units);
    memset(m, 0, sizeof *m);
}
