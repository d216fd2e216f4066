/* marian.c: a Marian / OPUS-MT release directory as the Hugging Face model
 * the loader knows (marian.h).
 *
 * The translation follows Hugging Face's convert_marian_to_pytorch.py: its
 * config keys, its parameter-name table, its checks of model.yml, and its
 * "<pad>" convention; the tensors are renamed and re-described in the table
 * npz.c filled, never copied.
 */
#include "marian.h"

#include <dirent.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "npz.h"
#include "util/utf8.h"
#include "yaml.h"

#define CONFIG_MEMBER  "special:model.yml"
#define MIN_POSITIONS  512          /* positions are computed, so the table may be longer than dim-emb */
#define MAX_DIM        (1 << 16)
#define MAX_LAYERS     1024
#define MAX_VOCAB      (1 << 24)

/* ---- messages ------------------------------------------------------------------ */
/* How many bytes of an untrusted string (a piece, a setting) to quote in a
 * message: at most 48, never half a UTF-8 character. */
static int quote_len(const char *s) { return mt_utf8_clip(s, strlen(s), 48); }

/* ---- files -------------------------------------------------------------------- */
static int is_file(const char *path)
{
    struct stat sb;
    return stat(path, &sb) == 0 && S_ISREG(sb.st_mode);
}

static int ends_with(const char *s, const char *suffix)
{
    size_t n = strlen(s), k = strlen(suffix);
    return n >= k && !strcmp(s + n - k, suffix);
}

static mt_status join(char *out, const char *dir, const char *name, mt_err *err)
{
    int n = snprintf(out, MT_MARIAN_PATH, "%s/%s", dir, name);
    if (n < 0 || n >= MT_MARIAN_PATH)
        return mt_err_set(err, MT_ERR_INPUT, "%s/%s: path too long", dir, name);
    return MT_OK;
}

/* A file decoder.yml names, looked up in dir.  Only its last path component
 * counts: a release directory is self-contained, and decoder.yml may still
 * carry the paths of the machine it was trained on. */
static mt_status named_file(const char *dir, const char *key, json_t *v, char *out, mt_err *err)
{
    if (!json_is_string(v))
        return mt_err_set(err, MT_ERR_FORMAT, "%s/decoder.yml: an entry of '%s' is not a file name", dir, key);
    const char *name = json_string_value(v), *slash = strrchr(name, '/');
    const char *base = slash ? slash + 1 : name;
    if (!*base || !strcmp(base, ".") || !strcmp(base, ".."))
        return mt_err_set(err, MT_ERR_FORMAT, "%s/decoder.yml: '%s' entry \"%s\" is not a file name", dir, key, name);
    mt_status st = join(out, dir, base, err);
    if (st == MT_OK && !is_file(out))
        st = mt_err_set(err, MT_ERR_IO, "%s: named in decoder.yml ('%s') but missing", out, key);
    return st;
}

/* decoder.yml's one model, two vocabularies, beam-size and normalize. */
static mt_status decoder_settings(const char *dir, const char *path, json_t *y, mt_marian_dir *d, mt_err *err)
{
    json_t *models = json_object_get(y, "models"), *vocabs = json_object_get(y, "vocabs");
    json_t *beam = json_object_get(y, "beam-size"), *norm = json_object_get(y, "normalize");
    if (json_is_string(models))
        models = json_pack("[O]", models);                  /* "models: x.npz" is one model too */
    else
        json_incref(models);
    mt_status st = MT_OK;
    if (!json_is_array(models) || json_array_size(models) == 0)
        st = mt_err_set(err, MT_ERR_FORMAT, "%s: 'models' must list the .npz file", path);
    else if (json_array_size(models) > 1)
        st = mt_err_set(err, MT_ERR_UNSUPPORTED, "%s: 'models' lists %zu models: ensembles are not supported", path,
                        json_array_size(models));
    else if (!json_is_array(vocabs) || json_array_size(vocabs) != 2)
        st = mt_err_set(err, MT_ERR_UNSUPPORTED, "%s: 'vocabs' must list 2 files (source, target), got %zu", path,
                        json_is_array(vocabs) ? json_array_size(vocabs) : (size_t)0);
    else if (beam && !json_is_null(beam) && (!json_is_integer(beam) || json_integer_value(beam) < 0 ||
                                             json_integer_value(beam) > 1024))
        st = mt_err_set(err, MT_ERR_FORMAT, "%s: 'beam-size' is not an integer in [0, 1024]", path);
    else if (norm && !json_is_null(norm) && (!json_is_number(norm) || json_number_value(norm) < 0))
        st = mt_err_set(err, MT_ERR_FORMAT, "%s: 'normalize' is not a non-negative number", path);
    if (st == MT_OK) {
        d->beam_size = json_is_integer(beam) ? (int)json_integer_value(beam) : 0;
        d->normalize = json_is_number(norm) ? json_number_value(norm) : 0;
        if ((st = named_file(dir, "models", json_array_get(models, 0), d->model_path, err)) == MT_OK &&
            (st = named_file(dir, "vocabs", json_array_get(vocabs, 0), d->src_vocab_path, err)) == MT_OK)
            st = named_file(dir, "vocabs", json_array_get(vocabs, 1), d->tgt_vocab_path, err);
    }
    json_decref(models);
    return st;
}

