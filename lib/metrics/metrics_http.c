/* SPDX-License-Identifier: Apache-2.0 */
/*
 * metrics_http.c — GET /metrics over HTTP: the text of a metrics folder
 * (metrics_expo.c), served by libmicrohttpd on one internal thread.
 *
 * Used by `servprof metrics serve` and, with "metric_port" in the config,
 * by the library inside the profiled server (metrics.c). libmicrohttpd is
 * loaded with dlopen() at the first start, as the GPU libraries are
 * (sampler_nvml.c): a program that links libservprof does not gain a
 * dependency, and a host without libmicrohttpd12 gets one message and no
 * endpoint. The header is needed at build time only; without it the
 * feature is compiled out (same message).
 *
 * Every scrape reads the folder anew, so the endpoint keeps no state but
 * the folder's name and its connections.
 *
 * A guest in someone else's server (why the limits): the endpoint must
 * never take a resource the server needs, descriptors above all. So:
 *  - at most max_conns connections at once (metric_max_connections,
 *    default 16), and at most half of them from one client address;
 *  - a connection idle for IDLE_S seconds is closed; one that has not sent
 *    a whole request HEADER_S seconds after it came is closed (shutdown)
 *    when a newcomer needs its place, so a client trickling a byte now and
 *    then cannot hold a place against a real scrape;
 *  - every refusal is counted by cause, served as
 *    servprof_endpoint_refused_connections_total{reason}, and the first
 *    one is logged.
 * The caps are ours (the accept policy callback, with counts kept by the
 * connection-notify callback), not libmicrohttpd's own, because its own
 * refusals cannot be counted; its limits stay set a little above ours as a
 * backstop. All callbacks run on the daemon's one internal thread, so the
 * counts need no lock; the refusal counters are atomic for readers.
 * Polling is epoll (MHD_USE_EPOLL, falling back to poll): select() cannot
 * hold a descriptor above 1023, and real servers have thousands open. A fork child must not keep its parent's port: it
 * closes its copy of the listening socket (sp_mhttp_forget) and never
 * touches the daemon, whose thread is not in the child.
 */
#include <arpa/inet.h>
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "config.h"
#include "log.h"
#include "metrics.h"

#define IDLE_S 10   /* a connection with no traffic for this long is closed */
#define HEADER_S 5  /* ... with no whole request after this long may be evicted */

#ifdef SERVPROF_HAVE_MHD
#include <microhttpd.h>

/* The libmicrohttpd functions used, resolved once. */
static struct {
    struct MHD_Daemon *(*start)(unsigned int, uint16_t, MHD_AcceptPolicyCallback, void *,
                                MHD_AccessHandlerCallback, void *, ...);
    void (*stop)(struct MHD_Daemon *);
    const union MHD_DaemonInfo *(*info)(struct MHD_Daemon *, enum MHD_DaemonInfoType, ...);
    const union MHD_ConnectionInfo *(*cinfo)(struct MHD_Connection *, enum MHD_ConnectionInfoType,
                                             ...);
    struct MHD_Response *(*response)(size_t, void *, enum MHD_ResponseMemoryMode);
    enum MHD_Result (*header)(struct MHD_Response *, const char *, const char *);
    enum MHD_Result (*queue)(struct MHD_Connection *, unsigned int, struct MHD_Response *);
    void (*destroy)(struct MHD_Response *);
    int ok;
} M;

static void load_mhd(void)
{
    void *lib = dlopen("libmicrohttpd.so.12", RTLD_NOW | RTLD_LOCAL);
    if (!lib)
        return;
    *(void **)&M.start = dlsym(lib, "MHD_start_daemon");
    *(void **)&M.stop = dlsym(lib, "MHD_stop_daemon");
    *(void **)&M.info = dlsym(lib, "MHD_get_daemon_info");
    *(void **)&M.cinfo = dlsym(lib, "MHD_get_connection_info");
    *(void **)&M.response = dlsym(lib, "MHD_create_response_from_buffer");
    *(void **)&M.header = dlsym(lib, "MHD_add_response_header");
    *(void **)&M.queue = dlsym(lib, "MHD_queue_response");
    *(void **)&M.destroy = dlsym(lib, "MHD_destroy_response");
    M.ok = M.start && M.stop && M.info && M.cinfo && M.response && M.header && M.queue &&
           M.destroy;
}

