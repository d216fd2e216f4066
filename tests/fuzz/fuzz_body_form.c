/* fuzz_body_form: application/x-www-form-urlencoded bodies (server/http/body.c):
 * srv_form_parse on its own (%-escapes, '+', '&' and '=' splitting, UTF-8 and
 * NUL checks after decoding; a repeated name kept last, or as a list), then the whole srv_body_parse path with that
 * Content-Type (including its "looks like JSON" switch) and the field getters
 * in form mode (ints and bools given as strings).  The input is the raw body. */
#include "fuzz_body.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char err[160] = "";
    for (int lists = 0; lists < 2; lists++) {
        json_t *obj = srv_form_parse((const char *)data, size, lists, err, sizeof err);
        if (!obj) {
            FUZZ_CHECK(err[0] != '\0');
            continue;
        }
        FUZZ_CHECK(json_is_object(obj));
        const char *key;
        json_t *val;
        json_object_foreach(obj, key, val) {
            FUZZ_CHECK(*key && fuzz_utf8_valid(key, strlen(key)));
            /* lists: a repeated name's values, at least two */
            FUZZ_CHECK(json_is_string(val) || (lists && json_is_array(val) && json_array_size(val) >= 2));
            for (size_t i = 0; i < (json_is_array(val) ? json_array_size(val) : 1); i++) {
                json_t *s = json_is_array(val) ? json_array_get(val, i) : val;
                FUZZ_CHECK(json_is_string(s));
                /* NULs are refused, so the C string is the whole value */
                FUZZ_CHECK(strlen(json_string_value(s)) == json_string_length(s));
                /* a decoded value is never longer than its encoded form */
                FUZZ_CHECK(json_string_length(s) <= size);
            }
        }
        json_decref(obj);
    }
    fuzz_body_request("application/x-www-form-urlencoded", (const char *)data, size);
    return 0;
}
