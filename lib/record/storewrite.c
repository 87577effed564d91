/* SPDX-License-Identifier: Apache-2.0 */
/*
 * storewrite.c — the raw store: one SQLite file per process and session.
 *
 * DESIGN
 * The layout is the reference tool's (docs/api.md, "The raw store"), created with
 * CREATE TABLE IF NOT EXISTS so a reopened file is appended to. The writer
 * thread is the only user: one connection opened without SQLite's mutexes,
 * one prepared statement per kind of row (the pid is bound once and stays
 * bound), rows inserted in explicit transactions that writer.c opens and
 * commits. WAL journal with synchronous=NORMAL: a commit costs no fsync,
 * readers (the parser, `sqlite3`) never block us nor we them, and what a
 * reader sees is always a whole number of committed transactions — also
 * after a kill -9, since the WAL is replayed by the next opener.
 * Pages of 64 KiB (set before WAL, so only for a new file): the store is
 * append-only, so big pages mean 16x fewer page writes (system calls, page
 * allocations, B-tree splits) for the same bytes; measured: more rows per
 * writer CPU-second than 4 KiB pages, and less CPU per commit at low rates
 * (docs/benchmarks.md, "Store page size").
 *
 * Failure policy: the first error (disk full, file too large, I/O error,
 * the file deleted under us) is logged once and counted (write_errors);
 * the open transaction is rolled back, so the file stays a valid prefix,
 * and the store turns "failed": every later write is a no-op returning -1
 * and the writer counts the records it could not store. Writing is not
 * retried in the same session: a disk that filled once tends to stay full,
 * and half-written sessions are worse than clearly cut ones. The next
 * session opens a fresh store.
 *
 * Checkpoints run on a second thread (the checkpointer), with its own
 * connection: the writer's connection has wal_autocheckpoint off, and a
 * WAL hook (called after each of the writer's commits) wakes the
 * checkpointer once the WAL holds CKPT_FRAMES pages. A checkpoint copies
 * the WAL into the .db and fsyncs both: done on the writer thread it took
 * a third of the writer's CPU and stalled it while the thread buffers
 * filled (docs/benchmarks.md, "Figures behind design comments").
 * PASSIVE checkpoints never block the writer. The WAL only restarts from
 * its beginning (instead of growing) when the writer's next transaction
 * starts after a checkpoint that copied everything, so from the commit
 * that wakes the checkpointer until it is done sp_store_wants_pause() is
 * true and the writer leaves the records in the thread buffers for a while
 * (writer.c) instead of starting that transaction. (Holding the rows in
 * memory here instead, decoded, was measured: more writer CPU per row
 * (docs/benchmarks.md, "Figures behind design comments"), the rows going
 * cold in a multi-MiB buffer before their INSERT.)
 * A fork waits for a checkpoint in progress (ck_fork_mu), as it waits for
 * the writer to park: the child must not inherit SQLite's locks held.
 *
 * A deleted store is noticed by sp_store_check_file() (st_nlink of a file
 * descriptor we keep, and the path still naming the same inode), which the
 * writer calls before each commit: SQLite itself would go on writing into
 * the unlinked inode and the data would silently vanish.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "fsutil.h"
#include "internal.h"
#include "rec_state.h"
#include "storewrite.h"

/* Slice rows are inserted BATCH at a time with one multi-row INSERT: SQLite's
 * per-statement cost (VDBE start, AUTOINCREMENT bookkeeping) is then paid
 * once per batch, which about doubles the rows a core can store. Rows wait
 * in `pend` (strings copied into `arena`) until the batch is full or the
 * transaction commits. */
#define BATCH 32
#define COLS 7 /* bound per row: timestamp, duration, name, tid, cat, args, end_time */
/* WAL pages (64 KiB each) that wake the checkpointer: 16 MiB of WAL, about
 * 0.1 s of rows at 1 M rows/s; at a few thousand rows/s, one every ~20 s. */
