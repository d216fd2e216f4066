/* printable: a name from the input (an archive entry, a declared encoding)
 * made safe to put in a message: ASCII controls and non-ASCII bytes as '?',
 * cut at 80 bytes with "...". */
#ifndef SRV_PRINTABLE_H
#define SRV_PRINTABLE_H

#include <stddef.h>

/* name (NULL: "") into buf[0..cap) (cap >= 5), NUL-terminated; returns buf. */
const char *srv_printable(const char *name, char *buf, size_t cap);

#endif
