/* SPDX-License-Identifier: Apache-2.0 */
/*
 * kvcache.c — kvcache.csv: one row per KV cache event (KVCacheStatus,
 * Allocate, AppendSlot, Free). used = total − free; allocated =
 * max(before − after, 0); freed = max(after − before, 0); usage =
 * UsagePercent= (÷100 when > 1) else used / total; the old style's
 * deviceBlock= is the blocks left on the device. `start_time` holds the
 * record's datetime, under the reference's column name. A KVCacheStatus also
 * completes the batch rows of its process that wait for KV columns.
 */
#include <stdlib.h>
#include <string.h>

#include "fmt.h"
#include "model.h"
#include "xalloc.h"

static const prs_col cols[] = {
    {"rid", "TEXT"}, {"name", "TEXT"}, {"start_time", "TEXT"}, {"total_blocks", "INTEGER"},
    {"used_blocks", "INTEGER"}, {"free_blocks", "INTEGER"}, {"blocks_allocated", "INTEGER"},
    {"blocks_freed", "INTEGER"}, {"device_kvcache_left", "INTEGER"}, {"kvcache_usage_rate", "REAL"},
};

/* The report's state (prs_report_kvcache). */
typedef struct kvcache {
    prs_table t;
    prs_batch *batch;      /* completed by each KVCacheStatus (batch.c) */
} kvcache;

static void *open_kvcache(prs_model *m)
{
    kvcache *kc = prs_xcalloc(1, sizeof *kc);
    prs_table_init(&m->out, &kc->t, "kvcache.csv", "kvcache", cols, sizeof cols / sizeof *cols,
                   "no KV cache records (domain KVCache: KVCacheStatus, Allocate, Free) were found");
    kc->batch = prs_model_state(m, &prs_report_batch); /* before this one in the table */
    return kc;
}

static prs_val n_or_null(double d) { return isnan(d) ? prs_v_null() : prs_v_int(llround(d)); }

static void record_kvcache(void *st, prs_model *m, const prs_rec *r, enum prs_kind k)
{
    kvcache *kc = st;
    const prs_args *a = &m->args;
    double kv[6];
    prs_kv_numbers(a, kv);
    if (k == K_KVSTATUS && kc->batch)
        prs_batch_kv(kc->batch, m, r->store->index, kv);
    char dt[40];
    prs_fmt_datetime(r->ts, dt);
    prs_val v[10] = {
        m->nroots ? prs_v_text(prs_req_name(m, m->roots[0]), -1) : prs_v_null(),
        prs_v_text(r->name, -1), prs_v_text(dt, -1),
        n_or_null(kv[0]), n_or_null(kv[1]), n_or_null(kv[2]), n_or_null(kv[3]), n_or_null(kv[4]),
        n_or_null(a->device_block), prs_v_real(kv[5]),
    };
    if (m->nroots > 1) { /* one row per request named */
        for (int i = 0; i < m->nroots; i++) {
            v[0] = prs_v_text(prs_req_name(m, m->roots[i]), -1);
            prs_table_row(&m->out, &kc->t, v);
        }
        return;
    }
    prs_table_row(&m->out, &kc->t, v);
}

static void close_kvcache(void *st, prs_model *m) { prs_table_close(&m->out, &((kvcache *)st)->t); }
static const prs_table *table_kvcache(const void *st) { return &((const kvcache *)st)->t; }

const prs_report prs_report_kvcache = {
    .name = "kvcache",
    .kinds = PRS_KIND(K_KVSTATUS) | PRS_KIND(K_KVEVENT),
    .open = open_kvcache,
    .record = record_kvcache,
    .close = close_kvcache,
    .table = table_kvcache,
    .free = free,
};
