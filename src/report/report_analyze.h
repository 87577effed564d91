/*
 * report_analyze.h — the report's bridge to `servprof analyze` (issue 14):
 * the page shows analyze's figures and findings, computed by analyze's own
 * code (one computation, two views). The page reads only analyze's JSON
 * document, whose schema docs/analyze.md documents.
 */
#ifndef SERVPROF_REPORT_ANALYZE_H
#define SERVPROF_REPORT_ANALYZE_H

#include <jansson.h>

/* analyze's JSON document for a run. input is what the user named
 * (--input-path), profiler_db the profiler.db the report found or built for
 * it (so analyze need not parse the raw stores again). Returns a new
 * reference, or NULL with a message on stderr (the page then shows the
 * charts without analyze's part). */
json_t *spr_analyze(const char *input, const char *profiler_db);

/* analyze's compare document of runs A and B (inputs and profiler.db files
 * as for spr_analyze). Returns a new reference, or NULL with a message on
 * stderr (the page then has no compare table; the charts still overlay). */
json_t *spr_compare(const char *input_a, const char *db_a, const char *input_b, const char *db_b);

#endif
