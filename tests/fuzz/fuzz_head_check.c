/* fuzz_head_check: srv_head_check (server/http/head_check.c) on arbitrary
 * bytes, with a body limit taken from the input's first byte.
 *
 * Checked:
 *   - 0 exactly when the bytes hold no CRLF CRLF; otherwise the length ends
 *     at the first CRLF CRLF;
 *   - the status is 0, 400 or 413, with a message exactly when not 0;
 *   - a head with a control byte (below 0x20 but HTAB, CR, LF; or 0x7f) is
 *     never passed (a reference scan written here);
 *   - a passed head has every Content-Length value (trimmed) made of 1 to 19
 *     digits;
 *   - the path and Content-Type copies are NUL-terminated within their
 *     buffers, the path without '?' or ' ';
 *   - the verdict does not depend on bytes past the first chunk-size line
 *     (it is the same for the input cut there, when that line is complete). */
#include "fuzz_common.h"

#include <strings.h>

#include "http/head_check.h"

static size_t limit_of(void *ctx, const char *path)
{
    (void)path;
    return *(const size_t *)ctx;
}

static size_t first_crlfcrlf(const char *b, size_t n)
{
    for (size_t i = 0; i + 3 < n; i++)
        if (memcmp(b + i, "\r\n\r\n", 4) == 0)
            return i + 4;
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    size_t limit = (size_t)1 << (data[0] % 40);
    const char *buf = (const char *)data + 1;
    size_t n = size - 1;
    srv_head_verdict v;
    size_t len = srv_head_check(buf, n, limit_of, &limit, &v);
    size_t want = first_crlfcrlf(buf, n);
    FUZZ_CHECK(len == want);
    if (!len)
        return 0;
    FUZZ_CHECK(v.status == 0 || v.status == 400 || v.status == 413);
    FUZZ_CHECK((v.status != 0) == (v.msg[0] != 0));
    FUZZ_CHECK(memchr(v.path, 0, sizeof v.path) && memchr(v.content_type, 0, sizeof v.content_type));
    FUZZ_CHECK(!strchr(v.path, '?') && !strchr(v.path, ' '));
    if (v.status == 0) {
        for (size_t i = 0; i < len; i++) {
            unsigned char c = (unsigned char)buf[i];
            FUZZ_CHECK(!((c < 0x20 && c != '\t' && c != '\r' && c != '\n') || c == 0x7f));
        }
        /* every Content-Length line: 1-19 digits */
        const char *p = buf, *end = buf + len;
        p = memchr(p, '\n', (size_t)(end - p)) + 1;
        while (p < end) {
            const char *e = memchr(p, '\n', (size_t)(end - p));
            size_t ln = (size_t)(e - p);
            if (ln >= 15 && strncasecmp(p, "Content-Length:", 15) == 0) {
                const char *val = p + 15;
                size_t vn = ln - 15;
                if (vn && val[vn - 1] == '\r')
                    vn--;
                while (vn && (*val == ' ' || *val == '\t'))
                    val++, vn--;
                while (vn && (val[vn - 1] == ' ' || val[vn - 1] == '\t'))
                    vn--;
                FUZZ_CHECK(vn >= 1 && vn <= 19);
                for (size_t k = 0; k < vn; k++)
                    FUZZ_CHECK(val[k] >= '0' && val[k] <= '9');
            }
            p = e + 1;
        }
    }
    /* the verdict is the head's and the first chunk line's: cutting after that line changes nothing */
    const char *rest = buf + len;
    const char *nl = memchr(rest, '\n', n - len);
    if (nl) {
        srv_head_verdict w;
        size_t len2 = srv_head_check(buf, (size_t)(nl + 1 - buf), limit_of, &limit, &w);
        FUZZ_CHECK(len2 == len && w.status == v.status && strcmp(w.msg, v.msg) == 0);
    }
    return 0;
}