static mt_status read_decoder_yml(const char *dir, const char *path, mt_marian_dir *d, mt_err *err)
{
    json_t *y;
    mt_status st = mt_yaml_load(path, &y, err);
    if (st != MT_OK)
        return st;
    if (!json_is_object(y))
        st = mt_err_set(err, MT_ERR_FORMAT, "%s: not a YAML mapping", path);
    else
        st = decoder_settings(dir, path, y, d, err);
    json_decref(y);
    return st;
}

/* Without decoder.yml: the one .npz, and "*vocab.yml" (joint) or
 * "*src.vocab.yml" + "*trg.vocab.yml" (the converter's rule). */
static mt_status scan_dir(const char *dir, mt_marian_dir *d, mt_err *err)
{
    DIR *dp = opendir(dir);
    if (!dp)
        return mt_err_set(err, MT_ERR_IO, "%s: cannot open the directory", dir);
    char npz[256] = "", src[256] = "", trg[256] = "", joint[256] = "";
    int n_npz = 0, n_src = 0, n_trg = 0, n_joint = 0;
    for (struct dirent *e; (e = readdir(dp));) {
        const char *s = e->d_name;
        if (ends_with(s, ".npz"))
            n_npz++, snprintf(npz, sizeof npz, "%s", s);
        else if (ends_with(s, "src.vocab.yml"))
            n_src++, snprintf(src, sizeof src, "%s", s);
        else if (ends_with(s, "trg.vocab.yml"))
            n_trg++, snprintf(trg, sizeof trg, "%s", s);
        else if (ends_with(s, "vocab.yml"))
            n_joint++, snprintf(joint, sizeof joint, "%s", s);
    }
    closedir(dp);
    if (n_npz != 1)
        return mt_err_set(err, MT_ERR_FORMAT, "%s: no decoder.yml, and %d .npz files (one is needed)", dir, n_npz);
    mt_status st = join(d->model_path, dir, npz, err);    /* set first: mt_marian_detect needs only the model */
    if (st != MT_OK)
        return st;
    int is_joint = n_joint == 1 && n_src == 0 && n_trg == 0;
    if (!is_joint && !(n_joint == 0 && n_src == 1 && n_trg == 1))
        return mt_err_set(err, MT_ERR_FORMAT, "%s: no decoder.yml, and the vocabularies are ambiguous (%d *vocab.yml, "
                          "%d *src.vocab.yml, %d *trg.vocab.yml): add a decoder.yml", dir, n_joint, n_src, n_trg);
    if ((st = join(d->src_vocab_path, dir, is_joint ? joint : src, err)) != MT_OK)
        return st;
    return join(d->tgt_vocab_path, dir, is_joint ? joint : trg, err);
}

/* The model and vocabulary files must be of the kinds we read. */
static mt_status check_kinds(const mt_marian_dir *d, mt_err *err)
{
    if (ends_with(d->model_path, ".bin"))
        return mt_err_set(err, MT_ERR_UNSUPPORTED, "%s: Marian's binary model format is not supported (use the "
                          ".npz of the release)", d->model_path);
    if (!ends_with(d->model_path, ".npz"))
        return mt_err_set(err, MT_ERR_UNSUPPORTED, "%s: not a .npz model", d->model_path);
    const char *v[2] = {d->src_vocab_path, d->tgt_vocab_path};
    for (int i = 0; i < 2; i++)
        if (!ends_with(v[i], ".yml") && !ends_with(v[i], ".yaml") && !ends_with(v[i], ".json"))
            return mt_err_set(err, MT_ERR_UNSUPPORTED, "%s: only .yml (or .json) vocabularies are supported (a "
                              "SentencePiece or factored vocabulary is not)", v[i]);
    return MT_OK;
}

static mt_status spm_file(const char *dir, const char *name, const char *bpe, char *out, mt_err *err)
{
    mt_status st = join(out, dir, name, err);
    char alt[MT_MARIAN_PATH];
    if (st != MT_OK || is_file(out))
        return st;
    if (join(alt, dir, bpe, err) == MT_OK && is_file(alt))
        return mt_err_set(err, MT_ERR_UNSUPPORTED, "%s: a BPE release (%s); only SentencePiece models are supported",
                          dir, bpe);
    return mt_err_set(err, MT_ERR_IO, "%s: missing", out);
}

/* ---- model.yml ---------------------------------------------------------------------- */
typedef struct {
    int         d, enc_layers, dec_layers, heads, enc_ffn, dec_ffn;
    int         n_src, n_tgt;                 /* dim-vocabs */
    int         share, tie, norm_emb;         /* tied-embeddings-src|all, tied-embeddings|all, postprocess-emb n */
    const char *act;                          /* Hugging Face's name */
} marian_cfg;

typedef struct {
    const char *file;                         /* "<npz> (special:model.yml)", for messages */
    json_t     *y;
    mt_err     *err;
} ycfg;

/* A short rendering of a YAML value for messages. */
static const char *show(json_t *v, char *buf, size_t cap)
{
    char *s = v ? json_dumps(v, JSON_ENCODE_ANY | JSON_COMPACT | JSON_ENSURE_ASCII) : NULL;   /* cut anywhere */
    snprintf(buf, cap, "%s", s ? s : "(absent)");
    free(s);
    return buf;
}

/* An integer, or a string of digits (the converter casts strings with int()). */
static int as_int(json_t *v, long long *out)
{
    if (json_is_integer(v)) {
        *out = json_integer_value(v);
        return 1;
    }
    const char *s = json_string_value(v);
    if (!s || !*s || strspn(s, "0123456789") != strlen(s) || strlen(s) > 12)
        return 0;
    *out = atoll(s);
    return 1;
}

