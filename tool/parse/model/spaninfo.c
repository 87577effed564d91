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

static const prs_col cols[] = {
    {"span_name", "TEXT"}, {"start_datetime", "TEXT"}, {"end_datetime", "TEXT"},
    {"during_time(ms)", "REAL"}, {"hostname", "TEXT"}, {"pid", "INTEGER"},
};

static void add_name(prs_model *m, const char *name)
{
    for (int i = 0; i < m->nspan_names; i++)
        if (!strcmp(m->span_names[i], name))
            return;
    m->span_names = realloc(m->span_names, (size_t)(m->nspan_names + 1) * sizeof *m->span_names);
    m->span_names[m->nspan_names++] = name;
}

void prs_spaninfo_init(prs_model *m)
{
    if (m->opts->nspans == 0)
        return;
    add_name(m, "forward");
    add_name(m, "batchFrameworkProcessing");
    add_name(m, "BatchSchedule");
    for (int i = 0; i < m->opts->nspans; i++)
        add_name(m, m->opts->spans[i]);
    m->t_spans = calloc((size_t)m->nspan_names, sizeof *m->t_spans);
    m->span_csv = calloc((size_t)m->nspan_names, sizeof *m->span_csv);
    m->stats = prs_stats_new(m->nspan_names);
    for (int i = 0; i < m->nspan_names; i++) {
        char csv[512];
        snprintf(csv, sizeof csv, "span_info/%s.csv", m->span_names[i]);
        for (char *p = csv + 10; *p; p++)
            if (*p == '/' || *p == '\\')
                *p = '_';
        m->span_csv[i] = strdup(csv);
        prs_table_init(&m->out, &m->t_spans[i], m->span_csv[i], NULL, cols, 6, NULL);
    }
}

void prs_spaninfo_record(prs_model *m, const prs_rec *r, enum prs_kind k)
{
    (void)k;
    for (int i = 0; i < m->nspan_names; i++) {
        if (strcmp(r->name, m->span_names[i]) != 0)
            continue;
        char sdt[40], edt[40];
        prs_fmt_datetime(r->ts, sdt);
        prs_fmt_datetime(r->ts + r->dur, edt);
        prs_val v[6] = {
            prs_v_text(r->name, -1), prs_v_text(sdt, -1), prs_v_text(edt, -1),
            prs_v_ns(r->dur), prs_v_text(r->store->hostname, -1), prs_v_int(r->pid),
        };
        prs_table_row(&m->out, &m->t_spans[i], v);
        prs_stats_add(m->stats, i, (double)r->dur / 1e6);
        return;
    }
}

void prs_spaninfo_finish(prs_model *m)
{
    (void)m;
}
