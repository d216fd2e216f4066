/* fuzz_doc_xliff: XLIFF 1.2 and 2.x (server/document/doc_xliff.c on expat).
 * Byte 0 picks the translation (bit 3: srv_doc_options.overwrite, filled
 * targets are units too), the rest is the file:
 *   - srv_doc_sniff never fails; a parse refuses only with MT_ERR_INPUT or
 *     MT_ERR_TOO_LONG and a message; units are non-blank UTF-8;
 *   - a render with nothing set gives the input back byte for byte;
 *   - every unit translated (tests/fake_translate.h: the words in place,
 *     reversed, or shuffled with links dropped; bit 2: the characters XML
 *     escapes added, & < > ]]> " '), the target language set: the rendered
 *     file is well-formed XLIFF again and has no unit left (each source now
 *     has a target that holds something). */
#include "fuzz_common.h"

#include "document/document.h"
#include "../fake_translate.h"
#include "util/utf8.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1 || size > (1 << 16))
        return 0;
    int mode = data[0] & 3, marks = data[0] & 4;
    if (mode == 3)
        mode = 0;
    const char *file = (const char *)data + 1;
    size_t n = size - 1;
    srv_doc_kind k = srv_doc_sniff(file, n, "x.xlf");
    FUZZ_CHECK(k == SRV_DOC_UNKNOWN || (k >= 0 && k < SRV_DOC_N));
    srv_doc_limits lim = srv_doc_default_limits();
    lim.max_depth = 64;
    lim.max_unit_bytes = 4096;
    srv_doc *d = NULL, *d2 = NULL;
    mt_err err = { 0 };
    srv_doc_options opt = srv_doc_default_options();
    opt.overwrite = (data[0] & 8) != 0;
    mt_status st = srv_doc_parse_opt(SRV_DOC_XLIFF, file, n, &lim, &opt, &d, &err);
    if (st != MT_OK) {
        FUZZ_CHECK((st == MT_ERR_INPUT || st == MT_ERR_TOO_LONG) && !d && err.msg[0]);
        return 0;
    }
    char *out;
    size_t len;
    FUZZ_CHECK(srv_doc_render(d, &out, &len, &err) == MT_OK && len == n && !memcmp(out, file, n));
    free(out);
    int units = srv_doc_units(d);
    mt_sbuf scratch = { 0 }, t = { 0 };
    for (int i = 0; i < units; i++) {
        const char *u = srv_doc_unit(d, i);
        FUZZ_CHECK(u && *u && mt_utf8_valid(u, strlen(u)));
        const long *links;
        int nl = fake_translation(u, i, mode, size, &scratch, &links);
        t.n = 0;
        if (marks)
            mt_sb_add(&t, "&<>]]>\"' ", 9);
        mt_sb_add(&t, scratch.p, scratch.n);
        FUZZ_CHECK(srv_doc_set(d, i, t.p, t.n, marks ? NULL : links, marks ? 0 : nl, &err) == MT_OK);
    }
    free(scratch.p);
    free(t.p);
    srv_doc_target(d, "pt-BR");
    FUZZ_CHECK(srv_doc_render(d, &out, &len, &err) == MT_OK);
    st = srv_doc_parse(SRV_DOC_XLIFF, out, len, &lim, &d2, &err);
    if (st != MT_OK)
        fprintf(stderr, "the rendered file does not parse: %s\n%s\n", err.msg, out);
    FUZZ_CHECK(st == MT_OK);
    if (srv_doc_units(d2))
        fprintf(stderr, "%d units left of %d:\n%s\n", srv_doc_units(d2), units, out);
    FUZZ_CHECK(srv_doc_units(d2) == 0);
    free(out);
    srv_doc_free(d2);
    srv_doc_free(d);
    return 0;
}
