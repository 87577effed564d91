/*
 * cmd_report.c — `servprof report`: reads the options and hands them to the
 * report writer (src/report). Options come from a table (long name, short
 * letter, whether it takes a value); `--opt value` and `--opt=value` both
 * work. A usage error is one line on stderr naming the option and what it
 * accepts, exit status 2.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "commands.h"
#include "report.h"

static void usage(FILE *f)
{
    fputs("usage: servprof report -i|--input-path DIR [-o|--output FILE.html] [--compare OTHER]\n"
          "                       [--buckets N] [--analyze-json FILE] [--compare-analyze-json FILE]\n"
          "                       [--compare-json FILE] [--quiet]\n"
          "  Writes one self-contained HTML page (default ./report.html) showing the run at a glance:\n"
          "  analyze's figures and findings, time series (throughput, latency percentiles, batch size,\n"
          "  tokens per step, KV usage, queues, engine time budget, host and device samplers), latency\n"
          "  CDFs, the TTFT breakdown and the slowest requests. DIR is a folder of raw stores or a parse\n"
          "  output folder (or its profiler.db). --compare OTHER overlays a second run.\n"
          "  --buckets N     time buckets per series (min/max kept per bucket; default 2000, 10..100000)\n"
          "  --analyze-json FILE / --compare-analyze-json FILE / --compare-json FILE\n"
          "                  use saved `servprof analyze` / `servprof compare` JSON instead of running them\n", f);
}

enum opt_id { O_INPUT, O_OUTPUT, O_COMPARE, O_BUCKETS, O_AJSON, O_CAJSON, O_CJSON, O_QUIET, O_HELP };
static const struct opt {
    const char *name;
    char letter;
    int takes_value;
    enum opt_id id;
} opts[] = {
    {"input-path", 'i', 1, O_INPUT},   {"output", 'o', 1, O_OUTPUT},       {"compare", 0, 1, O_COMPARE},
    {"buckets", 0, 1, O_BUCKETS},      {"analyze-json", 0, 1, O_AJSON},    {"compare-analyze-json", 0, 1, O_CAJSON},
    {"compare-json", 0, 1, O_CJSON},   {"quiet", 'q', 0, O_QUIET},         {"help", 'h', 0, O_HELP},
};

/* Finds argv[*i]'s option; sets *value (from "=value" or the next argument). */
static const struct opt *find_opt(int argc, char **argv, int *i, const char **value)
{
    const char *a = argv[*i];
    const struct opt *o = NULL;
    const char *eq = NULL;
    size_t n = sizeof opts / sizeof *opts;
    if (a[0] == '-' && a[1] == '-') {
        eq = strchr(a + 2, '=');
        size_t len = eq ? (size_t)(eq - a - 2) : strlen(a + 2);
        for (size_t k = 0; k < n && !o; k++)
            if (strlen(opts[k].name) == len && memcmp(opts[k].name, a + 2, len) == 0)
                o = &opts[k];
    } else if (a[0] == '-' && a[1] && !a[2]) {
        for (size_t k = 0; k < n && !o; k++)
            if (opts[k].letter == a[1])
                o = &opts[k];
    }
    if (!o) {
        /* One line: the bad option and every accepted one. */
        fprintf(stderr, "servprof report: unknown option '%s'; accepted:", a);
        for (size_t k = 0; k < n; k++) {
            if (opts[k].letter)
                fprintf(stderr, "%s -%c/--%s", k ? "," : "", opts[k].letter, opts[k].name);
            else
                fprintf(stderr, "%s --%s", k ? "," : "", opts[k].name);
        }
        fputc('\n', stderr);
        return NULL;
    }
    *value = NULL;
    if (o->takes_value) {
        if (eq)
            *value = eq + 1;
        else if (*i + 1 < argc)
            *value = argv[++*i];
        if (!*value || !**value) {
            fprintf(stderr, "servprof report: --%s needs a value\n", o->name);
            return NULL;
        }
    } else if (eq) {
        fprintf(stderr, "servprof report: --%s takes no value\n", o->name);
        return NULL;
    }
    return o;
}

int cmd_report(int argc, char **argv)
{
    spr_opts ro = {.output = "report.html", .buckets = SPR_DEFAULT_BUCKETS};
    for (int i = 1; i < argc; i++) {
        const char *v;
        const struct opt *o = find_opt(argc, argv, &i, &v);
        if (!o)
            return 2;
        switch (o->id) {
        case O_INPUT: ro.input = v; break;
        case O_OUTPUT: ro.output = v; break;
        case O_COMPARE: ro.compare = v; break;
        case O_AJSON: ro.analyze_json = v; break;
        case O_CAJSON: ro.compare_analyze_json = v; break;
        case O_CJSON: ro.compare_json = v; break;
        case O_QUIET: ro.quiet = 1; break;
        case O_HELP: usage(stdout); return 0;
        case O_BUCKETS: {
            char *end;
            long b = strtol(v, &end, 10);
            if (*end || b < SPR_MIN_BUCKETS || b > SPR_MAX_BUCKETS) {
                fprintf(stderr, "servprof report: --buckets '%s' is not a whole number from %d to %d\n", v,
                        SPR_MIN_BUCKETS, SPR_MAX_BUCKETS);
                return 2;
            }
            ro.buckets = (int)b;
            break;
        }
        }
    }
    if (!ro.input) {
        fprintf(stderr, "servprof report: --input-path DIR is required (see servprof report --help)\n");
        return 2;
    }
    if ((ro.compare_analyze_json || ro.compare_json) && !ro.compare) {
        fprintf(stderr, "servprof report: --compare-analyze-json and --compare-json need --compare OTHER\n");
        return 2;
    }
    return spr_run(&ro);
}
