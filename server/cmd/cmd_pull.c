/* mtserve pull org/name[@rev]: a model from the Hugging Face Hub into its cache; and
 * the names among serve's --model given as org/name: those in the cache resolved before
 * anything loads, the others downloaded once the server listens (service/admin.c).
 *
 * pull and translate's --model org/name print what they download on stderr: a progress
 * bar redrawn in place on a terminal, one line per file otherwise (a log keeps no carriage
 * returns); serve's downloads show in /health. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "commands.h"
#include "common/options.h"
#include "hub/hub.h"
#include "util/clock.h"

typedef struct {
    int    tty;
    char   file[64];
    double last;                /* when the bar was last drawn */
} progress_state;

static void on_progress(void *ud, const char *file, uint64_t done, uint64_t total)
{
    progress_state *p = ud;
    int new_file = strcmp(p->file, file) != 0;
    if (new_file)
        snprintf(p->file, sizeof p->file, "%s", file);
    double now = mt_now_s();
    int finished = total > 0 && done >= total;
    if (!p->tty) {
        if (finished)
            fprintf(stderr, "mtserve: downloaded %s (%llu bytes)\n", file, (unsigned long long)total);
        return;
    }
    if (!new_file && !finished && now - p->last < 0.1)
        return;
    p->last = now;
    int width = 30, fill = total ? (int)((double)done / (double)total * width) : 0;
    char bar[64];
    for (int i = 0; i < width; i++)
        bar[i] = i < fill ? '#' : '.';
    bar[width] = 0;
    fprintf(stderr, "\r%-24.24s [%s] %7.1f / %.1f MB", file, bar, (double)done / 1e6, (double)total / 1e6);
    if (finished)
        fputc('\n', stderr);
}

static progress_state progress;

static void config(hub_config *cfg)
{
    hub_config_from_env(cfg);
    progress.tty = isatty(2);
    cfg->progress = on_progress;
    cfg->progress_ud = &progress;
}

int mt_hub_resolve_dir(const char *name, char *dir, size_t cap)
{
    hub_ref ref;
    if (!hub_ref_parse(name, &ref))
        return 0;
    hub_config cfg;
    config(&cfg);
    if (!cfg.cache[0]) {
        fprintf(stderr, "mtserve: no Hugging Face cache (set HF_HUB_CACHE, HF_HOME or HOME)\n");
        return -1;
    }
    char snap[1024];
    mt_err err = {0};
    if (hub_model_dir(&cfg, &ref, snap, sizeof snap, &err) != MT_OK) {
        fprintf(stderr, "mtserve: model '%s': %s (and no directory '%s' exists)\n", name, err.msg, name);
        return -1;
    }
    if (snprintf(dir, cap, "%s", snap) >= (int)cap) {
        fprintf(stderr, "mtserve: model '%s': the path %s is too long\n", name, snap);
        return -1;
    }
    return 1;
}

/* 1 when name is a hub name whose snapshot is in the cache (*dir), 0 when it is
 * not there yet (downloaded later), -1 printed (offline, or no cache) */
static int cached_dir(const char *name, char *dir, size_t cap)
{
    hub_ref ref;
    hub_config cfg;
    char snap[1024];
    mt_err err = {0};
    hub_ref_parse(name, &ref);
    hub_config_from_env(&cfg);
    if (!cfg.cache[0]) {
        fprintf(stderr, "mtserve: no Hugging Face cache (set HF_HUB_CACHE, HF_HOME or HOME)\n");
        return -1;
    }
    if (hub_resolve_cached(cfg.cache, &ref, snap, sizeof snap, &err) != MT_OK) {
        if (!cfg.offline)
            return 0;
        fprintf(stderr, "mtserve: model '%s': %s (HF_HUB_OFFLINE=1: nothing is downloaded; and no directory "
                "'%s' exists)\n", name, err.msg, name);
        return -1;
    }
    if (snprintf(dir, cap, "%s", snap) >= (int)cap) {
        fprintf(stderr, "mtserve: model '%s': the path %s is too long\n", name, snap);
        return -1;
    }
    return 1;
}

int mt_hub_resolve_models(srv_options *o, srv_model_spec later[SRV_MAX_MODELS], int *n_later)
{
    *n_later = 0;
    if (!o->models_given)       /* the built-in models/en-fr is a path, installed or not */
        return 0;
    int kept = 0;
    for (int i = 0; i < o->n_models; i++) {
        srv_model_spec *m = &o->models[i];
        char snap[sizeof m->dir];
        hub_ref ref;
        int rc = hub_ref_parse(m->dir, &ref) ? cached_dir(m->dir, snap, sizeof snap) : 2;
        if (rc < 0)
            return -1;
        if (rc == 1) {
            fprintf(stderr, "mtserve: model %s is %s in %s\n", m->id, m->dir, snap);
            memcpy(m->dir, snap, sizeof snap);
        }
        if (rc == 0)
            later[(*n_later)++] = *m;
        else
            o->models[kept++] = *m;
    }
    o->n_models = kept;
    return 0;
}

