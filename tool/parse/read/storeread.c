/* SPDX-License-Identifier: Apache-2.0 */
/*
 * storeread.c — one raw store, read as a stream of records in time order.
 *
 * A store is opened read-only through a `file:...?mode=ro` URI, so the
 * parser never writes, never takes a write lock and never blocks the
 * writer; a store in WAL mode that is still being written is read as the
 * consistent snapshot (prefix) that existed when the cursor started.
 *
 * Before the cursor, the file header is checked: a file that is not SQLite,
 * or shorter than the page count its header promises (a copy cut short, a
 * disk that filled up), is warned about by name and skipped. A read error in
 * the middle of a store ends that store with a warning; records already
 * yielded stay.
 *
 * Time order (see choose_mode and docs/parse.md): by default a store is
 * read in ONE pass, in rowid order, through the reorder buffer with a
 * window sized from the first rows (PREFIX_ROWS) that widens to twice the
 * largest lateness seen. A row earlier than one already handed out (it came later
 * than the window) cannot be put in its place any more: the store flags a
 * violation and the driver (parse.c) runs the whole parse again in exact
 * mode, where a first pass over the timestamps measures the lateness
 * before any row is handed out. Either way the order is exactly
 * ORDER BY timestamp, id.
 *
 * The window cannot be grown in place instead: nothing bounds how late an
 * unread row is (a span open since the start is written when it ends, last
 * in rowid order), so only a pass over every row can prove that no earlier
 * row is still to come, and rows already handed to the reports cannot be
 * taken back. The restart's cost is bounded: at most two runs (exact mode
 * never violates); the first stops at its first violation, so it costs at
 * most one whole one-pass parse; what is read twice is the rows the first
 * run read, plus exact mode's first pass over every page; memory is the
 * larger run's (the first frees everything before the second), at most
 * REORDER_MAX_BYTES buffered per store in one pass, a window estimated at
 * most that in exact mode, else SQLite's disk-backed sort. docs/parse.md
 * ("Streaming") gives the worst case measured (bench_parse --late-span).
 *
 * Two layouts: the `slice` table (ours and the reference's current one) and
 * the reference's legacy `Mstx(markId, message, pid, tid, timestamp,
 * endTimestamp)` table whose `message` is pseudo-JSON with `^` for `"`,
 * sometimes without braces and with a trailing comma; it is converted into
 * a JSON object whose "name" and "domain" members give the record's name
 * and domain.
 *
 * The rows of `slice` (the one-pass scan; exact mode's first pass over the
 * timestamps and its direct and reorder scans) are read from the table's
 * b-tree pages by rawscan.c when the database file is the read
 * transaction's snapshot (open_raw): same rows, same rowid order, a tenth
 * of SQLite's per-row cost. SQLite still
 * chooses the mode and holds the read transaction (BEGIN in choose_mode)
 * until the store is closed, which keeps a writer from changing the pages
 * under the scan. A row rawscan does not read exactly as SQLite would (a
 * value of an unusual type) hands the rest of the store to SQLite
 * (`... WHERE rowid >= ?`: the same order, seamlessly); a damaged page ends
 * the store like a read error. SERVPROF_RAWSCAN=0 in the environment turns
 * the raw scan off (SQLite reads every row, as before).
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "bigendian.h"
#include "argdecode.h"
#include "plog.h"
#include "rawscan.h"
#include "readvfs.h"
#include "reorder.h"
#include "storeread.h"
#include "walcheck.h"
#include "xalloc.h"

/* Beyond this much buffered data, SQLite's own (disk-backed) sort is used. */
#define REORDER_MAX_BYTES (128LL << 20)
/* One-pass mode: the first window is twice the largest lateness or span
 * duration among the first PREFIX_ROWS rows, and at least WINDOW0_NS (a
 * store no longer than that has been measured whole: exact mode's choice,
 * with no second look at the timestamps). A
 * small window keeps the buffered rows in the CPU caches (0.5 s took less
 * CPU than 5 s: docs/benchmarks.md, "Figures behind design comments"); a
 * span longer than that and
 * than anything before it costs a second run (storeread.c top comment). */
#define WINDOW0_NS 500000000LL
#define PREFIX_ROWS 16384

void prs_store_exact(prs_parse_ctx *c, int on)
{
    c->exact = on;
    c->quiet_open = on;
    c->violations = 0;
    if (!on) { /* a new parse: forget what the last one printed */
        for (int i = 0; i < c->nbad_warned; i++)
            free(c->bad_warned[i]);
        free(c->bad_warned);
        c->bad_warned = NULL;
        c->nbad_warned = 0;
    }
}

