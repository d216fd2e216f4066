/* tokenizer.c: the Marian tokenizer (tokenizer.h's mt_tokenizer_*): a model
 * directory's source.spm and target.spm (spm.c), vocab.json and, with
 * separate_vocabs, target_vocab.json (vocab.c), tied together.
 *
 * Reference behaviour: models/recipe/marian_tok.py and HF's MarianTokenizer;
 * contract in docs/MARIAN.md section 5.
 *
 *   encode      spm pieces -> vocab.json ids (absent -> <unk>), a leading
 *               ">>xx<<" kept whole, </s> appended
 *   decode      </s>, <unk>, <pad> dropped; the pieces decoded by the target
 *               spm; Python's str.strip(); HF's clean-up when configured
 *
 * Everything loaded is immutable; per-call scratch is malloc'd per call.
 */
#include "tokenizer.h"
#include "spm.h"
#include "util/strbuf.h"
#include "util/utf8.h"
#include "vocab.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

struct mt_tokenizer {
    mt_spm   *src, *tgt;
    mt_vocab  vocab;          /* vocab.json                                      */
    mt_vocab  tvocab;         /* target_vocab.json (separate_vocabs only)        */
    int       separate;
    int32_t  *src_map;        /* [src spm size] spm id -> Marian id (vocab)      */
    int32_t  *tgt_map;        /* [tgt spm size] spm id -> Marian id (dec vocab)  */
    int32_t  *dec_spm;        /* [dec vocab size] target spm id of each piece    */
    int32_t   dec_unk_spm;    /* target spm id of "<unk>" (ids without a piece)  */
    int       clean_up;       /* clean_up_tokenization_spaces                    */
    mt_hf_tokenizer *hf;      /* a decoder-only model's tokenizer.json: then only this */
    mt_multi_tokenizer *multi;  /* NLLB-200 / M2M-100 (multi.c): then only this */
};

/* Python's str.isspace() (what str.strip() removes). */
static int py_isspace(uint32_t c)
{
    if (c < 0x80)
        return c == ' ' || (c >= 0x09 && c <= 0x0D) || (c >= 0x1C && c <= 0x1F);
    return c == 0x85 || c == 0xA0 || c == 0x1680 || (c >= 0x2000 && c <= 0x200A) || c == 0x2028 ||
           c == 0x2029 || c == 0x202F || c == 0x205F || c == 0x3000;
}

/* Python's str.strip() on valid UTF-8, in place. */
void mt_tok_py_strip(mt_sbuf *b)
{
    size_t i = 0, end = b->n;
    uint32_t cp;
    while (i < end) {
        size_t n = mt_utf8_decode((uint8_t *)b->p + i, end - i, &cp);
        if (!n || !py_isspace(cp))
            break;
        i += n;
    }
    while (end > i) {
        size_t s = end - 1;
        while (s > i && ((uint8_t)b->p[s] & 0xC0) == 0x80)
            s--;
        size_t n = mt_utf8_decode((uint8_t *)b->p + s, end - s, &cp);
        if (n != end - s || !py_isspace(cp))
            break;
        end = s;
    }
    memmove(b->p, b->p + i, end - i);
    b->n = end - i;
    b->p[b->n] = '\0';
}

/* spm id -> Marian id for every piece of sp (absent pieces -> <unk>). */
static int32_t *map_spm(const mt_spm *sp, const mt_vocab *v)
{
    int n = mt_spm_size(sp);
    int32_t *map = malloc((size_t)n * sizeof *map);
    if (!map)
        return NULL;
    for (int i = 0; i < n; i++) {
        size_t pn;
        const char *p = mt_spm_piece(sp, i, &pn);
        int32_t id = mt_vocab_id(v, p, pn);
        map[i] = id >= 0 ? id : v->unk;
    }
    return map;
}

/* A special-token string from tokenizer_config.json: "..." or {"content": "..."}. */
static const char *config_token(json_t *cfg, const char *field, const char *dflt)
{
    json_t *t = json_object_get(cfg, field);
    if (json_is_object(t))
        t = json_object_get(t, "content");
    return json_is_string(t) ? json_string_value(t) : dflt;
}

static mt_status join_path(char *buf, size_t cap, const char *dir, const char *file, mt_err *err)
{
    int n = snprintf(buf, cap, "%s/%s", dir, file);
    if (n < 0 || (size_t)n >= cap)
        return mt_err_set(err, MT_ERR_INPUT, "%s: path too long", dir);
    return MT_OK;
}

