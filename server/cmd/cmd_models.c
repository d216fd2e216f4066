/* mtserve models: what the Hugging Face cache holds and whether mtserve loads it;
 * mtserve rm org/name[@rev]: removed from the cache as huggingface_hub's delete does.
 *
 * "Loads" is the loader's own verdict without the weights: mt_model_load_card reads
 * and checks the config, the languages and the tokenizer and finds the weights file,
 * as a start would (engine/mt.h), so a snapshot listed as loadable is one serve takes. */
#include <jansson.h>
#include <stdio.h>
#include <string.h>

#include "commands.h"
#include "hub/hub.h"
#include "mt.h"

typedef struct {
    int  ok;
    char what[512];             /* ok: "marian en-de, safetensors"; else why not */
} verdict;

static void judge(const hub_snapshot *s, verdict *v)
{
    mt_model *card = NULL;
    mt_err err = {0};
    if (s->missing > 0) {
        v->ok = 0;
        snprintf(v->what, sizeof v->what, "%d of its files link to a blob that is gone", s->missing);
        return;
    }
    if (mt_model_load_card(s->dir, &card, &err) != MT_OK) {
        v->ok = 0;
        snprintf(v->what, sizeof v->what, "%s", err.msg);
        return;
    }
    const mt_model_info *in = mt_model_get_info(card);
    v->ok = 1;
    if (in->source_lang[0] && in->target_lang[0])
        snprintf(v->what, sizeof v->what, "%s %s-%s, %s", in->architecture, in->source_lang, in->target_lang,
                 in->format);
    else
        snprintf(v->what, sizeof v->what, "%s, %s", in->architecture, in->format);
    mt_model_free(card);
}

static void human(uint64_t bytes, char *out, size_t cap)
{
    if (bytes >= 1000000000ull)
        snprintf(out, cap, "%.1f GB", (double)bytes / 1e9);
    else if (bytes >= 1000000)
        snprintf(out, cap, "%.1f MB", (double)bytes / 1e6);
    else
        snprintf(out, cap, "%.1f kB", (double)bytes / 1e3);
}

static void print_text(const char *cache, const hub_cached_repo *repos, int n)
{
    uint64_t total = 0;
    char size[32];
    printf("Hugging Face cache: %s\n", cache);
    for (int i = 0; i < n; i++) {
        const hub_cached_repo *r = &repos[i];
        total += r->size;
        human(r->size, size, sizeof size);
        printf("%s  %s%s%s\n", r->repo, size, r->problem[0] ? "  " : "", r->problem);
        if (r->incomplete) {
            human(r->incomplete, size, sizeof size);
            printf("  (%s of an unfinished download: `mtserve pull %s` resumes it)\n", size, r->repo);
        }
        for (int k = 0; k < r->n_snapshots; k++) {
            const hub_snapshot *s = &r->snapshots[k];
            verdict v;
            judge(s, &v);
            human(s->size, size, sizeof size);
            printf("  %.12s  %-12s %3d files %10s  %s: %s\n", s->commit, s->refs[0] ? s->refs : "(no ref)", s->n_files,
                   size, v.ok ? "loads" : "cannot load", v.what);
        }
    }
    human(total, size, sizeof size);
    printf("%d repositor%s, %s\n", n, n == 1 ? "y" : "ies", size);
}

