/* fuzz_doc_json: i18next JSON and ARB (server/document/doc_json.c) against the resource readers'
 * contract of fuzz_doc_res.h (parse, render identical bytes, escape and
 * decode round trip).  Byte 0 picks the translation, the rest is the file. */
#include "fuzz_doc_res.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) { return fuzz_res(SRV_DOC_JSON, data, size, 1); }
