/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fmt.h — text formats of the reports (fmt.c): local and UTC datetimes,
 * integers and %.6g numbers without printf, CSV fields, UTF-8 lengths.
 */
#ifndef SERVPROF_PARSE_FMT_H
#define SERVPROF_PARSE_FMT_H

#include <stdint.h>
#include <stdio.h>

/* "YYYY-MM-DD HH:MM:SS.ffffff" in local time; buf >= 32. */
void prs_fmt_datetime(int64_t ns, char *buf);
/* The same in UTC with us_sep before the microseconds (27 bytes). */
void prs_fmt_datetime_utc(int64_t ns, char *buf, char us_sep);
/* Length of the valid UTF-8 sequence at p (before e): 1..4, or 0 if invalid. */
int prs_utf8_len(const char *p, const char *e);
/* Writes v in decimal (no locale, no printf). */
void prs_put_int(FILE *f, long long v);
/* Appends a CSV text field (quoted when needed; a text a spreadsheet would
 * run as a formula, starting with = + - @ tab or CR and not a number, gets
 * a leading ', quoted). */
void prs_csv_field(FILE *f, const char *s, int n);
/* Writes d as printf's "%.6g" would into buf (>= 32 bytes) and returns the
 * length: the common cases (integers, ratios, values of 1e-4 .. 1e15) are
 * formatted here, the rest (near a rounding tie, NaN, huge, tiny) by
 * snprintf, so the text is always printf's. */
int prs_fmt_g6(double d, char *buf);

#endif
