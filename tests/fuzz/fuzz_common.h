/* fuzz_common.h: small helpers shared by the libFuzzer targets (tests/fuzz/README.md).
 *
 * Every target is one fuzz_<name>.c defining LLVMFuzzerTestOneInput.  A target
 * must never exit, print per input, or leak: libFuzzer reports each as a bug.
 * A broken invariant is reported with FUZZ_CHECK, which aborts (a crash that
 * libFuzzer saves under build-fuzz/crashes/<target>/).
 */
#ifndef FUZZ_COMMON_H
#define FUZZ_COMMON_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#ifndef FUZZ_ROOT
#define FUZZ_ROOT "."
#endif

#define FUZZ_CHECK(cond)                                                                   \
    do {                                                                                   \
        if (!(cond)) {                                                                     \
            fprintf(stderr, "%s:%d: invariant failed: %s\n", __FILE__, __LINE__, #cond);   \
            abort();                                                                       \
        }                                                                                  \
    } while (0)

/* The repository root, where the fixtures live: $FUZZ_ROOT, else the directory
 * the target was built from (fuzz.mk passes it), so a binary runs from anywhere. */
static inline const char *fuzz_root(void)
{
    const char *r = getenv("FUZZ_ROOT");
    return r && *r ? r : FUZZ_ROOT;
}

/* root/rel into buf; aborts when it does not fit (a setup error, not a finding). */
static inline const char *fuzz_path(char *buf, size_t cap, const char *rel)
{
    int n = snprintf(buf, cap, "%s/%s", fuzz_root(), rel);
    FUZZ_CHECK(n > 0 && (size_t)n < cap);
    return buf;
}

/* A whole file into a malloc'd buffer (setup only: aborts when unreadable). */
static inline uint8_t *fuzz_slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "fuzz setup: cannot open %s (set FUZZ_ROOT to the repository root)\n", path);
        abort();
    }
    size_t cap = 1 << 16, n = 0;
    uint8_t *buf = malloc(cap);
    FUZZ_CHECK(buf);
    for (;;) {
        size_t got = fread(buf + n, 1, cap - n, f);
        n += got;
        if (n < cap)
            break;
        cap *= 2;
        buf = realloc(buf, cap);
        FUZZ_CHECK(buf);
    }
    fclose(f);
    *len = n;
    return buf;
}

/* A memfd for the targets whose readers map a path: its fd, and its
 * /proc/self/fd path in path[0..cap). */
static inline int fuzz_memfd(const char *name, char *path, size_t cap)
{
    int fd = memfd_create(name, MFD_CLOEXEC);
    FUZZ_CHECK(fd >= 0);
    snprintf(path, cap, "/proc/self/fd/%d", fd);
    return fd;
}

/* Make the file behind fd hold exactly data[0..size) (a memfd the target maps). */
static inline void fuzz_fill_fd(int fd, const uint8_t *data, size_t size)
{
    FUZZ_CHECK(ftruncate(fd, 0) == 0);
    for (size_t at = 0; at < size;) {
        ssize_t w = pwrite(fd, data + at, size - at, (off_t)at);
        FUZZ_CHECK(w > 0);
        at += (size_t)w;
    }
}

/* The fuzz targets' own UTF-8 decoder, written from the rules the project
 * documents (no overlong forms, no surrogates, nothing above U+10FFFF), so the
 * checks do not trust the code under test.  One character at s[0..len)
 * (len >= 1): its length, or 0 if invalid; *cp gets the code point. */
static inline size_t fuzz_utf8_char(const uint8_t *s, size_t len, uint32_t *cp)
{
    uint8_t b = s[0];
    size_t n = b < 0x80 ? 1 : b >= 0xc2 && b <= 0xdf ? 2 : b >= 0xe0 && b <= 0xef ? 3 : b >= 0xf0 && b <= 0xf4 ? 4 : 0;
    if (n == 0 || n > len)
        return 0;
    uint32_t c = n == 1 ? b : (uint32_t)(b & (0xff >> (n + 1)));
    for (size_t i = 1; i < n; i++) {
        if ((s[i] & 0xc0) != 0x80)
            return 0;
        c = c << 6 | (s[i] & 0x3f);
    }
    static const uint32_t min[5] = {0, 0, 0x80, 0x800, 0x10000};
    if (c < min[n] || (c >= 0xd800 && c <= 0xdfff) || c > 0x10ffff)
        return 0;
    *cp = c;
    return n;
}

/* 1 when s[0..len) is entirely valid UTF-8. */
static inline int fuzz_utf8_valid(const char *s, size_t len)
{
    uint32_t cp;
    for (size_t i = 0, k; i < len; i += k)
        if (!(k = fuzz_utf8_char((const uint8_t *)s + i, len - i, &cp)))
            return 0;
    return 1;
}

/* Cut the input in parts at the first `max_parts - 1` NUL bytes (the format of
 * the targets that take several files in one input). */
static inline int fuzz_split(const uint8_t *data, size_t size, int max_parts, const uint8_t **part,
                             size_t *part_len)
{
    int n = 0;
    size_t at = 0;
    while (n < max_parts - 1) {
        const uint8_t *z = memchr(data + at, 0, size - at);
        if (!z)
            break;
        part[n] = data + at;
        part_len[n] = (size_t)(z - (data + at));
        n++;
        at = (size_t)(z - data) + 1;
    }
    part[n] = data + at;
    part_len[n] = size - at;
    return n + 1;
}

#endif