/* Guards every context's bad_warned: stores on reader threads (readers.c)
 * share it; the line is rare, so one lock for all parses is enough. */
static pthread_mutex_t bad_lock = PTHREAD_MUTEX_INITIALIZER;

/* Once per store across the one-pass run and its exact rerun. */
static void warn_bad(const prs_store *s, long long bad)
{
    prs_parse_ctx *c = s->ctx;
    pthread_mutex_lock(&bad_lock);
    for (int i = 0; i < c->nbad_warned; i++)
        if (!strcmp(c->bad_warned[i], s->path)) {
            pthread_mutex_unlock(&bad_lock);
            return;
        }
    c->bad_warned = prs_xrealloc(c->bad_warned, (size_t)(c->nbad_warned + 1) * sizeof *c->bad_warned);
    c->bad_warned[c->nbad_warned++] = prs_xstrdup(s->path);
    pthread_mutex_unlock(&bad_lock);
    prs_log(PRS_WARNING, "store %s: %lld record(s) without a valid timestamp were skipped", s->path, bad);
}

int prs_store_violations(const prs_parse_ctx *c) { return c->violations; }

#define OPEN_WARN(...) do { if (!c->quiet_open) prs_log(PRS_WARNING, __VA_ARGS__); } while (0)

static char *stem_of(const char *path)
{
    const char *b = strrchr(path, '/');
    b = b ? b + 1 : path;
    char *s = prs_xstrdup(b);
    char *dot = strrchr(s, '.');
    if (dot && dot != s)
        *dot = 0;
    return s;
}

/* SQLite URI filenames reserve '?', '#' and '%'. */
/* The file's header says WAL mode (read and write versions 2). */
static int wal_mode(const char *path)
{
    unsigned char h[20];
    FILE *f = fopen(path, "rb");
    if (!f)
        return 0;
    size_t got = fread(h, 1, sizeof h, f);
    fclose(f);
    return got == sizeof h && !memcmp(h, "SQLite format 3", 16) && h[18] == 2 && h[19] == 2;
}

char *prs_store_uri(const char *path)
{
    size_t n = strlen(path);
    char *u = prs_xmalloc(n * 3 + 48);
    char *o = u;
    o += sprintf(o, "file:");
    for (const char *p = path; *p; p++) {
        if (*p == '?' || *p == '#' || *p == '%')
            o += sprintf(o, "%%%02X", (unsigned char)*p);
        else
            *o++ = *p;
    }
    /* Only a WAL-mode store makes a reader write beside it (the -shm index
     * and an empty -wal, which a read-only connection cannot remove). One
     * whose writers are gone has neither file (SQLite removes both when the
     * last connection closes): immutable=1 then reads it with no lock and
     * creates nothing. When either file is there, a writer is live (or died
     * without closing): committed rows may be in the -wal only and the
     * writer's checkpoints must respect our snapshot, so the store is opened
     * as usual, with locks, and SQLite keeps using the -shm that is there.
     * A rollback-mode store (the reference's, tests') creates nothing when
     * read: it keeps its locks. */
    int immutable = wal_mode(path);
    char side[4200];
    struct stat st;
    static const char *const sides[] = {"-wal", "-shm", "-journal"};
    for (int i = 0; i < 3 && immutable; i++)
        immutable = snprintf(side, sizeof side, "%s%s", path, sides[i]) < (int)sizeof side &&
                    stat(side, &st) != 0;
    strcpy(o, immutable ? "?mode=ro&immutable=1" : "?mode=ro");
    return u;
}

/* 0 ok; -1 with *why set. *psz: the page size. */
static int check_header(const char *path, const char **why, unsigned *psz_out)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        *why = strerror(errno);
        return -1;
    }
    unsigned char h[100];
    size_t got = fread(h, 1, sizeof h, f);
    struct stat st;
    int sok = fstat(fileno(f), &st) == 0;
    fclose(f);
    if (got == 0) {
        *why = "the file is empty";
        return -1;
    }
    if (got < sizeof h || memcmp(h, "SQLite format 3", 16) != 0) {
        *why = "not an SQLite database (bad header)";
        return -1;
    }
    unsigned psz = (unsigned)h[16] << 8 | h[17];
    if (psz == 1)
        psz = 65536;
    unsigned pages = be32(h + 28);
    *psz_out = psz;
    /* The in-header size is valid only when the change counter matches,
     * and says nothing when a WAL is there: committed pages may live in
     * the -wal file only (a recorder whose disk filled up before the
     * checkpoint copied them back). SQLite then decides what is there. */
    char wal[4096];
    struct stat wst;
    int has_wal = snprintf(wal, sizeof wal, "%s-wal", path) < (int)sizeof wal && stat(wal, &wst) == 0 &&
                  wst.st_size > 0;
    if (sok && pages && !has_wal && be32(h + 24) == be32(h + 92) &&
        (long long)st.st_size < (long long)pages * psz) {
        *why = "truncated (shorter than its header says)";
        return -1;
    }
    return 0;
}

