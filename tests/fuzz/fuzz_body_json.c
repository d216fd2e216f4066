/* fuzz_body_json: a POST body labelled application/json (server/http/body.c):
 * UTF-8 validation, jansson with duplicate keys rejected, the object check,
 * then every field getter (texts, ints, bools, strings, int lists) and the
 * error envelope of each failure.  The input is the raw body. */
#include "fuzz_body.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fuzz_body_request("application/json", (const char *)data, size);
    /* no Content-Type: http.c passes NULL, the body is still read as JSON */
    if (size && data[0] == '{')
        fuzz_body_request(NULL, (const char *)data, size);
    return 0;
}
