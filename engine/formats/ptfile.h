/* ptfile.h: a validating, read-only reader of pytorch_model.bin (the zip
 * archive torch.save writes since torch 1.6).
 *
 * Layout: one top-level folder <prefix>/ holding data.pkl (the state dict's
 * pickle: names -> views of storages), data/<key> (each storage's raw bytes,
 * STORED), version and maybe byteorder.  mt_pt_open maps the file, checks
 * the zip (zip.h), reads the pickle without running it (pickle.h), and lists
 * every tensor with a pointer into the mapping, as the safetensors reader
 * does: model.c sees only the mt_wfile.
 *
 * Refused, each with MT_ERR_FORMAT and a message naming the file: a legacy
 * (pre-1.6, non-zip) torch file, a broken zip, a pickle with anything but a
 * state dict's globals and opcodes, a compressed storage member, a view that
 * is not contiguous (row-major) or runs past its storage, a storage whose
 * size disagrees with its persistent id, two views reading one storage as
 * different dtypes, complex and quantized storages.  Other real dtypes
 * (F64, I64, ...) are listed with their dtype, like safetensors' ones: the
 * loader refuses those it would use, by name.  Views of one storage (tied
 * embeddings) get the same or overlapping data pointers.
 */
#ifndef MT_PTFILE_H
#define MT_PTFILE_H

#include "tensors.h"

/* Map and check path; on success *out is a sorted table (f->format
 * "pytorch") to be freed with mt_wfile_close.  On error *out is NULL. */
mt_status mt_pt_open(const char *path, mt_wfile **out, mt_err *err);

#endif
