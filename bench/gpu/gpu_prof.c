/* SPDX-License-Identifier: Apache-2.0 */
/* gpu_prof.c — see gpu_prof.h: servprof calls for gpu_work.cu, in C. */
#include "gpu_prof.h"

#include "servprof.h"

void gp_init(void)
{
    servprof_init();
    servprof_set_thread_name("gpu_work main");
}

int64_t gp_now_ns(void)
{
    return servprof_now_ns();
}

uint64_t gp_round_begin(int iter)
{
    servprof_rec *r = servprof_rec_begin(SERVPROF_LEVEL_INFO, "gpu_work");
    servprof_attr_int(r, "iter", iter);
    return servprof_span_begin(r, "launch_round");
}

void gp_round_end(uint64_t span)
{
    servprof_span_end(span);
}

void gp_shutdown(void)
{
    servprof_shutdown();
}
