/* SPDX-License-Identifier: Apache-2.0 */
/*
 * parse.h — the contracts between the parser's modules (not API).
 *
 * The parser is a pipeline that never holds a whole table:
 *
 *   discover.c   finds raw stores (ms_service_*.db) and activity stores
 *   store.c      opens one store read-only and yields its records in time order
 *                (the `slice` table, or the legacy `Mstx` table); walcheck.c its WAL
 *   reorder.c    the bounded buffer that puts rowid order back in time order
 *   merge.c      k-way merge of the stores' cursors by timestamp
 *   args.c       decodes the few keys the reports need from a record's args JSON
 *   ids.c        request ids: interning and Link resolution (union-find)
 *   model.c      dispatches each record to the reports
 *   request.c    per-request state while in flight -> request.csv
 *   batch.c      batch.csv; forward.c forward.csv; kvcache.c kvcache.csv;
 *   reqstatus.c  request_status.csv; spaninfo.c span_info/NAME.csv + statistics
 *   timeline.c   chrome_tracing.json, streamed, and device-activity lanes
 *   table.c      one row sink for a report: CSV file and/or profiler.db table
 *   dwrite.c     output files (O_DIRECT, under temporary names until the parse ends)
 *   pending.c    report rows held back for a look-ahead
 *   dbout.c      profiler.db: indexes, time-bucket tables
 *   stats.c      percentiles; summary.c the terminal summary; progress.c
 *   fmt.c        datetimes and numbers; plog.c messages
 *   parse.c      the driver; report_ops.c (samplers' issue) operator reports
 *   torch_trace.c  torch profiler traces (acl_task_time 3): lanes, op rows
 *
 * Everything runs on one thread. Record strings (name, cat, args) belong to
 * SQLite and are valid only until the store's cursor steps again: modules
 * copy what they keep.
 */
#ifndef SERVPROF_PARSE_H
#define SERVPROF_PARSE_H

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <sqlite3.h>

#include "dwrite.h"

