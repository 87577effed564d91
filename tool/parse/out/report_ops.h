/* SPDX-License-Identifier: Apache-2.0 */
/*
 * report_ops.h — device-activity reports (op_summary.csv, op_statistic.csv)
 * from the activity stores (ascend_service_profiler_*.db, tables Kernel/Api).
 */
#ifndef SERVPROF_PARSE_REPORT_OPS_H
#define SERVPROF_PARSE_REPORT_OPS_H

/* Writes out_dir/op_summary.csv and out_dir/op_statistic.csv from the n
 * activity stores and the ntorch torch traces (torch_trace.c). Writes
 * nothing and returns 0 when there is no kernel or op anywhere. Returns 0,
 * or -1 after printing what went wrong on stderr. The files are renamed
 * to their names through stage (the parse's, dwrite.c), or at once when
 * stage is NULL. */
struct prs_dw_stage;
int prs_report_ops_all(const char *const *activity_paths, int n, const char *const *torch_paths,
                      int ntorch, const char *out_dir, struct prs_dw_stage *stage);
/* The same from activity stores only, renamed at once. */
int prs_report_ops(const char *const *activity_paths, int n, const char *out_dir);

#endif
