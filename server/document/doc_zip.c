/* doc_zip: the office formats' and EPUB's archives in memory with libzip (doc_zip.h). */
#include "doc_zip.h"
#include "text/printable.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <zip.h>

struct srv_zip {
    zip_t        *za;
    int           n;
    char        **name;         /* [n] */
    zip_uint64_t *size;         /* [n] declared inflated size */
    time_t       *mtime;        /* [n] */
    size_t        inflated;     /* bytes inflated so far by srv_zip_read */
    size_t        max_inflated;
};

/* libzip's archive over data[0..len) (not copied), or NULL with ze set. */
static zip_t *open_mem(const char *data, size_t len, int flags, zip_error_t *ze)
{
    zip_source_t *src = zip_source_buffer_create(data, len, 0, ze);
    if (!src)
        return NULL;
    zip_t *za = zip_open_from_source(src, flags, ze);
    if (!za)
        zip_source_free(src);
    return za;
}

void srv_zip_close(srv_zip *z)
{
    if (!z)
        return;
    if (z->za)
        zip_discard(z->za);
    for (int i = 0; z->name && i < z->n; i++)
        free(z->name[i]);
    free(z->name);
    free(z->size);
    free(z->mtime);
    free(z);
}

mt_status srv_zip_open(const char *data, size_t len, const srv_doc_limits *lim, srv_zip **out, mt_err *err)
{
    *out = NULL;
    if (len < 22 || memcmp(data, "PK", 2))
        return mt_err_set(err, MT_ERR_INPUT, "not a zip archive");
    srv_zip *z = calloc(1, sizeof *z);
    if (!z)
        return mt_err_set(err, MT_ERR_NOMEM, "out of memory");
    z->max_inflated = lim->max_inflated;
    zip_error_t ze;
    zip_error_init(&ze);
    z->za = open_mem(data, len, ZIP_RDONLY | ZIP_CHECKCONS, &ze);
    if (!z->za) {
        mt_status st = zip_error_code_zip(&ze) == ZIP_ER_MEMORY
                           ? mt_err_set(err, MT_ERR_NOMEM, "out of memory")
                           : mt_err_set(err, MT_ERR_INPUT, "not a valid zip archive: %s", zip_error_strerror(&ze));
        zip_error_fini(&ze);
        free(z);
        return st;
    }
    zip_error_fini(&ze);
    zip_int64_t n = zip_get_num_entries(z->za, 0);
    if (n < 0 || n > lim->max_entries) {
        srv_zip_close(z);
        return mt_err_set(err, MT_ERR_TOO_LONG, "the archive has %lld entries; the limit is %d (max_entries)",
                          (long long)n, lim->max_entries);
    }
    z->n = (int)n;
    z->name = calloc((size_t)(n ? n : 1), sizeof *z->name);
    z->size = calloc((size_t)(n ? n : 1), sizeof *z->size);
    z->mtime = calloc((size_t)(n ? n : 1), sizeof *z->mtime);
    if (!z->name || !z->size || !z->mtime) {
        srv_zip_close(z);
        return mt_err_set(err, MT_ERR_NOMEM, "out of memory");
    }
    zip_uint64_t total = 0;
    char pb[96];
    for (int i = 0; i < z->n; i++) {
        zip_stat_t st;
        zip_stat_init(&st);
        if (zip_stat_index(z->za, (zip_uint64_t)i, 0, &st) || !(st.valid & ZIP_STAT_NAME) ||
            !(st.valid & ZIP_STAT_SIZE)) {
            srv_zip_close(z);
            return mt_err_set(err, MT_ERR_INPUT, "zip entry %d cannot be read", i);
        }
        if (!(z->name[i] = strdup(st.name))) {
            srv_zip_close(z);
            return mt_err_set(err, MT_ERR_NOMEM, "out of memory");
        }
        z->size[i] = st.size;
        z->mtime[i] = (st.valid & ZIP_STAT_MTIME) ? st.mtime : 0;
        if ((st.valid & ZIP_STAT_ENCRYPTION_METHOD) && st.encryption_method != ZIP_EM_NONE) {
            mt_status s = mt_err_set(err, MT_ERR_INPUT, "zip entry %s is encrypted",
                                     srv_printable(st.name, pb, sizeof pb));
            srv_zip_close(z);
            return s;
        }
        total += st.size;
        if (st.size > lim->max_inflated || total > lim->max_inflated) {
            mt_status s = mt_err_set(err, MT_ERR_TOO_LONG,
                                     "the archive inflates to more than %zu bytes (max_inflated) at entry %s",
                                     lim->max_inflated, srv_printable(st.name, pb, sizeof pb));
            srv_zip_close(z);
            return s;
        }
    }
    *out = z;
    return MT_OK;
}

