/* doc_yaml: Rails (Ruby i18n) YAML locale files (document.h, format yaml),
 * read with libyaml's event parser.
 *
 * The top of each document is a mapping keyed by the language ("en:", then
 * the nested keys); anything else is MT_ERR_INPUT (other YAML is not a
 * resource file: the sniffer refuses it).  Units: the string values, plain,
 * single- or double-quoted, of mappings and sequences at any depth; not the
 * keys, not plain scalars YAML reads as data (numbers, true/false/yes/no,
 * null, ~, dates), not tagged ones, not aliases (anchors and aliases are
 * never expanded: no "billion laughs").  A translated value's token (a
 * literal or folded block scalar from its | or > to its last line, a
 * comment on its header line with it) is replaced whole by one double-quoted
 * scalar (escaped: \" \\ \n \t \r, \uXXXX for other controls), its value's
 * leading and trailing whitespace (a block's final line break) inside the
 * quotes, so whatever its style was the file still reads the same values; every other byte (comments, keys, anchors,
 * indentation, untranslated values) is the file's own.  The language key is
 * set to the target when the file has one ("en:" -> "fr:", "pt-BR").
 *
 * libyaml's marks count characters; the bytes they start at are found by
 * walking the UTF-8 forward (the events come in order).  A malformed file is
 * MT_ERR_INPUT with libyaml's problem, line and column; nesting deeper than
 * max_depth is MT_ERR_TOO_LONG.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

#include "doc_format.h"
#include "doc_res.h"

enum { MAX_STACK = 1024 };

typedef struct {
    srv_res    *r;
    const char *d;
    size_t      n;
    size_t      ci, bo;             /* character ci of the stream starts at byte bo */
    int         max_depth;
    int         depth;
    char        key[MAX_STACK];     /* per open collection: 1 a mapping expecting a key, 0 its value, 2 a sequence */
    size_t      key_col[MAX_STACK]; /* per open mapping: the column of its last key */
    int         root_keys;          /* keys of the document's top mapping */
    size_t      loc_start, loc_end;
} yml;

/* The byte offset of character index (never before the last one asked). */
static size_t byte_at(yml *y, size_t index)
{
    while (y->ci < index && y->bo < y->n) {
        unsigned char c = (unsigned char)y->d[y->bo];
        y->bo += c < 0x80 ? 1 : c < 0xe0 ? 2 : c < 0xf0 ? 3 : 4;
        y->ci++;
    }
    return y->bo < y->n ? y->bo : y->n;
}

/* A plain scalar YAML (1.1, as Ruby's Psych) reads as data, not a string. */
static int data_scalar(const char *v, size_t n)
{
    static const char *const words[] = { "~", "null", "Null", "NULL", "true", "True", "TRUE", "false", "False",
                                         "FALSE", "yes", "Yes", "YES", "no", "No", "NO", "on", "On", "ON", "off",
                                         "Off", "OFF", "y", "Y", "n", "N", ".inf", ".nan", "-.inf", ".NaN", ".Inf" };
    for (size_t k = 0; k < sizeof words / sizeof words[0]; k++)
        if (!strcmp(v, words[k]))
            return 1;
    int digit = 0;
    for (size_t k = 0; k < n; k++) {
        if (!strchr("0123456789+-._:eExXabcdefABCDEFoO ", v[k]))
            return 0;
        digit |= v[k] >= '0' && v[k] <= '9';
    }
    return digit;                   /* 42, 1.5e3, 0x1F, 2024-01-31, 12:30:00 */
}

/* A language code: "en", "pt-BR", "zh_Hant", "es-419". */
static int locale_like(const char *v)
{
    size_t n = strlen(v), k = 0;
    while (k < n && ((v[k] >= 'a' && v[k] <= 'z') || (v[k] >= 'A' && v[k] <= 'Z')))
        k++;
    if (k < 2 || k > 3)
        return 0;
    if (k == n)
        return 1;
    if (v[k] != '-' && v[k] != '_')
        return 0;
    size_t t = n - k - 1;
    for (size_t j = k + 1; j < n; j++)
        if (!((v[j] >= 'a' && v[j] <= 'z') || (v[j] >= 'A' && v[j] <= 'Z') || (v[j] >= '0' && v[j] <= '9')))
            return 0;
    return t >= 2 && t <= 8;
}

