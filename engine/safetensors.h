/* safetensors.h: a validating, read-only reader of one .safetensors file.
 *
 * Layout (marian-spec.md section 7): u64 LE header length N, N bytes of JSON
 * header, then the data buffer.  mt_st_open maps the file read-only and checks
 * everything before anyone reads a tensor: the header bound, the JSON, every
 * dtype and shape, and that the tensors tile the data buffer exactly (sorted
 * by offset: contiguous from 0, no hole, no overlap, ending at the file end).
 * After a successful open every tensor's bytes are inside the mapping.
 */
#ifndef MT_SAFETENSORS_H
#define MT_SAFETENSORS_H

#include <stddef.h>
#include <stdint.h>

#include "status.h"

#define MT_ST_MAX_RANK 8

typedef enum {
    MT_DT_UNKNOWN = 0, MT_DT_BOOL, MT_DT_U8, MT_DT_I8, MT_DT_I16, MT_DT_U16, MT_DT_F16, MT_DT_BF16,
    MT_DT_I32, MT_DT_U32, MT_DT_F32, MT_DT_F64, MT_DT_I64, MT_DT_U64,
} mt_dtype;

typedef struct {
    char       *name;
    mt_dtype    dtype;
    const char *dtype_name;             /* as written in the header (static string) */
    int         rank;
    int64_t     shape[MT_ST_MAX_RANK];
    uint64_t    begin, end;             /* offsets relative to the data buffer */
    const void *data;                   /* points into the mapping */
} mt_st_tensor;

typedef struct {
    char          *path;
    const uint8_t *map;                 /* whole file, PROT_READ */
    size_t         size;
    mt_st_tensor  *tensors;             /* sorted by name */
    int            n_tensors;
} mt_st_file;

mt_status mt_st_open(const char *path, mt_st_file **out, mt_err *err);
void      mt_st_close(mt_st_file *f);
/* The tensor called name, or NULL. */
const mt_st_tensor *mt_st_find(const mt_st_file *f, const char *name);
size_t    mt_dtype_size(mt_dtype dt);
/* IEEE half -> float (subnormals, inf and nan included). */
float     mt_f16_to_f32(uint16_t h);
float     mt_bf16_to_f32(uint16_t h);
/* float -> IEEE half, round to nearest even (overflow to inf). */
uint16_t  mt_f32_to_f16(float f);

#endif
