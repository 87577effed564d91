/* SPDX-License-Identifier: Apache-2.0 */
/*
 * progress.c — a progress bar on stderr, only when stderr is a terminal and
 * the input is large (an estimate from the stores' row ids), redrawn at most
 * ~10 times a second with \r so it never fills a log file.
 */
#include <stdio.h>
#include <time.h>
#include <unistd.h>

#include "progress.h"

#define LARGE_INPUT 500000LL

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

void prs_progress_start(prs_progress *p, long long estimate, int mode)
{
    p->total = estimate > 0 ? estimate : 1;
    p->on = mode == 1 || (mode < 0 && estimate >= LARGE_INPUT && isatty(STDERR_FILENO));
    p->last = 0;
}

void prs_progress_tick(prs_progress *p, long long done)
{
    if (!p->on)
        return;
    double t = now();
    if (t - p->last < 0.1)
        return;
    p->last = t;
    double f = (double)done / (double)p->total;
    if (f > 1)
        f = 1;
    int w = (int)(f * 40);
    char bar[41];
    for (int i = 0; i < 40; i++)
        bar[i] = i < w ? '#' : '.';
    bar[40] = 0;
    fprintf(stderr, "\r[%s] %3d%%  %lld records", bar, (int)(f * 100), done);
}

void prs_progress_end(prs_progress *p)
{
    if (p->on)
        fputs("\r\033[K", stderr);
    p->on = 0;
}
