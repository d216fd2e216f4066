/* file_prep: a received document parsed and routed for its file job (file_prep.h). */
#include "file_prep.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "glossaries.h"
#include "pairs.h"
#include "translate_job.h"
#include "util/utf8.h"

void srv_file_result_name(const char *name, const char *lang, srv_doc_kind kind, char *out, size_t len)
{
    const char *base = strrchr(name, '/');
    base = base ? base + 1 : name;
    const char *dot = strrchr(base, '.');
    int stem = dot && dot != base ? (int)(dot - base) : (int)strlen(base);
    if (!stem)
        base = "file", stem = 4;
    snprintf(out, len, "%.*s.%s%s", stem > 200 ? 200 : stem, base, lang, srv_doc_kind_ext(kind));
    for (char *p = out; *p; p++)        /* a URL path segment, a header value: nothing to escape */
        if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') || *p == '.' ||
              *p == '-' || *p == '_'))
            *p = '_';
}

int srv_file_fail(srv_response *resp, const mt_err *err)
{
    if (err->status == MT_ERR_TOO_LONG)
        return srv_fail(resp, SRV_E_BODY_TOO_LARGE, "%s", err->msg);
    return srv_fail(resp, srv_code_from_mt(err->status), "%s", err->msg);
}

int srv_file_kind(const srv_server *srv, srv_response *resp, const char *data, size_t len, const char *name,
                  srv_doc_kind *kind)
{
    if (len > srv->opts.max_file_bytes)
        return srv_fail(resp, SRV_E_BODY_TOO_LARGE, "the file is %zu bytes; the limit is %zu (--max-file-bytes)", len,
                        srv->opts.max_file_bytes);
    *kind = srv_doc_sniff(data, len, name);
    if (*kind == SRV_DOC_UNKNOWN)
        return srv_fail(resp, SRV_E_UNSUPPORTED_MEDIA, "'%s' is in no format this server translates (supported: %s; "
                        ".xml: Android's strings.xml or XLIFF, .yml: a Rails locale file, .md: Markdown, .xlf: XLIFF "
                        "1.2 or 2.x)", name[0] ? name : "the file",
                        srv_doc_supported());
    return 0;
}

int srv_file_parse(const srv_server *srv, srv_response *resp, const char *data, size_t len, srv_doc_kind kind,
                   const srv_doc_options *opt, char **copy, srv_doc **doc)
{
    *copy = malloc(len + 1);
    if (!*copy)
        return srv_fail(resp, SRV_E_INTERNAL, "out of memory");
    memcpy(*copy, data, len);
    (*copy)[len] = 0;
    srv_doc_limits lim = srv_doc_default_limits();
    lim.max_bytes = srv->opts.max_file_bytes;
    lim.max_units = srv->opts.max_file_units;
    lim.max_depth = srv->opts.max_html_depth;
    mt_err err = { 0 };
    if (srv_doc_parse_opt(kind, *copy, len, &lim, opt, doc, &err) != MT_OK) {
        free(*copy);
        *copy = NULL;
        return srv_file_fail(resp, &err);
    }
    return 0;
}

/* The text detection reads: the first units, up to a few KB. */
static int detect_texts(const srv_doc *d, const char **texts, int max)
{
    int n = 0;
    size_t bytes = 0;
    for (int i = 0; i < srv_doc_units(d) && n < max && bytes < 4096; i++) {
        texts[n++] = srv_doc_unit(d, i);
        bytes += strlen(texts[n - 1]);
    }
    return n;
}

int srv_file_route_doc(srv_server *srv, srv_response *resp, srv_doc *doc, const char *target,
                       const char **source, srv_lang_guess *guess, const srv_glossary *terms, srv_file_route *r)
{
    *r = (srv_file_route){ 0 };
    if (!strcmp(*source, "auto")) {
        const char *texts[64];
        int n = detect_texts(doc, texts, 64);
        if (n && srv_detect_source(srv, texts, n, target, guess, resp))
            return -1;
        *source = n ? guess->code : "auto";
    }
    srv_path path;
    if (srv_path_for_pair(srv, *source, target, &path, resp))
        return -1;
    if (path.n_legs != 1)
        return srv_fail(resp, SRV_E_UNSUPPORTED_LANGUAGE, "files translate with one model, not through a pivot (%s)",
                        path.pivot);
    srv_model *m = path.model[0];
    r->tm = srv_leg_model(srv, &path, 0, 0);
    r->decoder = m->decoder;
    r->tm.cache = NULL;
    r->p.dp = mt_decode_default_params();
    r->p.split = 1;
    r->p.placeholders = 1;             /* as /translate: %s, {name}, URLs kept byte for byte in every format */
    srv_doc_target(doc, target);
    srv_glossary *legs[2] = { NULL, NULL };
    if (srv_translate_resolve(&path, &r->p, resp) || srv_leg_glossaries(srv, &path, terms, legs, resp))
        return -1;
    r->glossary = legs[0];
    return 0;
}

long srv_file_chars(const srv_doc *doc)
{
    long n = 0;
    for (int i = 0; i < srv_doc_units(doc); i++)
        n += mt_utf8_count(srv_doc_unit(doc, i), strlen(srv_doc_unit(doc, i)));
    return n;
}
