/* SPDX-License-Identifier: Apache-2.0 */
/* gpu_prof.h — the servprof calls gpu_work.cu makes, behind plain C
 * functions: include/servprof.h uses C11 atomics, which a C++ (nvcc host)
 * compiler before C++23 cannot read, so the calls live in gpu_prof.c. */
#ifndef GPU_PROF_H
#define GPU_PROF_H
#include <stdint.h>
#ifdef __cplusplus
extern "C" {
#endif
void gp_init(void);
int64_t gp_now_ns(void);
uint64_t gp_round_begin(int iter);
void gp_round_end(uint64_t span);
void gp_shutdown(void);
#ifdef __cplusplus
}
#endif
#endif
