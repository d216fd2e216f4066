/* multi.c: the tokenizers of fairseq's multilingual models as Hugging Face
 * publishes them: NLLB-200 (NllbTokenizer) and M2M-100 (M2M100Tokenizer).
 * Contract: tokenizer.h, "Multilingual tokenizers".
 *
 * Read from transformers' models/nllb/tokenization_nllb.py and
 * models/m2m_100/tokenization_m2m_100.py:
 *   NLLB    fairseq's dictionary over the spm model: <s>=0 <pad>=1 </s>=2
 *           <unk>=3, spm piece k -> k + 1 (fairseq_offset; spm id 0, its
 *           <unk>, -> 3), then the 202 language codes, then <mask>.  Source:
 *           [code] + pieces + [</s>] (legacy_behaviour: pieces + [</s>, code]).
 *           Decode: special ids skipped, "".join(pieces).replace("▁", " ").strip().
 *   M2M-100 vocab.json maps the spm piece strings (absent: <unk>); language
 *           token "__xx__" i has id len(vocab.json) + i, then 8 "madeup" words.
 *           Source: [__xx__] + pieces + [</s>].  Decode: special ids skipped,
 *           the pieces through the spm decoder (sp_model.decode(tokens)).
 * The language lists are data files (nllb_langs.txt, m2m100_langs.txt)
 * embedded with .incbin, as server/service/languages.c embeds its table.
 *
 * An NLLB directory without sentencepiece.bpe.model but with tokenizer.json
 * (NllbTokenizerFast's save, written by transformers' NllbConverter) takes
 * its pieces from the tokenizer.json BPE (hf_load.c, hf_bpe.c: normalizer
 * Precompiled + Replace, Metaspace, merges by rank; its vocabulary already in
 * fairseq's ids), the language codes and <mask> its added tokens at the ids
 * above.  Everything else (checks, the source layout, decode) is shared.
 * M2M100Tokenizer has no fast class: its directories need the spm file.
 */
#include "hf_internal.h"
#include "spm.h"
#include "spm_proto.h"
#include "tokenizer.h"
#include "util/strbuf.h"
#include "util/strmap.h"
#include "util/utf8.h"
#include "vocab.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

__asm__(".section .rodata\n"
        ".global mt_nllb_langs_txt\n"
        ".type mt_nllb_langs_txt, @object\n"
        "mt_nllb_langs_txt:\n"
        ".incbin \"engine/tokenizer/nllb_langs.txt\"\n"
        ".byte 0\n"
        ".size mt_nllb_langs_txt, . - mt_nllb_langs_txt\n"
        ".global mt_m2m100_langs_txt\n"
        ".type mt_m2m100_langs_txt, @object\n"
        "mt_m2m100_langs_txt:\n"
        ".incbin \"engine/tokenizer/m2m100_langs.txt\"\n"
        ".byte 0\n"
        ".size mt_m2m100_langs_txt, . - mt_m2m100_langs_txt\n"
        ".previous\n");
extern const char mt_nllb_langs_txt[], mt_m2m100_langs_txt[];

#define MAX_LANGS   256
#define M2M_MADEUP  8          /* num_madeup_words: ids after the language tokens */

struct mt_multi_tokenizer {
    mt_multi_kind kind;
    mt_spm       *sp;                      /* the spm file, or NULL:          */
    mt_hf_tokenizer *hf;                   /* NLLB's tokenizer.json instead   */
    mt_vocab      vocab;                   /* M2M-100: vocab.json            */
    int           n_langs;
    char          code[MAX_LANGS][16];     /* "eng_Latn", "en"               */
    char          token[MAX_LANGS][16];    /* "eng_Latn", "__en__"           */
    mt_smap       lang_map;                /* code and token -> index        */
    int32_t       lang_base;               /* id of language 0               */
    int32_t       bos, pad, eos, unk, mask;
    int32_t       n_ids;                   /* ids the tokenizer defines      */
    int           legacy, clean_up;
};

/* ---- language lists ------------------------------------------------------------ */