/* key in [lo, hi]; def when absent (def < lo: the key is required). */
static mt_status y_int(const ycfg *c, const char *key, int def, int lo, int hi, int *out)
{
    json_t *v = json_object_get(c->y, key);
    long long x;
    char b[64];
    if (!v && def >= lo) {
        *out = def;
        return MT_OK;
    }
    if (!v)
        return mt_err_set(c->err, MT_ERR_FORMAT, "%s: missing key '%s'", c->file, key);
    if (!as_int(v, &x) || x < lo || x > hi)
        return mt_err_set(c->err, MT_ERR_FORMAT, "%s: '%s' = %s is not an integer in [%d, %d]", c->file, key,
                          show(v, b, sizeof b), lo, hi);
    *out = (int)x;
    return MT_OK;
}

/* key, when present, must be one of allowed[0..n); others are refused as unsupported. */
static mt_status y_int_in(const ycfg *c, const char *key, const int *allowed, int n)
{
    int v;
    mt_status st = y_int(c, key, allowed[0], INT_MIN + 1, INT_MAX, &v);
    if (st != MT_OK)
        return st;
    for (int i = 0; i < n; i++)
        if (v == allowed[i])
            return MT_OK;
    return mt_err_set(c->err, MT_ERR_UNSUPPORTED, "%s: '%s' = %d is not supported (only %d%s)", c->file, key, v,
                      allowed[n - 1], n > 1 ? " or 0" : "");
}

static mt_status y_bool(const ycfg *c, const char *key, int *out)
{
    json_t *v = json_object_get(c->y, key);
    const char *s = json_string_value(v);
    char b[64];
    if (!v || json_is_false(v) || (s && !strcmp(s, "false")))
        *out = 0;
    else if (json_is_true(v) || (s && !strcmp(s, "true")))
        *out = 1;
    else
        return mt_err_set(c->err, MT_ERR_FORMAT, "%s: '%s' = %s is not true or false", c->file, key,
                          show(v, b, sizeof b));
    return MT_OK;
}

/* A string setting (empty or null: ""), def when absent (NULL: required). */
static mt_status y_str(const ycfg *c, const char *key, const char *def, const char **out)
{
    json_t *v = json_object_get(c->y, key);
    char b[64];
    if (!v && !def)
        return mt_err_set(c->err, MT_ERR_FORMAT, "%s: missing key '%s'", c->file, key);
    if (!v || json_is_null(v))
        *out = v ? "" : def;
    else if (json_is_string(v))
        *out = json_string_value(v);
    else
        return mt_err_set(c->err, MT_ERR_FORMAT, "%s: '%s' = %s is not a string", c->file, key, show(v, b, sizeof b));
    return MT_OK;
}

/* A transformer-*process setting ('d' dropout, 'a' add, 'n' layer norm)
 * without its dropouts, which do nothing at inference, must be one of ok[]. */
static mt_status y_ops(const ycfg *c, const char *key, const char *def, const char *const *ok, int *which)
{
    const char *s;
    char ops[16];
    size_t n = 0;
    mt_status st = y_str(c, key, def, &s);
    if (st != MT_OK)
        return st;
    for (const char *p = s; *p && n < sizeof ops - 1; p++)
        if (*p != 'd')
            ops[n++] = *p;
    ops[n] = 0;
    for (int i = 0; ok[i]; i++)
        if (strlen(s) < sizeof ops && !strcmp(ops, ok[i])) {
            *which = i;
            return MT_OK;
        }
    return mt_err_set(c->err, MT_ERR_UNSUPPORTED, "%s: '%s' = \"%.*s\" is not supported (Marian's post-norm "
                      "transformer has transformer-preprocess \"\", transformer-postprocess \"dan\", "
                      "transformer-postprocess-emb \"d\" or \"nd\")", c->file, key, quote_len(s), s);
}

/* Settings that change the network must have the values of the architecture we run. */
static mt_status check_fixed(const ycfg *c)
{
    static const char *const must_be_false[] = {
        "transformer-train-position-embeddings", "right-left", "transformer-no-projection",
        "layer-normalization", "ulr"};
    static const struct { const char *key, *def, *want; } strings[] = {
        {"type", NULL, "transformer"},
        {"transformer-decoder-autoreg", "self-attention", "self-attention"},
    };
    char b[64];
    mt_status st;
    for (size_t i = 0; i < sizeof must_be_false / sizeof *must_be_false; i++) {
        int v;
        if ((st = y_bool(c, must_be_false[i], &v)) != MT_OK)
            return st;
        if (v)
            return mt_err_set(c->err, MT_ERR_UNSUPPORTED, "%s: '%s' = true is not supported", c->file,
                              must_be_false[i]);
    }
    for (size_t i = 0; i < sizeof strings / sizeof *strings; i++) {
        const char *s;
        if ((st = y_str(c, strings[i].key, strings[i].def, &s)) != MT_OK)
            return st;
        if (strcmp(s, strings[i].want))
            return mt_err_set(c->err, MT_ERR_UNSUPPORTED, "%s: '%s' = \"%.*s\" is not supported (only \"%s\")",
                              c->file, strings[i].key, quote_len(s), s, strings[i].want);
    }
    json_t *tied = json_object_get(c->y, "transformer-tied-layers");
    if (tied && !json_is_null(tied) && !(json_is_array(tied) && json_array_size(tied) == 0))
        return mt_err_set(c->err, MT_ERR_UNSUPPORTED, "%s: 'transformer-tied-layers' = %s is not supported", c->file,
                          show(tied, b, sizeof b));
    static const int two[] = {2}, zero[] = {0}, dec_depth[] = {0, 2};     /* decoder 0: as the encoder */
    if ((st = y_int_in(c, "transformer-ffn-depth", two, 1)) != MT_OK ||
        (st = y_int_in(c, "transformer-decoder-ffn-depth", dec_depth, 2)) != MT_OK)
        return st;
    return y_int_in(c, "lemma-dim-emb", zero, 1);                          /* factored vocabularies */
}

