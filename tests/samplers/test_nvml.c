/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_nvml.c — the GPU memory sampler against libfake_nvml.so (scripted
 * NVML answers) and against a missing library: rows carry the scripted
 * figures per real device id, CUDA_VISIBLE_DEVICES limits the devices, a
 * lost device or an unsupported utilization leaves figures out instead of
 * inventing them, and every absence is one log line with nothing recorded.
 */
#include <dlfcn.h>
#include <math.h>

#include "check.h"
#include "smp_util.h"

#ifndef FAKE_NVML_PATH
#error FAKE_NVML_PATH must name libfake_nvml.so
#endif

static int *counter(const char *name)
{
    void *h = dlopen(FAKE_NVML_PATH, RTLD_NOW | RTLD_NOLOAD);
    int *p = h ? (int *)dlsym(h, name) : NULL;
    if (h)
        dlclose(h);
    return p;
}

/* Runs the sampler directly (no thread): open, n passes, close. */
static char *direct(int passes, int *opened)
{
    obs_reset();
    sp_samplers_set_observer(obs_fn, NULL);
    capture_begin();
    sp_nvml *n = sp_nvml_open();
    *opened = n != NULL;
    for (int i = 0; n && i < passes; i++)
        sp_nvml_sample(n);
    sp_nvml_close(n);
    sp_samplers_set_observer(NULL, NULL);
    return capture_end();
}

static const obs_row *row_for(int device, int nth)
{
    for (int i = 0; i < obs.n; i++)
        if (obs.rows[i].has_scope && obs.rows[i].scope == device && nth-- == 0)
            return &obs.rows[i];
    return NULL;
}

static void test_ok(void)
{
    setenv("SERVPROF_NVML_LIB", FAKE_NVML_PATH, 1);
    setenv("FAKE_NVML_MODE", "ok", 1);
    setenv("FAKE_NVML_COUNT", "3", 1);
    unsetenv("CUDA_VISIBLE_DEVICES");
    int opened;
    char *log = direct(2, &opened);
    CHECK(opened);
    CHECK(strstr(log, "3 device(s)") != NULL);
    CHECK_INT(obs.n, 6);
    for (int d = 0; d < 3; d++) {
        const obs_row *o = row_for(d, 1);
        CHECK(o != NULL);
        if (!o)
            continue;
        CHECK_STR(o->domain, "npu");
        CHECK_STR(o->name, "DeviceMemory");
        CHECK_STR(o->scope_key, "device");
        CHECK_INT(o->level, SERVPROF_LEVEL_INFO);
        CHECK(fabs(obs_value(o, "usage") - 1024.0 * (d + 1)) < 1e-9);
        CHECK(fabs(obs_value(o, "total") - 8192.0 * (d + 2)) < 1e-9);
        CHECK(fabs(obs_value(o, "util") - 10.0 * (d + 1)) < 1e-9);
    }
    free(log);
    int *exp = counter("fake_nvml_expensive_calls"), *shut = counter("fake_nvml_shutdown_calls");
    CHECK(exp && *exp == 0);   /* never the process-list queries */
    CHECK(shut && *shut == 1); /* init and shutdown pair up */
}

static void test_visible_devices(void)
{
    setenv("FAKE_NVML_COUNT", "4", 1);
    setenv("CUDA_VISIBLE_DEVICES", "3,1", 1);
    int opened;
    char *log = direct(1, &opened);
    CHECK_INT(obs.n, 2);
    CHECK(row_for(1, 0) && row_for(3, 0) && !row_for(0, 0) && !row_for(2, 0));
    free(log);
    /* UUIDs: not a list of indices, every device is sampled */
    setenv("CUDA_VISIBLE_DEVICES", "GPU-8f6c1a2b", 1);
    log = direct(1, &opened);
    CHECK_INT(obs.n, 4);
    free(log);
    /* none of the visible devices exists: one line, no rows */
    setenv("CUDA_VISIBLE_DEVICES", "9", 1);
    log = direct(1, &opened);
    CHECK(!opened);
    CHECK_INT(obs.n, 0);
    CHECK_INT(count_substr(log, "[WARNING]"), 1);
    CHECK(strstr(log, "CUDA_VISIBLE_DEVICES") != NULL);
    free(log);
    unsetenv("CUDA_VISIBLE_DEVICES");
    setenv("FAKE_NVML_COUNT", "2", 1);
}

