/* SPDX-License-Identifier: Apache-2.0 */
/*
 * report_tap.c — the parser tap that feeds report_rows.c while a parse runs.
 *
 * With raw stores as input, analyze parses them in-process with every output
 * off and its own tap; the report rides on that same parse (sa_opts.also):
 * each report row (and the timeline's counter rows, sa_opts.tap_counters)
 * reaches rpt_rows_add as it is made. Values are valid only during the call;
 * report_rows.c copies what it keeps. When the parse starts over in exact
 * mode (a late row), the rows are dropped and come again.
 */
#include "report.h"

static void tap_row(void *ctx, const prs_table *t, const prs_val *v)
{
    rpt_rows_add(ctx, t->key, t->cols, t->ncols, v);
}

/* The parse starts over (its one pass met a late row): the rows the
 * abandoned run handed over are dropped; they come again. */
static void tap_restart(void *ctx) { rpt_rows_reset(ctx); }

prs_tap rpt_rows_tap(rpt_rows *r)
{
    prs_tap tap = {.row = tap_row, .record = NULL, .restart = tap_restart, .ctx = r};
    return tap;
}
