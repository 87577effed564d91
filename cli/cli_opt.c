/*
 * cli_opt.c — `--opt=value` / `--opt value` / `-o value` matching (cli_opt.h).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli_opt.h"

int cli_opt(int argc, char **argv, int *i, const char *lng, const char *shrt, const char **val, const char *verb)
{
    const char *a = argv[*i];
    size_t n = strlen(lng);
    if (!strncmp(a, lng, n) && a[n] == '=') {
        *val = a + n + 1;
        return 1;
    }
    if (strcmp(a, lng) != 0 && !(shrt && !strcmp(a, shrt)))
        return 0;
    if (*i + 1 >= argc) {
        fprintf(stderr, "servprof %s: %s needs a value\n", verb, lng);
        return -1;
    }
    *val = argv[++*i];
    return 1;
}

int cli_double(const char *v, double lo, double hi, double *out)
{
    char *e;
    double d = strtod(v, &e);
    if (e == v || *e || !(d >= lo && d <= hi))
        return -1;
    *out = d;
    return 0;
}

int cli_long(const char *v, long lo, long hi, long *out)
{
    char *e;
    long n = strtol(v, &e, 10);
    if (e == v || *e || n < lo || n > hi)
        return -1;
    *out = n;
    return 0;
}
