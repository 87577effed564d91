/* SPDX-License-Identifier: Apache-2.0 */
/*
 * report_ch.c — feeds report_rows.c from a database a run was exported to
 * (`servprof report --from clickhouse://…`).
 *
 * The rows come through an rpt_source (report.h) that tool/cli builds on
 * tool/export's reader (chread.c): the report stays free of any backend,
 * as the layout rules want, and this file only asks for the tables the
 * charts need — the very list report_db.c reads from a profiler.db, in the
 * same order — and hands each row to rpt_rows_add as the parser's own row
 * would be. So the page is the same whether its rows were parsed here, read
 * from profiler.db or read back from the database.
 */
#include <stdio.h>
#include <unistd.h>

#include "repcols.h"
#include "report.h"

static void add(void *ctx, const char *key, const prs_col *cols, int ncols, const prs_val *v)
{
    rpt_rows_add(ctx, key, cols, ncols, v);
}

int rpt_source_read(const rpt_source *src, rpt_rows *r, int progress)
{
    static const char *const tables[] = {PRS_T_REQUEST, PRS_T_BATCH, PRS_T_FORWARD, PRS_T_COUNTER,
                                         PRS_T_MOE_RANK, PRS_T_EPLB};
    if (progress < 0)
        progress = isatty(2);
    int found = 0;
    for (size_t i = 0; i < sizeof tables / sizeof *tables; i++) {
        char err[1024] = "";
        long long n = 0;
        int rc = src->table(src->ctx, tables[i], add, r, &n, err, sizeof err);
        if (rc < 0) {
            fprintf(stderr, "servprof report: %s; no report written\n", err);
            return -1;
        }
        found += rc == 0;
        if (progress)
            fprintf(stderr, "servprof report: %s: %s %lld rows\n", src->label, tables[i], rc == 0 ? n : 0LL);
    }
    if (!found) {
        fprintf(stderr, "servprof report: %s holds none of the report tables (request, batch, forward, counter); "
                        "no report written\n", src->label);
        return -1;
    }
    return 0;
}
