/* SPDX-License-Identifier: Apache-2.0 */
/*
 * discover.c — finds the stores under the input folder, recursively:
 * raw stores `ms_service_*.db` and device-activity stores
 * `ascend_service_profiler_*.db`, and the torch profiler's traces
 * `torch_prof_*.json` (torch_trace.c). SQLite side files (-wal, -shm, -journal)
 * do not match the patterns. Lists are sorted so that runs are repeatable.
 * Symbolic links to folders are not followed (no cycles).
 */
#include <dirent.h>
#include <errno.h>
#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "discover.h"
#include "plog.h"
#include "xalloc.h"


static int push(char ***v, int *n, const char *s)
{
    char **nv = realloc(*v, (size_t)(*n + 1) * sizeof **v);
    if (!nv)
        return -1;
    *v = nv;
    nv[(*n)++] = prs_xstrdup(s);
    return 0;
}

static void walk(const char *dir, prs_paths *out, int depth)
{
    if (depth > 64)
        return;
    DIR *d = opendir(dir);
    if (!d) {
        prs_log(PRS_WARNING, "cannot read folder %s (%s); skipped", dir, strerror(errno));
        return;
    }
    struct dirent *e;
    while ((e = readdir(d))) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
            continue;
        size_t len = strlen(dir) + strlen(e->d_name) + 2;
        char *path = prs_xmalloc(len);
        snprintf(path, len, "%s/%s", dir, e->d_name);
        struct stat st;
        if (lstat(path, &st) == 0) {
            if (S_ISDIR(st.st_mode))
                walk(path, out, depth + 1);
            else if (S_ISREG(st.st_mode) || S_ISLNK(st.st_mode)) {
                if (!fnmatch("ms_service_*.db", e->d_name, 0))
                    push(&out->raw, &out->nraw, path);
                else if (!fnmatch("ascend_service_profiler_*.db", e->d_name, 0))
                    push(&out->activity, &out->nactivity, path);
                else if (!fnmatch("torch_prof_*.json", e->d_name, 0))
                    push(&out->torch, &out->ntorch, path);
            }
        }
        free(path);
    }
    closedir(d);
}

static int cmp(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

int prs_discover(const char *dir, prs_paths *out)
{
    memset(out, 0, sizeof *out);
    struct stat st;
    if (stat(dir, &st) != 0) {
        prs_log(PRS_ERROR, "input path %s: %s", dir, strerror(errno));
        return -1;
    }
    if (!S_ISDIR(st.st_mode)) {
        /* A single store given directly is accepted too. */
        const char *base = strrchr(dir, '/');
        base = base ? base + 1 : dir;
        if (!fnmatch("ascend_service_profiler_*.db", base, 0))
            push(&out->activity, &out->nactivity, dir);
        else
            push(&out->raw, &out->nraw, dir);
        return 0;
    }
    walk(dir, out, 0);
    if (out->nraw)
        qsort(out->raw, (size_t)out->nraw, sizeof *out->raw, cmp);
    if (out->nactivity)
        qsort(out->activity, (size_t)out->nactivity, sizeof *out->activity, cmp);
    if (out->ntorch)
        qsort(out->torch, (size_t)out->ntorch, sizeof *out->torch, cmp);
    return 0;
}

void prs_paths_free(prs_paths *p)
{
    for (int i = 0; i < p->nraw; i++)
        free(p->raw[i]);
    for (int i = 0; i < p->nactivity; i++)
        free(p->activity[i]);
    for (int i = 0; i < p->ntorch; i++)
        free(p->torch[i]);
    free(p->raw);
    free(p->activity);
    free(p->torch);
    memset(p, 0, sizeof *p);
}
