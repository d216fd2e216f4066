/* doc_zip: the archive layer of the office formats and EPUB (private to server/document),
 * libzip on memory only: nothing touches the disk.
 *
 *   srv_zip_open     an archive read from memory, its entries checked against
 *                    the limits (their count, their declared inflated sizes,
 *                    encryption) before anything is inflated
 *   srv_zip_read     one entry inflated, the bytes actually inflated counted
 *                    against the same budget (an entry that inflates past
 *                    its declared size is refused, not trusted)
 *   srv_zip_rewrite  the archive again with some entries replaced: libzip
 *                    copies every other entry's compressed bytes as they are,
 *                    in their order, with their compression (an odt's stored
 *                    "mimetype" stays first and stored)
 *   srv_zip_sniff    which office format or EPUB, or none, by the entries
 *
 * Messages name the entry (its name made printable) and the limit.
 */
#ifndef SRV_DOC_ZIP_H
#define SRV_DOC_ZIP_H

#include <stddef.h>
#include <time.h>

#include "document.h"

typedef struct srv_zip srv_zip;

/* data[0..len) must outlive the result.  MT_OK and *out; MT_ERR_INPUT (not a
 * zip, corrupt, truncated, an encrypted entry), MT_ERR_TOO_LONG (over
 * lim->max_entries or lim->max_inflated), MT_ERR_NOMEM. */
mt_status   srv_zip_open(const char *data, size_t len, const srv_doc_limits *lim, srv_zip **out, mt_err *err);
void        srv_zip_close(srv_zip *z);
int         srv_zip_entries(const srv_zip *z);
const char *srv_zip_name(const srv_zip *z, int i);
time_t      srv_zip_mtime(const srv_zip *z, int i);
/* The index of the entry called name, or -1. */
int         srv_zip_find(const srv_zip *z, const char *name);
/* Entry i inflated: malloc'd, NUL-terminated (not counted in *len). */
mt_status   srv_zip_read(srv_zip *z, int i, char **out, size_t *len, mt_err *err);

/* data[0..len) with entry idx[k] replaced by part[k][0..part_len[k]) (its
 * modification time set to mtime[k]), k < n: malloc'd *out, *out_len. */
mt_status   srv_zip_rewrite(const char *data, size_t len, const int *idx, const char *const *part,
                            const size_t *part_len, const time_t *mtime, int n, char **out, size_t *out_len,
                            mt_err *err);

/* 1 and *kind for a docx, pptx or xlsx ([Content_Types].xml and
 * word/document.xml, ppt/presentation.xml or xl/workbook.xml), an odt, odp,
 * ods or EPUB (first entry "mimetype" holding application/vnd.oasis.
 * opendocument.text, .presentation, .spreadsheet or application/epub+zip). */
int         srv_zip_sniff(const char *data, size_t len, srv_doc_kind *kind);

#endif
