/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fake_nvml.c — libfake_nvml.so, a test double for NVML: the same entry
 * points as libnvidia-ml.so.1 with scripted answers, so the GPU memory
 * sampler's NVML code path is tested on machines without a GPU.
 *
 * Script (environment, read at each call):
 *   FAKE_NVML_MODE   ok (default) | noinit (init: driver not loaded) |
 *                    nodev (0 devices) | noutil (utilization unsupported) |
 *                    lost1 (device 1's memory query fails: GPU is lost)
 *   FAKE_NVML_COUNT  number of devices (default 2)
 * Device i reports used = (i+1)*1024 MiB, total = (i+2)*8192 MiB,
 * utilization 10*(i+1) %. Counters let the tests check which calls were made.
 */
#include <stdlib.h>
#include <string.h>

#include "nvml_abi.h"

#define FAKE_API __attribute__((visibility("default")))

FAKE_API int fake_nvml_init_calls, fake_nvml_shutdown_calls, fake_nvml_memory_calls;
FAKE_API int fake_nvml_expensive_calls; /* process-list queries: must stay 0 */

static int mode_is(const char *m)
{
    const char *v = getenv("FAKE_NVML_MODE");
    return v && !strcmp(v, m);
}

static struct nvmlDevice_st {
    int index;
} devices[16];

FAKE_API nvmlReturn_t nvmlInit_v2(void)
{
    fake_nvml_init_calls++;
    return mode_is("noinit") ? NVML_ERROR_DRIVER_NOT_LOADED : NVML_SUCCESS;
}

FAKE_API nvmlReturn_t nvmlShutdown(void)
{
    fake_nvml_shutdown_calls++;
    return NVML_SUCCESS;
}

FAKE_API const char *nvmlErrorString(nvmlReturn_t rc)
{
    switch (rc) {
    case NVML_ERROR_DRIVER_NOT_LOADED: return "Driver Not Loaded";
    case NVML_ERROR_NOT_SUPPORTED: return "Not Supported";
    case NVML_ERROR_GPU_IS_LOST: return "GPU is lost";
    default: return "Unknown Error";
    }
}

FAKE_API nvmlReturn_t nvmlDeviceGetCount_v2(unsigned int *n)
{
    const char *c = getenv("FAKE_NVML_COUNT");
    *n = mode_is("nodev") ? 0 : (c ? (unsigned)atoi(c) : 2);
    if (*n > 16)
        *n = 16;
    return NVML_SUCCESS;
}

FAKE_API nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned int i, nvmlDevice_t *d)
{
    if (i >= 16)
        return NVML_ERROR_INVALID_ARGUMENT;
    devices[i].index = (int)i;
    *d = &devices[i];
    return NVML_SUCCESS;
}

FAKE_API nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t d, nvmlMemory_t *m)
{
    fake_nvml_memory_calls++;
    if (mode_is("lost1") && d->index == 1)
        return NVML_ERROR_GPU_IS_LOST;
    unsigned long long mib = 1048576ull;
    m->total = (unsigned long long)(d->index + 2) * 8192 * mib;
    m->used = (unsigned long long)(d->index + 1) * 1024 * mib;
    m->free = m->total - m->used;
    return NVML_SUCCESS;
}

FAKE_API nvmlReturn_t nvmlDeviceGetUtilizationRates(nvmlDevice_t d, nvmlUtilization_t *u)
{
    if (mode_is("noutil"))
        return NVML_ERROR_NOT_SUPPORTED;
    u->gpu = 10u * (unsigned)(d->index + 1);
    u->memory = 5;
    return NVML_SUCCESS;
}

/* The expensive call the sampler must never make. */
FAKE_API nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v3(nvmlDevice_t d, unsigned int *n,
                                                              void *infos)
{
    (void)d; (void)infos;
    fake_nvml_expensive_calls++;
    *n = 0;
    return NVML_SUCCESS;
}
