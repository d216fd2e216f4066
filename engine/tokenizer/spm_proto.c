/* A bounds-checked protobuf wire-format reader for SentencePiece ModelProto
 * (see spm_proto.h).  Field numbers: docs/MARIAN.md 6.2 / sentencepiece_model.proto. */
#include "spm_proto.h"

#include <stdlib.h>
#include <string.h>

/* ---- wire-format reader --------------------------------------------------- */

enum { WT_VARINT = 0, WT_FIXED64 = 1, WT_LEN = 2, WT_SGROUP = 3, WT_EGROUP = 4, WT_FIXED32 = 5 };

typedef struct {
    const uint8_t *p, *end;
    const uint8_t *base;   /* start of the whole file, for offsets in messages */
    const char    *name;   /* file name for messages                            */
    mt_err        *err;
} reader;

static mt_status bad(reader *r, const char *what)
{
    return mt_err_set(r->err, MT_ERR_FORMAT, "%s: malformed SentencePiece model: %s at byte %zu",
                      r->name, what, (size_t)(r->p - r->base));
}

static mt_status rd_varint(reader *r, uint64_t *v)
{
    uint64_t x = 0;
    for (int i = 0; i < 10; i++) {
        if (r->p >= r->end)
            return bad(r, "truncated varint");
        uint8_t b = *r->p++;
        x |= (uint64_t)(b & 0x7f) << (7 * i);
        if (!(b & 0x80)) {
            *v = x;
            return MT_OK;
        }
    }
    return bad(r, "varint longer than 10 bytes");
}

static mt_status rd_key(reader *r, uint32_t *field, int *wt)
{
    uint64_t k;
    mt_status st = rd_varint(r, &k);
    if (st)
        return st;
    *wt = (int)(k & 7);
    if ((k >> 3) == 0 || (k >> 3) > 0x1fffffff)
        return bad(r, "invalid field number");
    *field = (uint32_t)(k >> 3);
    return MT_OK;
}

/* A length-delimited payload as a sub-reader (advances r past it). */
static mt_status rd_len(reader *r, reader *sub)
{
    uint64_t n;
    mt_status st = rd_varint(r, &n);
    if (st)
        return st;
    if (n > (uint64_t)(r->end - r->p))
        return bad(r, "length-delimited field runs past the end of its message");
    *sub = *r;
    sub->end = r->p + n;
    r->p += n;
    return MT_OK;
}

static mt_status rd_fixed32(reader *r, uint32_t *v)
{
    if (r->end - r->p < 4)
        return bad(r, "truncated fixed32");
    *v = (uint32_t)r->p[0] | (uint32_t)r->p[1] << 8 | (uint32_t)r->p[2] << 16 | (uint32_t)r->p[3] << 24;
    r->p += 4;
    return MT_OK;
}

/* Skip one field whose key was just read.  Groups (deprecated, never written by
 * spm) are skipped too, with a nesting limit. */
static mt_status skip_field(reader *r, uint32_t field, int wt, int depth)
{
    uint64_t v;
    uint32_t v32;
    reader sub = { 0 };
    switch (wt) {
    case WT_VARINT:  return rd_varint(r, &v);
    case WT_FIXED64:
        if (r->end - r->p < 8)
            return bad(r, "truncated fixed64");
        r->p += 8;
        return MT_OK;
    case WT_LEN:     return rd_len(r, &sub);
    case WT_FIXED32: return rd_fixed32(r, &v32);
    case WT_SGROUP:
        if (depth > 32)
            return bad(r, "groups nested too deeply");
        for (;;) {
            uint32_t f = 0;
            int w = 0;
            mt_status st = rd_key(r, &f, &w);
            if (st)
                return st;
            if (w == WT_EGROUP)
                return f == field ? MT_OK : bad(r, "mismatched end-group");
            if ((st = skip_field(r, f, w, depth + 1)))
                return st;
        }
    default:
        return bad(r, "invalid wire type");
    }
}

