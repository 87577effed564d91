/* SPDX-License-Identifier: Apache-2.0 */
/*
 * compare_out.c — `servprof compare A B -o DIR`: the comparison as files,
 * beside the text on stdout:
 *
 *   span_comparation_result.csv  the reference's file (its name, spelling
 *                                included, and its columns): per span name
 *                                name, Golden-AVG, Golden-P50, Golden-P90,
 *                                Input-AVG, Input-P50, Input-P90, DIFF-AVG,
 *                                DIFF-P50, DIFF-P90, RDIFF-AVG(%), RDIFF-P50(%),
 *                                RDIFF-P90(%)
 *   compare.json                 the whole compare document (as --format json)
 *
 * Golden is A and Input is B (the reference's `compare INPUT GOLDEN` puts
 * the baseline second; ours puts it first: `servprof compare BASE NEW`),
 * DIFF = B − A, RDIFF = DIFF / A × 100 (empty when A is 0). Times are in
 * milliseconds. The figures are the compare document's rows
 * span.NAME.mean / .p50 / .p90 — the same numbers the text shows, so the
 * CSV is a view of the document, not a second computation. Spans seen in
 * one run only are listed in the document (spans_only_in_a/b), not here.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "compare.h"
#include "fsutil.h"
#include "render.h"

/* The row of metric key, or NULL. */
static json_t *row_of(const json_t *rows, const char *key)
{
    size_t i;
    json_t *r;
    json_array_foreach(rows, i, r) {
        const char *k = json_string_value(json_object_get(r, "metric"));
        if (k && !strcmp(k, key))
            return r;
    }
    return NULL;
}

static double num(const json_t *r, const char *side)
{
    const json_t *v = r ? json_object_get(r, side) : NULL;
    return json_is_number(v) ? json_number_value(v) : NAN;
}

static void put_num(FILE *f, double x)
{
    if (isnan(x))
        fputs(",", f);
    else
        fprintf(f, ",%.10g", x);
}

static int write_csv(const json_t *doc, FILE *f)
{
    static const char *const stat[3] = {"mean", "p50", "p90"};
    fputs("name,Golden-AVG,Golden-P50,Golden-P90,Input-AVG,Input-P50,Input-P90,DIFF-AVG,DIFF-P50,DIFF-P90,"
          "RDIFF-AVG(%),RDIFF-P50(%),RDIFF-P90(%)\n", f);
    const json_t *rows = json_object_get(doc, "rows");
    size_t i;
    json_t *r;
    json_array_foreach(rows, i, r) {
        const char *k = json_string_value(json_object_get(r, "metric"));
        size_t n = k ? strlen(k) : 0;
        /* one line per span, at its .mean row: span.NAME.mean */
        if (n < 11 || strncmp(k, "span.", 5) != 0 || strcmp(k + n - 5, ".mean") != 0)
            continue;
        char name[512], key[600];
        snprintf(name, sizeof name, "%.*s", (int)(n - 10), k + 5);
        double a[3], b[3];
        for (int s = 0; s < 3; s++) {
            snprintf(key, sizeof key, "span.%s.%s", name, stat[s]);
            const json_t *row = row_of(rows, key);
            a[s] = num(row, "a");
            b[s] = num(row, "b");
        }
        int any = 0; /* the reference drops rows whose every figure is 0 or empty */
        for (int s = 0; s < 3; s++)
            any |= (!isnan(a[s]) && a[s] != 0) || (!isnan(b[s]) && b[s] != 0);
        if (!any)
            continue;
        sa_csv_str(f, name);
        for (int s = 0; s < 3; s++)
            put_num(f, a[s]);
        for (int s = 0; s < 3; s++)
            put_num(f, b[s]);
        for (int s = 0; s < 3; s++)
            put_num(f, b[s] - a[s]);
        for (int s = 0; s < 3; s++)
            put_num(f, a[s] != 0 && !isnan(a[s]) ? (b[s] - a[s]) / a[s] * 100 : NAN);
        fputc('\n', f);
    }
    return ferror(f) ? -1 : 0;
}

int sa_compare_write_files(const json_t *doc, const char *dir, char *err, size_t errcap)
{
    int e = sp_mkdirs(dir, 0755);
    if (e != 0) {
        snprintf(err, errcap, "cannot create %s: %s", dir, strerror(-e));
        return -1;
    }
    static const char *const names[2] = {"span_comparation_result.csv", "compare.json"};
    for (int k = 0; k < 2; k++) {
        char p[4096];
        snprintf(p, sizeof p, "%s/%s", dir, names[k]);
        FILE *f = fopen(p, "w");
        if (!f) {
            snprintf(err, errcap, "cannot write %s: %s", p, strerror(errno));
            return -1;
        }
        int rc = k == 0 ? write_csv(doc, f) : json_dumpf(doc, f, JSON_INDENT(1) | JSON_REAL_PRECISION(10));
        if (k == 1)
            fputc('\n', f);
        if (fclose(f) != 0 || rc != 0) {
            snprintf(err, errcap, "writing %s failed: %s", p, strerror(errno ? errno : EIO));
            remove(p);
            return -1;
        }
    }
    return 0;
}
