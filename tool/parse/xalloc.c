/* SPDX-License-Identifier: Apache-2.0 */
/*
 * xalloc.c — the failure path of the tool's checked allocations (xalloc.h):
 * one line on stderr, exit status 1. Written with write(2) into a stack
 * buffer: the heap is what just failed.
 */
#include <stdio.h>
#include <unistd.h>

#include "xalloc.h"

void prs_oom(size_t n)
{
    char line[256];
    int len = snprintf(line, sizeof line,
                       "servprof: error: out of memory (%zu bytes asked); stopped: this run's outputs are "
                       "left as *.partial, the previous ones as they were\n", n);
    if (len > 0) {
        ssize_t w = write(STDERR_FILENO, line, (size_t)len < sizeof line ? (size_t)len : sizeof line - 1);
        (void)w;
    }
    _exit(1);
}
