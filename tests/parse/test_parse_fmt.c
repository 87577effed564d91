/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_parse_fmt.c — the writers' number and field formatting (fmt.c)
 * gives exactly printf's text: prs_fmt_g6 against snprintf("%.6g") on
 * edge cases (ties, powers of ten, limits of the fast range, NaN, -0) and
 * on a deterministic spread of values; prs_put_int and prs_csv_field
 * through a real FILE.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "fmt.h"

static int same_as_printf(double d)
{
    char a[64], b[64];
    int n = prs_fmt_g6(d, a);
    snprintf(b, sizeof b, "%.6g", d);
    if (strcmp(a, b) != 0 || n != (int)strlen(b)) {
        fprintf(stderr, "%.17g: got '%s', printf '%s'\n", d, a, b);
        return 0;
    }
    return 1;
}

static char *written(void (*fn)(FILE *, const void *), const void *arg)
{
    static char buf[4096];
    FILE *f = tmpfile();
    fn(f, arg);
    rewind(f);
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    buf[n] = 0;
    fclose(f);
    return buf;
}

static void w_int(FILE *f, const void *arg) { prs_put_int(f, *(const long long *)arg); }
static void w_field(FILE *f, const void *arg) { prs_csv_field(f, arg, (int)strlen(arg)); }

int main(void)
{
    static const double edge[] = {
        0, -0.0, 1, -1, 0.5, 0.1, 0.25, 1.0 / 3, 2.0 / 3, 1e-4, 9.99999e-5, 0.0001, 0.000123456789,
        1e-5, 123456, 999999, 999999.4, 999999.5, 999999.6, 1e6, 1e15, 1e16, 123456.5, 12345.65,
        0.0000125, 0.125, 9.999995, 9.9999949, 99.99995, 0.999999, 0.9999995, 1e300, 1e-300,
        4.9e-324, INFINITY, -INFINITY, NAN, 0.7, 0.3, 57.14285714, 100, 1000000.5, 3.14159265,
    };
    int bad = 0;
    for (size_t i = 0; i < sizeof edge / sizeof *edge; i++)
        bad += !same_as_printf(edge[i]) + !same_as_printf(-edge[i]);
    /* ratios as the reports make them (kv usage, hit rates), decimals of
     * every magnitude, and values just around ties */
    uint64_t x = 88172645463325252ULL;
    for (int i = 0; i < 300000; i++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        double d;
        switch (i % 4) {
        case 0: d = (double)(x % 100000) / (double)(x % 99991 + 1); break;
        case 1: d = (double)(x % 2000001) / 1e6; break;
        case 2: d = ldexp((double)(x % 1000003), (int)(x % 50) - 40); break;
        default: d = (double)(x % 10000000) / 10.0 + 0.05; break;
        }
        bad += !same_as_printf(d);
    }
    CHECK_INT(bad, 0);

    long long v = 0;
    CHECK_STR(written(w_int, &v), "0");
    v = -1234567890123LL;
    CHECK_STR(written(w_int, &v), "-1234567890123");
    v = INT64_MIN;
    CHECK_STR(written(w_int, &v), "-9223372036854775808");
    CHECK_STR(written(w_field, "plain"), "plain");
    CHECK_STR(written(w_field, "a,b"), "\"a,b\"");
    CHECK_STR(written(w_field, "[\"r1\",\"r2\"]"), "\"[\"\"r1\"\",\"\"r2\"\"]\"");
    CHECK_STR(written(w_field, "line\nbreak"), "\"line\nbreak\"");
    CHECK_STR(written(w_field, ""), "");
    CHECK_DONE();
}