/* The codes of an embedded list: one a line, '#' lines are comments. */
static int read_langs(mt_multi_tokenizer *t, const char *txt)
{
    int n = 0;
    for (const char *p = txt; *p;) {
        const char *e = strchr(p, '\n');
        size_t len = e ? (size_t)(e - p) : strlen(p);
        if (len && p[0] != '#') {
            if (n == MAX_LANGS || len >= sizeof t->code[0] - 4)
                return -1;
            memcpy(t->code[n], p, len);
            t->code[n][len] = '\0';
            if (t->kind == MT_MULTI_M2M100) {                /* "__" code "__" */
                memcpy(t->token[n], "__", 2);
                memcpy(t->token[n] + 2, p, len);
                memcpy(t->token[n] + 2 + len, "__", 3);
            } else {
                memcpy(t->token[n], t->code[n], len + 1);
            }
            n++;
        }
        p += len + (e != NULL);
    }
    t->n_langs = n;
    if (mt_smap_init(&t->lang_map, (size_t)n * 2))
        return -1;
    for (int i = 0; i < n; i++) {
        const char *k[2] = { t->code[i], t->token[i] };
        for (int j = 0; j < 2; j++) {
            mt_smap_ent *s = mt_smap_slot(&t->lang_map, k[j], strlen(k[j]));
            if (!s->k)
                *s = (mt_smap_ent){ k[j], (uint32_t)strlen(k[j]), i };
        }
    }
    return 0;
}

/* ---- the files ------------------------------------------------------------------ */

