/* dbout.h — profiler.db extras: time-bucket tables and indexes (dbout.c). */
#ifndef SERVPROF_PARSE_DBOUT_H
#define SERVPROF_PARSE_DBOUT_H
#include "model.h"
void spp_dbout_finish(spp_model *m);
#endif