static int has_table(sqlite3 *db, const char *name)
{
    sqlite3_stmt *st;
    int found = 0;
    if (sqlite3_prepare_v2(db, "SELECT 1 FROM sqlite_master WHERE type='table' AND name=?1 COLLATE NOCASE",
                           -1, &st, NULL) != SQLITE_OK)
        return -1;
    sqlite3_bind_text(st, 1, name, -1, SQLITE_STATIC);
    int rc = sqlite3_step(st);
    if (rc == SQLITE_ROW)
        found = 1;
    else if (rc != SQLITE_DONE)
        found = -1;
    sqlite3_finalize(st);
    return found;
}

static void read_meta(prs_store *s)
{
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(s->db, "SELECT name, value FROM Meta", -1, &st, NULL) != SQLITE_OK)
        return;
    while (sqlite3_step(st) == SQLITE_ROW) {
        const char *k = (const char *)sqlite3_column_text(st, 0);
        const char *v = (const char *)sqlite3_column_text(st, 1);
        if (!k || !v)
            continue;
        if (!strcmp(k, "hostname")) {
            free(s->hostname);
            s->hostname = prs_xstrdup(v);
        } else if (!strcmp(k, "dpRankId")) {
            s->dp_rank = atoi(v);
        } else if (!strcmp(k, "ppid")) {
            s->ppid = atoll(v);
        } else if (!strcmp(k, "process_name") || !strcmp(k, "program")) {
            free(s->process_name);
            s->process_name = prs_xstrdup(v);
            s->name_chosen = *v != 0; /* the program named itself (servprof_set_process_name) */
        }
    }
    sqlite3_finalize(st);
}

static void read_process_name(prs_store *s)
{
    if (s->process_name && *s->process_name)
        return;
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(s->db, "SELECT process_name FROM process WHERE process_name IS NOT NULL "
                                  "AND process_name <> '' LIMIT 1", -1, &st, NULL) != SQLITE_OK)
        return;
    if (sqlite3_step(st) == SQLITE_ROW) {
        free(s->process_name);
        s->process_name = prs_xstrdup((const char *)sqlite3_column_text(st, 0));
    }
    sqlite3_finalize(st);
}

static void read_threads(prs_store *s)
{
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(s->db, "SELECT tid, thread_name FROM thread WHERE thread_name IS NOT NULL "
                                  "AND thread_name <> '' LIMIT 4096", -1, &st, NULL) != SQLITE_OK)
        return;
    while (sqlite3_step(st) == SQLITE_ROW) {
        s->thread_tids = prs_xrealloc(s->thread_tids, (size_t)(s->nthreads + 1) * sizeof *s->thread_tids);
        s->thread_names = prs_xrealloc(s->thread_names, (size_t)(s->nthreads + 1) * sizeof *s->thread_names);
        s->thread_tids[s->nthreads] = sqlite3_column_int64(st, 0);
        s->thread_names[s->nthreads] = prs_xstrdup((const char *)sqlite3_column_text(st, 1));
        s->nthreads++;
    }
    sqlite3_finalize(st);
}

const char *prs_store_thread_name(const prs_store *s, long long tid)
{
    for (int i = 0; i < s->nthreads; i++)
        if (s->thread_tids[i] == tid)
            return s->thread_names[i];
    return NULL;
}

/* The cursor (SQLite's or the raw scan) is live: rows may follow. */
static int live(const prs_store *s) { return s->cur || s->raw; }

static void end_cursor(prs_store *s)
{
    sqlite3_finalize(s->cur);
    s->cur = NULL;
    prs_rawscan_close(s->raw);
    s->raw = NULL;
}

static void fail(prs_store *s, const char *what, const char *why)
{
    prs_log(PRS_WARNING, "store %s: %s after %lld records: %s; the rest of this store is skipped",
            s->path, what, s->nrec, why ? why : sqlite3_errmsg(s->db));
    s->failed = 1;
    end_cursor(s);
}

static void step(prs_store *s);

/* The raw scan met a row it does not read as SQLite would: SQLite reads
 * from that row on, in the same rowid order. */
