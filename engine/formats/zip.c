/* zip.c: a validating, read-only view of a ZIP archive in memory (zip.h).
 *
 * Everything is checked at open, once, so a reader can then use a member's
 * bytes without further checks: the end-of-central-directory record (found
 * by searching back over at most a 65535-byte comment), its ZIP64 locator and
 * record when present, every central entry with its ZIP64 extra field, and
 * each member's local header against its central entry.  Every offset and
 * length comes from the (untrusted) file, so each bound is checked against
 * the mapping with overflow-safe arithmetic: `fits(off, len, size)`, never
 * `off + len <= size`.
 *
 * CRC32 is NOT checked: it would read every byte of a model's weights (hundreds
 * of MB) at load, while the mapping is meant to be paged in lazily.  The
 * archive's structure is what we trust; its payload is checked by the reader
 * (shapes, dtypes, sizes), not by a checksum.
 */
#include "zip.h"

#include <stdlib.h>
#include <string.h>

#define SIG_LOCAL     0x04034b50u
#define SIG_CENTRAL   0x02014b50u
#define SIG_EOCD      0x06054b50u
#define SIG_EOCD64    0x06064b50u
#define SIG_LOCATOR64 0x07064b50u

#define LOCAL_LEN     30            /* fixed part of a local file header */
#define CENTRAL_LEN   46            /* fixed part of a central directory entry */
#define EOCD_LEN      22
#define LOCATOR64_LEN 20
#define EOCD64_LEN    56
#define MAX_COMMENT   65535

#define FLAG_ENCRYPTED  0x0001u
#define FLAG_DESCRIPTOR 0x0008u     /* sizes and CRC after the data; the central entry has them */
#define FLAG_STRONG_ENC 0x0040u
#define FLAG_CD_MASKED  0x2000u     /* central directory encryption */

#define EXTRA_ZIP64 0x0001u

struct mt_zip {
    mt_zip_entry  *entries;         /* central-directory order */
    mt_zip_entry **by_name;         /* sorted by name, for mt_zip_find */
    int            n;
};

/* ---- little-endian reads and bounds -------------------------------------------- */
static uint16_t rd16(const uint8_t *p) { return (uint16_t)(p[0] | p[1] << 8); }
static uint32_t rd32(const uint8_t *p) { return (uint32_t)rd16(p) | (uint32_t)rd16(p + 2) << 16; }
static uint64_t rd64(const uint8_t *p) { return (uint64_t)rd32(p) | (uint64_t)rd32(p + 4) << 32; }

/* [off, off + len) lies inside [0, size), with no overflow whatever the values. */
static int fits(uint64_t off, uint64_t len, uint64_t size)
{
    return off <= size && len <= size - off;
}

/* ---- end of central directory ------------------------------------------------- */
typedef struct {
    uint64_t count, cd_offset, cd_size;
    uint64_t cd_limit;              /* the central directory must end here (where EOCD64 or EOCD starts) */
} cd_info;

/* The EOCD record is last, followed only by its comment.  Searching back for
 * its signature, a candidate is accepted only if its comment length reaches
 * exactly to the end of the file: a comment that happens to contain the
 * signature is then not mistaken for the record. */
static int find_eocd(const uint8_t *map, size_t size, size_t *at)
{
    if (size < EOCD_LEN)
        return 0;
    size_t last = size - EOCD_LEN;
    size_t first = last > MAX_COMMENT ? last - MAX_COMMENT : 0;
    for (size_t p = last + 1; p-- > first;)
        if (rd32(map + p) == SIG_EOCD && rd16(map + p + 20) == size - p - EOCD_LEN) {
            *at = p;
            return 1;
        }
    return 0;
}

/* The ZIP64 record named by the locator just before the EOCD: its counts and
 * offsets replace the 16/32-bit ones (which writers saturate at 0xFFFF...). */
static mt_status read_eocd64(const char *path, const uint8_t *map, size_t eocd, cd_info *cd, mt_err *err)
{
    const uint8_t *loc = map + eocd - LOCATOR64_LEN;
    uint64_t rec = rd64(loc + 8);
    uint32_t disks = rd32(loc + 16);
    if (rd32(loc + 4) != 0 || disks > 1)
        return mt_err_set(err, MT_ERR_FORMAT, "%s: multi-disk zip archive (ZIP64 locator: %u disks)", path,
                          (unsigned)disks);
    if (!fits(rec, EOCD64_LEN, eocd - LOCATOR64_LEN) || rd32(map + rec) != SIG_EOCD64)
        return mt_err_set(err, MT_ERR_FORMAT, "%s: the ZIP64 locator points to offset %llu, where there is no "
                          "ZIP64 end-of-central-directory record: truncated or corrupt", path,
                          (unsigned long long)rec);
    const uint8_t *r = map + rec;
    uint64_t total = rd64(r + 32);
    if (rd32(r + 16) != 0 || rd32(r + 20) != 0 || rd64(r + 24) != total)
        return mt_err_set(err, MT_ERR_FORMAT, "%s: multi-disk zip archive (ZIP64 record)", path);
    cd->count = total;
    cd->cd_size = rd64(r + 40);
    cd->cd_offset = rd64(r + 48);
    cd->cd_limit = rec;
    return MT_OK;
}

