/*
 * cmd_compare.c — `servprof compare A B`: two profiles (raw stores or
 * parse output folders) metric by metric, with a bootstrap significance
 * test and --fail-if gates for CI. Exit status: 0 compared (no gate
 * tripped), 3 at least one --fail-if gate tripped, 1 an input could not be
 * analyzed, 2 usage (including a malformed --fail-if).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli_opt.h"
#include "commands.h"
#include "compare.h"

static void usage(FILE *f)
{
    fputs("usage: servprof compare A B [--format text|json] [--fail-if EXPR ...] [--resamples N]\n"
          "                        [--min-effect PCT] [--min-abs-ms MS]\n"
          "  A, B: raw stores or parse output folders (as for analyze). Compares request latencies,\n"
          "  throughput, step and span metrics; significance by a bootstrap interval of B - A.\n"
          "  --fail-if METRIC>LIMIT or METRIC<LIMIT (also >=, <=); LIMIT is a change in % (+5%)\n"
          "  or in the metric's unit (2ms, 0.1), e.g. --fail-if 'ttft.p99>+5%'. A tested metric\n"
          "  trips only on a significant change. Exit status: 0 no gate tripped, 3 a gate tripped,\n"
          "  1 an input could not be read, 2 usage. See docs/analyze.md.\n", f);
}

static void bad(const char *opt, const char *val, const char *accepted)
{
    fprintf(stderr, "servprof compare: %s '%s' is not valid; accepted: %s\n", opt, val, accepted);
}

int cmd_compare(int argc, char **argv)
{
    sa_opts a, b;
    sa_opts_init(&a);
    sa_opts_init(&b);
    sc_opts o;
    sc_opts_init(&o);
    const char *format = "text", *v, **gates = NULL;
    int ngates = 0, rc = 2;
    for (int i = 1; i < argc; i++) {
        const char *x = argv[i];
        int m;
        if (!strcmp(x, "-h") || !strcmp(x, "--help")) {
            usage(stdout);
            rc = 0;
            goto out;
        } else if ((m = cli_opt(argc, argv, &i, "--format", NULL, &v, "compare"))) {
            if (m < 0)
                goto out;
            if (strcmp(v, "text") && strcmp(v, "json")) {
                bad("--format", v, "text, json");
                goto out;
            }
            format = v;
        } else if ((m = cli_opt(argc, argv, &i, "--fail-if", NULL, &v, "compare"))) {
            if (m < 0)
                goto out;
            gates = realloc(gates, (size_t)(ngates + 1) * sizeof *gates);
            gates[ngates++] = v;
        } else if ((m = cli_opt(argc, argv, &i, "--resamples", NULL, &v, "compare"))) {
            long n;
            if (m < 0 || cli_long(v, 20, 100000, &n) != 0) {
                if (m > 0)
                    bad("--resamples", v, "20..100000");
                goto out;
            }
            o.resamples = (int)n;
        } else if ((m = cli_opt(argc, argv, &i, "--min-effect", NULL, &v, "compare"))) {
            if (m < 0 || cli_double(v, 0, 1000, &o.min_effect) != 0) {
                if (m > 0)
                    bad("--min-effect", v, "a percentage 0..1000");
                goto out;
            }
            o.min_effect /= 100;
        } else if ((m = cli_opt(argc, argv, &i, "--min-abs-ms", NULL, &v, "compare"))) {
            if (m < 0 || cli_double(v, 0, 1e6, &o.min_abs_ms) != 0) {
                if (m > 0)
                    bad("--min-abs-ms", v, "milliseconds >= 0");
                goto out;
            }
        } else if (x[0] != '-' && !a.input) {
            a.input = x;
        } else if (x[0] != '-' && !b.input) {
            b.input = x;
        } else {
            fprintf(stderr, "servprof compare: unknown option or extra argument '%s'; see servprof compare --help\n",
                    x);
            goto out;
        }
    }
    if (!a.input || !b.input) {
        fprintf(stderr, "servprof compare: two inputs A and B are required\n");
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
    json_t *doc = sc_compare(&a, &b, &o, err, sizeof err);
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
        int t = sc_gate(doc, gates[g], msg, sizeof msg);
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
        sc_render_text(doc, stdout);
        size_t i;
        json_t *r;
        json_array_foreach(json_object_get(doc, "gates"), i, r)
            printf("%s\n", json_string_value(json_object_get(r, "detail")));
    }
    json_decref(doc);
    rc = tripped ? 3 : 0;
out:
    free(gates);
    return rc;
}