#define CKPT_FRAMES 256

typedef struct pending_row {
    int64_t ts, dur;
    size_t name_off, name_len, cat_off, cat_len, args_off, args_len;
    int tid;
} pending_row;

/* The checkpointer thread's state. */
typedef struct ckpt {
    pthread_t thread;
    int started;  /* the thread exists (set and read by the writer side only) */
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int want;     /* under mu: the writer's last commit left >= CKPT_FRAMES */
    int stop;     /* under mu */
    _Atomic int busy; /* set by the WAL hook, cleared after the checkpoint */
    int warned;   /* checkpointer only: a failure was logged */
} ckpt;

struct sp_store {
    sqlite3 *db;
    sqlite3_stmt *ins_slice, *ins_batch, *del_meta, *ins_meta, *ins_process, *ins_thread;
    pending_row pend[BATCH]; /* rows waiting for their INSERT */
    int npend;
    int txn_used; /* a statement ran in the open transaction (its read snapshot exists) */
    int wal_pages; /* the WAL's size at the writer's last commit (WAL hook) */
    sqlite3 *ckdb; /* the checkpointer's connection; NULL: SQLite checkpoints on commit */
    ckpt ck;
    char *arena; /* the pending rows' strings */
    size_t arena_len, arena_cap;
    char path[SP_PATH_MAX];
    char pid_text[16];
    int in_txn;
    int failed;
    int fd; /* read-only, only to notice the file being deleted */
    dev_t dev;
    ino_t ino;
};

static const char schema[] =
    "CREATE TABLE IF NOT EXISTS slice(id INTEGER PRIMARY KEY AUTOINCREMENT, timestamp INTEGER, "
    "duration INTEGER, name TEXT, depth INTEGER, track_id INTEGER, cat TEXT, args TEXT, "
    "cname TEXT, end_time INTEGER, flag_id TEXT, pid INTEGER, tid INTEGER);"
    "CREATE TABLE IF NOT EXISTS Meta(name TEXT, value TEXT, slice TEXT);"
    "CREATE TABLE IF NOT EXISTS process(pid TEXT PRIMARY KEY, process_name TEXT, label TEXT, "
    "process_sort_index INTEGER, parentPid TEXT);"
    "CREATE TABLE IF NOT EXISTS thread(track_id INTEGER PRIMARY KEY, tid TEXT, pid TEXT, "
    "thread_name TEXT, thread_sort_index INTEGER);"
    "CREATE TABLE IF NOT EXISTS counter(id INTEGER PRIMARY KEY AUTOINCREMENT, name TEXT, "
    "pid TEXT, timestamp INTEGER, cat TEXT, args TEXT);"
    "CREATE TABLE IF NOT EXISTS flow(id INTEGER PRIMARY KEY AUTOINCREMENT, flow_id TEXT, "
    "name TEXT, cat TEXT, track_id INTEGER, timestamp INTEGER, type TEXT);";

static int flush_rows(sp_store *st);

/* Figures of the last store opened, for the benchmark (sp_store_last_stats). */
static _Atomic uint64_t stat_ckpts, stat_ckpt_fails;
static _Atomic int64_t stat_ckpt_longest_ns, stat_ckpt_cpu_ns;
static _Atomic int stat_max_wal_frames;

/* Held by the checkpointer while inside SQLite, and by fork() (prepare to
 * parent / child): a child must not inherit a lock SQLite holds. */
static pthread_mutex_t ck_fork_mu = PTHREAD_MUTEX_INITIALIZER;

static void ck_fork_prepare(void)
{
    pthread_mutex_lock(&ck_fork_mu);
}

static void ck_fork_after(void)
{
    pthread_mutex_unlock(&ck_fork_mu);
}

static void register_fork_hooks(void)
{
    pthread_atfork(ck_fork_prepare, ck_fork_after, ck_fork_after);
}

