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
    [SRV_DOC_JSON] = { "json", ".json", "application/json", &srv_doc_json_format },
    [SRV_DOC_ARB]  = { "arb", ".arb", "application/json", &srv_doc_json_format },
    [SRV_DOC_PROPERTIES] = { "properties", ".properties", "text/x-java-properties; charset=utf-8",
                             &srv_doc_properties_format },
    [SRV_DOC_STRINGS] = { "strings", ".strings", "text/plain; charset=utf-8", &srv_doc_strings_format },
    [SRV_DOC_ANDROID] = { "android", ".xml", "application/xml; charset=utf-8", &srv_doc_android_format },
    [SRV_DOC_YAML] = { "yaml", ".yml", "application/yaml; charset=utf-8", &srv_doc_yaml_format },
    [SRV_DOC_PPTX] = { "pptx", ".pptx",
                       "application/vnd.openxmlformats-officedocument.presentationml.presentation",
                       &srv_doc_office_format },
    [SRV_DOC_XLSX] = { "xlsx", ".xlsx", "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
                       &srv_doc_office_format },
    [SRV_DOC_ODP]  = { "odp", ".odp", "application/vnd.oasis.opendocument.presentation", &srv_doc_office_format },
    [SRV_DOC_ODS]  = { "ods", ".ods", "application/vnd.oasis.opendocument.spreadsheet", &srv_doc_office_format },
    [SRV_DOC_EPUB] = { "epub", ".epub", "application/epub+zip", &srv_doc_epub_format },
    [SRV_DOC_MARKDOWN] = { "md", ".md", "text/markdown; charset=utf-8", &srv_doc_markdown_format },
    [SRV_DOC_XLIFF] = { "xliff", ".xlf", "application/xliff+xml; charset=utf-8", &srv_doc_xliff_format },
};

srv_doc_limits srv_doc_default_limits(void)
{
    return (srv_doc_limits){ .max_bytes = 16u << 20, .max_units = 100000, .max_unit_bytes = 64u << 10,
                             .max_entries = 2000, .max_inflated = 256u << 20, .max_xml_part = 32u << 20,
                             .max_depth = 256 };
}

srv_doc_options srv_doc_default_options(void) { return (srv_doc_options){ .overwrite = 0 }; }

static int valid_kind(srv_doc_kind k) { return k >= 0 && k < SRV_DOC_N; }

const char *srv_doc_kind_name(srv_doc_kind k) { return valid_kind(k) ? KINDS[k].name : NULL; }
const char *srv_doc_kind_ext(srv_doc_kind k) { return valid_kind(k) ? KINDS[k].ext : NULL; }
const char *srv_doc_kind_mime(srv_doc_kind k) { return valid_kind(k) ? KINDS[k].mime : NULL; }
const char *srv_doc_supported(void)
{
    return ".txt, .html, .srt, .vtt, .po, .pot, .docx, .odt, .json, .arb, .properties, .strings, .xml, .yml, .yaml, "
           ".pptx, .xlsx, .odp, .ods, .epub, .md, .markdown, .xlf, .xliff";
}


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

static size_t skip_space(const char *d, size_t n, size_t i)
{
    while (i < n && (d[i] == ' ' || d[i] == '\t' || d[i] == '\n' || d[i] == '\r'))
        i++;
    return i;
}

/* The root element's name of a file that starts with markup (after a BOM,
 * spaces, the XML declaration, comments, processing instructions and a
 * DOCTYPE) into root[0..cap): 1, *decl set when it has an XML declaration;
 * 0 when it does not start so. */
static int xml_root(const char *d, size_t n, char *root, size_t cap, int *decl)
{
    size_t i = n >= 3 && !memcmp(d, "\xef\xbb\xbf", 3) ? 3 : 0;
    *decl = 0;
    for (int k = 0; k < 64; k++) {
        i = skip_space(d, n, i);
        if (i + 1 >= n || d[i] != '<')
            return 0;
        const char *end = NULL;         /* the construct's last byte */
        if (d[i + 1] == '?') {
            *decl |= n - i >= 5 && !memcmp(d + i, "<?xml", 5);
            end = memmem(d + i, n - i, "?>", 2);
            end = end ? end + 1 : NULL;
        } else if (n - i >= 4 && !memcmp(d + i, "<!--", 4)) {
            end = memmem(d + i, n - i, "-->", 3);
            end = end ? end + 2 : NULL;
        } else if (d[i + 1] == '!') {
            end = memchr(d + i, '>', n - i);
        } else {
            size_t j = i + 1, m = 0;
            while (j < n && m + 1 < cap && !strchr(" \t\r\n/>", d[j]))
                root[m++] = d[j++];
            root[m] = 0;
            char *colon = strchr(root, ':');
            if (colon)
                memmove(root, colon + 1, strlen(colon));
            return m > 0;
        }
        if (!end)
            return 0;
        i = (size_t)(end - d) + 1;
    }
    return 0;
}

