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

static const prs_col cols[] = {
    {"rid", "TEXT"}, {"name", "TEXT"}, {"start_time", "TEXT"}, {"total_blocks", "INTEGER"},
    {"used_blocks", "INTEGER"}, {"free_blocks", "INTEGER"}, {"blocks_allocated", "INTEGER"},
    {"blocks_freed", "INTEGER"}, {"device_kvcache_left", "INTEGER"}, {"kvcache_usage_rate", "REAL"},
};

void prs_kvcache_init(prs_model *m)
{
    prs_table_init(&m->out, &m->t_kvcache, "kvcache.csv", "kvcache", cols, sizeof cols / sizeof *cols,
                   "no KV cache records (domain KVCache: KVCacheStatus, Allocate, Free) were found");
}

static prs_val n_or_null(double d) { return isnan(d) ? prs_v_null() : prs_v_int(llround(d)); }

void prs_kvcache_record(prs_model *m, const prs_rec *r, enum prs_kind k)
{
    const prs_args *a = &m->args;
    double kv[6];
    prs_kv_numbers(a, kv);
    if (k == K_KVSTATUS)
        prs_batch_kv(m, r->store->index, kv);
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
            prs_table_row(&m->out, &m->t_kvcache, v);
        }
        return;
    }
    prs_table_row(&m->out, &m->t_kvcache, v);
}