static int file_exists(const char *dir, const char *name)
{
    char path[4096];
    struct stat st;
    int n = snprintf(path, sizeof path, "%s/%s", dir, name);
    return n > 0 && (size_t)n < sizeof path && stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

/* dir/name parsed as a JSON object into *out, or *out = NULL when the file is absent. */
static mt_status load_json(const char *dir, const char *name, json_t **out, mt_err *err)
{
    char path[4096];
    *out = NULL;
    int n = snprintf(path, sizeof path, "%s/%s", dir, name);
    if (n < 0 || (size_t)n >= sizeof path)
        return mt_err_set(err, MT_ERR_INPUT, "%s: path too long", dir);
    if (!file_exists(dir, name))
        return MT_OK;
    json_error_t je;
    json_t *j = json_load_file(path, JSON_REJECT_DUPLICATES, &je);
    if (!json_is_object(j)) {
        mt_status st = mt_err_set(err, MT_ERR_FORMAT, "%s: line %d: %s", path, je.line,
                                  j ? "not a JSON object" : je.text);
        json_decref(j);
        return st;
    }
    *out = j;
    return MT_OK;
}

/* A token field: a string, an AddedToken object's "content", or absent/null (dflt). */
static mt_status token_field(const json_t *cfg, const char *field, const char *dflt, const char **out,
                             mt_err *err)
{
    json_t *t = json_object_get(cfg, field);
    *out = dflt;
    if (json_is_object(t))
        t = json_object_get(t, "content");
    if (!t || json_is_null(t))
        return MT_OK;
    if (!json_is_string(t) || !json_string_length(t))
        return mt_err_set(err, MT_ERR_FORMAT, "tokenizer_config.json: %s is not a token string", field);
    *out = json_string_value(t);
    return MT_OK;
}

mt_status mt_multi_detect(const char *dir, mt_multi_kind *kind, mt_err *err)
{
    if (!dir || !kind)
        return mt_err_set(err, MT_ERR_INPUT, "mt_multi_detect: bad arguments");
    *kind = MT_MULTI_NONE;
    int fast = !file_exists(dir, "sentencepiece.bpe.model");
    if (fast && !file_exists(dir, "tokenizer.json"))
        return mt_err_set(err, MT_ERR_IO, "%s/sentencepiece.bpe.model: no such file (nor tokenizer.json)", dir);
    json_t *cfg;
    mt_status st = load_json(dir, "tokenizer_config.json", &cfg, err);
    if (st)
        return st;
    const char *cls = json_string_value(json_object_get(cfg, "tokenizer_class"));
    int has_vocab = file_exists(dir, "vocab.json");
    if (!cls)
        *kind = has_vocab ? MT_MULTI_M2M100 : MT_MULTI_NLLB;
    else if (!strcmp(cls, "NllbTokenizer") || !strcmp(cls, "NllbTokenizerFast"))
        *kind = MT_MULTI_NLLB;
    else if (!strcmp(cls, "M2M100Tokenizer"))
        *kind = MT_MULTI_M2M100;
    else
        st = mt_err_set(err, MT_ERR_UNSUPPORTED, "%s/tokenizer_config.json: tokenizer_class \"%.64s\" is not "
                        "NllbTokenizer, NllbTokenizerFast or M2M100Tokenizer", dir, cls);
    if (!st && *kind == MT_MULTI_M2M100 && fast)
        st = mt_err_set(err, MT_ERR_UNSUPPORTED, "%s: only tokenizer.json, no sentencepiece.bpe.model: M2M100Tokenizer "
                        "(no fast class in transformers) reads the SentencePiece model", dir);
    else if (!st && *kind == MT_MULTI_M2M100 && !has_vocab)
        st = mt_err_set(err, MT_ERR_IO, "%s/vocab.json: no such file (M2M100Tokenizer needs it)", dir);
    json_decref(cfg);
    return st;
}

/* A list of token strings (or AddedToken objects) equal to the languages, in order. */
static mt_status check_lang_list(const mt_multi_tokenizer *t, const json_t *list, const char *where, mt_err *err)
{
    if (!list || json_is_null(list))
        return MT_OK;
    if (!json_is_array(list))
        return mt_err_set(err, MT_ERR_FORMAT, "%s: additional_special_tokens is not a list", where);
    if (t->kind == MT_MULTI_M2M100)
        return MT_OK;      /* M2M100Tokenizer's language ids do not depend on this list */
    size_t n = json_array_size(list);
    for (size_t i = 0; i < n || i < (size_t)t->n_langs; i++) {
        const json_t *e = json_array_get(list, i);
        if (json_is_object(e))
            e = json_object_get(e, "content");
        const char *s = json_string_value(e);
        if (i >= n || i >= (size_t)t->n_langs || !s || strcmp(s, t->token[i]))
            return mt_err_set(err, MT_ERR_UNSUPPORTED, "%s: additional_special_tokens differ from NLLB's %d "
                              "language codes at entry %zu (\"%.32s\"); other language lists are not "
                              "supported", where, t->n_langs, i, s ? s : "");
    }
    return MT_OK;
}

/* tokenizer.json: the id of a piece of the BPE vocabulary (not <s> <pad>
 * </s> <unk>, a language or <mask>), or -1. */
static int32_t hf_piece_id(const mt_multi_tokenizer *t, const char *s, size_t n)
{
    int32_t id = mt_smap_get(&t->hf->vocab, s, n);
    return id >= 4 && id < t->lang_base ? id : -1;
}

/* NLLB: the piece string of id (a piece of the spm model or the BPE
 * vocabulary, ids 4 .. lang_base - 1), else NULL. */
static const char *nllb_piece(const mt_multi_tokenizer *t, int32_t id, size_t *n)
{
    if (id < 4 || id >= t->lang_base)
        return NULL;
    if (!t->hf)
        return mt_spm_piece(t->sp, id - 1, n);
    const char *p = mt_hf_tokenizer_token(t->hf, id);
    if (p && n)
        *n = strlen(p);
    return p;
}

/* The id a token string has here, or -1. */
static int32_t token_id(const mt_multi_tokenizer *t, const char *s)
{
    int32_t li = mt_smap_get(&t->lang_map, s, strlen(s));
    if (li >= 0 && !strcmp(t->token[li], s))
        return t->lang_base + li;
    if (t->kind == MT_MULTI_NLLB) {
        static const char *const fixed[] = { "<s>", "<pad>", "</s>", "<unk>" };
        for (int i = 0; i < 4; i++)
            if (!strcmp(s, fixed[i]))
                return i;
        if (!strcmp(s, "<mask>"))
            return t->mask;
        if (t->hf)
            return hf_piece_id(t, s, strlen(s));
        int32_t sid = mt_spm_piece_to_id(t->sp, s, strlen(s));
        return sid > 0 ? sid + 1 : -1;
    }
    return mt_vocab_id(&t->vocab, s, strlen(s));
}

/* tokenizer_config.json's added_tokens_decoder ({"id": {"content": ...}}), when
 * present, must give each token the id computed here. */
static mt_status check_added(const mt_multi_tokenizer *t, const json_t *cfg, mt_err *err)
{
    const json_t *added = json_object_get(cfg, "added_tokens_decoder");
    if (!added || json_is_null(added))
        return MT_OK;
    if (!json_is_object(added))
        return mt_err_set(err, MT_ERR_FORMAT, "tokenizer_config.json: added_tokens_decoder is not an object");
    const char *key;
    json_t *v;
    json_object_foreach((json_t *)added, key, v) {
        char *end;
        long id = strtol(key, &end, 10);
        const char *s = json_string_value(json_object_get(v, "content"));
        if (*end || end == key || !s)
            return mt_err_set(err, MT_ERR_FORMAT, "tokenizer_config.json: added_tokens_decoder entry \"%.32s\" "
                              "is not an id with a content string", key);
        /* a token of its own (M2M-100's "madeupword0000"...) may only sit past the
         * ids this layout defines */
        int32_t want = token_id(t, s), first_free = t->lang_base + t->n_langs + (t->mask >= 0);
        if (want < 0 ? id < first_free : want != id)
            return mt_err_set(err, MT_ERR_UNSUPPORTED, "tokenizer_config.json: added token \"%.32s\" has id %ld, "
                              "the %s layout gives %d", s, id, mt_multi_kind_name(t->kind), (int)want);
    }
    return MT_OK;
}

/* NLLB: the spm model must have fairseq's alignment (<unk> 0, <s> 1, </s> 2). */
static mt_status init_nllb(mt_multi_tokenizer *t, const char *path, mt_err *err)
{
    static const char *const want[3] = { NULL, "<s>", "</s>" };
    if (mt_spm_unk_id(t->sp) != 0)
        return mt_err_set(err, MT_ERR_FORMAT, "%s: the unknown piece is id %d, fairseq's layout needs 0", path,
                          (int)mt_spm_unk_id(t->sp));
    for (int i = 1; i < 3; i++) {
        const char *p = mt_spm_piece(t->sp, i, NULL);
        if (!p || strcmp(p, want[i]))
            return mt_err_set(err, MT_ERR_FORMAT, "%s: piece %d is \"%.32s\", fairseq's layout needs \"%s\"",
                              path, i, p ? p : "", want[i]);
    }
    t->bos = 0, t->pad = 1, t->eos = 2, t->unk = 3;
    t->lang_base = mt_spm_size(t->sp) + 1;
    t->mask = t->lang_base + t->n_langs;
    t->n_ids = t->mask + 1;
    return MT_OK;
}

/* NLLB from tokenizer.json: NllbConverter's layout (<s> <pad> </s> <unk> =
 * 0..3 and the BPE's unknown, then the pieces, then the language codes and
 * <mask> as added tokens, nothing after), and only what the piece decode
 * below assumes: Metaspace pieces, no byte fallback. */
static mt_status init_nllb_hf(mt_multi_tokenizer *t, const char *path, mt_err *err)
{
    static const char *const fixed[4] = { "<s>", "<pad>", "</s>", "<unk>" };
    const mt_hf_tokenizer *hf = t->hf;
    for (int i = 0; i < 4; i++)
        if (mt_hf_tokenizer_token_id(hf, fixed[i]) != i)
            return mt_err_set(err, MT_ERR_FORMAT, "%s: \"%s\" has id %d, NLLB's layout needs %d", path, fixed[i],
                              (int)mt_hf_tokenizer_token_id(hf, fixed[i]), i);
    if (hf->unk != 3)
        return mt_err_set(err, MT_ERR_FORMAT, "%s: model.unk_token is not \"<unk>\" (id 3)", path);
    if (!hf->metaspace || hf->byte_level || hf->split_digits || hf->byte_fallback)
        return mt_err_set(err, MT_ERR_UNSUPPORTED, "%s: not NLLB's tokenizer.json: a Metaspace pre-tokenizer and no "
                          "byte fallback are supported", path);
    t->bos = 0, t->pad = 1, t->eos = 2, t->unk = 3;
    t->lang_base = mt_hf_tokenizer_token_id(hf, t->token[0]);
    for (int i = 0; i < t->n_langs; i++)
        if (t->lang_base < 4 || mt_hf_tokenizer_token_id(hf, t->token[i]) != t->lang_base + i)
            return mt_err_set(err, MT_ERR_UNSUPPORTED, "%s: language code \"%s\" has id %d, NLLB's layout needs %d "
                              "(the %d codes in order after the pieces)", path, t->token[i],
                              (int)mt_hf_tokenizer_token_id(hf, t->token[i]), (int)t->lang_base + i, t->n_langs);
    t->mask = t->lang_base + t->n_langs;
    t->n_ids = t->mask + 1;
    if (mt_hf_tokenizer_token_id(hf, "<mask>") != t->mask || mt_hf_tokenizer_vocab_size(hf) != t->n_ids)
        return mt_err_set(err, MT_ERR_UNSUPPORTED, "%s: \"<mask>\" must be the last id, %d (it is %d of %d ids)",
                          path, (int)t->mask, (int)mt_hf_tokenizer_token_id(hf, "<mask>"),
                          mt_hf_tokenizer_vocab_size(hf));
    for (int32_t id = 4; id < t->lang_base; id++)
        if (!mt_hf_tokenizer_token(hf, id) || mt_hf_tokenizer_is_special(hf, id))
            return mt_err_set(err, MT_ERR_FORMAT, "%s: id %d is no piece of the BPE vocabulary", path, (int)id);
    return MT_OK;
}

/* M2M-100: vocab.json with the four special tokens, ids dense below len(vocab.json). */
static mt_status init_m2m(mt_multi_tokenizer *t, const char *dir, const json_t *cfg, mt_err *err)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/vocab.json", dir);
    const char *bos, *eos, *unk, *pad;
    mt_status st;
    if ((st = token_field(cfg, "bos_token", "<s>", &bos, err)) || (st = token_field(cfg, "eos_token", "</s>", &eos, err)) ||
        (st = token_field(cfg, "unk_token", "<unk>", &unk, err)) || (st = token_field(cfg, "pad_token", "<pad>", &pad, err)))
        return st;
    const json_t *lc = json_object_get(cfg, "language_codes");
    if (lc && !json_is_null(lc) && (!json_is_string(lc) || strcmp(json_string_value(lc), "m2m100")))
        return mt_err_set(err, MT_ERR_UNSUPPORTED, "%s/tokenizer_config.json: language_codes \"%.32s\" is not "
                          "supported (only \"m2m100\")", dir, json_is_string(lc) ? json_string_value(lc) : "?");
    json_error_t je;
    json_t *vj = json_load_file(path, JSON_REJECT_DUPLICATES, &je);
    if (!json_is_object(vj)) {
        st = mt_err_set(err, MT_ERR_FORMAT, "%s: line %d: %s", path, je.line, vj ? "not a JSON object" : je.text);
        json_decref(vj);
        return st;
    }
    size_t n_keys = json_object_size(vj);
    mt_vocab_specials sp_tok = { eos, unk, pad };
    st = mt_vocab_from_json(&t->vocab, vj, path, &sp_tok, err);
    json_decref(vj);
    if (st)
        return st;
    if ((size_t)t->vocab.size > n_keys)
        return mt_err_set(err, MT_ERR_FORMAT, "%s: ids reach %d with %zu entries: the language tokens (from id "
                          "len(vocab.json)) would collide", path, (int)t->vocab.size - 1, n_keys);
    t->bos = mt_vocab_id(&t->vocab, bos, strlen(bos));
    if (t->bos < 0)
        return mt_err_set(err, MT_ERR_FORMAT, "%s: the bos token \"%.32s\" is missing", path, bos);
    t->eos = t->vocab.eos, t->unk = t->vocab.unk, t->pad = t->vocab.pad;
    t->lang_base = (int32_t)n_keys;
    t->mask = -1;
    t->n_ids = t->lang_base + t->n_langs + M2M_MADEUP;
    return MT_OK;
}

