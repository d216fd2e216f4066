/* fuzz_doc_zipformats: server/document/doc_office.c (pptx, xlsx, odp, ods),
 * doc_epub.c (EPUB: container, package, XHTML through markup/html.h kept
 * well-formed, NCX) and doc_zip.c on arbitrary bytes, checked against
 * document.h (fuzz_doc_zip.h says how).
 * The first byte: mod 8 the kind (0 pptx, 1 xlsx, 2 odp, 3 ods, 4-7 EPUB),
 * bit 3 the translation (in place, reversed), bit 4 the input (0: a whole
 * archive; 1: one XML part, wrapped here into a minimal archive of the kind,
 * so the XML walk is reached without the fuzzer having to build a zip), bit
 * 5 which part it is: pptx a slide or a notes page, xlsx the shared strings
 * or a sheet, odp/ods content.xml or styles.xml, EPUB a spine XHTML document
 * or the NCX (the package is ours: it names both). */
#include "fuzz_doc_zip.h"

static const char CONTAINER[] = "<container xmlns=\"urn:oasis:names:tc:opendocument:xmlns:container\"><rootfiles>"
                                "<rootfile full-path=\"OEBPS/p.opf\" media-type=\"application/oebps-package+xml\"/>"
                                "</rootfiles></container>";
static const char OPF[] =
    "<package xmlns=\"http://www.idpf.org/2007/opf\"><metadata xmlns:dc=\"http://purl.org/dc/elements/1.1/\">"
    "<dc:title>A book</dc:title><dc:language>en</dc:language></metadata><manifest><item id=\"c\" href=\"c.xhtml\" "
    "media-type=\"application/xhtml+xml\"/><item id=\"n\" href=\"toc.ncx\" media-type=\"application/x-dtbncx+xml\"/>"
    "</manifest><spine toc=\"n\"><itemref idref=\"c\"/></spine></package>";
static const char XHTML[] = "<html xmlns=\"http://www.w3.org/1999/xhtml\"><body><p>One page.</p></body></html>";
static const char NCX[] = "<ncx xmlns=\"http://www.daisy.org/z3986/2005/ncx/\"><docTitle><text>A book</text>"
                          "</docTitle></ncx>";

/* The input as part `second` of a minimal archive of kind k: malloc'd. */
static char *wrap(int k, int second, const uint8_t *xml, size_t n, size_t *len)
{
    const char *in = (const char *)xml;
    static const char *const MIME[] = { NULL, NULL, "application/vnd.oasis.opendocument.presentation",
                                        "application/vnd.oasis.opendocument.spreadsheet" };
    switch (k) {
    case 0: case 1: {
        const char *name[] = { "[Content_Types].xml", k ? "xl/workbook.xml" : "ppt/presentation.xml",
                               k ? (second ? "xl/worksheets/sheet1.xml" : "xl/sharedStrings.xml")
                                 : (second ? "ppt/notesSlides/notesSlide1.xml" : "ppt/slides/slide1.xml") };
        const char *part[] = { "<Types/>", "<x/>", in };
        size_t lens[] = { SIZE_MAX, SIZE_MAX, n };
        return zip_of(name, part, lens, 3, len);
    }
    case 2: case 3: {
        const char *name[] = { "mimetype", second ? "styles.xml" : "content.xml" };
        const char *part[] = { MIME[k], in };
        size_t lens[] = { SIZE_MAX, n };
        return zip_of(name, part, lens, 2, len);
    }
    default: {
        const char *name[] = { "mimetype", "META-INF/container.xml", "OEBPS/p.opf", "OEBPS/c.xhtml", "OEBPS/toc.ncx" };
        const char *part[] = { "application/epub+zip", CONTAINER, OPF, second ? XHTML : in, second ? in : NCX };
        size_t lens[] = { SIZE_MAX, SIZE_MAX, SIZE_MAX, second ? SIZE_MAX : n, second ? n : SIZE_MAX };
        return zip_of(name, part, lens, 5, len);
    }
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    static const srv_doc_kind KIND[] = { SRV_DOC_PPTX, SRV_DOC_XLSX, SRV_DOC_ODP, SRV_DOC_ODS, SRV_DOC_EPUB };
    int k = data[0] & 7;
    if (k > 4)
        k = 4;
    int reversed = (data[0] >> 3) & 1;
    size_t n;
    char *file = (data[0] >> 4) & 1 ? wrap(k, (data[0] >> 5) & 1, data + 1, size - 1, &n) : input_copy(data, size, &n);
    fuzz_doc_check(KIND[k], file, n, reversed);
    return 0;
}
