/* SPDX-License-Identifier: Apache-2.0 */
/*
 * cmd_report.c — `servprof report`: reads the options and hands them to the
 * report writer (tool/report). Options follow the tool's conventions
 * (opts.h): a table, `--opt value` and `--opt=value`, and a usage error is
 * one line on stderr naming the option and what it accepts, exit status 2.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "chanalyze.h"
#include "chread.h"
#include "commands.h"
#include "opts.h"
#include "report.h"

enum { OPT_INPUT = 1, OPT_OUTPUT, OPT_COMPARE, OPT_BUCKETS, OPT_AJSON, OPT_CAJSON, OPT_CJSON, OPT_QUIET, OPT_PROGRESS,
       OPT_NO_PROGRESS, OPT_FROM, OPT_SESSION, OPT_HOST };

static const cli_opt opts[] = {
    {OPT_INPUT, "input-path", 'i', CLI_VALUE, "DIR", NULL,
     "raw stores or a parse output folder (or its profiler.db); or give DIR as the argument"},
    {OPT_OUTPUT, "output", 'o', CLI_VALUE, "FILE.html", NULL, "where to write the page (default ./report.html)"},
    {OPT_COMPARE, "compare", 0, CLI_VALUE, "OTHER", NULL, "overlay a second run"},
    {OPT_BUCKETS, "buckets", 0, CLI_VALUE, "N", NULL,
     "time buckets per series, min/max kept per bucket: 10 to 100000, default 2000"},
    {OPT_AJSON, "analyze-json", 0, CLI_VALUE, "FILE", NULL,
     "use this saved `servprof analyze --format json` output for DIR"},
    {OPT_CAJSON, "compare-analyze-json", 0, CLI_VALUE, "FILE", NULL, "the same for OTHER"},
    {OPT_CJSON, "compare-json", 0, CLI_VALUE, "FILE", NULL,
     "use this saved `servprof compare --format json` output"},
    {OPT_QUIET, "quiet", 'q', CLI_FLAG, NULL, NULL, "print nothing on success"},
    {OPT_PROGRESS, "progress", 0, CLI_FLAG, NULL, NULL,
     "show the parse's progress on stderr (default: on a terminal, for a large input)"},
    {OPT_NO_PROGRESS, "no-progress", 0, CLI_FLAG, NULL, NULL, "never show progress"},
    {OPT_FROM, "from", 0, CLI_VALUE, "URL", NULL,
     "clickhouse://HOST:PORT/DB: the run `servprof export` wrote there, instead of DIR"},
    {OPT_SESSION, "session", 0, CLI_VALUE, "NAME", NULL, "with --from: only the exports of that session"},
    {OPT_HOST, "host", 0, CLI_VALUE, "HOST", NULL, "with --from: only that host's requests, steps and counters"},
    {0},
};

static const cli_verb verb = {
    "report",
    "[-i|--input-path] DIR | --from clickhouse://HOST:PORT/DB [--session S] [--host H]\n"
    "                       [-o|--output FILE.html] [--compare OTHER]\n"
    "                       [--buckets N] [--analyze-json FILE] [--compare-analyze-json FILE]\n"
    "                       [--compare-json FILE] [--quiet] [--progress|--no-progress]",
    "Writes one self-contained HTML page (default ./report.html) showing the run at a glance:\n"
    "analyze's figures and findings, time series (throughput, latency percentiles, batch size,\n"
    "tokens per step, KV usage, queues, engine time budget, host and device samplers), latency\n"
    "CDFs, the TTFT breakdown and the slowest requests. DIR is a folder of raw stores or a parse\n"
    "output folder (or its profiler.db). --from reads a run exported with `servprof export --to\n"
    "clickhouse://...` back from ClickHouse (password: SERVPROF_CLICKHOUSE_PASSWORD): the same page,\n"
    "with the figures analyze --from computes there. --compare OTHER overlays a second run. The page's folder\n"
    "is created when missing.\n"
    "An output that exists and is not a regular file (a FIFO, a device) is written in place;\n"
    "a symbolic link is followed and kept. See docs/report.md.",
    opts};

/* --from: the report's row source on tool/export's ClickHouse reader and
 * analyze --from's document (the report itself knows no backend). */
