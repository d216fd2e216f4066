/* fixture_file: a whole fixture file in memory (fixture_file.h). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fixture_file.h"

char *slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        fail_msg("cannot open %s: %s (run the tests from the repository root, after make)", path, strerror(errno));
    size_t cap = 1 << 16, n = 0, got;
    char *b = malloc(cap + 1);
    assert_non_null(b);
    while ((got = fread(b + n, 1, cap - n, f)) > 0) {
        n += got;
        if (n == cap) {
            cap *= 2;
            b = realloc(b, cap + 1);
            assert_non_null(b);
        }
    }
    int bad = ferror(f);
    fclose(f);
    if (bad)
        fail_msg("cannot read %s", path);
    b[n] = '\0';
    if (len)
        *len = n;
    return b;
}
