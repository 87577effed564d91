/* SPDX-License-Identifier: Apache-2.0 */
/*
 * cmd_compare.c — `servprof compare A B`: two profiles (raw stores or
 * parse output folders) metric by metric, with a bootstrap significance
 * test and --fail-if gates for CI. Exit status: 0 compared (no gate
 * tripped), 3 at least one --fail-if gate tripped, 1 an input could not be
 * analyzed, 2 usage (including a malformed --fail-if). Options follow the
 * tool's conventions (opts.h).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "commands.h"
#include "compare.h"
#include "opts.h"

enum { OPT_FORMAT = 1, OPT_FAIL_IF, OPT_RESAMPLES, OPT_MIN_EFFECT, OPT_MIN_ABS_MS, OPT_OUTPUT };

static const char *const formats[] = {"text", "json", NULL};

static const cli_opt opts[] = {
    {OPT_FORMAT, "format", 0, CLI_VALUE, "FMT", formats, "what to print on stdout"},
    {OPT_OUTPUT, "output-path", 'o', CLI_VALUE, "DIR", NULL,
     "also write span_comparation_result.csv and compare.json there"},
    {OPT_FAIL_IF, "fail-if", 0, CLI_VALUE, "EXPR", NULL,
     "exit 3 when EXPR holds, e.g. 'ttft.p99>+5%'; repeatable"},
    {OPT_RESAMPLES, "resamples", 0, CLI_VALUE, "N", NULL, "bootstrap resamples, 20 to 100000"},
    {OPT_MIN_EFFECT, "min-effect", 0, CLI_VALUE, "PCT", NULL,
     "smallest change in % called significant, 0 to 1000"},
    {OPT_MIN_ABS_MS, "min-abs-ms", 0, CLI_VALUE, "MS", NULL,
     "smallest change in ms called significant, 0 to 1e6"},
    {0},
};

static const cli_verb verb = {
    "compare",
    "A B [-o DIR] [--format text|json] [--fail-if EXPR ...] [--resamples N]\n"
    "                        [--min-effect PCT] [--min-abs-ms MS]",
    "A, B: raw stores or parse output folders (as for analyze). Compares request latencies,\n"
    "throughput, step and span metrics; significance by a bootstrap interval of B - A.\n"
    "--fail-if METRIC>LIMIT or METRIC<LIMIT (also >=, <=); LIMIT is a change in % (+5%)\n"
    "or in the metric's unit (2ms, 0.1), e.g. --fail-if 'ttft.p99>+5%'. A tested metric\n"
    "trips only on a significant change. Exit status: 0 no gate tripped, 3 a gate tripped,\n"
    "1 an input could not be read or an output not written, 2 usage. -o DIR writes the\n"
    "reference's span_comparation_result.csv (Golden = A, Input = B) and compare.json.\n"
    "See docs/analyze.md.",
    opts};

/* A numeric option's value into o; 0, or 2 with the one-line message printed. */
static int take_number(const cli_parser *p, int id, sa_compare_opts *o)
{
    long n;
    if (id == OPT_RESAMPLES) {
        if (cli_integer(p, 20, 100000, &n) != 0)
            return 2;
        o->resamples = (int)n;
    } else if (id == OPT_MIN_EFFECT) {
        if (cli_number(p, 0, 1000, &o->min_effect) != 0)
            return 2;
        o->min_effect /= 100;
    } else if (id == OPT_MIN_ABS_MS) {
        if (cli_number(p, 0, 1e6, &o->min_abs_ms) != 0)
            return 2;
    }
    return 0;
}

int cmd_compare(int argc, char **argv)
{
    sa_opts a, b;
    sa_opts_init(&a);
    sa_opts_init(&b);
    sa_compare_opts o;
    sa_compare_opts_init(&o);
    const char *format = "text", **gates = NULL, *outdir = NULL;
    int ngates = 0, rc = 2;
    cli_parser p;
    cli_init(&p, &verb, argc, argv);
    for (int id; (id = cli_next(&p)) != CLI_END;) {
        if (id == CLI_STOP) {
            rc = p.status;
            goto out;
        } else if (id == CLI_ARG) {
            if (a.input && b.input) {
                cli_error(&verb, "two inputs A and B only (got an extra '%s')", p.value);
                goto out;
            }
            *(a.input ? &b.input : &a.input) = p.value;
        } else if (id == OPT_FORMAT) {
            format = p.value;
        } else if (id == OPT_OUTPUT) {
            outdir = p.value;
        } else if (id == OPT_FAIL_IF) {
            gates = realloc(gates, (size_t)(ngates + 1) * sizeof *gates);
            gates[ngates++] = p.value;
        } else if (take_number(&p, id, &o) != 0) {
            goto out;
        }
    }
    if (!a.input || !b.input) {
        cli_error(&verb, "two inputs A and B are required");
        goto out;
    }
    const char *in[2] = {a.input, b.input};
    for (int k = 0; k < 2; k++) {
        struct stat st;
        if (stat(in[k], &st) != 0) {
            fprintf(stderr, "servprof compare: input %s: %s\n", in[k], strerror(errno));
            goto out;
        }
    }
    char err[600];
    json_t *doc = sa_compare(&a, &b, &o, err, sizeof err);
    if (!doc) {
        fprintf(stderr, "servprof compare: %s\n", err);
        rc = 1;
        goto out;
    }
    /* gates are checked before printing, so a malformed one is a usage error */
    json_t *results = json_array();
    int tripped = 0;
    for (int g = 0; g < ngates; g++) {
        char msg[600];
        int t = sa_gate(doc, gates[g], msg, sizeof msg);
        if (t < 0) {
            fprintf(stderr, "servprof compare: %s\n", msg);
            json_decref(results);
            json_decref(doc);
            goto out;
        }
        tripped |= t;
        json_array_append_new(results, json_pack("{s:s, s:b, s:s}", "expr", gates[g], "tripped", t, "detail", msg));
    }
    json_object_set_new(doc, "gates", results);
    json_object_set_new(doc, "verdict", json_string(tripped ? "fail" : "pass"));
    if (!strcmp(format, "json")) {
        json_dumpf(doc, stdout, JSON_INDENT(1) | JSON_REAL_PRECISION(10));
        putchar('\n');
    } else {
        sa_compare_render_text(doc, stdout);
        size_t i;
        json_t *r;
        json_array_foreach(json_object_get(doc, "gates"), i, r)
            printf("%s\n", json_string_value(json_object_get(r, "detail")));
    }
    rc = tripped ? 3 : 0;
    if (outdir && sa_compare_write_files(doc, outdir, err, sizeof err) != 0) {
        fprintf(stderr, "servprof compare: %s\n", err);
        rc = 1;
    }
    json_decref(doc);
out:
    free(gates);
    return rc;
}
