/* nginx_harness: Debian's nginx (/usr/sbin/nginx) in front of replicas of the
 * real server, for the tests of replicas behind a load balancer (test_lb.c,
 * test_redis.c).
 *
 * nginx runs as the current user with its own prefix <dir of
 * MTSERVE_BIN>/tests/lb-<port>/ (config, pid, logs and every temp path
 * inside; removed by lb_stop).  The upstream is least_conn with keepalive and
 * max_fails=1 fail_timeout=LB_FAIL_TIMEOUT_S per server; its location
 * includes docker/nginx/proxy.conf, the proxy policy the compose file's nginx
 * ships with: a failed or refused attempt is retried on another replica.
 * The master is tracked by the harness (killed at the end or on our death).
 * nginx is a test package (`make deps` installs nginx-light).  Include
 * <cmocka.h> and harness.h first.
 */
#ifndef MTSERVE_TESTS_NGINX_HARNESS_H
#define MTSERVE_TESTS_NGINX_HARNESS_H

#include <limits.h>
#include <sys/types.h>

#define NGINX_BIN         "/usr/sbin/nginx"
#define LB_FAIL_TIMEOUT_S 2

typedef struct {
    pid_t  pid;
    server s;                   /* port and base of nginx, for http_req */
    char   dir[PATH_MAX];
} lb;

/* nginx on a free loopback port in front of the n replicas ports[]; waits
 * until it answers (bounded).  0 or -1 (stopped, its error log printed). */
int  lb_start(lb *b, const int *ports, int n);
/* SIGTERM (nginx's fast shutdown), its prefix removed.  A stopped one: nothing. */
void lb_stop(lb *b);
/* The lines of nginx's error log naming the upstream 127.0.0.1:port. */
int  lb_errors_for(const lb *b, int port);

#endif
