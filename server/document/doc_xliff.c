/* doc_xliff: XLIFF (document.h, format xliff): not read yet; refused. */
#include "doc_format.h"

static mt_status x_parse(srv_doc_kind kind, const char *data, size_t len, const srv_doc_limits *lim, void **state,
                         mt_err *err)
{
    return mt_err_set(err, MT_ERR_INPUT, "XLIFF is not read yet");
}

const srv_doc_format srv_doc_xliff_format = { x_parse, NULL, NULL, NULL, NULL, NULL, NULL };
