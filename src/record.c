/* record.c — placeholder: the recording API (issue 3 replaces it with the
 * real hot path; see servprof.h for the contract). */
#include <string.h>
#include "internal.h"

_Atomic(const sp_domain_filter *) sp__domain_filter;

int sp_recorder_open(const sp_session *s, const sp_config *c) { (void)s; (void)c; return 0; }
void sp_recorder_close(void) {}
void sp_recorder_atfork_child(void) {}
int sp_recorder_meta(const char *k, const char *v) { (void)k; (void)v; return 0; }
int sp_domain_pass(const sp_domain_filter *f, const char *d) { (void)f; (void)d; return 1; }
SERVPROF_API void servprof_set_process_name(const char *n) { (void)n; }
SERVPROF_API void servprof_set_thread_name(const char *n) { (void)n; }
SERVPROF_API int servprof_meta(const char *k, const char *v) { return sp_recorder_meta(k, v); }
SERVPROF_API servprof_rec *servprof_rec_begin_slow(int l, const char *d) { (void)l; (void)d; return 0; }
SERVPROF_API void servprof_rec_cancel(servprof_rec *r) { (void)r; }
SERVPROF_API void servprof_res_str(servprof_rec *r, const char *x) { (void)r; (void)x; }
SERVPROF_API void servprof_res_int(servprof_rec *r, int64_t x) { (void)r; (void)x; }
SERVPROF_API void servprof_attr_str(servprof_rec *r, const char *k, const char *v) { (void)r; (void)k; (void)v; }
SERVPROF_API void servprof_attr_strn(servprof_rec *r, const char *k, const char *v, size_t n) { (void)r; (void)k; (void)v; (void)n; }
SERVPROF_API void servprof_attr_int(servprof_rec *r, const char *k, int64_t v) { (void)r; (void)k; (void)v; }
SERVPROF_API void servprof_attr_double(servprof_rec *r, const char *k, double v) { (void)r; (void)k; (void)v; }
SERVPROF_API void servprof_attr_bool(servprof_rec *r, const char *k, int v) { (void)r; (void)k; (void)v; }
SERVPROF_API void servprof_attr_int_array(servprof_rec *r, const char *k, const int64_t *v, size_t n) { (void)r; (void)k; (void)v; (void)n; }
SERVPROF_API void servprof_attr_double_array(servprof_rec *r, const char *k, const double *v, size_t n) { (void)r; (void)k; (void)v; (void)n; }
SERVPROF_API void servprof_attr_json(servprof_rec *r, const char *k, const char *j) { (void)r; (void)k; (void)j; }
SERVPROF_API void servprof_attr_array_begin(servprof_rec *r, const char *k) { (void)r; (void)k; }
SERVPROF_API void servprof_attr_object_begin(servprof_rec *r, const char *k) { (void)r; (void)k; }
SERVPROF_API void servprof_attr_end(servprof_rec *r) { (void)r; }
SERVPROF_API void servprof_metric(servprof_rec *r, const char *n, double v) { (void)r; (void)n; (void)v; }
SERVPROF_API void servprof_metric_inc(servprof_rec *r, const char *n, double v) { (void)r; (void)n; (void)v; }
SERVPROF_API void servprof_metric_scope(servprof_rec *r, const char *n, const char *v) { (void)r; (void)n; (void)v; }
SERVPROF_API void servprof_event(servprof_rec *r, const char *n) { (void)r; (void)n; }
SERVPROF_API void servprof_link_rec(servprof_rec *r, const char *f, const char *t) { (void)r; (void)f; (void)t; }
SERVPROF_API void servprof_link(const char *f, const char *t) { (void)f; (void)t; }
SERVPROF_API servprof_span servprof_span_begin(servprof_rec *r, const char *n) { (void)r; (void)n; return 0; }
SERVPROF_API void servprof_span_end(servprof_span s) { (void)s; }
SERVPROF_API void servprof_span_end_rec(servprof_rec *r, servprof_span s) { (void)r; (void)s; }
SERVPROF_API void servprof_span_at(servprof_rec *r, const char *n, int64_t a, int64_t b) { (void)r; (void)n; (void)a; (void)b; }
SERVPROF_API void servprof_get_stats(servprof_stats *o) { memset(o, 0, sizeof *o); }