/* Everything after the kind is known; cfg and smap may be NULL. */
static mt_status multi_init(mt_multi_tokenizer *t, const char *dir, const json_t *cfg, const json_t *smap,
                            mt_err *err)
{
    char path[4096];
    int fast = !file_exists(dir, "sentencepiece.bpe.model");      /* mt_multi_detect: NLLB, tokenizer.json */
    int n = snprintf(path, sizeof path, "%s/%s", dir, fast ? "tokenizer.json" : "sentencepiece.bpe.model");
    if (n < 0 || (size_t)n >= sizeof path)
        return mt_err_set(err, MT_ERR_INPUT, "%s: path too long", dir);
    if (read_langs(t, t->kind == MT_MULTI_NLLB ? mt_nllb_langs_txt : mt_m2m100_langs_txt))
        return mt_err_set(err, MT_ERR_NOMEM, "%s: out of memory (language list)", dir);
    mt_status st;
    if (fast)
        st = (st = mt_hf_tokenizer_load_files(path, NULL, &t->hf, err)) ? st : init_nllb_hf(t, path, err);
    else if (!(st = mt_spm_load(path, &t->sp, err)))
        st = t->kind == MT_MULTI_NLLB ? init_nllb(t, path, err) : init_m2m(t, dir, cfg, err);
    if (!st)
        st = check_lang_list(t, json_object_get(cfg, "additional_special_tokens"), "tokenizer_config.json", err);
    if (!st)
        st = check_lang_list(t, json_object_get(smap, "additional_special_tokens"), "special_tokens_map.json", err);
    if (!st)
        st = check_added(t, cfg, err);
    const json_t *legacy = json_object_get(cfg, "legacy_behaviour");
    if (!st && legacy && !json_is_boolean(legacy) && !json_is_null(legacy))
        st = mt_err_set(err, MT_ERR_FORMAT, "%s/tokenizer_config.json: legacy_behaviour is not a boolean", dir);
    t->legacy = t->kind == MT_MULTI_NLLB && json_is_true(legacy);
    t->clean_up = json_is_true(json_object_get(cfg, "clean_up_tokenization_spaces"));
    return st;
}

