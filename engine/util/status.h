/* Status codes shared by every engine module.  Library code never exits: it
 * returns one of these and fills an mt_err with a message naming the problem.
 * The server maps status -> HTTP in one place (server/http/errors.c). */
#ifndef MT_STATUS_H
#define MT_STATUS_H

#include <stddef.h>

typedef enum {
    MT_OK = 0,
    MT_ERR_IO,          /* a file is missing or unreadable                  */
    MT_ERR_FORMAT,      /* a file is malformed, truncated or inconsistent   */
    MT_ERR_UNSUPPORTED, /* valid, but not something we implement (BPE spm)  */
    MT_ERR_INPUT,       /* bad caller input: invalid UTF-8, empty, bad args */
    MT_ERR_TOO_LONG,    /* input over a configured or model limit           */
    MT_ERR_NOMEM,       /* allocation failed                                */
    MT_ERR_BUSY,        /* no free slot or session                          */
    MT_ERR_INTERNAL,    /* a bug on our side                                */
    MT_ERR_ABORTED,     /* the caller's abort callback asked to stop        */
} mt_status;

typedef struct {
    mt_status status;
    char      msg[512];
} mt_err;

/* Record status and a printf-style message in err (err may be NULL); returns status. */
mt_status mt_err_set(mt_err *err, mt_status status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
const char *mt_status_name(mt_status s);

#endif
