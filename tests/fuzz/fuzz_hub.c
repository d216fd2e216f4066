/* fuzz_hub: what a Hugging Face hub answers, read by server/hub (hub_parse.c,
 * hub_cache.c's name checks) on arbitrary bytes.
 *
 * The input is three parts cut at NULs: the JSON of /api/models/{repo}/revision/{rev},
 * one header line, a name (a file name from the hub, or an org/name[@rev]).  Checked:
 *   - a file list that parses has a 40-hex commit, config.json, one weights file
 *     (model.safetensors or pytorch_model.bin, listed last), no name twice, every
 *     name one of the form's and safe; a refusal is FORMAT or UNSUPPORTED with a message;
 *   - an etag that parses is 40 or 64 lowercase hex digits;
 *   - a header value is NUL-terminated within its buffer and has no CR/LF at its ends;
 *   - hub_safe_name agrees with a reference written differently (strtok over a copy);
 *   - a name hub_ref_parse accepts has exactly one '/' in its repo, a safe revision, and
 *     its cache folder models--org--name is one path component. */
#include "fuzz_common.h"

#include <string.h>

#include "hub/hub.h"

static const char *const allowed[] = {
    "config.json", "generation_config.json", "source.spm", "target.spm", "vocab.json", "tokenizer_config.json",
    "special_tokens_map.json", "tokenizer.json", "model.safetensors", "pytorch_model.bin",
};

static int is_allowed(const char *f)
{
    for (size_t i = 0; i < sizeof allowed / sizeof *allowed; i++)
        if (strcmp(f, allowed[i]) == 0)
            return 1;
    return 0;
}

static int ref_safe(const char *name)
{
    size_t n = strlen(name);
    if (n == 0 || name[0] == '/' || name[n - 1] == '/' || strstr(name, "//"))
        return 0;
    for (size_t i = 0; i < n; i++)
        if (name[i] == '\\' || name[i] == ':' || (unsigned char)name[i] < 0x20 || name[i] == 0x7f)
            return 0;
    char *copy = strdup(name), *save = NULL;
    int ok = 1;
    for (char *seg = strtok_r(copy, "/", &save); seg; seg = strtok_r(NULL, "/", &save))
        if (strcmp(seg, ".") == 0 || strcmp(seg, "..") == 0)
            ok = 0;
    free(copy);
    return ok;
}

static void check_list(const char *json, size_t len)
{
    hub_file_list list;
    mt_err err = {0};
    mt_status st = hub_parse_file_list(json, len, &list, &err);
    if (st != MT_OK) {
        FUZZ_CHECK(st == MT_ERR_FORMAT || st == MT_ERR_UNSUPPORTED);
        FUZZ_CHECK(err.msg[0]);
        return;
    }
    FUZZ_CHECK(hub_is_hex(list.sha, 40));
    FUZZ_CHECK(list.n_files >= 2 && list.n_files <= HUB_MAX_FILES);
    FUZZ_CHECK(strcmp(list.files[list.n_files - 1], list.weights) == 0);
    FUZZ_CHECK(!strcmp(list.weights, "model.safetensors") || !strcmp(list.weights, "pytorch_model.bin"));
    int config = 0;
    for (int i = 0; i < list.n_files; i++) {
        FUZZ_CHECK(is_allowed(list.files[i]) && hub_safe_name(list.files[i]));
        config |= strcmp(list.files[i], "config.json") == 0;
        for (int j = 0; j < i; j++)
            FUZZ_CHECK(strcmp(list.files[i], list.files[j]) != 0);
    }
    FUZZ_CHECK(config);
}

static void check_header(const char *line, size_t len)
{
    char v[80];
    if (hub_header_value(line, len, "X-Linked-Etag", v, sizeof v)) {
        size_t n = strlen(v);
        FUZZ_CHECK(n < sizeof v);
        FUZZ_CHECK(n == 0 || (v[0] != ' ' && v[n - 1] != '\r' && v[n - 1] != '\n'));
        char etag[80];
        if (hub_parse_etag(v, n, etag, sizeof etag))
            FUZZ_CHECK(hub_is_hex(etag, 40) || hub_is_hex(etag, 64));
    }
    char etag[80];
    if (hub_parse_etag(line, len, etag, sizeof etag))
        FUZZ_CHECK(hub_is_hex(etag, 40) || hub_is_hex(etag, 64));
    char msg[64];
    hub_error_message(line, len, msg, sizeof msg);
    FUZZ_CHECK(strlen(msg) < sizeof msg);
}

static void check_name(const char *name)
{
    FUZZ_CHECK(hub_safe_name(name) == ref_safe(name));
    hub_ref ref;
    if (hub_ref_parse(name, &ref)) {
        const char *slash = strchr(ref.repo, '/');
        FUZZ_CHECK(slash && !strchr(slash + 1, '/'));
        FUZZ_CHECK(hub_safe_name(ref.rev));
        /* its cache folder is one path component under the cache */
        char dir[512];
        hub_repo_dir("C", &ref, dir, sizeof dir);
        FUZZ_CHECK(strncmp(dir, "C/models--", 10) == 0 && !strchr(dir + 2, '/'));
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *buf = malloc(size + 1);
    if (!buf)
        return 0;
    memcpy(buf, data, size);
    buf[size] = 0;
    const char *part[3] = { buf, "", "" };
    size_t plen[3] = { strlen(buf), 0, 0 };
    for (int i = 1; i < 3; i++) {
        const char *prev_end = part[i - 1] + plen[i - 1];
        if (prev_end >= buf + size)
            break;
        part[i] = prev_end + 1;
        plen[i] = strlen(part[i]);
    }
    check_list(part[0], plen[0]);
    check_header(part[1], plen[1]);
    check_name(part[2]);
    free(buf);
    return 0;
}