static mt_status read_activation(const ycfg *c, marian_cfg *m)
{
    const char *a;
    mt_status st = y_str(c, "transformer-ffn-activation", "swish", &a);
    if (st != MT_OK)
        return st;
    if (!strcmp(a, "swish") || !strcmp(a, "relu")) {
        m->act = !strcmp(a, "swish") ? "swish" : "relu";
        return MT_OK;
    }
    /* Marian's gelu is x * sigmoid(1.702 x), not the erf gelu of Hugging Face and the engine */
    return mt_err_set(c->err, MT_ERR_UNSUPPORTED, "%s: 'transformer-ffn-activation' = \"%.*s\" is not supported "
                      "(swish, relu)", c->file, quote_len(a), a);
}

static mt_status read_dims(const ycfg *c, marian_cfg *m)
{
    mt_status st;
    if ((st = y_int(c, "dim-emb", -1, 2, MAX_DIM, &m->d)) != MT_OK ||
        (st = y_int(c, "enc-depth", -1, 1, MAX_LAYERS, &m->enc_layers)) != MT_OK ||
        (st = y_int(c, "dec-depth", -1, 1, MAX_LAYERS, &m->dec_layers)) != MT_OK ||
        (st = y_int(c, "transformer-heads", -1, 1, MAX_DIM, &m->heads)) != MT_OK ||
        (st = y_int(c, "transformer-dim-ffn", -1, 1, 1 << 20, &m->enc_ffn)) != MT_OK ||
        (st = y_int(c, "transformer-decoder-dim-ffn", 0, 0, 1 << 20, &m->dec_ffn)) != MT_OK)
        return st;
    if (m->dec_ffn == 0)                                  /* Marian: 0 = as the encoder */
        m->dec_ffn = m->enc_ffn;
    if (m->d % m->heads)
        return mt_err_set(c->err, MT_ERR_FORMAT, "%s: dim-emb %d is not divisible by transformer-heads %d", c->file,
                          m->d, m->heads);
    json_t *dv = json_object_get(c->y, "dim-vocabs");
    long long a, b;
    char s[64];
    if (!json_is_array(dv) || json_array_size(dv) != 2 || !as_int(json_array_get(dv, 0), &a) ||
        !as_int(json_array_get(dv, 1), &b) || a < 1 || b < 1 || a >= MAX_VOCAB || b >= MAX_VOCAB)
        return mt_err_set(c->err, MT_ERR_FORMAT, "%s: 'dim-vocabs' = %s is not two vocabulary sizes (source, target)",
                          c->file, show(dv, s, sizeof s));
    m->n_src = (int)a;
    m->n_tgt = (int)b;
    return MT_OK;
}

static mt_status read_ties(const ycfg *c, marian_cfg *m)
{
    int all, src, out;
    mt_status st;
    if ((st = y_bool(c, "tied-embeddings-all", &all)) != MT_OK ||
        (st = y_bool(c, "tied-embeddings-src", &src)) != MT_OK || (st = y_bool(c, "tied-embeddings", &out)) != MT_OK)
        return st;
    m->share = all || src;
    m->tie = all || out;
    if (m->share && m->n_src != m->n_tgt)
        return mt_err_set(c->err, MT_ERR_FORMAT, "%s: shared embeddings (tied-embeddings-%s) but dim-vocabs differ "
                          "(%d, %d)", c->file, all ? "all" : "src", m->n_src, m->n_tgt);
    return MT_OK;
}

static mt_status read_marian_cfg(const ycfg *c, marian_cfg *m)
{
    static const char *const pre[] = {"", NULL}, *const post[] = {"an", NULL}, *const emb[] = {"", "n", NULL},
                             *const top[] = {"", NULL};
    int which;
    mt_status st;
    if ((st = check_fixed(c)) != MT_OK || (st = read_dims(c, m)) != MT_OK || (st = read_ties(c, m)) != MT_OK ||
        (st = read_activation(c, m)) != MT_OK ||
        (st = y_ops(c, "transformer-preprocess", "", pre, &which)) != MT_OK ||
        (st = y_ops(c, "transformer-postprocess", "dan", post, &which)) != MT_OK ||
        (st = y_ops(c, "transformer-postprocess-top", "", top, &which)) != MT_OK ||
        (st = y_ops(c, "transformer-postprocess-emb", "d", emb, &which)) != MT_OK)
        return st;
    m->norm_emb = which == 1;
    return MT_OK;
}

