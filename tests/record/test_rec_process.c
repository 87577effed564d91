/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_rec_process.c — the store under real process life:
 *  1. a child records from two threads while this process reads the store
 *     with its own connection: always a consistent, growing prefix of valid
 *     rows; then kill -9 the child: every row a reader had seen is still
 *     there, row for row, the file passes integrity_check and stays a
 *     prefix of each thread's records;
 *  2. a child whose file size is limited (RLIMIT_FSIZE, SIGXFSZ ignored)
 *     fills its "disk": the error is counted, recording calls keep working,
 *     the child exits normally and its store stays valid;
 *  3. the store deleted under the writer: noticed, counted, nothing breaks.
 */
#include <pthread.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "rec_test.h"

static _Atomic int stop_threads;

static void *spin(void *arg)
{
    int me = (int)(intptr_t)arg;
    for (long i = 0; !atomic_load(&stop_threads); i++) {
        servprof_rec *r = servprof_rec_begin(SERVPROF_LEVEL_INFO, "Live");
        servprof_attr_int(r, "seq", i);
        servprof_attr_int(r, "t", me);
        servprof_attr_str(r, "pad", "a fairly long string to make rows bigger and the WAL grow");
        servprof_event(r, "live");
        if (i % 8 == 0)
            rt_sleep_ms(1); /* ~8k records/s per thread: no drop even on a busy machine */
    }
    return NULL;
}

/* Child: records forever from two threads (killed by the parent). */
static void child_live(const char *dir)
{
    char store[4096];
    if (rt_open(dir, 0, store, sizeof store) != 0)
        _exit(3);
    pthread_t a, b;
    pthread_create(&a, NULL, spin, (void *)1);
    pthread_create(&b, NULL, spin, (void *)2);
    for (;;)
        pause();
}

static int integrity_ok(sqlite3 *db)
{
    return !strcmp(rt_text(db, "PRAGMA integrity_check"), "ok");
}

