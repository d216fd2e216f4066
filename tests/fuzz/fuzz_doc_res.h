/* fuzz_doc_res.h: the contract every resource-file reader of server/document
 * (doc_json.c, doc_properties.c, doc_strings.c, doc_android.c, doc_yaml.c on
 * doc_res.c)
 * is fuzzed against; fuzz_doc_json.c and its siblings call fuzz_res with
 * their kind.  Byte 0 picks the translation, the rest is the file:
 *   - srv_doc_sniff never fails, whatever the bytes;
 *   - a parse refuses only with MT_ERR_INPUT or MT_ERR_TOO_LONG and a
 *     message; else every unit is non-blank UTF-8;
 *   - a render with no translation set gives the input back byte for byte;
 *   - every unit "translated" (mode 0: the unit itself; mode 1: it between
 *     the characters each format must escape: quotes, backslash, & < ]]>, a
 *     leading @, a line break, a tab, non-ASCII) renders to a file that parses
 *     again with as many units, and (but for Android, whose reader folds
 *     whitespace) each unit exactly the translation given: escaping and
 *     decoding are each other's inverse. */
#ifndef FUZZ_DOC_RES_H
#define FUZZ_DOC_RES_H

#include "fuzz_common.h"

#include "document/document.h"
#include "util/utf8.h"

static int fuzz_res(srv_doc_kind kind, const uint8_t *data, size_t size, int exact)
{
    if (size < 1 || size > (1 << 16))
        return 0;
    int mode = data[0] & 1;
    const char *file = (const char *)data + 1;
    size_t n = size - 1;
    srv_doc_kind k = srv_doc_sniff(file, n, "x");
    FUZZ_CHECK(k == SRV_DOC_UNKNOWN || (k >= 0 && k < SRV_DOC_N));
    srv_doc_limits lim = srv_doc_default_limits();
    lim.max_depth = 64;
    lim.max_unit_bytes = 4096;
    srv_doc *d = NULL, *d2 = NULL;
    mt_err err = { 0 };
    mt_status st = srv_doc_parse(kind, file, n, &lim, &d, &err);
    if (st != MT_OK) {
        FUZZ_CHECK((st == MT_ERR_INPUT || st == MT_ERR_TOO_LONG) && !d && err.msg[0]);
        return 0;
    }
    char *out;
    size_t len;
    FUZZ_CHECK(srv_doc_render(d, &out, &len, &err) == MT_OK && len == n && !memcmp(out, file, n));
    free(out);
    int units = srv_doc_units(d);
    char **tr = calloc((size_t)units + 1, sizeof *tr);
    FUZZ_CHECK(tr);
    for (int i = 0; i < units; i++) {
        const char *u = srv_doc_unit(d, i);
        FUZZ_CHECK(u && *u && mt_utf8_valid(u, strlen(u)));
        size_t ul = strlen(u);
        tr[i] = malloc(ul + 64);
        FUZZ_CHECK(tr[i]);
        if (mode == 0)
            memcpy(tr[i], u, ul + 1);
        else
            snprintf(tr[i], ul + 64, "@\"'\\&<]]>%s\n\t\xc3\xa9\xf0\x9f\x98\x80!", u);
        FUZZ_CHECK(srv_doc_set(d, i, tr[i], strlen(tr[i]), NULL, 0, &err) == MT_OK);
    }
    srv_doc_target(d, "pt-BR");
    FUZZ_CHECK(srv_doc_render(d, &out, &len, &err) == MT_OK);
    lim.max_unit_bytes = 8192;
    st = srv_doc_parse(kind, out, len, &lim, &d2, &err);
    if (st != MT_OK)
        fprintf(stderr, "the rendered file does not parse: %s\n", err.msg);
    FUZZ_CHECK(st == MT_OK && srv_doc_units(d2) == units);
    for (int i = 0; exact && i < units; i++)
        FUZZ_CHECK(!strcmp(srv_doc_unit(d2, i), tr[i]));
    for (int i = 0; i < units; i++)
        free(tr[i]);
    free(tr);
    free(out);
    srv_doc_free(d2);
    srv_doc_free(d);
    return 0;
}

#endif
