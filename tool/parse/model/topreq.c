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
 * Then, as the reference's "Request Statistics" and "Bubble Statistics"
 * print them, one table per span (forward, BatchSchedule,
 * batchFrameworkProcessing: the ones seen) and one of the bubbles (a
 * request's gap from one forward's end to its next forward's start in the
 * same process, when positive): a row ALL over every request (a span
 * counts once per request it names) and a row per top-five request, each
 * with count, min, avg, P50, P90, P99, max and total.
 *
 * Design: one report of reports.c's table (prs_report_topreq, no table of
 * its own), its state opaque to every other file; hooks open, record
 * (K_FORWARD and K_BATCH), finish (the top five chosen, their names and
 * samples kept while the ids are there), close (the per-request entries
 * go), summary (printed after spaninfo's span table, and only when that
 * table is: --span; without --span the report is off) and free. Per request id root one
 * small entry with two process slots: a third process of the same request
 * is not counted (rare: a request's steps run in one engine process and,
 * with tensor parallelism, its workers repeat the same forwards). Memory:
 * ~130 bytes per request that has a forward or a step, plus 4 bytes per
 * (span, request) pair for the per-request tables (the top five are known
 * only at the end) and 8 per pair for the ALL rows (stats.c): ~100 MB for
 * 50,000 requests of 80 steps, only with --span.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model.h"
#include "stats.h"
#include "xalloc.h"

#define TOP_N 5
#define SLOTS 2

/* The per-request tables: the three spans of the reference's list, then the bubbles. */
enum { S_FORWARD, S_SCHEDULE, S_FRAMEWORK, S_BUBBLE, NSER };
static const char *const ser_name[NSER] = {"forward", "BatchSchedule", "batchFrameworkProcessing", NULL};

/* One request's samples of one series (ms). */
typedef struct tr_vals {
    float *v;
    int n, cap;
} tr_vals;

typedef struct tr_slot {
    int store;       /* -1 unused */
    int count;       /* forwards in this process */
    int64_t first_end, last_end;
} tr_slot;

typedef struct tr_entry {
    tr_slot s[SLOTS];
    double fwd_ms;   /* Σ forward durations, every process */
    int nfwd;
    tr_vals ser[NSER];
} tr_entry;

typedef struct tr_top {
    char *name;      /* the request's display name, copied at finish */
    double step_ms, total_ms, fwd_mean_ms;
    int steps;
    int root;
    tr_vals ser[NSER]; /* taken over from the entry at finish */
} tr_top;

typedef struct topreq {
    tr_entry *e;     /* index: id root */
    int n;
    tr_top top[TOP_N];
    int ntop;
    prs_stats *all; /* the ALL rows, one series per NSER */
    long long seen[NSER];
} topreq;

