/* SPDX-License-Identifier: Apache-2.0 */
/* sessions.h — the session folders a parse reads (sessions.c). */
#ifndef SERVPROF_PARSE_SESSIONS_H
#define SERVPROF_PARSE_SESSIONS_H
#include <stdint.h>

#include "discover.h"


typedef struct prs_session_range {
    char name[256];  /* the session folder's name (<MMDD-HHMM>[-N]) */
    int64_t first;   /* earliest record of its stores, ns; INT64_MAX: none read */
    int64_t last;    /* latest record end */
} prs_session_range;

typedef struct prs_sessions {
    prs_session_range *s;
    int n;
    int *of_store; /* session index of each raw path, in paths order */
} prs_sessions;

/* Groups paths->raw by session folder: the folder above Trace_Service/, or
 * the store's own folder. With only != NULL keeps just that session's
 * stores (paths->raw is filtered); returns -1, with a message naming the
 * sessions there are, when it has none. 0 otherwise. */
int prs_sessions_find(prs_paths *paths, const char *input, const char *only, prs_sessions *out);

/* Widens session i's time range with a record [ts, end]. */
void prs_sessions_note(prs_sessions *ss, int i, int64_t ts, int64_t end);

/* Seconds the sessions were on: the sum of their ranges. */
double prs_sessions_on_s(const prs_sessions *ss);

/* The session index holding time t, or -1. */
int prs_sessions_at(const prs_sessions *ss, int64_t t);

void prs_sessions_free(prs_sessions *ss);
#endif
