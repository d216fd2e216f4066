/* test_zip.c: the ZIP reader (engine/formats/zip.c).
 *
 * The archives are built here, byte by byte, by a small writer that can give
 * each member the layouts real writers use: plain stored members, torch.save's
 * (data descriptor, zero sizes in the local header, a padding extra field, a
 * ZIP64 end record), numpy.savez's force_zip64 (0xFFFFFFFF sizes in the local
 * header and a ZIP64 extra field), ZIP64 central fields, a comment.  Then each
 * refusal: a broken archive must give MT_ERR_FORMAT with a message naming the
 * file and the reason, and every truncation of a valid archive is refused
 * without reading outside the buffer (each buffer is malloc'd to its exact
 * size, so ASan and valgrind see any overread).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "formats/zip.h"

#define PATH "t.zip"

/* ---- a growable byte buffer ----------------------------------------------------- */
typedef struct {
    uint8_t *p;
    size_t   n, cap;
} buf;

static void put(buf *b, const void *src, size_t n)
{
    if (b->n + n > b->cap) {
        b->cap = (b->n + n) * 2 + 64;
        b->p = realloc(b->p, b->cap);
        assert_non_null(b->p);
    }
    memcpy(b->p + b->n, src, n);
    b->n += n;
}

static void put16(buf *b, uint32_t v) { uint8_t x[2] = {(uint8_t)v, (uint8_t)(v >> 8)}; put(b, x, 2); }
static void put32(buf *b, uint32_t v) { put16(b, v & 0xffff); put16(b, v >> 16); }
static void put64(buf *b, uint64_t v) { put32(b, (uint32_t)v); put32(b, (uint32_t)(v >> 32)); }