static int print_json(const char *cache, const hub_cached_repo *repos, int n)
{
    json_t *root = json_pack("{s:s, s:[]}", "cache", cache, "repos");
    json_t *list = json_object_get(root, "repos");
    for (int i = 0; i < n; i++) {
        const hub_cached_repo *r = &repos[i];
        json_t *revs = json_array();
        for (int k = 0; k < r->n_snapshots; k++) {
            const hub_snapshot *s = &r->snapshots[k];
            verdict v;
            judge(s, &v);
            json_array_append_new(revs, json_pack("{s:s, s:s, s:i, s:I, s:s, s:b, s:s}", "commit", s->commit, "refs",
                                                  s->refs, "files", s->n_files, "size", (json_int_t)s->size, "path",
                                                  s->dir, "loads", v.ok, v.ok ? "model" : "reason", v.what));
        }
        json_array_append_new(list, json_pack("{s:s, s:s, s:I, s:I, s:s, s:o}", "repo", r->repo, "path", r->dir, "size",
                                              (json_int_t)r->size, "incomplete", (json_int_t)r->incomplete, "problem",
                                              r->problem, "revisions", revs));
    }
    int rc = json_dumpf(root, stdout, JSON_INDENT(2)) == 0 ? 0 : 1;
    printf("\n");
    json_decref(root);
    return rc;
}

int mt_cmd_models(int argc, char **argv)
{
    int as_json = argc == 2 && strcmp(argv[1], "--json") == 0;
    if (argc > 2 || (argc == 2 && !as_json)) {
        int help = strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0;
        fprintf(help ? stdout : stderr,
                "usage: mtserve models [--json]\n"
                "Lists the models of the Hugging Face cache ($HF_HUB_CACHE, else $HF_HOME/hub, else\n"
                "~/.cache/huggingface/hub): each repository's revisions (snapshot, refs, files), its size on\n"
                "disk (a blob linked twice counted once) and whether mtserve loads it, or why not.\n");
        return help ? 0 : 2;
    }
    char cache[1024];
    if (hub_cache_dir(cache, sizeof cache) != 0) {
        fprintf(stderr, "mtserve models: no Hugging Face cache (set HF_HUB_CACHE, HF_HOME or HOME)\n");
        return 1;
    }
    hub_cached_repo *repos = NULL;
    int n = 0;
    mt_err err = {0};
    if (hub_scan(cache, &repos, &n, &err) != MT_OK) {
        fprintf(stderr, "mtserve models: %s\n", err.msg);
        return 1;
    }
    int rc = 0;
    if (as_json)
        rc = print_json(cache, repos, n);
    else
        print_text(cache, repos, n);
    hub_scan_free(repos, n);
    return rc;
}

int mt_cmd_rm(int argc, char **argv)
{
    if (argc < 2 || strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
        fprintf(argc < 2 ? stderr : stdout,
                "usage: mtserve rm org/name[@revision]...\n"
                "Removes from the Hugging Face cache: org/name, the whole repository; org/name@rev, that\n"
                "revision's snapshot, the refs naming it and the blobs no other snapshot links (the\n"
                "repository goes with its last snapshot), as huggingface_hub's delete does.\n");
        return argc < 2 ? 2 : 0;
    }
    char cache[1024];
    if (hub_cache_dir(cache, sizeof cache) != 0) {
        fprintf(stderr, "mtserve rm: no Hugging Face cache (set HF_HUB_CACHE, HF_HOME or HOME)\n");
        return 1;
    }
    int rc = 0;
    for (int i = 1; i < argc; i++) {
        hub_ref ref;
        if (!hub_ref_syntax(argv[i], &ref)) {       /* a name only: never a path */
            fprintf(stderr, "mtserve rm: '%s' is not a hub name org/name[@revision]\n", argv[i]);
            rc = 2;
            continue;
        }
        hub_removed out;
        mt_err err = {0};
        if (hub_remove(cache, &ref, strchr(argv[i], '@') == NULL, &out, &err) != MT_OK) {
            fprintf(stderr, "mtserve rm: %s\n", err.msg);
            rc = rc ? rc : 1;
            continue;
        }
        char size[32];
        human(out.bytes, size, sizeof size);
        printf("removed %s: %d snapshot%s, %d ref%s, %d blob%s (%s)%s\n", argv[i], out.snapshots,
               out.snapshots == 1 ? "" : "s", out.refs, out.refs == 1 ? "" : "s", out.blobs, out.blobs == 1 ? "" : "s",
               size, out.whole ? ", the repository's folder" : "");
    }
    return rc;
}