static void *open_topreq(prs_model *m)
{
    /* printed only under the span table (--span): without it, nothing to
     * keep (spaninfo comes before this report in reports.c's table) */
    if (!prs_spaninfo_on(m))
        return NULL;
    topreq *t = prs_xcalloc(1, sizeof(topreq));
    t->all = prs_stats_new(NSER);
    return t;
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

static void add_val(topreq *t, tr_entry *e, int ser, double ms)
{
    tr_vals *v = &e->ser[ser];
    if (v->n == v->cap) {
        v->cap = v->cap ? v->cap * 2 : 4;
        v->v = prs_xrealloc(v->v, (size_t)v->cap * sizeof *v->v);
    }
    v->v[v->n++] = (float)ms;
    prs_stats_add(t->all, ser, ms);
    t->seen[ser]++;
}

static void record_topreq(void *st, prs_model *m, const prs_rec *r, enum prs_kind k)
{
    topreq *t = st;
    int64_t end = r->ts + r->dur;
    double ms = (double)r->dur / 1e6;
    if (k == K_BATCH) { /* a scheduling step: its duration to each request it names */
        int ser = !strcmp(r->name, "BatchSchedule") ? S_SCHEDULE : S_FRAMEWORK;
        for (int i = 0; i < m->nroots; i++) {
            tr_entry *e = entry(t, m->roots[i]);
            if (e)
                add_val(t, e, ser, ms);
        }
        return;
    }
    for (int i = 0; i < m->nroots; i++) {
        tr_entry *e = entry(t, m->roots[i]);
        if (!e)
            return;
        add_val(t, e, S_FORWARD, ms);
        e->fwd_ms += ms;
        e->nfwd++;
        for (int j = 0; j < SLOTS; j++) {
            tr_slot *s = &e->s[j];
            if (s->store < 0) {
                *s = (tr_slot){.store = r->store->index, .count = 1, .first_end = end, .last_end = end};
                break;
            }
            if (s->store == r->store->index) {
                /* records come in start order: the last end is the previous forward's */
                if (r->ts > s->last_end)
                    add_val(t, e, S_BUBBLE, (double)(r->ts - s->last_end) / 1e6);
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
        tr_top c = {NULL, (double)total / 1e6 / steps, (double)total / 1e6, e->fwd_ms / e->nfwd, steps, root, {{0}}};
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
        const char *n = prs_req_name(m, t->top[i].root);
        t->top[i].name = prs_xstrdup(n ? n : "");
        tr_entry *e = &t->e[t->top[i].root];
        memcpy(t->top[i].ser, e->ser, sizeof e->ser); /* the top five's samples outlive the entries */
        memset(e->ser, 0, sizeof e->ser);
    }
}

static void print_row(const char *name, prs_summary_row *r)
{
    if (!r->n) {
        printf("  %-34s %8d\n", name, 0);
        return;
    }
    printf("  %-34s %8lld %10.3f %10.3f %10.3f %10.3f %10.3f %10.3f %12.3f\n", name, r->n, r->min, r->avg, r->p50,
           r->p90, r->p99, r->max, r->total);
}

/* One request's samples of a series as a summary row. */
static void vals_row(const tr_vals *v, prs_summary_row *r)
{
    prs_stats *one = prs_stats_new(1);
    for (int i = 0; i < v->n; i++)
        prs_stats_add(one, 0, v->v[i]);
    prs_stats_get(one, 0, r);
    prs_stats_free(one);
}

/* The reference's Request and Bubble Statistics: per series seen, ALL and the top five. */
static void per_request_tables(const topreq *t)
{
    for (int ser = 0; ser < NSER; ser++) {
        if (!t->seen[ser])
            continue;
        if (ser == S_BUBBLE)
            printf("  bubble between forwards per request (ms):\n");
        else
            printf("  span %s per request (ms):\n", ser_name[ser]);
        printf("  %-34s %8s %10s %10s %10s %10s %10s %10s %12s\n", "request", "count", "min", "avg", "P50", "P90",
               "P99", "max", "total");
        prs_summary_row r;
        prs_stats_get(t->all, ser, &r);
        print_row("ALL", &r);
        for (int i = 0; i < t->ntop; i++) {
            vals_row(&t->top[i].ser[ser], &r);
            print_row(t->top[i].name ? t->top[i].name : "", &r);
        }
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
    per_request_tables(t);
}

static void free_entries(topreq *t)
{
    for (int i = 0; i < t->n; i++)
        for (int k = 0; k < NSER; k++)
            free(t->e[i].ser[k].v);
    free(t->e);
    t->e = NULL;
    t->n = 0;
}

static void close_topreq(void *st, prs_model *m)
{
    (void)m;
    topreq *t = st;
    free_entries(t);
}

static void free_topreq(void *st)
{
    topreq *t = st;
    for (int i = 0; i < t->ntop; i++) {
        free(t->top[i].name);
        for (int k = 0; k < NSER; k++)
            free(t->top[i].ser[k].v);
    }
    free_entries(t);
    prs_stats_free(t->all);
    free(t);
}

const prs_report prs_report_topreq = {
    .name = "topreq",
    .kinds = PRS_KIND(K_FORWARD) | PRS_KIND(K_BATCH),
    .open = open_topreq,
    .record = record_topreq,
    .finish = finish_topreq,
    .close = close_topreq,
    .summary = summary_topreq,
    .free = free_topreq,
};
