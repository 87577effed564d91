/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_rec_overflow.c — a full buffer never blocks: records are dropped,
 * counted per thread and in Meta 'dropped_records'; every record that was
 * accepted is stored; a span whose begin was dropped ends as a no-op.
 *
 * The writer is held off by taking the buffer-list lock it needs for each
 * pass, so the 64 KiB ring surely fills.
 */
#include "rec_test.h"
#include "tbuf.h"

int main(void)
{
    char dir[512], store[4096];
    rt_tmpdir(dir, sizeof dir);
    CHECK_INT(rt_open(dir, 64 * 1024, store, sizeof store), 0);
    servprof_stats before;
    servprof_get_stats(&before);
    servprof_event(servprof_rec_begin(SERVPROF_LEVEL_INFO, "D"), "first"); /* makes the buffer */
    /* the buffer empty again before the burst */
    CHECK_INT(rt_wait_count(store, "SELECT count(*) FROM slice WHERE name = 'first'", 1), 1);

    int n = 20000;
    /* The writer cannot start a pass while we hold its lock: a record call
     * that waited for room would never return (ctest's timeout would fail the
     * test), so finishing the burst at all shows that a full ring never blocks. */
    sp_tbuf_lock();
    servprof_span lost_span = 1;
    for (int i = 0; i < n; i++) {
        servprof_rec *r = servprof_rec_begin(SERVPROF_LEVEL_INFO, "D");
        servprof_attr_int(r, "i", i);
        servprof_attr_str(r, "pad", "0123456789");
        servprof_event(r, "burst");
    }
    lost_span = servprof_span_begin(servprof_rec_begin(SERVPROF_LEVEL_INFO, "D"), "lost");
    sp_tbuf_unlock();
    CHECK_INT(lost_span, 0); /* the ring is still full: dropped, handle 0 */
    servprof_span_end(lost_span); /* a no-op */
    /* room again once the writer has stored every burst record accepted */
    servprof_stats mid;
    servprof_get_stats(&mid);
    long long bursts = (long long)(mid.records - before.records) - 1;
    CHECK_INT(rt_wait_count(store, "SELECT count(*) FROM slice WHERE name = 'burst'", bursts), bursts);
    servprof_event(servprof_rec_begin(SERVPROF_LEVEL_INFO, "D"), "after");
    rt_close();

    servprof_stats after;
    servprof_get_stats(&after);
    long long dropped = (long long)(after.dropped - before.dropped);
    long long accepted = (long long)(after.records - before.records);
    CHECK(dropped > n / 2);
    CHECK_INT(accepted + dropped, n + 3);
    CHECK_INT(after.span_never_ended - before.span_never_ended, 0);

    sqlite3 *db = rt_db(store);
    CHECK_INT(rt_int(db, "SELECT count(*) FROM slice"), accepted);
    CHECK_INT(rt_int(db, "SELECT count(*) FROM slice WHERE name='burst'"), accepted - 2);
    CHECK_INT(rt_int(db, "SELECT count(*) FROM slice WHERE name='after'"), 1);
    CHECK_INT(rt_int(db, "SELECT CAST(value AS INTEGER) FROM Meta WHERE name='dropped_records'"),
              dropped);
    /* The records kept are the first ones, in order, with nothing torn. */
    CHECK_INT(rt_int(db, "SELECT max(json_extract(args,'$.i')) + 1 FROM slice WHERE name='burst'"),
              accepted - 2);
    CHECK_INT(rt_int(db, "SELECT count(*) FROM slice WHERE name='burst' AND "
                         "json_extract(args,'$.pad') != '0123456789'"),
              0);
    sqlite3_close(db);
    RT_DONE();
}
