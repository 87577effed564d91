/* SPDX-License-Identifier: Apache-2.0 */
/*
 * report_analyze.h — the report's bridge to `servprof analyze`:
 * the page shows analyze's figures and findings, computed by analyze's own
 * code (one computation, two views). The page reads only analyze's JSON
 * document, whose schema docs/analyze.md documents.
 */
#ifndef SERVPROF_REPORT_ANALYZE_H
#define SERVPROF_REPORT_ANALYZE_H

#include <jansson.h>

#include "report.h"

/* analyze's JSON document for a run. input is what the user named
 * (--input-path); dir is what analyze reads: the raw stores, or the folder
 * of the run's profiler.db. With raw stores and rows != NULL, rows is fed
 * (through the parser's tap) by the very parse analyze runs: one parse for
 * both. Returns a new reference, or NULL with a message on stderr (the page
 * then shows the charts without analyze's part; rows may then be partial). */
json_t *rpt_analyze(const char *input, const char *dir, rpt_rows *rows, int progress);

/* analyze's compare document of runs A and B (inputs and dirs as for
 * rpt_analyze). Returns a new reference, or NULL with a message on
 * stderr (the page then has no compare table; the charts still overlay). */
json_t *rpt_compare(const char *input_a, const char *dir_a, const char *input_b, const char *dir_b);

#endif