/* "SRC-TGT" (an argument of --pair) -> its repositories; 0 with the reason printed */
static int pair_repos(const char *who, const char *pair, char repos[2][200])
{
    const char *dash = strchr(pair, '-');
    char src[16], tgt[16];
    if (!dash || dash == pair || !dash[1] || (size_t)(dash - pair) >= sizeof src || strlen(dash + 1) >= sizeof tgt) {
        fprintf(stderr, "%s: --pair '%s' is not SRC-TGT (\"en-de\")\n", who, pair);
        return 0;
    }
    snprintf(src, sizeof src, "%.*s", (int)(dash - pair), pair);
    snprintf(tgt, sizeof tgt, "%s", dash + 1);
    int n = hub_pair_repos(src, tgt, repos);
    if (n == 0)
        fprintf(stderr, "%s: no published OPUS-MT repository translates %s into %s, directly or through English "
                "(the %d pairs of server/hub/opus_pairs.tsv); name one with --model org/name\n", who, src, tgt,
                hub_pair_count());
    else if (n == 2)
        fprintf(stderr, "%s: %s has no OPUS-MT repository of its own: through English, %s then %s\n", who, pair,
                repos[0], repos[1]);
    return n;
}

/* the value of "--pair X" or "--pair=X" at argv[*i] (advancing *i past it), else NULL */
static const char *pair_arg(int argc, char **argv, int *i)
{
    if (strncmp(argv[*i], "--pair=", 7) == 0)
        return argv[*i] + 7;
    if (strcmp(argv[*i], "--pair") == 0 && *i + 1 < argc)
        return argv[++*i];
    return NULL;
}

/* serve's argv with each --pair rewritten: the process's for its whole life */
static struct {
    char **argv;
    char   names[2 * 32][200];      /* the repositories named, at most two a --pair */
} expanded;

int mt_hub_expand_pairs(int *argc, char ***argv)
{
    char **in = *argv;
    int n = *argc, out_n = 0, n_names = 0;
    char **out = calloc((size_t)(2 * n + 1), sizeof *out);     /* a --pair becomes at most two --model */
    if (!out) {
        fprintf(stderr, "mtserve: out of memory\n");
        return -1;
    }
    for (int i = 0; i < n; i++) {
        const char *pair = i > 0 ? pair_arg(n, in, &i) : NULL;
        if (!pair) {
            if (i > 0 && strcmp(in[i], "--pair") == 0) {
                fprintf(stderr, "mtserve serve: --pair needs SRC-TGT\n");
                goto fail;
            }
            out[out_n++] = in[i];
            continue;
        }
        char repos[2][200];
        int k = pair_repos("mtserve serve", pair, repos);
        if (k == 0)
            goto fail;
        for (int j = 0; j < k; j++) {
            int dup = 0;                /* two pairs through the same leg load it once */
            for (int m = 0; m < n_names; m++)
                dup |= strcmp(expanded.names[m], repos[j]) == 0;
            if (dup)
                continue;
            if (n_names == (int)(sizeof expanded.names / sizeof *expanded.names)) {
                fprintf(stderr, "mtserve serve: too many --pair\n");
                goto fail;
            }
            memcpy(expanded.names[n_names], repos[j], sizeof repos[j]);
            out[out_n++] = "--model";
            out[out_n++] = expanded.names[n_names++];
        }
    }
    expanded.argv = out;
    *argc = out_n;
    *argv = out;
    return 0;
fail:
    free(out);
    return -1;
}

static int pull_one(const hub_config *cfg, const char *name)
{
    hub_ref ref;
    if (!hub_ref_parse(name, &ref)) {
        fprintf(stderr, "mtserve pull: '%s' is not a hub name org/name[@revision]\n", name);
        return 2;
    }
    char snap[1024];
    mt_err err = {0};
    mt_status st = cfg->offline ? hub_resolve_cached(cfg->cache, &ref, snap, sizeof snap, &err)
                                : hub_pull(cfg, &ref, snap, sizeof snap, &err);
    if (st != MT_OK) {
        fprintf(stderr, "mtserve pull: %s%s\n", err.msg, cfg->offline ? " (HF_HUB_OFFLINE=1)" : "");
        return 1;
    }
    printf("%s\n", snap);
    return 0;
}

int mt_cmd_pull(int argc, char **argv)
{
    int i = 1;
    const char *pair = argc > 1 ? pair_arg(argc, argv, &i) : NULL;
    if (argc < 2 || (pair ? i + 1 != argc : argc != 2) || strcmp(argv[1], "--help") == 0 ||
        strcmp(argv[1], "-h") == 0) {
        int help = argc == 2 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0);
        fprintf(help ? stdout : stderr,
                "usage: mtserve pull org/name[@revision]\n"
                "       mtserve pull --pair SRC-TGT\n"
                "Downloads a model's config, tokenizer and weights from the Hugging Face Hub into its cache\n"
                "($HF_HUB_CACHE, else $HF_HOME/hub, else ~/.cache/huggingface/hub), each file checked against\n"
                "the size and sha256 the hub declares; prints the snapshot directory.\n"
                "--pair: the published OPUS-MT repository of that language pair (Helsinki-NLP/opus-mt-SRC-TGT),\n"
                "or both legs through English when there is none (server/hub/opus_pairs.tsv).\n"
                "environment: HF_ENDPOINT (a mirror), HF_TOKEN (gated or private repositories), HF_HUB_OFFLINE=1\n");
        return help ? 0 : 2;
    }
    hub_config cfg;
    config(&cfg);
    if (!cfg.cache[0]) {
        fprintf(stderr, "mtserve pull: no Hugging Face cache (set HF_HUB_CACHE, HF_HOME or HOME)\n");
        return 1;
    }
    if (!pair)
        return pull_one(&cfg, argv[1]);
    char repos[2][200];
    int n = pair_repos("mtserve pull", pair, repos);
    if (n == 0)
        return 1;
    for (int k = 0; k < n; k++) {
        int rc = pull_one(&cfg, repos[k]);
        if (rc != 0)
            return rc;
    }
    return 0;
}