mt_status mt_multi_load(const char *dir, mt_multi_tokenizer **out, mt_err *err)
{
    if (!dir || !out)
        return mt_err_set(err, MT_ERR_INPUT, "mt_multi_load: bad arguments");
    *out = NULL;
    mt_multi_kind kind;
    mt_status st = mt_multi_detect(dir, &kind, err);
    if (st)
        return st;
    json_t *cfg = NULL, *smap = NULL;
    mt_multi_tokenizer *t = calloc(1, sizeof *t);
    if (!t)
        return mt_err_set(err, MT_ERR_NOMEM, "%s: out of memory", dir);
    t->kind = kind;
    if (!(st = load_json(dir, "tokenizer_config.json", &cfg, err)) &&
        !(st = load_json(dir, "special_tokens_map.json", &smap, err)))
        st = multi_init(t, dir, cfg, smap, err);
    json_decref(cfg);
    json_decref(smap);
    if (st) {
        mt_multi_free(t);
        return st;
    }
    *out = t;
    return MT_OK;
}

void mt_multi_free(mt_multi_tokenizer *t)
{
    if (!t)
        return;
    mt_spm_free(t->sp);
    mt_hf_tokenizer_free(t->hf);
    mt_vocab_free(&t->vocab);
    free(t->lang_map.e);
    free(t);
}