/* One open connection (the daemon thread's alone). */
typedef struct slot {
    struct in_addr addr;
    int fd;
    int64_t since_ns;
    int requested; /* a whole request arrived: not a slow header */
    int evicted;   /* shut down to make room: closing */
} slot;

struct sp_mhttp {
    struct MHD_Daemon *d;
    int listen_fd;
    int max_conns, max_per_addr;
    slot *conns;            /* max_conns + 1 slots; the daemon thread's */
    int nconns;
    _Atomic uint64_t refused[3]; /* SP_MHTTP_REFUSED_*: read by any thread */
    _Atomic int told;            /* the first refusal was logged */
    char listen[64];
    char dir[SP_PATH_MAX];
};

static const char *const refuse_reason[3] = {"cap", "per_address", "slow_header"};

static void count_refusal(sp_mhttp *h, int why)
{
    atomic_fetch_add(&h->refused[why], 1);
    if (why != SP_MHTTP_EVICTED_SLOW && !atomic_exchange(&h->told, 1))
        sp_log(SP_LOG_WARNING, "metrics endpoint %s: refusing connections (%s: %d at once, %d per "
               "client address); counted in servprof_endpoint_refused_connections_total",
               h->listen, why == SP_MHTTP_REFUSED_CAP ? "connection cap reached" :
               "per-address cap reached", h->max_conns, h->max_per_addr);
}

/* Shuts down the oldest connection that has sent no whole request for
 * HEADER_S seconds; nonzero when one was. */
static int evict_slow(sp_mhttp *h)
{
    int64_t now = sp_now_monotonic_ns(), oldest = now - (int64_t)HEADER_S * 1000000000;
    int pick = -1;
    for (int i = 0; i < h->nconns; i++) {
        slot *c = &h->conns[i];
        if (!c->requested && !c->evicted && c->fd >= 0 && c->since_ns <= oldest) {
            oldest = c->since_ns;
            pick = i;
        }
    }
    if (pick < 0)
        return 0;
    h->conns[pick].evicted = 1;
    shutdown(h->conns[pick].fd, SHUT_RDWR); /* the daemon sees it end and closes it */
    count_refusal(h, SP_MHTTP_EVICTED_SLOW);
    return 1;
}

static enum MHD_Result on_accept(void *cls, const struct sockaddr *addr, socklen_t addrlen)
{
    sp_mhttp *h = cls;
    int live = 0, same = 0;
    const struct sockaddr_in *in = (const struct sockaddr_in *)addr;
    int is_in = addr && addrlen >= (socklen_t)sizeof *in && addr->sa_family == AF_INET;
    for (int i = 0; i < h->nconns; i++) {
        if (h->conns[i].evicted)
            continue;
        live++;
        same += is_in && h->conns[i].addr.s_addr == in->sin_addr.s_addr;
    }
    if (live >= h->max_conns && !evict_slow(h)) {
        count_refusal(h, SP_MHTTP_REFUSED_CAP);
        return MHD_NO;
    }
    if (same >= h->max_per_addr) {
        count_refusal(h, SP_MHTTP_REFUSED_ADDR);
        return MHD_NO;
    }
    if (h->nconns > h->max_conns) { /* every slot taken, an evicted one not yet gone */
        count_refusal(h, SP_MHTTP_REFUSED_CAP);
        return MHD_NO;
    }
    return MHD_YES;
}

