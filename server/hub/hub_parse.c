/* hub_parse: what a hub answers, read without trusting it (see hub.h; fuzzed by
 * tests/fuzz/fuzz_hub.c). */
#include "hub.h"

#include <jansson.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

/* The files of a model's form, besides its weights: the config, the Marian
 * SentencePiece models and vocabulary, the Hugging Face tokenizer and its settings. */
static const char *const form_files[] = {
    "config.json", "generation_config.json", "source.spm", "target.spm", "vocab.json",
    "tokenizer_config.json", "special_tokens_map.json", "tokenizer.json",
};
/* the weights mtserve loads, best first (never tf_model.h5, flax, onnx, rust_model.ot) */
static const char *const weight_files[] = { "model.safetensors", "pytorch_model.bin" };

static int listed(json_t *siblings, const char *name)
{
    size_t i;
    json_t *s;
    json_array_foreach(siblings, i, s) {
        const char *f = json_string_value(json_object_get(s, "rfilename"));
        if (f && strcmp(f, name) == 0)
            return 1;
    }
    return 0;
}

/* every sibling an object with a safe string rfilename: a hub naming "../x" is refused whole */
static mt_status check_siblings(json_t *siblings, mt_err *err)
{
    size_t i;
    json_t *s;
    json_array_foreach(siblings, i, s) {
        const char *f = json_string_value(json_object_get(s, "rfilename"));
        if (!f)
            return mt_err_set(err, MT_ERR_FORMAT, "the hub's file list has an entry without rfilename");
        if (!hub_safe_name(f))
            return mt_err_set(err, MT_ERR_FORMAT, "the hub's file list names an unsafe path '%.200s'", f);
    }
    return MT_OK;
}

mt_status hub_parse_file_list(const char *json, size_t len, hub_file_list *list, mt_err *err)
{
    memset(list, 0, sizeof *list);
    json_error_t jerr;
    json_t *root = json_loadb(json, len, 0, &jerr);
    mt_status st = MT_OK;
    if (!json_is_object(root)) {
        st = mt_err_set(err, MT_ERR_FORMAT, "the hub's answer is not a JSON object");
        goto done;
    }
    const char *sha = json_string_value(json_object_get(root, "sha"));
    json_t *siblings = json_object_get(root, "siblings");
    if (!sha || !hub_is_hex(sha, 40) || !json_is_array(siblings)) {
        st = mt_err_set(err, MT_ERR_FORMAT, "the hub's answer lacks a commit sha or a file list");
        goto done;
    }
    if ((st = check_siblings(siblings, err)) != MT_OK)
        goto done;
    memcpy(list->sha, sha, 41);
    for (size_t i = 0; i < sizeof weight_files / sizeof *weight_files && !list->weights[0]; i++)
        if (listed(siblings, weight_files[i]))
            snprintf(list->weights, sizeof list->weights, "%s", weight_files[i]);
    if (!listed(siblings, "config.json") || !list->weights[0]) {
        st = mt_err_set(err, MT_ERR_UNSUPPORTED, "the repository holds no form mtserve loads (it needs config.json "
                        "and model.safetensors or pytorch_model.bin)");
        goto done;
    }
    for (size_t i = 0; i < sizeof form_files / sizeof *form_files; i++)
        if (listed(siblings, form_files[i]))
            snprintf(list->files[list->n_files++], sizeof list->files[0], "%s", form_files[i]);
    snprintf(list->files[list->n_files++], sizeof list->files[0], "%s", list->weights);
done:
    json_decref(root);
    return st;
}

int hub_parse_etag(const char *value, size_t len, char *out, size_t cap)
{
    if (len >= 2 && value[0] == 'W' && value[1] == '/')
        value += 2, len -= 2;
    if (len >= 2 && value[0] == '"' && value[len - 1] == '"')
        value++, len -= 2;
    if ((len != 40 && len != 64) || len >= cap)
        return 0;
    memcpy(out, value, len);
    out[len] = 0;
    return hub_is_hex(out, len);
}

int hub_header_value(const char *line, size_t len, const char *name, char *out, size_t cap)
{
    size_t nlen = strlen(name);
    if (len <= nlen || line[nlen] != ':' || strncasecmp(line, name, nlen) != 0 || cap == 0)
        return 0;
    const char *v = line + nlen + 1, *end = line + len;
    while (v < end && (*v == ' ' || *v == '\t'))
        v++;
    while (end > v && (end[-1] == '\r' || end[-1] == '\n' || end[-1] == ' ' || end[-1] == '\t'))
        end--;
    size_t n = (size_t)(end - v);
    if (n >= cap)           /* a value cut short would name another etag or URL: none */
        return 0;
    memcpy(out, v, n);
    out[n] = 0;
    return 1;
}

void hub_error_message(const char *body, size_t len, char *out, size_t cap)
{
    if (cap)
        out[0] = 0;
    json_t *root = json_loadb(body, len, 0, NULL);
    const char *msg = json_string_value(json_object_get(root, "error"));
    if (msg && cap)
        snprintf(out, cap, "%s", msg);
    json_decref(root);
}