static void set32(uint8_t *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

/* ---- the archive writer ------------------------------------------------------------ */
typedef struct {
    const char *name;
    const char *data;
    uint16_t    method;
    int         descriptor;      /* torch: flag bit 3, zero sizes/CRC in the local header, descriptor after */
    int         local_zip64;     /* numpy force_zip64: 0xFFFFFFFF local sizes + ZIP64 extra */
    int         central_zip64;   /* 0xFFFFFFFF sizes and offset in the central entry + ZIP64 extra */
    size_t      pad;             /* torch: an extra field of this many bytes (besides its 4-byte header) */
    size_t      name_len;        /* 0: strlen(name); else the name's bytes (may hold a NUL) */
} member;

typedef struct {
    size_t local[8], central[8];  /* where each member's headers were written */
    size_t cd, eocd;
} layout;

static uint32_t fake_crc(const member *m)
{
    return 0x1000u + (uint32_t)strlen(m->data);   /* never checked against the data, only for agreement */
}

static void write_local(buf *b, const member *m)
{
    uint32_t len = (uint32_t)strlen(m->data);
    size_t nlen = m->name_len ? m->name_len : strlen(m->name);
    size_t xlen = (m->local_zip64 ? 20 : 0) + (m->pad ? 4 + m->pad : 0);
    uint32_t sz = m->descriptor ? 0 : m->local_zip64 ? 0xFFFFFFFFu : len;
    put32(b, 0x04034b50);
    put16(b, 45);
    put16(b, m->descriptor ? 0x0808 : 0);
    put16(b, m->method);
    put32(b, 0);                                    /* time, date */
    put32(b, m->descriptor ? 0 : fake_crc(m));
    put32(b, sz);
    put32(b, sz);
    put16(b, (uint32_t)nlen);
    put16(b, (uint32_t)xlen);
    put(b, m->name, nlen);
    if (m->local_zip64) {
        put16(b, 1); put16(b, 16);
        put64(b, m->descriptor ? 0 : len); put64(b, m->descriptor ? 0 : len);
    }
    if (m->pad) {
        put16(b, 0x4246); put16(b, (uint32_t)m->pad);
        for (size_t i = 0; i < m->pad; i++)
            put(b, "Z", 1);
    }
    put(b, m->data, len);
    if (m->descriptor) {
        put32(b, 0x08074b50); put32(b, fake_crc(m)); put32(b, len); put32(b, len);
    }
}

static void write_central(buf *b, const member *m, size_t local)
{
    uint32_t len = (uint32_t)strlen(m->data);
    size_t nlen = m->name_len ? m->name_len : strlen(m->name);
    int z = m->central_zip64;
    put32(b, 0x02014b50);
    put16(b, 45); put16(b, 45);
    put16(b, m->descriptor ? 0x0808 : 0);
    put16(b, m->method);
    put32(b, 0);
    put32(b, fake_crc(m));
    put32(b, z ? 0xFFFFFFFFu : len);
    put32(b, z ? 0xFFFFFFFFu : len);
    put16(b, (uint32_t)nlen);
    put16(b, z ? 28 : 0);
    put16(b, 0);                                    /* comment */
    put16(b, 0);                                    /* disk */
    put16(b, 0); put32(b, 0);                       /* attributes */
    put32(b, z ? 0xFFFFFFFFu : (uint32_t)local);
    put(b, m->name, nlen);
    if (z) {
        put16(b, 1); put16(b, 24);
        put64(b, len); put64(b, len); put64(b, local);
    }
}

/* The whole archive in a malloc'd buffer of exactly *len bytes. */
static uint8_t *build(const member *m, int n, int zip64_end, const char *comment, size_t comment_len,
                      size_t *len, layout *lay)
{
    buf b = {0};
    layout l = {0};
    for (int i = 0; i < n; i++) {
        l.local[i] = b.n;
        write_local(&b, &m[i]);
    }
    l.cd = b.n;
    for (int i = 0; i < n; i++) {
        l.central[i] = b.n;
        write_central(&b, &m[i], l.local[i]);
    }
    size_t cd_size = b.n - l.cd;
    if (zip64_end) {
        size_t rec = b.n;
        put32(&b, 0x06064b50); put64(&b, 44); put16(&b, 45); put16(&b, 45);
        put32(&b, 0); put32(&b, 0);
        put64(&b, (uint64_t)n); put64(&b, (uint64_t)n); put64(&b, cd_size); put64(&b, l.cd);
        put32(&b, 0x07064b50); put32(&b, 0); put64(&b, rec); put32(&b, 1);
    }
    l.eocd = b.n;
    put32(&b, 0x06054b50);
    put16(&b, 0); put16(&b, 0);
    put16(&b, zip64_end ? 0xFFFF : (uint32_t)n); put16(&b, zip64_end ? 0xFFFF : (uint32_t)n);
    put32(&b, zip64_end ? 0xFFFFFFFFu : (uint32_t)cd_size);
    put32(&b, zip64_end ? 0xFFFFFFFFu : (uint32_t)l.cd);
    put16(&b, (uint32_t)comment_len);
    if (comment_len)
        put(&b, comment, comment_len);
    uint8_t *exact = malloc(b.n ? b.n : 1);
    assert_non_null(exact);
    memcpy(exact, b.p, b.n);
    free(b.p);
    *len = b.n;
    if (lay)
        *lay = l;
    return exact;
}

/* ---- helpers ------------------------------------------------------------------------ */
static mt_zip *open_ok(const uint8_t *p, size_t len)
{
    mt_zip *z = NULL;
    mt_err err = {0};
    mt_status st = mt_zip_open(PATH, p, len, &z, &err);
    if (st != MT_OK)
        print_message("    unexpected: %s\n", err.msg);
    assert_int_equal(st, MT_OK);
    assert_non_null(z);
    return z;
}

static void expect_refused(const uint8_t *p, size_t len, const char *needle)
{
    mt_zip *z = (mt_zip *)0x1;
    mt_err err = {0};
    mt_status st = mt_zip_open(PATH, p, len, &z, &err);
    print_message("    %-12s %s\n", mt_status_name(st), err.msg);
    assert_int_equal(st, MT_ERR_FORMAT);
    assert_null(z);
    assert_non_null(strstr(err.msg, PATH ": "));
    if (needle)
        assert_non_null(strstr(err.msg, needle));
}

static void expect_member(const mt_zip *z, const char *name, const char *data)
{
    const mt_zip_entry *e = mt_zip_find(z, name);
    assert_non_null(e);
    assert_string_equal(e->name, name);
    assert_int_equal(e->method, 0);
    assert_int_equal(e->size, strlen(data));
    assert_non_null(e->data);
    assert_memory_equal(e->data, data, strlen(data));
}

/* A builder over one member list, rebuilt per test. */
static const member TWO[] = {
    {.name = "archive/data.pkl", .data = "pickle bytes"},
    {.name = "archive/data/0", .data = "0123456789abcdef"},
};

/* ---- valid archives ------------------------------------------------------------------- */
static void test_plain_stored(void **state)
{
    (void)state;
    size_t len;
    layout l;
    uint8_t *p = build(TWO, 2, 0, NULL, 0, &len, &l);
    mt_zip *z = open_ok(p, len);
    assert_int_equal(mt_zip_count(z), 2);
    assert_string_equal(mt_zip_at(z, 0)->name, "archive/data.pkl");
    assert_string_equal(mt_zip_at(z, 1)->name, "archive/data/0");
    assert_null(mt_zip_at(z, 2));
    assert_null(mt_zip_at(z, -1));
    expect_member(z, "archive/data.pkl", "pickle bytes");
    expect_member(z, "archive/data/0", "0123456789abcdef");
    assert_int_equal(mt_zip_find(z, "archive/data/0")->crc32, 0x1000u + 16);
    assert_int_equal(mt_zip_find(z, "archive/data/0")->offset, l.local[1] + 30 + 14);
    assert_null(mt_zip_find(z, "archive/data/1"));
    assert_null(mt_zip_find(z, "archive"));
    mt_zip_free(z);
    free(p);
}

static void test_empty_archive(void **state)
{
    (void)state;
    size_t len;
    uint8_t *p = build(NULL, 0, 0, NULL, 0, &len, NULL);
    assert_int_equal(len, 22);
    mt_zip *z = open_ok(p, len);
    assert_int_equal(mt_zip_count(z), 0);
    assert_null(mt_zip_find(z, "x"));
    mt_zip_free(z);
    free(p);
    mt_zip_free(NULL);
}

/* torch.save: flag bit 3 with zero local sizes, an "FB" padding extra field, ZIP64 end records. */
static void test_torch_layout(void **state)
{
    (void)state;
    const member m[] = {
        {.name = "x/data.pkl", .data = "\x80\x02}q\x00.", .descriptor = 1, .pad = 20},
        {.name = "x/data/0", .data = "ABCDEFGH", .descriptor = 1, .pad = 47},
        {.name = "x/version", .data = "3\n", .descriptor = 1, .pad = 3},
    };
    size_t len;
    uint8_t *p = build(m, 3, 1, NULL, 0, &len, NULL);
    mt_zip *z = open_ok(p, len);
    assert_int_equal(mt_zip_count(z), 3);
    expect_member(z, "x/data.pkl", "\x80\x02}q\x00.");
    expect_member(z, "x/data/0", "ABCDEFGH");
    expect_member(z, "x/version", "3\n");
    mt_zip_free(z);
    free(p);
}

/* numpy.savez: force_zip64 local headers (both sizes 0xFFFFFFFF, ZIP64 extra), and
 * central entries whose sizes and offset live in their ZIP64 extra field. */
static void test_zip64_fields(void **state)
{
    (void)state;
    const member m[] = {
        {.name = "a.npy", .data = "first array", .local_zip64 = 1},
        {.name = "b.npy", .data = "second", .local_zip64 = 1, .central_zip64 = 1},
        {.name = "c.npy", .data = "third one", .central_zip64 = 1},
    };
    size_t len;
    uint8_t *p = build(m, 3, 1, NULL, 0, &len, NULL);
    mt_zip *z = open_ok(p, len);
    expect_member(z, "a.npy", "first array");
    expect_member(z, "b.npy", "second");
    expect_member(z, "c.npy", "third one");
    mt_zip_free(z);
    free(p);
}

/* The EOCD is found behind a comment of any length up to 65535, even one holding
 * the EOCD signature itself. */
static void test_comments(void **state)
{
    (void)state;
    static char comment[65535];
    memset(comment, 'c', sizeof comment);
    memcpy(comment + 100, "PK\x05\x06", 4);
    memcpy(comment + sizeof comment - 30, "PK\x05\x06", 4);
    size_t sizes[] = {1, 22, 300, 65535};
    for (size_t i = 0; i < sizeof sizes / sizeof *sizes; i++) {
        size_t len;
        uint8_t *p = build(TWO, 2, i % 2, comment, sizes[i], &len, NULL);
        mt_zip *z = open_ok(p, len);
        expect_member(z, "archive/data/0", "0123456789abcdef");
        mt_zip_free(z);
        free(p);
    }
}

static void test_compressed_listed(void **state)
{
    (void)state;
    const member m[] = {
        {.name = "archive/data/0", .data = "pretend deflate", .method = 8},
        {.name = "archive/data/1", .data = "stored"},
    };
    size_t len;
    uint8_t *p = build(m, 2, 0, NULL, 0, &len, NULL);
    mt_zip *z = open_ok(p, len);
    const mt_zip_entry *e = mt_zip_find(z, "archive/data/0");
    assert_non_null(e);
    assert_int_equal(e->method, 8);
    assert_null(e->data);
    expect_member(z, "archive/data/1", "stored");
    mt_zip_free(z);
    free(p);
}

/* ---- refusals ------------------------------------------------------------------------- */
/* Every prefix of a valid archive (and of its ZIP64 form) is refused cleanly. */
static void test_truncated_everywhere(void **state)
{
    (void)state;
    const member m[] = {
        {.name = "x/data.pkl", .data = "pickle", .descriptor = 1, .pad = 10},
        {.name = "x/data/0", .data = "0123456789", .local_zip64 = 1, .central_zip64 = 1},
    };
    for (int z64 = 0; z64 < 2; z64++) {
        size_t len;
        uint8_t *full = build(m, 2, z64, NULL, 0, &len, NULL);
        for (size_t cut = 0; cut < len; cut++) {
            uint8_t *p = malloc(cut ? cut : 1);
            memcpy(p, full, cut);
            mt_zip *z = (mt_zip *)0x1;
            mt_err err = {0};
            assert_int_equal(mt_zip_open(PATH, p, cut, &z, &err), MT_ERR_FORMAT);
            assert_null(z);
            assert_non_null(strstr(err.msg, PATH));
            free(p);
        }
        expect_refused(full, len - 1, "no end-of-central-directory");
        /* a chunk lost inside the file, the end records intact: offsets now lie */
        for (size_t at = 0; at + 22 < len; at++) {
            uint8_t *p = malloc(len - 1);
            memcpy(p, full, at);
            memcpy(p + at, full + at + 1, len - at - 1);
            mt_zip *z = (mt_zip *)0x1;
            mt_err err = {0};
            mt_status st = mt_zip_open(PATH, p, len - 1, &z, &err);
            if (st == MT_OK)            /* only a byte of a payload or of padding went: members must still be in bounds */
                mt_zip_free(z);
            else
                assert_int_equal(st, MT_ERR_FORMAT);
            free(p);
        }
        free(full);
    }
}

static void test_not_zip(void **state)
{
    (void)state;
    expect_refused((const uint8_t *)"", 0, "not a zip");
    const char legacy[] = "\x80\x02\x8a\x0al\xfc\x9c" "F\xf9 j\xa8P\x19.\x80\x02M\xe9\x03.";
    expect_refused((const uint8_t *)legacy, sizeof legacy - 1, "not a zip");
}

/* Patch one byte pattern of a fresh archive and expect the refusal naming it. */
typedef void (*patch_fn)(uint8_t *p, const layout *l);

static void refused_after(const member *m, int n, int zip64_end, patch_fn patch, const char *needle)
{
    size_t len;
    layout l;
    uint8_t *p = build(m, n, zip64_end, NULL, 0, &len, &l);
    patch(p, &l);
    expect_refused(p, len, needle);
    free(p);
}

static void encrypt_both(uint8_t *p, const layout *l)
{
    p[l->local[1] + 6] |= 1;
    p[l->central[1] + 8] |= 1;
}
static void multi_disk(uint8_t *p, const layout *l) { p[l->eocd + 4] = 1; }
static void multi_disk_cd(uint8_t *p, const layout *l) { p[l->eocd + 6] = 1; }
static void entry_disk(uint8_t *p, const layout *l) { p[l->central[0] + 34] = 2; }
static void local_method(uint8_t *p, const layout *l) { p[l->local[1] + 8] = 8; }
static void local_size(uint8_t *p, const layout *l) { p[l->local[1] + 22] ^= 1; }
static void local_name(uint8_t *p, const layout *l) { p[l->local[1] + 30 + 8] = 'X'; }
static void local_sig(uint8_t *p, const layout *l) { p[l->local[1]] = 'Q'; }
static void central_offset(uint8_t *p, const layout *l) { set32(p + l->central[1] + 42, 0x7ffffff0u); }
static void central_sig(uint8_t *p, const layout *l) { p[l->central[1] + 1] = 'Q'; }
static void cd_offset_far(uint8_t *p, const layout *l) { set32(p + l->eocd + 16, 0xfffffff0u); }
static void count_big(uint8_t *p, const layout *l) { p[l->eocd + 8] = p[l->eocd + 10] = 200; }
static void stored_csize(uint8_t *p, const layout *l)
{
    p[l->central[1] + 20] ^= 1;
    p[l->local[1] + 18] ^= 1;
}
static void z64_locator(uint8_t *p, const layout *l) { set32(p + l->eocd - 4, 3); }
static void z64_record_sig(uint8_t *p, const layout *l) { p[l->eocd - 20 - 56] = 'Q'; }
static void z64_record_disk(uint8_t *p, const layout *l) { p[l->eocd - 20 - 56 + 16] = 1; }

static void test_structural_refusals(void **state)
{
    (void)state;
    refused_after(TWO, 2, 0, encrypt_both, "member 'archive/data/0' is encrypted");
    refused_after(TWO, 2, 0, multi_disk, "multi-disk");
    refused_after(TWO, 2, 0, multi_disk_cd, "multi-disk");
    refused_after(TWO, 2, 0, entry_disk, "multi-disk");
    refused_after(TWO, 2, 0, local_method, "local header disagrees");
    refused_after(TWO, 2, 0, local_size, "local header sizes or CRC disagree");
    refused_after(TWO, 2, 0, local_name, "local header disagrees");
    refused_after(TWO, 2, 0, local_sig, "no local header at offset");
    refused_after(TWO, 2, 0, central_offset, "no local header at offset");
    refused_after(TWO, 2, 0, central_sig, "entry 1 is missing or corrupt");
    refused_after(TWO, 2, 0, cd_offset_far, "central directory");
    refused_after(TWO, 2, 0, count_big, "cannot fit");
    refused_after(TWO, 2, 0, stored_csize, "compressed size");
    refused_after(TWO, 2, 1, z64_locator, "multi-disk");
    refused_after(TWO, 2, 1, z64_record_sig, "ZIP64 locator points");
    refused_after(TWO, 2, 1, z64_record_disk, "multi-disk");
}

static void refused_names(const char *name, size_t name_len, const char *needle)
{
    member m[] = {{.name = "ok", .data = "x"}, {.name = name, .data = "y", .name_len = name_len}};
    size_t len;
    uint8_t *p = build(m, 2, 0, NULL, 0, &len, NULL);
    expect_refused(p, len, needle);
    free(p);
}

static void test_bad_names(void **state)
{
    (void)state;
    refused_names("a\0b", 3, "NUL byte in name");
    refused_names("/etc/passwd", 0, "absolute path");
    refused_names("\\x", 0, "absolute path");
    refused_names("C:x", 0, "absolute path");
    refused_names("../x", 0, "'..'");
    refused_names("a/../../x", 0, "'..'");
    refused_names("a/..", 0, "'..'");
    refused_names("a\\..\\b", 0, "'..'");
    refused_names("", 0, "empty name");
    refused_names("ok", 0, "member 'ok' appears twice");
    /* names that only look like those are fine */
    member m[] = {{.name = "a..b/..c/d..", .data = "x"}, {.name = "./.x", .data = "y"}};
    size_t len;
    uint8_t *p = build(m, 2, 0, NULL, 0, &len, NULL);
    mt_zip *z = open_ok(p, len);
    expect_member(z, "a..b/..c/d..", "x");
    mt_zip_free(z);
    free(p);
}

/* A ZIP64 field that claims a size is missing, or an extra field that runs past its area. */
static void test_bad_extra(void **state)
{
    (void)state;
    const member m[] = {{.name = "a", .data = "abc", .central_zip64 = 1}};
    size_t len;
    layout l;
    uint8_t *p = build(m, 1, 0, NULL, 0, &len, &l);
    p[l.central[0] + 46 + 1] = 0x7f;                 /* the extra's id: no longer ZIP64 */
    expect_refused(p, len, "ZIP64 extra field");
    free(p);
    p = build(m, 1, 0, NULL, 0, &len, &l);
    p[l.central[0] + 46 + 1 + 2] = 16;               /* the ZIP64 field too short for 3 values */
    expect_refused(p, len, "ZIP64 extra field");
    free(p);
    p = build(m, 1, 0, NULL, 0, &len, &l);
    p[l.central[0] + 46 + 1 + 2] = 200;              /* the field runs past the extra area */
    expect_refused(p, len, "ZIP64 extra field");
    free(p);
}

/* A real numpy.savez archive (tests/fixtures/pt/savez.npz): force_zip64 local headers. */
static void test_numpy_savez(void **state)
{
    (void)state;
    FILE *f = fopen("tests/fixtures/pt/savez.npz", "rb");
    assert_non_null(f);
    uint8_t tmp[4096];
    size_t len = fread(tmp, 1, sizeof tmp, f);
    fclose(f);
    assert_true(len > 100 && len < sizeof tmp);
    uint8_t *p = malloc(len);
    memcpy(p, tmp, len);
    mt_zip *z = open_ok(p, len);
    assert_int_equal(mt_zip_count(z), 2);
    for (int i = 0; i < 2; i++) {
        const mt_zip_entry *e = mt_zip_find(z, i ? "y.npy" : "x.npy");
        assert_non_null(e);
        assert_non_null(e->data);
        assert_true(e->size > 10 && e->offset + e->size <= len);
        assert_memory_equal(e->data, "\x93NUMPY", 6);
    }
    mt_zip_free(z);
    free(p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_plain_stored),
        cmocka_unit_test(test_empty_archive),
        cmocka_unit_test(test_torch_layout),
        cmocka_unit_test(test_zip64_fields),
        cmocka_unit_test(test_comments),
        cmocka_unit_test(test_compressed_listed),
        cmocka_unit_test(test_truncated_everywhere),
        cmocka_unit_test(test_not_zip),
        cmocka_unit_test(test_structural_refusals),
        cmocka_unit_test(test_bad_names),
        cmocka_unit_test(test_bad_extra),
        cmocka_unit_test(test_numpy_savez),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
