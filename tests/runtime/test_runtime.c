/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_runtime.c — the runtime's contract inside one process: lazy init
 * (SP_LEVEL_UNINIT until the first API call), the level and domain filter
 * published at start and withdrawn at stop, the control functions' return
 * codes, shutdown and re-init, and a step limit.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "fsutil.h"
#include "internal.h"
#include "runtime.h"

static int level(void)
{
    return atomic_load(&servprof__level);
}

static int level_is_off(void *arg)
{
    (void)arg;
    return level() == 0;
}

/* Nonzero when the config file at path reads "enable": 0. */
static int file_says_off(void *path)
{
    sp_config c;
    sp_config_diag d = {0};
    return sp_config_load(path, &c, &d) == 0 && !c.enable;
}

int main(void)
{
    char tmp[] = "/tmp/sp_test_runtime_XXXXXX";
    if (!mkdtemp(tmp))
        return 2;
    char cfg[256], text[1024], buf[SP_PATH_MAX];
    snprintf(cfg, sizeof cfg, "%s/c.json", tmp);
    snprintf(text, sizeof text,
             "{\"enable\": 1, \"prof_dir\": \"%s/prof\", \"profiler_level\": \"DETAILED\", "
             "\"domain\": \"Schedule; Request\", \"profiler_step_num\": 3}", tmp);
    CHECK_INT(sp_write_atomic(cfg, text, strlen(text), 0640), 0);
    setenv("SERVICE_PROF_CONFIG_PATH", cfg, 1);
    setenv("HOME", tmp, 1);

    CHECK_INT(level(), SP_LEVEL_UNINIT); /* nothing ran yet */
    CHECK_INT(servprof_init(), 0);
    CHECK_INT(servprof_init(), 0); /* idempotent */
    CHECK_INT(level(), SERVPROF_LEVEL_DETAILED);
    CHECK(servprof_is_enabled(SERVPROF_LEVEL_DETAILED));
    CHECK(!servprof_is_enabled(SERVPROF_LEVEL_VERBOSE));
    const sp_domain_filter *f = atomic_load(&sp__domain_filter);
    CHECK(f != NULL);
    if (f) {
        CHECK_INT(f->n, 2);
        CHECK_STR(f->names[0], "Schedule");
        CHECK_STR(f->names[1], "Request");
    }
    CHECK_INT(servprof_session_dir(buf, sizeof buf), 0);
    CHECK(strncmp(buf, tmp, strlen(tmp)) == 0);
    struct stat st;
    char ts[SP_PATH_MAX + 32];
    snprintf(ts, sizeof ts, "%s/Trace_Service", buf);
    CHECK_INT(stat(ts, &st), 0);
    CHECK_INT(st.st_mode & 0777, 0750);
    CHECK_INT(servprof_session_dir(buf, 4), SERVPROF_EINVAL);
    CHECK_INT(servprof_store_path(buf, sizeof buf), 0);
    char want[64];
    snprintf(want, sizeof want, "-%d.db", (int)getpid());
    CHECK(strstr(buf, "/Trace_Service/ms_service_") && strstr(buf, want));
    CHECK_INT(servprof_start(), SERVPROF_ESTATE);

    /* Three steps stop collection and write "enable": 0 back. */
    servprof_step();
    servprof_step();
    CHECK_INT(level(), SERVPROF_LEVEL_DETAILED);
    servprof_step(); /* the watcher thread stops collection, then rewrites the file */
    CHECK(check_wait_until(level_is_off, NULL, 2000));
    CHECK_INT(level(), 0);
    CHECK_INT(servprof_session_dir(buf, sizeof buf), SERVPROF_ESTATE);
    CHECK(check_wait_until(file_says_off, cfg, 2000));
    sp_config c;
    sp_config_diag d = {0};
    CHECK_INT(sp_config_load(cfg, &c, &d), 0);
    CHECK_INT(c.enable, 0);
    CHECK_INT(c.profiler_step_num, 3);

    /* The API can start again; stop withdraws the level. */
    CHECK_INT(servprof_start(), 0);
    CHECK_INT(level(), SERVPROF_LEVEL_DETAILED);
    CHECK_INT(servprof_stop(), 0);
    CHECK_INT(level(), 0);
    CHECK_INT(servprof_stop(), SERVPROF_ESTATE);

    /* Shutdown, then a control call initializes again. */
    servprof_shutdown();
    servprof_shutdown();
    CHECK_INT(level(), 0);
    CHECK_INT(servprof_start(), 0);
    CHECK_INT(level(), SERVPROF_LEVEL_DETAILED);
    servprof_shutdown();
    CHECK_INT(level(), 0);

    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf %s", tmp);
    if (system(cmd) != 0)
        fprintf(stderr, "could not remove %s\n", tmp);
    CHECK_DONE();
}
