/*
 * fmt.c — text formats of the reports: local datetimes and CSV fields.
 *
 * Datetimes are "YYYY-MM-DD HH:MM:SS.ffffff" in the local time zone of the
 * machine that parses (TZ applies). localtime_r is costly per row, so the
 * formatted second is cached and only the microseconds change between rows
 * of the same second.
 */
#include <string.h>
#include <time.h>

#include "parse.h"

void spp_fmt_datetime(int64_t ns, char *buf)
{
    static time_t cached_sec = (time_t)-1;
    static char cached[24];
    int64_t sec = ns / 1000000000;
    int64_t rem = ns % 1000000000;
    if (rem < 0) {
        rem += 1000000000;
        sec--;
    }
    if ((time_t)sec != cached_sec) {
        time_t t = (time_t)sec;
        struct tm tm;
        localtime_r(&t, &tm);
        strftime(cached, sizeof cached, "%Y-%m-%d %H:%M:%S", &tm);
        cached_sec = t;
    }
    size_t n = strlen(cached);
    memcpy(buf, cached, n);
    int us = (int)(rem / 1000);
    buf[n] = '.';
    for (int i = 6; i >= 1; i--) {
        buf[n + (size_t)i] = (char)('0' + us % 10);
        us /= 10;
    }
    buf[n + 7] = 0;
}

void spp_csv_field(FILE *f, const char *s, int n)
{
    int quote = 0;
    for (int i = 0; i < n; i++)
        if (s[i] == ',' || s[i] == '"' || s[i] == '\n' || s[i] == '\r') {
            quote = 1;
            break;
        }
    if (!quote) {
        fwrite_unlocked(s, 1, (size_t)n, f);
        return;
    }
    putc_unlocked('"', f);
    for (int i = 0; i < n; i++) {
        if (s[i] == '"')
            putc_unlocked('"', f);
        putc_unlocked(s[i], f);
    }
    putc_unlocked('"', f);
}

void spp_put_int(FILE *f, long long v)
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
    fwrite_unlocked(buf + i, 1, (size_t)(24 - i), f);
}

int spp_utf8_len(const char *sp, const char *ep)
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
