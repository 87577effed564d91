/* SPDX-License-Identifier: Apache-2.0 */
/*
 * sampler_nvml.c — GPU memory used/total and utilization, per device,
 * through NVML loaded at run time.
 *
 * Design. No build-time CUDA dependency: NVML is dlopen()ed on the sampler
 * thread ($SERVPROF_NVML_LIB names another library, e.g. the tests' double;
 * default libnvidia-ml.so.1, the name the driver installs). Only cheap calls
 * are made per pass: nvmlDeviceGetMemoryInfo and
 * nvmlDeviceGetUtilizationRates (each a driver query of a few µs); never the
 * process-list calls, which walk every process on the GPU.
 *
 * Devices are identified by their NVML index, which is the real (physical)
 * device id whatever CUDA_VISIBLE_DEVICES says. When CUDA_VISIBLE_DEVICES is
 * a list of integers, only those devices are sampled (they are the ones the
 * serving process uses; the integers are taken as NVML indices, which is
 * right when CUDA_DEVICE_ORDER=PCI_BUS_ID or the GPUs are all alike).
 *
 * Every failure is one log line: library missing, init failing (no
 * driver), no device. A device whose query fails is left out of that pass
 * (one warning per device) instead of recording made-up numbers; a
 * utilization the device does not support is left out of the row.
 */
#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>

#include "nvml_abi.h"
#include "sampler.h"

#define MAX_DEVICES 64

struct sp_nvml {
    void *lib;
    nvmlShutdown_fn shutdown;
    nvmlErrorString_fn error_string;
    nvmlDeviceGetMemoryInfo_fn memory_info;
    nvmlDeviceGetUtilizationRates_fn utilization;
    int ndev;
    nvmlDevice_t dev[MAX_DEVICES];
    int id[MAX_DEVICES];        /* real device id (NVML index) */
    int warned[MAX_DEVICES];    /* 1: memory query failed once; 2: no utilization */
};

static const char *errstr(const sp_nvml *n, nvmlReturn_t rc)
{
    const char *s = n->error_string ? n->error_string(rc) : NULL;
    return s ? s : "unknown NVML error";
}

/* Fills want[] with the CUDA_VISIBLE_DEVICES integers; -1 when unset or not
 * a plain integer list (UUIDs, MIG names): every device is then sampled. */
static int visible_devices(int *want, int max)
{
    const char *env = getenv("CUDA_VISIBLE_DEVICES");
    if (!env || !*env)
        return -1;
    int n = 0;
    for (const char *p = env; *p;) {
        char *end;
        long v = strtol(p, &end, 10);
        if (end == p || v < 0 || n >= max)
            return -1;
        want[n++] = (int)v;
        p = end;
        if (*p == ',')
            p++;
        else if (*p)
            return -1;
    }
    return n;
}

static int wanted(const int *want, int nwant, int idx)
{
    if (nwant < 0)
        return 1;
    for (int i = 0; i < nwant; i++)
        if (want[i] == idx)
            return 1;
    return 0;
}

static void *sym(void *lib, const char *name, int *missing)
{
    void *p = dlsym(lib, name);
    if (!p && !*missing) {
        *missing = 1;
        sp_log(SP_LOG_WARNING, "GPU memory sampler: NVML has no symbol %s (driver too old?); "
               "GPU memory is not sampled, everything else goes on", name);
    }
    return p;
}