static void atomic_max_i64(_Atomic int64_t *a, int64_t v)
{
    int64_t old = atomic_load_explicit(a, memory_order_relaxed);
    while (v > old && !atomic_compare_exchange_weak_explicit(a, &old, v, memory_order_relaxed,
                                                              memory_order_relaxed))
        ;
}

/* One PASSIVE checkpoint on the checkpointer's connection. A failure (disk
 * full, file deleted) is logged once: the WAL still holds every committed
 * row, readers see them, and the store's close checkpoints again. */
static void checkpoint_once(sp_store *st)
{
    int64_t t0 = sp_now_monotonic_ns();
    int log_frames = 0, done = 0;
    pthread_mutex_lock(&ck_fork_mu);
    int rc = sqlite3_wal_checkpoint_v2(st->ckdb, NULL, SQLITE_CHECKPOINT_PASSIVE, &log_frames,
                                       &done);
    if (rc != SQLITE_OK && rc != SQLITE_BUSY && !st->ck.warned) {
        st->ck.warned = 1;
        atomic_fetch_add_explicit(&stat_ckpt_fails, 1, memory_order_relaxed);
        sp_log(SP_LOG_WARNING,
               "raw store %s: background checkpoint failed: %s (SQLite code %d); the rows stay "
               "in the -wal file, which readers see, and grows until a later checkpoint",
               st->path, sqlite3_errmsg(st->ckdb), rc);
    }
    pthread_mutex_unlock(&ck_fork_mu);
    atomic_fetch_add_explicit(&stat_ckpts, 1, memory_order_relaxed);
    atomic_max_i64(&stat_ckpt_longest_ns, sp_now_monotonic_ns() - t0);
}

static void *ckpt_main(void *arg)
{
    sp_store *st = arg;
    ckpt *ck = &st->ck;
    pthread_setname_np(pthread_self(), "servprof-ckpt");
    sigset_t all;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, NULL); /* the program's signals are not ours */
    pthread_mutex_lock(&ck->mu);
    for (;;) {
        while (!ck->want && !ck->stop)
            pthread_cond_wait(&ck->cv, &ck->mu);
        if (ck->stop)
            break;
        ck->want = 0;
        pthread_mutex_unlock(&ck->mu);
        checkpoint_once(st);
        atomic_store_explicit(&ck->busy, 0, memory_order_release);
        pthread_mutex_lock(&ck->mu);
    }
    pthread_mutex_unlock(&ck->mu);
    struct timespec cpu;
    if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &cpu) == 0)
        atomic_store(&stat_ckpt_cpu_ns, (int64_t)cpu.tv_sec * 1000000000 + cpu.tv_nsec);
    return NULL;
}

/* SQLite's WAL hook: runs on the writer thread after each of its commits,
 * with the WAL's size in pages. Wakes the checkpointer past CKPT_FRAMES;
 * `busy` also tells the writer to hold new rows back until it is done. */
static int on_wal_commit(void *arg, sqlite3 *db, const char *name, int frames)
{
    (void)db;
    (void)name;
    sp_store *st = arg;
    st->wal_pages = frames;
    if (frames > atomic_load_explicit(&stat_max_wal_frames, memory_order_relaxed))
        atomic_store_explicit(&stat_max_wal_frames, frames, memory_order_relaxed);
    if (frames >= CKPT_FRAMES && !atomic_load_explicit(&st->ck.busy, memory_order_acquire)) {
        atomic_store_explicit(&st->ck.busy, 1, memory_order_relaxed);
        pthread_mutex_lock(&st->ck.mu);
        st->ck.want = 1;
        pthread_cond_signal(&st->ck.cv);
        pthread_mutex_unlock(&st->ck.mu);
    }
    return SQLITE_OK;
}

/* Opens the checkpointer's connection and starts its thread; on any
 * failure SQLite's own checkpoints on commit stay on (logged). */
