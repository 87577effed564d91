/*
 * report_analyze.c — calls analyze's C entry points (see report_analyze.h).
 */
#include <stdio.h>

#include "report_analyze.h"

json_t *spr_analyze(const char *input, const char *profiler_db)
{
    (void)profiler_db;
    fprintf(stderr, "servprof report: analyze is not part of this build; the page shows the charts without "
                    "analyze's figures and findings for %s (give them with --analyze-json FILE)\n", input);
    return NULL;
}

json_t *spr_compare(const char *input_a, const char *db_a, const char *input_b, const char *db_b)
{
    (void)input_a, (void)db_a, (void)db_b;
    fprintf(stderr, "servprof report: analyze's compare is not part of this build; no compare table for %s\n"
                    "(give it with --compare-json FILE)\n", input_b);
    return NULL;
}
