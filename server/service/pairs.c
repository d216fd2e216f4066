/* pairs: models for language pairs, multilingual target tokens, pivots (pairs.h). */
#include "pairs.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "languages.h"

/* ">>xxx<<" with 1..15 code characters: the code, else NULL. */
static int target_token(const char *piece, char code[16])
{
    size_t n = piece ? strlen(piece) : 0;
    if (n < 5 || n > 19 || strncmp(piece, ">>", 2) != 0 || strcmp(piece + n - 2, "<<") != 0)
        return 0;
    for (size_t i = 2; i < n - 2; i++) {
        char c = piece[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-'))
            return 0;
    }
    memcpy(code, piece + 2, n - 4);
    code[n - 4] = '\0';
    return 1;
}

int srv_model_find_targets(srv_model *m)
{
    int V = mt_tokenizer_vocab_size(m->tok), n = 0;
    char code[16];
    for (int id = 0; id < V; id++)
        n += target_token(mt_tokenizer_piece(m->tok, id), code);
    if (!n)
        return 0;
    m->targets = calloc((size_t)n, sizeof *m->targets);
    m->target_ids = calloc((size_t)n, sizeof *m->target_ids);
    if (!m->targets || !m->target_ids)
        return -1;
    for (int id = 0; id < V; id++)
        if (target_token(mt_tokenizer_piece(m->tok, id), code)) {
            memcpy(m->targets[m->n_targets], code, sizeof code);
            m->target_ids[m->n_targets++] = id;
        }
    return 0;
}

void srv_model_free_targets(srv_model *m)
{
    free(m->targets);
    free(m->target_ids);
    m->targets = NULL;
    m->target_ids = NULL;
    m->n_targets = 0;
}

int srv_model_targets_lang(const srv_model *m, const char *lang, int32_t *lang_id)
{
    *lang_id = -1;
    if (!m->n_targets)
        return m->info->target_lang[0] && srv_lang_same(m->info->target_lang, lang);
    for (int i = 0; i < m->n_targets; i++)
        if (srv_lang_same(m->targets[i], lang)) {
            *lang_id = m->target_ids[i];
            return 1;
        }
    return 0;
}

int srv_model_sources_lang(const srv_model *m, const char *lang)
{
    if (!m->info->source_lang[0])
        return 0;
    return !strcmp(lang, "auto") || srv_lang_same(m->info->source_lang, lang);
}

/* "a, b, c" (at most cap bytes). */
static void list_targets(const srv_model *m, char *buf, size_t cap)
{
    size_t at = 0;
    buf[0] = '\0';
    for (int i = 0; i < m->n_targets && at + 20 < cap; i++)
        at += (size_t)snprintf(buf + at, cap - at, "%s%s", i ? ", " : "", m->targets[i]);
}

int srv_path_for_model(srv_model *m, const char *target, srv_path *out, srv_response *resp)
{
    *out = (srv_path){ .n_legs = 1, .model = { m, NULL }, .lang_id = { -1, -1 } };
    if (!m->n_targets)
        return 0;                               /* one target: "target" needs no token */
    char list[1024];
    list_targets(m, list, sizeof list);
    if (!target)
        return srv_fail(resp, SRV_E_INVALID_FIELD, "model '%s' is multilingual: name the target language "
                        "(\"target\": one of %s)", m->id, list);
    if (!srv_model_targets_lang(m, target, &out->lang_id[0]))
        return srv_fail(resp, SRV_E_UNSUPPORTED_LANGUAGE, "model '%s' cannot translate into '%s'; its target "
                        "languages are %s", m->id, target, list);
    return 0;
}

/* The first model from source into target (lang_id: its token), or NULL. */
static srv_model *direct(srv_server *srv, const char *source, const char *target, int32_t *lang_id)
{
    for (int i = 0; i < srv->n_models; i++)
        if (srv_model_sources_lang(&srv->models[i], source) &&
            srv_model_targets_lang(&srv->models[i], target, lang_id))
            return &srv->models[i];
    return NULL;
}

/* Leg 1 from source into a language X that some model translates into target. */
static int pivot(srv_server *srv, const char *source, const char *target, srv_path *out)
{
    for (int b = 0; b < srv->n_models; b++) {
        srv_model *mb = &srv->models[b];
        const char *x = mb->info->source_lang;
        int32_t id_b, id_a;
        if (!x[0] || srv_lang_same(x, source) || !srv_model_targets_lang(mb, target, &id_b))
            continue;
        srv_model *ma = direct(srv, source, x, &id_a);
        if (ma && ma != mb) {
            *out = (srv_path){ .n_legs = 2, .model = { ma, mb }, .lang_id = { id_a, id_b } };
            snprintf(out->pivot, sizeof out->pivot, "%s", x);
            return 1;
        }
    }
    return 0;
}

int srv_path_for_pair(srv_server *srv, const char *source, const char *target, srv_path *out,
                      srv_response *resp)
{
    *out = (srv_path){ .n_legs = 1, .lang_id = { -1, -1 } };
    if ((out->model[0] = direct(srv, source, target, &out->lang_id[0])))
        return 0;
    if (strcmp(source, "auto") != 0 && pivot(srv, source, target, out))
        return 0;
    int source_known = !strcmp(source, "auto");
    for (int i = 0; i < srv->n_models; i++)
        source_known |= srv_model_sources_lang(&srv->models[i], source);
    if (!source_known)
        return srv_fail(resp, SRV_E_UNSUPPORTED_LANGUAGE, "%s is not supported", source);
    return srv_fail(resp, SRV_E_UNSUPPORTED_LANGUAGE, "%s (%s) is not available as a target language from %s (%s)",
                    srv_lang_name(target), target, srv_lang_name(source), source);
}
