/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fmt.c — text formats of the reports: local datetimes and CSV fields.
 *
 * Datetimes are "YYYY-MM-DD HH:MM:SS.ffffff" in the local time zone of the
 * machine that parses (TZ applies); profiler.db's reference-style texts are
 * in UTC (prs_fmt_datetime_utc, for dbcompat.c). localtime_r is costly per row, so the
 * formatted second is cached and only the microseconds change between rows
 * of the same second.
 */
#include <math.h>
#include <string.h>
#include <time.h>

#include "fmt.h"



/* The formatted second of the last call, per time zone (the parse formats
 * from one thread). */
typedef struct dt_cache { time_t sec; char text[24]; } dt_cache;

static void fmt_cached(int64_t ns, char *buf, dt_cache *c, int utc, char us_sep)
{
    int64_t sec = ns / 1000000000;
    int64_t rem = ns % 1000000000;
    if (rem < 0) {
        rem += 1000000000;
        sec--;
    }
    if ((time_t)sec != c->sec) {
        time_t t = (time_t)sec;
        struct tm tm;
        if (utc)
            gmtime_r(&t, &tm);
        else
            localtime_r(&t, &tm);
        strftime(c->text, sizeof c->text, "%Y-%m-%d %H:%M:%S", &tm);
        c->sec = t;
    }
    size_t n = strlen(c->text);
    memcpy(buf, c->text, n);
    int us = (int)(rem / 1000);
    buf[n] = us_sep;
    for (int i = 6; i >= 1; i--) {
        buf[n + (size_t)i] = (char)('0' + us % 10);
        us /= 10;
    }
    buf[n + 7] = 0;
}

/* The caches below are the thread's: the text of one second, the same
 * whoever asks, so parses (or writer threads) never share one. */
void prs_fmt_datetime(int64_t ns, char *buf)
{
    static _Thread_local dt_cache local = {(time_t)-1, ""};
    fmt_cached(ns, buf, &local, 0, '.');
}

void prs_fmt_datetime_utc(int64_t ns, char *buf, char us_sep)
{
    static _Thread_local dt_cache utc = {(time_t)-1, ""};
    fmt_cached(ns, buf, &utc, 1, us_sep);
}

/* Bytes that make a CSV field need quotes. */
static const unsigned char csv_special[256] = {['\n'] = 1, ['\r'] = 1, ['"'] = 1, [','] = 1};

/* A decimal number as a spreadsheet reads one ([+-]digits[.digits][e[+-]digits]). */
static int is_number(const char *s, int n)
{
    int i = 0, d = 0;
    if (i < n && (s[i] == '+' || s[i] == '-'))
        i++;
    while (i < n && s[i] >= '0' && s[i] <= '9')
        i++, d++;
    if (i < n && s[i] == '.')
        for (i++; i < n && s[i] >= '0' && s[i] <= '9'; i++)
            d++;
    if (!d)
        return 0;
    if (i < n && (s[i] == 'e' || s[i] == 'E')) {
        int e = 0;
        i++;
        if (i < n && (s[i] == '+' || s[i] == '-'))
            i++;
        while (i < n && s[i] >= '0' && s[i] <= '9')
            i++, e++;
        if (!e)
            return 0;
    }
    return i == n;
}

/* CSV injection (OWASP): a spreadsheet runs a text cell that starts with
 * = + - @ tab or CR as a formula (`=cmd|' /C calc'!A0`); such a cell gets a
 * leading ' (shown by no spreadsheet, and the text stays readable).
 * Numbers (-3, +1.5e3) are left alone: they are no formula. Ids come from
 * the profiled server's clients, so they are untrusted. */
static int formula_like(const char *s, int n)
{
    if (n == 0)
        return 0;
    switch (s[0]) {
    case '=': case '@': case '\t': case '\r': return 1;
    case '+': case '-': return !is_number(s, n);
    default: return 0;
    }
}

