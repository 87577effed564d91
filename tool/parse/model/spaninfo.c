/* SPDX-License-Identifier: Apache-2.0 */
/*
 * spaninfo.c — span_info/NAME.csv (with --span): one row per span of the
 * `forward` span, the batch span and each name given, and the statistics
 * the summary prints per span (min, avg, P50, P90, P99, max, total). Only
 * the durations of these few span names are kept for the percentiles.
 */
#include <stdlib.h>
#include <string.h>

#include "fmt.h"
#include "model.h"
#include "stats.h"
#include "xalloc.h"

static const prs_col cols[] = {
    {"span_name", "TEXT"}, {"start_datetime", "TEXT"}, {"end_datetime", "TEXT"},
    {"during_time(ms)", "REAL"}, {"hostname", "TEXT"}, {"pid", "INTEGER"},
};

/* The report's state (prs_report_spaninfo): one table per span name. */
typedef struct spaninfo {
    const char **names;    /* the options' strings (they outlive the parse) */
    int n;
    prs_table *t;
    char **csv;            /* their file names (owned) */
    prs_stats *stats;      /* durations per name, for the summary */
} spaninfo;

static void add_name(spaninfo *si, const char *name)
{
    for (int i = 0; i < si->n; i++)
        if (!strcmp(si->names[i], name))
            return;
    si->names = prs_xrealloc(si->names, (size_t)(si->n + 1) * sizeof *si->names);
    si->names[si->n++] = name;
}

/* Off (NULL) without --span. */
static void *open_spaninfo(prs_model *m)
{
    if (m->opts->nspans == 0)
        return NULL;
    spaninfo *si = prs_xcalloc(1, sizeof *si);
    add_name(si, "forward");
    add_name(si, "batchFrameworkProcessing");
    add_name(si, "BatchSchedule");
    for (int i = 0; i < m->opts->nspans; i++)
        add_name(si, m->opts->spans[i]);
    si->t = prs_xcalloc((size_t)si->n, sizeof *si->t);
    si->csv = prs_xcalloc((size_t)si->n, sizeof *si->csv);
    si->stats = prs_stats_new(si->n);
    for (int i = 0; i < si->n; i++) {
        char csv[512];
        snprintf(csv, sizeof csv, "span_info/%s.csv", si->names[i]);
        for (char *p = csv + 10; *p; p++)
            if (*p == '/' || *p == '\\')
                *p = '_';
        si->csv[i] = prs_xstrdup(csv);
        prs_table_init(&m->out, &si->t[i], si->csv[i], NULL, cols, 6, NULL);
    }
    return si;
}

int prs_spaninfo_on(const prs_model *m)
{
    const spaninfo *si = prs_model_state(m, &prs_report_spaninfo);
    return si && si->n;
}

static void record_spaninfo(void *st, prs_model *m, const prs_rec *r, enum prs_kind k)
{
    (void)k;
    spaninfo *si = st;
    for (int i = 0; i < si->n; i++) {
        if (strcmp(r->name, si->names[i]) != 0)
            continue;
        char sdt[40], edt[40];
        prs_fmt_datetime(r->ts, sdt);
        prs_fmt_datetime(r->ts + r->dur, edt);
        prs_val v[6] = {
            prs_v_text(r->name, -1), prs_v_text(sdt, -1), prs_v_text(edt, -1),
            prs_v_ns(r->dur), prs_v_text(r->store->hostname, -1), prs_v_int(r->pid),
        };
        prs_table_row(&m->out, &si->t[i], v);
        prs_stats_add(si->stats, i, (double)r->dur / 1e6);
        return;
    }
}

static void close_spaninfo(void *st, prs_model *m)
{
    spaninfo *si = st;
    for (int i = 0; i < si->n; i++)
        prs_table_close(&m->out, &si->t[i]);
}

/* The summary's statistics per span name. */
static void summary_spaninfo(const void *st, const prs_model *m, const struct prs_sessions *ss)
{
    (void)m;
    (void)ss;
    const spaninfo *si = st;
    if (!si->stats || !si->n)
        return;
    printf("  %-26s %8s %10s %10s %10s %10s %10s %10s %12s\n", "span (ms)", "count", "min", "avg", "P50",
           "P90", "P99", "max", "total");
    for (int i = 0; i < si->n; i++) {
        prs_summary_row r;
        prs_stats_get(si->stats, i, &r);
        if (!r.n) {
            printf("  %-26s %8d\n", si->names[i], 0);
            continue;
        }
        printf("  %-26s %8lld %10.3f %10.3f %10.3f %10.3f %10.3f %10.3f %12.3f\n", si->names[i], r.n,
               r.min, r.avg, r.p50, r.p90, r.p99, r.max, r.total);
    }
}

static void free_spaninfo(void *st)
{
    spaninfo *si = st;
    for (int i = 0; i < si->n; i++)
        free(si->csv[i]);
    free(si->csv);
    free(si->t);
    free(si->names);
    prs_stats_free(si->stats);
    free(si);
}

const prs_report prs_report_spaninfo = {
    .name = "spaninfo",
    .kinds = PRS_ALL_KINDS,
    .open = open_spaninfo,
    .record = record_spaninfo,
    .close = close_spaninfo,
    .summary = summary_spaninfo,
    .free = free_spaninfo,
};
