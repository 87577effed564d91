/* SPDX-License-Identifier: Apache-2.0 */
/*
 * reqstatus.c — request_status.csv: the queue sizes over time. Each Queue /
 * Enqueue / Dequeue record carrying `QueueSize=` updates the size of its
 * queue (scope#QueueName, else status: WAITING, RUNNING, SWAPPED) for its
 * process and writes one row with the three current sizes (empty for a
 * queue not reported yet). relative_timestamp counts from the process's
 * first such row, as the reference's does.
 *
 * profiler.db gets four more columns (after the CSV's: ncsv), the
 * reference's request_status as its dashboard and tests read it:
 * `timestamp` (its time text, UTC: dbcompat.c), `QueueSize=` and `status`
 * (the size and name of the queue this record changed), and `PENDING` (the
 * current size of the PENDING queue, which writes no row of its own).
 * Its WAITING and RUNNING are our waiting and running: SQLite's column
 * names are case-insensitive.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dbcompat.h"
#include "fmt.h"
#include "model.h"
#include "xalloc.h"

static const prs_col cols[] = {
    {"hostuid", "TEXT"}, {"pid", "INTEGER"}, {"start_datetime", "TEXT"},
    {"relative_timestamp(ms)", "REAL"}, {"waiting", "INTEGER"}, {"running", "INTEGER"},
    {"swapped", "INTEGER"}, {"timestamp(ms)", "REAL"},
    /* profiler.db only */
    {"timestamp", "TEXT"}, {"QueueSize=", "INTEGER"}, {"status", "TEXT"}, {"PENDING", "INTEGER"},
};
#define NCSV 8 /* the CSV's columns: the first 8 */

/* Per process (store): current queue sizes (NAN: not reported yet), first row. */
typedef struct rs_store {
    double waiting, running, swapped;
    double pending;        /* profiler.db's request_status.PENDING */
    int64_t first;
} rs_store;

/* The report's state (prs_report_reqstatus). */
typedef struct reqstatus {
    prs_table t;
    rs_store *st;          /* by store index */
    /* QueueSize= records of no queue it reports, and why its table may
     * then be empty (the table's `needs` text) */
    long long unknown_n;
    char unknown_why[256];
} reqstatus;

static void *open_reqstatus(prs_model *m)
{
    reqstatus *rs = prs_xcalloc(1, sizeof *rs);
    /* Why the report may be empty when records with QueueSize= did come:
     * their queue names (the first one shown) are none of the three columns. */
    prs_table_init(&m->out, &rs->t, "request_status.csv", "request_status", cols, sizeof cols / sizeof *cols,
                   "no queue records with QueueSize= (domain Schedule: Queue, Enqueue, Dequeue) were found");
    rs->t.ncsv = NCSV;
    rs->st = prs_xcalloc((size_t)m->nstores + 1, sizeof *rs->st);
    for (int i = 0; i < m->nstores; i++) {
        rs->st[i].waiting = rs->st[i].running = rs->st[i].swapped = NAN;
        rs->st[i].first = -1;
    }
    return rs;
}

void prs_reqstatus_sizes(const prs_model *m, int store, double v[3])
{
    const reqstatus *rs = prs_model_state(m, &prs_report_reqstatus);
    const rs_store *st = rs ? &rs->st[store] : NULL;
    v[0] = st && !isnan(st->waiting) ? st->waiting : 0;
    v[1] = st && !isnan(st->running) ? st->running : 0;
    v[2] = st && !isnan(st->swapped) ? st->swapped : 0;
}

static prs_val n(double d) { return isnan(d) ? prs_v_null() : prs_v_int(llround(d)); }

static void record_reqstatus(void *state, prs_model *m, const prs_rec *r, enum prs_kind k)
{
    (void)k;
    reqstatus *rs = state;
    const prs_args *a = &m->args;
    if (isnan(a->queue_size))
        return;
    prs_str q = a->queue_name.p ? a->queue_name : a->status;
    rs_store *st = &rs->st[r->store->index];
    const char *status;
    if (!q.p || (q.n == 7 && !memcmp(q.p, "WAITING", 7))) {
        st->waiting = a->queue_size;
        status = "WAITING";
    } else if (q.n == 7 && !memcmp(q.p, "RUNNING", 7)) {
        st->running = a->queue_size;
        status = "RUNNING";
    } else if (q.n == 7 && !memcmp(q.p, "SWAPPED", 7)) {
        st->swapped = a->queue_size;
        status = "SWAPPED";
    } else {
        if (q.n == 7 && !memcmp(q.p, "PENDING", 7))
            st->pending = a->queue_size; /* profiler.db's PENDING, shown on the next row */
        /* PENDING and others: not a column of this report. Said if no
         * other row comes (the skip line would claim no QueueSize=). */
        if (!rs->unknown_n++) {
            char name[64];
            prs_str_copy(q, name, sizeof name);
            snprintf(rs->unknown_why, sizeof rs->unknown_why,
                     "records with QueueSize= were found, but for no queue it "
                     "reports (WAITING, RUNNING, SWAPPED): the first named '%s' (%s)", name,
                     a->queue_name.p ? "scope#QueueName" : "status");
            rs->t.needs = rs->unknown_why;
        }
        return;
    }
    char dt[40], ts[32];
    prs_fmt_datetime(r->ts, dt);
    if (st->first < 0)
        st->first = r->ts;
    ts[0] = 0;
    if (m->out.db)
        prs_dbcompat_time(r->ts, ts);
    prs_val v[12] = {
        prs_v_text(r->store->hostname, -1), prs_v_int(r->pid), prs_v_text(dt, -1),
        prs_v_ns(r->ts - st->first), n(st->waiting), n(st->running), n(st->swapped),
        prs_v_ns(r->ts),
        prs_v_text(ts, -1), n(a->queue_size), prs_v_text(status, -1), n(st->pending),
    };
    prs_table_row(&m->out, &rs->t, v);
}

static void close_reqstatus(void *st, prs_model *m) { prs_table_close(&m->out, &((reqstatus *)st)->t); }
static const prs_table *table_reqstatus(const void *st) { return &((const reqstatus *)st)->t; }

static void free_reqstatus(void *state)
{
    reqstatus *rs = state;
    free(rs->st);
    free(rs);
}

const prs_report prs_report_reqstatus = {
    .name = "reqstatus",
    .kinds = PRS_KIND(K_QUEUE) | PRS_KIND(K_ENQUEUE) | PRS_KIND(K_DEQUEUE),
    .open = open_reqstatus,
    .record = record_reqstatus,
    .close = close_reqstatus,
    .table = table_reqstatus,
    .free = free_reqstatus,
};
