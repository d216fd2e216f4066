/* document: the formats' table, sniffing, and the checks every call goes through (document.h). */
#include "document.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "doc_format.h"
#include "util/utf8.h"

struct srv_doc {
    srv_doc_kind          kind;
    const srv_doc_format *f;
    void                 *state;
};

static const struct {
    const char *name, *ext, *mime;
    const srv_doc_format *f;
} KINDS[SRV_DOC_N] = {
    [SRV_DOC_TXT]  = { "txt", ".txt", "text/plain; charset=utf-8", &srv_doc_text_format },
    [SRV_DOC_HTML] = { "html", ".html", "text/html; charset=utf-8", &srv_doc_html_format },
    [SRV_DOC_SRT]  = { "srt", ".srt", "application/x-subrip; charset=utf-8", &srv_doc_subtitles_format },
    [SRV_DOC_VTT]  = { "vtt", ".vtt", "text/vtt; charset=utf-8", &srv_doc_subtitles_format },
    [SRV_DOC_PO]   = { "po", ".po", "text/x-gettext-translation; charset=utf-8", &srv_doc_po_format },
    [SRV_DOC_DOCX] = { "docx", ".docx",
                       "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
                       &srv_doc_office_format },
    [SRV_DOC_ODT]  = { "odt", ".odt", "application/vnd.oasis.opendocument.text", &srv_doc_office_format },
};

srv_doc_limits srv_doc_default_limits(void)
{
    return (srv_doc_limits){ .max_bytes = 16u << 20, .max_units = 100000, .max_unit_bytes = 64u << 10,
                             .max_entries = 2000, .max_inflated = 256u << 20, .max_xml_part = 32u << 20,
                             .max_depth = 256 };
}

static int valid_kind(srv_doc_kind k) { return k >= 0 && k < SRV_DOC_N; }

const char *srv_doc_kind_name(srv_doc_kind k) { return valid_kind(k) ? KINDS[k].name : NULL; }
const char *srv_doc_kind_ext(srv_doc_kind k) { return valid_kind(k) ? KINDS[k].ext : NULL; }
const char *srv_doc_kind_mime(srv_doc_kind k) { return valid_kind(k) ? KINDS[k].mime : NULL; }
const char *srv_doc_supported(void) { return ".txt, .html, .srt, .vtt, .po, .pot, .docx, .odt"; }

static int ends_with(const char *name, const char *ext)
{
    size_t n = strlen(name), m = strlen(ext);
    return n >= m && !strcasecmp(name + n - m, ext);
}

/* Markup, by its first non-space bytes: a doctype, a comment or an element
 * of HTML's own (not "<" and a word, which plain text and .po have too). */
static int looks_html(const char *d, size_t n)
{
    size_t i = 0;
    if (n >= 3 && !memcmp(d, "\xef\xbb\xbf", 3))
        i = 3;
    while (i < n && (d[i] == ' ' || d[i] == '\t' || d[i] == '\n' || d[i] == '\r'))
        i++;
    static const char *const starts[] = { "<!doctype", "<html", "<head", "<body", "<!--", "<p>", "<p ", "<div",
                                          "<h1", "<h2", "<h3", "<table", "<ul", "<meta", "<title", "<section",
                                          "<article" };
    for (size_t k = 0; k < sizeof starts / sizeof starts[0]; k++) {
        size_t m = strlen(starts[k]);
        if (n - i >= m && !strncasecmp(d + i, starts[k], m))
            return 1;
    }
    return 0;
}

srv_doc_kind srv_doc_sniff(const char *data, size_t len, const char *name)
{
    srv_doc_kind k;
    if (!data)
        return SRV_DOC_UNKNOWN;
    if (srv_doc_is_office(data, len, &k))
        return k;
    if (len >= 4 && !memcmp(data, "PK\x03\x04", 4))
        return SRV_DOC_UNKNOWN;                 /* another zip */
    if (memchr(data, 0, len) || !mt_utf8_valid(data, len))
        return SRV_DOC_UNKNOWN;                 /* binary, or not UTF-8 */
    if (srv_doc_is_subtitles(data, len, &k))
        return k;
    if (looks_html(data, len) || (name && (ends_with(name, ".html") || ends_with(name, ".htm"))))
        return SRV_DOC_HTML;
    if (srv_doc_is_po(data, len))
        return SRV_DOC_PO;
    return SRV_DOC_TXT;
}

mt_status srv_doc_parse(srv_doc_kind kind, const char *data, size_t len, const srv_doc_limits *lim, srv_doc **out,
                        mt_err *err)
{
    *out = NULL;
    if (!valid_kind(kind))
        return mt_err_set(err, MT_ERR_INPUT, "unknown document format %d", (int)kind);
    srv_doc_limits def = srv_doc_default_limits();
    if (!lim)
        lim = &def;
    if (len > lim->max_bytes)
        return mt_err_set(err, MT_ERR_TOO_LONG, "the file is %zu bytes; the limit is %zu", len, lim->max_bytes);
    srv_doc *d = calloc(1, sizeof *d);
    if (!d)
        return mt_err_set(err, MT_ERR_NOMEM, "out of memory");
    d->kind = kind;
    d->f = KINDS[kind].f;
    /* every parser sets d->state only on success, so srv_doc_free below is right either way */
    mt_status st = d->f->parse(kind, data, len, lim, &d->state, err);
    if (st != MT_OK)
        goto fail;
    if (d->f->units(d->state) > lim->max_units) {
        st = mt_err_set(err, MT_ERR_TOO_LONG, "the file has %d translation units; the limit is %d",
                        d->f->units(d->state), lim->max_units);
        goto fail;
    }
    *out = d;
    return MT_OK;
fail:
    srv_doc_free(d);
    return st;
}

void srv_doc_free(srv_doc *d)
{
    if (!d)
        return;
    d->f->free(d->state);
    free(d);
}

srv_doc_kind srv_doc_kind_of(const srv_doc *d) { return d->kind; }
int srv_doc_units(const srv_doc *d) { return d->f->units(d->state); }

const char *srv_doc_unit(const srv_doc *d, int i)
{
    return i >= 0 && i < srv_doc_units(d) ? d->f->unit(d->state, i) : NULL;
}

mt_status srv_doc_set(srv_doc *d, int i, const char *text, size_t len, const long *links, int n_links, mt_err *err)
{
    if (i < 0 || i >= srv_doc_units(d))
        return mt_err_set(err, MT_ERR_INPUT, "unit %d out of range", i);
    if (n_links < 0 || (n_links > 0 && !links))
        return mt_err_set(err, MT_ERR_INPUT, "bad links");
    return d->f->set(d->state, i, text ? text : "", text ? len : 0, links, n_links, err);
}

mt_status srv_doc_render(const srv_doc *d, char **out, size_t *len, mt_err *err)
{
    *out = NULL;
    *len = 0;
    return d->f->render(d->state, out, len, err);
}
