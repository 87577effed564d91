/* SPDX-License-Identifier: Apache-2.0 */
/*
 * cmd_metrics.c — `servprof metrics serve` and `servprof metrics dump`:
 * the one endpoint of a multi-process server's live metrics.
 *
 *   servprof metrics serve [--listen ADDR:PORT] [-i DIR | -c CONFIG] [--port-file FILE]
 *   servprof metrics dump  [-i DIR | -c CONFIG] [-o FILE]
 *
 * Each process with "metric_enable": 1 publishes its metrics in a file of
 * the metrics folder (lib/metrics/metrics_file.c); `serve` answers GET /metrics
 * with the sum of every file, read at each scrape (lib/metrics/metrics_expo.c);
 * `dump` prints the same text once. The folder is -i DIR, else the one the
 * config file names (-c, else $SERVICE_PROF_CONFIG_PATH): "metric_dir", or
 * "<prof_dir>/metrics". HTTP is lib/metrics/metrics_http.c's (libmicrohttpd, one
 * thread, the same code as the library's "metric_port"): a scrape costs
 * milliseconds (docs/benchmarks.md). `serve` runs until SIGINT or SIGTERM.
 * Options follow the tool's conventions (opts.h). Exit status: 0, 1 (could
 * not read the folder, serve or write), 2 usage.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "commands.h"
#include "internal.h"
#include "metrics.h"
#include "opts.h"

#define DEFAULT_LISTEN "127.0.0.1:9464"

typedef struct opts {
    const char *dir, *config, *listen, *port_file, *out;
    char dir_buf[SP_PATH_MAX];
} opts;

enum { OPT_INPUT = 1, OPT_CONFIG, OPT_LISTEN, OPT_PORT_FILE, OPT_OUTPUT };

static const cli_opt metrics_opts[] = {
    {OPT_INPUT, "input-path", 'i', CLI_VALUE, "DIR", NULL,
     "the metrics folder (default: the config file's)"},
    {OPT_CONFIG, "config", 'c', CLI_VALUE, "FILE", NULL,
     "the config whose metric_dir / prof_dir to use (default: $SERVICE_PROF_CONFIG_PATH)"},
    {OPT_LISTEN, "listen", 0, CLI_VALUE, "ADDR:PORT", NULL,
     "serve: where to listen (default " DEFAULT_LISTEN "; port 0: any free one)"},
    {OPT_PORT_FILE, "port-file", 0, CLI_VALUE, "FILE", NULL,
     "serve: write the port it listens on into FILE"},
    {OPT_OUTPUT, "output-path", 'o', CLI_VALUE, "FILE", NULL, "dump: write there, not to stdout"},
    {0},
};

static const cli_verb metrics_verb = {
    "metrics", "serve [--listen ADDR:PORT] [-i DIR | -c FILE] | dump [-i DIR | -c FILE] [-o FILE]",
    "serve  answers GET /metrics with the sum of every process's live metrics file in the\n"
    "       metrics folder (Prometheus text format), until SIGINT or SIGTERM.\n"
    "dump   prints the same text once.\n"
    "Processes write the files with \"metric_enable\": 1 (docs/metrics.md).",
    metrics_opts};

/* The folder: -i, else the config file's. Returns 0 or 1 (message printed). */
static int resolve_dir(opts *o)
{
    if (o->dir)
        return 0;
    const char *cfg = o->config ? o->config : getenv("SERVICE_PROF_CONFIG_PATH");
    sp_config c;
    sp_config_defaults(&c);
    if (cfg && *cfg) {
        sp_config_diag d = {0};
        int rc = sp_config_load(cfg, &c, &d);
        if (rc != 0) {
            fprintf(stderr, "servprof metrics: cannot read the config %s: %s\n", cfg,
                    servprof_strerror(rc));
            return 1;
        }
    }
    c.metric_enable = 1;
    sp_metrics_dir_for(&c, o->dir_buf, sizeof o->dir_buf);
    o->dir = o->dir_buf;
    return 0;
}