/* The YAML text of the special:model.yml member: int8/uint8 characters, NUL-terminated by Marian. */
static mt_status model_yml(const mt_wfile *w, marian_cfg *m, mt_err *err)
{
    const mt_tensor *t = mt_wfile_find(w, CONFIG_MEMBER);
    char file[MT_MARIAN_PATH + 32];
    snprintf(file, sizeof file, "%s (%s)", w->path, CONFIG_MEMBER);
    if (!t)
        return mt_err_set(err, MT_ERR_FORMAT, "%s: no '%s' member: not a Marian model, or saved without its config",
                          w->path, CONFIG_MEMBER);
    if ((t->dtype != MT_DT_I8 && t->dtype != MT_DT_U8) || t->rank != 1)
        return mt_err_set(err, MT_ERR_FORMAT, "%s: not a 1-D array of characters (%s, rank %d)", file, t->dtype_name,
                          t->rank);
    size_t n = (size_t)t->shape[0];
    const char *text = t->data;
    while (n > 0 && text[n - 1] == 0)
        n--;
    json_t *y;
    mt_status st = mt_yaml_parse(file, text, n, &y, err);
    if (st != MT_OK)
        return st;
    ycfg c = {file, y, err};
    if (!json_is_object(y))
        st = mt_err_set(err, MT_ERR_FORMAT, "%s: not a YAML mapping", file);
    else
        st = read_marian_cfg(&c, m);
    json_decref(y);
    return st;
}

/* ---- vocabularies ------------------------------------------------------------------- */
/* Every id in [0, n), each once (so dense), "</s>" and "<unk>" present, no
 * "<pad>" (the converter's pad goes after the last id). */
static mt_status check_vocab(const char *path, json_t *v, mt_err *err)
{
    size_t n = json_object_size(v);
    if (n == 0 || n >= MAX_VOCAB)
        return mt_err_set(err, MT_ERR_FORMAT, "%s: %zu entries (1 to %d expected)", path, n, MAX_VOCAB - 1);
    const char **by_id = calloc(n, sizeof *by_id);
    if (!by_id)
        return mt_err_set(err, MT_ERR_NOMEM, "%s: out of memory", path);
    mt_status st = MT_OK;
    const char *piece;
    json_t *id;
    json_object_foreach(v, piece, id) {
        json_int_t k = json_is_integer(id) ? json_integer_value(id) : -1;
        if (k < 0 || (size_t)k >= n) {
            st = mt_err_set(err, MT_ERR_FORMAT, "%s: piece \"%.*s\" has id %s: the ids of %zu pieces must be "
                            "0..%zu", path, quote_len(piece), piece,
                            json_is_integer(id) ? "out of range" : "that is not an integer", n, n - 1);
            break;
        }
        if (by_id[k]) {
            st = mt_err_set(err, MT_ERR_FORMAT, "%s: id %lld is given to both \"%.*s\" and \"%.*s\"", path,
                            (long long)k, quote_len(by_id[k]), by_id[k], quote_len(piece), piece);
            break;
        }
        by_id[k] = piece;
    }
    free(by_id);
    if (st != MT_OK)
        return st;
    if (!json_object_get(v, "</s>") || !json_object_get(v, "<unk>"))
        return mt_err_set(err, MT_ERR_FORMAT, "%s: no \"%s\" entry (Marian's vocabularies have </s> and <unk>)",
                          path, json_object_get(v, "</s>") ? "<unk>" : "</s>");
    if (json_object_get(v, "<pad>"))
        return mt_err_set(err, MT_ERR_UNSUPPORTED, "%s: has a \"<pad>\" piece (id %lld); the Hugging Face form "
                          "adds its own <pad> after the last id", path,
                          (long long)json_integer_value(json_object_get(v, "<pad>")));
    return MT_OK;
}

/* A vocabulary file (.yml, or Marian's .json form) checked, with "<pad>": n added. */
static mt_status load_vocab(const char *path, json_t **out, int *size, mt_err *err)
{
    json_t *v = NULL;
    mt_status st;
    if (ends_with(path, ".json")) {
        json_error_t je;
        if (!(v = json_load_file(path, JSON_REJECT_DUPLICATES, &je)))
            return mt_err_set(err, is_file(path) ? MT_ERR_FORMAT : MT_ERR_IO, "%s: line %d: %s", path, je.line,
                              je.text);
    } else if ((st = mt_yaml_load(path, &v, err)) != MT_OK) {
        return st;
    }
    if (!json_is_object(v))
        st = mt_err_set(err, MT_ERR_FORMAT, "%s: not a mapping of pieces to ids", path);
    else
        st = check_vocab(path, v, err);
    *size = (int)json_object_size(v);
    if (st == MT_OK && json_object_set_new(v, "<pad>", json_integer(*size)))
        st = mt_err_set(err, MT_ERR_NOMEM, "%s: out of memory", path);
    if (st != MT_OK) {
        json_decref(v);
        return st;
    }
    *out = v;
    return MT_OK;
}

static mt_status load_vocabs(mt_marian_dir *d, const marian_cfg *m, mt_err *err)
{
    int ns, nt;
    mt_status st = load_vocab(d->src_vocab_path, &d->src_vocab, &ns, err);
    if (st != MT_OK)
        return st;
    d->joint_vocab = !strcmp(d->src_vocab_path, d->tgt_vocab_path);
    if (d->joint_vocab) {
        d->tgt_vocab = json_incref(d->src_vocab);
        nt = ns;
    } else if ((st = load_vocab(d->tgt_vocab_path, &d->tgt_vocab, &nt, err)) != MT_OK) {
        return st;
    }
    if (d->joint_vocab && (ns != m->n_src || ns != m->n_tgt))
        return mt_err_set(err, MT_ERR_FORMAT, "%s: %d entries but model.yml dim-vocabs is [%d, %d]",
                          d->src_vocab_path, ns, m->n_src, m->n_tgt);
    if (ns != m->n_src || nt != m->n_tgt)
        return mt_err_set(err, MT_ERR_FORMAT, "the vocabularies %s (%d entries) and %s (%d entries) disagree with "
                          "model.yml dim-vocabs [%d, %d]", d->src_vocab_path, ns, d->tgt_vocab_path, nt, m->n_src,
                          m->n_tgt);
    return MT_OK;
}