static mt_status read_eocd(const char *path, const uint8_t *map, size_t size, cd_info *cd, mt_err *err)
{
    size_t eocd;
    if (!find_eocd(map, size, &eocd))
        return mt_err_set(err, MT_ERR_FORMAT, "%s: no end-of-central-directory record: truncated or not a zip "
                          "archive", path);
    const uint8_t *e = map + eocd;
    if (rd16(e + 4) != 0 || rd16(e + 6) != 0 || rd16(e + 8) != rd16(e + 10))
        return mt_err_set(err, MT_ERR_FORMAT, "%s: multi-disk zip archive", path);
    cd->count = rd16(e + 10);
    cd->cd_size = rd32(e + 12);
    cd->cd_offset = rd32(e + 16);
    cd->cd_limit = eocd;
    if (eocd >= LOCATOR64_LEN && rd32(map + eocd - LOCATOR64_LEN) == SIG_LOCATOR64) {
        mt_status st = read_eocd64(path, map, eocd, cd, err);
        if (st != MT_OK)
            return st;
    }
    if (!fits(cd->cd_offset, cd->cd_size, cd->cd_limit))
        return mt_err_set(err, MT_ERR_FORMAT, "%s: central directory (offset %llu, %llu bytes) lies outside the "
                          "archive: truncated or corrupt", path, (unsigned long long)cd->cd_offset,
                          (unsigned long long)cd->cd_size);
    /* every entry takes at least CENTRAL_LEN bytes: this bounds the allocation below */
    if (cd->count > cd->cd_size / CENTRAL_LEN)
        return mt_err_set(err, MT_ERR_FORMAT, "%s: %llu entries cannot fit a %llu-byte central directory", path,
                          (unsigned long long)cd->count, (unsigned long long)cd->cd_size);
    return MT_OK;
}

/* ---- entries ------------------------------------------------------------------- */
/* Sizes and offset of one entry as the headers state them; 0xFFFFFFFF means
 * "in the ZIP64 extra field". */
typedef struct {
    uint64_t usize, csize, local;
    uint32_t disk;
} sizes64;

/* Walk the extra fields [x, x + len); replace each saturated field of s, in
 * the order the spec fixes (uncompressed, compressed, offset, disk), from the
 * ZIP64 field.  want_* say which fields are saturated. */
static int apply_zip64(const uint8_t *x, size_t len, sizes64 *s, int want_u, int want_c, int want_off, int want_disk)
{
    size_t at = 0;
    while (len - at >= 4) {
        uint16_t id = rd16(x + at), n = rd16(x + at + 2);
        if (n > len - at - 4)
            return 0;                               /* a field running past the extra area */
        if (id == EXTRA_ZIP64) {
            const uint8_t *f = x + at + 4;
            size_t need = 8u * (size_t)(want_u + want_c + want_off) + 4u * (size_t)want_disk;
            if (n < need)
                return 0;
            if (want_u)   { s->usize = rd64(f); f += 8; }
            if (want_c)   { s->csize = rd64(f); f += 8; }
            if (want_off) { s->local = rd64(f); f += 8; }
            if (want_disk)  s->disk = rd32(f);
            return 1;
        }
        at += 4u + n;
    }
    /* no ZIP64 field: fine only if nothing was saturated */
    return !(want_u || want_c || want_off || want_disk);
}

/* A name is refused if it could escape a directory or hide its tail from C:
 * empty, NUL inside, absolute ("/x", "\x", "C:..."), or a ".." component. */
static const char *bad_name(const uint8_t *name, size_t len)
{
    if (len == 0)
        return "empty name";
    if (memchr(name, 0, len))
        return "NUL byte in name";
    if (name[0] == '/' || name[0] == '\\' || (len >= 2 && name[1] == ':'))
        return "absolute path";
    for (size_t i = 0; i < len;) {
        size_t j = i;
        while (j < len && name[j] != '/' && name[j] != '\\')
            j++;
        if (j - i == 2 && name[i] == '.' && name[i + 1] == '.')
            return "'..' in path";
        i = j + 1;
    }
    return NULL;
}

