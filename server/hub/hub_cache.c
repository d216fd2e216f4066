/* hub_cache: names and the cache layout, no network (see hub.h). */
#include "hub.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static int is_dir(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

/* the characters of a hub repository's org and name: letters, digits, '-', '_', '.';
 * neither part "." nor ".." (they would walk the cache) */
static int valid_part(const char *s, size_t n)
{
    if (n == 0 || n > 96 || (n == 1 && s[0] == '.') || (n == 2 && s[0] == '.' && s[1] == '.'))
        return 0;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '-' || c == '_' || c == '.'))
            return 0;
    }
    return 1;
}

/* a revision: a branch, a tag or a commit; "refs/pr/1" names a file under refs/, so
 * it must be a safe relative name too */
static int valid_rev(const char *s)
{
    if (!hub_safe_name(s))
        return 0;
    for (; *s; s++)
        if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9') ||
              *s == '-' || *s == '_' || *s == '.' || *s == '/'))
            return 0;
    return 1;
}

int hub_ref_parse(const char *s, hub_ref *ref)
{
    return s && !is_dir(s) && hub_ref_syntax(s, ref);
}

int hub_ref_syntax(const char *s, hub_ref *ref)
{
    if (!s)
        return 0;
    const char *slash = strchr(s, '/');
    if (!slash || slash == s)
        return 0;
    const char *at = strchr(slash, '@');
    const char *name_end = at ? at : s + strlen(s);
    if (memchr(slash + 1, '/', (size_t)(name_end - slash - 1)))
        return 0;
    if (!valid_part(s, (size_t)(slash - s)) || !valid_part(slash + 1, (size_t)(name_end - slash - 1)))
        return 0;
    size_t rlen = (size_t)(name_end - s);
    const char *rev = at ? at + 1 : "main";
    if (rlen >= sizeof ref->repo || strlen(rev) >= sizeof ref->rev || !valid_rev(rev))
        return 0;
    memcpy(ref->repo, s, rlen);
    ref->repo[rlen] = 0;
    snprintf(ref->rev, sizeof ref->rev, "%s", rev);
    return 1;
}

int hub_safe_name(const char *name)
{
    if (!name || !name[0] || name[0] == '/')
        return 0;
    const char *seg = name;
    for (const char *p = name;; p++) {
        if (*p == '/' || *p == 0) {
            size_t n = (size_t)(p - seg);
            if (n == 0 || (n == 1 && seg[0] == '.') || (n == 2 && seg[0] == '.' && seg[1] == '.'))
                return 0;
            if (*p == 0)
                return 1;
            seg = p + 1;
        } else if (*p == '\\' || (unsigned char)*p < 0x20 || *p == 0x7f || *p == ':') {
            return 0;
        }
    }
}

int hub_is_hex(const char *s, size_t n)
{
    if (strlen(s) != n)
        return 0;
    for (size_t i = 0; i < n; i++)
        if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
            return 0;
    return 1;
}

int hub_cache_dir(char *out, size_t cap)
{
    const char *v = getenv("HF_HUB_CACHE");
    if (v && v[0])
        return snprintf(out, cap, "%s", v) < (int)cap ? 0 : -1;
    v = getenv("HF_HOME");
    if (v && v[0])
        return snprintf(out, cap, "%s/hub", v) < (int)cap ? 0 : -1;
    v = getenv("XDG_CACHE_HOME");       /* huggingface_hub's default honours it too */
    if (v && v[0])
        return snprintf(out, cap, "%s/huggingface/hub", v) < (int)cap ? 0 : -1;
    v = getenv("HOME");
    if (!v || !v[0])
        return -1;
    return snprintf(out, cap, "%s/.cache/huggingface/hub", v) < (int)cap ? 0 : -1;
}

void hub_repo_dir(const char *cache, const hub_ref *ref, char *out, size_t cap)
{
    const char *slash = strchr(ref->repo, '/');
    snprintf(out, cap, "%s/models--%.*s--%s", cache, (int)(slash - ref->repo), ref->repo, slash + 1);
}

int hub_read_ref(const char *path, char commit[41])
{
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    char buf[64] = {0};
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == '\r' || buf[n - 1] == ' '))
        buf[--n] = 0;
    if (!hub_is_hex(buf, 40))
        return -1;
    memcpy(commit, buf, 41);
    return 0;
}

mt_status hub_resolve_cached(const char *cache, const hub_ref *ref, char *snap, size_t cap, mt_err *err)
{
    char repo_dir[1400], path[1700], commit[41];
    hub_repo_dir(cache, ref, repo_dir, sizeof repo_dir);
    if (hub_is_hex(ref->rev, 40)) {
        memcpy(commit, ref->rev, 41);
    } else {
        snprintf(path, sizeof path, "%s/refs/%s", repo_dir, ref->rev);
        if (hub_read_ref(path, commit) != 0)
            return mt_err_set(err, MT_ERR_IO, "%s@%s is not in the Hugging Face cache %s", ref->repo, ref->rev,
                              cache);
    }
    /* a snapshot another client filled only in part (a config read alone) is not the model */
    static const char *const needed[][2] = { { "config.json", NULL }, { "model.safetensors", "pytorch_model.bin" } };
    for (int i = 0; i < 2; i++) {
        int found = 0;
        for (int k = 0; k < 2 && needed[i][k]; k++) {
            struct stat st;
            snprintf(path, sizeof path, "%s/snapshots/%s/%s", repo_dir, commit, needed[i][k]);
            found |= stat(path, &st) == 0 && S_ISREG(st.st_mode);
        }
        if (!found)
            return mt_err_set(err, MT_ERR_IO, "%s@%s: snapshot %s in the cache %s has no %s", ref->repo, ref->rev,
                              commit, cache, i == 0 ? "config.json" : "model.safetensors or pytorch_model.bin");
    }
    if (snprintf(snap, cap, "%s/snapshots/%s", repo_dir, commit) >= (int)cap)
        return mt_err_set(err, MT_ERR_INPUT, "the cache path %s is too long", cache);
    return MT_OK;
}
