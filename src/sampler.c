/* sampler.c — placeholder: background samplers (issue 7 replaces it). */
#include "internal.h"
int sp_samplers_start(const sp_session *s, const sp_config *c) { (void)s; (void)c; return 0; }
void sp_samplers_stop(void) {}
void sp_samplers_atfork_child(void) {}