/* ---- tensors ------------------------------------------------------------------------- */
/* What a Marian tensor becomes.  MAT: a Linear weight, Marian [in][out],
 * listed as [out][in] transposed.  VEC: a bias or LayerNorm parameter,
 * [1][out] or [out], listed as [out].  EMB: an embedding table [out][in]
 * (rows, d), as is. */
enum { MAT, VEC, EMB };

typedef struct {
    char    marian[64], hf[128];
    int     kind;
    int64_t in, out;
    int     optional;
} param;

/* Per layer, after "encoder_lN_" / "decoder_lN_" (the converter's table);
 * dims: 'd' d_model, 'f' the stack's ffn size. */
static const struct { const char *marian, *hf; char kind, in, out, dec_only; } LAYER[] = {
    {"self_Wq", "self_attn.q_proj.weight", MAT, 'd', 'd', 0},   {"self_bq", "self_attn.q_proj.bias", VEC, 0, 'd', 0},
    {"self_Wk", "self_attn.k_proj.weight", MAT, 'd', 'd', 0},   {"self_bk", "self_attn.k_proj.bias", VEC, 0, 'd', 0},
    {"self_Wv", "self_attn.v_proj.weight", MAT, 'd', 'd', 0},   {"self_bv", "self_attn.v_proj.bias", VEC, 0, 'd', 0},
    {"self_Wo", "self_attn.out_proj.weight", MAT, 'd', 'd', 0}, {"self_bo", "self_attn.out_proj.bias", VEC, 0, 'd', 0},
    {"self_Wo_ln_scale", "self_attn_layer_norm.weight", VEC, 0, 'd', 0},
    {"self_Wo_ln_bias", "self_attn_layer_norm.bias", VEC, 0, 'd', 0},
    {"context_Wq", "encoder_attn.q_proj.weight", MAT, 'd', 'd', 1},
    {"context_bq", "encoder_attn.q_proj.bias", VEC, 0, 'd', 1},
    {"context_Wk", "encoder_attn.k_proj.weight", MAT, 'd', 'd', 1},
    {"context_bk", "encoder_attn.k_proj.bias", VEC, 0, 'd', 1},
    {"context_Wv", "encoder_attn.v_proj.weight", MAT, 'd', 'd', 1},
    {"context_bv", "encoder_attn.v_proj.bias", VEC, 0, 'd', 1},
    {"context_Wo", "encoder_attn.out_proj.weight", MAT, 'd', 'd', 1},
    {"context_bo", "encoder_attn.out_proj.bias", VEC, 0, 'd', 1},
    {"context_Wo_ln_scale", "encoder_attn_layer_norm.weight", VEC, 0, 'd', 1},
    {"context_Wo_ln_bias", "encoder_attn_layer_norm.bias", VEC, 0, 'd', 1},
    {"ffn_W1", "fc1.weight", MAT, 'd', 'f', 0},                 {"ffn_b1", "fc1.bias", VEC, 0, 'f', 0},
    {"ffn_W2", "fc2.weight", MAT, 'f', 'd', 0},                 {"ffn_b2", "fc2.bias", VEC, 0, 'd', 0},
    {"ffn_ffn_ln_scale", "final_layer_norm.weight", VEC, 0, 'd', 0},
    {"ffn_ffn_ln_bias", "final_layer_norm.bias", VEC, 0, 'd', 0},
};
#define N_LAYER_PARAMS ((int)(sizeof LAYER / sizeof *LAYER))

static void set_param(param *p, const char *marian, const char *hf, int kind, int64_t in, int64_t out, int optional)
{
    snprintf(p->marian, sizeof p->marian, "%s", marian);
    snprintf(p->hf, sizeof p->hf, "%s", hf);
    p->kind = kind;
    p->in = in;
    p->out = out;
    p->optional = optional;
}

/* The tensors outside the layers, as model.yml implies them; their count. */
static int top_params(const marian_cfg *m, param *p)
{
    int n = 0;
    if (m->share) {
        set_param(&p[n++], "Wemb", "model.shared.weight", EMB, m->d, m->n_src, 0);
    } else {
        set_param(&p[n++], "encoder_Wemb", "model.encoder.embed_tokens.weight", EMB, m->d, m->n_src, 0);
        set_param(&p[n++], "decoder_Wemb", "model.decoder.embed_tokens.weight", EMB, m->d, m->n_tgt, 0);
    }
    if (!m->tie)
        set_param(&p[n++], "decoder_ff_logit_out_W", "lm_head.weight", MAT, m->d, m->n_tgt, 0);
    set_param(&p[n++], "decoder_ff_logit_out_b", "final_logits_bias", VEC, 0, m->n_tgt, 1);   /* output-omit-bias */
    if (m->norm_emb) {
        set_param(&p[n++], "encoder_emb_ln_scale_pre", "model.encoder.layernorm_embedding.weight", VEC, 0, m->d, 0);
        set_param(&p[n++], "encoder_emb_ln_bias_pre", "model.encoder.layernorm_embedding.bias", VEC, 0, m->d, 0);
        set_param(&p[n++], "decoder_emb_ln_scale_pre", "model.decoder.layernorm_embedding.weight", VEC, 0, m->d, 0);
        set_param(&p[n++], "decoder_emb_ln_bias_pre", "model.decoder.layernorm_embedding.bias", VEC, 0, m->d, 0);
    }
    return n;
}

