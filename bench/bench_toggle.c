/* SPDX-License-Identifier: Apache-2.0 */
/*
 * bench_toggle.c — toggle latency of the runtime: the time from an edit of
 * the config file to the session being started (and to it being stopped),
 * in this process, through the watcher thread. 20 rounds per kind of edit;
 * prints median, min and max in milliseconds.
 *
 * Kinds of edit: "rename" (the CLI and most editors: temp file + rename
 * over the config) and "in-place" (truncate and write the same inode).
 *
 *   build-rt/bench/bench_toggle [rounds]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "fsutil.h"
#include "internal.h"
#include "runtime.h"

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static int collecting(void)
{
    char buf[SP_PATH_MAX];
    return servprof_session_dir(buf, sizeof buf) == 0;
}

/* Milliseconds until collecting() == want, or -1 after 5 s. */
static double wait_for(int want, int64_t t0)
{
    while (collecting() != want) {
        if (sp_now_monotonic_ns() - t0 > 5000000000LL)
            return -1;
        struct timespec ts = {0, 100000};
        nanosleep(&ts, NULL);
    }
    return (double)(sp_now_monotonic_ns() - t0) / 1e6;
}

static void edit(const char *path, const char *prof, int value, int in_place)
{
    char text[1024];
    int n = snprintf(text, sizeof text, "{\n    \"enable\": %d,\n    \"prof_dir\": \"%s\"\n}\n",
                     value, prof);
    if (!in_place) {
        sp_write_atomic(path, text, (size_t)n, 0640);
        return;
    }
    FILE *f = fopen(path, "w");
    if (f) {
        fwrite(text, 1, (size_t)n, f);
        fclose(f);
    }
}

static void report(const char *what, double *v, int n)
{
    qsort(v, (size_t)n, sizeof v[0], cmp);
    printf("%-22s median %7.2f ms   min %7.2f ms   max %7.2f ms   (n=%d)\n", what, v[n / 2], v[0],
           v[n - 1], n);
}

int main(int argc, char **argv)
{
    int rounds = argc > 1 ? atoi(argv[1]) : 20;
    if (rounds < 1 || rounds > 1000)
        rounds = 20;
    char tmp[] = "/tmp/sp_bench_toggle_XXXXXX";
    if (!mkdtemp(tmp))
        return 1;
    char cfg[256], prof[256];
    snprintf(cfg, sizeof cfg, "%s/servprof.json", tmp);
    snprintf(prof, sizeof prof, "%s/prof", tmp);
    edit(cfg, prof, 0, 0);
    setenv("SERVICE_PROF_CONFIG_PATH", cfg, 1);
    setenv("PROF_LOG_LEVEL", "WARNING", 0);
    servprof_init();
    double *on = calloc((size_t)rounds, sizeof *on), *off = calloc((size_t)rounds, sizeof *off);
    const char *kinds[] = {"rename", "in-place"};
    for (int k = 0; k < 2; k++) {
        int n = 0;
        for (int i = 0; i < rounds; i++) {
            usleep(50000); /* let the previous edit settle */
            int64_t t0 = sp_now_monotonic_ns();
            edit(cfg, prof, 1, k);
            double a = wait_for(1, t0);
            usleep(50000);
            t0 = sp_now_monotonic_ns();
            edit(cfg, prof, 0, k);
            double b = wait_for(0, t0);
            if (a < 0 || b < 0) {
                fprintf(stderr, "round %d (%s): no reaction within 5 s\n", i, kinds[k]);
                continue;
            }
            on[n] = a;
            off[n] = b;
            n++;
        }
        char what[64];
        snprintf(what, sizeof what, "%s edit -> started", kinds[k]);
        report(what, on, n);
        snprintf(what, sizeof what, "%s edit -> stopped", kinds[k]);
        report(what, off, n);
    }
    servprof_shutdown();
    free(on);
    free(off);
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf %s", tmp);
    return system(cmd) == 0 ? 0 : 1;
}