/* YAML by its first lines: "---" or "%YAML", or "key:" alone on the first
 * line and an indented "key:" on the next (Rails' "en:" then its keys). */
static int looks_yaml(const char *d, size_t n)
{
    size_t i = 0, lines[2][2];
    int got = 0;
    while (i < n && got < 2) {
        const char *nl = memchr(d + i, '\n', n - i);
        size_t e = nl ? (size_t)(nl - d) : n, t = e;
        while (t > i && (d[t - 1] == '\r' || d[t - 1] == ' '))
            t--;
        size_t j = i;
        while (j < t && d[j] == ' ')
            j++;
        if (j < t && d[j] != '#')
            lines[got][0] = i, lines[got][1] = t, got++;
        i = e + 1;
    }
    if (!got)
        return 0;
    const char *a = d + lines[0][0];
    size_t an = lines[0][1] - lines[0][0];
    if ((an == 3 && !memcmp(a, "---", 3)) || (an > 4 && !memcmp(a, "--- ", 4)) || (an >= 5 && !memcmp(a, "%YAML", 5)))
        return 1;
    if (got < 2 || an < 2 || a[an - 1] != ':' || a[0] == ' ')
        return 0;
    for (size_t k = 0; k + 1 < an; k++)
        if (a[k] == ' ' || a[k] == ':')
            return 0;
    const char *b = d + lines[1][0];
    size_t bn = lines[1][1] - lines[1][0];
    return bn > 2 && b[0] == ' ' && memchr(b, ':', bn);
}

/* An XML root that is XLIFF's (1.2's namespace or 2.x's, or none: the
 * name is the root's local name). */
static int xliff_root(const char *root) { return !strcmp(root, "xliff"); }

/* Markdown by content, only when it is clearly so: its first line an ATX
 * heading ("# Title"), and a fenced code block, a link "](" or a second
 * heading after it.  Prose that merely starts with "#" stays text. */
static int looks_markdown(const char *d, size_t n)
{
    size_t i = skip_space(d, n, n >= 3 && !memcmp(d, "\xef\xbb\xbf", 3) ? 3 : 0), h = 0;
    while (i + h < n && h < 7 && d[i + h] == '#')
        h++;
    if (!h || h > 6 || i + h >= n || d[i + h] != ' ')
        return 0;
    const char *nl = memchr(d + i, '\n', n - i);
    if (!nl)
        return 0;
    size_t rest = (size_t)(nl - d), m = n - rest;
    return memmem(nl, m, "\n```", 4) || memmem(nl, m, "\n~~~", 4) || memmem(nl, m, "](", 2) ||
           memmem(nl, m, "\n## ", 4) || memmem(nl, m, "\n# ", 3);
}

/* By the file's name: a resource format, or a structured file refused
 * (*kind SRV_DOC_UNKNOWN): 1; 0 when the name does not tell. */
static int by_name(const char *d, size_t n, const char *name, srv_doc_kind *kind)
{
    char root[64];
    int decl;
    if (ends_with(name, ".arb") || ends_with(name, ".json"))
        *kind = ends_with(name, ".arb") || memmem(d, n, "\"@@locale\"", 10) ? SRV_DOC_ARB : SRV_DOC_JSON;
    else if (ends_with(name, ".properties"))
        *kind = SRV_DOC_PROPERTIES;
    else if (ends_with(name, ".strings"))
        *kind = SRV_DOC_STRINGS;
    else if (ends_with(name, ".yml") || ends_with(name, ".yaml"))
        *kind = srv_doc_is_rails_yaml(d, n) ? SRV_DOC_YAML : SRV_DOC_UNKNOWN;     /* other YAML: not ours */
    else if (ends_with(name, ".xml"))
        *kind = !xml_root(d, n, root, sizeof root, &decl) ? SRV_DOC_UNKNOWN
                : !strcmp(root, "resources")             ? SRV_DOC_ANDROID
                : xliff_root(root)                       ? SRV_DOC_XLIFF
                : !strcasecmp(root, "html")              ? SRV_DOC_HTML
                                                         : SRV_DOC_UNKNOWN;
    else if (ends_with(name, ".xlf") || ends_with(name, ".xliff"))
        *kind = xml_root(d, n, root, sizeof root, &decl) && xliff_root(root) ? SRV_DOC_XLIFF : SRV_DOC_UNKNOWN;
    else if (ends_with(name, ".md") || ends_with(name, ".markdown"))
        *kind = SRV_DOC_MARKDOWN;
    else
        return 0;
    return 1;
}