static void test_partial(void)
{
    int opened;
    /* device 1 is lost: its rows are left out, one warning, device 0 goes on */
    setenv("FAKE_NVML_MODE", "lost1", 1);
    char *log = direct(3, &opened);
    CHECK_INT(obs.n, 3);
    CHECK(row_for(0, 2) && !row_for(1, 0));
    CHECK_INT(count_substr(log, "GPU is lost"), 1);
    free(log);
    /* no utilization: rows carry memory only, no made-up 0 % */
    setenv("FAKE_NVML_MODE", "noutil", 1);
    log = direct(2, &opened);
    CHECK_INT(obs.n, 4);
    for (int i = 0; i < obs.n; i++) {
        CHECK_INT(obs.rows[i].nvalues, 2);
        CHECK(obs_value(&obs.rows[i], "util") < -1e299);
    }
    CHECK_INT(count_substr(log, "no utilization"), 2); /* once per device */
    free(log);
}

static void test_absent(void)
{
    int opened;
    const struct { const char *lib, *mode, *expect; } cases[] = {
        {"/nonexistent/libnvidia-ml.so.1", "ok", "NVML not available"},
        {FAKE_NVML_PATH, "noinit", "Driver Not Loaded"},
        {FAKE_NVML_PATH, "nodev", "no GPU found"},
        /* a library without the NVML symbols (this is not NVML) */
        {"libm.so.6", "ok", "has no symbol nvmlInit_v2"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        setenv("SERVPROF_NVML_LIB", cases[i].lib, 1);
        setenv("FAKE_NVML_MODE", cases[i].mode, 1);
        char *log = direct(2, &opened);
        CHECK(!opened);
        CHECK_INT(obs.n, 0);
        CHECK_INT(count_substr(log, "\n"), 1); /* exactly one line */
        CHECK(strstr(log, cases[i].expect) != NULL);
        CHECK(strstr(log, "everything else goes on") != NULL);
        free(log);
    }
}

/* Through the sampler thread with the host sampler on too: GPU trouble
 * does not stop host sampling. */
static void test_thread(void)
{
    char dir[256];
    sp_config c;
    sp_session s;
    smp_tmpdir(dir, sizeof dir, "nvml");
    smp_setup(&c, &s, dir);
    c.host_system_usage_freq = 20;
    c.npu_memory_usage_freq = 20;
    setenv("SERVPROF_NVML_LIB", FAKE_NVML_PATH, 1);
    setenv("FAKE_NVML_MODE", "ok", 1);
    obs_reset();
    sp_samplers_set_observer(obs_fn, NULL);
    sp_samplers_start(&s, &c);
    obs_wait("MemUsage", 0, 3); /* at least three passes of each (bounded) */
    obs_wait("DeviceMemory", 1, 6);
    sp_samplers_stop();
    sp_sampler_stats st;
    sp_samplers_get_stats(&st);
    CHECK(st.gpu_samples >= 3);
    CHECK_INT(obs_count("DeviceMemory", 1), (int)st.gpu_samples * 2);
    CHECK(obs_count("MemUsage", 0) >= 3);
    /* NVML missing: host sampling goes on */
    setenv("SERVPROF_NVML_LIB", "/nonexistent/libnvidia-ml.so.1", 1);
    obs_reset();
    capture_begin();
    sp_samplers_start(&s, &c);
    obs_wait("MemUsage", 0, 3); /* three passes without a GPU row (bounded) */
    sp_samplers_stop();
    char *log = capture_end();
    sp_samplers_set_observer(NULL, NULL);
    CHECK_INT(obs_count("DeviceMemory", 1), 0);
    CHECK(obs_count("MemUsage", 0) >= 3);
    CHECK_INT(count_substr(log, "NVML not available"), 1);
    free(log);
}

int main(void)
{
    test_ok();
    test_visible_devices();
    test_partial();
    test_absent();
    test_thread();
    CHECK_DONE();
}
