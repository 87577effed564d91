/* SPDX-License-Identifier: Apache-2.0 */
/* dbout.h — profiler.db extras: time-bucket tables and indexes (dbout.c). */
#ifndef SERVPROF_PARSE_DBOUT_H
#define SERVPROF_PARSE_DBOUT_H
#include "model.h"
void prs_dbout_finish(prs_model *m);
/* Declares to btwrite.c the indexes of table t (its b-tree bt): built as
 * its rows are written. */
struct prs_bt_tab;
void prs_dbout_declare_indexes(prs_table *t, struct prs_bt_tab *bt);
#endif
