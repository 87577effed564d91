/* SPDX-License-Identifier: Apache-2.0 */
/*
 * discover.h — finds the stores under an input folder (discover.c): raw
 * stores, activity stores and torch traces, each list sorted.
 */
#ifndef SERVPROF_PARSE_DISCOVER_H
#define SERVPROF_PARSE_DISCOVER_H

typedef struct prs_paths {
    char **raw;       /* ms_service_*.db, sorted */
    int nraw;
    char **activity;  /* ascend_service_profiler_*.db, sorted */
    int nactivity;
    char **torch;     /* torch_prof_*.json (acl_task_time 3, torch_trace.c), sorted */
    int ntorch;
} prs_paths;
/* Walks dir recursively. Returns 0, or -1 when dir cannot be read (message printed). */
int prs_discover(const char *dir, prs_paths *out);
void prs_paths_free(prs_paths *p);

#endif
