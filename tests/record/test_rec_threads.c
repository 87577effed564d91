/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_rec_threads.c — many threads at once: 8 threads x 100k records land
 * with exact counts and per-thread order (20k under sanitizers), spans
 * begun on one thread and ended on another are paired, each thread gets its
 * row with its name, and buffers of exited threads are drained.
 */
#include <pthread.h>

#include "rec_test.h"
#include "tbuf.h"

#define NTHREADS 8
#define NSPANS 2000

static int per_thread;
static servprof_span spans[NTHREADS][NSPANS];
static pthread_barrier_t barrier;

static void *worker(void *arg)
{
    int me = (int)(intptr_t)arg;
    char name[32];
    snprintf(name, sizeof name, "worker-%d", me);
    servprof_set_thread_name(name);
    for (int i = 0; i < NSPANS; i++) {
        servprof_rec *r = servprof_rec_begin(SERVPROF_LEVEL_INFO, "Execute");
        servprof_attr_int(r, "begun_by", me);
        spans[me][i] = servprof_span_begin(r, "cross");
    }
    pthread_barrier_wait(&barrier);
    int other = (me + 1) % NTHREADS;
    for (int i = 0; i < per_thread; i++) {
        servprof_rec *r = servprof_rec_begin(SERVPROF_LEVEL_INFO, "Work");
        servprof_attr_int(r, "seq", i);
        servprof_attr_int(r, "t", me);
        servprof_event(r, "tick");
        if (i < NSPANS) { /* end the neighbour's spans, interleaved with our events */
            r = servprof_rec_begin(SERVPROF_LEVEL_INFO, NULL);
            servprof_attr_int(r, "ended_by", me);
            servprof_span_end_rec(r, spans[other][i]);
        }
    }
    return NULL;
}

static pthread_barrier_t late_bar;

static void *late_worker(void *arg)
{
    (void)arg;
    servprof_event(servprof_rec_begin(SERVPROF_LEVEL_INFO, "Late"), "late");
    pthread_barrier_wait(&late_bar); /* recorded while on ... */
    pthread_barrier_wait(&late_bar); /* ... exits after the stop */
    return NULL;
}

static int count_buffers(void)
{
    int n = 0;
    for (sp_tbuf *tb = sp_tbuf_first(); tb; tb = tb->next)
        n++;
    return n;
}

/* Threads that exit while no session runs leave no buffer behind. */
static void test_exit_after_stop(void)
{
    char dir[512], store[4096];
    rt_tmpdir(dir, sizeof dir);
    int before = count_buffers();
    CHECK_INT(rt_open(dir, 0, store, sizeof store), 0);
    pthread_t th[4];
    pthread_barrier_init(&late_bar, NULL, 5);
    for (int i = 0; i < 4; i++)
        pthread_create(&th[i], NULL, late_worker, NULL);
    pthread_barrier_wait(&late_bar);
    CHECK_INT(count_buffers(), before + 4);
    rt_close();
    pthread_barrier_wait(&late_bar);
    for (int i = 0; i < 4; i++)
        pthread_join(th[i], NULL);
    CHECK_INT(count_buffers(), before);
    sqlite3 *db = rt_db(store);
    CHECK_INT(rt_int(db, "SELECT count(*) FROM slice WHERE name='late'"), 4);
    sqlite3_close(db);
}

int main(void)
{
    per_thread = rt_sanitized() ? 20000 : 100000;
    char dir[512], store[4096];
    rt_tmpdir(dir, sizeof dir);
    /* 8 MiB per thread holds a whole run: the count must be exact even if
     * the writer is slow (sanitizers, a busy machine). */
    CHECK_INT(rt_open(dir, 8u << 20, store, sizeof store), 0);
    servprof_stats before;
    servprof_get_stats(&before);
    pthread_t th[NTHREADS];
    pthread_barrier_init(&barrier, NULL, NTHREADS);
    for (int i = 0; i < NTHREADS; i++)
        pthread_create(&th[i], NULL, worker, (void *)(intptr_t)i);
    for (int i = 0; i < NTHREADS; i++)
        pthread_join(th[i], NULL); /* threads exit before the stop: orphaned buffers */
    rt_close();
    servprof_stats after;
    servprof_get_stats(&after);
    long long want_events = (long long)NTHREADS * per_thread;
    long long want_spans = (long long)NTHREADS * NSPANS;
    CHECK_INT(after.dropped - before.dropped, 0);
    CHECK_INT(after.records - before.records, want_events + 2 * want_spans);
    CHECK_INT(after.span_double_end - before.span_double_end, 0);
    CHECK_INT(after.span_never_ended - before.span_never_ended, 0);

    sqlite3 *db = rt_db(store);
    CHECK_INT(rt_int(db, "SELECT count(*) FROM slice WHERE name='tick'"), want_events);
    CHECK_INT(rt_int(db, "SELECT count(*) FROM slice WHERE name='cross'"), want_spans);
    /* Per thread: every seq once, in id order. */
    CHECK_INT(rt_int(db, "SELECT count(DISTINCT tid) FROM slice WHERE name='tick'"), NTHREADS);
    char sql[512];
    snprintf(sql, sizeof sql,
             "SELECT count(*) FROM (SELECT tid, count(DISTINCT json_extract(args,'$.seq')) c, "
             "max(json_extract(args,'$.seq')) m FROM slice WHERE name='tick' GROUP BY tid) "
             "WHERE c = %d AND m = %d",
             per_thread, per_thread - 1);
    CHECK_INT(rt_int(db, sql), NTHREADS);
    /* In each thread's rows (id order): seq goes up by one, time never back. */
    CHECK_INT(rt_int(db, "SELECT count(*) FROM (SELECT timestamp t, json_extract(args,'$.seq') s, "
                         "lag(timestamp) OVER w pt, lag(json_extract(args,'$.seq')) OVER w ps "
                         "FROM slice WHERE name='tick' WINDOW w AS (PARTITION BY tid ORDER BY id)) "
                         "WHERE pt IS NOT NULL AND (t < pt OR s != ps + 1)"),
              0);
    /* Cross-thread spans: begun by t, ended by t-1, on t's track. */
    CHECK_INT(rt_int(db, "SELECT count(*) FROM slice WHERE name='cross' AND "
                         "json_extract(args,'$.ended_by') = "
                         "(json_extract(args,'$.begun_by') + 7) % 8 AND duration >= 0 AND "
                         "end_time = timestamp + duration AND cat = 'Execute'"),
              want_spans);
    CHECK_INT(rt_int(db, "SELECT count(DISTINCT s.tid) FROM slice s JOIN thread t ON "
                         "t.track_id = s.tid WHERE s.name='cross' AND t.thread_name = 'worker-' "
                         "|| json_extract(s.args,'$.begun_by')"),
              NTHREADS);
    CHECK_INT(rt_int(db, "SELECT count(*) FROM thread WHERE thread_name LIKE 'worker-%'"),
              NTHREADS);
    CHECK_STR(rt_text(db, "SELECT value FROM Meta WHERE name='dropped_records'"), "0");
    snprintf(sql, sizeof sql, "%lld", want_events + want_spans);
    CHECK_STR(rt_text(db, "SELECT value FROM Meta WHERE name='records_written'"), sql);
    sqlite3_close(db);
    CHECK_INT(count_buffers(), 0); /* the workers' buffers were drained, then freed */
    test_exit_after_stop();
    RT_DONE();
}