/* The local header of e (at s->local) must agree with the central entry and,
 * with its data, lie before the central directory. */
static mt_status check_local(const char *path, const uint8_t *map, const cd_info *cd, mt_zip_entry *e,
                             const sizes64 *s, uint16_t flags, mt_err *err)
{
    if (!fits(s->local, LOCAL_LEN, cd->cd_offset) || rd32(map + s->local) != SIG_LOCAL)
        return mt_err_set(err, MT_ERR_FORMAT, "%s: member '%s': no local header at offset %llu", path, e->name,
                          (unsigned long long)s->local);
    const uint8_t *h = map + s->local;
    uint16_t lflags = rd16(h + 6), nlen = rd16(h + 26), xlen = rd16(h + 28);
    uint64_t hdr = (uint64_t)LOCAL_LEN + nlen + xlen;
    if (!fits(s->local, hdr, cd->cd_offset))
        return mt_err_set(err, MT_ERR_FORMAT, "%s: member '%s': local header runs past the data area", path, e->name);
    if (rd16(h + 8) != e->method || nlen != strlen(e->name) || memcmp(h + LOCAL_LEN, e->name, nlen) != 0 ||
        (lflags & (FLAG_ENCRYPTED | FLAG_DESCRIPTOR)) != (flags & (FLAG_ENCRYPTED | FLAG_DESCRIPTOR)))
        return mt_err_set(err, MT_ERR_FORMAT, "%s: member '%s': local header disagrees with the central directory "
                          "(name, method or flags)", path, e->name);
    if (!(flags & FLAG_DESCRIPTOR)) {
        /* sizes are in the local header (ZIP64: both in its extra field when either is saturated) */
        sizes64 l = {.usize = rd32(h + 22), .csize = rd32(h + 18)};
        int sat = l.usize == 0xFFFFFFFFu || l.csize == 0xFFFFFFFFu;
        if (!apply_zip64(h + LOCAL_LEN + nlen, xlen, &l, sat, sat, 0, 0) || l.usize != s->usize ||
            l.csize != s->csize || rd32(h + 14) != e->crc32)
            return mt_err_set(err, MT_ERR_FORMAT, "%s: member '%s': local header sizes or CRC disagree with the "
                              "central directory", path, e->name);
    }
    uint64_t data = s->local + hdr;
    if (!fits(data, s->csize, cd->cd_offset))
        return mt_err_set(err, MT_ERR_FORMAT, "%s: member '%s': %llu bytes of data at offset %llu run past the "
                          "data area: truncated or corrupt", path, e->name, (unsigned long long)s->csize,
                          (unsigned long long)data);
    e->offset = data;
    if (e->method == 0)
        e->data = map + data;
    return MT_OK;
}

/* One central entry at *at (advanced past it) into e. */
static mt_status read_entry(const char *path, const uint8_t *map, const cd_info *cd, uint64_t *at,
                            mt_zip_entry *e, int index, mt_err *err)
{
    uint64_t end = cd->cd_offset + cd->cd_size;       /* fits() checked this sum */
    if (!fits(*at, CENTRAL_LEN, end) || rd32(map + *at) != SIG_CENTRAL)
        return mt_err_set(err, MT_ERR_FORMAT, "%s: central directory entry %d is missing or corrupt", path, index);
    const uint8_t *c = map + *at;
    uint16_t flags = rd16(c + 8), nlen = rd16(c + 28), xlen = rd16(c + 30), clen = rd16(c + 32);
    uint64_t len = (uint64_t)CENTRAL_LEN + nlen + xlen + clen;
    if (!fits(*at, len, end))
        return mt_err_set(err, MT_ERR_FORMAT, "%s: central directory entry %d runs past the directory", path, index);
    const uint8_t *name = c + CENTRAL_LEN;
    const char *why = bad_name(name, nlen);
    if (why)
        return mt_err_set(err, MT_ERR_FORMAT, "%s: central directory entry %d: %s", path, index, why);
    char *copy = malloc((size_t)nlen + 1);
    if (!copy)
        return mt_err_set(err, MT_ERR_NOMEM, "%s: out of memory", path);
    memcpy(copy, name, nlen);
    copy[nlen] = 0;
    e->name = copy;
    e->method = rd16(c + 10);
    e->crc32 = rd32(c + 16);
    if (flags & (FLAG_ENCRYPTED | FLAG_STRONG_ENC | FLAG_CD_MASKED))
        return mt_err_set(err, MT_ERR_FORMAT, "%s: member '%s' is encrypted", path, e->name);
    sizes64 s = {.usize = rd32(c + 24), .csize = rd32(c + 20), .local = rd32(c + 42), .disk = rd16(c + 34)};
    if (!apply_zip64(name + nlen, xlen, &s, s.usize == 0xFFFFFFFFu, s.csize == 0xFFFFFFFFu,
                     s.local == 0xFFFFFFFFu, s.disk == 0xFFFFu))
        return mt_err_set(err, MT_ERR_FORMAT, "%s: member '%s': bad or missing ZIP64 extra field", path, e->name);
    if (s.disk != 0)
        return mt_err_set(err, MT_ERR_FORMAT, "%s: member '%s' is on disk %u: multi-disk archive", path, e->name,
                          (unsigned)s.disk);
    if (e->method == 0 && s.csize != s.usize)
        return mt_err_set(err, MT_ERR_FORMAT, "%s: stored member '%s' has compressed size %llu != size %llu", path,
                          e->name, (unsigned long long)s.csize, (unsigned long long)s.usize);
    e->size = s.usize;
    *at += len;
    return check_local(path, map, cd, e, &s, flags, err);
}

