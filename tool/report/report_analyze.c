/* SPDX-License-Identifier: Apache-2.0 */
/*
 * report_analyze.c — calls analyze's C entry point (tool/analyze/analyze.h)
 * for the report (see report_analyze.h).
 *
 * Raw stores are parsed once: analyze runs the parse (every output off) and
 * the report's tap rides on it (sa_opts.also), so the charts get the very
 * rows analyze computes its figures from — one parse, one computation, two
 * views. A parse output folder is read by both from its profiler.db.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analyze.h"
#include "compare.h"
#include "report_analyze.h"

json_t *rpt_analyze(const char *input, const char *dir, rpt_rows *rows, int progress)
{
    sa_opts o;
    sa_opts_init(&o);
    o.input = dir;
    o.progress = progress;
    prs_tap tap;
    if (rows) {
        tap = rpt_rows_tap(rows);
        o.also = &tap;
        o.tap_counters = 1;
    }
    char err[512] = "";
    json_t *doc = sa_analyze(&o, err, sizeof err);
    if (doc) /* the user's input, not the folder the report made for it */
        json_object_set_new(doc, "input", json_string(input));
    else
        fprintf(stderr, "servprof report: analyze failed on %s: %s; the page shows the charts without its "
                        "figures and findings\n", input, err[0] ? err : "no reason given");
    return doc;
}

json_t *rpt_compare(const char *input_a, const char *dir_a, const char *input_b, const char *dir_b)
{
    sa_opts a, b;
    sa_opts_init(&a);
    sa_opts_init(&b);
    a.input = dir_a;
    b.input = dir_b;
    sa_compare_opts co;
    sa_compare_opts_init(&co);
    char err[512] = "";
    json_t *doc = sa_compare(&a, &b, &co, err, sizeof err);
    if (!doc)
        fprintf(stderr, "servprof report: analyze's compare of %s and %s failed: %s; the page has no compare "
                        "table\n", input_a, input_b, err[0] ? err : "no reason given");
    return doc;
}