static void hand_to_sqlite(prs_store *s, int64_t rowid)
{
    prs_log(PRS_DEBUG, "store %s: row %lld: %s; SQLite reads the rest", s->path, (long long)rowid,
            prs_rawscan_error(s->raw));
    prs_rawscan_close(s->raw);
    s->raw = NULL;
    s->raw_path = 2;
    prs_readvfs_main_file(s->db, 1); /* SQLite's reads through the read-ahead chunk again */
    const char *sql = s->raw_where
        ? "SELECT timestamp, duration, name, cat, args, pid, tid FROM slice NOT INDEXED WHERE rowid >= ?1 "
          "AND timestamp > 0"
        : "SELECT timestamp, duration, name, cat, args, pid, tid FROM slice NOT INDEXED WHERE rowid >= ?1";
    if (sqlite3_prepare_v2(s->db, sql, -1, &s->cur, NULL) != SQLITE_OK) {
        fail(s, "read error", NULL);
        return;
    }
    sqlite3_bind_int64(s->cur, 1, rowid);
    step(s);
}

static void raw_step(prs_store *s)
{
    for (;;) {
        int rc = prs_rawscan_next(s->raw, s->raw_row);
        if (rc == PRS_RAW_ROW) {
            if (s->raw_where && s->raw_row->ts <= 0) /* WHERE timestamp > 0 */
                continue;
            return;
        }
        if (rc == PRS_RAW_HANDOFF) {
            hand_to_sqlite(s, s->raw_row->rowid);
        } else if (rc == PRS_RAW_CORRUPT) {
            char why[240];
            snprintf(why, sizeof why, "damaged page: %s", prs_rawscan_error(s->raw));
            fail(s, "read error", why);
        } else {
            end_cursor(s);
        }
        return;
    }
}

static void step(prs_store *s)
{
    if (s->raw) {
        raw_step(s);
        return;
    }
    int rc = sqlite3_step(s->cur);
    if (rc == SQLITE_ROW)
        return;
    if (rc == SQLITE_DONE) {
        sqlite3_finalize(s->cur);
        s->cur = NULL;
        return;
    }
    fail(s, "read error", NULL);
}

/* A duration no report can use: longer than PRS_MAX_DUR_NS, or one whose
 * end would be past INT64_MAX ns (year 2262), so that timestamp + duration
 * overflows. Such a record is read as an event (duration 0) and counted
 * (prs_store.absurd_dur); the driver prints the count. */
static int dur_absurd(int64_t ts, int64_t dur)
{
    return dur > PRS_MAX_DUR_NS || (ts > 0 && dur > INT64_MAX - ts);
}

/* Twice v without overflow (windows are doubled lateness). */
static int64_t twice(int64_t v) { return v > INT64_MAX / 2 ? INT64_MAX : 2 * v; }

/* The first pass, as an aggregate: SQLite calls this once per row of the
 * scan inside a single sqlite3_step, which costs about half of stepping a
 * `SELECT timestamp` row by row through the API (callgrind). */
typedef struct late_acc {
    int64_t maxts, tmin, late, maxdur;
    long long n, bad;
} late_acc;

static void late_add(late_acc *a, int64_t ts)
{
    if (ts <= 0) { /* NULL, not a number, or before 1970: no place in time */
        a->bad++;
        return;
    }
    if (ts > a->maxts)
        a->maxts = ts;
    else if (a->maxts - ts > a->late)
        a->late = a->maxts - ts;
    if (ts < a->tmin)
        a->tmin = ts;
    a->n++;
}

/* prs_lateness(timestamp [, duration]) */
static void late_step(sqlite3_context *c, int argc, sqlite3_value **argv)
{
    late_acc *a = sqlite3_user_data(c);
    int64_t ts = sqlite3_value_int64(argv[0]);
    if (ts > 0 && argc > 1) {
        int64_t dur = sqlite3_value_int64(argv[1]);
        if (!dur_absurd(ts, dur) && dur > a->maxdur)
            a->maxdur = dur;
    }
    late_add(a, ts);
}

static int raw_off(void)
{
    const char *env = getenv("SERVPROF_RAWSCAN");
    return env && !strcmp(env, "0");
}

/* Exact mode's first pass over every timestamp through the raw scan (a
 * row it hands over: SQLite's aggregate from that rowid on). Returns 0
 * when the raw scan cannot read this store (SQLite runs the pass), else 1
 * with *rc as sqlite3_step would leave it. */
