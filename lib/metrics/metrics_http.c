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
 * the folder's name. A fork child must not keep its parent's port: it
 * closes its copy of the listening socket (sp_mhttp_forget) and never
 * touches the daemon, whose thread is not in the child.
 */
#include <arpa/inet.h>
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config.h"
#include "metrics.h"

#ifdef SERVPROF_HAVE_MHD
#include <microhttpd.h>

/* The libmicrohttpd functions used, resolved once. */
static struct {
    struct MHD_Daemon *(*start)(unsigned int, uint16_t, MHD_AcceptPolicyCallback, void *,
                                MHD_AccessHandlerCallback, void *, ...);
    void (*stop)(struct MHD_Daemon *);
    const union MHD_DaemonInfo *(*info)(struct MHD_Daemon *, enum MHD_DaemonInfoType, ...);
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
    *(void **)&M.response = dlsym(lib, "MHD_create_response_from_buffer");
    *(void **)&M.header = dlsym(lib, "MHD_add_response_header");
    *(void **)&M.queue = dlsym(lib, "MHD_queue_response");
    *(void **)&M.destroy = dlsym(lib, "MHD_destroy_response");
    M.ok = M.start && M.stop && M.info && M.response && M.header && M.queue && M.destroy;
}

struct sp_mhttp {
    struct MHD_Daemon *d;
    int listen_fd;
    char dir[SP_PATH_MAX];
};

static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn, const char *url,
                                  const char *method, const char *version, const char *upload,
                                  size_t *upload_size, void **con_cls)
{
    const sp_mhttp *h = cls;
    (void)version;
    (void)upload;
    (void)upload_size;
    (void)con_cls;
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

sp_mhttp *sp_mhttp_start(const char *listen, const char *dir, int *port, char *why,
                         size_t whylen)
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
    if (!h) {
        snprintf(why, whylen, "out of memory");
        return NULL;
    }
    snprintf(h->dir, sizeof h->dir, "%s", dir);
    h->d = M.start(MHD_USE_INTERNAL_POLLING_THREAD, 0, NULL, NULL, on_request, h,
                   MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&sa, MHD_OPTION_CONNECTION_TIMEOUT,
                   (unsigned)30, MHD_OPTION_END);
    if (!h->d) {
        snprintf(why, whylen, "cannot listen on %s (in use, or not an address of this host)",
                 listen);
        free(h);
        return NULL;
    }
    const union MHD_DaemonInfo *di = M.info(h->d, MHD_DAEMON_INFO_BIND_PORT);
    *port = di ? di->port : ntohs(sa.sin_port);
    di = M.info(h->d, MHD_DAEMON_INFO_LISTEN_FD);
    h->listen_fd = di ? di->listen_fd : -1;
    return h;
}

void sp_mhttp_stop(sp_mhttp *h)
{
    if (!h)
        return;
    M.stop(h->d);
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

sp_mhttp *sp_mhttp_start(const char *listen, const char *dir, int *port, char *why,
                         size_t whylen)
{
    (void)listen;
    (void)dir;
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
#endif
