/* summary.h — the terminal summary (summary.c). */
#ifndef SERVPROF_PARSE_SUMMARY_H
#define SERVPROF_PARSE_SUMMARY_H
#include "model.h"
void spp_summary_print(spp_model *m, int nstores, int nskipped, int nactivity, double seconds);
#endif
