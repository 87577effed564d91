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
#define PRS_COLMAP_MAX 16
typedef struct prs_colmap {
    const prs_col *cols;
    int ncols;
    int idx[PRS_COLMAP_MAX]; /* column of names[k], -1 when absent */
} prs_colmap;
void prs_colmap_fit(prs_colmap *m, const prs_col *cols, int ncols, const char *const *names, int n);
/* Column k of a row as a number: NaN when absent, NULL or not a number. */
double prs_colmap_num(const prs_val *v, const prs_colmap *m, int k);
/* Column k as text ("" and *len 0 when absent or not text); not NUL-terminated. */
const char *prs_colmap_text(const prs_val *v, const prs_colmap *m, int k, int *len);

#endif
