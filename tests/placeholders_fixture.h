/* placeholders_fixture: the rows of tests/fixtures/placeholders/{with,without}.tsv
 * (README.md there): a Debian gettext domain, an English msgid, and (with.tsv)
 * the placeholders an independent reader (extract.py) found in it.  Fields are
 * tab-separated and escaped (\\ \t \n).  Shared by test_placeholders.c and
 * test_placeholders_server.c; include <cmocka.h> first. */
#ifndef MTSERVE_TESTS_PLACEHOLDERS_FIXTURE_H
#define MTSERVE_TESTS_PLACEHOLDERS_FIXTURE_H

#include <stdlib.h>
#include <string.h>

#include "fixture_file.h"

#define PH_FIXTURE_DIR "tests/fixtures/placeholders/"

typedef struct {
    char  *domain;
    char  *text;            /* the msgid */
    char **ph;              /* [n_ph] its placeholders, in order */
    int    n_ph;
} ph_row;

/* Field s[0..n) unescaped: malloc'd. */
static inline char *ph_unescape(const char *s, size_t n)
{
    char *o = malloc(n + 1), *p = o;
    assert_non_null(o);
    for (size_t i = 0; i < n; i++) {
        if (s[i] == '\\' && i + 1 < n) {
            char c = s[++i];
            *p++ = c == 'n' ? '\n' : c == 't' ? '\t' : c;
        } else {
            *p++ = s[i];
        }
    }
    *p = 0;
    return o;
}

/* The rows of path: their count, *out malloc'd (ph_rows_free). */
static inline int ph_rows_load(const char *path, ph_row **out)
{
    size_t len;
    char *data = slurp(path, &len);
    int n = 0, cap = 0;
    ph_row *rows = NULL;
    for (char *line = data; line < data + len;) {
        char *end = memchr(line, '\n', (size_t)(data + len - line));
        if (!end)
            end = data + len;
        if (n == cap) {
            cap = cap ? 2 * cap : 256;
            rows = realloc(rows, sizeof *rows * (size_t)cap);
            assert_non_null(rows);
        }
        ph_row *r = &rows[n++];
        memset(r, 0, sizeof *r);
        int field = 0;
        for (char *f = line; f <= end; field++) {
            char *tab = memchr(f, '\t', (size_t)(end - f));
            char *e = tab ? tab : end;
            char *v = ph_unescape(f, (size_t)(e - f));
            if (field == 0) {
                r->domain = v;
            } else if (field == 1) {
                r->text = v;
            } else {
                r->ph = realloc(r->ph, sizeof *r->ph * (size_t)(r->n_ph + 1));
                assert_non_null(r->ph);
                r->ph[r->n_ph++] = v;
            }
            f = e + 1;
        }
        assert_true(field >= 2);
        line = end + 1;
    }
    free(data);
    *out = rows;
    return n;
}

static inline void ph_rows_free(ph_row *rows, int n)
{
    for (int i = 0; i < n; i++) {
        free(rows[i].domain);
        free(rows[i].text);
        for (int k = 0; k < rows[i].n_ph; k++)
            free(rows[i].ph[k]);
        free(rows[i].ph);
    }
    free(rows);
}

/* Non-overlapping occurrences of needle in s. */
static inline int ph_count(const char *s, const char *needle)
{
    int n = 0;
    size_t k = strlen(needle);
    for (const char *p = s; k && (p = strstr(p, needle)); p += k)
        n++;
    return n;
}

#endif