/* ---- encode and decode ------------------------------------------------------------- */

int32_t mt_multi_lang_id(const mt_multi_tokenizer *t, const char *code)
{
    if (!t || !code)
        return -1;
    int32_t i = mt_smap_get(&t->lang_map, code, strlen(code));
    return i >= 0 ? t->lang_base + i : -1;
}

/* The id of a piece of the encoded text (a piece string, or a run of unknown characters). */
static int32_t piece_id(const mt_multi_tokenizer *t, const char *p, size_t n)
{
    if (t->kind == MT_MULTI_NLLB) {
        int32_t sid = mt_spm_piece_to_id(t->sp, p, n);      /* sp_model.PieceToId(token) */
        return sid ? sid + 1 : t->unk;
    }
    int32_t id = mt_vocab_id(&t->vocab, p, n);               /* encoder.get(token, unk) */
    return id >= 0 ? id : t->unk;
}

/* [lang] + pieces + [</s>] (legacy: pieces + [</s>, lang]); lang < 0: pieces + [</s>]. */
static mt_status encode(const mt_multi_tokenizer *t, int32_t lang, const char *text, size_t len, int32_t *ids,
                        int max_ids, int *n_ids, mt_err *err)
{
    size_t bad = mt_utf8_valid_prefix(text, len);
    if (bad < len)
        return mt_err_set(err, MT_ERR_INPUT, "input is not valid UTF-8 (byte 0x%02x at offset %zu)",
                          (uint8_t)text[bad], bad);
    mt_pieces pc = { 0 };
    mt_status st = t->hf ? MT_OK : mt_spm_encode(t->sp, text, len, &pc, err);
    if (st) {
        mt_pieces_free(&pc);
        return st;
    }
    int count = 0;
#define EMIT(x) do { if (count < max_ids) ids[count] = (x); count++; } while (0)
    if (lang >= 0 && !t->legacy)
        EMIT(lang);
    if (t->hf) {            /* the whole text kept from added-token matching: typed "</s>" is text */
        int n = 0, room = count < max_ids ? max_ids - count : 0;
        st = hf_encode_span(t->hf, text, len, 0, len, 0, room ? ids + count : NULL, room, &n, err);
        if (st && st != MT_ERR_TOO_LONG)
            return st;
        count += n;
    }
    for (int i = 0; i < pc.n; i++)
        EMIT(piece_id(t, pc.text + pc.off[i], pc.len[i]));
    EMIT(t->eos);
    if (lang >= 0 && t->legacy)
        EMIT(lang);
#undef EMIT
    mt_pieces_free(&pc);
    *n_ids = count;
    if (count > max_ids)
        return mt_err_set(err, MT_ERR_TOO_LONG, "the text needs %d ids, at most %d fit", count, max_ids);
    return MT_OK;
}