static mt_status scalar(yml *y, const yaml_event_t *e, mt_err *err)
{
    int is_key = y->depth > 0 && y->key[y->depth - 1] == 1;
    const char *v = (const char *)e->data.scalar.value;
    size_t vn = e->data.scalar.length;
    size_t start = byte_at(y, e->start_mark.index), end = byte_at(y, e->end_mark.index);
    yaml_scalar_style_t style = e->data.scalar.style;
    int quoted = style == YAML_SINGLE_QUOTED_SCALAR_STYLE || style == YAML_DOUBLE_QUOTED_SCALAR_STYLE;
    if (y->depth == 0)
        return mt_err_set(err, MT_ERR_INPUT, "line %zu: a document that is one scalar, not a mapping keyed by "
                          "its language (Rails' \"en:\")", (size_t)e->start_mark.line + 1);
    if (is_key) {
        y->key_col[y->depth - 1] = e->start_mark.column;
        if (y->depth == 1) {
            if (!locale_like(v))
                return mt_err_set(err, MT_ERR_INPUT, "line %zu: the top key '%.40s' is not a language code, as a "
                                  "Rails locale file's (\"en:\")", (size_t)e->start_mark.line + 1, v);
            y->root_keys++;
            y->loc_start = quoted ? start + 1 : start;
            y->loc_end = quoted && end > start ? end - 1 : end;
        }
        return MT_OK;
    }
    const char *tag = (const char *)e->data.scalar.tag;
    if (tag && strcmp(tag, "!") && strcmp(tag, YAML_STR_TAG))
        return MT_OK;                           /* tagged: data of the program's */
    if (y->key[y->depth - 1] == 0 && e->start_mark.column <= y->key_col[y->depth - 1])
        return MT_OK;   /* a value no further in than its key ("m:\n|\n  text", which libyaml takes): a
                           quoted scalar written there would read as a key; left as it is */
    if (style == YAML_LITERAL_SCALAR_STYLE || style == YAML_FOLDED_SCALAR_STYLE)
        while (end > start && strchr(" \t\r\n", y->d[end - 1]))
            end--;                              /* libyaml's mark is past the blank lines after it: they stay */
    if (style == YAML_PLAIN_SCALAR_STYLE && data_scalar(v, vn))
        return MT_OK;
    if (memchr(v, 0, vn))
        return MT_OK;                           /* "\0": no unit can hold it */
    if (style == YAML_PLAIN_SCALAR_STYLE) {
        /* a plain scalar's scan took the blank lines after it, tabs and all; after a quoted one a tab
         * starting a line is an error: blank lines holding a tab go with the value (up to the last
         * line break before what follows, which keeps its indentation) */
        size_t k = end, last = 0;
        int tab = 0;
        for (; k < y->n && strchr(" \t\r\n", y->d[k]); k++) {
            tab |= y->d[k] == '\t';
            if (y->d[k] == '\n')
                last = k;
        }
        if (tab && last > end)
            end = y->d[last - 1] == '\r' ? last - 1 : last;
    }
    int touched = 0;                            /* the scalar right after its anchor or tag, no space */
    for (int k = 0; k < 2 && start < end && (y->d[start] == '&' || y->d[start] == '!'); k++) {
        char c;                                 /* its anchor or tag stays: the scalar starts after it */
        if (y->d[start++] == '&')               /* an anchor's name: libyaml's letters, digits, '_', '-' */
            while (start < end && ((c = y->d[start]) == '_' || c == '-' || (c >= '0' && c <= '9') ||
                                   (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')))
                start++;
        else
            while (start < end && !strchr(" \t\r\n", y->d[start]))
                start++;
        touched = start < end && !strchr(" \t\r\n", y->d[start]);
        while (start < end && strchr(" \t\r\n", y->d[start]))
            start++;
    }
    return srv_res_token(y->r, start, end, v, vn, start, touched ? SRV_RES_SPACE : 0, err);
}

/* One event: MT_OK, or a failure; *end set at the stream's end. */
static mt_status event(yml *y, const yaml_event_t *e, int *end, mt_err *err)
{
    switch (e->type) {
    case YAML_STREAM_END_EVENT:
        *end = 1;
        return MT_OK;
    case YAML_DOCUMENT_START_EVENT:
        y->root_keys = 0;
        return MT_OK;
    case YAML_SCALAR_EVENT:
    case YAML_ALIAS_EVENT: {
        mt_status st = e->type == YAML_SCALAR_EVENT ? scalar(y, e, err) : MT_OK;
        if (y->depth > 0 && y->key[y->depth - 1] != 2)
            y->key[y->depth - 1] ^= 1;          /* a key, then its value */
        return st;
    }
    case YAML_MAPPING_START_EVENT:
    case YAML_SEQUENCE_START_EVENT:
        if (y->depth == 0 && e->type == YAML_SEQUENCE_START_EVENT)
            return mt_err_set(err, MT_ERR_INPUT, "line %zu: a document that is a list, not a mapping keyed by its "
                              "language (Rails' \"en:\")", (size_t)e->start_mark.line + 1);
        if (y->depth == 1 && y->key[0] == 1)
            return mt_err_set(err, MT_ERR_INPUT, "line %zu: a top key that is not a language code",
                              (size_t)e->start_mark.line + 1);
        if (y->depth + 1 > y->max_depth || y->depth + 1 >= MAX_STACK)
            return mt_err_set(err, MT_ERR_TOO_LONG, "line %zu: YAML nesting deeper than %d (max_depth)",
                              (size_t)e->start_mark.line + 1, y->max_depth);
        y->key[y->depth++] = e->type == YAML_MAPPING_START_EVENT ? 1 : 2;
        return MT_OK;
    case YAML_MAPPING_END_EVENT:
    case YAML_SEQUENCE_END_EVENT:
        y->depth--;
        if (y->depth > 0 && y->key[y->depth - 1] != 2)
            y->key[y->depth - 1] ^= 1;          /* the collection was a value */
        if (y->depth == 0 && y->root_keys == 1 && !y->r->has_locale) {
            y->r->has_locale = 1;               /* one language: the target's code goes there */
            y->r->loc_start = y->loc_start;
            y->r->loc_end = y->loc_end;
        }
        return MT_OK;
    default:
        return MT_OK;
    }
}

/* data parsed into *out (a new srv_res of its units). */
static mt_status parse_into(const char *data, size_t len, const srv_doc_limits *lim, srv_res **out, mt_err *err)
{
    yml y = { .d = data, .n = len, .max_depth = lim->max_depth };
    mt_status st = srv_res_new(data, len, lim, &y.r, err);
    if (st != MT_OK)
        return st;
    y.r->locale_dash = 1;
    y.bo = len >= 3 && !memcmp(data, "\xef\xbb\xbf", 3) ? 3 : 0;     /* libyaml counts from after it */
    yaml_parser_t p;
    if (!yaml_parser_initialize(&p)) {
        srv_res_free(y.r);
        return mt_err_set(err, MT_ERR_NOMEM, "out of memory");
    }
    yaml_parser_set_input_string(&p, (const unsigned char *)data, len);
    for (int end = 0; !end && st == MT_OK;) {
        yaml_event_t e;
        if (!yaml_parser_parse(&p, &e)) {
            st = p.error == YAML_MEMORY_ERROR
                     ? mt_err_set(err, MT_ERR_NOMEM, "out of memory")
                     : mt_err_set(err, MT_ERR_INPUT, "not valid YAML: line %zu, column %zu: %s%s%s",
                                  (size_t)p.problem_mark.line + 1, (size_t)p.problem_mark.column + 1,
                                  p.problem ? p.problem : "error", p.context ? " " : "", p.context ? p.context : "");
            break;
        }
        st = event(&y, &e, &end, err);
        yaml_event_delete(&e);
    }
    yaml_parser_delete(&p);
    if (st != MT_OK) {
        srv_res_free(y.r);
        return st;
    }
    *out = y.r;
    return MT_OK;
}

/* Whether the file still reads as the same units once every value is the
 * double-quoted scalar a translation is written as: a trial render with
 * each unit "x" (the quoted form is one line whatever the text, so any
 * translation lays out the same), parsed again.  libyaml takes layouts the
 * quoted form cannot stand in (a tab or a value no further in than its key
 * after a plain or block scalar); such a file is refused rather than
 * answered broken. */
static mt_status check_rewritable(const char *data, size_t len, const srv_doc_limits *lim, mt_err *err)
{
    srv_res *trial = NULL, *back = NULL;
    char *out = NULL;
    size_t n = 0;
    mt_status st = parse_into(data, len, lim, &trial, err);
    for (int i = 0; st == MT_OK && i < srv_res_units(trial); i++)
        st = srv_res_set(trial, i, "x", 1, NULL, 0, err);
    if (st == MT_OK)
        st = srv_res_render(trial, &out, &n, err);
    if (st != MT_OK)
        goto done;
    mt_err ignored = {0};
    if (parse_into(out, n, lim, &back, &ignored) != MT_OK || srv_res_units(back) != srv_res_units(trial))
        st = mt_err_set(err, MT_ERR_INPUT, "this YAML's layout cannot be kept once its values are translated "
                        "(a tab, or a value no further in than its key, after a plain or block scalar): "
                        "write the values quoted or indented past their keys");
done:
    srv_res_free(back);
    srv_res_free(trial);
    free(out);
    return st;
}

static mt_status yaml_parse_doc(srv_doc_kind kind, const char *data, size_t len, const srv_doc_limits *lim,
                                const srv_doc_options *opt, void **state, mt_err *err)
{
    (void)kind;
    srv_res *r;
    mt_status st = parse_into(data, len, lim, &r, err);
    if (st == MT_OK && srv_res_units(r) > 0 && (st = check_rewritable(data, len, lim, err)) != MT_OK) {
        srv_res_free(r);
        return st;
    }
    if (st == MT_OK)
        *state = r;
    return st;
}

const srv_doc_format srv_doc_yaml_format = { yaml_parse_doc, srv_res_units, srv_res_unit, srv_res_set,
                                             srv_res_render, srv_res_free, srv_res_target };

/* A Rails locale file by its first lines: "---" maybe, then a language code
 * and ':' alone ("en:", "'pt-BR':"). */
int srv_doc_is_rails_yaml(const char *data, size_t len)
{
    size_t i = len >= 3 && !memcmp(data, "\xef\xbb\xbf", 3) ? 3 : 0;
    while (i < len) {
        const char *nl = memchr(data + i, '\n', len - i);
        size_t e = nl ? (size_t)(nl - data) : len, t = e;
        while (t > i && (data[t - 1] == '\r' || data[t - 1] == ' ' || data[t - 1] == '\t'))
            t--;
        if (t == i || data[i] == '#' || (t - i == 3 && !memcmp(data + i, "---", 3))) {
            i = e + 1;
            continue;
        }
        if (t - i < 3 || data[t - 1] != ':' || t - i > 24)
            return 0;
        char code[24];
        size_t a = i, b = t - 1;
        if (b - a >= 2 && (data[a] == '"' || data[a] == '\'') && data[b - 1] == data[a])
            a++, b--;
        memcpy(code, data + a, b - a);
        code[b - a] = 0;
        return locale_like(code);
    }
    return 0;
}
