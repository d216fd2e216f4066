/* tensors.h: the tensor table every weight-file reader fills.
 *
 * A reader (safetensors.c, ptfile.c, npz.c) maps its file read-only, checks
 * it, and lists its tensors here: name, dtype, shape and a pointer into the
 * mapping.  model.c only ever sees this table, whatever the file format.
 *
 * transposed: the file stores a matrix as [in][out] (Marian's .npz layout)
 * while its shape[] is given as the engine expects it, [out][in].  Readers
 * of Hugging Face files never set it.
 */
#ifndef MT_TENSORS_H
#define MT_TENSORS_H

#include <stddef.h>
#include <stdint.h>

#include "util/status.h"

#define MT_MAX_RANK 8

typedef enum {
    MT_DT_UNKNOWN = 0, MT_DT_BOOL, MT_DT_U8, MT_DT_I8, MT_DT_I16, MT_DT_U16, MT_DT_F16, MT_DT_BF16,
    MT_DT_I32, MT_DT_U32, MT_DT_F32, MT_DT_F64, MT_DT_I64, MT_DT_U64,
} mt_dtype;

typedef struct {
    char       *name;
    mt_dtype    dtype;
    const char *dtype_name;             /* "F32", "F16", ... (static string) */
    int         rank;
    int64_t     shape[MT_MAX_RANK];
    int         transposed;             /* rank 2 stored as [shape[1]][shape[0]] */
    uint64_t    begin, end;             /* reader-specific byte offsets */
    const void *data;                   /* points into the mapping */
} mt_tensor;

typedef struct {
    char          *path;
    const char    *format;              /* "safetensors", "pytorch", "marian-npz" (static) */
    const uint8_t *map;                 /* whole file, PROT_READ */
    size_t         size;
    mt_tensor     *tensors;             /* sorted by name once the reader is done */
    int            n_tensors;
    void          *reader;              /* reader-private state, freed by reader_free */
    void         (*reader_free)(void *);
} mt_wfile;

/* Map path read-only into a new table (no tensors yet); min_size: shorter files are refused. */
mt_status mt_wfile_map(const char *path, const char *format, size_t min_size, mt_wfile **out, mt_err *err);
/* Sort the table by name; two tensors of one name are MT_ERR_FORMAT. */
mt_status mt_wfile_sort(mt_wfile *f, mt_err *err);
void      mt_wfile_close(mt_wfile *f);
/* The tensor called name, or NULL (after mt_wfile_sort). */
const mt_tensor *mt_wfile_find(const mt_wfile *f, const char *name);

/* The dtype called s ("F32", ...; safetensors' names): 1 and *dt, *name set, or 0. */
int       mt_dtype_lookup(const char *s, mt_dtype *dt, const char **name);
size_t    mt_dtype_size(mt_dtype dt);
const char *mt_dtype_name(mt_dtype dt);
/* IEEE half -> float (subnormals, inf and nan included). */
float     mt_f16_to_f32(uint16_t h);
float     mt_bf16_to_f32(uint16_t h);
/* float -> IEEE half, round to nearest even (overflow to inf). */
uint16_t  mt_f32_to_f16(float f);

#endif