int srv_zip_entries(const srv_zip *z) { return z->n; }
const char *srv_zip_name(const srv_zip *z, int i) { return z->name[i]; }
time_t srv_zip_mtime(const srv_zip *z, int i) { return z->mtime[i]; }

int srv_zip_find(const srv_zip *z, const char *name)
{
    for (int i = 0; i < z->n; i++)
        if (!strcmp(z->name[i], name))
            return i;
    return -1;
}

mt_status srv_zip_read(srv_zip *z, int i, char **out, size_t *len, mt_err *err)
{
    *out = NULL;
    *len = 0;
    char pb[96];
    const char *pn = srv_printable(z->name[i], pb, sizeof pb);
    zip_uint64_t want = z->size[i];        /* <= max_inflated: checked at open */
    char *buf = malloc((size_t)want + 2);
    if (!buf)
        return mt_err_set(err, MT_ERR_NOMEM, "out of memory");
    /* one byte more than declared: an entry that inflates past its size is refused */
    size_t got = 0;
    mt_status st = MT_OK;
    zip_file_t *zf = zip_fopen_index(z->za, (zip_uint64_t)i, 0);
    if (!zf) {
        st = mt_err_set(err, MT_ERR_INPUT, "zip entry %s cannot be opened: %s", pn,
                        zip_error_strerror(zip_get_error(z->za)));
        goto done;
    }
    while (got < want + 1) {
        zip_int64_t r = zip_fread(zf, buf + got, want + 1 - got);
        if (r < 0) {
            st = mt_err_set(err, MT_ERR_INPUT, "zip entry %s is corrupt: %s", pn, zip_file_strerror(zf));
            break;
        }
        if (r == 0)
            break;
        got += (size_t)r;
        z->inflated += (size_t)r;
        if (z->inflated > z->max_inflated) {
            st = mt_err_set(err, MT_ERR_TOO_LONG, "zip entry %s inflates past %zu bytes (max_inflated)", pn,
                            z->max_inflated);
            break;
        }
    }
    zip_fclose(zf);
    if (st == MT_OK && got > want)
        st = mt_err_set(err, MT_ERR_INPUT, "zip entry %s inflates past its declared size of %llu bytes", pn,
                        (unsigned long long)want);
    else if (st == MT_OK && got < want)
        st = mt_err_set(err, MT_ERR_INPUT, "zip entry %s is truncated (%zu of %llu bytes)", pn, got,
                        (unsigned long long)want);
    if (st != MT_OK)
        goto done;
    buf[got] = 0;
    *out = buf;
    *len = got;
    buf = NULL;
done:
    free(buf);
    return st;
}

