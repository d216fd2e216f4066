/* printable: a name made safe for a message (printable.h). */
#include "printable.h"

#include <string.h>

const char *srv_printable(const char *name, char *buf, size_t cap)
{
    size_t o = 0;
    for (size_t i = 0; name && name[i] && o + 4 < cap && i < 80; i++)
        buf[o++] = (name[i] >= 0x20 && name[i] < 0x7f) ? name[i] : '?';
    if (name && strlen(name) > 80 && o + 4 < cap)
        buf[o++] = '.', buf[o++] = '.', buf[o++] = '.';
    buf[o] = 0;
    return buf;
}