/* ---------------------------------------------------------------- log */
enum { SPP_DEBUG = 0, SPP_INFO = 1, SPP_WARNING = 2, SPP_ERROR = 3, SPP_NONE = 4 };
void spp_log_set_level(int level);
int spp_log_level(void);
void spp_log(int level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Parses "debug", "info", "warning"/"warn", "error", "none" (any case); -1 if unknown. */
int spp_log_level_from_name(const char *name);

/* ------------------------------------------------------------- options */
typedef struct spp_opts {
    const char *input;        /* --input-path */
    const char *output;       /* --output-path (default ./output) */
    int csv, json, db;        /* --format; all three by default */
    const char **spans;       /* --span NAME ... */
    int nspans;
    int progress;             /* -1 auto (TTY and large), 0 off, 1 on */
    int summary;              /* print the terminal summary */
    int flows_all;            /* --flows all: a flow step on every slice naming a request */
    const char *session;      /* --session NAME: only the stores of that session folder */
    int tap_counters;         /* no json/db: still hand the timeline's counter rows to the tap */
    const char **clock_hosts; /* --clock-offset HOST=NS: HOST's clock reads NS ahead */
    long long *clock_ns;
    int nclock;
} spp_opts;

/* Runs the whole parse. Returns 0 success, 1 nothing parsed / some output
 * failed, 2 bad input path. Messages on stderr; summary too. */
int spp_run(const spp_opts *opts);

/* ----------------------------------------------------------- discovery */
typedef struct spp_paths {
    char **raw;       /* ms_service_*.db, sorted */
    int nraw;
    char **activity;  /* ascend_service_profiler_*.db, sorted */
    int nactivity;
    char **torch;     /* torch_prof_*.json (acl_task_time 3, torch_trace.c), sorted */
    int ntorch;
} spp_paths;
/* Walks dir recursively. Returns 0, or -1 when dir cannot be read (message printed). */
int spp_discover(const char *dir, spp_paths *out);
void spp_paths_free(spp_paths *p);

/* --------------------------------------------------------------- store */
/* What one parse shares across its stores and its runs (parse.c): the
 * driver owns it, so two parses in one process do not meet. */
typedef struct spp_parse_ctx {
    int exact;            /* spp_store_exact(): a first pass bounds the window */
    int quiet_open;       /* the open-time warnings were printed by the run before */
    int violations;       /* one-pass stores that met a row later than their window */
    char *bad_warned;     /* by store index: its bad-timestamp line was printed */
    int nbad_warned;
    int nscans;           /* raw scans open now (rawscan.c): they share one chunk budget */
} spp_parse_ctx;

typedef struct spp_store {
    int index;            /* position in the merge, 0.. */
    spp_parse_ctx *ctx;   /* the parse it belongs to (not owned) */
    char *path;
    char *prof_id;        /* file stem */
    char *hostname;       /* Meta hostname, "" if absent */
    char *process_name;   /* process table / Meta, may be "" */
    int dp_rank;          /* Meta dpRankId, -1 if absent */
    long long ppid;       /* Meta ppid, 0 if absent */
    int legacy;           /* 1: Mstx table */
    sqlite3 *db;
    sqlite3_stmt *cur;    /* the ordered cursor; NULL when exhausted */
    long long nrec;       /* records yielded */
    int failed;           /* read error after start: warned, stopped */
    int has_forward, has_batch, has_request; /* seen roles, for naming */
    char *legacy_buf;     /* Mstx: message converted to JSON (owned) */
    size_t legacy_cap;
    char legacy_name[256], legacy_cat[128];
    struct spp_rec *row;  /* the current record, decoded once (owned) */
    int have_row;
    int mode;             /* SPP_READ_DIRECT / _REORDER / _SORTED, see store.c */
    int64_t lateness;     /* reorder window, ns: the largest lateness measured by the first pass
                           * (exact mode), or the one-pass window (store.c) */
    int64_t maxts;        /* largest timestamp read so far (reorder mode) */
    struct spp_reorder *rb;
    int one_pass;         /* no first pass: window adapted as rows come (store.c) */
    int violated;         /* one pass met a row later than its window: stopped */
    int64_t released;     /* one pass: timestamp of the last row handed out */
    long long bad;        /* one pass: rows without a valid timestamp so far */
    int64_t seq;          /* rows scanned (reorder mode): the tie-break, in rowid order */
    struct spp_rawscan *raw; /* slice read from its b-tree pages (rawscan.c) in place of cur; NULL: SQLite */
    struct spp_rawrow *raw_row; /* the raw scan's current row (owned) */
    int raw_where;        /* the raw scan skips rows whose timestamp is not > 0 (the SQL's WHERE) */
    int raw_path;         /* how slice was read: 0 SQLite, 1 raw scan, 2 raw then handed to SQLite */
    long long absurd_dur; /* records whose duration was absurd, read as events (store.c) */
    int64_t last_ts;      /* timestamp of the last record handed out (time order is checked) */
    int disordered;       /* a damaged file broke time order: the store ended there */
    int nthreads;         /* the store's thread table: names of its threads */
    long long *thread_tids;
    char **thread_names;
    int64_t clock_shift;  /* ns added to every timestamp: the host's clock offset, negated (clockalign.c) */
} spp_store;
/* The name the store gives thread tid, or NULL. */
const char *spp_store_thread_name(const spp_store *s, long long tid);

enum { SPP_READ_DIRECT = 0, SPP_READ_REORDER, SPP_READ_SORTED };
/* Longest duration a record may have: 1e17 ns, about 3.2 years. Longer
 * ones (and ones ending past INT64_MAX ns) are read as events and counted,
 * so that no report's timestamp + duration can overflow. */
#define SPP_MAX_DUR_NS 100000000000000000LL

typedef struct spp_rec {
    int64_t ts, dur;      /* ns since epoch; dur 0 for events */
    const char *name;     /* never NULL ("" if absent) */
    const char *cat;      /* domain, never NULL */
    const char *args;     /* JSON object text, never NULL ("{}" if absent) */
    int args_len;
    long long pid, tid;
    spp_store *store;
} spp_rec;

/* Opens path read-only and positions on its first record. Returns NULL (and
 * warns naming the file) when it is not a readable store. */
spp_store *spp_store_open(spp_parse_ctx *c, const char *path, int index);
/* Exact mode (1): a first pass over the timestamps bounds the reorder
 * window before any row is handed out, and open-time warnings are not
 * repeated (the one-pass run before printed them). Default 0: one pass;
 * spp_store_exact(c, 0) also frees what c remembers of the last parse. */
void spp_store_exact(spp_parse_ctx *c, int on);
/* One-pass stores that met a row later than their window since the last
 * spp_store_exact(): the parse must be run again in exact mode. */
int spp_store_violations(const spp_parse_ctx *c);
/* The read-ahead VFS for raw stores (readvfs.c); NULL if it could not be
 * registered (then SQLite's default is used). */
const char *spp_readvfs_name(void);
/* Fills rec with the current record; 0 if exhausted. */
int spp_store_peek(spp_store *s, spp_rec *rec);
/* Moves to the next record (invalidates strings of the previous one). */
void spp_store_next(spp_store *s);
void spp_store_close(spp_store *s);
/* The legacy Mstx message (pseudo-JSON, `^` for `"`) of n bytes as a JSON
 * object in s->legacy_buf: fills r's args, args_len, name and cat (valid
 * until the next call on s). Exposed for the fuzz target. */
void spp_legacy_decode(spp_store *s, const char *msg, int n, spp_rec *r);

/* --------------------------------------------------------------- merge */
typedef struct spp_merge {
    spp_store **heap;
    int n;
    int64_t *keys;
} spp_merge;
void spp_merge_init(spp_merge *m, spp_store **stores, int n);
/* The store whose current record is the earliest, or NULL when all are done.
 * After consuming its record call spp_merge_advance(). */
spp_store *spp_merge_top(spp_merge *m);
void spp_merge_advance(spp_merge *m);
void spp_merge_free(spp_merge *m);

/* ---------------------------------------------------------------- args */
typedef struct spp_str { const char *p; int n; int esc; } spp_str; /* raw, no quotes */

typedef struct spp_rident {   /* one entry of a rid list */
    spp_str rid;
    int iter;                 /* -1 absent */
    int type;                 /* 0 prefill, 1 decode, -1 absent */
    double sched_tokens, prompt_tokens, computed_tokens, spec_tokens; /* NAN absent */
} spp_rident;

typedef struct spp_args {
    int valid;                /* 1: the whole text is a well-formed JSON object */
    int type;                 /* "type": -1 absent */
    int rid_kind;             /* 0 none, 1 scalar, 2 list */
    spp_str rid;              /* scalar rid (numbers as their digits) */
    spp_rident *rids; int nrids, caprids;
    spp_str queue_name, status, batch_type, from, to;
    double queue_size, total, used, free, free_before, free_after, allocated, usage_pct;
    double device_block, recv_tokens, reply_tokens, hit_cache, batch_size;
    double usage, mtotal, util, mused, available, cpu, rss;  /* sampler keys */
    int device, cpu_index;    /* scope#device / scope#cpu, -1 absent */
    spp_str accepted;         /* spec_decode_accepted_by_req object text */
    long long range_errors;   /* numeric values out of range (beyond 2^53, infinite, or an int key
                               * beyond int) treated as absent, since spp_args_init: kept by decode */
} spp_args;

void spp_args_init(spp_args *a);
void spp_args_free(spp_args *a);
/* Decodes text (len bytes). Never fails: unknown keys are skipped; a
 * malformed text leaves valid = 0 and what was decoded before the error. */
void spp_args_decode(spp_args *a, const char *text, int len);
/* The i-th key args.c decodes (0, 1, ...; NULL past the last); *eq = 1 when
 * it is also accepted with a trailing '='. For the tests' walk of the table. */
const char *spp_args_key(int i, int *eq);
/* Copies s into buf (unescaping), NUL-terminated; returns length. The
 * unescaped text is never longer than s.n (cap = s.n + 1 holds it whole).
 * \u0000 and unpaired surrogates become U+FFFD; surrogate pairs become one
 * 4-byte UTF-8 sequence. */
int spp_str_copy(spp_str s, char *buf, int cap);
/* Looks up "key" (a number) in a flat JSON object text; NAN if absent. */
double spp_json_object_number(spp_str obj, const char *key, int keylen);
/* Calls fn(key, value) for each member of a flat object (NAN when not a
 * number, or out of range: then counted in *range unless range is NULL). */
typedef void (*spp_json_num_fn)(spp_str key, double value, void *ctx);
void spp_json_each_number(spp_str obj, spp_json_num_fn fn, void *ctx, long long *range);
/* Finds string member "key" of a flat JSON object text; 1 if found. */
int spp_json_object_string(const char *text, int len, const char *key, spp_str *out);

/* ----------------------------------------------------------------- ids */
typedef struct spp_ids spp_ids;
spp_ids *spp_ids_new(void);
void spp_ids_free(spp_ids *ids);
/* Node of id s (created when absent). */
int spp_ids_get(spp_ids *ids, const char *s, int n);
/* Node of id s, or -1 when never seen. */
int spp_ids_find(spp_ids *ids, const char *s, int n);
/* The same for an id as decoded from args (escapes resolved, any length). */
int spp_ids_get_str(spp_ids *ids, spp_str s);
int spp_ids_find_str(spp_ids *ids, spp_str s);
int spp_ids_root(spp_ids *ids, int node);
/* Records that `from` is the same request as `to`; returns the root kept
 * (from's: reports name the request by the upstream id), and in *absorbed
 * the root that disappeared (-1 if none). */
int spp_ids_link(spp_ids *ids, int from, int to, int *absorbed);
const char *spp_ids_name(spp_ids *ids, int node);
int spp_ids_name_len(spp_ids *ids, int node);
void *spp_ids_data(spp_ids *ids, int root);
void spp_ids_set_data(spp_ids *ids, int root, void *data);
int spp_ids_count(spp_ids *ids);

/* ---------------------------------------------------------------- fmt */
/* "YYYY-MM-DD HH:MM:SS.ffffff" in local time; buf >= 32. */
void spp_fmt_datetime(int64_t ns, char *buf);
/* The same in UTC with us_sep before the microseconds (27 bytes). */
void spp_fmt_datetime_utc(int64_t ns, char *buf, char us_sep);
/* Length of the valid UTF-8 sequence at p (before e): 1..4, or 0 if invalid. */
int spp_utf8_len(const char *p, const char *e);
/* Writes v in decimal (no locale, no printf). */
void spp_put_int(FILE *f, long long v);
/* Appends a CSV text field (quoted when needed; a text a spreadsheet would
 * run as a formula, starting with = + - @ tab or CR and not a number, gets
 * a leading ', quoted). */
void spp_csv_field(FILE *f, const char *s, int n);

/* --------------------------------------------------------------- table */
enum { SPP_NULL = 0, SPP_INT, SPP_REAL, SPP_MS, SPP_TEXT };
typedef struct spp_val {
    int kind;
    long long i;
    double d;
    const char *s; int n;
} spp_val;
static inline spp_val spp_v_null(void) { spp_val v = {0}; return v; }
static inline spp_val spp_v_int(long long i) { spp_val v = {0}; v.kind = SPP_INT; v.i = i; return v; }
static inline spp_val spp_v_real(double d) { spp_val v = {0}; v.kind = isnan(d) ? SPP_NULL : SPP_REAL; v.d = d; return v; }
static inline spp_val spp_v_ms(double d) { spp_val v = {0}; v.kind = isnan(d) ? SPP_NULL : SPP_MS; v.d = d; return v; }
/* A `(ms)` value known as integer nanoseconds: the CSV prints it correctly
 * rounded to the microsecond from the integer (n = 1 marks it; a double of
 * epoch milliseconds cannot hold every microsecond exactly), profiler.db
 * gets the nearest double of milliseconds. */
static inline spp_val spp_v_ns(int64_t ns)
{
    spp_val v = {0};
    v.kind = SPP_MS;
    v.i = ns;
    v.n = 1;
    v.d = (double)(ns / 1000000) + (double)(ns % 1000000) / 1e6;
    return v;
}
static inline spp_val spp_v_text(const char *s, int n) { spp_val v = {0}; v.kind = s ? SPP_TEXT : SPP_NULL; v.s = s; v.n = n < 0 && s ? (int)strlen(s) : n; return v; }

/* stdio buffer of each output file: one write() per this many bytes. */
#define SPP_OUT_BUF (1 << 20)
typedef struct spp_col { const char *name; const char *sqltype; } spp_col;
typedef struct spp_table {
    const char *csv_name;   /* e.g. "request.csv" or "span_info/forward.csv"; NULL: db only */
    const char *db_name;    /* e.g. "request"; NULL: csv only */
    const spp_col *cols;
    int ncols;
    int ncsv;               /* the first ncsv columns go to the CSV, the rest to profiler.db only
                             * (spp_table_init sets ncols; a report lowers it after the init) */
    const char *needs;      /* what the report needs, for the skip line */
    FILE *csv;              /* opened on the first row */
    sqlite3_stmt *ins;      /* INSERT into the in-memory twin (table.c: values SQLite must convert) */
    long long rows;
    int failed;
    char *csv_path;
    char *csv_buf;          /* stdio buffer of csv (glibc ignores setvbuf's size without one) */
    struct spp_bt_tab *bt;  /* its profiler.db b-tree (btwrite.c), owned by spp_out.bt; NULL: no db */
    const char *key;        /* db_name, else csv_name, even when that output is off: the tap's name */
    int sq_tab;             /* its number in spp_out.sq + 1 (dbsql.c); 0: none */
} spp_table;

typedef struct spp_out {
    const char *dir;
    int csv, db;
    sqlite3 *db_conn;       /* profiler.db */
    int failed;
    /* profiler.db's pages are written by btwrite.c; db_conn is then an
     * in-memory database holding its schema (the CREATE texts, views and
     * indexes, which are created on the file at spp_out_close) and
     * converting the rare values that need SQLite's affinity rules. */
    struct spp_bt *bt;
    struct spp_dbsql *sq;   /* instead of bt: SQLite's INSERT on its own thread (dbsql.c) */
    int db_lost;            /* profiler.db failed (reported once, file removed) */
    int discard;            /* spp_out_close removes this run's outputs instead of committing them */
    spp_dw_stage stage;     /* the outputs' renames, done at spp_out_close (dwrite.c) */
} spp_out;

/* Opens OUT (creating it) and profiler.db when on. Returns 0 or -1 (printed). */
int spp_out_open(spp_out *o, const char *dir, int csv, int db);
/* Creates the table in profiler.db (when on) and prepares its insert. */
void spp_table_init(spp_out *o, spp_table *t, const char *csv_name, const char *db_name,
                    const spp_col *cols, int ncols, const char *needs);
void spp_table_row(spp_out *o, spp_table *t, const spp_val *vals);
/* Closes the CSV; a report with no rows prints its skip line. */
void spp_table_close(spp_out *o, spp_table *t);
/* Finishes profiler.db, then renames every output of the run from its
 * temporary name to its own (dwrite.c, staging); with o->discard set the
 * temporary files are removed instead. 0, or -1 if anything failed. */
int spp_out_close(spp_out *o);

/* Columns of a table's rows found by name (colmap.c), for the consumers of
 * report rows (the tap's, or rows read back from a profiler.db). The map is
 * recomputed when a row comes with another column list. */
#define SPP_COLMAP_MAX 16
typedef struct spp_colmap {
    const spp_col *cols;
    int ncols;
    int idx[SPP_COLMAP_MAX]; /* column of names[k], -1 when absent */
} spp_colmap;
void spp_colmap_fit(spp_colmap *m, const spp_col *cols, int ncols, const char *const *names, int n);
/* Column k of a row as a number: NaN when absent, NULL or not a number. */
double spp_colmap_num(const spp_val *v, const spp_colmap *m, int k);
/* Column k as text ("" and *len 0 when absent or not text); not NUL-terminated. */
const char *spp_colmap_text(const spp_val *v, const spp_colmap *m, int k, int *len);

/* ----------------------------------------------------------------- tap */
/* A consumer inside the same process (servprof analyze) sees every report
 * row and every record as the parse makes them, with or without files:
 * row() gets the table (its key and columns) and the row's values, before
 * they are written; record() gets each record in time order before the
 * reports do. Strings are valid only during the call. One tap at a time
 * (the parser is single-threaded and keeps it in a global). */
typedef struct spp_tap {
    void (*row)(void *ctx, const spp_table *t, const spp_val *vals);
    void (*record)(void *ctx, const spp_rec *r);
    void *ctx;
} spp_tap;
/* Installs tap (copied), or removes it with NULL. */
void spp_set_tap(const spp_tap *tap);
extern spp_tap spp_tap_now;

/* profiler.db's writer: SQLite's INSERT on a thread (dbsql.c) when
 * SERVPROF_PARSE_DB_WRITER=sqlite (`parse --db-writer sqlite` sets it),
 * else the page writer (btwrite.c). */
int spp_db_writer_is_sqlite(void);

#endif
