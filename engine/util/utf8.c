/* utf8: validating UTF-8 decoder (utf8.h). */
#include "utf8.h"

#include <string.h>

size_t mt_utf8_decode(const uint8_t *s, size_t len, uint32_t *cp)
{
    uint8_t b = s[0];
    if (b < 0x80) {
        *cp = b;
        return 1;
    }
    if (len >= 2 && (b & 0xE0) == 0xC0 && (s[1] & 0xC0) == 0x80) {
        *cp = (uint32_t)(b & 0x1F) << 6 | (s[1] & 0x3F);
        return *cp >= 0x80 ? 2 : 0;
    }
    if (len >= 3 && (b & 0xF0) == 0xE0 && (s[1] & 0xC0) == 0x80 && (s[2] & 0xC0) == 0x80) {
        *cp = (uint32_t)(b & 0x0F) << 12 | (uint32_t)(s[1] & 0x3F) << 6 | (s[2] & 0x3F);
        return *cp >= 0x800 && (*cp < 0xD800 || *cp > 0xDFFF) ? 3 : 0;
    }
    if (len >= 4 && (b & 0xF8) == 0xF0 && (s[1] & 0xC0) == 0x80 && (s[2] & 0xC0) == 0x80 &&
        (s[3] & 0xC0) == 0x80) {
        *cp = (uint32_t)(b & 0x07) << 18 | (uint32_t)(s[1] & 0x3F) << 12 |
              (uint32_t)(s[2] & 0x3F) << 6 | (s[3] & 0x3F);
        return *cp >= 0x10000 && *cp <= 0x10FFFF ? 4 : 0;
    }
    return 0;
}

size_t mt_utf8_encode(uint32_t cp, char *out)
{
    if (cp < 0x80) {
        out[0] = (char)cp;
        return 1;
    }
    if (cp < 0x800) {
        out[0] = (char)(0xC0 | cp >> 6);
        out[1] = (char)(0x80 | (cp & 0x3F));
        return 2;
    }
    if (cp < 0x10000) {
        out[0] = (char)(0xE0 | cp >> 12);
        out[1] = (char)(0x80 | (cp >> 6 & 0x3F));
        out[2] = (char)(0x80 | (cp & 0x3F));
        return 3;
    }
    out[0] = (char)(0xF0 | cp >> 18);
    out[1] = (char)(0x80 | (cp >> 12 & 0x3F));
    out[2] = (char)(0x80 | (cp >> 6 & 0x3F));
    out[3] = (char)(0x80 | (cp & 0x3F));
    return 4;
}

size_t mt_utf8_next(const char *s, size_t len, uint32_t *cp)
{
    size_t k = mt_utf8_decode((const uint8_t *)s, len, cp);
    if (k)
        return k;
    *cp = 0xfffd;
    return 1;
}

size_t mt_utf8_valid_prefix(const char *s, size_t len)
{
    const uint8_t *u = (const uint8_t *)s;
    size_t i = 0;
    uint32_t cp;
    while (i < len) {
        size_t k = mt_utf8_decode(u + i, len - i, &cp);
        if (!k)
            break;
        i += k;
    }
    return i;
}

int mt_utf8_valid(const char *s, size_t len)
{
    return mt_utf8_valid_prefix(s, len) == len;
}

int mt_utf8_clip(const char *s, size_t len, size_t max)
{
    if (len <= max)
        return (int)len;
    size_t n = max;
    while (n > 0 && ((unsigned char)s[n] & 0xC0) == 0x80)
        n--;
    return (int)n;
}

size_t mt_utf8_scrub(char *s)
{
    size_t len = strlen(s), bad = 0;
    uint32_t cp;
    for (size_t i = 0; i < len;) {
        size_t k = mt_utf8_decode((const uint8_t *)s + i, len - i, &cp);
        if (k) {
            i += k;
        } else {
            s[i++] = '?';
            bad++;
        }
    }
    return bad;
}

int mt_utf8_is_space(uint32_t c)
{
    return c == ' ' || (c >= 0x09 && c <= 0x0d) || c == 0x85 || c == 0xa0 || c == 0x1680 ||
           (c >= 0x2000 && c <= 0x200b) || c == 0x2028 || c == 0x2029 || c == 0x202f ||
           c == 0x205f || c == 0x3000 || c == 0xfeff;
}

long mt_utf8_count(const char *s, size_t len)
{
    long n = 0;
    for (size_t i = 0; i < len; i++)
        n += ((unsigned char)s[i] & 0xc0) != 0x80;
    return n;
}