/* Parameter k of layer `layer` (0-based) of a stack: 1, or 0 when the encoder has no such parameter. */
static int layer_param(const marian_cfg *m, int dec, int layer, int k, param *p)
{
    if (LAYER[k].dec_only && !dec)
        return 0;
    char marian[64], hf[128];
    int64_t ffn = dec ? m->dec_ffn : m->enc_ffn;
    snprintf(marian, sizeof marian, "%s_l%d_%s", dec ? "decoder" : "encoder", layer + 1, LAYER[k].marian);
    snprintf(hf, sizeof hf, "model.%s.layers.%d.%s", dec ? "decoder" : "encoder", layer, LAYER[k].hf);
    set_param(p, marian, hf, LAYER[k].kind, LAYER[k].in == 'f' ? ffn : m->d, LAYER[k].out == 'f' ? ffn : m->d, 0);
    return 1;
}

/* "encoder_l3_ffn_W1" -> the parameter; 0 when the name is no layer parameter of this model. */
static int lookup_layer(const marian_cfg *m, const char *name, param *p)
{
    int dec = !strncmp(name, "decoder_l", 9);
    if (!dec && strncmp(name, "encoder_l", 9))
        return 0;
    const char *s = name + 9;
    int layer = 0, digits = 0;
    for (; *s >= '0' && *s <= '9' && digits < 5; s++, digits++)
        layer = layer * 10 + (*s - '0');
    if (!digits || name[9] == '0' || *s != '_' || layer > (dec ? m->dec_layers : m->enc_layers))
        return 0;
    for (int k = 0; k < N_LAYER_PARAMS; k++)
        if (!strcmp(s + 1, LAYER[k].marian))
            return layer_param(m, dec, layer - 1, k, p);
    return 0;
}

static int lookup(const marian_cfg *m, const char *name, param *p)
{
    param top[8];
    int n = top_params(m, top);
    for (int i = 0; i < n; i++)
        if (!strcmp(name, top[i].marian)) {
            *p = top[i];
            return 1;
        }
    return lookup_layer(m, name, p);
}

static void fmt_shape(const mt_tensor *t, char *buf, size_t cap)
{
    size_t at = 0;
    buf[0] = 0;
    for (int i = 0; i < t->rank && at < cap - 24; i++)
        at += (size_t)snprintf(buf + at, cap - at, "%s%lld", i ? ", " : "", (long long)t->shape[i]);
}

/* Check t against p and re-describe it: Hugging Face name, shape, transposed. */
static mt_status convert_tensor(const char *path, const param *p, mt_tensor *t, mt_err *err)
{
    int ok;
    char got[128];
    if (t->dtype != MT_DT_F32 && t->dtype != MT_DT_F16)
        return mt_err_set(err, MT_ERR_FORMAT, "%s: tensor '%s' has dtype %s, expected F32 or F16", path, t->name,
                          t->dtype_name);
    if (p->kind == VEC)
        ok = (t->rank == 2 && t->shape[0] == 1 && t->shape[1] == p->out) || (t->rank == 1 && t->shape[0] == p->out);
    else if (p->kind == MAT)
        ok = t->rank == 2 && t->shape[0] == p->in && t->shape[1] == p->out;
    else
        ok = t->rank == 2 && t->shape[0] == p->out && t->shape[1] == p->in;
    if (!ok) {
        int64_t e0 = p->kind == VEC ? 1 : p->kind == MAT ? p->in : p->out, e1 = p->kind == EMB ? p->in : p->out;
        fmt_shape(t, got, sizeof got);
        return mt_err_set(err, MT_ERR_FORMAT, "%s: tensor '%s' has shape [%s], expected [%lld, %lld] from model.yml",
                          path, t->name, got, (long long)e0, (long long)e1);
    }
    char *hf = strdup(p->hf);
    if (!hf)
        return mt_err_set(err, MT_ERR_NOMEM, "%s: out of memory", path);
    free(t->name);
    t->name = hf;
    if (p->kind == VEC) {
        t->rank = 1;
        t->shape[0] = p->out;
    } else if (p->kind == MAT) {
        t->shape[0] = p->out;
        t->shape[1] = p->in;
        t->transposed = 1;
    }
    return MT_OK;
}

/* Drop the "special:" members (metadata, not weights) from the table. */
static void drop_specials(mt_wfile *w)
{
    for (int i = 0; i < w->n_tensors;) {
        if (strncmp(w->tensors[i].name, "special:", 8)) {
            i++;
            continue;
        }
        free(w->tensors[i].name);
        w->tensors[i] = w->tensors[--w->n_tensors];
    }
}

/* Every tensor the model needs must be there (reported by its Marian name). */
static mt_status check_complete(const mt_wfile *w, const marian_cfg *m, mt_err *err)
{
    param p[8];
    int n = top_params(m, p);
    for (int i = 0; i < n; i++)
        if (!p[i].optional && !mt_wfile_find(w, p[i].hf))
            return mt_err_set(err, MT_ERR_FORMAT, "%s: missing tensor '%s'", w->path, p[i].marian);
    for (int dec = 0; dec < 2; dec++)
        for (int l = 0; l < (dec ? m->dec_layers : m->enc_layers); l++)
            for (int k = 0; k < N_LAYER_PARAMS; k++)
                if (layer_param(m, dec, l, k, p) && !mt_wfile_find(w, p->hf))
                    return mt_err_set(err, MT_ERR_FORMAT, "%s: missing tensor '%s'", w->path, p->marian);
    return MT_OK;
}

