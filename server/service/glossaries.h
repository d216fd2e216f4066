/* glossaries: the terms a translation keeps (translate/glossary.h), from
 * the server's files and the request.
 *
 * The server loads one TSV file per language pair (--glossary SRC-TGT=FILE)
 * at start.  A request may add "glossary": {"source term": "target term"}
 * (a JSON object; in a form, that object as a string), in the request's
 * source and target languages.  Each leg of a path gets the file of its own
 * pair merged with the request's terms, the request winning:
 *   direct:  leg 0 = file(source-target) + request
 *   pivot:   leg 0 = file(source-pivot) + request, whose target terms thus go
 *            into the pivot text as they are; leg 1 = file(pivot-target) +
 *            each request target term to itself, so it comes out unchanged.
 */
#ifndef SRV_GLOSSARIES_H
#define SRV_GLOSSARIES_H

#include "pairs.h"
#include "server.h"
#include "translate/glossary.h"

/* Every --glossary file, read and checked (the limits of the options).
 * 0, or -1 with a message in err naming the file and line. */
int  srv_glossaries_load(srv_server *srv, char *err, size_t err_len);
/* The same files read again into out[] (SIGHUP: reload.c), srv's untouched;
 * on failure out holds what was read (free each). */
int  srv_glossaries_read(const srv_server *srv, srv_glossary *out[SRV_MAX_GLOSSARIES], char *err, size_t err_len);
void srv_glossaries_free(srv_server *srv);

/* The request's "glossary": *out NULL when absent or empty; 0, or -1 with
 * resp failed (400 naming the problem and the term). */
int  srv_request_glossary(srv_request *req, srv_response *resp, srv_glossary **out);

/* out[0..path->n_legs): each leg's terms as above (NULL: none); free each with
 * srv_glossary_free.  0, or -1 with resp failed (out of memory). */
int  srv_leg_glossaries(const srv_server *srv, const srv_path *path, const srv_glossary *request,
                        srv_glossary *out[2], srv_response *resp);

#endif