sp_nvml *sp_nvml_open(void)
{
    const char *path = getenv("SERVPROF_NVML_LIB");
    if (!path || !*path)
        path = "libnvidia-ml.so.1";
    void *lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
        sp_log(SP_LOG_WARNING, "GPU memory sampler: NVML not available (%s); no GPU memory "
               "samples, everything else goes on", dlerror());
        return NULL;
    }
    sp_nvml *n = calloc(1, sizeof *n);
    if (!n) {
        dlclose(lib);
        return NULL;
    }
    n->lib = lib;
    int missing = 0;
    nvmlInit_v2_fn init = (nvmlInit_v2_fn)sym(lib, "nvmlInit_v2", &missing);
    nvmlDeviceGetCount_v2_fn count =
        (nvmlDeviceGetCount_v2_fn)sym(lib, "nvmlDeviceGetCount_v2", &missing);
    nvmlDeviceGetHandleByIndex_v2_fn handle =
        (nvmlDeviceGetHandleByIndex_v2_fn)sym(lib, "nvmlDeviceGetHandleByIndex_v2", &missing);
    n->shutdown = (nvmlShutdown_fn)sym(lib, "nvmlShutdown", &missing);
    n->memory_info = (nvmlDeviceGetMemoryInfo_fn)sym(lib, "nvmlDeviceGetMemoryInfo", &missing);
    n->utilization =
        (nvmlDeviceGetUtilizationRates_fn)sym(lib, "nvmlDeviceGetUtilizationRates", &missing);
    n->error_string = (nvmlErrorString_fn)dlsym(lib, "nvmlErrorString");
    if (missing) {
        dlclose(lib);
        free(n);
        return NULL;
    }
    nvmlReturn_t rc = init();
    if (rc != NVML_SUCCESS) {
        sp_log(SP_LOG_WARNING, "GPU memory sampler: NVML init failed: %s (no NVIDIA driver or "
               "GPU?); no GPU memory samples, everything else goes on", errstr(n, rc));
        dlclose(lib);
        free(n);
        return NULL;
    }
    unsigned int total = 0;
    rc = count(&total);
    int want[MAX_DEVICES];
    int nwant = visible_devices(want, MAX_DEVICES);
    for (unsigned int i = 0; rc == NVML_SUCCESS && i < total && n->ndev < MAX_DEVICES; i++) {
        nvmlDevice_t d;
        if (!wanted(want, nwant, (int)i))
            continue;
        nvmlReturn_t hr = handle(i, &d);
        if (hr != NVML_SUCCESS) {
            sp_log(SP_LOG_WARNING, "GPU memory sampler: device %u: %s; not sampled", i,
                   errstr(n, hr));
            continue;
        }
        n->dev[n->ndev] = d;
        n->id[n->ndev] = (int)i;
        n->ndev++;
    }
    if (rc != NVML_SUCCESS || n->ndev == 0) {
        sp_log(SP_LOG_WARNING, "GPU memory sampler: no GPU found (%s); no GPU memory samples, "
               "everything else goes on",
               rc != NVML_SUCCESS ? errstr(n, rc)
                                  : (nwant >= 0 ? "none of CUDA_VISIBLE_DEVICES exists"
                                                : "NVML reports 0 devices"));
        sp_nvml_close(n);
        return NULL;
    }
    sp_log(SP_LOG_INFO, "GPU memory sampler: %d device(s) from %s", n->ndev, path);
    return n;
}

int sp_nvml_device_count(const sp_nvml *n)
{
    return n ? n->ndev : 0;
}

void sp_nvml_sample(sp_nvml *n)
{
    for (int i = 0; i < n->ndev; i++) {
        nvmlMemory_t mem;
        nvmlReturn_t rc = n->memory_info(n->dev[i], &mem);
        if (rc != NVML_SUCCESS || mem.total == 0 || mem.used > mem.total) {
            if (!(n->warned[i] & 1)) {
                n->warned[i] |= 1;
                sp_log(SP_LOG_WARNING, "GPU memory sampler: device %d: %s; its samples are "
                       "left out while this lasts", n->id[i],
                       rc != NVML_SUCCESS ? errstr(n, rc) : "inconsistent memory figures");
            }
            continue;
        }
        sp_sample_row row = {SERVPROF_LEVEL_INFO, "npu", "DeviceMemory", 2,
                             {"usage", "total", "util"},
                             {(double)mem.used / 1048576.0, (double)mem.total / 1048576.0},
                             "device", n->id[i]};
        nvmlUtilization_t u;
        rc = n->utilization(n->dev[i], &u);
        if (rc == NVML_SUCCESS && u.gpu <= 100) {
            row.values[2] = u.gpu;
            row.nvalues = 3;
        } else if (!(n->warned[i] & 2)) {
            n->warned[i] |= 2;
            sp_log(SP_LOG_INFO, "GPU memory sampler: device %d: no utilization (%s); rows "
                   "carry memory only", n->id[i], errstr(n, rc));
        }
        sp_sample_emit(&row);
    }
}

void sp_nvml_close(sp_nvml *n)
{
    if (!n)
        return;
    if (n->shutdown)
        n->shutdown();
    /* NVML stays loaded: unloading a driver library that spawned threads is
     * not safe, and the next session loads it again at no cost. */
    free(n);
}

void sp_nvml_forget(sp_nvml *n)
{
    free(n);
}
