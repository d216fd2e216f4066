/* fuzz_body_form: application/x-www-form-urlencoded bodies (server/http/body.c):
 * srv_form_parse on its own (%-escapes, '+', '&' and '=' splitting, UTF-8 and
 * NUL checks after decoding), then the whole srv_body_parse path with that
 * Content-Type (including its "looks like JSON" switch) and the field getters
 * in form mode (ints and bools given as strings).  The input is the raw body. */
#include "fuzz_body.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char err[160] = "";
    json_t *obj = srv_form_parse((const char *)data, size, err, sizeof err);
    if (obj) {
        FUZZ_CHECK(json_is_object(obj));
        const char *key;
        json_t *val;
        json_object_foreach(obj, key, val) {
            FUZZ_CHECK(*key && fuzz_utf8_valid(key, strlen(key)));
            FUZZ_CHECK(json_is_string(val));
            /* NULs are refused, so the C string is the whole value */
            FUZZ_CHECK(strlen(json_string_value(val)) == json_string_length(val));
            /* a decoded value is never longer than its encoded form */
            FUZZ_CHECK(json_string_length(val) <= size);
        }
        json_decref(obj);
    } else {
        FUZZ_CHECK(err[0] != '\0');
    }
    fuzz_body_request("application/x-www-form-urlencoded", (const char *)data, size);
    return 0;
}
