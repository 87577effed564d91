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

struct sp_store {
    sqlite3 *db;
    sqlite3_stmt *ins_slice, *del_meta, *ins_meta, *ins_process, *ins_thread;
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

/* Records the first failure: log, count, roll back, refuse from now on. */
static int fail(sp_store *st, const char *what, int rc)
{
    if (st->failed)
        return -1;
    st->failed = 1;
    sp_count(&sp_rec_count.write_errors, 1);
    sp_log(SP_LOG_ERROR,
           "raw store %s: %s failed: %s (SQLite code %d); writing stops for this session, "
           "later records are counted as lost; the store keeps what was committed",
           st->path, what, st->db ? sqlite3_errmsg(st->db) : sqlite3_errstr(rc), rc);
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
        rc = sqlite3_exec(st->db, "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;", NULL,
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
    if (prepare(st, "INSERT INTO slice(timestamp,duration,name,depth,track_id,cat,args,cname,"
                    "end_time,flag_id,pid,tid) VALUES(?1,?2,?3,0,?4,?5,?6,NULL,?7,NULL,?8,?4)",
                &st->ins_slice) ||
        prepare(st, "DELETE FROM Meta WHERE name=?1", &st->del_meta) ||
        prepare(st, "INSERT INTO Meta(name,value) VALUES(?1,?2)", &st->ins_meta) ||
        prepare(st, "INSERT OR REPLACE INTO process(pid,process_name,label,process_sort_index,"
                    "parentPid) VALUES(?1,?2,?3,0,?4)", &st->ins_process) ||
        prepare(st, "INSERT OR REPLACE INTO thread(track_id,tid,pid,thread_name,"
                    "thread_sort_index) VALUES(?1,?2,?3,?4,?1)", &st->ins_thread)) {
        close_all(st);
        return NULL;
    }
    sqlite3_bind_int(st->ins_slice, 8, pid); /* stays bound: reset keeps bindings */
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

int sp_store_slice(sp_store *st, const sp_slice_row *row)
{
    if (st->failed)
        return -1;
    sqlite3_stmt *s = st->ins_slice;
    sqlite3_bind_int64(s, 1, row->timestamp);
    sqlite3_bind_int64(s, 2, row->duration);
    sqlite3_bind_text(s, 3, row->name, (int)row->name_len, SQLITE_STATIC);
    sqlite3_bind_int(s, 4, row->tid);
    sqlite3_bind_text(s, 5, row->cat, (int)row->cat_len, SQLITE_STATIC);
    sqlite3_bind_text(s, 6, row->args, (int)row->args_len, SQLITE_STATIC);
    sqlite3_bind_int64(s, 7, row->timestamp + row->duration);
    return run(st, s, "INSERT INTO slice");
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
