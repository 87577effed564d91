/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_session_config.c — servprof_session_config_int(): a binding reads the
 * integer and true/false keys of the config its session started with (the
 * Python torch profiler reads acl_task_time and torch_prof_*), "session" is
 * the start's serial number, and the answers when not collecting or for a
 * key that is not an integer key.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "fsutil.h"
#include "internal.h"

static int64_t key(const char *name, int want_rc)
{
    int64_t v = -12345;
    CHECK_INT(servprof_session_config_int(name, &v), want_rc);
    return v;
}

int main(void)
{
    char tmp[] = "/tmp/sp_test_sesscfg_XXXXXX";
    if (!mkdtemp(tmp))
        return 2;
    char cfg[256], text[1024];
    snprintf(cfg, sizeof cfg, "%s/c.json", tmp);
    snprintf(text, sizeof text,
             "{\"enable\": 0, \"prof_dir\": \"%s/prof\", \"acl_task_time\": 3, "
             "\"torch_prof_stack\": true, \"torch_prof_modules\": false, "
             "\"torch_prof_step_num\": 5, \"profiler_level\": \"DETAILED\"}", tmp);
    CHECK_INT(sp_write_atomic(cfg, text, strlen(text), 0640), 0);
    setenv("SERVICE_PROF_CONFIG_PATH", cfg, 1);
    setenv("HOME", tmp, 1);

    CHECK_INT(servprof_init(), 0);
    key("acl_task_time", SERVPROF_ESTATE); /* not collecting */
    CHECK_INT(servprof_session_config_int(NULL, NULL), SERVPROF_EINVAL);

    CHECK_INT(servprof_start(), 0);
    CHECK_INT(key("acl_task_time", 0), 3);
    CHECK_INT(key("torch_prof_stack", 0), 1);
    CHECK_INT(key("torch_prof_modules", 0), 0);
    CHECK_INT(key("torch_prof_step_num", 0), 5);
    CHECK_INT(key("profiler_level", 0), SERVPROF_LEVEL_DETAILED);
    int64_t first = key("session", 0);
    CHECK(first >= 1);
    key("prof_dir", SERVPROF_EINVAL);   /* a string key */
    key("no_such_key", SERVPROF_EINVAL);
    CHECK_INT(servprof_stop(), 0);
    key("session", SERVPROF_ESTATE);

    CHECK_INT(servprof_start(), 0);
    CHECK_INT(key("session", 0), first + 1);
    CHECK_INT(servprof_stop(), 0);
    servprof_shutdown();

    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmp);
    CHECK_INT(system(cmd), 0);
    CHECK_DONE();
}
