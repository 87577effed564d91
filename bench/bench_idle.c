/* SPDX-License-Identifier: Apache-2.0 */
/*
 * bench_idle.c — what the library costs a process that records nothing:
 * each library thread's wake-ups (voluntary context switches) and CPU time
 * over N seconds of no traffic, after servprof_init(). Two runs, each in a
 * child process of its own: everything off (the config watcher alone) and
 * live metrics on with tracing off (the metrics drain thread too).
 * The figures come from /proc/self/task/TID/{status,schedstat}: the count
 * of wake-ups does not depend on the machine's load, the CPU per wake-up
 * does (caches). The main thread (which only sleeps) is left out.
 *
 *   build/bench/bench_idle [seconds]   (default 10)
 */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "servprof.h"

#define MAX_THREADS 64

typedef struct th {
    int tid;
    char name[32];
    long wakes;
    long long cpu_ns;
} th;

static void read_thread(th *t, const char *tid)
{
    char p[128], line[256];
    t->tid = atoi(tid);
    snprintf(p, sizeof p, "/proc/self/task/%s/status", tid);
    FILE *f = fopen(p, "r");
    if (f) {
        while (fgets(line, sizeof line, f)) {
            if (!strncmp(line, "Name:", 5))
                sscanf(line + 5, "%31s", t->name);
            else if (!strncmp(line, "voluntary_ctxt_switches:", 24))
                t->wakes = atol(line + 24);
        }
        fclose(f);
    }
    snprintf(p, sizeof p, "/proc/self/task/%s/schedstat", tid); /* first field: ns on a CPU */
    f = fopen(p, "r");
    if (f) {
        if (fscanf(f, "%lld", &t->cpu_ns) != 1)
            t->cpu_ns = 0;
        fclose(f);
    }
}

static int snapshot(th *t)
{
    DIR *d = opendir("/proc/self/task");
    int n = 0;
    for (struct dirent *e; d && (e = readdir(d)) && n < MAX_THREADS;) {
        if (e->d_name[0] == '.' || atoi(e->d_name) == getpid())
            continue;
        memset(&t[n], 0, sizeof t[n]);
        read_thread(&t[n++], e->d_name);
    }
    if (d)
        closedir(d);
    return n;
}

static void run(const char *label, const char *config, int secs)
{
    setenv("SERVICE_PROF_CONFIG_PATH", config, 1);
    setenv("PROF_LOG_LEVEL", "WARNING", 1);
    if (servprof_init() != 0)
        fprintf(stderr, "servprof_init failed\n");
    sleep(1); /* past the start-up */
    th a[MAX_THREADS], b[MAX_THREADS];
    int na = snapshot(a);
    sleep((unsigned)secs);
    int nb = snapshot(b);
    long wakes = 0;
    printf("%s:\n", label);
    for (int i = 0; i < nb; i++) {
        th start = {0};
        for (int j = 0; j < na; j++)
            if (a[j].tid == b[i].tid)
                start = a[j];
        long w = b[i].wakes - start.wakes;
        double cpu_ms = (double)(b[i].cpu_ns - start.cpu_ns) / 1e6;
        printf("  thread %-16s %5ld wake-ups (%.1f/s), %6.2f ms CPU, %5.1f us a wake-up\n",
               b[i].name, w, (double)w / secs, cpu_ms, w ? cpu_ms * 1e3 / (double)w : 0.0);
        wakes += w;
    }
    printf("  library threads: %ld wake-ups in %d s (%.1f/s)\n", wakes, secs, (double)wakes / secs);
    fflush(stdout);
    servprof_shutdown();
}

int main(int argc, char **argv)
{
    int secs = argc > 1 ? atoi(argv[1]) : 10;
    char dir[] = "/tmp/sp-bench-idle-XXXXXX";
    if (!mkdtemp(dir))
        return 1;
    static const struct { const char *label, *json; } modes[] = {
        {"everything off", "{\"enable\": 0, \"metric_enable\": 0, \"prof_dir\": \"%s/prof\"}\n"},
        {"metrics on, tracing off", "{\"enable\": 0, \"metric_enable\": 1, \"prof_dir\": \"%s/prof\"}\n"},
    };
    for (size_t m = 0; m < sizeof modes / sizeof modes[0]; m++) {
        char cfg[512];
        snprintf(cfg, sizeof cfg, "%s/prof%zu.json", dir, m);
        FILE *f = fopen(cfg, "w");
        if (!f)
            return 1;
        fprintf(f, modes[m].json, dir);
        fclose(f);
        pid_t pid = fork();
        if (pid == 0) {
            run(modes[m].label, cfg, secs);
            _exit(0);
        }
        waitpid(pid, NULL, 0);
    }
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    return system(cmd) == 0 ? 0 : 1;
}
