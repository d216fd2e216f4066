#include "status.h"

#include "utf8.h"

#include <stdarg.h>
#include <stdio.h>

mt_status mt_err_set(mt_err *err, mt_status status, const char *fmt, ...)
{
    if (err) {
        va_list ap;
        va_start(ap, fmt);
        err->status = status;
        vsnprintf(err->msg, sizeof err->msg, fmt, ap);
        va_end(ap);
        /* Messages quote file and request bytes and end up in JSON bodies:
         * a quote cut mid-character (here or by the caller's own snprintf)
         * or an invalid byte must not make the message invalid UTF-8. */
        mt_utf8_scrub(err->msg);
    }
    return status;
}

const char *mt_status_name(mt_status s)
{
    switch (s) {
    case MT_OK:              return "ok";
    case MT_ERR_IO:          return "io_error";
    case MT_ERR_FORMAT:      return "bad_format";
    case MT_ERR_UNSUPPORTED: return "unsupported";
    case MT_ERR_INPUT:       return "invalid_input";
    case MT_ERR_TOO_LONG:    return "too_long";
    case MT_ERR_NOMEM:       return "out_of_memory";
    case MT_ERR_BUSY:        return "busy";
    case MT_ERR_INTERNAL:    return "internal_error";
    case MT_ERR_ABORTED:     return "aborted";
    }
    return "unknown";
}