/* ---- the name index ------------------------------------------------------------ */
static int cmp_entry(const void *a, const void *b)
{
    return strcmp((*(mt_zip_entry *const *)a)->name, (*(mt_zip_entry *const *)b)->name);
}

/* Two members of one name are refused: which one a reader gets would depend on
 * the reader, a classic way to show different contents to different tools. */
static mt_status index_names(const char *path, mt_zip *z, mt_err *err)
{
    z->by_name = malloc(((size_t)z->n + 1) * sizeof *z->by_name);
    if (!z->by_name)
        return mt_err_set(err, MT_ERR_NOMEM, "%s: out of memory", path);
    for (int i = 0; i < z->n; i++)
        z->by_name[i] = &z->entries[i];
    qsort(z->by_name, (size_t)z->n, sizeof *z->by_name, cmp_entry);
    for (int i = 1; i < z->n; i++)
        if (!strcmp(z->by_name[i - 1]->name, z->by_name[i]->name))
            return mt_err_set(err, MT_ERR_FORMAT, "%s: member '%s' appears twice", path, z->by_name[i]->name);
    return MT_OK;
}

/* ---- API ------------------------------------------------------------------------ */
mt_status mt_zip_open(const char *path, const uint8_t *map, size_t size, mt_zip **out, mt_err *err)
{
    *out = NULL;
    cd_info cd = {0};
    mt_status st = read_eocd(path, map, size, &cd, err);
    if (st != MT_OK)
        return st;
    if (cd.count > (uint64_t)(INT32_MAX - 1))
        return mt_err_set(err, MT_ERR_FORMAT, "%s: too many members (%llu)", path, (unsigned long long)cd.count);
    mt_zip *z = calloc(1, sizeof *z);
    if (!z || !(z->entries = calloc((size_t)cd.count + 1, sizeof *z->entries))) {
        st = mt_err_set(err, MT_ERR_NOMEM, "%s: out of memory", path);
        goto done;
    }
    uint64_t at = cd.cd_offset;
    for (uint64_t i = 0; i < cd.count && st == MT_OK; i++) {
        st = read_entry(path, map, &cd, &at, &z->entries[i], (int)i, err);
        if (z->entries[i].name)
            z->n++;                                 /* so mt_zip_free frees the names copied so far */
    }
    if (st == MT_OK)
        st = index_names(path, z, err);
    if (st == MT_OK) {
        *out = z;
        z = NULL; /* the caller owns it now */
    }
done:
    mt_zip_free(z);
    return st;
}

void mt_zip_free(mt_zip *z)
{
    if (!z)
        return;
    for (int i = 0; i < z->n; i++)
        free((char *)z->entries[i].name);
    free(z->entries);
    free(z->by_name);
    free(z);
}

int mt_zip_count(const mt_zip *z)
{
    return z->n;
}

const mt_zip_entry *mt_zip_at(const mt_zip *z, int i)
{
    return i >= 0 && i < z->n ? &z->entries[i] : NULL;
}

const mt_zip_entry *mt_zip_find(const mt_zip *z, const char *name)
{
    mt_zip_entry key = {.name = name}, *kp = &key;
    if (!z->n)
        return NULL;
    mt_zip_entry **hit = bsearch(&kp, z->by_name, (size_t)z->n, sizeof *z->by_name, cmp_entry);
    return hit ? *hit : NULL;
}