static void start_checkpointer(sp_store *st)
{
    ckpt *ck = &st->ck;
    pthread_mutex_init(&ck->mu, NULL);
    pthread_cond_init(&ck->cv, NULL);
    int rc = sqlite3_open_v2(st->path, &st->ckdb, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX,
                             NULL);
    if (rc == SQLITE_OK)
        rc = sqlite3_exec(st->ckdb, "PRAGMA synchronous=NORMAL", NULL, NULL, NULL);
    if (rc == SQLITE_OK)
        rc = pthread_create(&ck->thread, NULL, ckpt_main, st) == 0 ? SQLITE_OK : SQLITE_ERROR;
    if (rc != SQLITE_OK) {
        sp_log(SP_LOG_WARNING,
               "raw store %s: no background checkpointer (%s); the writer checkpoints itself",
               st->path, st->ckdb ? sqlite3_errmsg(st->ckdb) : sqlite3_errstr(rc));
        sqlite3_close(st->ckdb);
        st->ckdb = NULL;
        pthread_mutex_destroy(&ck->mu);
        pthread_cond_destroy(&ck->cv);
        return;
    }
    ck->started = 1;
    sqlite3_wal_autocheckpoint(st->db, 0);
    sqlite3_wal_hook(st->db, on_wal_commit, st);
}

static void stop_checkpointer(sp_store *st)
{
    ckpt *ck = &st->ck;
    if (!ck->started)
        return;
    pthread_mutex_lock(&ck->mu);
    ck->stop = 1;
    pthread_cond_signal(&ck->cv);
    pthread_mutex_unlock(&ck->mu);
    pthread_join(ck->thread, NULL);
    ck->started = 0;
    sqlite3_wal_hook(st->db, NULL, NULL);
    sqlite3_close(st->ckdb);
    st->ckdb = NULL;
    pthread_mutex_destroy(&ck->mu);
    pthread_cond_destroy(&ck->cv);
}

void sp_store_last_stats(sp_store_stats *out)
{
    out->checkpoints = atomic_load(&stat_ckpts);
    out->checkpoint_failures = atomic_load(&stat_ckpt_fails);
    out->checkpoint_longest_ns = atomic_load(&stat_ckpt_longest_ns);
    out->checkpointer_cpu_ns = atomic_load(&stat_ckpt_cpu_ns);
    out->max_wal_pages = atomic_load(&stat_max_wal_frames);
}

/* Records the first failure: log, count, roll back, refuse from now on. */
static int fail(sp_store *st, const char *what, int rc)
{
    if (st->failed)
        return -1;
    st->failed = 1;
    st->npend = 0;
    st->arena_len = 0;
    sp_count(&sp_rec_count.write_errors, 1);
    int sys = st->db ? sqlite3_system_errno(st->db) : 0;
    sp_log(SP_LOG_ERROR,
           "raw store %s: %s failed: %s (SQLite code %d%s%s); writing stops for this session, "
           "later records are counted as lost; the store keeps what was committed",
           st->path, what, st->db ? sqlite3_errmsg(st->db) : sqlite3_errstr(rc), rc,
           sys ? ", system: " : "", sys ? strerror(sys) : "");
    if (st->db && st->in_txn && !sqlite3_get_autocommit(st->db))
        sqlite3_exec(st->db, "ROLLBACK", NULL, NULL, NULL);
    st->in_txn = 0;
    return -1;
}

/* mkdir -p for the folder holding path. */
static int make_parent(const char *path)
{
    char dir[SP_PATH_MAX];
    snprintf(dir, sizeof dir, "%s", path);
    char *slash = strrchr(dir, '/');
    if (!slash || slash == dir)
        return 0;
    *slash = 0;
    for (char *p = dir + 1; *p; p++) {
        if (*p != '/')
            continue;
        *p = 0;
        if (mkdir(dir, 0750) != 0 && errno != EEXIST)
            return -1;
        *p = '/';
    }
    if (mkdir(dir, 0750) != 0 && errno != EEXIST)
        return -1;
    return 0;
}

