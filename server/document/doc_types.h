/* doc_types: the values document.h and the formats (doc_format.h) share: a
 * file's kind and the limits a parse honours.  Apart so that the formats'
 * table needs nothing of document.h's calls. */
#ifndef SRV_DOC_TYPES_H
#define SRV_DOC_TYPES_H

#include <stddef.h>

typedef enum {
    SRV_DOC_TXT,
    SRV_DOC_HTML,
    SRV_DOC_SRT,
    SRV_DOC_VTT,
    SRV_DOC_PO,
    SRV_DOC_DOCX,
    SRV_DOC_ODT,
    SRV_DOC_JSON,               /* i18next JSON resources */
    SRV_DOC_ARB,                /* Flutter's Application Resource Bundle (JSON) */
    SRV_DOC_PROPERTIES,         /* Java .properties */
    SRV_DOC_STRINGS,            /* Apple .strings */
    SRV_DOC_ANDROID,            /* Android res/values/strings.xml */
    SRV_DOC_YAML,               /* Rails (Ruby i18n) YAML locale files */
    SRV_DOC_PPTX,               /* PowerPoint (Office Open XML) */
    SRV_DOC_XLSX,               /* Excel (Office Open XML) */
    SRV_DOC_ODP,                /* OpenDocument presentation */
    SRV_DOC_ODS,                /* OpenDocument spreadsheet */
    SRV_DOC_EPUB,               /* EPUB 2 and 3 */
    SRV_DOC_MARKDOWN,           /* CommonMark + GFM tables */
    SRV_DOC_XLIFF,              /* XLIFF 1.2, 2.0, 2.1 */
    SRV_DOC_N,
    SRV_DOC_UNKNOWN = -1
} srv_doc_kind;

typedef struct {
    size_t max_bytes;           /* the file */
    int    max_units;           /* translation units */
    size_t max_unit_bytes;      /* one unit's text */
    int    max_entries;         /* an archive's entries */
    size_t max_inflated;        /* an archive's bytes once inflated, all entries */
    size_t max_xml_part;        /* one XML part of an archive: its tree (doc_xml.c) costs several times its bytes */
    int    max_depth;           /* HTML and XML element nesting */
} srv_doc_limits;

/* What a caller chooses for one file (the limits are the server's): the
 * defaults from srv_doc_default_options (document.h), filled from POST
 * /translate_file's form (file_api.c) or `mtserve translate --file`'s flags. */
typedef struct {
    int overwrite;              /* XLIFF: a <target> that already holds text translated again (default 0: kept) */
} srv_doc_options;

#endif
