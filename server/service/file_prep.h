/* file_prep: a document received (POST /translate_file, DeepL's POST
 * /v2/document) made ready to become a file job (file_job.h): parsed from a
 * copy of its bytes under the server's limits, its language named or detected
 * on its first units, the one model that translates the pair, the decode
 * parameters and the terms to keep.  The endpoints read their own forms and
 * answer in their own shapes; what a document needs in between is here.
 */
#ifndef SRV_FILE_PREP_H
#define SRV_FILE_PREP_H

#include "detect_source.h"
#include "file_job.h"
#include "server.h"

/* A received file's size (413 past --max-file-bytes) and format, read from its
 * bytes and name (415, naming the formats, for one we do not read): 0 with
 * *kind, or -1 with resp failed. */
int  srv_file_kind(const srv_server *srv, srv_response *resp, const char *data, size_t len, const char *name,
                   srv_doc_kind *kind);

/* The document in data[0..len) (the request's body: it goes with the
 * request) parsed from a copy, which the job will keep, with the request's
 * options (NULL: srv_doc_default_options): 0 with *copy and *doc, or -1 with
 * resp failed (413 past --max-file-bytes or --max-file-units, 400 for a file
 * that is not what it says) and nothing held. */
int  srv_file_parse(const srv_server *srv, srv_response *resp, const char *data, size_t len, srv_doc_kind kind,
                    const srv_doc_options *opt, char **copy, srv_doc **doc);

/* The job's route for doc into target: *source a code, or "auto" (detected on
 * the first units, then *source = guess->code); one model (no pivot: the
 * document's inline tags follow one model's alignments); the decode
 * parameters resolved (every format's placeholders kept out of the model, as
 * /translate keeps them; the target named in the file where it has a place
 * for it, srv_doc_target); the pair's --glossary file merged with terms (NULL:
 * none) into r->glossary (the job's once started).  0, or -1 with resp failed
 * and r->glossary NULL. */
int  srv_file_route_doc(srv_server *srv, srv_response *resp, srv_doc *doc, const char *target,
                        const char **source, srv_lang_guess *guess, const srv_glossary *terms, srv_file_route *r);

/* The translated file's name: "report.docx" into fr -> "report.fr.docx",
 * reduced to letters, digits, '.', '-' and '_' (a URL path segment, a header value). */
void srv_file_result_name(const char *name, const char *lang, srv_doc_kind kind, char *out, size_t len);

/* A document's failure as the API's: MT_ERR_TOO_LONG 413, else by status. */
int  srv_file_fail(srv_response *resp, const mt_err *err);

/* The code points of the document's units: what DeepL bills for it. */
long srv_file_chars(const srv_doc *doc);

#endif