static int prepare(sp_store *st, const char *sql, sqlite3_stmt **out)
{
    int rc = sqlite3_prepare_v3(st->db, sql, -1, SQLITE_PREPARE_PERSISTENT, out, NULL);
    if (rc != SQLITE_OK) {
        sp_log(SP_LOG_ERROR, "raw store %s: cannot prepare \"%s\": %s", st->path, sql,
               sqlite3_errmsg(st->db));
        return -1;
    }
    return 0;
}

static void close_all(sp_store *st)
{
    stop_checkpointer(st);
    sqlite3_finalize(st->ins_slice);
    sqlite3_finalize(st->ins_batch);
    free(st->arena);
    sqlite3_finalize(st->del_meta);
    sqlite3_finalize(st->ins_meta);
    sqlite3_finalize(st->ins_process);
    sqlite3_finalize(st->ins_thread);
    if (st->db)
        sqlite3_close(st->db);
    if (st->fd >= 0)
        close(st->fd);
    free(st);
}

sp_store *sp_store_open(const char *path, int pid)
{
    static pthread_once_t hooks_once = PTHREAD_ONCE_INIT;
    pthread_once(&hooks_once, register_fork_hooks);
    sp_store *st = calloc(1, sizeof *st);
    if (!st) {
        sp_log(SP_LOG_ERROR, "raw store %s: out of memory", path);
        return NULL;
    }
    st->fd = -1;
    snprintf(st->path, sizeof st->path, "%s", path);
    snprintf(st->pid_text, sizeof st->pid_text, "%d", pid);
    if (make_parent(path) != 0) {
        sp_log(SP_LOG_ERROR, "raw store %s: cannot create its folder: %s; nothing is recorded",
               path, strerror(errno));
        free(st);
        return NULL;
    }
    /* Made by us first, 0640 and through no symlink: SQLite would create
     * it 0644, and its WAL and shm files copy the store's mode. */
    char why[160];
    int prc = sp_precreate_file(path, SP_FILE_MODE, why, sizeof why);
    if (prc != 0) {
        sp_log(SP_LOG_ERROR, "raw store %s: cannot create it (the file %s); nothing is recorded",
               path, why);
        free(st);
        return NULL;
    }
    int rc = sqlite3_open_v2(path, &st->db,
                             SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX,
                             NULL);
    const char *step = "open";
    if (rc == SQLITE_OK) {
        sqlite3_busy_timeout(st->db, 2000);
        step = "set up (WAL, schema)";
        rc = sqlite3_exec(st->db, "PRAGMA page_size=65536; PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL; PRAGMA cache_size=-8192;", NULL,
                          NULL, NULL);
    }
    if (rc == SQLITE_OK)
        rc = sqlite3_exec(st->db, schema, NULL, NULL, NULL);
    if (rc != SQLITE_OK) {
        sp_log(SP_LOG_ERROR, "raw store %s: cannot %s: %s; nothing is recorded", path, step,
               st->db ? sqlite3_errmsg(st->db) : sqlite3_errstr(rc));
        close_all(st);
        return NULL;
    }
    char one[256], many[BATCH * 64 + 256];
    int len = snprintf(many, sizeof many, "INSERT INTO slice(timestamp,duration,name,depth,track_id,"
                       "cat,args,cname,end_time,flag_id,pid,tid) VALUES");
    for (int i = 0; i < BATCH; i++) {
        int b = i * COLS;
        len += snprintf(many + len, sizeof many - (size_t)len,
                        "%s(?%d,?%d,?%d,0,?%d,?%d,?%d,NULL,?%d,NULL,%d,?%d)", i ? "," : "", b + 1,
                        b + 2, b + 3, b + 4, b + 5, b + 6, b + 7, pid, b + 4);
    }
    snprintf(one, sizeof one, "INSERT INTO slice(timestamp,duration,name,depth,track_id,cat,args,"
             "cname,end_time,flag_id,pid,tid) VALUES(?1,?2,?3,0,?4,?5,?6,NULL,?7,NULL,%d,?4)", pid);
    if (prepare(st, one, &st->ins_slice) || prepare(st, many, &st->ins_batch) ||
        prepare(st, "DELETE FROM Meta WHERE name=?1", &st->del_meta) ||
        prepare(st, "INSERT INTO Meta(name,value) VALUES(?1,?2)", &st->ins_meta) ||
        prepare(st, "INSERT OR REPLACE INTO process(pid,process_name,label,process_sort_index,"
                    "parentPid) VALUES(?1,?2,?3,0,?4)", &st->ins_process) ||
        prepare(st, "INSERT OR REPLACE INTO thread(track_id,tid,pid,thread_name,"
                    "thread_sort_index) VALUES(?1,?2,?3,?4,?1)", &st->ins_thread)) {
        close_all(st);
        return NULL;
    }
    st->fd = open(path, O_RDONLY | O_CLOEXEC);
    struct stat sb;
    if (st->fd >= 0 && fstat(st->fd, &sb) == 0) {
        st->dev = sb.st_dev;
        st->ino = sb.st_ino;
    }
    atomic_store(&stat_ckpts, 0);
    atomic_store(&stat_ckpt_fails, 0);
    atomic_store(&stat_ckpt_longest_ns, 0);
    atomic_store(&stat_ckpt_cpu_ns, 0);
    atomic_store(&stat_max_wal_frames, 0);
    start_checkpointer(st);
    return st;
}

