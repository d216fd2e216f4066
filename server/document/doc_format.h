/* doc_format: what each format of document.h fills (private to server/document).
 *
 * A format keeps its own state behind void *; document.c dispatches on the
 * kind and checks the arguments (unit index in range, links well formed)
 * before calling it, so a format trusts what it is given.
 */
#ifndef SRV_DOC_FORMAT_H
#define SRV_DOC_FORMAT_H

#include "doc_types.h"
#include "util/status.h"

typedef struct {
    /* MT_OK and *state, or a failure with err (nothing to free); lim and opt never NULL */
    mt_status   (*parse)(srv_doc_kind kind, const char *data, size_t len, const srv_doc_limits *lim,
                         const srv_doc_options *opt, void **state, mt_err *err);
    int         (*units)(const void *state);
    const char *(*unit)(const void *state, int i);
    mt_status   (*set)(void *state, int i, const char *text, size_t len, const long *links, int n_links,
                       mt_err *err);
    mt_status   (*render)(const void *state, char **out, size_t *len, mt_err *err);
    void        (*free)(void *state);
    /* the target language's code, for a format that names it (ARB's @@locale); NULL: none does */
    void        (*target)(void *state, const char *lang);
} srv_doc_format;

extern const srv_doc_format srv_doc_text_format;       /* doc_text.c: txt */
extern const srv_doc_format srv_doc_html_format;       /* doc_html.c: html */
extern const srv_doc_format srv_doc_subtitles_format;  /* doc_subtitles.c: srt, vtt */
extern const srv_doc_format srv_doc_po_format;         /* doc_po.c: po */
extern const srv_doc_format srv_doc_office_format;     /* doc_office.c: docx, odt, pptx, xlsx, odp, ods */
extern const srv_doc_format srv_doc_epub_format;       /* doc_epub.c: epub */
extern const srv_doc_format srv_doc_json_format;       /* doc_json.c: json, arb (doc_res.h, as the three below) */
extern const srv_doc_format srv_doc_properties_format; /* doc_properties.c: properties */
extern const srv_doc_format srv_doc_strings_format;    /* doc_strings.c: strings */
extern const srv_doc_format srv_doc_android_format;    /* doc_android.c: android */
extern const srv_doc_format srv_doc_yaml_format;       /* doc_yaml.c: yaml (Rails) */
extern const srv_doc_format srv_doc_markdown_format;   /* doc_markdown.c: md */
extern const srv_doc_format srv_doc_xliff_format;      /* doc_xliff.c: xliff */

/* Content sniffers (document.c asks them in this order: office, then vtt,
 * srt, the file name's extension, an XML root (Android, XLIFF), html, po,
 * json, Markdown when clearly so, strings, properties, else text when it is
 * UTF-8 without NUL and not YAML). */
int srv_doc_is_office(const char *data, size_t len, srv_doc_kind *kind);   /* a zip: docx, odt, pptx, xlsx, odp, ods, epub */
int srv_doc_is_subtitles(const char *data, size_t len, srv_doc_kind *kind); /* WEBVTT header, or SRT cues */
int srv_doc_is_po(const char *data, size_t len);
int srv_doc_is_json(const char *data, size_t len);        /* '{' ... '}' */
int srv_doc_is_strings(const char *data, size_t len);     /* "key" = "value" first */
int srv_doc_is_properties(const char *data, size_t len);  /* key=value lines and comments only */
int srv_doc_is_rails_yaml(const char *data, size_t len);  /* "en:" (a language code) first */

#endif