static mt_status convert_tensors(mt_wfile *w, const marian_cfg *m, mt_err *err)
{
    drop_specials(w);
    for (int i = 0; i < w->n_tensors; i++) {
        param p;
        mt_tensor *t = &w->tensors[i];
        mt_status st;
        if (!lookup(m, t->name, &p))
            return mt_err_set(err, MT_ERR_UNSUPPORTED, "%s: tensor '%s' has no place in the model model.yml describes "
                              "(%d+%d layers, %s embeddings, %s output layer%s)", w->path, t->name, m->enc_layers,
                              m->dec_layers, m->share ? "shared" : "separate", m->tie ? "tied" : "untied",
                              m->norm_emb ? ", embedding layer norm" : "");
        if ((st = convert_tensor(w->path, &p, t, err)) != MT_OK)
            return st;
    }
    mt_status st = mt_wfile_sort(w, err);
    return st != MT_OK ? st : check_complete(w, m, err);
}

/* ---- the Hugging Face config ------------------------------------------------------------- */
static mt_status hf_config(mt_marian_dir *d, const marian_cfg *m, mt_err *err)
{
    int pad = m->n_tgt, eos = (int)json_integer_value(json_object_get(d->tgt_vocab, "</s>"));
    json_t *c = json_pack("{s:s, s:[s], s:i, s:i, s:i, s:i, s:i, s:i, s:i, s:s, s:i, s:i, s:b, s:b, s:b, s:b, s:b,"
                          " s:i, s:i, s:i, s:i, s:i, s:i, s:[[i]], s:i}",
                          "model_type", "marian", "architectures", "MarianMTModel", "d_model", m->d,
                          "encoder_layers", m->enc_layers, "decoder_layers", m->dec_layers,
                          "encoder_attention_heads", m->heads, "decoder_attention_heads", m->heads,
                          "encoder_ffn_dim", m->enc_ffn, "decoder_ffn_dim", m->dec_ffn,
                          "activation_function", m->act, "vocab_size", m->n_src + 1,
                          "decoder_vocab_size", m->n_tgt + 1, "share_encoder_decoder_embeddings", m->share,
                          "tie_word_embeddings", m->tie, "normalize_embedding", m->norm_emb, "scale_embedding", 1,
                          "static_position_embeddings", 1,
                          "max_position_embeddings", m->d > MIN_POSITIONS ? m->d : MIN_POSITIONS,
                          "pad_token_id", pad, "decoder_start_token_id", pad, "eos_token_id", eos,
                          "forced_eos_token_id", eos, "bos_token_id", 0, "bad_words_ids", pad, "max_length", 512);
    if (!c || (d->beam_size > 0 && json_object_set_new(c, "num_beams", json_integer(d->beam_size)))) {
        json_decref(c);
        return mt_err_set(err, MT_ERR_NOMEM, "%s: out of memory", d->model_path);
    }
    d->config = c;
    return MT_OK;
}

/* ---- API -------------------------------------------------------------------------------- */
int mt_marian_detect(const char *dir)
{
    char path[MT_MARIAN_PATH];
    mt_marian_dir d;
    if (join(path, dir, "decoder.yml", NULL) == MT_OK && is_file(path))
        return 1;
    memset(&d, 0, sizeof d);
    if (scan_dir(dir, &d, NULL) != MT_OK && !d.model_path[0])
        return 0;
    mt_wfile *w;
    if (!d.model_path[0] || mt_npz_open(d.model_path, &w, NULL) != MT_OK)
        return 0;
    int found = mt_wfile_find(w, CONFIG_MEMBER) != NULL;
    mt_wfile_close(w);
    return found;
}

static mt_status open_all(const char *dir, mt_marian_dir *d, mt_err *err)
{
    char path[MT_MARIAN_PATH];
    marian_cfg m;
    mt_status st = join(path, dir, "decoder.yml", err);
    if (st != MT_OK)
        return st;
    if ((st = is_file(path) ? read_decoder_yml(dir, path, d, err) : scan_dir(dir, d, err)) != MT_OK ||
        (st = check_kinds(d, err)) != MT_OK ||
        (st = spm_file(dir, "source.spm", "source.bpe", d->src_spm, err)) != MT_OK ||
        (st = spm_file(dir, "target.spm", "target.bpe", d->tgt_spm, err)) != MT_OK ||
        (st = mt_npz_open(d->model_path, &d->weights, err)) != MT_OK)
        return st;
    memset(&m, 0, sizeof m);
    if ((st = model_yml(d->weights, &m, err)) != MT_OK || (st = load_vocabs(d, &m, err)) != MT_OK ||
        (st = convert_tensors(d->weights, &m, err)) != MT_OK)
        return st;
    d->pad_rows = 1;
    return hf_config(d, &m, err);
}

mt_status mt_marian_open(const char *dir, mt_marian_dir *out, mt_err *err)
{
    memset(out, 0, sizeof *out);
    mt_status st = open_all(dir, out, err);
    if (st != MT_OK)
        mt_marian_close(out);
    return st;
}

void mt_marian_close(mt_marian_dir *d)
{
    if (!d)
        return;
    json_decref(d->config);
    json_decref(d->src_vocab);
    json_decref(d->tgt_vocab);
    mt_wfile_close(d->weights);
    memset(d, 0, sizeof *d);
}
