/* fuzz_body_multipart: multipart/form-data bodies (server/http/body.c): the
 * boundary parameter of the Content-Type (quoted or not), delimiter search,
 * part headers (Content-Disposition name= vs filename=), values checked for
 * UTF-8 and NULs; srv_multipart_file (the file part of POST /translate_file:
 * it points inside the body); then srv_body_parse with that Content-Type and
 * the getters.
 *
 * Input: the Content-Type header value, '\n', then the raw body, e.g.
 *     multipart/form-data; boundary=B\n--B\r\nContent-Disposition: form-data; name="q"\r\n\r\nHi\r\n--B--\r\n
 * An input without '\n' is a body under a fixed Content-Type. */
#include "fuzz_body.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const uint8_t *nl = memchr(data, '\n', size < 512 ? size : 512);
    char ct[520];
    const char *body;
    size_t len;
    if (nl) {
        size_t n = (size_t)(nl - data);
        memcpy(ct, data, n);            /* a header value is a C string: a NUL ends it early */
        ct[n] = '\0';
        body = (const char *)nl + 1;
        len = size - n - 1;
    } else {
        snprintf(ct, sizeof ct, "multipart/form-data; boundary=XyZ");
        body = (const char *)data;
        len = size;
    }
    /* the body in a buffer of its exact size, so any over-read is caught */
    char *copy = malloc(len ? len : 1);
    FUZZ_CHECK(copy);
    memcpy(copy, body, len);

    char err[160] = "";
    json_t *obj = srv_multipart_parse(copy, len, ct, err, sizeof err);
    if (obj) {
        FUZZ_CHECK(json_is_object(obj));
        const char *key;
        json_t *val;
        json_object_foreach(obj, key, val) {
            FUZZ_CHECK(fuzz_utf8_valid(key, strlen(key)));
            FUZZ_CHECK(json_is_string(val) && json_string_length(val) <= len);
            FUZZ_CHECK(strlen(json_string_value(val)) == json_string_length(val));
        }
        json_decref(obj);
    } else {
        FUZZ_CHECK(err[0] != '\0');
    }
    /* the file part of POST /translate_file: inside the body, its name copied bounded */
    const char *fdata;
    size_t flen;
    char fname[64];
    int found = srv_multipart_file(copy, len, ct, "file", &fdata, &flen, fname, sizeof fname, err, sizeof err);
    FUZZ_CHECK(found >= -1 && found <= 1);
    if (found == 1)
        FUZZ_CHECK(fdata >= copy && fdata + flen <= copy + len && strlen(fname) < sizeof fname);
    if (found < 0)
        FUZZ_CHECK(err[0] != '\0');
    fuzz_body_request(ct, copy, len);
    free(copy);
    return 0;
}