mt_status mt_multi_encode(const mt_multi_tokenizer *t, const char *src_lang, const char *text, size_t len,
                          int32_t *ids, int max_ids, int *n_ids, mt_err *err)
{
    if (!t || !src_lang || (!text && len) || !n_ids || max_ids < 0 || (!ids && max_ids))
        return mt_err_set(err, MT_ERR_INPUT, "mt_multi_encode: bad arguments");
    *n_ids = 0;
    int32_t lang = mt_multi_lang_id(t, src_lang);
    if (lang < 0)
        return mt_err_set(err, MT_ERR_INPUT, "unknown language \"%.32s\" for this %s model", src_lang,
                          mt_multi_kind_name(t->kind));
    return encode(t, lang, text, len, ids, max_ids, n_ids, err);
}

mt_status mt_multi_encode_text(const mt_multi_tokenizer *t, const char *text, size_t len, int32_t *ids, int max_ids,
                               int *n_ids, mt_err *err)
{
    if (!t || (!text && len) || !n_ids || max_ids < 0 || (!ids && max_ids))
        return mt_err_set(err, MT_ERR_INPUT, "mt_multi_encode_text: bad arguments");
    *n_ids = 0;
    return encode(t, -1, text, len, ids, max_ids, n_ids, err);
}

int mt_multi_is_special(const mt_multi_tokenizer *t, int32_t id)
{
    if (!t)
        return 0;
    if (id == t->bos || id == t->pad || id == t->eos || id == t->unk || id == t->mask)
        return 1;
    return id >= t->lang_base && id < t->lang_base + t->n_langs;
}

/* NLLB: "".join(pieces).replace("▁", " ").strip(); ids past <mask> (rows the
 * published checkpoints pad the embedding with) are skipped. */
static int decode_nllb(const mt_multi_tokenizer *t, const int32_t *ids, int n, mt_sbuf *o)
{
    for (int i = 0; i < n; i++) {
        size_t pn = 0;
        const char *p = mt_multi_is_special(t, ids[i]) ? NULL : nllb_piece(t, ids[i], &pn);
        if (!p)
            continue;
        for (size_t k = 0; k < pn;) {
            int sp = pn - k >= 3 && !memcmp(p + k, "\xe2\x96\x81", 3);   /* U+2581 */
            if (mt_sb_add(o, sp ? " " : p + k, 1))
                return -1;
            k += sp ? 3 : 1;
        }
    }
    if (mt_sb_reserve(o, 1))
        return -1;
    o->p[o->n] = '\0';
    mt_tok_py_strip(o);
    return 0;
}

/* M2M-100: the vocab.json pieces (an id without one: "<unk>") through sp_model.decode. */
static int decode_m2m(const mt_multi_tokenizer *t, const int32_t *ids, int n, mt_sbuf *o)
{
    mt_spm_dpiece small[256], *pc = n <= 256 ? small : malloc((size_t)n * sizeof *pc);
    if (!pc)
        return -1;
    int k = 0;
    for (int i = 0; i < n; i++) {
        int32_t id = ids[i];
        if (mt_multi_is_special(t, id))
            continue;
        const char *p = id < t->vocab.size && t->vocab.piece[id] ? t->vocab.piece[id] : "<unk>";
        size_t pn = id < t->vocab.size && t->vocab.piece[id] ? t->vocab.piece_len[id] : 5;
        pc[k++] = (mt_spm_dpiece){ p, pn, mt_spm_piece_to_id(t->sp, p, pn) };
    }
    int bad = mt_sb_reserve(o, 1);
    if (!bad) {
        o->p[o->n] = '\0';
        if (k)
            bad = mt_spm_decode_pieces(t->sp, pc, k, o);
    }
    if (pc != small)
        free(pc);
    return bad;
}

mt_status mt_multi_decode(const mt_multi_tokenizer *t, const int32_t *ids, int n, char **out, size_t *out_len,
                          mt_err *err)
{
    if (!t || n < 0 || (!ids && n) || !out)
        return mt_err_set(err, MT_ERR_INPUT, "mt_multi_decode: bad arguments");
    *out = NULL;
    for (int i = 0; i < n; i++)
        if (ids[i] < 0)
            return mt_err_set(err, MT_ERR_INPUT, "invalid id %d", (int)ids[i]);
    mt_sbuf o = { 0 };
    int bad = t->kind == MT_MULTI_NLLB ? decode_nllb(t, ids, n, &o) : decode_m2m(t, ids, n, &o);
    if (!bad && t->clean_up)
        mt_tok_clean_up(&o);
    if (bad) {
        free(o.p);
        return mt_err_set(err, MT_ERR_NOMEM, "mt_multi_decode: out of memory");
    }
    *out = o.p;
    if (out_len)
        *out_len = o.n;
    return MT_OK;
}

