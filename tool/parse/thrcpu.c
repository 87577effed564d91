/* SPDX-License-Identifier: Apache-2.0 */
/*
 * thrcpu.c — per-thread CPU times of a parse (thrcpu.h). A figure that
 * does not depend on the machine's load: on a shared machine the wall
 * time of `--jobs 2` says little, but the CPU of each thread says what
 * the parse would take on free cores — the busiest thread bounds it
 * (max), the total over the cores bounds it too (sum / cores), so the
 * expected speed-up on c cores is sum_1 / max(max_c, sum_c / c)
 * (docs/benchmarks.md "Parse"). CLOCK_THREAD_CPUTIME_ID of each thread,
 * read by the thread itself just before it ends (after its join it is
 * gone from /proc).
 *
 * One mutex guards the table; a thread notes itself once, so it is never
 * contended in practice.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "thrcpu.h"

#define MAX_NOTES 256

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static struct note { const char *name; double cpu; } notes[MAX_NOTES]; /* mu */
static int nnotes;                                                     /* mu */

static int on(void)
{
    const char *e = getenv("SERVPROF_PARSE_THREAD_CPU");
    return e && *e && *e != '0';
}

static double self_cpu(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

void prs_thrcpu_note(const char *name)
{
    if (!on())
        return;
    double cpu = self_cpu();
    pthread_mutex_lock(&mu);
    if (nnotes < MAX_NOTES)
        notes[nnotes++] = (struct note){name, cpu};
    pthread_mutex_unlock(&mu);
}

void prs_thrcpu_report(void)
{
    if (!on())
        return;
    double mine = self_cpu(), max = mine, sum = mine;
    pthread_mutex_lock(&mu);
    fprintf(stderr, "servprof parse: thread cpu: parse %.3f s\n", mine);
    for (int i = 0; i < nnotes; i++) {
        fprintf(stderr, "servprof parse: thread cpu: %s %.3f s\n", notes[i].name, notes[i].cpu);
        sum += notes[i].cpu;
        if (notes[i].cpu > max)
            max = notes[i].cpu;
    }
    fprintf(stderr, "servprof parse: thread cpu: busiest %.3f s, total %.3f s, threads %d\n", max, sum,
            nnotes + 1);
    nnotes = 0;
    pthread_mutex_unlock(&mu);
}
