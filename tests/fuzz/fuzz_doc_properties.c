/* fuzz_doc_properties: Java .properties (server/document/doc_properties.c) against the resource readers'
 * contract of fuzz_doc_res.h (parse, render identical bytes, escape and
 * decode round trip).  Byte 0 picks the translation, the rest is the file. */
#include "fuzz_doc_res.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) { return fuzz_res(SRV_DOC_PROPERTIES, data, size, 1); }