/* ---- getters ------------------------------------------------------------------------- */

const char *mt_multi_kind_name(mt_multi_kind kind)
{
    return kind == MT_MULTI_NLLB ? "nllb" : kind == MT_MULTI_M2M100 ? "m2m100" : "none";
}

mt_multi_kind mt_multi_kind_of(const mt_multi_tokenizer *t) { return t ? t->kind : MT_MULTI_NONE; }
int           mt_multi_n_langs(const mt_multi_tokenizer *t) { return t ? t->n_langs : 0; }
int32_t       mt_multi_vocab_size(const mt_multi_tokenizer *t) { return t ? t->n_ids : 0; }
int32_t       mt_multi_eos(const mt_multi_tokenizer *t) { return t ? t->eos : -1; }
int32_t       mt_multi_pad(const mt_multi_tokenizer *t) { return t ? t->pad : -1; }
int32_t       mt_multi_unk(const mt_multi_tokenizer *t) { return t ? t->unk : -1; }
int32_t       mt_multi_bos(const mt_multi_tokenizer *t) { return t ? t->bos : -1; }
const mt_spm *mt_multi_spm(const mt_multi_tokenizer *t) { return t ? t->sp : NULL; }

const char *mt_multi_lang(const mt_multi_tokenizer *t, int i)
{
    return t && i >= 0 && i < t->n_langs ? t->code[i] : NULL;
}

const char *mt_multi_lang_token(const mt_multi_tokenizer *t, int i)
{
    return t && i >= 0 && i < t->n_langs ? t->token[i] : NULL;
}

int mt_multi_legacy(const mt_multi_tokenizer *t) { return t ? t->legacy : 0; }

/* NLLB's special tokens by id (0..3), as fairseq_tokens_to_ids names them. */
static const char *const NLLB_SPECIAL[4] = { "<s>", "<pad>", "</s>", "<unk>" };

const char *mt_multi_piece(const mt_multi_tokenizer *t, int32_t id)
{
    if (!t || id < 0)
        return NULL;
    if (id >= t->lang_base && id < t->lang_base + t->n_langs)
        return t->token[id - t->lang_base];
    if (t->kind == MT_MULTI_M2M100)
        return id < t->vocab.size ? t->vocab.piece[id] : NULL;
    if (id < 4)
        return NLLB_SPECIAL[id];
    if (id == t->mask)
        return "<mask>";
    return nllb_piece(t, id, NULL);                          /* NULL past the model (padding rows) */
}

int32_t mt_multi_piece_id(const mt_multi_tokenizer *t, const char *piece)
{
    if (!t || !piece)
        return -1;
    size_t n = strlen(piece);
    int32_t i = mt_smap_get(&t->lang_map, piece, n);
    if (i >= 0 && !strcmp(t->token[i], piece))               /* the token's spelling, not M2M's bare code */
        return t->lang_base + i;
    if (t->kind == MT_MULTI_M2M100)
        return mt_vocab_id(&t->vocab, piece, n);
    for (int k = 0; k < 4; k++)
        if (!strcmp(piece, NLLB_SPECIAL[k]))
            return k;
    if (!strcmp(piece, "<mask>"))
        return t->mask;
    if (t->hf)
        return hf_piece_id(t, piece, n);
    int32_t sid = mt_spm_piece_to_id(t->sp, piece, n);
    return sid >= 3 ? sid + 1 : -1;                           /* spm's <unk> <s> </s>: fairseq's own ids above */
}

int mt_multi_is_byte_piece(const mt_multi_tokenizer *t, int32_t id)
{
    const char *p = mt_multi_piece(t, id);
    if (!p || mt_multi_is_special(t, id) || t->hf)          /* tokenizer.json: no byte fallback */
        return 0;
    return mt_spm_is_byte(t->sp, mt_spm_piece_to_id(t->sp, p, strlen(p)));
}

/* NLLB's join + strip and the spm decode only append; HF's clean-up and spm
 * denormalization rules may rewrite what came before. */
int mt_multi_decode_appends(const mt_multi_tokenizer *t)
{
    return t && !t->clean_up && (t->kind == MT_MULTI_NLLB || !mt_spm_has_denorm(t->sp));
}
