/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_cupti_real.c — NVIDIA's real libcupti, where a CUDA toolkit is
 * installed, on a machine without an NVIDIA driver (this test is only
 * registered when CMake finds the library): CUPTI loads, cannot trace, and
 * that is exactly one log line; the host sampler goes on; no activity store
 * is created. On a machine with a driver and a GPU it checks instead that
 * collection starts and stops cleanly in a process that never uses CUDA
 * (nothing recorded, the "does this process use CUDA?" line).
 */
#include <dlfcn.h>

#include "check.h"
#include "smp_util.h"

int main(void)
{
    char dir[256];
    sp_config c;
    sp_session s;
    smp_tmpdir(dir, sizeof dir, "cupti-real");
    smp_setup(&c, &s, dir);
    c.acl_task_time = 1;
    c.acl_prof_task_time_level = 1;
    c.host_system_usage_freq = 20;
    setenv("SERVPROF_CUPTI_LIB", REAL_CUPTI_PATH, 1);
    void *driver = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    obs_reset();
    sp_samplers_set_observer(obs_fn, NULL);
    capture_begin();
    sp_samplers_start(&s, &c);
    sleep_ms(600);
    sp_samplers_stop();
    char *log = capture_end();
    sp_samplers_set_observer(NULL, NULL);
    CHECK(obs_count("MemUsage", 0) >= 5);
    if (!driver) {
        CHECK_INT(count_substr(log, "\n"), 1);
        CHECK_INT(count_substr(log, "CUPTI cannot trace kernels, copies, memsets, runtime API "
                                    "calls"), 1);
        CHECK(access(s.activity_path, F_OK) != 0);
    } else {
        CHECK(strstr(log, "does this process use CUDA?") != NULL);
    }
    free(log);
    CHECK_DONE();
}
