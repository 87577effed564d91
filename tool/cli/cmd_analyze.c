/* SPDX-License-Identifier: Apache-2.0 */
/*
 * cmd_analyze.c — `servprof analyze`: summaries, time windows, the engine's
 * time budget, TTFT breakdown and ranked findings of one profile
 * (tool/analyze). Prints text (default), CSV or JSON on stdout; with -o OUT
 * also writes the reference's summary CSVs, our own CSVs and analyze.json.
 * Options follow the tool's conventions (opts.h). Exit status: 0 done, 1
 * the input could not be analyzed or an output not written, 2 usage.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "analyze.h"
#include "chanalyze.h"
#include "commands.h"
#include "opts.h"
#include "render.h"

enum {
    OPT_INPUT = 1, OPT_OUTPUT, OPT_FORMAT, OPT_WINDOWS, OPT_WINDOW, OPT_THRESHOLD,
    OPT_MAX_REQUESTS, OPT_FINDINGS_ONLY, OPT_FROM, OPT_SESSION, OPT_HOST, OPT_PROGRESS, OPT_NO_PROGRESS,
};

static const char *const formats[] = {"text", "csv", "json", NULL};

static const cli_opt opts[] = {
    {OPT_INPUT, "input-path", 'i', CLI_VALUE, "DIR", NULL,
     "raw stores or a parse output folder (or give DIR as the argument)"},
    {OPT_OUTPUT, "output-path", 'o', CLI_VALUE, "OUT", NULL, "also write the CSVs and analyze.json there"},
    {OPT_FORMAT, "format", 0, CLI_VALUE, "FMT", formats, "what to print on stdout"},
    {OPT_WINDOWS, "windows", 0, CLI_VALUE, "N", NULL, "split the run into N time windows, 1 to 1000"},
    {OPT_WINDOW, "window", 0, CLI_VALUE, "S", NULL, "or into windows of S seconds"},
    {OPT_THRESHOLD, "threshold", 0, CLI_VALUE, "NAME=VALUE", NULL,
     "a finding's threshold; repeatable; names below"},
    {OPT_MAX_REQUESTS, "max-requests", 0, CLI_VALUE, "N", NULL,
     "read at most N requests, 0 for all"},
    {OPT_FINDINGS_ONLY, "findings-only", 0, CLI_FLAG, NULL, NULL, "print only the ranked findings"},
    {OPT_FROM, "from", 0, CLI_VALUE, "URL", NULL,
     "instead of DIR: analyze what `servprof export` wrote to ClickHouse (clickhouse://HOST:PORT/DB)"},
    {OPT_SESSION, "session", 's', CLI_VALUE, "NAME", NULL, "with --from: only the exports of that session"},
    {OPT_HOST, "host", 0, CLI_VALUE, "HOST", NULL, "with --from: only that host's requests, steps and records"},
    {OPT_PROGRESS, "progress", 0, CLI_FLAG, NULL, NULL,
     "show the parse's progress on stderr (default: on a terminal, for a large input)"},
    {OPT_NO_PROGRESS, "no-progress", 0, CLI_FLAG, NULL, NULL, "never show progress"},
    {0},
};

/* The about text names the thresholds, which come from tool/analyze. */
static const char *about(void)
{
    static char buf[1536];
    snprintf(buf, sizeof buf,
             "DIR: raw stores (ms_service_*.db, parsed in-process) or a parse output folder\n"
             "(profiler.db). Prints summaries, per-window series, the engine's time budget\n"
             "(busy / stalled / idle), the TTFT breakdown and ranked findings; -o OUT also writes\n"
             "request_summary.csv, batch_summary.csv, service_summary.csv, findings.csv,\n"
             "windows.csv, ttft_breakdown.csv and analyze.json.\n"
             "Thresholds: %s.\n"
             "Exit status: 0 done, 1 the input could not be analyzed or an output not written,\n"
             "2 usage. --from clickhouse://HOST:PORT/DB instead of DIR: the same document from what\n"
             "`servprof export` wrote to ClickHouse (docs/fleet.md). See docs/analyze.md.",
             sa_threshold_names());
    return buf;
}

