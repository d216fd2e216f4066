/* fuzz_yaml: untrusted bytes through mt_yaml_parse (engine/formats/yaml.c), the
 * parser of Marian's decoder.yml, model.yml and vocabulary files.
 *
 * Covers line splitting (CR/LF, BOM, NUL, UTF-8, tabs in indentation,
 * document markers and directives), block mappings and sequences (compact
 * entries, sequences at their key's indentation, indentation errors), flow
 * collections on one line, the three scalar styles with every escape, the
 * core-schema typing of plain values, duplicate keys, the depth bound, and
 * every refusal path.
 *
 * Checked: a success gives a tree that jansson can serialize, and the same
 * input parsed again gives an equal tree; a failure gives no tree, a
 * FORMAT/UNSUPPORTED status (the input is small: never out of memory) and a
 * message that names the file and line and is valid UTF-8.  The input is the
 * file's text. */
#include "fuzz_common.h"

#include "formats/yaml.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    json_t *a = NULL, *b = NULL;
    mt_err err = {0};
    mt_status st = mt_yaml_parse("f.yml", (const char *)data, size, &a, &err);
    if (st != MT_OK) {
        FUZZ_CHECK(a == NULL && err.msg[0]);
        FUZZ_CHECK(st == MT_ERR_FORMAT || st == MT_ERR_UNSUPPORTED);
        FUZZ_CHECK(!strncmp(err.msg, "f.yml:", 6));
        FUZZ_CHECK(fuzz_utf8_valid(err.msg, strlen(err.msg)));
        return 0;
    }
    FUZZ_CHECK(a != NULL);
    char *text = json_dumps(a, JSON_ENCODE_ANY | JSON_COMPACT);
    FUZZ_CHECK(text != NULL);
    free(text);
    FUZZ_CHECK(mt_yaml_parse("f.yml", (const char *)data, size, &b, &err) == MT_OK);
    FUZZ_CHECK(json_equal(a, b) || (json_is_null(a) && json_is_null(b)));
    json_decref(a);
    json_decref(b);
    return 0;
}
