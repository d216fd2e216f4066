/* web: the demo page (web/index.html, its modules, style.css, data) from --web DIR.
 *   GET /          -> DIR/index.html
 *   GET /web/      -> DIR/index.html
 *   GET /web/NAME  -> DIR/NAME, for plain names with a known type only
 * index.html names its files by absolute /web/ paths, so the page works at both.
 * Names are checked before any file is opened: no '/', no leading '.', so no
 * request can leave DIR.  Everything else is 404. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "handlers.h"
#include "service/server.h"

#define WEB_MAX_FILE (4 << 20)

static const char *type_of(const char *name)
{
    const char *dot = strrchr(name, '.');
    if (!dot)
        return NULL;
    if (strcmp(dot, ".html") == 0) return "text/html; charset=utf-8";
    if (strcmp(dot, ".js") == 0)   return "text/javascript; charset=utf-8";
    if (strcmp(dot, ".css") == 0)  return "text/css; charset=utf-8";
    if (strcmp(dot, ".json") == 0) return "application/json";     /* the page's data (examples.json) */
    return NULL;
}

static int plain_name(const char *name)
{
    if (!name[0] || name[0] == '.')
        return 0;
    for (const char *p = name; *p; p++)
        if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
              *p == '_' || *p == '-' || *p == '.'))
            return 0;
    return 1;
}

/* Reads DIR/name into resp, sized by the file itself; 0, or -1 when it cannot. */
static int send_file(const char *dir, const char *name, srv_response *resp)
{
    char path[1400];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "rb");
    struct stat st;
    if (!f)
        return -1;
    if (fstat(fileno(f), &st) != 0 || !S_ISREG(st.st_mode) || st.st_size > WEB_MAX_FILE) {
        fclose(f);
        return -1;
    }
    size_t size = (size_t)st.st_size;
    char *buf = malloc(size ? size : 1);
    size_t n = buf ? fread(buf, 1, size, f) : 0;
    fclose(f);
    if (!buf || n != size) {
        free(buf);
        return -1;
    }
    resp->status = 200;
    resp->text = buf;
    resp->text_len = n;
    resp->content_type = type_of(name);
    return 0;
}

void srv_handle_web(srv_request *req, srv_response *resp)
{
    const char *dir = req->srv->opts.web_dir;
    const char *name = "index.html";
    if (strncmp(req->path, "/web/", 5) == 0 && req->path[5])
        name = req->path + 5;
    if (!dir[0]) {
        srv_fail(resp, SRV_E_NOT_FOUND, "no demo page: the server runs without --web DIR");
        return;
    }
    if (!plain_name(name) || !type_of(name) || send_file(dir, name, resp) != 0)
        srv_fail(resp, SRV_E_NOT_FOUND, "no page %s", req->path);
}