/* One option's value into o; 0, or 2 with the one-line message printed. */
static int take(const cli_parser *p, int id, sa_opts *o)
{
    long n;
    double s;
    switch (id) {
    case OPT_WINDOWS:
        if (cli_integer(p, 1, 1000, &n) != 0)
            return 2;
        o->nwindows = (int)n;
        return 0;
    case OPT_WINDOW:
        if (cli_number(p, 0, 1e9, &s) != 0)
            return 2;
        if (s <= 0)
            return cli_bad_value(p, "expected seconds > 0");
        o->window_s = s;
        return 0;
    case OPT_THRESHOLD:
        if (sa_opts_threshold(o, p->value) != 0) {
            char accepted[640];
            snprintf(accepted, sizeof accepted, "expected NAME=VALUE, NAME one of: %s",
                     sa_threshold_names());
            return cli_bad_value(p, accepted);
        }
        return 0;
    case OPT_MAX_REQUESTS:
        if (cli_integer(p, 0, 1L << 30, &n) != 0)
            return 2;
        o->max_requests = (int)n;
        return 0;
    }
    return 0;
}

/* Writes doc as the options ask (-o files, findings only, json, csv, text). */
static int emit(json_t *doc, const char *out, const char *format, int findings_only)
{
    char err[512];
    int rc = 0;
    if (out && sa_render_files(doc, out, err, sizeof err) != 0) {
        fprintf(stderr, "servprof analyze: %s\n", err);
        rc = 1;
    }
    if (findings_only)
        sa_render_findings(doc, stdout);
    else if (!strcmp(format, "json")) {
        json_dumpf(doc, stdout, JSON_INDENT(1) | JSON_REAL_PRECISION(10));
        putchar('\n');
    } else if (!strcmp(format, "csv"))
        sa_render_csv(doc, stdout);
    else
        sa_render_text(doc, stdout);
    return rc;
}

/* --from clickhouse://...: the same document, from the exported tables (chanalyze.c). */
static int analyze_from(const cli_verb *verb, const char *from, const char *session, const char *host,
                        const sa_opts *o, const char *out, const char *format, int findings_only)
{
    if (o->input)
        return cli_error(verb, "give DIR or --from URL, not both");
    if (strncmp(from, "clickhouse://", 13) != 0)
        return cli_error(verb, "--from %s: expected clickhouse://HOST:PORT/DATABASE", from);
    char err[1024];
    json_t *doc = sa_analyze_clickhouse(from, session, host, o, err, sizeof err);
    if (!doc) {
        fprintf(stderr, "servprof analyze: %s\n", err);
        return 1;
    }
    int rc = emit(doc, out, format, findings_only);
    json_decref(doc);
    return rc;
}

int cmd_analyze(int argc, char **argv)
{
    sa_opts o;
    sa_opts_init(&o);
    o.progress = -1; /* as parse: a bar on a terminal only */
    const char *out = NULL, *format = "text";
    int findings_only = 0;
    const char *from = NULL, *session = NULL, *host = NULL;
    const cli_verb verb = {"analyze",
                           "-i DIR [-o OUT] [--format text|csv|json] [--windows N | --window S]\n"
                           "                        [--threshold NAME=VALUE ...] [--max-requests N] "
                           "[--findings-only] [--progress|--no-progress]\n"
                           "                        --from clickhouse://HOST:PORT/DB [--session NAME] [--host HOST] "
                           "[--format text|json]",
                           about(), opts};
    cli_parser p;
    cli_init(&p, &verb, argc, argv);
    for (int id; (id = cli_next(&p)) != CLI_END;) {
        if (id == CLI_STOP)
            return p.status;
        if (id == CLI_ARG || id == OPT_INPUT) {
            if (o.input)
                return cli_error(&verb, "one input only (got '%s' and '%s')", o.input, p.value);
            o.input = p.value;
        } else if (id == OPT_OUTPUT)
            out = p.value;
        else if (id == OPT_FORMAT)
            format = p.value;
        else if (id == OPT_FINDINGS_ONLY)
            findings_only = 1;
        else if (id == OPT_FROM)
            from = p.value;
        else if (id == OPT_SESSION)
            session = p.value;
        else if (id == OPT_HOST)
            host = p.value;
        else if (id == OPT_PROGRESS || id == OPT_NO_PROGRESS)
            o.progress = id == OPT_PROGRESS;
        else if (take(&p, id, &o) != 0)
            return 2;
    }
    if (from)
        return analyze_from(&verb, from, session, host, &o, out, format, findings_only);
    if (session || host)
        return cli_error(&verb, "--session and --host go with --from URL (a local DIR is analyzed whole)");
    if (!o.input)
        return cli_error(&verb, "-i DIR (raw stores or a parse output folder) is required");
    struct stat st;
    if (stat(o.input, &st) != 0)
        return cli_error(&verb, "input %s: %s", o.input, strerror(errno));
    char err[512];
    json_t *doc = sa_analyze(&o, err, sizeof err);
    if (!doc) {
        fprintf(stderr, "servprof analyze: %s\n", err);
        return 1;
    }
    int rc = emit(doc, out, format, findings_only);
    json_decref(doc);
    return rc;
}
