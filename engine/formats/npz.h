/* npz.h: a validating, read-only reader of a numpy .npz archive, the weight
 * file of Marian / OPUS-MT releases (written by numpy.savez or Marian's cnpy).
 *
 * The archive is a ZIP (zip.h) of STORED members, one .npy file per array.
 * mt_npz_open maps the file read-only and checks, before anyone reads a
 * tensor: the ZIP structure; that every member is stored (not compressed)
 * and named "<tensor>.npy"; each member's .npy header (magic \x93NUMPY,
 * version 1, 2 or 3, the header dict with exactly 'descr', 'fortran_order'
 * and 'shape'); a little-endian (or one-byte) dtype of tensors.h; C order
 * (fortran_order True is refused); and that the member holds exactly
 * prod(shape) x itemsize bytes after its header.  Every refusal names the
 * file and the member.
 *
 * The table (format "marian-npz") lists one tensor per member, named as in
 * the archive without ".npy" (Marian's names: "Wemb", "encoder_l1_self_Wq",
 * "special:model.yml", ...), shaped as stored, never transposed, its data in
 * place in the mapping (no copy; not necessarily aligned), sorted by name.
 */
#ifndef MT_NPZ_H
#define MT_NPZ_H

#include "tensors.h"

/* MT_OK and *out (close with mt_wfile_close); MT_ERR_IO when the file cannot
 * be read, MT_ERR_FORMAT when it is not a valid archive of .npy arrays,
 * MT_ERR_UNSUPPORTED for a compressed member, a big-endian or unknown dtype,
 * or fortran_order; MT_ERR_NOMEM.  On failure *out is NULL. */
mt_status mt_npz_open(const char *path, mt_wfile **out, mt_err *err);

#endif
