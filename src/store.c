/*
 * store.c — the raw store: one SQLite file per process and session.
 *
 * DESIGN
 * The layout is the reference tool's (collection.md §4), created with
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
 * allocations, B-tree splits) for the same bytes; measured +60-70 % rows per
 * writer CPU-second over 4 KiB pages, and less CPU per commit at low rates.
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
 * A deleted store is noticed by sp_store_check_file() (st_nlink of a file
 * descriptor we keep, and the path still naming the same inode), which the
 * writer calls before each commit: SQLite itself would go on writing into
 * the unlinked inode and the data would silently vanish.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "internal.h"
#include "rec_state.h"
#include "store.h"

/* Slice rows are inserted BATCH at a time with one multi-row INSERT: SQLite's
 * per-statement cost (VDBE start, AUTOINCREMENT bookkeeping) is then paid
 * once per batch, which about doubles the rows a core can store. Rows wait
 * in `pend` (strings copied into `arena`) until the batch is full or the
 * transaction commits. */
#define BATCH 32
#define COLS 7 /* bound per row: timestamp, duration, name, tid, cat, args, end_time */

typedef struct pending_row {
    int64_t ts, dur;
    size_t name_off, name_len, cat_off, cat_len, args_off, args_len;
    int tid;
} pending_row;

struct sp_store {
    sqlite3 *db;
    sqlite3_stmt *ins_slice, *ins_batch, *del_meta, *ins_meta, *ins_process, *ins_thread;
    pending_row pend[BATCH];
    int npend;
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

/* Records the first failure: log, count, roll back, refuse from now on. */
static int fail(sp_store *st, const char *what, int rc)
{
    if (st->failed)
        return -1;
    st->failed = 1;
    st->npend = 0;
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
    return st;
}

static int run(sp_store *st, sqlite3_stmt *s, const char *what)
{
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
    /* The last connection closing checkpoints the WAL into the .db and
     * removes it, so the file can be copied alone. */
    close_all(st);
}

void sp_store_forget(sp_store *st)
{
    /* The connection belongs to the parent: closing it here could checkpoint
     * or unlock under the parent's feet. Leak it, only close our fd. */
    if (st && st->fd >= 0)
        close(st->fd);
    free(st);
}