typedef struct from_ctx {
    ch_reader *rd;
    const char *url, *session, *host;
} from_ctx;

static int from_table(void *ctx, const char *key, rpt_row_fn fn, void *fctx, long long *nrows, char *err, size_t cap)
{
    from_ctx *f = ctx;
    return ch_reader_table(f->rd, key, fn, fctx, nrows, err, cap);
}

static json_t *from_analyze(void *ctx, char *err, size_t cap)
{
    from_ctx *f = ctx;
    return sa_analyze_clickhouse(f->url, f->session, f->host, NULL, err, cap);
}

static int report_from(rpt_opts *ro, const char *url, const char *session, const char *host)
{
    char err[1024] = "";
    from_ctx f = {ch_reader_open(url, session, host, err, sizeof err), url, session, host};
    if (!f.rd) {
        fprintf(stderr, "servprof report: --from %s; no report written\n", err);
        return 1;
    }
    rpt_source src = {ch_reader_label(f.rd), from_table, from_analyze, &f};
    ro->from = &src;
    int rc = rpt_run(ro);
    ch_reader_close(f.rd);
    return rc;
}

int cmd_report(int argc, char **argv)
{
    rpt_opts ro = {.output = "report.html", .buckets = RPT_DEFAULT_BUCKETS, .progress = -1};
    const char *from = NULL, *session = NULL, *host = NULL;
    cli_parser p;
    cli_init(&p, &verb, argc, argv);
    for (int id; (id = cli_next(&p)) != CLI_END;) {
        long b;
        switch (id) {
        case CLI_STOP: return p.status;
        case CLI_ARG:
        case OPT_INPUT:
            /* DIR as the argument or with -i, as parse and analyze take it */
            if (ro.input)
                return cli_error(&verb, "one input only (got '%s' and '%s')", ro.input, p.value);
            ro.input = p.value;
            break;
        case OPT_OUTPUT: ro.output = p.value; break;
        case OPT_COMPARE: ro.compare = p.value; break;
        case OPT_AJSON: ro.analyze_json = p.value; break;
        case OPT_CAJSON: ro.compare_analyze_json = p.value; break;
        case OPT_CJSON: ro.compare_json = p.value; break;
        case OPT_QUIET: ro.quiet = 1; break;
        case OPT_PROGRESS: ro.progress = 1; break;
        case OPT_NO_PROGRESS: ro.progress = 0; break;
        case OPT_FROM: from = p.value; break;
        case OPT_SESSION: session = p.value; break;
        case OPT_HOST: host = p.value; break;
        case OPT_BUCKETS:
            if (cli_integer(&p, RPT_MIN_BUCKETS, RPT_MAX_BUCKETS, &b) != 0)
                return 2;
            ro.buckets = (int)b;
            break;
        }
    }
    if (from && ro.input)
        return cli_error(&verb, "--from %s and DIR %s: one input only", from, ro.input);
    if (from && (ro.compare || ro.compare_analyze_json || ro.compare_json))
        return cli_error(&verb, "--compare needs a local DIR (not --from)");
    if ((session || host) && !from)
        return cli_error(&verb, "--session and --host go with --from URL");
    if (from && strncmp(from, "clickhouse://", 13) != 0)
        return cli_error(&verb, "--from %s: expected clickhouse://HOST:PORT/DATABASE", from);
    if (from)
        return report_from(&ro, from, session, host);
    if (!ro.input)
        return cli_error(&verb, "the input is missing: servprof report DIR (or -i/--input-path DIR)");
    if ((ro.compare_analyze_json || ro.compare_json) && !ro.compare)
        return cli_error(&verb, "--compare-analyze-json and --compare-json need --compare OTHER");
    return rpt_run(&ro);
}
