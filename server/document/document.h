/* document: translating whole files with their structure kept.
 *
 *   srv_doc_sniff    which format a file is in, by its content (the file name
 *                    only breaks ties: a .vtt and a .txt are both text)
 *   srv_doc_parse    the file -> its translation units (plain texts)
 *   (the caller translates each unit as plain text, with word alignments)
 *   srv_doc_set      unit i's translation and its word links
 *   srv_doc_render   the file again, each unit replaced by its translation,
 *                    everything that is not text byte for byte as it was
 *
 * The same contract as markup/html.h, for every format: a unit without a
 * translation is written as its source, so a render after no set gives back
 * the file's text (though not always its bytes: an archive is rewritten).
 *
 * Formats (one file each; doc_format.h is the table they fill):
 *   txt    plain UTF-8 text: a paragraph (lines up to a blank line) is a unit,
 *          its line breaks kept (doc_text.c)
 *   html   markup/html.h, a document or a fragment (doc_html.c)
 *   srt    SubRip; vtt WebVTT: the cues' text, a sentence that runs over
 *          several cues translated as one and split back over them by the
 *          alignment (doc_runs.h); numbers, timings, settings and styling
 *          tags kept (doc_subtitles.c)
 *   po     gettext .po/.pot: msgid (and msgid_plural) translated into
 *          msgstr (every plural form), placeholders and markup kept exactly,
 *          the fuzzy flag set on what was filled (doc_po.c)
 *   docx   Office Open XML; odt OpenDocument text: each paragraph a unit, its
 *          runs' formatting carried over by the alignment (doc_runs.h), every
 *          other part of the archive copied (doc_office.c)
 *   pptx, xlsx  Office Open XML presentations (slides, notes) and workbooks
 *          (shared and inline strings); odp, ods  their OpenDocument kin (an
 *          ods cell only when it holds a string) (doc_office.c)
 *   epub   EPUB 2 and 3: the spine's XHTML through the HTML path, written
 *          back well-formed; the package's title and description, the NCX's
 *          titles; dc:language, and the XHTML roots' lang and xml:lang,
 *          set to the target (doc_epub.c)
 *   json   i18next JSON; arb Flutter's ARB: string values, not keys nor ARB's
 *          "@" metadata; "@@locale" set to the target (doc_json.c)
 *   properties  Java .properties (doc_properties.c); strings  Apple .strings
 *          (doc_strings.c); android  Android strings.xml: <string>,
 *          <string-array> and <plurals> items, translatable="false" kept
 *          (doc_android.c); yaml  Rails locale files ("en:" on top, libyaml;
 *          doc_yaml.c).  The resource formats splice each translated
 *          value, escaped their way, into the file's own bytes (doc_res.h).
 *   md     Markdown, CommonMark + GFM tables (cmark-gfm): paragraphs,
 *          headings, table cells; inline markup placed by the alignment,
 *          code, link targets, HTML, front matter kept (doc_markdown.c)
 *   xliff  XLIFF 1.2 and 2.x: sources into targets (a filled target kept
 *          unless srv_doc_options.overwrite), inline codes kept, the
 *          target language and state set (doc_xliff.c)
 *
 * Sniffing never takes structured text for prose: XML with another root,
 * a JSON array, YAML other than a Rails locale file are SRV_DOC_UNKNOWN.
 *
 * Limits (srv_doc_limits) bound what a hostile file can cost: its bytes, its
 * units, an archive's entries and inflated bytes, XML nesting.  A file over
 * one gets MT_ERR_TOO_LONG naming the limit; a file that is not what its
 * format says, MT_ERR_INPUT naming the problem and where (line, entry).
 */
#ifndef SRV_DOCUMENT_H
#define SRV_DOCUMENT_H

#include <stddef.h>

#include "doc_types.h"
#include "util/status.h"

/* Defaults: 16 MB, 100,000 units, 64 KB a unit, 2,000 entries, 256 MB
 * inflated, 32 MB an XML part, nesting 256. */
srv_doc_limits srv_doc_default_limits(void);

/* Overwrite off. */
srv_doc_options srv_doc_default_options(void);

typedef struct srv_doc srv_doc;

/* The format of data[0..len), by content; name (may be NULL) breaks ties and
 * names the formats content cannot tell (.txt, .pot).  SRV_DOC_UNKNOWN when it
 * is none of them (a zip of none of the archive formats, binary data). */
srv_doc_kind srv_doc_sniff(const char *data, size_t len, const char *name);
/* "txt", "html", "srt", "vtt", "po", "docx", "odt", "json", "arb",
 * "properties", "strings", "android", "yaml", "pptx", "xlsx", "odp", "ods",
 * "epub", "md", "xliff"; NULL out of range. */
const char  *srv_doc_kind_name(srv_doc_kind k);
/* The file extension and MIME type a rendered file is served with. */
const char  *srv_doc_kind_ext(srv_doc_kind k);
const char  *srv_doc_kind_mime(srv_doc_kind k);
/* The formats, comma-separated extensions, as /frontend/settings lists them
 * (".txt, .html, ..."; .xml is Android's strings.xml, .yml Rails'): a static
 * string. */
const char  *srv_doc_supported(void);

/* Parses data[0..len) as kind (it must outlive the result).  MT_OK and *out,
 * or a failure with err: MT_ERR_INPUT (not that format: what and where),
 * MT_ERR_TOO_LONG (over a limit: which), MT_ERR_NOMEM. */
mt_status    srv_doc_parse(srv_doc_kind kind, const char *data, size_t len, const srv_doc_limits *lim,
                           srv_doc **out, mt_err *err);
/* The same with the caller's options (NULL: srv_doc_default_options): what
 * a format reads as a unit may depend on them (XLIFF's overwrite). */
mt_status    srv_doc_parse_opt(srv_doc_kind kind, const char *data, size_t len, const srv_doc_limits *lim,
                               const srv_doc_options *opt, srv_doc **out, mt_err *err);
void         srv_doc_free(srv_doc *d);
srv_doc_kind srv_doc_kind_of(const srv_doc *d);

/* The units to translate: never blank, valid UTF-8. */
int          srv_doc_units(const srv_doc *d);
const char  *srv_doc_unit(const srv_doc *d, int i);
/* Unit i's translation text[0..len) and its word links [n_links][4]: source
 * [start, end) in the unit, target [start, end) in text, code points (the
 * pipeline's srv_tr_result.words).  Copied.  MT_OK, or MT_ERR_NOMEM /
 * MT_ERR_INPUT (i out of range). */
mt_status    srv_doc_set(srv_doc *d, int i, const char *text, size_t len, const long *links, int n_links,
                         mt_err *err);
/* The target language's code (a copy is kept), for the formats that name it
 * in the file: ARB's "@@locale" is set to it ("pt-BR" as "pt_BR"), a Rails
 * file's top key too ("pt-BR"), an EPUB's dc:language ("pt-BR"), XLIFF's
 * target-language or trgLang. */
void         srv_doc_target(srv_doc *d, const char *lang);
/* The file with every unit set so far translated: malloc'd, *len its length
 * (NUL-terminated for the text formats).  MT_OK or a failure with err. */
mt_status    srv_doc_render(const srv_doc *d, char **out, size_t *len, mt_err *err);

#endif