static mt_status rd_bool(reader *r, int *out)
{
    uint64_t v;
    mt_status st = rd_varint(r, &v);
    if (!st)
        *out = v != 0;
    return st;
}

static mt_status rd_int32(reader *r, int32_t *out)
{
    uint64_t v;
    mt_status st = rd_varint(r, &v);
    if (!st)
        *out = (int32_t)(uint32_t)v;   /* protobuf int32: low 32 bits of the sign-extended varint */
    return st;
}

static mt_status rd_bytes(reader *r, mt_spm_bytes *out)
{
    reader sub = { 0 };
    mt_status st = rd_len(r, &sub);
    if (!st) {
        out->p = sub.p;
        out->n = (size_t)(sub.end - sub.p);
    }
    return st;
}

/* ---- messages ------------------------------------------------------------- */

static mt_status parse_piece(reader *r, mt_spm_bytes *piece, float *score, uint8_t *type)
{
    while (r->p < r->end) {
        uint32_t f = 0;
        int wt = 0;
        uint32_t u;
        int32_t v;
        mt_status st = rd_key(r, &f, &wt);
        if (st)
            return st;
        if (f == 1 && wt == WT_LEN) {
            st = rd_bytes(r, piece);
        } else if (f == 2 && wt == WT_FIXED32) {
            if (!(st = rd_fixed32(r, &u)))
                memcpy(score, &u, sizeof *score);
        } else if (f == 3 && wt == WT_VARINT) {
            /* proto2 closed enum: an unknown value is kept as an unknown field
             * and the field keeps its previous value. */
            if (!(st = rd_int32(r, &v)) && v >= MT_SPM_NORMAL && v <= MT_SPM_BYTE)
                *type = (uint8_t)v;
        } else {
            st = skip_field(r, f, wt, 0);
        }
        if (st)
            return st;
    }
    return MT_OK;
}

static mt_status parse_trainer(reader *r, mt_spm_proto *m)
{
    while (r->p < r->end) {
        uint32_t f = 0;
        int wt = 0;
        int32_t v;
        mt_status st = rd_key(r, &f, &wt);
        if (st)
            return st;
        if (wt == WT_VARINT && f == 3) {
            if (!(st = rd_int32(r, &v)) && v >= MT_SPM_UNIGRAM && v <= MT_SPM_CHAR)
                m->model_type = v;
        } else if (wt == WT_VARINT && f == 4) {
            if (!(st = rd_int32(r, &v)))
                m->vocab_size = v;
        } else if (wt == WT_VARINT && f == 24) {
            st = rd_bool(r, &m->treat_whitespace_as_suffix);
        } else if (wt == WT_VARINT && f == 35) {
            st = rd_bool(r, &m->byte_fallback);
        } else if (wt == WT_VARINT && f == 40) {
            st = rd_int32(r, &m->unk_id);
        } else if (wt == WT_VARINT && f == 41) {
            st = rd_int32(r, &m->bos_id);
        } else if (wt == WT_VARINT && f == 42) {
            st = rd_int32(r, &m->eos_id);
        } else if (wt == WT_VARINT && f == 43) {
            st = rd_int32(r, &m->pad_id);
        } else if (wt == WT_LEN && f == 44) {
            if (!(st = rd_bytes(r, &m->unk_surface)))
                m->has_unk_surface = 1;
        } else {
            st = skip_field(r, f, wt, 0);
        }
        if (st)
            return st;
    }
    return MT_OK;
}

static void normspec_defaults(mt_spm_normspec *n)
{
    memset(n, 0, sizeof *n);
    n->add_dummy_prefix = n->remove_extra_whitespaces = n->escape_whitespaces = 1;
}

