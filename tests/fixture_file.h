/* fixture_file: a whole fixture file in memory, for the tests (cmocka). */
#ifndef MTSERVE_TESTS_FIXTURE_FILE_H
#define MTSERVE_TESTS_FIXTURE_FILE_H

#include <stddef.h>

/* path's bytes, malloc'd and NUL-terminated (*len, may be NULL: their count);
 * a file that cannot be read fails the test, naming it.  Include <cmocka.h> first. */
char *slurp(const char *path, size_t *len);

#endif