void mt_tokenizer_free(mt_tokenizer *tok)
{
    if (!tok)
        return;
    mt_hf_tokenizer_free(tok->hf);
    mt_multi_free(tok->multi);
    mt_spm_free(tok->src);
    mt_spm_free(tok->tgt);
    mt_vocab_free(&tok->vocab);
    mt_vocab_free(&tok->tvocab);
    free(tok->src_map);
    free(tok->tgt_map);
    free(tok->dec_spm);
    free(tok);
}

static mt_status hf_encode(const mt_tokenizer *tok, const char *text, size_t len, int target, int32_t *ids,
                           int max_ids, int *n_ids, mt_err *err);

static const mt_vocab *dec_vocab(const mt_tokenizer *tok)
{
    return tok->separate ? &tok->tvocab : &tok->vocab;
}

static mt_status load_vocab(mt_vocab *v, const char *path, const json_t *obj, const mt_vocab_specials *sp,
                            mt_err *err)
{
    return obj ? mt_vocab_from_json(v, obj, path, sp, err) : mt_vocab_load(v, path, sp, err);
}

mt_status mt_tokenizer_load_files(const mt_tokenizer_files *f, mt_tokenizer **out, mt_err *err)
{
    if (!f || !f->src_spm || !f->tgt_spm || !f->src_vocab || !out)
        return mt_err_set(err, MT_ERR_INPUT, "mt_tokenizer_load_files: bad arguments");
    *out = NULL;
    mt_tokenizer *tok = calloc(1, sizeof *tok);
    if (!tok)
        return mt_err_set(err, MT_ERR_NOMEM, "%s: out of memory", f->src_vocab);
    mt_vocab_specials sp_tok = {
        f->eos_token ? f->eos_token : "</s>",
        f->unk_token ? f->unk_token : "<unk>",
        f->pad_token ? f->pad_token : "<pad>",
    };
    mt_status st;
    tok->clean_up = f->clean_up;
    tok->separate = f->tgt_vocab && strcmp(f->tgt_vocab, f->src_vocab) != 0;
    if ((st = mt_spm_load(f->src_spm, &tok->src, err)) || (st = mt_spm_load(f->tgt_spm, &tok->tgt, err)) ||
        (st = load_vocab(&tok->vocab, f->src_vocab, f->src_vocab_obj, &sp_tok, err)) ||
        (tok->separate && (st = load_vocab(&tok->tvocab, f->tgt_vocab, f->tgt_vocab_obj, &sp_tok, err))))
        goto fail;

    const mt_vocab *dv = dec_vocab(tok);
    tok->src_map = map_spm(tok->src, &tok->vocab);
    tok->tgt_map = map_spm(tok->tgt, dv);
    tok->dec_spm = malloc((size_t)dv->size * sizeof *tok->dec_spm);
    if (!tok->src_map || !tok->tgt_map || !tok->dec_spm) {
        st = mt_err_set(err, MT_ERR_NOMEM, "%s: out of memory", f->src_vocab);
        goto fail;
    }
    for (int32_t i = 0; i < dv->size; i++)
        tok->dec_spm[i] = dv->piece[i] ? mt_spm_piece_to_id(tok->tgt, dv->piece[i], dv->piece_len[i]) : -1;
    tok->dec_unk_spm = mt_spm_piece_to_id(tok->tgt, "<unk>", 5);
    *out = tok;
    return MT_OK;
fail:
    mt_tokenizer_free(tok);
    return st;
}

/* A Hugging Face directory: tokenizer_config.json (optional) names the special
 * tokens and says whether target_vocab.json is used. */
