/*
 * cmd_analyze.c — `servprof analyze`: summaries, time windows, the engine's
 * time budget, TTFT breakdown and ranked findings of one profile
 * (src/analyze). Prints text (default), CSV or JSON on stdout; with -o OUT
 * also writes the reference's summary CSVs, our own CSVs and analyze.json.
 * Exit status: 0 done, 1 the input could not be analyzed or an output not
 * written, 2 usage.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "analyze.h"
#include "cli_opt.h"
#include "commands.h"
#include "render.h"

static void usage(FILE *f)
{
    fputs("usage: servprof analyze -i DIR [-o OUT] [--format text|csv|json] [--windows N | --window S]\n"
          "                        [--threshold NAME=VALUE ...] [--max-requests N] [--findings-only]\n"
          "  DIR: raw stores (ms_service_*.db, parsed in-process) or a parse output folder (profiler.db).\n"
          "  Prints summaries, per-window series, the engine's time budget (busy / stalled / idle), the\n"
          "  TTFT breakdown and ranked findings; -o OUT also writes request_summary.csv,\n"
          "  batch_summary.csv, service_summary.csv, findings.csv, windows.csv, ttft_breakdown.csv and\n"
          "  analyze.json. Thresholds: ", f);
    fputs(sa_threshold_names(), f);
    fputs("\n  See docs/analyze.md.\n", f);
}

static int bad(const char *opt, const char *val, const char *accepted)
{
    fprintf(stderr, "servprof analyze: %s '%s' is not valid; accepted: %s\n", opt, val, accepted);
    return 2;
}

int cmd_analyze(int argc, char **argv)
{
    sa_opts o;
    sa_opts_init(&o);
    const char *out = NULL, *format = "text", *v;
    int findings_only = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        int m;
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            usage(stdout);
            return 0;
        } else if ((m = cli_opt(argc, argv, &i, "--input-path", "-i", &v, "analyze"))) {
            if (m < 0)
                return 2;
            o.input = v;
        } else if ((m = cli_opt(argc, argv, &i, "--output-path", "-o", &v, "analyze"))) {
            if (m < 0)
                return 2;
            out = v;
        } else if ((m = cli_opt(argc, argv, &i, "--format", NULL, &v, "analyze"))) {
            if (m < 0)
                return 2;
            if (strcmp(v, "text") && strcmp(v, "csv") && strcmp(v, "json"))
                return bad("--format", v, "text, csv, json");
            format = v;
        } else if ((m = cli_opt(argc, argv, &i, "--windows", NULL, &v, "analyze"))) {
            long n;
            if (m < 0)
                return 2;
            if (cli_long(v, 1, 1000, &n) != 0)
                return bad("--windows", v, "an integer 1..1000");
            o.nwindows = (int)n;
        } else if ((m = cli_opt(argc, argv, &i, "--window", NULL, &v, "analyze"))) {
            if (m < 0)
                return 2;
            if (cli_double(v, 1e-9, 1e9, &o.window_s) != 0)
                return bad("--window", v, "seconds > 0");
        } else if ((m = cli_opt(argc, argv, &i, "--threshold", NULL, &v, "analyze"))) {
            if (m < 0)
                return 2;
            if (sa_opts_threshold(&o, v) != 0)
                return bad("--threshold", v, sa_threshold_names());
        } else if ((m = cli_opt(argc, argv, &i, "--max-requests", NULL, &v, "analyze"))) {
            long n;
            if (m < 0)
                return 2;
            if (cli_long(v, 0, 1L << 30, &n) != 0)
                return bad("--max-requests", v, "an integer >= 0");
            o.max_requests = (int)n;
        } else if (!strcmp(a, "--findings-only")) {
            findings_only = 1;
        } else if (a[0] != '-' && !o.input) {
            o.input = a;
        } else {
            fprintf(stderr, "servprof analyze: unknown option '%s'; see servprof analyze --help\n", a);
            return 2;
        }
    }
    if (!o.input) {
        fprintf(stderr, "servprof analyze: -i DIR (raw stores or a parse output folder) is required\n");
        return 2;
    }
    struct stat st;
    if (stat(o.input, &st) != 0) {
        fprintf(stderr, "servprof analyze: input %s: %s\n", o.input, strerror(errno));
        return 2;
    }
    char err[512];
    json_t *doc = sa_analyze(&o, err, sizeof err);
    if (!doc) {
        fprintf(stderr, "servprof analyze: %s\n", err);
        return 1;
    }
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
    json_decref(doc);
    return rc;
}
