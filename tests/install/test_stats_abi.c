/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_stats_abi.c — servprof_stats grows without breaking old callers:
 * a caller built against the 0.1 header (8 fields) gets exactly those bytes
 * written, the original servprof_get_stats symbol writes no more, and a
 * caller from a future header with more fields gets zeros beyond ours.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "servprof.h"

typedef struct old_stats { /* servprof_stats as 0.1 declared it */
    uint64_t f[8];
    uint64_t canary;
} old_stats;

typedef struct future_stats {
    servprof_stats now;
    uint64_t later[4];
} future_stats;

int main(void)
{
    /* The default prof_dir is under $HOME: keep the session in a temp dir. */
    char home[] = "/tmp/sp_stats_abi_XXXXXX";
    CHECK(mkdtemp(home) != NULL);
    setenv("HOME", home, 1);
    unsetenv("SERVICE_PROF_CONFIG_PATH");
    CHECK_INT(servprof_start(), 0);
    servprof_rec *r = servprof_rec_begin(SERVPROF_LEVEL_INFO, NULL);
    servprof_event(r, "one");
    CHECK_INT(servprof_stop(), 0);

    old_stats o;
    memset(&o, 0xAB, sizeof o);
    servprof_get_stats_n((servprof_stats *)(void *)&o, 8 * sizeof(uint64_t));
    CHECK(o.canary == 0xABABABABABABABABull);
    CHECK(o.f[0] >= 1); /* records */

    memset(&o, 0xAB, sizeof o);
    (servprof_get_stats)((servprof_stats *)(void *)&o); /* the 0.1 entry point */
    CHECK(o.canary == 0xABABABABABABABABull);
    CHECK(o.f[0] >= 1);

    future_stats f;
    memset(&f, 0xCD, sizeof f);
    servprof_get_stats_n(&f.now, sizeof f);
    for (int i = 0; i < 4; i++)
        CHECK_INT(f.later[i], 0);
    CHECK(f.now.records == o.f[0]);

    servprof_stats s;
    servprof_get_stats(&s); /* the macro passes sizeof */
    CHECK(s.records == o.f[0] && s.written == o.f[2]);
    CHECK_INT(servprof_version(), SERVPROF_VERSION_HEX);
    CHECK_STR(servprof_version_string(), SERVPROF_VERSION);
    CHECK_DONE();
}