mt_status mt_tokenizer_load(const char *model_dir, mt_tokenizer **out, mt_err *err)
{
    char path[4096], src_spm[4096], tgt_spm[4096], vocab[4096], tvocab[4096];
    json_t *cfg = NULL;
    mt_status st;
    if (!model_dir || !out)
        return mt_err_set(err, MT_ERR_INPUT, "mt_tokenizer_load: bad arguments");
    *out = NULL;
    /* tokenizer_config.json is optional; when present it must parse. */
    if ((st = join_path(path, sizeof path, model_dir, "tokenizer_config.json", err)))
        return st;
    FILE *fp = fopen(path, "rb");
    if (fp) {
        json_error_t je;
        fclose(fp);
        cfg = json_load_file(path, 0, &je);
        if (!json_is_object(cfg)) {
            st = mt_err_set(err, MT_ERR_FORMAT, "%s: line %d: %s", path, je.line,
                            cfg ? "not a JSON object" : je.text);
            json_decref(cfg);
            return st;
        }
    }
    int separate = json_is_true(json_object_get(cfg, "separate_vocabs"));
    mt_tokenizer_files f = {
        .src_spm = src_spm, .tgt_spm = tgt_spm, .src_vocab = vocab, .tgt_vocab = separate ? tvocab : NULL,
        .eos_token = config_token(cfg, "eos_token", "</s>"),
        .unk_token = config_token(cfg, "unk_token", "<unk>"),
        .pad_token = config_token(cfg, "pad_token", "<pad>"),
        .clean_up = json_is_true(json_object_get(cfg, "clean_up_tokenization_spaces")),
    };
    if (!(st = join_path(src_spm, sizeof src_spm, model_dir, "source.spm", err)) &&
        !(st = join_path(tgt_spm, sizeof tgt_spm, model_dir, "target.spm", err)) &&
        !(st = join_path(vocab, sizeof vocab, model_dir, "vocab.json", err)) &&
        !(st = join_path(tvocab, sizeof tvocab, model_dir, "target_vocab.json", err)))
        st = mt_tokenizer_load_files(&f, out, err);
    json_decref(cfg);      /* the token strings are only looked up during the load */
    return st;
}

mt_status mt_tokenizer_encode(const mt_tokenizer *tok, const char *text, size_t len, int target,
                              int32_t *ids, int max_ids, int *n_ids, mt_err *err)
{
    if (!tok || (!text && len) || !n_ids || max_ids < 0 || (!ids && max_ids))
        return mt_err_set(err, MT_ERR_INPUT, "mt_tokenizer_encode: bad arguments");
    *n_ids = 0;
    if (tok->hf)
        return hf_encode(tok, text, len, target, ids, max_ids, n_ids, err);
    if (tok->multi)
        return mt_multi_encode_text(tok->multi, text, len, ids, max_ids, n_ids, err);
    size_t bad = mt_utf8_valid_prefix(text, len);
    if (bad < len)
        return mt_err_set(err, MT_ERR_INPUT, "input is not valid UTF-8 (byte 0x%02x at offset %zu)",
                          (uint8_t)text[bad], bad);
    const mt_spm *sp = target ? tok->tgt : tok->src;
    const mt_vocab *v = target ? dec_vocab(tok) : &tok->vocab;
    const int32_t *map = target ? tok->tgt_map : tok->src_map;
    int count = 0;
#define EMIT(x) do { if (count < max_ids) ids[count] = (x); count++; } while (0)

    /* A leading ">>xx<<" language token is one vocab.json entry. */
    if (len >= 2 && text[0] == '>' && text[1] == '>') {
        const char *e = memmem(text, len, "<<", 2);
        if (e) {
            size_t n = (size_t)(e - text) + 2;
            int32_t id = mt_vocab_id(v, text, n);
            EMIT(id >= 0 ? id : v->unk);
            text += n;
            len -= n;
        }
    }
    mt_pieces pc = { 0 };
    mt_status st = mt_spm_encode(sp, text, len, &pc, err);
    if (st == MT_OK && (size_t)pc.n + 2 > (size_t)INT_MAX)
        st = mt_err_set(err, MT_ERR_TOO_LONG, "input too long (%d pieces)", pc.n);
    if (st != MT_OK)
        goto done;
    const int32_t unk = mt_spm_unk_id(sp);
    for (int i = 0; i < pc.n; i++) {
        int32_t id = pc.id[i];
        if (id == unk) {               /* a (merged) unknown surface: look the string up */
            id = mt_vocab_id(v, pc.text + pc.off[i], pc.len[i]);
            EMIT(id >= 0 ? id : v->unk);
        } else {
            EMIT(map[id]);
        }
    }
    EMIT(v->eos);
#undef EMIT
    *n_ids = count;
    if (count > max_ids)
        st = mt_err_set(err, MT_ERR_TOO_LONG, "input needs %d token ids, at most %d allowed", count, max_ids);
done:
    mt_pieces_free(&pc);
    return st;
}

/* In-place str.replace(from, to) with strlen(to) <= strlen(from). */
static void replace_all(mt_sbuf *b, const char *from, const char *to)
{
    size_t fn = strlen(from), tn = strlen(to), r = 0, w = 0;
    while (r < b->n) {
        if (b->n - r >= fn && memcmp(b->p + r, from, fn) == 0) {
            memmove(b->p + w, to, tn);
            w += tn;
            r += fn;
        } else {
            b->p[w++] = b->p[r++];
        }
    }
    b->n = w;
    b->p[w] = '\0';
}

