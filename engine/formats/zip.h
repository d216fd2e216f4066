/* zip.h: a validating, read-only view of a ZIP archive held in memory (the
 * caller's read-only mapping).  Used by the readers of pytorch_model.bin
 * (torch.save's zip) and of Marian's .npz (numpy.savez): both write STORED
 * (uncompressed) members, so a member's bytes are used in place.
 *
 * mt_zip_open checks, before anyone reads a member: the end-of-central-
 * directory record (and its ZIP64 form), every central entry (bounds, name,
 * sizes, ZIP64 extra fields), and that each local header agrees with its
 * central entry (name, method, sizes) and lies, with its data, inside the
 * mapping.  Encrypted members, multi-disk archives and names with NUL or
 * "..", absolute paths are refused.  Compressed members are listed (method
 * != 0, data NULL) so a reader can refuse them by name.
 */
#ifndef MT_ZIP_H
#define MT_ZIP_H

#include <stddef.h>
#include <stdint.h>

#include "util/status.h"

typedef struct {
    const char    *name;        /* NUL-terminated copy of the member's name */
    uint16_t       method;      /* 0 stored, 8 deflate, ... */
    uint32_t       crc32;       /* as recorded */
    uint64_t       size;        /* uncompressed size */
    uint64_t       offset;      /* of the data in the archive (stored members) */
    const uint8_t *data;        /* the member's bytes in the mapping; NULL unless stored */
} mt_zip_entry;

typedef struct mt_zip mt_zip;

/* path is only used in messages.  The mapping must outlive the mt_zip. */
mt_status mt_zip_open(const char *path, const uint8_t *map, size_t size, mt_zip **out, mt_err *err);
void      mt_zip_free(mt_zip *z);
int       mt_zip_count(const mt_zip *z);
const mt_zip_entry *mt_zip_at(const mt_zip *z, int i);       /* in central-directory order */
const mt_zip_entry *mt_zip_find(const mt_zip *z, const char *name);

#endif
