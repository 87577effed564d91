/*
 * cli_opt.h — option matching for the verbs that take `--opt=value` as
 * well as `--opt value` (and a short form, e.g. -i PATH).
 */
#ifndef SERVPROF_CLI_OPT_H
#define SERVPROF_CLI_OPT_H

/* Matches argv[*i] against the long name lng ("--input-path") or the short
 * one shrt ("-i", or NULL). Returns 1 with *val set (and *i moved past a
 * separate value), -1 when it matches but the value is missing (message
 * printed, prefixed by verb), 0 when it does not match. */
int cli_opt(int argc, char **argv, int *i, const char *lng, const char *shrt, const char **val, const char *verb);

/* Parses all of v as a number in [lo, hi]: 0, or -1 (nothing stored). */
int cli_double(const char *v, double lo, double hi, double *out);
int cli_long(const char *v, long lo, long hi, long *out);

#endif