srv_doc_kind srv_doc_sniff(const char *data, size_t len, const char *name)
{
    srv_doc_kind k;
    char root[64];
    int decl;
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
    if (name && by_name(data, len, name, &k))
        return k;
    if (xml_root(data, len, root, sizeof root, &decl)) {
        if (!strcmp(root, "resources"))
            return SRV_DOC_ANDROID;
        if (xliff_root(root))
            return SRV_DOC_XLIFF;
        if (decl)                               /* XHTML, or XML of another kind: never text */
            return strcasecmp(root, "html") ? SRV_DOC_UNKNOWN : SRV_DOC_HTML;
    }
    if (looks_html(data, len) || (name && (ends_with(name, ".html") || ends_with(name, ".htm"))))
        return SRV_DOC_HTML;
    if (srv_doc_is_po(data, len))
        return SRV_DOC_PO;
    if (srv_doc_is_json(data, len))
        return memmem(data, len, "\"@@locale\"", 10) ? SRV_DOC_ARB : SRV_DOC_JSON;
    size_t i = skip_space(data, len, len >= 3 && !memcmp(data, "\xef\xbb\xbf", 3) ? 3 : 0), e = len;
    while (e > i && strchr(" \t\r\n", data[e - 1]))
        e--;
    if (srv_doc_is_rails_yaml(data, len))
        return SRV_DOC_YAML;
    if ((e - i >= 2 && data[i] == '[' && data[e - 1] == ']') || looks_yaml(data, len))
        return SRV_DOC_UNKNOWN;                 /* a JSON array, other YAML: structured, not a format we read */
    int txt = name && ends_with(name, ".txt");
    if (!txt && looks_markdown(data, len))
        return SRV_DOC_MARKDOWN;
    if (!txt && srv_doc_is_strings(data, len))
        return SRV_DOC_STRINGS;
    if (!txt && srv_doc_is_properties(data, len))
        return SRV_DOC_PROPERTIES;
    return SRV_DOC_TXT;
}

mt_status srv_doc_parse(srv_doc_kind kind, const char *data, size_t len, const srv_doc_limits *lim, srv_doc **out,
                        mt_err *err)
{
    return srv_doc_parse_opt(kind, data, len, lim, NULL, out, err);
}

mt_status srv_doc_parse_opt(srv_doc_kind kind, const char *data, size_t len, const srv_doc_limits *lim,
                            const srv_doc_options *opt, srv_doc **out, mt_err *err)
{
    *out = NULL;
    if (!valid_kind(kind))
        return mt_err_set(err, MT_ERR_INPUT, "unknown document format %d", (int)kind);
    srv_doc_limits def = srv_doc_default_limits();
    if (!lim)
        lim = &def;
    srv_doc_options o = opt ? *opt : srv_doc_default_options();
    o.overwrite = !!o.overwrite;
    if (len > lim->max_bytes)
        return mt_err_set(err, MT_ERR_TOO_LONG, "the file is %zu bytes; the limit is %zu", len, lim->max_bytes);
    srv_doc *d = calloc(1, sizeof *d);
    if (!d)
        return mt_err_set(err, MT_ERR_NOMEM, "out of memory");
    d->kind = kind;
    d->f = KINDS[kind].f;
    /* every parser sets d->state only on success, so srv_doc_free below is right either way */
    mt_status st = d->f->parse(kind, data, len, lim, &o, &d->state, err);
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

void srv_doc_target(srv_doc *d, const char *lang)
{
    if (d->f->target && lang)
        d->f->target(d->state, lang);
}

mt_status srv_doc_render(const srv_doc *d, char **out, size_t *len, mt_err *err)
{
    *out = NULL;
    *len = 0;
    return d->f->render(d->state, out, len, err);
}