static void on_notify(void *cls, struct MHD_Connection *c, void **socket_context,
                      enum MHD_ConnectionNotificationCode code)
{
    sp_mhttp *h = cls;
    if (code == MHD_CONNECTION_NOTIFY_STARTED) {
        *socket_context = NULL;
        if (h->nconns > h->max_conns)
            return; /* cannot happen: on_accept keeps a slot */
        slot *n = &h->conns[h->nconns++];
        memset(n, 0, sizeof *n);
        n->fd = -1;
        n->since_ns = sp_now_monotonic_ns();
        const union MHD_ConnectionInfo *ci = M.cinfo(c, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
        if (ci && ci->client_addr && ci->client_addr->sa_family == AF_INET)
            n->addr = ((const struct sockaddr_in *)ci->client_addr)->sin_addr;
        ci = M.cinfo(c, MHD_CONNECTION_INFO_CONNECTION_FD);
        if (ci)
            n->fd = ci->connect_fd;
        *socket_context = (void *)(intptr_t)(n->fd + 1); /* found again by fd */
        return;
    }
    /* CLOSED: forget it (found by fd; slots are few). */
    intptr_t key = (intptr_t)*socket_context;
    for (int i = 0; key && i < h->nconns; i++) {
        if ((intptr_t)h->conns[i].fd + 1 == key) {
            h->conns[i] = h->conns[--h->nconns];
            break;
        }
    }
}

/* The first call of a connection's request: its header is whole. */
static void mark_requested(sp_mhttp *h, struct MHD_Connection *conn)
{
    const union MHD_ConnectionInfo *ci = M.cinfo(conn, MHD_CONNECTION_INFO_CONNECTION_FD);
    for (int i = 0; ci && i < h->nconns; i++)
        if (h->conns[i].fd == ci->connect_fd)
            h->conns[i].requested = 1;
}

/* The endpoint's own counters, appended to every scrape. */
static void append_self(const sp_mhttp *h, char **text, size_t *len)
{
    char extra[640];
    int n = snprintf(extra, sizeof extra,
                     "# HELP servprof_endpoint_refused_connections_total Connections this metrics "
                     "endpoint refused or closed to stay within its caps.\n"
                     "# TYPE servprof_endpoint_refused_connections_total counter\n");
    for (int i = 0; i < 3; i++)
        n += snprintf(extra + n, sizeof extra - (size_t)n,
                      "servprof_endpoint_refused_connections_total{reason=\"%s\"} %llu\n",
                      refuse_reason[i], (unsigned long long)atomic_load(&h->refused[i]));
    char *nt = realloc(*text, *len + (size_t)n + 1);
    if (!nt)
        return;
    memcpy(nt + *len, extra, (size_t)n + 1);
    *text = nt;
    *len += (size_t)n;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn, const char *url,
                                  const char *method, const char *version, const char *upload,
                                  size_t *upload_size, void **con_cls)
{
    sp_mhttp *h = cls;
    (void)version;
    (void)upload;
    (void)upload_size;
    (void)con_cls;
    mark_requested(h, conn);
    static const char not_get[] = "only GET /metrics\n", oom[] = "out of memory\n",
                      other[] = "servprof live metrics: see /metrics\n";
    struct MHD_Response *r;
    unsigned status = MHD_HTTP_OK;
    const char *ctype = "text/plain; charset=utf-8";
    if (strcmp(method, "GET") && strcmp(method, "HEAD")) {
        status = MHD_HTTP_METHOD_NOT_ALLOWED;
        r = M.response(sizeof not_get - 1, (void *)not_get, MHD_RESPMEM_PERSISTENT);
    } else if (!strcmp(url, "/metrics")) {
        char *text;
        size_t len;
        sp_metrics_render(h->dir, &text, &len); /* a folder problem is a comment in the text */
        if (text)
            append_self(h, &text, &len);
        if (text) {
            ctype = "text/plain; version=0.0.4; charset=utf-8";
            r = M.response(len, text, MHD_RESPMEM_MUST_FREE);
        } else {
            status = MHD_HTTP_INTERNAL_SERVER_ERROR;
            r = M.response(sizeof oom - 1, (void *)oom, MHD_RESPMEM_PERSISTENT);
        }
    } else {
        status = !strcmp(url, "/") ? MHD_HTTP_OK : MHD_HTTP_NOT_FOUND;
        r = M.response(sizeof other - 1, (void *)other, MHD_RESPMEM_PERSISTENT);
    }
    if (!r)
        return MHD_NO;
    M.header(r, "Content-Type", ctype);
    enum MHD_Result ret = M.queue(conn, status, r);
    M.destroy(r);
    return ret;
}

/* libmicrohttpd's own messages: the last one is kept, so a failed start
 * can say what really failed. Only set while a start runs, on its thread. */
static _Thread_local char *last_msg;
static _Thread_local size_t last_msg_len;

static void on_mhd_log(void *cls, const char *fmt, va_list ap)
{
    (void)cls;
    if (!last_msg)
        return;
    vsnprintf(last_msg, last_msg_len, fmt, ap);
    size_t n = strlen(last_msg);
    while (n > 0 && (last_msg[n - 1] == '\n' || last_msg[n - 1] == '.'))
        last_msg[--n] = '\0';
}

sp_mhttp *sp_mhttp_start(const char *listen, const char *dir, int max_conns, int *port,
                         char *why, size_t whylen)
{
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, load_mhd);
    struct sockaddr_in sa;
    if (sp_mhttp_parse_listen(listen, &sa) != 0) {
        snprintf(why, whylen, "'%s' is not IPv4ADDR:PORT", listen);
        return NULL;
    }
    if (!M.ok) {
        snprintf(why, whylen, "libmicrohttpd (libmicrohttpd.so.12, Debian package "
                 "libmicrohttpd12) cannot be loaded");
        return NULL;
    }
    sp_mhttp *h = calloc(1, sizeof *h);
    if (max_conns <= 0)
        max_conns = SP_MHTTP_DEFAULT_CONNS;
    if (h)
        h->conns = calloc((size_t)max_conns + 1, sizeof *h->conns);
    if (!h || !h->conns) {
        if (h)
            free(h);
        snprintf(why, whylen, "out of memory");
        return NULL;
    }
    h->max_conns = max_conns;
    h->max_per_addr = max_conns > 1 ? (max_conns + 1) / 2 : 1;
    snprintf(h->listen, sizeof h->listen, "%s", listen);
    snprintf(h->dir, sizeof h->dir, "%s", dir);
    char msg[256] = "";
    last_msg = msg;
    last_msg_len = sizeof msg;
    errno = 0;
    /* epoll where there is one, else poll: never select() (FD_SETSIZE). The
     * limits given to the daemon are a backstop above ours (on_accept). */
    unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_ERROR_LOG;
    unsigned polls[2] = {MHD_USE_EPOLL, MHD_USE_POLL};
    for (int i = 0; i < 2 && !h->d; i++) {
        h->d = M.start(flags | polls[i], 0, on_accept, h, on_request, h, MHD_OPTION_SOCK_ADDR,
                       (struct sockaddr *)&sa, MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)IDLE_S,
                       MHD_OPTION_CONNECTION_LIMIT, (unsigned)(2 * max_conns + 2),
                       MHD_OPTION_PER_IP_CONNECTION_LIMIT, (unsigned)(2 * max_conns + 2),
                       MHD_OPTION_NOTIFY_CONNECTION, on_notify, h, MHD_OPTION_EXTERNAL_LOGGER,
                       on_mhd_log, NULL, MHD_OPTION_END);
    }
    int e = errno;
    last_msg = NULL;
    if (!h->d) {
        /* "Failed to bind to port 0: ..." names the port argument, which is
         * 0 here (the address goes in MHD_OPTION_SOCK_ADDR): keep the reason. */
        const char *colon = strstr(msg, ": ");
        if (!strncmp(msg, "Failed to bind to port", 22) && colon) {
            memmove(msg + 4, colon, strlen(colon) + 1); /* colon is past msg + 4 */
            memcpy(msg, "bind", 4);
        }
        if (msg[0])
            snprintf(why, whylen, "cannot listen on %s: %s", listen, msg);
        else
            snprintf(why, whylen, "cannot listen on %s: %s", listen,
                     e ? strerror(e) : "libmicrohttpd gave no reason");
        free(h->conns);
        free(h);
        return NULL;
    }
    const union MHD_DaemonInfo *di = M.info(h->d, MHD_DAEMON_INFO_BIND_PORT);
    *port = di ? di->port : ntohs(sa.sin_port);
    di = M.info(h->d, MHD_DAEMON_INFO_LISTEN_FD);
    h->listen_fd = di ? di->listen_fd : -1;
    return h;
}

