/* SPDX-License-Identifier: Apache-2.0 */
/*
 * torch_trace.h — the torch profiler's traces (torch_prof_<host>-<pid>.json,
 * acl_task_time 3) merged into a parse: timeline lanes and op reports.
 */
#ifndef SERVPROF_PARSE_TORCH_TRACE_H
#define SERVPROF_PARSE_TORCH_TRACE_H

#include <sqlite3.h>
#include <stdint.h>

#include "discover.h"
#include "model.h"

/* Keeps in p->torch the traces whose process's raw store is among the n
 * stores (same folder, same <host>-<pid>); frees and names the others.
 * Returns how many are kept. */
int prs_torch_select(prs_paths *p, prs_store **stores, int n);
/* Writes the ops of the n traces as lanes of their processes (and rows of
 * profiler.db's slice table). Unreadable traces are named and skipped. */
void prs_torch_timeline(prs_timeline *t, char *const *paths, int n, prs_store **stores, int nstores);
/* Adds the ops of the trace at path to table k of db (report_ops.c's
 * schema), src = its source number. Returns the rows added, or -1 after a
 * message. */
int64_t prs_torch_import_ops(sqlite3 *db, const char *path, int src);

#endif