static int raw_first_pass(prs_store *s, late_acc *a, int *rc)
{
    const char *why = NULL;
    prs_rawscan *rs = raw_off() ? NULL : prs_rawscan_open(s->db, &s->ctx->nscans, &why);
    if (!rs)
        return 0;
    prs_rawrow w;
    int r;
    while ((r = prs_rawscan_next(rs, &w)) == PRS_RAW_ROW)
        late_add(a, w.ts);
    *rc = SQLITE_DONE;
    if (r == PRS_RAW_CORRUPT) {
        prs_log(PRS_DEBUG, "store %s: first pass: damaged page: %s", s->path, prs_rawscan_error(rs));
        *rc = SQLITE_CORRUPT;
    } else if (r == PRS_RAW_HANDOFF) {
        sqlite3_stmt *st;
        prs_readvfs_main_file(s->db, 1);
        if (sqlite3_prepare_v2(s->db, "SELECT prs_lateness(timestamp) FROM slice NOT INDEXED WHERE rowid >= ?1", -1,
                               &st, NULL) != SQLITE_OK) {
            *rc = SQLITE_ERROR;
        } else {
            sqlite3_bind_int64(st, 1, w.rowid);
            *rc = sqlite3_step(st);
            sqlite3_finalize(st);
        }
    }
    prs_rawscan_close(rs);
    return 1;
}

static void late_final(sqlite3_context *c) { sqlite3_result_null(c); }

/* How to get the rows in time order cheaply. One read transaction spans
 * both passes, so a store still being written is one consistent snapshot.
 * Both passes are plain scans of `slice`, so they visit the rows in the
 * same (rowid) order: the lateness measured by the first is the one the
 * second sees. */
static const char *choose_mode(prs_store *s, int *plain)
{
    /* NOT INDEXED: an index on timestamp (some writer's) must not turn
     * either scan into an index walk in another order. */
    static const char *const cols =
        "SELECT timestamp, duration, name, cat, args, pid, tid FROM slice NOT INDEXED WHERE timestamp > 0";
    static const char *const sorted =
        "SELECT timestamp, duration, name, cat, args, pid, tid FROM slice WHERE timestamp > 0 "
        "ORDER BY timestamp, rowid";
    sqlite3_exec(s->db, "BEGIN", NULL, NULL, NULL);
    late_acc acc = {INT64_MIN, INT64_MAX, 0, 0, 0, 0};
    if (sqlite3_create_function(s->db, "prs_lateness", -1, SQLITE_UTF8, &acc, NULL, late_step, late_final) !=
        SQLITE_OK)
        return sorted;
    sqlite3_stmt *st;
    int rc;
    if (!s->ctx->exact) {
        /* One pass: the first window from the first rows; rows with no
         * valid timestamp are counted in C (reorder_fill). */
        char q[160];
        snprintf(q, sizeof q, "SELECT prs_lateness(timestamp, duration) FROM (SELECT timestamp, duration FROM "
                 "slice NOT INDEXED LIMIT %d)", PREFIX_ROWS);
        if (sqlite3_prepare_v2(s->db, q, -1, &st, NULL) != SQLITE_OK)
            return sorted;
        rc = sqlite3_step(st);
        sqlite3_finalize(st);
        if (acc.n + acc.bad >= PREFIX_ROWS) {
            int64_t w = twice(acc.late > acc.maxdur ? acc.late : acc.maxdur);
            s->mode = PRS_READ_REORDER;
            s->one_pass = 1;
            s->lateness = w > WINDOW0_NS ? w : WINDOW0_NS;
            s->released = INT64_MIN;
            s->rb = prs_reorder_new();
            prs_log(PRS_DEBUG, "store %s: one pass, first window %.3f ms", s->path, (double)s->lateness / 1e6);
            *plain = 1;
            return "SELECT timestamp, duration, name, cat, args, pid, tid FROM slice NOT INDEXED";
        }
        /* the whole store was measured: choose as exact mode does */
    } else if (!raw_first_pass(s, &acc, &rc)) {
        if (sqlite3_prepare_v2(s->db, "SELECT prs_lateness(timestamp) FROM slice NOT INDEXED", -1, &st, NULL) !=
            SQLITE_OK)
            return sorted;
        rc = sqlite3_step(st);
        sqlite3_finalize(st);
    }
    if (rc == SQLITE_ROW)
        rc = SQLITE_DONE;
    int64_t maxts = acc.maxts, tmin = acc.tmin, late = acc.late;
    long long n = acc.n, bad = acc.bad;
    if (bad)
        warn_bad(s, bad);
    s->lateness = late;
    s->maxts = INT64_MIN;
    if (rc != SQLITE_DONE)
        prs_log(PRS_DEBUG, "store %s: first pass stopped after %lld rows: %s", s->path, n, sqlite3_errmsg(s->db));
    if (late == 0) {
        s->mode = PRS_READ_DIRECT;
        *plain = 2;
        return cols;
    }
    struct stat sb;
    double bytes = stat(s->path, &sb) == 0 ? (double)sb.st_size : 1e12;
    double span = n > 1 && maxts > tmin ? (double)(maxts - tmin) : 1;
    double window = bytes * ((double)late / span) * 2 + 1e6;
    prs_log(PRS_DEBUG, "store %s: %lld rows, largest lateness %.3f ms, window ~%.0f KiB", s->path, n,
            (double)late / 1e6, window / 1024);
    if (window <= (double)REORDER_MAX_BYTES) {
        s->mode = PRS_READ_REORDER;
        s->rb = prs_reorder_new();
        *plain = 2;
        return cols;
    }
    s->mode = PRS_READ_SORTED;
    return sorted;
}

