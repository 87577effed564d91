/* SPDX-License-Identifier: Apache-2.0 */
/*
 * cmd_parse.c — `servprof parse`: reads the options (with the shared helper,
 * opts.h) and hands them to the parser (tool/parse). Usage errors — a bad
 * option or value, an output path that is a file — exit 2 with one line
 * naming the option, before anything is read or written; the parse itself
 * exits 0, or 1 when nothing could be parsed or some output could not be
 * written.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "commands.h"
#include "opts.h"
#include "parse.h"
#include "plog.h"

enum {
    OPT_INPUT = 1, OPT_OUTPUT, OPT_FORMAT, OPT_SPAN, OPT_SESSION, OPT_LOG_LEVEL, OPT_FLOWS,
    OPT_PROGRESS, OPT_NO_PROGRESS, OPT_QUIET, OPT_CLOCK_OFFSET, OPT_DB_WRITER, OPT_MOE_NAMES, OPT_TRACE_FORM,
    OPT_JOBS,
};

static const char *const formats[] = {"csv", "json", "db", "perfetto", NULL};
/* fatal and critical: the reference tool's names, taken as error. */
static const char *const levels[] = {"debug", "info", "warning", "error", "fatal", "critical",
                                     "none", NULL};
static const char *const flows[] = {"key", "all", NULL};
static const char *const db_writers[] = {"pages", "sqlite", NULL};
static const char *const trace_forms[] = {"array", "object", NULL};

static const cli_opt opts[] = {
    {OPT_INPUT, "input-path", 'i', CLI_VALUE, "DIR", NULL,
     "the folder to read (or give DIR as the argument)"},
    {OPT_OUTPUT, "output-path", 'o', CLI_VALUE, "OUT", NULL, "where to write (default ./output)"},
    {OPT_FORMAT, "format", 'f', CLI_LIST, "FMT", formats, "csv, json, db (the default: all three), perfetto (trace.pftrace)"},
    {OPT_SPAN, "span", 0, CLI_LIST, "NAME", NULL, "statistics and span_info/NAME.csv per span"},
    {OPT_SESSION, "session", 's', CLI_VALUE, "NAME", NULL,
     "parse only this session folder of DIR (<MMDD-HHMM>)"},
    {OPT_LOG_LEVEL, "log-level", 0, CLI_VALUE, "LEVEL", levels, "messages shown"},
    {OPT_FLOWS, "flows", 0, CLI_VALUE, "WHICH", flows, "flow arrows in the timeline"},
    {OPT_PROGRESS, "progress", 0, CLI_FLAG, NULL, NULL, "show progress on stderr"},
    {OPT_NO_PROGRESS, "no-progress", 0, CLI_FLAG, NULL, NULL, "never show progress"},
    {OPT_QUIET, "quiet", 'q', CLI_FLAG, NULL, NULL, "no summary on stdout"},
    {OPT_CLOCK_OFFSET, "clock-offset", 0, CLI_VALUE, "HOST=NS", NULL,
     "HOST's clock reads NS ns ahead (+) or behind (-): not estimated (repeatable)"},
    {OPT_DB_WRITER, "db-writer", 0, CLI_VALUE, "HOW", db_writers,
     "profiler.db by its pages (default) or by SQLite (SERVPROF_PARSE_DB_WRITER)"},
    {OPT_MOE_NAMES, "moe-names", 0, CLI_LIST, "ROLE=NAME", NULL,
     "MoE records/kernels: dispatch=, gemm=, combine= NAME (substring); layers=N, gemms=N"},
    {OPT_TRACE_FORM, "trace-form", 0, CLI_VALUE, "FORM", trace_forms,
     "chrome_tracing.json as a top-level array (default, the reference's) or {\"traceEvents\": [...]}"},
    {OPT_JOBS, "jobs", 'j', CLI_VALUE, "N", NULL,
     "open and read the stores on threads (one for N = 2), and from N = 3 encode the outputs on threads "
     "of their own (default: the CPUs this process may use, or 1 when the load average leaves none idle; "
     "1: one thread; the outputs are the same)"},
    {0},
};

static const cli_verb verb = {
    "parse", "[options] [DIR]",
    "Reads every raw store (ms_service_*.db) under DIR, recursively, and writes\n"
    "request.csv, batch.csv, forward.csv, kvcache.csv, request_status.csv,\n"
    "chrome_tracing.json and profiler.db into OUT (--format perfetto: trace.pftrace,\n"
    "the timeline as Perfetto's protobuf trace). When DIR holds several sessions\n"
    "(a prof_dir), their names and time ranges are listed and rates are computed over\n"
    "the time collection was on; --session NAME parses one of them.",
    opts};

/* --moe-names: a role and a name, or a positive count. 1 when well formed. */
static int check_moe_name(const char *s)
{
    static const char *const roles[] = {"dispatch=", "gemm=", "combine="};
    for (int i = 0; i < 3; i++)
        if (!strncmp(s, roles[i], strlen(roles[i])))
            return s[strlen(roles[i])] != 0;
    const char *n = !strncmp(s, "layers=", 7) ? s + 7 : !strncmp(s, "gemms=", 6) ? s + 6 : NULL;
    if (!n || !*n)
        return 0;
    char *end;
    long v = strtol(n, &end, 10);
    return !*end && v > 0 && v <= 100000;
}

