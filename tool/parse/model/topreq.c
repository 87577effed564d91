/* SPDX-License-Identifier: Apache-2.0 */
/*
 * topreq.c — the reference's second statistic table: the five requests
 * with the longest forward + bubble time per step, printed under the span
 * table of the terminal summary (with --span).
 *
 * The figure (the reference's exporter_statistic.py, "forward + bubble"):
 * for a request and a process, the forwards naming it in time order; its
 * step time is (end of the last forward − end of the first) / (forwards −
 * 1), i.e. each step's forward plus the bubble before it. Over several
 * processes (a request run by more than one), the totals and step counts
 * add up. Requests with fewer than two forwards in every process have no
 * figure. Ties keep the earlier request. The table also shows each request's
 * mean forward duration, so the bubble's share reads off directly.
 *
 * Design: one report of reports.c's table (prs_report_topreq, no table of
 * its own), its state opaque to every other file; hooks open, record
 * (K_FORWARD only), finish (the top five chosen, their names copied while
 * the ids are there), close (the per-request entries go), summary (printed
 * after spaninfo's span table, and only when that table is: --span) and
 * free. Per request id root one
 * small entry with two process slots: a third process of the same request
 * is not counted (rare: a request's steps run in one engine process and,
 * with tensor parallelism, its workers repeat the same forwards). Memory:
 * ~72 bytes per request that has a forward.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model.h"
#include "xalloc.h"

#define TOP_N 5
#define SLOTS 2

typedef struct tr_slot {
    int store;       /* -1 unused */
    int count;       /* forwards in this process */
    int64_t first_end, last_end;
} tr_slot;

typedef struct tr_entry {
    tr_slot s[SLOTS];
    double fwd_ms;   /* Σ forward durations, every process */
    int nfwd;
} tr_entry;

typedef struct tr_top {
    char *name;      /* the request's display name, copied at finish */
    double step_ms, total_ms, fwd_mean_ms;
    int steps;
} tr_top;

typedef struct topreq {
    tr_entry *e;     /* index: id root */
    int n;
    tr_top top[TOP_N];
    int ntop;
} topreq;

static void *open_topreq(prs_model *m)
{
    (void)m;
    return prs_xcalloc(1, sizeof(topreq));
}

static tr_entry *entry(topreq *t, int root)
{
    if (root < 0)
        return NULL;
    if (root >= t->n) {
        int n = root * 2 + 64;
        tr_entry *e = prs_xrealloc(t->e, (size_t)n * sizeof *e);
        for (int i = t->n; i < n; i++) {
            memset(&e[i], 0, sizeof e[i]);
            for (int k = 0; k < SLOTS; k++)
                e[i].s[k].store = -1;
        }
        t->e = e;
        t->n = n;
    }
    return &t->e[root];
}

static void record_topreq(void *st, prs_model *m, const prs_rec *r, enum prs_kind k)
{
    (void)k;
    topreq *t = st;
    int64_t end = r->ts + r->dur;
    for (int i = 0; i < m->nroots; i++) {
        tr_entry *e = entry(t, m->roots[i]);
        if (!e)
            return;
        e->fwd_ms += (double)r->dur / 1e6;
        e->nfwd++;
        for (int j = 0; j < SLOTS; j++) {
            tr_slot *s = &e->s[j];
            if (s->store < 0) {
                *s = (tr_slot){.store = r->store->index, .count = 1, .first_end = end, .last_end = end};
                break;
            }
            if (s->store == r->store->index) {
                s->count++;
                if (end < s->first_end)
                    s->first_end = end;
                if (end > s->last_end)
                    s->last_end = end;
                break;
            }
        }
    }
}

/* An entry whose root a later Link folded into another is left out (its
 * forwards were counted under the id it had then). */
static void finish_topreq(void *st, prs_model *m)
{
    topreq *t = st;
    for (int root = 0; root < t->n; root++) {
        const tr_entry *e = &t->e[root];
        if (!e->nfwd || prs_ids_root(m->ids, root) != root)
            continue;
        int64_t total = 0;
        int steps = 0;
        for (int k = 0; k < SLOTS; k++)
            if (e->s[k].store >= 0 && e->s[k].count >= 2) {
                total += e->s[k].last_end - e->s[k].first_end;
                steps += e->s[k].count - 1;
            }
        if (!steps)
            continue;
        tr_top c = {(char *)(intptr_t)root, (double)total / 1e6 / steps, (double)total / 1e6, e->fwd_ms / e->nfwd, steps};
        int at = t->ntop < TOP_N ? t->ntop++ : TOP_N;
        if (at == TOP_N && c.step_ms <= t->top[TOP_N - 1].step_ms)
            continue;
        if (at == TOP_N)
            at = TOP_N - 1;
        while (at > 0 && t->top[at - 1].step_ms < c.step_ms) {
            t->top[at] = t->top[at - 1];
            at--;
        }
        t->top[at] = c;
    }
    /* the names, while the ids are there (they go with the model) */
    for (int i = 0; i < t->ntop; i++) {
        const char *n = prs_req_name(m, (int)(intptr_t)t->top[i].name);
        t->top[i].name = prs_xstrdup(n ? n : "");
    }
}

static void summary_topreq(const void *st, const prs_model *m, const struct prs_sessions *ss)
{
    (void)ss;
    const topreq *t = st;
    if (!t->ntop || !prs_spaninfo_on(m)) /* under the span table, as the reference prints it */
        return;
    printf("  top %d requests by forward + bubble time per step (ms):\n", t->ntop);
    printf("  %-34s %8s %12s %12s %14s\n", "request", "steps", "step mean", "total", "forward mean");
    for (int i = 0; i < t->ntop; i++) {
        const tr_top *c = &t->top[i];
        printf("  %-34s %8d %12.3f %12.3f %14.3f\n", c->name ? c->name : "", c->steps, c->step_ms, c->total_ms,
               c->fwd_mean_ms);
    }
}

static void close_topreq(void *st, prs_model *m)
{
    (void)m;
    topreq *t = st;
    free(t->e);
    t->e = NULL;
    t->n = 0;
}

static void free_topreq(void *st)
{
    topreq *t = st;
    for (int i = 0; i < t->ntop; i++)
        free(t->top[i].name);
    free(t->e);
    free(t);
}

const prs_report prs_report_topreq = {
    .name = "topreq",
    .kinds = PRS_KIND(K_FORWARD),
    .open = open_topreq,
    .record = record_topreq,
    .finish = finish_topreq,
    .close = close_topreq,
    .summary = summary_topreq,
    .free = free_topreq,
};
