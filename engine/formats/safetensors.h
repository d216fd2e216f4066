/* safetensors.h: a validating, read-only reader of one .safetensors file.
 *
 * Layout (docs/MARIAN.md section 7): u64 LE header length N, N bytes of JSON
 * header, then the data buffer.  mt_st_open maps the file read-only and checks
 * everything before anyone reads a tensor: the header bound, the JSON, every
 * dtype and shape, and that the tensors tile the data buffer exactly (sorted
 * by offset: contiguous from 0, no hole, no overlap, ending at the file end).
 * After a successful open every tensor's bytes are inside the mapping.
 */
#ifndef MT_SAFETENSORS_H
#define MT_SAFETENSORS_H

#include "tensors.h"

mt_status mt_st_open(const char *path, mt_wfile **out, mt_err *err);

#endif
