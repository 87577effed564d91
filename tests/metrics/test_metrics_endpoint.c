/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_metrics_endpoint.c — the in-server metrics endpoint as a guest of
 * the server (lib/metrics/metrics_http.c), with real sockets on loopback:
 *
 *  - flood: a child with RLIMIT_NOFILE 128 runs the endpoint (cap 16) and
 *    a listening socket of its own (the server's /health). The parent
 *    opens 200 idle connections to the endpoint from 127.0.0.1 and 40 more
 *    from 127.0.0.3. The child must keep its descriptors (at most cap + a
 *    few more open than before), still accept on its own socket, and have
 *    counted the refusals by cause; a scrape from 127.0.0.2 is answered
 *    (at once, or once the idle ones are evicted/timed out) and carries
 *    servprof_endpoint_refused_connections_total. Before the caps, the
 *    endpoint took every descriptor and the server's accept failed.
 *  - many descriptors: a child that already holds 1,100 files starts the
 *    endpoint, which then holds descriptors above 1023, and is scraped.
 *    Before, select() refused them and the start said "in use, or not an
 *    address of this host".
 *  - an empty host (":PORT") means loopback; a second endpoint on a taken
 *    port says "Address already in use" (the system's words).
 *
 * Exits 77 (ctest SKIP) when libmicrohttpd cannot be loaded. Waits are
 * bounded polls of conditions (check_wait_until), never bare sleeps.
 */
#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "config.h"
#include "metrics.h"

static char dir[] = "/tmp/sp_test_endpoint_XXXXXX";

/* A TCP connection to 127.0.0.1:port from source address `from`. */
static int connect_from(const char *from, int port)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0)
        return -1;
    struct sockaddr_in src = {.sin_family = AF_INET};
    inet_pton(AF_INET, from, &src.sin_addr);
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    struct timeval tv = {10, 0};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    if (bind(fd, (struct sockaddr *)&src, sizeof src) != 0 ||
        connect(fd, (struct sockaddr *)&sa, sizeof sa) != 0) {
        close(fd);
        return -1;
    }
    return fd;
}

/* GET /metrics from `from`: the status (0: none), the body in body. */
static int scrape(const char *from, int port, char *body, size_t size)
{
    body[0] = 0;
    int fd = connect_from(from, port);
    if (fd < 0)
        return 0;
    const char req[] = "GET /metrics HTTP/1.0\r\nHost: x\r\n\r\n";
    if (write(fd, req, sizeof req - 1) != (ssize_t)(sizeof req - 1)) {
        close(fd);
        return 0;
    }
    size_t got = 0;
    ssize_t r;
    while (got + 1 < size && (r = read(fd, body + got, size - got - 1)) > 0)
        got += (size_t)r;
    body[got] = 0;
    close(fd);
    int status = 0;
    sscanf(body, "HTTP/1.%*d %d", &status);
    return status;
}

static int open_fds(void)
{
    int n = 0;
    DIR *d = opendir("/proc/self/fd");
    struct dirent *e;
    while (d && (e = readdir(d)))
        n += e->d_name[0] != '.';
    if (d)
        closedir(d);
    return n - 1; /* the DIR's own */
}

typedef struct {
    sp_mhttp *h;
    uint64_t want;
} refusals;

static int refused_at_least(void *arg)
{
    refusals *r = arg;
    uint64_t n = sp_mhttp_refused(r->h, SP_MHTTP_REFUSED_CAP) +
                 sp_mhttp_refused(r->h, SP_MHTTP_REFUSED_ADDR);
    return n >= r->want;
}

typedef struct {
    int port;
    char *body;
    size_t size;
} scrape_arg;

static int scrape_ok(void *arg)
{
    scrape_arg *a = arg;
    return scrape("127.0.0.2", a->port, a->body, a->size) == 200;
}

/* The child of the flood case: returns its exit status. */
static int flood_child(int to_parent, int from_parent)
{
    struct rlimit rl = {128, 128};
    if (setrlimit(RLIMIT_NOFILE, &rl) != 0)
        return 3;
    char why[512];
    int port = 0;
    sp_mhttp *h = sp_mhttp_start("127.0.0.1:0", dir, 16, &port, why, sizeof why);
    if (!h) {
        fprintf(stderr, "endpoint: %s\n", why);
        return strstr(why, "cannot be loaded") ? 77 : 4;
    }
    /* The server's own socket (its /health). */
    int own = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in sa = {.sin_family = AF_INET};
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof sa;
    CHECK_INT(bind(own, (struct sockaddr *)&sa, sizeof sa), 0);
    CHECK_INT(listen(own, 64), 0);
    CHECK_INT(getsockname(own, (struct sockaddr *)&sa, &len), 0);
    int ports[2] = {port, ntohs(sa.sin_port)};
    int before = open_fds();
    CHECK_INT(write(to_parent, ports, sizeof ports), (int)sizeof ports);
    char c;
    CHECK_INT(read(from_parent, &c, 1), 1); /* flooded: 200 + 40 connections */
    /* 8 (per address) of the first 200 and 8 (the cap) of the last 40 are
     * taken: 224 refused. */
    refusals r = {h, 224};
    CHECK(check_wait_until(refused_at_least, &r, 20000));
    CHECK(sp_mhttp_refused(h, SP_MHTTP_REFUSED_ADDR) >= 192);
    CHECK(sp_mhttp_refused(h, SP_MHTTP_REFUSED_CAP) >= 1);
    int during = open_fds();
    if (during > before + 16 + 2) {
        fprintf(stderr, "open descriptors: %d before the flood, %d during it\n", before, during);
        check_failures++;
    }
    /* The server still takes its own connection (the parent made one). */
    int a = accept(own, NULL, NULL);
    CHECK(a >= 0);
    if (a >= 0)
        close(a);
    /* A scrape from elsewhere is answered: at once or after evictions. */
    static char body[1 << 16];
    scrape_arg sa2 = {port, body, sizeof body};
    CHECK(check_wait_until(scrape_ok, &sa2, 30000));
    CHECK(strstr(body, "servprof_endpoint_refused_connections_total{reason=\"per_address\"} ") !=
          NULL);
    CHECK_INT(write(to_parent, "d", 1), 1);
    sp_mhttp_stop(h);
    close(own);
    return check_failures ? 1 : 0;
}