static int dump(opts *o)
{
    char *text;
    size_t len;
    int rc = sp_metrics_render(o->dir, &text, &len);
    if (!text) {
        fprintf(stderr, "servprof metrics dump: out of memory\n");
        return 1;
    }
    FILE *f = o->out ? fopen(o->out, "w") : stdout;
    if (!f) {
        fprintf(stderr, "servprof metrics dump: cannot write %s: %s\n", o->out, strerror(errno));
        free(text);
        return 1;
    }
    int bad = fwrite(text, 1, len, f) != len;
    bad |= (o->out ? fclose(f) : fflush(f)) != 0;
    free(text);
    if (bad)
        fprintf(stderr, "servprof metrics dump: cannot write %s\n", o->out ? o->out : "stdout");
    if (rc != 0)
        fprintf(stderr, "servprof metrics dump: cannot read the folder %s: %s\n", o->dir,
                strerror(-rc));
    return bad || rc != 0;
}

static int serve(opts *o)
{
    struct sockaddr_in sa;
    sp_mhttp_parse_listen(o->listen, &sa); /* checked by cmd_metrics */
    sigset_t stop;
    sigemptyset(&stop);
    sigaddset(&stop, SIGINT);
    sigaddset(&stop, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &stop, NULL); /* before the HTTP thread: it inherits the mask */
    char why[512];
    int port = 0;
    sp_mhttp *h = sp_mhttp_start(o->listen, o->dir, 0, &port, why, sizeof why);
    if (!h) {
        fprintf(stderr, "servprof metrics serve: %s\n", why);
        return 1;
    }
    if (o->port_file) {
        FILE *f = fopen(o->port_file, "w");
        if (!f || fprintf(f, "%d\n", port) < 0 || fclose(f) != 0) {
            fprintf(stderr, "servprof metrics serve: cannot write %s: %s\n", o->port_file,
                    strerror(errno));
            sp_mhttp_stop(h);
            return 1;
        }
    }
    fprintf(stderr, "servprof metrics: serving %s on http://%s:%d/metrics (%s; at most %d "
            "connections)\n", o->dir, inet_ntoa(sa.sin_addr), port, sp_mhttp_interfaces(o->listen),
            SP_MHTTP_DEFAULT_CONNS);
    int sig = 0;
    sigwait(&stop, &sig);
    sp_mhttp_stop(h);
    return 0;
}

int cmd_metrics(int argc, char **argv)
{
    cli_parser p;
    cli_init(&p, &metrics_verb, argc, argv);
    opts o = {.listen = DEFAULT_LISTEN};
    const char *action = NULL;
    for (int id; (id = cli_next(&p)) != CLI_END;) {
        if (id == CLI_STOP)
            return p.status;
        if (id >= OPT_INPUT && id <= OPT_OUTPUT) {
            if (!*p.value)
                return cli_bad_value(&p, id == OPT_LISTEN  ? "ADDR:PORT"
                                         : id == OPT_INPUT ? "a folder (DIR)"
                                                           : "a file name (FILE)");
            const char **slot[] = {NULL, &o.dir, &o.config, &o.listen, &o.port_file, &o.out};
            *slot[id] = p.value;
        } else if (!action) {
            action = p.value;
            if (strcmp(action, "serve") != 0 && strcmp(action, "dump") != 0)
                return cli_error(&metrics_verb, "'%s' is not one of: serve, dump", action);
        } else {
            return cli_error(&metrics_verb, "unexpected argument '%s' (see --help)", p.value);
        }
    }
    if (!action)
        return cli_error(&metrics_verb, "what to do is missing: serve or dump");
    if (!strcmp(action, "serve")) {
        struct sockaddr_in sa;
        if (sp_mhttp_parse_listen(o.listen, &sa) != 0)
            return cli_error(&metrics_verb, "--listen '%s': want IPv4ADDR:PORT (PORT 0..65535), "
                             "e.g. " DEFAULT_LISTEN, o.listen);
        if (o.out)
            return cli_error(&metrics_verb, "--output-path is for dump, not serve");
    } else if (o.port_file || strcmp(o.listen, DEFAULT_LISTEN) != 0) {
        return cli_error(&metrics_verb, "%s is for serve, not dump",
                         o.port_file ? "--port-file" : "--listen");
    }
    if (resolve_dir(&o) != 0)
        return 1;
    return !strcmp(action, "serve") ? serve(&o) : dump(&o);
}