static int run(sp_store *st, sqlite3_stmt *s, const char *what)
{
    st->txn_used = 1;
    int rc = sqlite3_step(s);
    sqlite3_reset(s);
    if (rc != SQLITE_DONE)
        return fail(st, what, rc);
    return 0;
}

int sp_store_begin(sp_store *st)
{
    if (st->failed)
        return -1;
    if (st->in_txn)
        return 0;
    int rc = sqlite3_exec(st->db, "BEGIN", NULL, NULL, NULL);
    if (rc != SQLITE_OK)
        return fail(st, "BEGIN", rc);
    st->in_txn = 1;
    st->txn_used = 0;
    return 0;
}

int sp_store_commit(sp_store *st)
{
    if (st->failed)
        return -1;
    if (!st->in_txn)
        return 0;
    if (st->npend && flush_rows(st) != 0)
        return -1;
    int rc = sqlite3_exec(st->db, "COMMIT", NULL, NULL, NULL);
    if (rc != SQLITE_OK)
        return fail(st, "COMMIT", rc);
    st->in_txn = 0;
    st->txn_used = 0;
    return 0;
}

int sp_store_in_txn(const sp_store *st)
{
    return st->in_txn;
}

int sp_store_failed(const sp_store *st)
{
    return st->failed;
}

static void bind_row(sqlite3_stmt *s, int base, const sp_store *st, const pending_row *r)
{
    sqlite3_bind_int64(s, base + 1, r->ts);
    sqlite3_bind_int64(s, base + 2, r->dur);
    sqlite3_bind_text(s, base + 3, st->arena + r->name_off, (int)r->name_len, SQLITE_STATIC);
    sqlite3_bind_int(s, base + 4, r->tid);
    sqlite3_bind_text(s, base + 5, st->arena + r->cat_off, (int)r->cat_len, SQLITE_STATIC);
    sqlite3_bind_text(s, base + 6, st->arena + r->args_off, (int)r->args_len, SQLITE_STATIC);
    sqlite3_bind_int64(s, base + 7, r->ts + r->dur);
}

/* Inserts the pending rows: one multi-row statement when the batch is full,
 * else one statement per row. */