static int run_flood(void)
{
    int up[2], down[2];
    CHECK_INT(pipe(up), 0);
    CHECK_INT(pipe(down), 0);
    pid_t pid = fork();
    if (pid == 0)
        _exit(flood_child(up[1], down[0]));
    close(up[1]);
    close(down[0]);
    int ports[2];
    int fds[240], n = 0, own = -1;
    if (read(up[0], ports, sizeof ports) == (ssize_t)sizeof ports) {
        for (int i = 0; i < 240; i++) {
            int fd = connect_from(i < 200 ? "127.0.0.1" : "127.0.0.3", ports[0]);
            if (fd >= 0)
                fds[n++] = fd;
        }
        own = connect_from("127.0.0.1", ports[1]);
        CHECK(own >= 0);
        CHECK_INT(write(down[1], "f", 1), 1);
        char c;
        (void)!read(up[0], &c, 1); /* the child is done with the flood */
    }
    for (int i = 0; i < n; i++)
        close(fds[i]);
    if (own >= 0)
        close(own);
    int st = 0;
    CHECK_INT(waitpid(pid, &st, 0), pid);
    CHECK(WIFEXITED(st));
    return WIFEXITED(st) ? WEXITSTATUS(st) : 1;
}

/* A process holding 1,100 files before the endpoint starts. */
static int many_fds_child(void)
{
    struct rlimit rl;
    getrlimit(RLIMIT_NOFILE, &rl);
    if (rl.rlim_max < 1300)
        return 77;
    rl.rlim_cur = rl.rlim_max < 4096 ? rl.rlim_max : 4096;
    if (setrlimit(RLIMIT_NOFILE, &rl) != 0)
        return 3;
    for (int i = 0; i < 1100; i++)
        if (dup(2) < 0)
            return 5;
    char why[512];
    int port = 0;
    sp_mhttp *h = sp_mhttp_start(":0", dir, 0, &port, why, sizeof why);
    if (!h) {
        fprintf(stderr, "endpoint with 1,100 files open: %s\n", why);
        return 1;
    }
    static char body[1 << 16];
    CHECK_INT(scrape("127.0.0.1", port, body, sizeof body), 200);
    CHECK(strstr(body, "servprof_endpoint_refused_connections_total") != NULL);
    sp_mhttp_stop(h);
    return check_failures ? 1 : 0;
}

int main(void)
{
    if (!mkdtemp(dir))
        return 2;
    struct sockaddr_in sa;
    CHECK_INT(sp_mhttp_parse_listen(":19466", &sa), 0);
    CHECK_INT(ntohl(sa.sin_addr.s_addr), INADDR_LOOPBACK); /* not every interface */
    CHECK_STR(sp_mhttp_interfaces(":19466"), "loopback only");
    CHECK(strstr(sp_mhttp_interfaces("0.0.0.0:1"), "every interface") != NULL);

    /* A failed start says what failed (the system's words), not a guess. */
    {
        char why[512], why2[512];
        int port = 0, port2 = 0;
        sp_mhttp *h = sp_mhttp_start("127.0.0.1:0", dir, 0, &port, why, sizeof why);
        if (h) {
            char listen[64];
            snprintf(listen, sizeof listen, "127.0.0.1:%d", port);
            sp_mhttp *h2 = sp_mhttp_start(listen, dir, 0, &port2, why2, sizeof why2);
            CHECK(h2 == NULL);
            sp_mhttp_stop(h2);
            CHECK(strstr(why2, "Address already in use") != NULL);
            CHECK(strstr(why2, "port 0") == NULL);
            fprintf(stderr, "second endpoint on %s: %s\n", listen, why2);
            sp_mhttp_stop(h);
        }
    }
    int rc = run_flood();
    if (rc == 77) {
        printf("SKIP: libmicrohttpd cannot be loaded\n");
        check_remove_tree(dir);
        return 77;
    }
    CHECK_INT(rc, 0);
    pid_t pid = fork();
    if (pid == 0)
        _exit(many_fds_child());
    int st = 0;
    CHECK_INT(waitpid(pid, &st, 0), pid);
    CHECK(WIFEXITED(st) && (WEXITSTATUS(st) == 0 || WEXITSTATUS(st) == 77));
    check_remove_tree(dir);
    CHECK_DONE();
}