/* HF v4 PreTrainedTokenizerBase.clean_up_tokenization. */
void mt_tok_clean_up(mt_sbuf *b)
{
    static const char *const rep[][2] = {
        { " .", "." }, { " ?", "?" }, { " !", "!" }, { " ,", "," }, { " ' ", "'" },
        { " n't", "n't" }, { " 'm", "'m" }, { " 's", "'s" }, { " 've", "'ve" }, { " 're", "'re" },
    };
    for (size_t i = 0; i < sizeof rep / sizeof rep[0]; i++)
        replace_all(b, rep[i][0], rep[i][1]);
}

mt_status mt_tokenizer_decode(const mt_tokenizer *tok, const int32_t *ids, int n, char **out, mt_err *err)
{
    if (!tok || n < 0 || (!ids && n) || !out)
        return mt_err_set(err, MT_ERR_INPUT, "mt_tokenizer_decode: bad arguments");
    *out = NULL;
    if (tok->hf)
        return mt_hf_tokenizer_decode(tok->hf, ids, n, 1, out, NULL, err);
    if (tok->multi)
        return mt_multi_decode(tok->multi, ids, n, out, NULL, err);
    const mt_vocab *v = dec_vocab(tok);
    mt_spm_dpiece small[256], *pc = n <= 256 ? small : malloc((size_t)n * sizeof *pc);
    mt_sbuf o = { 0 };
    if (!pc)
        return mt_err_set(err, MT_ERR_NOMEM, "mt_tokenizer_decode: out of memory for %d ids", n);
    int k = 0;
    for (int i = 0; i < n; i++) {
        int32_t id = ids[i];
        if (id == v->eos || id == v->unk || id == v->pad)
            continue;
        if (id >= 0 && id < v->size && v->piece[id])
            pc[k++] = (mt_spm_dpiece){ v->piece[id], v->piece_len[id], tok->dec_spm[id] };
        else                                    /* Python: inv.get(i, "<unk>") */
            pc[k++] = (mt_spm_dpiece){ "<unk>", 5, tok->dec_unk_spm };
    }
    int bad = mt_sb_reserve(&o, 1);
    if (!bad) {
        o.p[0] = '\0';
        if (k)
            bad = mt_spm_decode_pieces(tok->tgt, pc, k, &o);
    }
    if (pc != small)
        free(pc);
    if (bad) {
        free(o.p);
        return mt_err_set(err, MT_ERR_NOMEM, "mt_tokenizer_decode: out of memory");
    }
    mt_tok_py_strip(&o);
    if (tok->clean_up)
        mt_tok_clean_up(&o);
    *out = o.p;
    return MT_OK;
}

int mt_tokenizer_decode_appends(const mt_tokenizer *tok)
{
    if (tok && tok->multi)
        return mt_multi_decode_appends(tok->multi);
    return tok && !tok->hf && !tok->clean_up && !mt_spm_has_denorm(tok->tgt);
}

int mt_tokenizer_decode_grows(const mt_tokenizer *tok)
{
    return mt_tokenizer_decode_appends(tok) || (tok && tok->hf && !mt_hf_tokenizer_cleans_up(tok->hf));
}

int mt_tokenizer_is_byte_piece(const mt_tokenizer *tok, int32_t id)
{
    if (tok && tok->hf) {
        const char *t = mt_hf_tokenizer_token(tok->hf, id);
        return t && strlen(t) == 6 && !strncmp(t, "<0x", 3) && t[5] == '>';
    }
    if (tok && tok->multi)
        return mt_multi_is_byte_piece(tok->multi, id);
    const mt_vocab *v = tok ? dec_vocab(tok) : NULL;
    return v && id >= 0 && id < v->size && v->piece[id] && mt_spm_is_byte(tok->tgt, tok->dec_spm[id]);
}

const char *mt_tokenizer_piece(const mt_tokenizer *tok, int32_t id)
{
    if (tok && tok->hf)
        return mt_hf_tokenizer_token(tok->hf, id);
    if (tok && tok->multi)
        return mt_multi_piece(tok->multi, id);
    if (!tok || id < 0 || id >= tok->vocab.size)
        return NULL;
    return tok->vocab.piece[id];
}

int32_t mt_tokenizer_piece_id(const mt_tokenizer *tok, const char *piece)
{
    if (tok && tok->hf)
        return piece ? mt_hf_tokenizer_token_id(tok->hf, piece) : -1;
    if (tok && tok->multi)
        return mt_multi_piece_id(tok->multi, piece);
    return tok && piece ? mt_vocab_id(&tok->vocab, piece, strlen(piece)) : -1;
}