mt_status srv_zip_rewrite(const char *data, size_t len, const int *idx, const char *const *part,
                          const size_t *part_len, const time_t *mtime, int n, char **out, size_t *out_len,
                          mt_err *err)
{
    *out = NULL;
    *out_len = 0;
    mt_status st = MT_OK;
    zip_t *za = NULL;
    char *buf = NULL;
    zip_int64_t got = -1;
    zip_stat_t zs;
    zip_error_t ze;
    zip_error_init(&ze);
    zip_source_t *src = zip_source_buffer_create(data, len, 0, &ze);
    if (src && (za = zip_open_from_source(src, 0, &ze)))
        zip_source_keep(src);       /* the written archive is read back from it after zip_close */
    else
        st = mt_err_set(err, zip_error_code_zip(&ze) == ZIP_ER_MEMORY ? MT_ERR_NOMEM : MT_ERR_INPUT,
                        "the archive cannot be reopened: %s", zip_error_strerror(&ze));
    zip_error_fini(&ze);
    for (int k = 0; k < n && st == MT_OK; k++) {
        zip_source_t *ps = zip_source_buffer(za, part[k], part_len[k], 0);
        if (!ps || zip_file_replace(za, (zip_uint64_t)idx[k], ps, 0) < 0) {
            if (ps)
                zip_source_free(ps);
            st = mt_err_set(err, MT_ERR_NOMEM, "zip: cannot replace entry %d: %s", idx[k],
                            zip_error_strerror(zip_get_error(za)));
        } else if (mtime[k]) {
            zip_file_set_mtime(za, (zip_uint64_t)idx[k], mtime[k], 0);
        }
    }
    if (st != MT_OK)
        goto done;
    if (zip_close(za) < 0) {
        st = mt_err_set(err, MT_ERR_INTERNAL, "zip: cannot write the archive: %s",
                        zip_error_strerror(zip_get_error(za)));
        goto done;
    }
    za = NULL;                      /* written and freed by zip_close */
    zip_stat_init(&zs);
    if (zip_source_stat(src, &zs) < 0 || !(zs.valid & ZIP_STAT_SIZE) || zip_source_open(src) < 0) {
        st = mt_err_set(err, MT_ERR_INTERNAL, "zip: the written archive cannot be read back");
        goto done;
    }
    buf = malloc((size_t)zs.size + 1);
    got = buf ? zip_source_read(src, buf, zs.size) : -1;
    zip_source_close(src);
    if (!buf || got < 0 || (zip_uint64_t)got != zs.size) {
        st = mt_err_set(err, buf ? MT_ERR_INTERNAL : MT_ERR_NOMEM, "zip: the written archive cannot be read back");
        goto done;
    }
    buf[got] = 0;
    *out = buf;
    *out_len = (size_t)got;
    buf = NULL;
done:
    if (za)
        zip_discard(za);
    if (src)
        zip_source_free(src);
    free(buf);
    return st;
}

/* The first entry "mimetype" and its bytes one of ODF's or EPUB's: the kind, else -1. */
static int mime_kind(zip_t *za)
{
    static const struct { const char *mime; srv_doc_kind kind; } MIMES[] = {
        { "application/vnd.oasis.opendocument.text", SRV_DOC_ODT },
        { "application/vnd.oasis.opendocument.presentation", SRV_DOC_ODP },
        { "application/vnd.oasis.opendocument.spreadsheet", SRV_DOC_ODS },
        { "application/epub+zip", SRV_DOC_EPUB },
    };
    zip_stat_t st;
    zip_stat_init(&st);
    const char *name = zip_get_name(za, 0, 0);
    char buf[64];
    if (!name || strcmp(name, "mimetype") || zip_stat_index(za, 0, 0, &st) || !(st.valid & ZIP_STAT_SIZE) ||
        st.size >= sizeof buf)
        return -1;
    zip_file_t *zf = zip_fopen_index(za, 0, 0);
    zip_int64_t r = zf ? zip_fread(zf, buf, st.size) : -1;
    if (zf)
        zip_fclose(zf);
    if (r != (zip_int64_t)st.size)
        return -1;
    for (size_t k = 0; k < sizeof MIMES / sizeof MIMES[0]; k++)
        if ((size_t)r == strlen(MIMES[k].mime) && !memcmp(buf, MIMES[k].mime, (size_t)r))
            return MIMES[k].kind;
    return -1;
}

int srv_zip_sniff(const char *data, size_t len, srv_doc_kind *kind)
{
    if (!data || len < 30 || memcmp(data, "PK\x03\x04", 4))
        return 0;
    zip_error_t ze;
    zip_error_init(&ze);
    zip_t *za = open_mem(data, len, ZIP_RDONLY, &ze);
    zip_error_fini(&ze);
    if (!za)
        return 0;
    /* Office Open XML: its content types and its main part */
    static const struct { const char *part; srv_doc_kind kind; } OOXML[] = {
        { "word/document.xml", SRV_DOC_DOCX },
        { "ppt/presentation.xml", SRV_DOC_PPTX },
        { "xl/workbook.xml", SRV_DOC_XLSX },
    };
    int k = -1;
    if (zip_name_locate(za, "[Content_Types].xml", 0) >= 0)
        for (size_t i = 0; k < 0 && i < sizeof OOXML / sizeof OOXML[0]; i++)
            if (zip_name_locate(za, OOXML[i].part, 0) >= 0)
                k = OOXML[i].kind;
    if (k < 0)
        k = mime_kind(za);
    zip_discard(za);
    if (k < 0)
        return 0;
    *kind = (srv_doc_kind)k;
    return 1;
}
