/* SPDX-License-Identifier: Apache-2.0 */
/*
 * colmap.c — finding report columns by name in the parser's rows, for the
 * consumers of those rows (servprof analyze and servprof report read them
 * through the tap, or back from a profiler.db, with the same code).
 *
 * A consumer names the columns it wants; the map is recomputed only when a
 * row comes with another column list (each table has one, so in practice
 * once per table), so reading a value is an index and a switch.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "colmap.h"
#include "table.h"


void prs_colmap_fit(prs_colmap *m, const prs_col *cols, int ncols, const char *const *names, int n)
{
    if (m->cols == cols && m->ncols == ncols)
        return;
    m->cols = cols;
    m->ncols = ncols;
    for (int k = 0; k < n && k < PRS_COLMAP_MAX; k++) {
        m->idx[k] = -1;
        for (int i = 0; i < ncols; i++)
            if (!strcmp(cols[i].name, names[k]))
                m->idx[k] = i;
    }
}

double prs_colmap_num(const prs_val *v, const prs_colmap *m, int k)
{
    int i = m->idx[k];
    if (i < 0)
        return NAN;
    switch (v[i].kind) {
    case PRS_INT: return (double)v[i].i;
    case PRS_REAL:
    case PRS_MS: return v[i].d;
    case PRS_TEXT: {
        char buf[64];
        int n = v[i].n < 63 ? v[i].n : 63;
        memcpy(buf, v[i].s, (size_t)n);
        buf[n] = 0;
        char *e;
        double d = strtod(buf, &e);
        return e == buf ? NAN : d;
    }
    default: return NAN;
    }
}

const char *prs_colmap_text(const prs_val *v, const prs_colmap *m, int k, int *len)
{
    int i = m->idx[k];
    if (i < 0 || v[i].kind != PRS_TEXT) {
        *len = 0;
        return "";
    }
    *len = v[i].n;
    return v[i].s;
}
