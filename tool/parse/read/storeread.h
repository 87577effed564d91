/* SPDX-License-Identifier: Apache-2.0 */
/*
 * storeread.h — one raw store opened read-only and read as a stream of
 * records in time order (storeread.c; reorder.c, rawscan.c and walcheck.c serve
 * it). The records are what every other module of the parser consumes.
 */
#ifndef SERVPROF_PARSE_STOREREAD_H
#define SERVPROF_PARSE_STOREREAD_H

#include <stddef.h>
#include <stdint.h>
#include <stdatomic.h>
#include <sqlite3.h>

/* What one parse shares across its stores and its runs (parse.c): the
 * driver owns it, so two parses in one process do not meet. */
typedef struct prs_parse_ctx {
    int exact;            /* prs_store_exact(): a first pass bounds the window */
    int quiet_open;       /* the open-time warnings were printed by the run before */
    atomic_int violations; /* one-pass stores that met a row later than their window */
    char **bad_warned;    /* paths of the stores whose bad-timestamp line was printed (by path:
                           * with --jobs a store's index is given after its open, parse.c) */
    int nbad_warned;
    atomic_int nscans;    /* raw scans open now (rawscan.c): they share one chunk budget */
    /* Atomic, and bad_warned under a lock (storeread.c): with --jobs the
     * stores are read on reader threads (readers.c) that share this. */
} prs_parse_ctx;

#include "argcap.h"

typedef struct prs_store {
    int index;            /* position in the merge, 0.. */
    prs_parse_ctx *ctx;   /* the parse it belongs to (not owned) */
    char *path;
    char *prof_id;        /* file stem */
    char *hostname;       /* Meta hostname, "" if absent */
    char *process_name;   /* process table / Meta, may be "" */
    int name_chosen;      /* process_name came from Meta: the program chose it */
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
    struct prs_rec *row;  /* the current record, decoded once (owned) */
    int have_row;
    int mode;             /* PRS_READ_DIRECT / _REORDER / _SORTED, see storeread.c */
    int64_t lateness;     /* reorder window, ns: the largest lateness measured by the first pass
                           * (exact mode), or the one-pass window (storeread.c) */
    int64_t maxts;        /* largest timestamp read so far (reorder mode) */
    struct prs_reorder *rb;
    int one_pass;         /* no first pass: window adapted as rows come (storeread.c) */
    int violated;         /* one pass met a row later than its window: stopped */
    int64_t released;     /* one pass: timestamp of the last row handed out */
    long long bad;        /* one pass: rows without a valid timestamp so far */
    int64_t seq;          /* rows scanned (reorder mode): the tie-break, in rowid order */
    struct prs_rawscan *raw; /* slice read from its b-tree pages (rawscan.c) in place of cur; NULL: SQLite */
    struct prs_rawrow *raw_row; /* the raw scan's current row (owned) */
    int raw_where;        /* the raw scan skips rows whose timestamp is not > 0 (the SQL's WHERE) */
    int raw_path;         /* how slice was read: 0 SQLite, 1 raw scan, 2 raw then handed to SQLite */
    long long absurd_dur; /* records whose duration was absurd, read as events (storeread.c) */
    int64_t last_ts;      /* timestamp of the last record handed out (time order is checked) */
    int disordered;       /* a damaged file broke time order: the store ended there */
    int nthreads;         /* the store's thread table: names of its threads */
    long long *thread_tids;
    char **thread_names;
    int64_t clock_shift;  /* ns added to every timestamp: the host's clock offset, negated (clockalign.c) */
    prs_argcap argcap;    /* args over the limits, cut as they are read (argcap.c); its counts */
} prs_store;
/* The name the store gives thread tid, or NULL. */
const char *prs_store_thread_name(const prs_store *s, long long tid);

enum { PRS_READ_DIRECT = 0, PRS_READ_REORDER, PRS_READ_SORTED };
/* Longest duration a record may have: 1e17 ns, about 3.2 years. Longer
 * ones (and ones ending past INT64_MAX ns) are read as events and counted,
 * so that no report's timestamp + duration can overflow. */
#define PRS_MAX_DUR_NS 100000000000000000LL

typedef struct prs_rec {
    int64_t ts, dur;      /* ns since epoch; dur 0 for events */
    const char *name;     /* never NULL ("" if absent) */
    const char *cat;      /* domain, never NULL */
    const char *args;     /* JSON object text, never NULL ("{}" if absent) */
    int args_len;
    long long pid, tid;
    prs_store *store;
    /* args already decoded by a reader thread (readers.c, --jobs), valid as
     * long as the strings; NULL: the model decodes them (model.c). */
    const struct prs_args *pre;
} prs_rec;

/* Opens path read-only and positions on its first record. Returns NULL (and
 * warns naming the file) when it is not a readable store. */
prs_store *prs_store_open(prs_parse_ctx *c, const char *path, int index);

/* The read-only URI every reader of a raw or activity store opens it with
 * ("file:PATH?mode=ro", plus "&immutable=1" for a WAL-mode store with no
 * -wal, -shm or -journal beside it: its writers are gone, and reading it
 * must write nothing into the session folder). malloc'ed: the caller frees
 * it. NULL when out of memory. */
char *prs_store_uri(const char *path);
/* Exact mode (1): a first pass over the timestamps bounds the reorder
 * window before any row is handed out, and open-time warnings are not
 * repeated (the one-pass run before printed them). Default 0: one pass;
 * prs_store_exact(c, 0) also frees what c remembers of the last parse. */
void prs_store_exact(prs_parse_ctx *c, int on);
/* One-pass stores that met a row later than their window since the last
 * prs_store_exact(): the parse must be run again in exact mode. */
int prs_store_violations(const prs_parse_ctx *c);
/* Fills rec with the current record; 0 if exhausted. */
int prs_store_peek(prs_store *s, prs_rec *rec);
/* Moves to the next record (invalidates strings of the previous one). */
void prs_store_next(prs_store *s);
void prs_store_close(prs_store *s);
/* The legacy Mstx message (pseudo-JSON, `^` for `"`) of n bytes as a JSON
 * object in s->legacy_buf: fills r's args, args_len, name and cat (valid
 * until the next call on s). Exposed for the fuzz target. */
void prs_legacy_decode(prs_store *s, const char *msg, int n, prs_rec *r);

#endif
