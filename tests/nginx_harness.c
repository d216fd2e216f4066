/* nginx_harness: Debian's nginx in front of replicas (nginx_harness.h). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"
#include "nginx_harness.h"

#define PROXY_CONF "docker/nginx/proxy.conf"
#define LB_START_S 15.0

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    remove(path);
    return 0;
}

static void print_file(const char *path)
{
    FILE *f = fopen(path, "r");
    char line[512];
    while (f && fgets(line, sizeof line, f))
        print_message("#   %s", line);
    if (f)
        fclose(f);
}

void lb_stop(lb *b)
{
    if (b->pid > 0)
        kill_child(b->pid);     /* SIGTERM: nginx's fast shutdown, workers too */
    b->pid = 0;
    if (b->dir[0])
        nftw(b->dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
    b->dir[0] = 0;
}

int lb_start(lb *b, const int *ports, int n)
{
    memset(b, 0, sizeof *b);
    char bindir[PATH_MAX], conf[PATH_MAX + 32], errlog[PATH_MAX + 32];
    const char *bin = bin_path(), *slash = strrchr(bin, '/');
    snprintf(bindir, sizeof bindir, "%.*s", slash ? (int)(slash - bin) : 1, slash ? bin : ".");
    char *abs = realpath(bindir, NULL);
    /* the shipped proxy policy (retries, keep-alive, timeouts): what this test proves */
    char proxy_conf[PATH_MAX];
    int port = free_port();
    if (!abs || port <= 0 || !realpath(PROXY_CONF, proxy_conf)) {
        free(abs);
        print_error("no bin dir, free port or %s\n", PROXY_CONF);
        return -1;
    }
    b->s.port = port;
    snprintf(b->s.base, sizeof b->s.base, "http://127.0.0.1:%d", port);
    snprintf(b->dir, sizeof b->dir, "%s/tests/lb-%d", abs, port);
    free(abs);
    char tests_dir[PATH_MAX + 8];
    snprintf(tests_dir, sizeof tests_dir, "%.*s", (int)(strrchr(b->dir, '/') - b->dir), b->dir);
    mkdir(tests_dir, 0755);
    if (mkdir(b->dir, 0755) && errno != EEXIST) {
        print_error("mkdir %s: %s\n", b->dir, strerror(errno));
        b->dir[0] = 0;
        return -1;
    }
    snprintf(conf, sizeof conf, "%s/nginx.conf", b->dir);
    snprintf(errlog, sizeof errlog, "%s/error.log", b->dir);
    FILE *f = fopen(conf, "w");
    if (!f) {
        print_error("cannot write %s\n", conf);
        lb_stop(b);
        return -1;
    }
    const char *d = b->dir;
    fprintf(f, "daemon off;\nmaster_process on;\nworker_processes 2;\n");
    if (geteuid() == 0)
        fprintf(f, "user root;\n");         /* workers as the current user, not nobody */
    fprintf(f, "pid %s/nginx.pid;\nerror_log %s warn;\n", d, errlog);
    fprintf(f, "events { worker_connections 1024; }\n");
    fprintf(f, "http {\n  access_log off;\n"
               "  client_body_temp_path %s/client_body;\n  proxy_temp_path %s/proxy;\n"
               "  fastcgi_temp_path %s/fastcgi;\n  uwsgi_temp_path %s/uwsgi;\n  scgi_temp_path %s/scgi;\n",
            d, d, d, d, d);
    fprintf(f, "  upstream mtserve {\n    least_conn;\n");
    for (int i = 0; i < n; i++)
        fprintf(f, "    server 127.0.0.1:%d max_fails=1 fail_timeout=%ds;\n", ports[i], LB_FAIL_TIMEOUT_S);
    fprintf(f, "    keepalive 16;\n  }\n");
    fprintf(f, "  server {\n    listen 127.0.0.1:%d;\n"
               "    location = /lb-health { return 200 \"ok\\n\"; }\n"
               "    location / { include %s; }\n  }\n}\n",
            port, proxy_conf);
    fclose(f);

    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0) {
        lb_stop(b);
        return -1;
    }
    if (pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        char out[PATH_MAX + 32];
        snprintf(out, sizeof out, "%s/stderr.log", d);
        int fd = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        if (fd >= 0) {
            dup2(fd, 1);
            dup2(fd, 2);
            close(fd);
        }
        execl(NGINX_BIN, "nginx", "-p", d, "-c", conf, "-e", errlog, (char *)NULL);
        _exit(127);
    }
    b->pid = pid;
    track(pid);
    double until = now_s() + LB_START_S;
    while (now_s() < until) {
        int ws;
        if (waitpid(pid, &ws, WNOHANG) == pid) {
            untrack(pid);
            b->pid = 0;
            print_error("nginx exited at start (status %d):\n", ws);
            break;
        }
        req_opts o = { .timeout_ms = 1000 };
        reply r = http_req(&b->s, "/lb-health", &o);
        long st = r.status;
        reply_free(&r);
        if (st == 200)
            return 0;
        sleep_ms(20);
    }
    print_error("nginx on port %d did not come up; its logs:\n", port);
    print_file(errlog);
    snprintf(errlog, sizeof errlog, "%s/stderr.log", d);
    print_file(errlog);
    lb_stop(b);
    return -1;
}

int lb_errors_for(const lb *b, int port)
{
    char path[PATH_MAX + 32], line[1024], needle[32];
    snprintf(path, sizeof path, "%s/error.log", b->dir);
    snprintf(needle, sizeof needle, "127.0.0.1:%d", port);
    FILE *f = fopen(path, "r");
    int n = 0;
    while (f && fgets(line, sizeof line, f))
        n += strstr(line, needle) != NULL;
    if (f)
        fclose(f);
    return n;
}
