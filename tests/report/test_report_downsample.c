/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_report_downsample.c — the report's min/max-per-bucket reduction
 * (tool/report/downsample.c): small sets pass unchanged; long sets shrink to
 * at most two rows per bucket, in time order, keeping every column's extremes
 * over each bucket (a one-row spike survives); NaN never wins a bucket and a
 * column NaN over a whole bucket stays NaN; the JSON form rounds values and
 * writes NaN as null.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "report.h"

static rpt_series *ramp(size_t n, int ncols)
{
    rpt_series *s = rpt_series_new(ncols);
    CHECK(s != NULL);
    for (size_t i = 0; i < n; i++) {
        double v[4];
        for (int c = 0; c < ncols; c++)
            v[c] = (double)((i * 7 + (size_t)c * 3) % 10); /* values 0..9, varying inside every bucket */
        CHECK(rpt_series_add(s, (double)i * 0.001, v) == 0);
    }
    return s;
}

static void small_sets_unchanged(void)
{
    rpt_series *s = ramp(40, 2);
    rpt_series *d = rpt_downsample(s, 20);
    CHECK(d != NULL);
    CHECK_INT(d->n, 40);
    for (size_t i = 0; i < 40; i++) {
        CHECK(d->t[i] == s->t[i]);
        CHECK(d->v[1][i] == s->v[1][i]);
    }
    rpt_series_free(d);
    rpt_series_free(s);
}

static void long_sets_keep_extremes(void)
{
    size_t n = 100000;
    rpt_series *s = ramp(n, 3);
    /* One spike in column 1, one dip in column 2, far from the bucket edges. */
    s->v[1][54321] = 1000;
    s->v[2][777] = -5;
    rpt_series *d = rpt_downsample(s, 500);
    CHECK(d != NULL);
    CHECK(d->n <= 2 * 500 + 2);
    CHECK(d->n >= 2 * 500 - 2);
    double mx = -INFINITY, mn = INFINITY;
    for (size_t i = 0; i < d->n; i++) {
        if (i)
            CHECK(d->t[i] >= d->t[i - 1]);
        mx = fmax(mx, d->v[1][i]);
        mn = fmin(mn, d->v[2][i]);
        /* Every bucket of this ramp holds 0..9 in every column. */
        CHECK(d->v[0][i] == 0 || d->v[0][i] == 9);
    }
    CHECK(mx == 1000);
    CHECK(mn == -5);
    /* The first and last times survive: the chart spans the whole run. */
    CHECK(d->t[0] == s->t[0]);
    CHECK(d->t[d->n - 1] == s->t[n - 1]);
    rpt_series_free(d);
    rpt_series_free(s);
}

static void nan_never_wins(void)
{
    rpt_series *s = rpt_series_new(2);
    for (int i = 0; i < 1000; i++) {
        double v[2] = {i % 2 ? NAN : (double)i, NAN}; /* column 1 is NaN everywhere */
        CHECK(rpt_series_add(s, i, v) == 0);
    }
    rpt_series *d = rpt_downsample(s, 10);
    CHECK(d != NULL);
    CHECK(d->n <= 22);
    int maxseen = 0;
    for (size_t i = 0; i < d->n; i++) {
        CHECK(!isnan(d->v[0][i]));
        CHECK(isnan(d->v[1][i]));
        if (d->v[0][i] == 998)
            maxseen = 1;
    }
    CHECK(maxseen);
    const char *names[] = {"a", "b"};
    json_t *j = rpt_series_json(d, names, 6);
    CHECK(j != NULL);
    CHECK(json_array_size(json_object_get(j, "t")) == d->n);
    CHECK(json_is_null(json_array_get(json_object_get(j, "b"), 0)));
    json_decref(j);
    rpt_series_free(d);
    rpt_series_free(s);
}

static void json_rounds(void)
{
    rpt_series *s = rpt_series_new(1);
    double v = 3.14159265358979;
    CHECK(rpt_series_add(s, 1.5, &v) == 0);
    const char *names[] = {"v"};
    json_t *j = rpt_series_json(s, names, 4);
    char *text = json_dumps(j, JSON_COMPACT | JSON_REAL_PRECISION(9));
    CHECK(text != NULL);
    CHECK_STR(text, "{\"t\":[1.5],\"v\":[3.142]}");
    free(text);
    json_decref(j);
    rpt_series_free(s);
}

static void empty_and_flat(void)
{
    rpt_series *s = rpt_series_new(1);
    rpt_series *d = rpt_downsample(s, 10);
    CHECK(d != NULL && d->n == 0);
    rpt_series_free(d);
    /* All rows at one time: one bucket, two rows (min, max). */
    for (int i = 0; i < 100; i++) {
        double v = i;
        CHECK(rpt_series_add(s, 5.0, &v) == 0);
    }
    d = rpt_downsample(s, 10);
    CHECK(d != NULL);
    CHECK_INT(d->n, 2);
    CHECK(d->v[0][0] == 0 && d->v[0][1] == 99);
    rpt_series_free(d);
    rpt_series_free(s);
}

int main(void)
{
    small_sets_unchanged();
    long_sets_keep_extremes();
    nan_never_wins();
    json_rounds();
    empty_and_flat();
    CHECK_DONE();
}