uint64_t sp_mhttp_refused(const sp_mhttp *h, int why)
{
    return h && why >= 0 && why < 3 ? atomic_load(&((sp_mhttp *)h)->refused[why]) : 0;
}

void sp_mhttp_stop(sp_mhttp *h)
{
    if (!h)
        return;
    M.stop(h->d);
    free(h->conns);
    free(h);
}

void sp_mhttp_forget(sp_mhttp *h)
{
    if (h && h->listen_fd >= 0)
        close(h->listen_fd); /* the port stays the parent's alone; the daemon is not ours */
}
#else
struct sp_mhttp {
    int unused;
};

sp_mhttp *sp_mhttp_start(const char *listen, const char *dir, int max_conns, int *port,
                         char *why, size_t whylen)
{
    (void)listen;
    (void)dir;
    (void)max_conns;
    (void)port;
    snprintf(why, whylen, "this build has no libmicrohttpd (install libmicrohttpd-dev and "
             "rebuild)");
    return NULL;
}

void sp_mhttp_stop(sp_mhttp *h)
{
    (void)h;
}

void sp_mhttp_forget(sp_mhttp *h)
{
    (void)h;
}

uint64_t sp_mhttp_refused(const sp_mhttp *h, int why)
{
    (void)h;
    (void)why;
    return 0;
}
#endif