static int flush_rows(sp_store *st)
{
    int rc = 0;
    if (st->npend == BATCH) {
        for (int i = 0; i < BATCH; i++)
            bind_row(st->ins_batch, i * COLS, st, &st->pend[i]);
        rc = run(st, st->ins_batch, "INSERT INTO slice");
    } else {
        for (int i = 0; i < st->npend && rc == 0; i++) {
            bind_row(st->ins_slice, 0, st, &st->pend[i]);
            rc = run(st, st->ins_slice, "INSERT INTO slice");
        }
    }
    st->npend = 0;
    st->arena_len = 0;
    return rc;
}

int sp_store_wal_pages(const sp_store *st)
{
    return st->wal_pages;
}

int sp_store_wants_pause(const sp_store *st)
{
    return !st->failed && !st->txn_used && st->ck.started &&
           atomic_load_explicit(&st->ck.busy, memory_order_acquire);
}

static size_t arena_add(sp_store *st, const char *s, size_t n)
{
    if (!st->arena || st->arena_len + n > st->arena_cap) { /* never NULL: "" must bind as "" */
        size_t cap = st->arena_cap ? st->arena_cap : 64 * 1024;
        while (cap < st->arena_len + n)
            cap *= 2;
        char *a = realloc(st->arena, cap);
        if (!a)
            return (size_t)-1;
        st->arena = a;
        st->arena_cap = cap;
    }
    if (n)
        memcpy(st->arena + st->arena_len, s, n);
    st->arena_len += n;
    return st->arena_len - n;
}

int sp_store_slice(sp_store *st, const sp_slice_row *row)
{
    if (st->failed)
        return -1;
    pending_row *p = &st->pend[st->npend];
    p->ts = row->timestamp;
    p->dur = row->duration;
    p->tid = row->tid;
    p->name_len = row->name_len;
    p->cat_len = row->cat_len;
    p->args_len = row->args_len;
    p->name_off = arena_add(st, row->name, row->name_len);
    p->cat_off = arena_add(st, row->cat, row->cat_len);
    p->args_off = arena_add(st, row->args, row->args_len);
    if (p->name_off == (size_t)-1 || p->cat_off == (size_t)-1 || p->args_off == (size_t)-1)
        return fail(st, "buffering a row (out of memory)", SQLITE_NOMEM);
    if (++st->npend == BATCH)
        return flush_rows(st);
    return 0;
}

int sp_store_meta(sp_store *st, const char *key, const char *value)
{
    if (st->failed)
        return -1;
    sqlite3_bind_text(st->del_meta, 1, key, -1, SQLITE_TRANSIENT);
    if (run(st, st->del_meta, "DELETE FROM Meta"))
        return -1;
    sqlite3_bind_text(st->ins_meta, 1, key, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(st->ins_meta, 2, value, -1, SQLITE_TRANSIENT);
    return run(st, st->ins_meta, "INSERT INTO Meta");
}

int sp_store_meta_closed(const char *path, const char *key, const char *value)
{
    sqlite3 *db = NULL;
    /* READWRITE without CREATE: a store removed meanwhile stays removed */
    int rc = sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX, NULL);
    sqlite3_stmt *del = NULL, *ins = NULL;
    if (rc == SQLITE_OK) {
        sqlite3_busy_timeout(db, 2000);
        rc = sqlite3_exec(db, "BEGIN IMMEDIATE", NULL, NULL, NULL);
    }
    if (rc == SQLITE_OK)
        rc = sqlite3_prepare_v2(db, "DELETE FROM Meta WHERE name=?1", -1, &del, NULL);
    if (rc == SQLITE_OK)
        rc = sqlite3_prepare_v2(db, "INSERT INTO Meta(name,value) VALUES(?1,?2)", -1, &ins, NULL);
    if (rc == SQLITE_OK) {
        sqlite3_bind_text(del, 1, key, -1, SQLITE_TRANSIENT);
        rc = sqlite3_step(del) == SQLITE_DONE ? SQLITE_OK : sqlite3_errcode(db);
    }
    if (rc == SQLITE_OK) {
        sqlite3_bind_text(ins, 1, key, -1, SQLITE_TRANSIENT);
        sqlite3_bind_text(ins, 2, value, -1, SQLITE_TRANSIENT);
        rc = sqlite3_step(ins) == SQLITE_DONE ? SQLITE_OK : sqlite3_errcode(db);
    }
    sqlite3_finalize(del);
    sqlite3_finalize(ins);
    if (rc == SQLITE_OK)
        rc = sqlite3_exec(db, "COMMIT", NULL, NULL, NULL);
    if (rc != SQLITE_OK)
        sp_log(SP_LOG_WARNING, "raw store %s: cannot update Meta %s after closing: %s; "
               "the value written before stays", path, key, db ? sqlite3_errmsg(db) : sqlite3_errstr(rc));
    sqlite3_close(db); /* the last connection: the WAL is checkpointed and removed */
    return rc == SQLITE_OK ? 0 : -1;
}

