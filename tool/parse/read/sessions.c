/* SPDX-License-Identifier: Apache-2.0 */
/*
 * sessions.c — which session folder each raw store belongs to.
 *
 * A prof_dir holds one folder per enable (<MMDD-HHMM>[-N]/Trace_Service/
 * ms_service_*.db). Parsing the prof_dir itself reads all of them; then the
 * time between sessions is time collection was off, and any rate computed
 * over first-to-last would count it. So the parser groups the stores by
 * session, notes each session's time range while it reads, lists them in
 * the summary, and computes rates over the sum of the ranges. --session
 * NAME keeps only one.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plog.h"
#include "sessions.h"
#include "xalloc.h"

/* The session folder name of a store path. */
static void session_name(const char *path, const char *input, char *out, size_t len)
{
    char dir[4096];
    snprintf(dir, sizeof dir, "%s", path);
    char *slash = strrchr(dir, '/');
    if (!slash) {
        snprintf(out, len, "%.255s", input);
        return;
    }
    *slash = '\0'; /* dir: the store's folder */
    slash = strrchr(dir, '/');
    const char *base = slash ? slash + 1 : dir;
    if (!strcmp(base, "Trace_Service") && slash) {
        *slash = '\0';
        slash = strrchr(dir, '/');
        base = slash ? slash + 1 : dir;
    }
    snprintf(out, len, "%.255s", *base ? base : "/");
}

static int find_or_add(prs_sessions *ss, const char *name)
{
    for (int i = 0; i < ss->n; i++)
        if (!strcmp(ss->s[i].name, name))
            return i;
    prs_session_range *s = realloc(ss->s, (size_t)(ss->n + 1) * sizeof *s);
    if (!s)
        return -1;
    ss->s = s;
    prs_session_range *r = &ss->s[ss->n];
    snprintf(r->name, sizeof r->name, "%s", name);
    r->first = INT64_MAX;
    r->last = INT64_MIN;
    return ss->n++;
}

/* Is name one of the ", "-separated items of list? */
static int listed(const char *list, const char *name)
{
    size_t n = strlen(name);
    for (const char *p = list; (p = strstr(p, name)) != NULL; p += n)
        if ((p == list || p[-1] == ' ') && (p[n] == ',' || p[n] == '\0'))
            return 1;
    return 0;
}

int prs_sessions_find(prs_paths *paths, const char *input, const char *only, prs_sessions *out)
{
    memset(out, 0, sizeof *out);
    out->of_store = prs_xcalloc((size_t)(paths->nraw ? paths->nraw : 1), sizeof *out->of_store);
    if (!out->of_store)
        return -1;
    char name[256];
    if (only) {
        /* Every session name there is, for the message when `only` is none. */
        char names[1024] = "";
        size_t used = 0;
        int kept = 0;
        for (int i = 0; i < paths->nraw; i++) {
            session_name(paths->raw[i], input, name, sizeof name);
            if (!strcmp(name, only)) {
                paths->raw[kept++] = paths->raw[i];
                continue;
            }
            if (!listed(names, name) && used < sizeof names)
                used += (size_t)snprintf(names + used, sizeof names - used, "%s%s",
                                         used ? ", " : "", name);
            free(paths->raw[i]);
        }
        paths->nraw = kept;
        if (!kept) {
            prs_log(PRS_ERROR, "--session '%s': no such session under %s (sessions: %s)", only,
                    input, used ? names : "none");
            return -1;
        }
    }
    for (int i = 0; i < paths->nraw; i++) {
        session_name(paths->raw[i], input, name, sizeof name);
        out->of_store[i] = find_or_add(out, name);
        if (out->of_store[i] < 0)
            return -1;
    }
    return 0;
}

void prs_sessions_note(prs_sessions *ss, int i, int64_t ts, int64_t end)
{
    if (i < 0 || i >= ss->n)
        return;
    if (ts < ss->s[i].first)
        ss->s[i].first = ts;
    if (end > ss->s[i].last)
        ss->s[i].last = end;
}

double prs_sessions_on_s(const prs_sessions *ss)
{
    double on = 0;
    for (int i = 0; i < ss->n; i++)
        if (ss->s[i].first != INT64_MAX && ss->s[i].last > ss->s[i].first)
            on += (double)(ss->s[i].last - ss->s[i].first) / 1e9;
    return on;
}

int prs_sessions_at(const prs_sessions *ss, int64_t t)
{
    for (int i = 0; i < ss->n; i++)
        if (t >= ss->s[i].first && t <= ss->s[i].last)
            return i;
    return -1;
}

void prs_sessions_free(prs_sessions *ss)
{
    free(ss->s);
    free(ss->of_store);
    memset(ss, 0, sizeof *ss);
}
