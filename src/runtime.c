/* runtime.c — placeholder: process life, start/stop (issue 2 replaces it). */
#include "internal.h"

_Atomic int servprof__level = 0; /* the real runtime starts at SP_LEVEL_UNINIT */

void sp_runtime_ensure(void) {}
SERVPROF_API int servprof_init(void) { return 0; }
SERVPROF_API void servprof_shutdown(void) {}
SERVPROF_API int servprof_start(void) { return SERVPROF_ESTATE; }
SERVPROF_API int servprof_stop(void) { return SERVPROF_ESTATE; }
SERVPROF_API void servprof_step(void) {}
SERVPROF_API int servprof_session_dir(char *buf, size_t len) { (void)buf; (void)len; return SERVPROF_ESTATE; }
SERVPROF_API int servprof_store_path(char *buf, size_t len) { (void)buf; (void)len; return SERVPROF_ESTATE; }