static mt_status parse_normspec(reader *r, mt_spm_normspec *n)
{
    n->present = 1;
    while (r->p < r->end) {
        uint32_t f = 0;
        int wt = 0;
        mt_status st = rd_key(r, &f, &wt);
        if (st)
            return st;
        if (wt == WT_LEN && f == 1)
            st = rd_bytes(r, &n->name);
        else if (wt == WT_LEN && f == 2)
            st = rd_bytes(r, &n->charsmap);
        else if (wt == WT_VARINT && f == 3)
            st = rd_bool(r, &n->add_dummy_prefix);
        else if (wt == WT_VARINT && f == 4)
            st = rd_bool(r, &n->remove_extra_whitespaces);
        else if (wt == WT_VARINT && f == 5)
            st = rd_bool(r, &n->escape_whitespaces);
        else
            st = skip_field(r, f, wt, 0);
        if (st)
            return st;
    }
    return MT_OK;
}

/* One pass over the top-level message.  With m->piece == NULL it only counts
 * pieces (and checks the framing); otherwise it fills everything. */
static mt_status parse_model(reader r, mt_spm_proto *m, int *n_pieces)
{
    int n = 0;
    while (r.p < r.end) {
        uint32_t f = 0;
        int wt = 0;
        reader sub = { 0 };
        mt_status st = rd_key(&r, &f, &wt);
        if (st)
            return st;
        if (wt != WT_LEN || f < 1 || f > 5) {
            if ((st = skip_field(&r, f, wt, 0)))
                return st;
            continue;
        }
        if ((st = rd_len(&r, &sub)))
            return st;
        if (f == 1) {
            if (n == INT32_MAX / 2)
                return bad(&r, "too many pieces");
            if (m->piece) {
                m->piece[n] = (mt_spm_bytes){ 0 };
                m->score[n] = 0.0f;
                m->type[n] = MT_SPM_NORMAL;
                st = parse_piece(&sub, &m->piece[n], &m->score[n], &m->type[n]);
            }
            n++;
        } else if (!m->piece) {
            continue;                     /* counting pass */
        } else if (f == 2) {
            st = parse_trainer(&sub, m);
        } else if (f == 3) {
            st = parse_normspec(&sub, &m->normalizer);
        } else if (f == 5) {
            st = parse_normspec(&sub, &m->denormalizer);
        }                                 /* f == 4: self_test_data, ignored */
        if (st)
            return st;
    }
    *n_pieces = n;
    return MT_OK;
}

mt_status mt_spm_proto_parse(const uint8_t *buf, size_t len, const char *name,
                             mt_spm_proto *out, mt_err *err)
{
    memset(out, 0, sizeof *out);
    out->model_type = MT_SPM_UNIGRAM;
    out->vocab_size = 8000;
    out->unk_id = 0;
    out->bos_id = 1;
    out->eos_id = 2;
    out->pad_id = -1;
    out->unk_surface = (mt_spm_bytes){ (const uint8_t *)" \xE2\x81\x87 ", 5 };
    normspec_defaults(&out->normalizer);
    normspec_defaults(&out->denormalizer);

    reader r = { buf, buf + len, buf, name ? name : "(memory)", err };
    int n = 0;
    mt_status st = parse_model(r, out, &n);
    if (st)
        return st;
    if (n == 0)
        return mt_err_set(err, MT_ERR_FORMAT, "%s: not a SentencePiece model (no pieces)", r.name);
    out->piece = calloc((size_t)n, sizeof *out->piece);
    out->score = calloc((size_t)n, sizeof *out->score);
    out->type = calloc((size_t)n, sizeof *out->type);
    if (!out->piece || !out->score || !out->type) {
        st = mt_err_set(err, MT_ERR_NOMEM, "%s: out of memory for %d pieces", r.name, n);
        goto fail;
    }
    if ((st = parse_model(r, out, &out->n_pieces)))
        goto fail;
    return MT_OK;
fail:
    mt_spm_proto_free(out);
    return st;
}

void mt_spm_proto_free(mt_spm_proto *p)
{
    if (!p)
        return;
    free(p->piece);
    free(p->score);
    free(p->type);
    p->piece = NULL;
    p->score = NULL;
    p->type = NULL;
    p->n_pieces = 0;
}