/* --clock-offset HOST=NS: a host name and a signed integer of ns. */
static int add_clock_offset(prs_opts *o, const char *value)
{
    const char *eq = strrchr(value, '=');
    char *end;
    errno = 0;
    long long ns = eq ? strtoll(eq + 1, &end, 10) : 0;
    /* |NS| <= 1e15 (11.5 days): any real clock error, and no timestamp can overflow when moved */
    if (!eq || eq == value || !eq[1] || *end || errno == ERANGE || ns > 1000000000000000LL ||
        ns < -1000000000000000LL)
        return cli_error(&verb, "--clock-offset '%s': expected HOST=NS, NS an integer of nanoseconds "
                                "within +-1e15 (e.g. node2=-1500000)", value);
    o->clock_hosts = realloc(o->clock_hosts, (size_t)(o->nclock + 1) * sizeof *o->clock_hosts);
    o->clock_ns = realloc(o->clock_ns, (size_t)(o->nclock + 1) * sizeof *o->clock_ns);
    o->clock_hosts[o->nclock] = strndup(value, (size_t)(eq - value));
    o->clock_ns[o->nclock++] = ns;
    return 0;
}

/* An output path that exists and is not a folder is a usage error, found
 * before anything is written. */
static int check_output(const char *out)
{
    struct stat st;
    if (stat(out, &st) == 0 && !S_ISDIR(st.st_mode))
        return cli_error(&verb, "--output-path '%s' is a file; it must be a folder (existing or "
                                "to be created)", out);
    return 0;
}

int cmd_parse(int argc, char **argv)
{
    prs_opts o = {0};
    o.output = "./output";
    o.progress = -1;
    o.summary = 1;
    int rc = 2, any_format = 0;
    cli_parser p;
    cli_init(&p, &verb, argc, argv);
    for (int id; (id = cli_next(&p)) != CLI_END;) {
        switch (id) {
        case CLI_STOP:
            rc = p.status;
            goto out;
        case CLI_ARG:
        case OPT_INPUT:
            if (o.input) {
                rc = cli_error(&verb, "one input folder only (got '%s' and '%s')", o.input,
                               p.value);
                goto out;
            }
            o.input = p.value;
            break;
        case OPT_OUTPUT: o.output = p.value; break;
        case OPT_FORMAT:
            any_format = 1;
            o.csv |= !strcmp(p.value, "csv");
            o.json |= !strcmp(p.value, "json");
            o.db |= !strcmp(p.value, "db");
            o.perfetto |= !strcmp(p.value, "perfetto");
            break;
        case OPT_SPAN:
            o.spans = realloc(o.spans, (size_t)(o.nspans + 1) * sizeof *o.spans);
            o.spans[o.nspans++] = p.value;
            break;
        case OPT_SESSION: o.session = p.value; break;
        case OPT_LOG_LEVEL:
            prs_log_set_level(!strcmp(p.value, "fatal") || !strcmp(p.value, "critical")
                                  ? PRS_ERROR
                                  : prs_log_level_from_name(p.value));
            break;
        case OPT_FLOWS: o.flows_all = !strcmp(p.value, "all"); break;
        case OPT_PROGRESS: o.progress = 1; break;
        case OPT_NO_PROGRESS: o.progress = 0; break;
        case OPT_QUIET: o.summary = 0; break;
        case OPT_CLOCK_OFFSET:
            if (add_clock_offset(&o, p.value) != 0)
                goto out;
            break;
        case OPT_MOE_NAMES:
            if (!check_moe_name(p.value)) {
                rc = cli_error(&verb, "--moe-names '%s': expected dispatch=NAME, gemm=NAME, combine=NAME, "
                               "layers=N or gemms=N (N a positive integer)", p.value);
                goto out;
            }
            o.moe_names = realloc(o.moe_names, (size_t)(o.nmoe_names + 1) * sizeof *o.moe_names);
            o.moe_names[o.nmoe_names++] = p.value;
            break;
        case OPT_TRACE_FORM: o.trace_object = !strcmp(p.value, "object"); break;
        case OPT_DB_WRITER: setenv("SERVPROF_PARSE_DB_WRITER", p.value, 1); break; /* read by table.c */
        case OPT_JOBS: {
            char *end;
            errno = 0;
            long j = strtol(p.value, &end, 10);
            if (errno || end == p.value || *end || j < 1 || j > 4096) {
                rc = cli_error(&verb, "--jobs '%s': not a number of threads from 1 to 4096", p.value);
                goto out;
            }
            o.jobs = (int)j;
            break;
        }
        }
    }
    if (!o.input) {
        rc = cli_error(&verb, "the input folder is missing: servprof parse DIR (or -i/--input-path DIR)");
        goto out;
    }
    if (!any_format)
        o.csv = o.json = o.db = 1;
    if (check_output(o.output) != 0)
        goto out;
    rc = prs_run(&o);
out:
    free(o.spans);
    free(o.moe_names);
    for (int i = 0; i < o.nclock; i++)
        free((char *)o.clock_hosts[i]);
    free(o.clock_hosts);
    free(o.clock_ns);
    return rc;
}