/* The plain scan of slice (where: with WHERE timestamp > 0) from the
 * b-tree pages, when rawscan can read this store exactly; else SQLite. */
static void open_raw(prs_store *s, int where)
{
    const char *why = NULL;
    if (raw_off())
        why = "the raw scan is off (SERVPROF_RAWSCAN=0)";
    else
        s->raw = prs_rawscan_open(s->db, &s->ctx->nscans, &why);
    if (s->raw && !(s->raw_row = calloc(1, sizeof *s->raw_row))) {
        prs_rawscan_close(s->raw);
        s->raw = NULL;
        why = "out of memory";
    }
    if (!s->raw) {
        prs_log(PRS_DEBUG, "store %s: slice read through SQLite: %s", s->path, why);
        return;
    }
    s->raw_where = where;
    s->raw_path = 1;
    /* the pages the mode's look cached are not read again */
    sqlite3_db_release_memory(s->db);
    prs_log(PRS_DEBUG, "store %s: slice read from its b-tree pages (raw scan)", s->path);
}

/* A WAL SQLite will not read whole: said by name, with what is lost. 1 if so. */
static int warn_wal(const prs_parse_ctx *c, const char *path, unsigned psz)
{
    prs_wal_info w;
    if (!prs_wal_check(path, psz, &w))
        return 0;
    if (!w.header_ok)
        OPEN_WARN("store %s: its WAL file (%s-wal, %lld bytes, %lld frames, about %lld rows) has a damaged header, "
                  "so SQLite ignores all of it; only what was already copied into the main file is read",
                  path, path, w.size, w.frames, w.lost_rows);
    else
        OPEN_WARN("store %s: its WAL file (%s-wal) is damaged at frame %lld of %lld (checksum mismatch); SQLite "
                  "reads only the %lld frame(s) committed before it: the other %lld frame(s), about %lld rows, "
                  "are not read", path, path, w.damaged_at, w.frames, w.used, w.frames - w.used, w.lost_rows);
    return 1;
}

prs_store *prs_store_open(prs_parse_ctx *c, const char *path, int index)
{
    const char *why = NULL;
    unsigned psz = 0;
    if (check_header(path, &why, &psz) != 0) {
        OPEN_WARN("store %s: %s; skipped", path, why);
        return NULL;
    }
    int wal_damaged = !c->quiet_open && warn_wal(c, path, psz); /* the rerun does not read the WAL twice */
    prs_store *s = prs_xcalloc(1, sizeof *s);
    s->index = index;
    s->ctx = c;
    s->path = prs_xstrdup(path);
    s->prof_id = stem_of(path);
    s->hostname = prs_xstrdup("");
    s->dp_rank = -1;
    s->row = prs_xcalloc(1, sizeof *s->row);
    s->last_ts = INT64_MIN;
    char *uri = prs_store_uri(path);
    int rc = sqlite3_open_v2(uri, &s->db, SQLITE_OPEN_READONLY | SQLITE_OPEN_URI | SQLITE_OPEN_NOMUTEX,
                             prs_readvfs_name());
    free(uri);
    if (rc != SQLITE_OK) {
        OPEN_WARN("store %s: cannot open (%s); skipped", path, sqlite3_errmsg(s->db));
        prs_store_close(s);
        return NULL;
    }
    sqlite3_busy_timeout(s->db, 5000);
    /* Rows are read once, in order: a big page cache buys nothing, and with
     * a thousand stores open the default 2 MiB each would add up. */
    sqlite3_exec(s->db, "PRAGMA cache_size=-256", NULL, NULL, NULL);
    int slice = has_table(s->db, "slice");
    int mstx = slice == 1 ? 0 : has_table(s->db, "Mstx");
    if (slice < 0 || mstx < 0) {
        OPEN_WARN("store %s: unreadable (%s); skipped", path, sqlite3_errmsg(s->db));
        prs_store_close(s);
        return NULL;
    }
    if (slice != 1 && mstx != 1) {
        if (wal_damaged)
            OPEN_WARN("store %s: no 'slice' or 'Mstx' table can be read: the tables are in its damaged WAL "
                      "(above); skipped", path);
        else
            OPEN_WARN("store %s: has neither a 'slice' nor an 'Mstx' table; skipped", path);
        prs_store_close(s);
        return NULL;
    }
    s->legacy = slice != 1;
    read_meta(s);
    read_process_name(s);
    read_threads(s);
    int plain = 0;
    const char *sql = s->legacy
        ? "SELECT timestamp, endTimestamp, message, pid, tid, markId FROM Mstx WHERE timestamp > 0 "
          "ORDER BY timestamp, markId"
        : choose_mode(s, &plain);
    if (plain)
        open_raw(s, plain == 2);
    if (!s->raw && sqlite3_prepare_v2(s->db, sql, -1, &s->cur, NULL) != SQLITE_OK) {
        OPEN_WARN("store %s: cannot read records (%s); skipped", path, sqlite3_errmsg(s->db));
        prs_store_close(s);
        return NULL;
    }
    step(s);
    if (s->failed && s->nrec == 0) {
        prs_store_close(s);
        return NULL;
    }
    return s;
}

