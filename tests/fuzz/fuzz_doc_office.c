/* fuzz_doc_office: server/document/doc_office.c and doc_zip.c (docx, odt) on
 * arbitrary bytes, checked against document.h (fuzz_doc_zip.h says how).
 * The first byte: bit 0 the kind (docx, odt), bit 1 the translation (in
 * place, reversed), bit 2 the input (0: a whole archive; 1: one XML part,
 * wrapped here into a minimal archive as word/document.xml or content.xml,
 * so the XML walk is reached without the fuzzer having to build a zip). */
#include "fuzz_doc_zip.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    srv_doc_kind kind = data[0] & 1 ? SRV_DOC_ODT : SRV_DOC_DOCX;
    int reversed = (data[0] >> 1) & 1;
    char *file;
    size_t n;
    if ((data[0] >> 2) & 1) {       /* the part wrapped: mimetype or content types first, stored */
        int odt = kind == SRV_DOC_ODT;
        const char *name[] = { odt ? "mimetype" : "[Content_Types].xml", odt ? "content.xml" : "word/document.xml" };
        const char *part[] = { odt ? "application/vnd.oasis.opendocument.text" : "<Types/>", (const char *)data + 1 };
        size_t lens[] = { SIZE_MAX, size - 1 };
        file = zip_of(name, part, lens, 2, &n);
    } else {
        file = input_copy(data, size, &n);
    }
    fuzz_doc_check(kind, file, n, reversed);
    return 0;
}
