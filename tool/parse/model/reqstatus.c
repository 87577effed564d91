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
#include <string.h>

#include "dbcompat.h"
#include "fmt.h"
#include "model.h"

static const prs_col cols[] = {
    {"hostuid", "TEXT"}, {"pid", "INTEGER"}, {"start_datetime", "TEXT"},
    {"relative_timestamp(ms)", "REAL"}, {"waiting", "INTEGER"}, {"running", "INTEGER"},
    {"swapped", "INTEGER"}, {"timestamp(ms)", "REAL"},
    /* profiler.db only */
    {"timestamp", "TEXT"}, {"QueueSize=", "INTEGER"}, {"status", "TEXT"}, {"PENDING", "INTEGER"},
};
#define NCSV 8 /* the CSV's columns: the first 8 */

void prs_reqstatus_init(prs_model *m)
{
    /* Why the report may be empty when records with QueueSize= did come:
     * their queue names (the first one shown) are none of the three columns. */
    m->reqstatus_unknown_why[0] = 0;
    m->reqstatus_unknown_n = 0;
    prs_table_init(&m->out, &m->t_reqstatus, "request_status.csv", "request_status", cols,
                   sizeof cols / sizeof *cols,
                   "no queue records with QueueSize= (domain Schedule: Queue, Enqueue, Dequeue) were found");
    m->t_reqstatus.ncsv = NCSV;
    for (int i = 0; i < m->nstores; i++) {
        m->st[i].waiting = m->st[i].running = m->st[i].swapped = NAN;
        m->st[i].pending = 0;
        m->st[i].rs_first = -1;
    }
}

static prs_val n(double d) { return isnan(d) ? prs_v_null() : prs_v_int(llround(d)); }

void prs_reqstatus_record(prs_model *m, const prs_rec *r, enum prs_kind k)
{
    const prs_args *a = &m->args;
    if (isnan(a->queue_size))
        return;
    prs_str q = a->queue_name.p ? a->queue_name : a->status;
    prs_store_state *st = &m->st[r->store->index];
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
        if (!m->reqstatus_unknown_n++) {
            char name[64];
            prs_str_copy(q, name, sizeof name);
            snprintf(m->reqstatus_unknown_why, sizeof m->reqstatus_unknown_why,
                     "records with QueueSize= were found, but for no queue it "
                     "reports (WAITING, RUNNING, SWAPPED): the first named '%s' (%s)", name,
                     a->queue_name.p ? "scope#QueueName" : "status");
            m->t_reqstatus.needs = m->reqstatus_unknown_why;
        }
        return;
    }
    char dt[40], ts[32];
    prs_fmt_datetime(r->ts, dt);
    if (st->rs_first < 0)
        st->rs_first = r->ts;
    ts[0] = 0;
    if (m->out.db)
        prs_dbcompat_time(r->ts, ts);
    prs_val v[12] = {
        prs_v_text(r->store->hostname, -1), prs_v_int(r->pid), prs_v_text(dt, -1),
        prs_v_ns(r->ts - st->rs_first), n(st->waiting), n(st->running), n(st->swapped),
        prs_v_ns(r->ts),
        prs_v_text(ts, -1), n(a->queue_size), prs_v_text(status, -1), n(st->pending),
    };
    prs_table_row(&m->out, &m->t_reqstatus, v);
}