static const char *text_or(sqlite3_stmt *st, int col, const char *dflt)
{
    const char *t = (const char *)sqlite3_column_text(st, col);
    return t ? t : dflt;
}

/* Converts the pseudo-JSON message into s->legacy_buf. */
static int convert_legacy(prs_store *s, const char *msg, int n)
{
    if ((size_t)n + 4 > s->legacy_cap) {
        s->legacy_cap = (size_t)n * 2 + 64;
        s->legacy_buf = prs_xrealloc(s->legacy_buf, s->legacy_cap);
    }
    char *o = s->legacy_buf;
    while (n > 0 && (msg[n - 1] == ' ' || msg[n - 1] == '\n'))
        n--;
    int wrap = !(n > 0 && msg[0] == '{' && msg[n - 1] == '}');
    if (wrap) {
        *o++ = '{';
        if (n > 0 && msg[n - 1] == ',')
            n--; /* the reference drops the trailing comma */
    }
    for (int i = 0; i < n; i++)
        *o++ = msg[i] == '^' ? '"' : msg[i];
    if (wrap)
        *o++ = '}';
    *o = 0;
    return (int)(o - s->legacy_buf);
}

void prs_legacy_decode(prs_store *s, const char *msg, int n, prs_rec *r)
{
    r->args_len = convert_legacy(s, msg, n);
    r->args = s->legacy_buf;
    prs_str v;
    s->legacy_name[0] = s->legacy_cat[0] = 0;
    if (prs_json_object_string(r->args, r->args_len, "name", &v))
        prs_str_copy(v, s->legacy_name, sizeof s->legacy_name);
    if (prs_json_object_string(r->args, r->args_len, "domain", &v))
        prs_str_copy(v, s->legacy_cat, sizeof s->legacy_cat);
    r->name = s->legacy_name;
    r->cat = s->legacy_cat;
}

/* Fills r from the cursor's current row. */
static void read_cur(prs_store *s, prs_rec *r)
{
    sqlite3_stmt *st = s->cur;
    r->store = s;
    if (s->raw) {
        const prs_rawrow *w = s->raw_row;
        r->ts = w->ts;
        r->dur = w->dur < 0 ? 0 : w->dur;
        if (dur_absurd(r->ts, r->dur)) {
            s->absurd_dur++;
            r->dur = 0;
        }
        r->name = w->name;
        r->cat = w->cat;
        r->args = w->args;
        r->args_len = w->args_len;
        r->pid = w->pid;
        r->tid = w->tid;
        prs_argcap_apply(&s->argcap, &r->args, &r->args_len);
        return;
    }
    r->ts = sqlite3_column_int64(st, 0);
    if (!s->legacy) {
        r->dur = sqlite3_column_int64(st, 1);
        r->name = text_or(st, 2, "");
        r->cat = text_or(st, 3, "");
        r->args = (const char *)sqlite3_column_text(st, 4);
        r->args_len = sqlite3_column_bytes(st, 4);
        r->pid = sqlite3_column_int64(st, 5);
        r->tid = sqlite3_column_int64(st, 6);
    } else {
        int64_t end = sqlite3_column_int64(st, 1);
        r->dur = end > r->ts ? end - r->ts : 0;
        prs_legacy_decode(s, text_or(st, 2, ""), sqlite3_column_bytes(st, 2), r);
        r->pid = sqlite3_column_int64(st, 3);
        r->tid = sqlite3_column_int64(st, 4);
    }
    if (!r->args) {
        r->args = "{}";
        r->args_len = 2;
    }
    prs_argcap_apply(&s->argcap, &r->args, &r->args_len);
    if (r->dur < 0)
        r->dur = 0;
    if (dur_absurd(r->ts, r->dur)) {
        s->absurd_dur++;
        r->dur = 0;
    }
}

