/* SPDX-License-Identifier: Apache-2.0 */
/*
 * config_get.c — the reference ABI's configuration getters: GetProfPath,
 * GetAclTaskTimeLevel, GetAclProfAicoreMetrics, GetTorchProfStack,
 * GetTorchProfModules, GetTorchProfStepNum, GetTorchProfilerEnable.
 *
 * Each answers from the config in force (servprof__config_view: a copy
 * taken under the runtime's lock), with the reference's meanings. Not hot:
 * the reference's Python package asks them when a torch profiler starts.
 * Strings are returned in per-thread buffers, valid until the calling
 * thread's next call of the same function.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dropin.h"

/* acl_task_time value that means "torch profiler" (the reference's). */
#define TORCH_PROFILER_TASK_TIME 3

static int view(servprof__cfg *out)
{
    servprof__config_view(out);
    return 0;
}

/* The session folder while collecting (where the torch profiler should
 * write), else the configured prof_dir. */
DROPIN_API const char *GetProfPath(void)
{
    static _Thread_local char path[4096];
    servprof__cfg *c = malloc(sizeof *c);
    if (!c)
        return "";
    view(c);
    snprintf(path, sizeof path, "%s", c->collecting ? c->session_dir : c->prof_dir);
    free(c);
    return path;
}

DROPIN_API const char *GetAclTaskTimeLevel(void)
{
    servprof__cfg c;
    view(&c);
    return c.acl_prof_task_time_level ? "L1" : "L0";
}

/* The ACL enumeration value of aclprofAicoreMetrics (aclprofAicoreMetrics
 * in CANN's acl_prof.h); ACL_AICORE_NONE (0xFF) for a name we do not know. */
DROPIN_API int GetAclProfAicoreMetrics(void)
{
    static const struct {
        const char *name;
        int value;
    } map[] = {
        {"ACL_AICORE_ARITHMETIC_UTILIZATION", 0}, {"ACL_AICORE_PIPE_UTILIZATION", 1},
        {"ACL_AICORE_MEMORY_BANDWIDTH", 2},       {"ACL_AICORE_L0B_AND_WIDTH", 3},
        {"ACL_AICORE_RESOURCE_CONFLICT_RATIO", 4}, {"ACL_AICORE_MEMORY_UB", 5},
        {"ACL_AICORE_L2_CACHE", 6},               {"ACL_AICORE_MEMORY_ACCESS", 8},
        {"ACL_AICORE_NONE", 0xFF},
    };
    servprof__cfg c;
    view(&c);
    for (size_t i = 0; i < sizeof map / sizeof map[0]; i++)
        if (!strcmp(map[i].name, c.aicore_metrics))
            return map[i].value;
    return 0xFF;
}

DROPIN_API bool GetTorchProfStack(void)
{
    servprof__cfg c;
    view(&c);
    return c.torch_prof_stack != 0;
}

DROPIN_API bool GetTorchProfModules(void)
{
    servprof__cfg c;
    view(&c);
    return c.torch_prof_modules != 0;
}

DROPIN_API int GetTorchProfStepNum(void)
{
    servprof__cfg c;
    view(&c);
    return c.torch_prof_step_num;
}

DROPIN_API bool GetTorchProfilerEnable(void)
{
    servprof__cfg c;
    view(&c);
    return c.acl_task_time == TORCH_PROFILER_TASK_TIME;
}
