/* body: request body parsing (JSON, form) and typed field getters. */
#include "body.h"

#include "util/utf8.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* ---- UTF-8 ------------------------------------------------------------------ */


int srv_is_blank(const char *s, size_t len)
{
    const unsigned char *u = (const unsigned char *)s;
    size_t i = 0;
    uint32_t cp;
    while (i < len) {
        size_t k = mt_utf8_decode(u + i, len - i, &cp);
        if (!k || !mt_utf8_is_space(cp))
            return 0;
        i += k;
    }
    return 1;
}

/* ---- application/x-www-form-urlencoded ------------------------------------- */

static int hexval(char c)
{
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

/* Decodes s[0..len) into out (room for len + 1); returns the decoded length or -1. */
static long url_decode(const char *s, size_t len, char *out)
{
    size_t o = 0;
    for (size_t i = 0; i < len; i++) {
        if (s[i] == '+') {
            out[o++] = ' ';
        } else if (s[i] == '%') {
            if (i + 2 >= len)
                return -1;
            int h = hexval(s[i + 1]), l = hexval(s[i + 2]);
            if (h < 0 || l < 0)
                return -1;
            out[o++] = (char)(h * 16 + l);
            i += 2;
        } else {
            out[o++] = s[i];
        }
    }
    out[o] = 0;
    return (long)o;
}

/* obj[key] = v (stolen), or appended to obj[key]'s values when lists and the key repeats. */
static int form_set(json_t *obj, const char *key, json_t *v, int lists)
{
    json_t *had = lists ? json_object_get(obj, key) : NULL;
    if (!v || !had)
        return json_object_set_new(obj, key, v);
    if (json_is_string(had)) {
        json_t *list = json_pack("[O]", had);
        if (!list || json_object_set_new(obj, key, list)) {
            json_decref(v);
            return -1;
        }
        had = list;
    }
    return json_array_append_new(had, v);
}

static int form_pair(json_t *obj, const char *p, size_t len, int lists, char *err, size_t err_len)
{
    const char *eq = memchr(p, '=', len);
    size_t klen = eq ? (size_t)(eq - p) : len;
    size_t vlen = eq ? len - klen - 1 : 0;
    char *key = malloc(klen + 1), *val = malloc(vlen + 1);
    int rc = -1;
    long kn, vn;
    if (!key || !val) {
        snprintf(err, err_len, "out of memory");
        goto done;
    }
    kn = url_decode(p, klen, key);
    vn = url_decode(eq ? eq + 1 : "", vlen, val);
    if (kn < 0 || vn < 0) {
        snprintf(err, err_len, "malformed %%-escape in the form body");
        goto done;
    }
    if (memchr(key, 0, (size_t)kn) || memchr(val, 0, (size_t)vn) ||
        !mt_utf8_valid(key, (size_t)kn) || !mt_utf8_valid(val, (size_t)vn)) {
        snprintf(err, err_len, "the form body is not valid UTF-8 text");
        goto done;
    }
    if (kn > 0 && form_set(obj, key, json_stringn(val, (size_t)vn), lists) != 0) {
        snprintf(err, err_len, "out of memory");
        goto done;
    }
    rc = 0;
done:
    free(key);
    free(val);
    return rc;
}

json_t *srv_form_parse(const char *body, size_t len, int lists, char *err, size_t err_len)
{
    json_t *obj = json_object();
    if (!obj) {
        snprintf(err, err_len, "out of memory");
        return NULL;
    }
    size_t i = 0;
    while (i < len) {
        const char *amp = memchr(body + i, '&', len - i);
        size_t plen = amp ? (size_t)(amp - (body + i)) : len - i;
        if (plen && form_pair(obj, body + i, plen, lists, err, err_len)) {
            json_decref(obj);
            return NULL;
        }
        i += plen + 1;
    }
    return obj;
}

/* ---- multipart/form-data -------------------------------------------------------- */

/* The boundary parameter of a Content-Type, quoted or not; 0 if absent. */
static int boundary_of(const char *content_type, char *out, size_t len)
{
    const char *b = content_type ? strcasestr(content_type, "boundary=") : NULL;
    if (!b)
        return 0;
    b += 9;
    size_t n = *b == '"' ? strcspn(++b, "\"") : strcspn(b, "; ");
    if (n == 0 || n + 3 > len)
        return 0;
    snprintf(out, len, "--%.*s", (int)n, b);
    return 1;
}

/* The name="..." of a part's headers (hdr[0..len)); 0 if absent or a file. */
static int part_name(const char *hdr, size_t len, char *out, size_t out_len)
{
    char *h = strndup(hdr, len);
    int ok = 0;
    const char *d = h ? strcasestr(h, "content-disposition:") : NULL;
    const char *name = d ? strstr(d, "name=\"") : NULL;
    while (name && name > d && name[-1] != ' ' && name[-1] != ';')    /* not filename=" */
        name = strstr(name + 1, "name=\"");
    const char *line_end = d ? strstr(d, "\r\n") : NULL;
    if (name && (!line_end || name < line_end) && !strstr(d, "filename=")) {
        name += 6;
        size_t n = strcspn(name, "\"");
        if (n < out_len && name[n] == '"') {
            memcpy(out, name, n);
            out[n] = 0;
            ok = 1;
        }
    }
    free(h);
    return ok;
}

json_t *srv_multipart_parse(const char *body, size_t len, const char *content_type, char *err,
                            size_t err_len)
{
    char delim[200], name[128];
    if (!boundary_of(content_type, delim, sizeof delim)) {
        snprintf(err, err_len, "multipart/form-data without a boundary");
        return NULL;
    }
    size_t dl = strlen(delim);
    const char *end = body + len, *p = memmem(body, len, delim, dl);
    json_t *obj = json_object();
    while (obj && p) {
        p += dl;
        if (end - p >= 2 && p[0] == '-' && p[1] == '-')
            return obj;                                     /* closing delimiter */
        const char *hdr_end = memmem(p, (size_t)(end - p), "\r\n\r\n", 4);
        const char *next = hdr_end ? memmem(hdr_end + 4, (size_t)(end - hdr_end - 4), delim, dl) : NULL;
        if (!next || next - (hdr_end + 4) < 2 || next[-2] != '\r' || next[-1] != '\n')
            break;
        const char *value = hdr_end + 4;
        size_t vlen = (size_t)(next - 2 - value);
        if (part_name(p, (size_t)(hdr_end - p), name, sizeof name)) {
            if (!mt_utf8_valid(value, vlen) || memchr(value, 0, vlen)) {
                snprintf(err, err_len, "multipart field '%s' is not valid UTF-8 text", name);
                json_decref(obj);
                return NULL;
            }
            json_object_set_new(obj, name, json_stringn(value, vlen));
        }
        p = next;
    }
    snprintf(err, err_len, "malformed multipart/form-data body");
    json_decref(obj);
    return NULL;
}

/* Parameter key of the Content-Disposition header in a part's headers
 * (hdr[0..len)), quoted or not, into out; 1 found, 0 not. */
static int disposition_param(const char *hdr, size_t len, const char *key, char *out, size_t out_len)
{
    const char *end = hdr + len, *d = hdr;
    size_t kl = strlen(key);
    while (d < end && strncasecmp(d, "content-disposition:", 20)) {
        const char *nl = memchr(d, '\n', (size_t)(end - d));
        d = nl ? nl + 1 : end;
    }
    if (d >= end)
        return 0;
    const char *line_end = memchr(d, '\n', (size_t)(end - d));
    if (!line_end)
        line_end = end;
    for (const char *p = memchr(d, ';', (size_t)(line_end - d)); p && p < line_end;
         p = memchr(p + 1, ';', (size_t)(line_end - p - 1))) {
        const char *k = p + 1;
        while (k < line_end && *k == ' ')
            k++;
        if ((size_t)(line_end - k) <= kl || strncasecmp(k, key, kl) || k[kl] != '=')
            continue;
        const char *v = k + kl + 1, *ve;
        if (v < line_end && *v == '"') {
            v++;
            ve = memchr(v, '"', (size_t)(line_end - v));
            if (!ve)
                return 0;
        } else {
            ve = v;
            while (ve < line_end && *ve != ';' && *ve != '\r')
                ve++;
        }
        if ((size_t)(ve - v) >= out_len)
            return 0;
        memcpy(out, v, (size_t)(ve - v));
        out[ve - v] = 0;
        return 1;
    }
    return 0;
}

int srv_multipart_file(const char *body, size_t len, const char *content_type, const char *field,
                       const char **data, size_t *dlen, char *filename, size_t fn_len, char *err, size_t err_len)
{
    char delim[200], name[128];
    if (!boundary_of(content_type, delim, sizeof delim)) {
        snprintf(err, err_len, "multipart/form-data without a boundary");
        return -1;
    }
    size_t dl = strlen(delim);
    const char *end = body + len, *p = memmem(body, len, delim, dl);
    while (p) {
        p += dl;
        if (end - p >= 2 && p[0] == '-' && p[1] == '-')
            return 0;                                       /* closing delimiter: not there */
        const char *hdr_end = memmem(p, (size_t)(end - p), "\r\n\r\n", 4);
        const char *next = hdr_end ? memmem(hdr_end + 4, (size_t)(end - hdr_end - 4), delim, dl) : NULL;
        if (!next || next - (hdr_end + 4) < 2 || next[-2] != '\r' || next[-1] != '\n')
            break;
        size_t hl = (size_t)(hdr_end - p);
        if (disposition_param(p, hl, "name", name, sizeof name) && !strcmp(name, field)) {
            if (!disposition_param(p, hl, "filename", filename, fn_len))
                filename[0] = 0;
            *data = hdr_end + 4;
            *dlen = (size_t)(next - 2 - *data);
            return 1;
        }
        p = next;
    }
    snprintf(err, err_len, "malformed multipart/form-data body");
    return -1;
}

/* ---- body -> req->json -------------------------------------------------------- */

/* Compares the media type of a Content-Type header (parameters ignored). */
static int media_is(const char *content_type, const char *type)
{
    if (!content_type)
        return 0;
    while (*content_type == ' ')
        content_type++;
    size_t n = strlen(type);
    return strncasecmp(content_type, type, n) == 0 &&
           (content_type[n] == 0 || content_type[n] == ';' || content_type[n] == ' ');
}

static int parse_json_body(srv_request *req, srv_response *resp)
{
    json_error_t jerr;
    req->json = json_loadb(req->body, req->body_len, JSON_REJECT_DUPLICATES, &jerr);
    if (!req->json)
        return srv_fail(resp, SRV_E_INVALID_JSON, "malformed JSON at line %d, column %d: %s",
                        jerr.line, jerr.column, jerr.text);
    if (!json_is_object(req->json))
        return srv_fail(resp, SRV_E_INVALID_JSON, "the body must be a JSON object");
    return 0;
}

/* `curl -d '{...}'` labels JSON as a form; a form field never starts with '{'. */
static int looks_like_json(const srv_request *req)
{
    size_t i = 0;
    while (i < req->body_len && mt_utf8_is_space((unsigned char)req->body[i]))
        i++;
    return i < req->body_len && req->body[i] == '{';
}

int srv_body_is_form(const srv_request *req)
{
    return (media_is(req->content_type, "multipart/form-data") ||
            media_is(req->content_type, "application/x-www-form-urlencoded")) && !looks_like_json(req);
}

int srv_body_parse(srv_request *req, srv_response *resp)
{
    if (req->body_len == 0)
        return srv_fail(resp, SRV_E_INVALID_JSON, "the request has no body; expected a JSON object");
    int multipart = srv_body_is_form(req) && media_is(req->content_type, "multipart/form-data");
    size_t ok = multipart ? req->body_len : mt_utf8_valid_prefix(req->body, req->body_len);
    if (ok != req->body_len)        /* a multipart body's file parts are bytes; its fields are checked */
        return srv_fail(resp, SRV_E_INVALID_UTF8, "the body is not valid UTF-8 (byte %zu)", ok);
    if (!srv_body_is_form(req))
        return parse_json_body(req, resp);
    char err[160];
    req->form = 1;
    req->json = multipart ? srv_multipart_parse(req->body, req->body_len, req->content_type, err, sizeof err)
                          : srv_form_parse(req->body, req->body_len, req->form_lists, err, sizeof err);
    if (!req->json)
        return srv_fail(resp, SRV_E_INVALID_JSON, "%s", err);
    return 0;
}

/* ---- fields ---------------------------------------------------------------------- */

/* name, or "object.name" for a field of an object field (its messages name it so). */
static json_t *field(const srv_request *req, const char *name)
{
    const char *dot = strchr(name, '.');
    json_t *obj = req->json;
    if (dot && obj) {
        char outer[64];
        snprintf(outer, sizeof outer, "%.*s", (int)(dot - name), name);
        obj = json_object_get(obj, outer);
        name = dot + 1;
        if (!json_is_object(obj))
            return NULL;
    }
    json_t *v = obj ? json_object_get(obj, name) : NULL;
    return json_is_null(v) ? NULL : v;
}

int srv_field_number(const srv_request *req, srv_response *resp, const char *name, double min, double max,
                     int open_min, double *out)
{
    json_t *v = field(req, name);
    if (!v)
        return 0;
    double x = 0;
    char *end = NULL;
    int ok = json_is_number(v);
    if (ok)
        x = json_number_value(v);
    else if (req->form && json_is_string(v)) {
        x = strtod(json_string_value(v), &end);
        ok = end != json_string_value(v) && !*end;
    }
    if (!ok || !isfinite(x) || x > max || (open_min ? x <= min : x < min))
        return srv_fail(resp, SRV_E_INVALID_FIELD, "field '%s' must be a number in %c%g, %g]", name,
                        open_min ? '(' : '[', min, max);
    *out = x;
    return 1;
}

int srv_field_object(const srv_request *req, srv_response *resp, const char *name, const char *const *keys,
                     json_t **out)
{
    json_t *v = field(req, name);
    if (!v)
        return 0;
    if (!json_is_object(v))
        return srv_fail(resp, SRV_E_INVALID_FIELD, "field '%s' must be an object", name);
    const char *k;
    json_t *x;
    json_object_foreach(v, k, x) {
        int known = 0;
        for (int i = 0; keys[i] && !known; i++)
            known = !strcmp(k, keys[i]);
        if (!known)
            return srv_fail(resp, SRV_E_INVALID_FIELD, "field '%s' has an unknown member '%.*s'", name,
                            mt_utf8_clip(k, strlen(k), 64), k);
    }
    *out = v;
    return 1;
}

int srv_field_string(const srv_request *req, srv_response *resp, const char *name, const char **out)
{
    json_t *v = field(req, name);
    if (!v)
        return 0;
    if (!json_is_string(v))
        return srv_fail(resp, SRV_E_INVALID_FIELD, "field '%s' must be a string", name);
    *out = json_string_value(v);
    return 1;
}

/* A whole decimal integer string (form values). */
static int parse_int_str(const char *s, long long *out)
{
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (end == s || *end || errno)
        return -1;
    *out = v;
    return 0;
}

static int int_value(const srv_request *req, json_t *v, long long *out)
{
    if (json_is_integer(v)) {
        *out = json_integer_value(v);
        return 0;
    }
    if (req->form && json_is_string(v))
        return parse_int_str(json_string_value(v), out);
    return -1;
}

int srv_field_int(const srv_request *req, srv_response *resp, const char *name, int min, int max,
                  int *out)
{
    json_t *v = field(req, name);
    long long x;
    if (!v)
        return 0;
    if (int_value(req, v, &x) || x < min || x > max)
        return srv_fail(resp, SRV_E_INVALID_FIELD, "field '%s' must be an integer in [%d, %d]",
                        name, min, max);
    *out = (int)x;
    return 1;
}

int srv_field_int64(const srv_request *req, srv_response *resp, const char *name, long long min, long long max,
                    long long *out)
{
    json_t *v = field(req, name);
    long long x;
    if (!v)
        return 0;
    if (int_value(req, v, &x) || x < min || x > max)
        return srv_fail(resp, SRV_E_INVALID_FIELD, "field '%s' must be an integer in [%lld, %lld]", name, min,
                        max);
    *out = x;
    return 1;
}

int srv_field_bool(const srv_request *req, srv_response *resp, const char *name, int *out)
{
    json_t *v = field(req, name);
    if (!v)
        return 0;
    if (json_is_boolean(v)) {
        *out = json_is_true(v);
        return 1;
    }
    if (req->form && json_is_string(v)) {
        const char *s = json_string_value(v);
        if (!strcmp(s, "true") || !strcmp(s, "1"))
            return *out = 1, 1;
        if (!strcmp(s, "false") || !strcmp(s, "0"))
            return *out = 0, 1;
    }
    return srv_fail(resp, SRV_E_INVALID_FIELD, "field '%s' must be a boolean", name);
}

int srv_field_int_list(const srv_request *req, srv_response *resp, const char *name, int min,
                       int max, int **out, int *n)
{
    json_t *v = field(req, name);
    if (!v)
        return 0;
    size_t count = json_is_array(v) ? json_array_size(v) : 1;
    if (!json_is_array(v) && !json_is_integer(v))
        return srv_fail(resp, SRV_E_INVALID_FIELD, "field '%s' must be an integer or a list of integers",
                        name);
    if (count == 0)
        return srv_fail(resp, SRV_E_INVALID_FIELD, "field '%s' must not be empty", name);
    if (count > 4096)
        return srv_fail(resp, SRV_E_INVALID_FIELD, "field '%s' has too many entries", name);
    int *list = malloc(count * sizeof *list);
    if (!list)
        return srv_fail(resp, SRV_E_INTERNAL, "out of memory");
    for (size_t i = 0; i < count; i++) {
        json_t *e = json_is_array(v) ? json_array_get(v, i) : v;
        long long x;
        if (!json_is_integer(e) || (x = json_integer_value(e)) < min || x > max) {
            free(list);
            return srv_fail(resp, SRV_E_INVALID_FIELD, "field '%s' entries must be integers in [%d, %d]",
                            name, min, max);
        }
        list[i] = (int)x;
    }
    *out = list;
    *n = (int)count;
    return 1;
}

static int check_text(srv_response *resp, json_t *v, const char *name, long index, const char **out)
{
    char where[96];
    if (index < 0)
        snprintf(where, sizeof where, "field '%s'", name);
    else
        snprintf(where, sizeof where, "field '%s[%ld]'", name, index);
    if (!json_is_string(v))
        return srv_fail(resp, SRV_E_INVALID_FIELD, "%s must be a string%s", where,
                        index < 0 ? " or a list of strings" : "");
    if (srv_is_blank(json_string_value(v), json_string_length(v)))
        return srv_fail(resp, SRV_E_EMPTY_TEXT, "%s is empty", where);
    *out = json_string_value(v);
    return 0;
}

int srv_field_texts(const srv_request *req, srv_response *resp, const char *name,
                    const char ***texts, int *n, int *is_list)
{
    json_t *v = field(req, name);
    if (!v)
        return srv_fail(resp, SRV_E_INVALID_FIELD, "field '%s' is required", name);
    *is_list = json_is_array(v);
    size_t count = *is_list ? json_array_size(v) : 1;
    if (count == 0)
        return srv_fail(resp, SRV_E_EMPTY_TEXT, "field '%s' is an empty list", name);
    if (count > INT_MAX / 2)
        return srv_fail(resp, SRV_E_INVALID_FIELD, "field '%s' has too many entries", name);
    const char **list = malloc(count * sizeof *list);
    if (!list)
        return srv_fail(resp, SRV_E_INTERNAL, "out of memory");
    for (size_t i = 0; i < count; i++) {
        json_t *e = *is_list ? json_array_get(v, i) : v;
        if (check_text(resp, e, name, *is_list ? (long)i : -1, &list[i])) {
            free(list);
            return -1;
        }
    }
    *texts = list;
    *n = (int)count;
    return 1;
}