/* One-pass mode: a row earlier than one already handed out ends the store
 * (the driver starts again in exact mode); otherwise the window follows the
 * largest lateness seen. 0: the row is not to be buffered. */
static int one_pass_check(prs_store *s, const prs_rec *r)
{
    if (r->ts <= 0) { /* NULL, not a number, or before 1970: no place in time */
        s->bad++;
        return 0;
    }
    if (r->ts < s->released) {
        prs_log(PRS_DEBUG, "store %s: a record %.3f ms earlier than one already read (window %.3f ms); "
                "reading the stores again with a first pass", s->path, (double)(s->released - r->ts) / 1e6,
                (double)s->lateness / 1e6);
        s->violated = 1;
        s->ctx->violations++;
        end_cursor(s);
        return 0;
    }
    if (s->maxts > r->ts && twice(s->maxts - r->ts) > s->lateness)
        s->lateness = twice(s->maxts - r->ts);
    return 1;
}

/* Reorder mode: read rows until the earliest buffered one is safe to give.
 * In one-pass mode a buffer over REORDER_MAX_BYTES gives its earliest row
 * anyway: a row that later turns out to be earlier is a violation. */
static int reorder_fill(prs_store *s)
{
    for (;;) {
        int64_t m;
        int have = prs_reorder_min(s->rb, &m);
        if (have && (!live(s) || m < s->maxts - s->lateness ||
                     (s->one_pass && prs_reorder_bytes(s->rb) > (size_t)REORDER_MAX_BYTES))) {
            prs_reorder_pop(s->rb, s->row);
            s->row->store = s;
            s->released = s->row->ts;
            return 1;
        }
        if (!live(s)) {
            if (s->bad && !s->violated)
                warn_bad(s, s->bad);
            s->bad = 0;
            return 0;
        }
        prs_rec r;
        read_cur(s, &r);
        if (s->one_pass && !one_pass_check(s, &r)) {
            if (live(s))
                step(s);
            continue;
        }
        if (r.ts > s->maxts)
            s->maxts = r.ts;
        /* The scan is in rowid order: its row count breaks ties exactly as
         * the rowid would, without asking SQLite for it. */
        prs_reorder_push(s->rb, &r, ++s->seq);
        step(s);
    }
}

int prs_store_peek(prs_store *s, prs_rec *rec)
{
    if (!s->have_row) {
        if (s->disordered)
            return 0;
        if (s->mode == PRS_READ_REORDER) {
            if (!reorder_fill(s))
                return 0;
        } else {
            if (!live(s))
                return 0;
            read_cur(s, s->row);
        }
        /* The merge needs each store in time order. Only a damaged file
         * breaks it here (its pages read one way by the first pass and
         * another by the scan: the fuzz target found one): the store ends
         * like a read error, never out of order. */
        if (s->row->ts < s->last_ts) {
            fail(s, "read error", "a record earlier than the one before it (the file is damaged: its rows do not "
                 "read the same way twice)");
            s->disordered = 1;
            return 0;
        }
        s->last_ts = s->row->ts;
        s->have_row = 1;
    }
    *rec = *s->row;
    rec->ts += s->clock_shift; /* the row keeps the host's own time */
    rec->pre = NULL;
    return 1;
}

void prs_store_next(prs_store *s)
{
    prs_rec skipped;
    if (!s->have_row && !prs_store_peek(s, &skipped))
        return;
    s->nrec++;
    s->have_row = 0;
    if (s->mode != PRS_READ_REORDER)
        step(s);
}

void prs_store_close(prs_store *s)
{
    if (!s)
        return;
    end_cursor(s);
    free(s->raw_row);
    if (s->db)
        sqlite3_close(s->db);
    free(s->path);
    free(s->prof_id);
    free(s->hostname);
    free(s->process_name);
    free(s->legacy_buf);
    prs_argcap_free(&s->argcap);
    free(s->row);
    prs_reorder_free(s->rb);
    for (int i = 0; i < s->nthreads; i++)
        free(s->thread_names[i]);
    free(s->thread_names);
    free(s->thread_tids);
    free(s);
}
