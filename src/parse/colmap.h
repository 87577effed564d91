/* SPDX-License-Identifier: Apache-2.0 */
/*
 * colmap.h — finds a report row's columns by name (colmap.c), for the
 * consumers of report rows: analyze's tap, rows read back from profiler.db.
 */
#ifndef SERVPROF_PARSE_COLMAP_H
#define SERVPROF_PARSE_COLMAP_H

#include "table.h"

/* Columns of a table's rows found by name (colmap.c), for the consumers of
 * report rows (the tap's, or rows read back from a profiler.db). The map is
 * recomputed when a row comes with another column list. */
#define SPP_COLMAP_MAX 16
typedef struct spp_colmap {
    const spp_col *cols;
    int ncols;
    int idx[SPP_COLMAP_MAX]; /* column of names[k], -1 when absent */
} spp_colmap;
void spp_colmap_fit(spp_colmap *m, const spp_col *cols, int ncols, const char *const *names, int n);
/* Column k of a row as a number: NaN when absent, NULL or not a number. */
double spp_colmap_num(const spp_val *v, const spp_colmap *m, int k);
/* Column k as text ("" and *len 0 when absent or not text); not NUL-terminated. */
const char *spp_colmap_text(const spp_val *v, const spp_colmap *m, int k, int *len);

#endif
