/* vocab.c: a Marian vocabulary, vocab.json or target_vocab.json (vocab.h). */
#include "vocab.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#define MAX_VOCAB_ID (1 << 24)   /* sanity bound for vocab.json */

void mt_vocab_free(mt_vocab *v)
{
    free(v->arena);
    free(v->map.e);
    free(v->piece);
    free(v->piece_len);
    memset(v, 0, sizeof *v);
}

static mt_status special_id(const mt_vocab *v, const char *tok, int32_t *out, const char *path, mt_err *err)
{
    *out = mt_smap_get(&v->map, tok, strlen(tok));
    if (*out < 0)
        return mt_err_set(err, MT_ERR_FORMAT, "%s: special token \"%s\" is missing", path, tok);
    return MT_OK;
}

mt_status mt_vocab_load(mt_vocab *v, const char *path, const mt_vocab_specials *sp_tok, mt_err *err)
{
    json_error_t je;
    memset(v, 0, sizeof *v);
    json_t *root = json_load_file(path, JSON_ALLOW_NUL, &je);
    if (!root) {
        FILE *f = fopen(path, "rb");
        if (!f)
            return mt_err_set(err, MT_ERR_IO, "%s: %s", path, strerror(errno));
        fclose(f);
        return mt_err_set(err, MT_ERR_FORMAT, "%s: line %d: %s", path, je.line, je.text);
    }
    mt_status st = mt_vocab_from_json(v, root, path, sp_tok, err);
    json_decref(root);
    return st;
}

mt_status mt_vocab_from_json(mt_vocab *v, const json_t *root_c, const char *path, const mt_vocab_specials *sp_tok,
                             mt_err *err)
{
    json_t *root = (json_t *)root_c;        /* only read: jansson's iterators take no const */
    memset(v, 0, sizeof *v);
    mt_status st = MT_OK;
    const char *key;
    size_t klen, total = 0;
    json_t *val;
    int32_t max_id = -1;
    if (!json_is_object(root)) {
        st = mt_err_set(err, MT_ERR_FORMAT, "%s: not a JSON object", path);
        goto out;
    }
    json_object_keylen_foreach(root, key, klen, val) {
        json_int_t id = json_is_integer(val) ? json_integer_value(val) : -1;
        if (id < 0 || id >= MAX_VOCAB_ID || klen > UINT32_MAX / 2) {
            st = mt_err_set(err, MT_ERR_FORMAT, "%s: entry \"%.64s\" is not an id in [0, %d)", path, key,
                            MAX_VOCAB_ID);
            goto out;
        }
        if (id > max_id)
            max_id = (int32_t)id;
        total += klen + 1;
    }
    if (max_id < 0) {
        st = mt_err_set(err, MT_ERR_FORMAT, "%s: empty vocabulary", path);
        goto out;
    }
    v->size = max_id + 1;
    v->arena = malloc(total);
    v->piece = calloc((size_t)v->size, sizeof *v->piece);
    v->piece_len = calloc((size_t)v->size, sizeof *v->piece_len);
    if (!v->arena || !v->piece || !v->piece_len || mt_smap_init(&v->map, json_object_size(root))) {
        st = mt_err_set(err, MT_ERR_NOMEM, "%s: out of memory", path);
        goto out;
    }
    size_t off = 0;
    json_object_keylen_foreach(root, key, klen, val) {
        int32_t id = (int32_t)json_integer_value(val);
        char *k = v->arena + off;
        memcpy(k, key, klen);
        k[klen] = '\0';
        off += klen + 1;
        mt_smap_ent *e = mt_smap_slot(&v->map, k, klen);
        *e = (mt_smap_ent){ k, (uint32_t)klen, id };
        v->piece[id] = k;                   /* last key with this id wins, as {i: p} in Python */
        v->piece_len[id] = (uint32_t)klen;
    }
    if (!(st = special_id(v, sp_tok->eos, &v->eos, path, err)) &&
        !(st = special_id(v, sp_tok->unk, &v->unk, path, err)))
        st = special_id(v, sp_tok->pad, &v->pad, path, err);
out:
    if (st)
        mt_vocab_free(v);
    return st;
}