void prs_csv_field(FILE *f, const char *s, int n)
{
    if (__builtin_expect(n > 0 && (s[0] == '=' || s[0] == '+' || s[0] == '-' || s[0] == '@' || s[0] == '\t' ||
                                   s[0] == '\r'), 0) && formula_like(s, n)) {
        putc_unlocked('"', f);
        putc_unlocked('\'', f);
        for (int i = 0; i < n; i++) {
            if (s[i] == '"')
                putc_unlocked('"', f);
            putc_unlocked(s[i], f);
        }
        putc_unlocked('"', f);
        return;
    }
    int i = 0;
    while (i < n && !csv_special[(unsigned char)s[i]])
        i++;
    if (i == n) {
        fwrite_unlocked(s, 1, (size_t)n, f);
        return;
    }
    putc_unlocked('"', f);
    for (i = 0; i < n; i++) {
        if (s[i] == '"')
            putc_unlocked('"', f);
        putc_unlocked(s[i], f);
    }
    putc_unlocked('"', f);
}

void prs_put_int(FILE *f, long long v)
{
    char buf[24];
    int i = 24;
    unsigned long long u = v < 0 ? 0ULL - (unsigned long long)v : (unsigned long long)v;
    do {
        buf[--i] = (char)('0' + u % 10);
        u /= 10;
    } while (u);
    if (v < 0)
        buf[--i] = '-';
    /* putc_unlocked is an inlined buffer store; fwrite_unlocked a call
     * costing more than the few digits of a number. */
    while (i < 24)
        putc_unlocked(buf[i++], f);
}

int prs_utf8_len(const char *sp, const char *ep)
{
    const unsigned char *p = (const unsigned char *)sp, *e = (const unsigned char *)ep;
    unsigned c = p[0];
    int n;
    unsigned min;
    if (c < 0x80)
        return 1;
    if (c >= 0xC2 && c <= 0xDF)
        n = 2, min = 0x80;
    else if (c >= 0xE0 && c <= 0xEF)
        n = 3, min = 0x800;
    else if (c >= 0xF0 && c <= 0xF4)
        n = 4, min = 0x10000;
    else
        return 0;
    if (e - p < n)
        return 0;
    unsigned v = c & (0x7F >> n);
    for (int i = 1; i < n; i++) {
        if ((p[i] & 0xC0) != 0x80)
            return 0;
        v = v << 6 | (p[i] & 0x3F);
    }
    if (v < min || v > 0x10FFFF || (v >= 0xD800 && v <= 0xDFFF))
        return 0;
    return n;
}

/* %.6g: 6 significant digits, exponent X of the rounded value; fixed
 * notation with trailing zeros removed when -4 <= X < 6. The digits are
 * round(|d| * 10^(5 - X)): the product is within a few ulps of the exact
 * value, so the rounding is certain unless it lies near a tie (then printf
 * decides, as it does for what is outside this range). */
int prs_fmt_g6(double d, char *buf)
{
    static const double p10[] = {1, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9}; /* exact */
    double a = fabs(d);
    if (!(a >= 1e-4 && a < 999999.5)) /* NaN too */
        goto slow;
    int x = (int)floor(log10(a)); /* may be off by one near a power of ten: checked below */
    if (x < -4 || x > 5)
        goto slow;
    double v = a * p10[5 - x];
    double r = floor(v + 0.5);
    if (fabs(v - floor(v) - 0.5) < 1e-6)
        goto slow; /* near a tie */
    long long m = (long long)r;
    if (m == 1000000) { /* rounded up to the next power of ten */
        m = 100000;
        x++;
        if (x > 5)
            goto slow;
    }
    if (m < 100000 || m > 999999)
        goto slow;
    char dig[6];
    for (int i = 5; i >= 0; i--) {
        dig[i] = (char)('0' + m % 10);
        m /= 10;
    }
    int nd = 6;
    while (nd > 1 && dig[nd - 1] == '0')
        nd--;
    int n = 0;
    if (d < 0)
        buf[n++] = '-';
    if (x >= 0) {
        for (int i = 0; i <= x; i++)
            buf[n++] = dig[i];
        if (nd > x + 1) {
            buf[n++] = '.';
            for (int i = x + 1; i < nd; i++)
                buf[n++] = dig[i];
        }
    } else {
        buf[n++] = '0';
        buf[n++] = '.';
        for (int i = 0; i < -x - 1; i++)
            buf[n++] = '0';
        for (int i = 0; i < nd; i++)
            buf[n++] = dig[i];
    }
    buf[n] = 0;
    return n;
slow:
    return snprintf(buf, 32, "%.6g", d);
}
