/* SPDX-License-Identifier: Apache-2.0 */
/* dbout.h — profiler.db extras: time-bucket tables and indexes (dbout.c). */
#ifndef SERVPROF_PARSE_DBOUT_H
#define SERVPROF_PARSE_DBOUT_H
#include "model.h"
void spp_dbout_finish(spp_model *m);
/* Declares to btwrite.c the indexes of table t (its b-tree bt): built as
 * its rows are written. */
struct spp_bt_tab;
void spp_dbout_declare_indexes(spp_table *t, struct spp_bt_tab *bt);
#endif