int sp_store_process(sp_store *st, const char *name, const char *label, int ppid)
{
    if (st->failed)
        return -1;
    char pp[16];
    snprintf(pp, sizeof pp, "%d", ppid);
    sqlite3_stmt *s = st->ins_process;
    sqlite3_bind_text(s, 1, st->pid_text, -1, SQLITE_STATIC);
    sqlite3_bind_text(s, 2, name, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(s, 3, label, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(s, 4, pp, -1, SQLITE_TRANSIENT);
    return run(st, s, "INSERT INTO process");
}

int sp_store_thread(sp_store *st, int tid, const char *name)
{
    if (st->failed)
        return -1;
    char t[16];
    snprintf(t, sizeof t, "%d", tid);
    sqlite3_stmt *s = st->ins_thread;
    sqlite3_bind_int(s, 1, tid);
    sqlite3_bind_text(s, 2, t, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(s, 3, st->pid_text, -1, SQLITE_STATIC);
    sqlite3_bind_text(s, 4, name, -1, SQLITE_TRANSIENT);
    return run(st, s, "INSERT INTO thread");
}

int sp_store_check_file(sp_store *st)
{
    if (st->failed)
        return -1;
    struct stat a, b;
    int gone = st->fd >= 0 && fstat(st->fd, &a) == 0 && a.st_nlink == 0;
    if (!gone) {
        if (stat(st->path, &b) != 0)
            gone = errno == ENOENT || errno == ENOTDIR;
        else
            gone = st->fd >= 0 && (b.st_ino != st->ino || b.st_dev != st->dev);
    }
    if (!gone)
        return 0;
    st->failed = 1;
    st->npend = 0;
    st->arena_len = 0;
    sp_count(&sp_rec_count.write_errors, 1);
    sp_log(SP_LOG_ERROR,
           "raw store %s was deleted or replaced while recording; writing stops for this "
           "session (later records are counted as lost); the next session creates a new store",
           st->path);
    if (st->in_txn && !sqlite3_get_autocommit(st->db))
        sqlite3_exec(st->db, "ROLLBACK", NULL, NULL, NULL);
    st->in_txn = 0;
    return -1;
}

void sp_store_close(sp_store *st)
{
    if (!st)
        return;
    if (!st->failed && st->in_txn)
        sp_store_commit(st);
    /* The checkpointer's connection closes first (in close_all), so the
     * writer's is the last one: closing it checkpoints the WAL into the .db
     * and removes it, so the file can be copied alone. */
    close_all(st);
}

void sp_store_forget(sp_store *st)
{
    /* The connections belong to the parent: closing them here could
     * checkpoint or unlock under the parent's feet, and the checkpointer
     * thread does not exist here. Leak them, only close our fd. */
    if (st && st->fd >= 0)
        close(st->fd);
    free(st);
}
