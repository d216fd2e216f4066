/* fuzz_xml: server/markup/xml.c (DeepL's tag_handling "xml") on arbitrary
 * bytes, checked against the contract of server/markup/xml.h:
 *   - a refusal is MT_ERR_INPUT or MT_ERR_TOO_LONG (nesting limit 48) with a
 *     message and no result;
 *   - every unit is non-blank, NUL-terminated UTF-8;
 *   - no translation set: the output is the input, byte for byte;
 *   - under each fake translation (tests/fake_translate.h: the words in
 *     place, reversed, or shuffled with links dropped and doubled) the output
 *     is well-formed and has the input's markup byte for byte, in the same
 *     nesting and order (tests/xml_check.h, read by xml_tree.c directly);
 *     with the words in place, its units hold the input's characters
 *     (whitespace aside, Unicode's: mt_utf8_is_space).
 * The first byte picks the translation (mod 4; 3: none) and the tag lists
 * (bits 2-5: outline detection, ignore "a" and "x:b", splitting "p",
 * non-splitting "d"); the rest is the text. */
#include "fuzz_common.h"

#include "../fake_translate.h"
#include "../xml_check.h"
#include "markup/xml.h"
#include "util/utf8.h"

/* The units of x, one after another, without whitespace (Unicode's, as the
 * words are cut: U+FEFF too, which a tag may leave outside its word, and which
 * at the very start of a text is its byte order mark): malloc'd. */
static char *unit_chars(const srv_xmarkup *x)
{
    mt_sbuf b = { 0 };
    for (int i = 0; i < srv_xmarkup_units(x); i++) {
        const char *u = srv_xmarkup_unit(x, i);
        for (size_t k = 0, n = strlen(u); k < n;) {
            uint32_t c;
            size_t m = mt_utf8_next(u + k, n - k, &c);
            if (!mt_utf8_is_space(c))
                mt_sb_add(&b, u + k, m);
            k += m;
        }
    }
    mt_sb_add(&b, "", 0);
    return b.p;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    static const char *const ign[] = { "a", "x:b" }, *const split[] = { "p" }, *const non[] = { "d" };
    int mode = data[0] % 4, bits = data[0] >> 2;
    srv_xml_tags tags = { .outline = bits & 1, .ignore = ign, .n_ignore = bits & 2 ? 2 : 0, .splitting = split,
                          .n_splitting = bits & 4 ? 1 : 0, .non_splitting = non, .n_non_splitting = bits & 8 ? 1 : 0 };
    const char *text = (const char *)data + 1;
    size_t n = size - 1;
    srv_xmarkup *x = NULL;
    mt_err err = { 0 };
    mt_status st = srv_xmarkup_parse(text, n, &tags, 48, &x, &err);
    if (st != MT_OK) {
        FUZZ_CHECK((st == MT_ERR_INPUT || st == MT_ERR_TOO_LONG) && x == NULL && err.msg[0]);
        return 0;
    }
    mt_sbuf sb = { 0 };
    for (int i = 0; i < srv_xmarkup_units(x); i++) {
        const char *u = srv_xmarkup_unit(x, i);
        FUZZ_CHECK(u && *u && mt_utf8_valid(u, strlen(u)));
        if (mode == 3)
            continue;
        const long *links;
        int nl = fake_translation(u, i, mode, size, &sb, &links);
        FUZZ_CHECK(srv_xmarkup_set(x, i, sb.p, sb.n, links, nl, &err) == MT_OK);
    }
    free(sb.p);
    char *out = NULL;
    size_t len = 0;
    FUZZ_CHECK(srv_xmarkup_render(x, &out, &len, &err) == MT_OK && out[len] == 0);
    if (mode == 3 || srv_xmarkup_units(x) == 0) {
        FUZZ_CHECK(len == n && !memcmp(out, text, n));
    } else {
        char *a = xml_skeleton(text, n), *b = xml_skeleton(out, len);
        FUZZ_CHECK(a && b);
        if (strcmp(a, b))
            fprintf(stderr, "markup differs\n%s\n---\n%s\n", a, b);
        FUZZ_CHECK(strcmp(a, b) == 0);
        free(a);
        free(b);
    }
    if (mode == 0) {
        srv_xmarkup *y = NULL;
        FUZZ_CHECK(srv_xmarkup_parse(out, len, &tags, 48, &y, &err) == MT_OK);
        char *ca = unit_chars(x), *cb = unit_chars(y);
        if (strcmp(ca, cb))
            fprintf(stderr, "characters differ\n%s\n---\n%s\n", ca, cb);
        FUZZ_CHECK(strcmp(ca, cb) == 0);
        free(ca);
        free(cb);
        srv_xmarkup_free(y);
    }
    free(out);
    srv_xmarkup_free(x);
    return 0;
}