int mt_tokenizer_vocab_size(const mt_tokenizer *tok)
{
    return !tok ? 0 : tok->hf ? mt_hf_tokenizer_vocab_size(tok->hf) : tok->multi ? mt_multi_vocab_size(tok->multi)
                                                                                 : tok->vocab.size;
}
int mt_tokenizer_target_vocab_size(const mt_tokenizer *tok)
{
    return tok && !tok->hf && !tok->multi ? dec_vocab(tok)->size : mt_tokenizer_vocab_size(tok);
}
int32_t mt_tokenizer_target_eos(const mt_tokenizer *tok)
{
    return tok && !tok->hf && !tok->multi ? dec_vocab(tok)->eos : mt_tokenizer_eos(tok);
}
int32_t mt_tokenizer_eos(const mt_tokenizer *tok)
{
    return !tok ? -1 : tok->hf ? mt_hf_tokenizer_eos(tok->hf) : tok->multi ? mt_multi_eos(tok->multi) : tok->vocab.eos;
}
int32_t mt_tokenizer_unk(const mt_tokenizer *tok)
{
    return !tok ? -1 : tok->hf ? mt_hf_tokenizer_unk(tok->hf) : tok->multi ? mt_multi_unk(tok->multi) : tok->vocab.unk;
}
int32_t mt_tokenizer_pad(const mt_tokenizer *tok)
{
    return !tok ? -1 : tok->hf ? mt_hf_tokenizer_pad(tok->hf) : tok->multi ? mt_multi_pad(tok->multi) : tok->vocab.pad;
}

const mt_spm *mt_tokenizer_spm(const mt_tokenizer *tok, int target)
{
    if (tok && tok->multi)
        return mt_multi_spm(tok->multi);           /* one model for both sides */
    return tok ? (target ? tok->tgt : tok->src) : NULL;
}

/* ---- an NLLB-200 / M2M-100 tokenizer behind the same calls --------------------- */

mt_status mt_tokenizer_load_multi(const char *model_dir, mt_tokenizer **out, mt_err *err)
{
    *out = NULL;
    mt_multi_tokenizer *multi;
    mt_status st = mt_multi_load(model_dir, &multi, err);
    if (st != MT_OK)
        return st;
    mt_tokenizer *tok = calloc(1, sizeof *tok);
    if (!tok) {
        mt_multi_free(multi);
        return mt_err_set(err, MT_ERR_NOMEM, "out of memory");
    }
    tok->multi = multi;
    *out = tok;
    return MT_OK;
}

const mt_multi_tokenizer *mt_tokenizer_multi(const mt_tokenizer *tok)
{
    return tok ? tok->multi : NULL;
}

/* ---- a tokenizer.json behind the same calls -------------------------------------- */

mt_status mt_tokenizer_from_hf(mt_hf_tokenizer *hf, mt_tokenizer **out, mt_err *err)
{
    *out = NULL;
    mt_tokenizer *tok = calloc(1, sizeof *tok);
    if (!tok) {
        mt_hf_tokenizer_free(hf);
        return mt_err_set(err, MT_ERR_NOMEM, "out of memory");
    }
    tok->hf = hf;
    *out = tok;
    return MT_OK;
}

int mt_tokenizer_joint(const mt_tokenizer *tok)
{
    return tok && !tok->hf && !mt_tokenizer_multi(tok) && !tok->separate;
}

const mt_hf_tokenizer *mt_tokenizer_hf(const mt_tokenizer *tok)
{
    return tok ? tok->hf : NULL;
}

/* target 0: the text as a prompt continues it (the file's special tokens:
 * Llama's <s> first); target 1: a target text, eos appended as Marian's
 * encode appends </s> (callers drop it to get the text's own ids). */
static mt_status hf_encode(const mt_tokenizer *tok, const char *text, size_t len, int target, int32_t *ids,
                           int max_ids, int *n_ids, mt_err *err)
{
    int32_t eos = mt_hf_tokenizer_eos(tok->hf);
    int tail = target && eos >= 0;
    mt_status st = mt_hf_tokenizer_encode(tok->hf, text, len, !target, ids, max_ids - tail > 0 ? max_ids - tail : 0,
                                          n_ids, err);
    if (st != MT_OK && st != MT_ERR_TOO_LONG)
        return st;
    if (tail) {
        if (*n_ids < max_ids)
            ids[*n_ids] = eos;
        (*n_ids)++;
    }
    return *n_ids > max_ids ? mt_err_set(err, MT_ERR_TOO_LONG, "%d tokens; %d fit", *n_ids, max_ids) : MT_OK;
}
