/* SPDX-License-Identifier: Apache-2.0 */
/*
 * cmd_export.c — `servprof export INPUT --to URL`: a parse of INPUT sent to
 * a backend, one module per URL scheme (tool/export/export.h). Options
 * follow the tool's conventions (opts.h). Exit status: 0 sent, 1 the
 * export failed (the message says what a rerun does), 2 usage or bad input.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "commands.h"
#include "export.h"
#include "opts.h"

enum {
    OPT_INPUT = 1, OPT_TO, OPT_SESSION, OPT_CREATE, OPT_CLUSTER, OPT_NODES, OPT_PASSWORD_FILE,
    OPT_BLOCK_ROWS, OPT_COMPRESS, OPT_PROGRESS, OPT_NO_PROGRESS, OPT_VERBOSE, OPT_PREFER, OPT_CLOCK_OFFSET,
};

static const cli_opt opts[] = {
    {OPT_INPUT, "input-path", 'i', CLI_VALUE, "DIR", NULL, "raw stores or a session folder (or give DIR as the argument)"},
    {OPT_TO, "to", 0, CLI_VALUE, "URL", NULL, "where to: clickhouse://[USER@]HOST:PORT[/DATABASE], otlp+http://HOST:PORT"},
    {OPT_SESSION, "session", 's', CLI_VALUE, "NAME", NULL, "export only this session folder of DIR"},
    {OPT_CREATE, "create", 0, CLI_FLAG, NULL, NULL, "create the database and tables where missing"},
    {OPT_CLUSTER, "cluster", 0, CLI_VALUE, "NAME", NULL,
     "shard over the server's cluster NAME: local tables on each node + Distributed tables"},
    {OPT_NODES, "nodes", 0, CLI_VALUE, "URL,URL", NULL,
     "the cluster's nodes (HTTP), when they do not all listen on the --to port"},
    {OPT_PASSWORD_FILE, "password-file", 0, CLI_VALUE, "FILE", NULL, "read the password from FILE's first line"},
    {OPT_BLOCK_ROWS, "block-rows", 0, CLI_VALUE, "N", NULL, "rows per INSERT, 1 to 1000000 (default 200000)"},
    {OPT_COMPRESS, "compress", 0, CLI_FLAG, NULL, NULL, "gzip the INSERT bodies (for slow links)"},
    {OPT_PROGRESS, "progress", 0, CLI_FLAG, NULL, NULL, "show progress on stderr"},
    {OPT_NO_PROGRESS, "no-progress", 0, CLI_FLAG, NULL, NULL, "never show progress"},
    {OPT_VERBOSE, "verbose", 'v', CLI_FLAG, NULL, NULL, "also print the parse's notes"},
    {OPT_PREFER, "prefer", 0, CLI_VALUE, "N|URL", NULL,
     "with --cluster: send every row to that node (1-based, or its clickhouse://HOST:PORT): the nearest shard"},
    {OPT_CLOCK_OFFSET, "clock-offset", 0, CLI_VALUE, "HOST=NS", NULL,
     "HOST's clock reads NS ns ahead (+) or behind (-): records moved onto the fleet's clock (repeatable)"},
    {0},
};

/* --clock-offset HOST=NS, checked as parse checks it (cmd_parse.c). */
static int add_clock_offset(exp_opts *o, const cli_verb *verb, const char *value)
{
    const char *eq = strrchr(value, '=');
    char *end = NULL;
    errno = 0;
    long long ns = eq ? strtoll(eq + 1, &end, 10) : 0;
    if (!eq || eq == value || !eq[1] || *end || errno == ERANGE || ns > 1000000000000000LL ||
        ns < -1000000000000000LL)
        return cli_error(verb, "--clock-offset '%s': expected HOST=NS, NS an integer of nanoseconds "
                               "within +-1e15 (e.g. node2=-1500000)", value);
    o->clock_hosts = realloc(o->clock_hosts, (size_t)(o->nclock + 1) * sizeof *o->clock_hosts);
    o->clock_ns = realloc(o->clock_ns, (size_t)(o->nclock + 1) * sizeof *o->clock_ns);
    o->clock_hosts[o->nclock] = strndup(value, (size_t)(eq - value));
    o->clock_ns[o->nclock++] = ns;
    return 0;
}

int cmd_export(int argc, char **argv)
{
    exp_opts o = {0};
    o.progress = -1;
    const cli_verb verb = {
        "export", "DIR --to URL [--create] [--cluster NAME [--nodes URL,...]] [--session NAME]",
        "Parses DIR (raw stores, as `servprof parse` reads them) in this process and sends its\n"
        "records and report rows to URL. clickhouse://HOST:PORT[/DATABASE] (HTTP port, database\n"
        "servprof by default): tables span, link, exports and one per report; exporting again sends\n"
        "only what is missing. The password comes from SERVPROF_CLICKHOUSE_PASSWORD or\n"
        "--password-file (one in the URL works, with a warning); the user from the URL or\n"
        "SERVPROF_CLICKHOUSE_USER. otlp+http://HOST:PORT[/path] (or otlp+https://): every\n"
        "request as an OTLP trace (llm_request spans, /v1/traces by default; docs/tracing.md).\n"
        "Exit status: 0 sent, 1 failed (run it again to resume), 2 usage. See docs/fleet.md.",
        opts};
    cli_parser p;
    cli_init(&p, &verb, argc, argv);
    for (int id; (id = cli_next(&p)) != CLI_END;) {
        if (id == CLI_STOP)
            return p.status;
        switch (id) {
        case CLI_ARG:
        case OPT_INPUT:
            if (o.input)
                return cli_error(&verb, "one input only (got '%s' and '%s')", o.input, p.value);
            o.input = p.value;
            break;
        case OPT_TO: o.url = p.value; break;
        case OPT_SESSION: o.session = p.value; break;
        case OPT_CREATE: o.create = 1; break;
        case OPT_CLUSTER: o.cluster = p.value; break;
        case OPT_NODES: o.nodes = p.value; break;
        case OPT_PASSWORD_FILE: o.password_file = p.value; break;
        case OPT_BLOCK_ROWS: {
            long n;
            if (cli_integer(&p, 1, 1000000, &n) != 0)
                return 2;
            o.block_rows = n;
            break;
        }
        case OPT_COMPRESS: o.compress = 1; break;
        case OPT_PROGRESS: o.progress = 1; break;
        case OPT_NO_PROGRESS: o.progress = 0; break;
        case OPT_VERBOSE: o.verbose = 1; break;
        case OPT_PREFER: o.prefer = p.value; break;
        case OPT_CLOCK_OFFSET:
            if (add_clock_offset(&o, &verb, p.value) != 0)
                return 2;
            break;
        }
    }
    if (!o.input)
        return cli_error(&verb, "DIR (raw stores or a session folder) is required");
    if (!o.url)
        return cli_error(&verb, "--to URL is required (clickhouse://HOST:PORT[/DATABASE] or "
                                "otlp+http://HOST:PORT)");
    if (o.nodes && !o.cluster)
        return cli_error(&verb, "--nodes needs --cluster NAME");
    if (o.prefer && !o.cluster)
        return cli_error(&verb, "--prefer needs --cluster NAME (one node is always the nearest)");
    struct stat st;
    if (stat(o.input, &st) != 0)
        return cli_error(&verb, "input %s: %s", o.input, strerror(errno));
    int rc = exp_run(&o);
    for (int i = 0; i < o.nclock; i++)
        free((char *)o.clock_hosts[i]);
    free(o.clock_hosts);
    free(o.clock_ns);
    return rc;
}