static void test_live_and_kill(void)
{
    char dir[512], store[4096];
    rt_tmpdir(dir, sizeof dir);
    snprintf(store, sizeof store, "%s/Trace_Service/ms_service_testhost-", dir);
    pid_t pid = fork();
    if (pid == 0)
        child_live(dir);
    snprintf(store + strlen(store), sizeof store - strlen(store), "%d.db", (int)pid);
    int slow = rt_sanitized() ? 10 : 1;

    /* Wait for the first rows (a bounded poll). */
    long long seen = 0;
    for (int i = 0; i < 200 * slow && seen <= 0; i++) {
        rt_sleep_ms(50);
        struct stat sb;
        if (stat(store, &sb) != 0)
            continue;
        sqlite3 *db = rt_db(store);
        seen = rt_int(db, "SELECT count(*) FROM slice");
        sqlite3_close(db);
    }
    CHECK(seen > 0);

    /* Read while it writes: each look is a consistent prefix, and grows.
     * At least ten looks, and on until the count grew three times (bounded:
     * a busy machine may delay commits, which come every ~100 ms). */
    int grew = 0, bad = 0;
    long long last_id = 0, last_digest = 0; /* the last look: its rows */
    for (int i = 0; i < 100 * slow && (i < 10 || grew < 3); i++) {
        rt_sleep_ms(120); /* the looks' pace: about one commit apart */
        sqlite3 *db = rt_db(store);
        long long n = rt_int(db, "SELECT count(*) FROM slice");
        last_id = rt_int(db, "SELECT max(id) FROM slice");
        last_digest = rt_int(db, "SELECT sum(json_extract(args,'$.seq') * 2 + "
                                 "json_extract(args,'$.t')) FROM slice");
        if (n > seen)
            grew++;
        if (n < seen)
            bad++;
        seen = n > seen ? n : seen;
        CHECK_INT(rt_int(db, "SELECT count(*) FROM slice WHERE json_valid(args) = 0 OR "
                             "end_time != timestamp + duration"),
                  0);
        /* Per thread the seq numbers seen are 0..max with no hole. */
        CHECK_INT(rt_int(db, "SELECT count(*) FROM (SELECT count(*) c, "
                             "max(json_extract(args,'$.seq')) m FROM slice GROUP BY tid) "
                             "WHERE c != m + 1"),
                  0);
        CHECK_INT(rt_int(db, "SELECT count(*) FROM Meta WHERE name='hostname'"), 1);
        sqlite3_close(db);
    }
    CHECK(grew >= 3);
    CHECK_INT(bad, 0);
    /* One more commit after the last look (a bounded poll), so the kill
     * comes while the writer goes on past what that look saw. */
    long long more = 0;
    for (int i = 0; i < 100 * slow && more <= last_id; i++) {
        rt_sleep_ms(20);
        sqlite3 *db = rt_db(store);
        more = rt_int(db, "SELECT max(id) FROM slice");
        sqlite3_close(db);
    }
    CHECK(more > last_id);

    /* kill -9: what a reader saw committed survives; the file is sound. */
    kill(pid, SIGKILL);
    int status;
    waitpid(pid, &status, 0);
    CHECK(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
    sqlite3 *db = rt_db(store);
    CHECK(integrity_ok(db));
    long long after = rt_int(db, "SELECT count(*) FROM slice");
    CHECK(after >= seen);
    CHECK_INT(rt_int(db, "SELECT count(*) FROM slice WHERE json_valid(args) = 0"), 0);
    /* The rows of the last look, row for row (how much a kill loses is the
     * commit period's worth: docs/benchmarks.md, not a test's figure). */
    char sql[256];
    snprintf(sql, sizeof sql, "SELECT sum(json_extract(args,'$.seq') * 2 + "
             "json_extract(args,'$.t')) FROM slice WHERE id <= %lld", last_id);
    CHECK(last_id > 0);
    CHECK_INT(rt_int(db, sql), last_digest);
    /* Still a prefix per thread: seq 0..max with no hole. */
    CHECK_INT(rt_int(db, "SELECT count(*) FROM (SELECT count(*) c, "
                         "max(json_extract(args,'$.seq')) m FROM slice GROUP BY tid) "
                         "WHERE c != m + 1"),
              0);
    sqlite3_close(db);
}

/* Child: a 2 MiB file size limit, then record far more than that. (The
 * store's 64 KiB pages put its empty schema at ~0.7 MiB of WAL.) */
static void child_disk_full(const char *dir)
{
    check_failures = 0; /* this process's own verdict */
    struct rlimit rl = {2 * 1024 * 1024, 2 * 1024 * 1024};
    signal(SIGXFSZ, SIG_IGN);
    setrlimit(RLIMIT_FSIZE, &rl);
    char store[4096];
    if (rt_open(dir, 0, store, sizeof store) != 0)
        _exit(3);
    for (int i = 0; i < 10; i++)
        servprof_event(servprof_rec_begin(SERVPROF_LEVEL_INFO, "Full"), "small");
    /* They are committed before the disk fills. */
    CHECK_INT(rt_wait_count(store, "SELECT count(*) FROM slice WHERE name='small'", 10), 10);
    char pad[200];
    memset(pad, 'x', sizeof pad - 1);
    pad[sizeof pad - 1] = 0;
    servprof_stats st, st0;
    servprof_get_stats(&st0);
    long emitted = 0;
    for (int round = 0; round < 200; round++) {
        for (int i = 0; i < 1000; i++) {
            servprof_rec *r = servprof_rec_begin(SERVPROF_LEVEL_INFO, "Full");
            servprof_attr_int(r, "i", round * 1000 + i);
            servprof_attr_str(r, "pad", pad);
            servprof_event(r, "fill");
            emitted++;
        }
        rt_sleep_ms(5); /* pace of the fill; the loop ends on the write error (bounded) */
        servprof_get_stats(&st);
        if (st.write_errors > 0)
            break;
    }
    servprof_get_stats(&st);
    CHECK(st.write_errors >= 1);
    /* Recording goes on (records are consumed and counted as lost). */
    for (int i = 0; i < 20000; i++, emitted++)
        servprof_event(servprof_rec_begin(SERVPROF_LEVEL_INFO, "Full"), "after");
    rt_close();
    servprof_get_stats(&st);
    /* Every record is accounted for: accepted (then lost: no store) or
     * dropped when the (slow, sanitized) writer fell behind. */
    CHECK_INT(st.records - st0.records + st.dropped - st0.dropped, emitted);
    _exit(check_failures ? 1 : 0);
}

static void test_disk_full(void)
{
    char dir[512], store[4096];
    rt_tmpdir(dir, sizeof dir);
    pid_t pid = fork();
    if (pid == 0)
        child_disk_full(dir);
    int status;
    waitpid(pid, &status, 0);
    CHECK(WIFEXITED(status));
    CHECK_INT(WEXITSTATUS(status), 0);
    snprintf(store, sizeof store, "%s/Trace_Service/ms_service_testhost-%d.db", dir, (int)pid);
    sqlite3 *db = rt_db(store);
    CHECK(integrity_ok(db));
    CHECK(rt_int(db, "SELECT count(*) FROM slice WHERE name='small'") == 10);
    CHECK_INT(rt_int(db, "SELECT count(*) FROM slice WHERE json_valid(args) = 0"), 0);
    CHECK_INT(rt_int(db, "SELECT count(*) FROM slice WHERE name='after'"), 0);
    sqlite3_close(db);
}

static void test_deleted(void)
{
    char dir[512], store[4096];
    rt_tmpdir(dir, sizeof dir);
    CHECK_INT(rt_open(dir, 0, store, sizeof store), 0);
    servprof_stats a, b;
    servprof_get_stats(&a);
    servprof_event(servprof_rec_begin(SERVPROF_LEVEL_INFO, "Del"), "before");
    /* The store is in use (a row committed) when it is deleted. */
    CHECK_INT(rt_wait_count(store, "SELECT count(*) FROM slice WHERE name='before'", 1), 1);
    CHECK_INT(unlink(store), 0);
    for (int i = 0; i < 50; i++) {
        servprof_event(servprof_rec_begin(SERVPROF_LEVEL_INFO, "Del"), "after");
        rt_sleep_ms(10); /* pace: records over many writer passes, one error for them all */
    }
    rt_close();
    servprof_get_stats(&b);
    CHECK_INT(b.write_errors - a.write_errors, 1);
    CHECK_INT(b.dropped - a.dropped, 0);
    /* A new session makes a new store. */
    CHECK_INT(rt_open(dir, 0, store, sizeof store), 0);
    servprof_event(servprof_rec_begin(SERVPROF_LEVEL_INFO, "Del"), "again");
    rt_close();
    sqlite3 *db = rt_db(store);
    CHECK_INT(rt_int(db, "SELECT count(*) FROM slice WHERE name='again'"), 1);
    sqlite3_close(db);
}

int main(void)
{
    test_live_and_kill();
    test_disk_full();
    test_deleted();
    RT_DONE();
}
