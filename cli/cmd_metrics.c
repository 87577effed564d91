/*
 * cmd_metrics.c — `servprof metrics serve` and `servprof metrics dump`:
 * the one endpoint of a multi-process server's live metrics.
 *
 *   servprof metrics serve [--listen ADDR:PORT] [-i DIR | -c CONFIG] [--port-file FILE]
 *   servprof metrics dump  [-i DIR | -c CONFIG] [-o FILE]
 *
 * Each process with "metric_enable": 1 publishes its metrics in a file of
 * the metrics folder (src/metrics_file.c); `serve` answers GET /metrics
 * with the sum of every file, read at each scrape (src/metrics_expo.c);
 * `dump` prints the same text once. The folder is -i DIR, else the one the
 * config file names (-c, else $SERVICE_PROF_CONFIG_PATH): "metric_dir", or
 * "<prof_dir>/metrics". HTTP is src/metrics_http.c's (libmicrohttpd, one
 * thread, the same code as the library's "metric_port"): a scrape costs
 * milliseconds (docs/benchmarks.md). `serve` runs until SIGINT or SIGTERM. Exit status: 0, 1 (could not serve / write), 2 usage.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "commands.h"
#include "internal.h"
#include "metrics.h"

#define DEFAULT_LISTEN "127.0.0.1:9464"

typedef struct opts {
    const char *dir, *config, *listen, *port_file, *out;
    char dir_buf[SP_PATH_MAX];
} opts;

static void usage(FILE *f)
{
    fprintf(f,
            "usage: servprof metrics serve [--listen ADDR:PORT] [-i DIR | -c CONFIG] [--port-file FILE]\n"
            "       servprof metrics dump [-i DIR | -c CONFIG] [-o FILE]\n"
            "  -i, --input-path DIR   the metrics folder (default: from the config file)\n"
            "  -c, --config FILE      the servprof config whose metric_dir / prof_dir to use\n"
            "                         (default: $SERVICE_PROF_CONFIG_PATH)\n"
            "  --listen ADDR:PORT     where serve listens (" DEFAULT_LISTEN "; port 0: any)\n"
            "  --port-file FILE       serve writes the port it listens on into FILE\n"
            "  -o, --output-path FILE dump writes there instead of stdout\n"
            "  -h, --help             this text\n");
}

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
    if (sp_mhttp_parse_listen(o->listen, &sa) != 0) {
        fprintf(stderr, "servprof metrics serve: --listen '%s': want IPv4ADDR:PORT (PORT 0..65535), "
                "e.g. " DEFAULT_LISTEN "\n", o->listen);
        return 2;
    }
    sigset_t stop;
    sigemptyset(&stop);
    sigaddset(&stop, SIGINT);
    sigaddset(&stop, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &stop, NULL); /* before the HTTP thread: it inherits the mask */
    char why[512];
    int port = 0;
    sp_mhttp *h = sp_mhttp_start(o->listen, o->dir, &port, why, sizeof why);
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
    fprintf(stderr, "servprof metrics: serving %s on http://%s:%d/metrics\n", o->dir,
            inet_ntoa(sa.sin_addr), port);
    int sig = 0;
    sigwait(&stop, &sig);
    sp_mhttp_stop(h);
    return 0;
}

int cmd_metrics(int argc, char **argv)
{
    if (argc < 2 || !strcmp(argv[1], "-h") || !strcmp(argv[1], "--help")) {
        usage(argc < 2 ? stderr : stdout);
        return argc < 2 ? 2 : 0;
    }
    const char *action = argv[1];
    if (strcmp(action, "serve") && strcmp(action, "dump")) {
        fprintf(stderr, "servprof metrics: unknown action '%s' (serve, dump)\n", action);
        return 2;
    }
    opts o = {.listen = DEFAULT_LISTEN};
    static const struct option longs[] = {
        {"input-path", required_argument, 0, 'i'}, {"config", required_argument, 0, 'c'},
        {"listen", required_argument, 0, 'l'},     {"port-file", required_argument, 0, 'p'},
        {"output-path", required_argument, 0, 'o'}, {"help", no_argument, 0, 'h'},
        {0, 0, 0, 0}};
    char **av = argv + 1; /* av[0] is the action */
    int ac = argc - 1;
    optind = 1;
    opterr = 0;
    int ch;
    while ((ch = getopt_long(ac, av, ":i:c:o:h", longs, NULL)) != -1) {
        switch (ch) {
        case 'i': o.dir = optarg; break;
        case 'c': o.config = optarg; break;
        case 'l': o.listen = optarg; break;
        case 'p': o.port_file = optarg; break;
        case 'o': o.out = optarg; break;
        case 'h': usage(stdout); return 0;
        case ':':
            fprintf(stderr, "servprof metrics %s: option '%s' wants a value\n", action,
                    av[optind - 1]);
            return 2;
        default:
            fprintf(stderr, "servprof metrics %s: unknown option '%s' (accepted: -i/--input-path, "
                    "-c/--config, --listen, --port-file, -o/--output-path, -h/--help)\n", action,
                    av[optind - 1]);
            return 2;
        }
    }
    if (optind < ac) {
        fprintf(stderr, "servprof metrics %s: unexpected argument '%s' (see --help)\n", action,
                av[optind]);
        return 2;
    }
    if (resolve_dir(&o) != 0)
        return 1;
    return !strcmp(action, "serve") ? serve(&o) : dump(&o);
}
