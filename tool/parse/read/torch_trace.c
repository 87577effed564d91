/* SPDX-License-Identifier: Apache-2.0 */
/*
 * torch_trace.c — the torch profiler's traces (acl_task_time 3) in a parse.
 *
 * The Python binding writes one file per process and session,
 * torch_prof_<host>-<pid>.json, next to that process's raw store
 * ms_service_<host>-<pid>.db: a Chrome trace whose "X" events carry ts/dur
 * in µs relative to "baseTimeNanoseconds" (epoch ns, the clock of every
 * stored record). Categories: "cpu_op" (host ops, tid = torch's thread
 * number) and "kernel" (device work, tid = device index).
 *
 * Three jobs, each called from one small hook elsewhere:
 *   prs_torch_select()     (parse.c) keeps the traces whose process store is
 *                          among the stores parsed (the same folder and
 *                          stem); the others are named and dropped, so
 *                          --session and unreadable stores apply to them too.
 *   prs_torch_timeline()   (parse.c, beside prs_timeline_activity) writes
 *                          the ops as lanes of their process, "torch cpu_op
 *                          (thread N)" / "torch kernel (thread D)", through
 *                          the timeline's own lane and slice calls: the same
 *                          origin (rebased like every record), nesting into
 *                          sub-lanes, and rows in profiler.db's slice table.
 *   prs_torch_import_ops() (report_ops.c) adds the ops to the op reports'
 *                          temporary table: Device_id -1 for host ops.
 *
 * Design. A trace is read whole with jansson (torch writes it whole, and
 * one session's trace of N steps is small next to the raw stores); events
 * are sorted by (category, thread, start, longest first) so that each lane
 * sees its slices in time order and parents before children. A file that
 * is not such a trace is named on stderr and skipped; the rest goes on.
 */
#include <inttypes.h>
#include <jansson.h>
#include <math.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "argdecode.h"
#include "discover.h"
#include "plog.h"
#include "storeread.h"
#include "timeline.h"
#include "torch_trace.h"
#include "xalloc.h"

typedef struct op {
    int64_t ts, dur;     /* epoch ns */
    const char *name;    /* into the json tree */
    const char *cat;     /* "cpu_op" or "kernel" */
    long long tid;
    char *args;          /* compact JSON object text (owned) */
} op;

typedef struct trace {
    json_t *root;
    op *ops;
    int n;
} trace;

static int cmp_op(const void *a, const void *b)
{
    const op *x = a, *y = b;
    int c = strcmp(x->cat, y->cat);
    if (c)
        return c;
    if (x->tid != y->tid)
        return x->tid < y->tid ? -1 : 1;
    if (x->ts != y->ts)
        return x->ts < y->ts ? -1 : 1;
    return x->dur > y->dur ? -1 : x->dur < y->dur; /* the parent first */
}

static void trace_free(trace *t)
{
    for (int i = 0; i < t->n; i++)
        free(t->ops[i].args);
    free(t->ops);
    json_decref(t->root);
    memset(t, 0, sizeof *t);
}

/* Reads path into t. Returns 0, or -1 after naming the file and the reason. */
static int trace_load(const char *path, trace *t)
{
    memset(t, 0, sizeof *t);
    json_error_t err;
    t->root = json_load_file(path, 0, &err);
    if (!t->root) {
        prs_log(PRS_WARNING, "torch trace %s: not JSON (%s, line %d); skipped", path, err.text, err.line);
        return -1;
    }
    json_t *evs = json_object_get(t->root, "traceEvents");
    json_t *base = json_object_get(t->root, "baseTimeNanoseconds");
    if (!json_is_array(evs) || !json_is_integer(base)) {
        prs_log(PRS_WARNING, "torch trace %s: no traceEvents list or baseTimeNanoseconds; skipped", path);
        trace_free(t);
        return -1;
    }
    int64_t base_ns = (int64_t)json_integer_value(base);
    size_t cap = json_array_size(evs);
    t->ops = prs_xcalloc(cap ? cap : 1, sizeof *t->ops);
    if (!t->ops) {
        trace_free(t);
        return -1;
    }
    long long bad = 0;
    size_t i;
    json_t *e;
    json_array_foreach(evs, i, e) {
        const char *ph = json_string_value(json_object_get(e, "ph"));
        const char *name = json_string_value(json_object_get(e, "name"));
        json_t *ts = json_object_get(e, "ts"), *dur = json_object_get(e, "dur");
        if (!ph || strcmp(ph, "X") || !name || !json_is_number(ts) || !json_is_number(dur) ||
            !isfinite(json_number_value(ts)) || !(json_number_value(dur) >= 0)) {
            bad++;
            continue;
        }
        op *o = &t->ops[t->n++];
        o->ts = base_ns + llround(json_number_value(ts) * 1000.0);
        o->dur = llround(json_number_value(dur) * 1000.0);
        o->name = name;
        const char *cat = json_string_value(json_object_get(e, "cat"));
        o->cat = cat && !strcmp(cat, "kernel") ? "kernel" : "cpu_op";
        json_t *tid = json_object_get(e, "tid");
        o->tid = json_is_integer(tid) ? (long long)json_integer_value(tid) : 0;
        json_t *args = json_object_get(e, "args");
        o->args = json_is_object(args) ? json_dumps(args, JSON_COMPACT) : prs_xstrdup("{}");
    }
    if (bad)
        prs_log(PRS_WARNING, "torch trace %s: %lld event(s) without ph X, name, ts or dur skipped", path, bad);
    qsort(t->ops, (size_t)t->n, sizeof *t->ops, cmp_op);
    return 0;
}

/* The "<host>-<pid>" stem of a torch trace or raw store path, and its folder
 * length; 0 when the name is not one of ours. */
static int stem_of(const char *path, const char *prefix, const char *suffix, const char **stem,
                   size_t *stem_len, size_t *dir_len)
{
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    size_t pl = strlen(prefix), sl = strlen(suffix), bl = strlen(base);
    if (bl <= pl + sl || strncmp(base, prefix, pl) || strcmp(base + bl - sl, suffix))
        return 0;
    *stem = base + pl;
    *stem_len = bl - pl - sl;
    *dir_len = (size_t)(base - path);
    return 1;
}

/* The store of the process that wrote torch trace path, or NULL. */
static prs_store *store_of(const char *path, prs_store **stores, int n)
{
    const char *ts, *ss;
    size_t tl, sl, td, sd;
    if (!stem_of(path, "torch_prof_", ".json", &ts, &tl, &td))
        return NULL;
    for (int i = 0; i < n; i++) {
        if (stem_of(stores[i]->path, "ms_service_", ".db", &ss, &sl, &sd) && sl == tl && sd == td &&
            !memcmp(ss, ts, tl) && !memcmp(stores[i]->path, path, td))
            return stores[i];
    }
    return NULL;
}

int prs_torch_select(prs_paths *p, prs_store **stores, int n)
{
    int kept = 0;
    for (int i = 0; i < p->ntorch; i++) {
        if (store_of(p->torch[i], stores, n)) {
            p->torch[kept++] = p->torch[i];
        } else {
            prs_log(PRS_INFO, "torch trace %s: its process's raw store is not among those parsed; skipped",
                    p->torch[i]);
            free(p->torch[i]);
        }
    }
    p->ntorch = kept;
    return kept;
}

void prs_torch_timeline(prs_timeline *t, char *const *paths, int n, prs_store **stores, int nstores)
{
    if (!t)
        return;
    prs_args a;
    prs_args_init(&a);
    a.valid = 1; /* every args text below is jansson's own output */
    for (int i = 0; i < n; i++) {
        prs_store *s = store_of(paths[i], stores, nstores);
        trace tr;
        if (!s || trace_load(paths[i], &tr) != 0)
            continue;
        for (int k = 0; k < tr.n; k++) {
            const op *o = &tr.ops[k];
            char cat[32];
            snprintf(cat, sizeof cat, "torch %s", o->cat);
            prs_rec r = {.ts = o->ts, .dur = o->dur, .name = o->name, .cat = cat,
                         .args = o->args ? o->args : "{}", .pid = 0, .tid = o->tid, .store = s};
            r.args_len = (int)strlen(r.args);
            /* A zero-length op would become an instant: give it 1 ns. */
            if (r.dur <= 0)
                r.dur = 1;
            int lane = prs_timeline_lane(t, s, cat, o->tid, r.ts, r.dur);
            prs_timeline_slice(t, &r, &a, lane);
        }
        trace_free(&tr);
    }
    prs_args_free(&a);
}

int64_t prs_torch_import_ops(sqlite3 *db, const char *path, int src)
{
    trace tr;
    if (trace_load(path, &tr) != 0)
        return -1;
    sqlite3_stmt *st = NULL;
    int64_t rows = 0;
    int ok = sqlite3_exec(db, "BEGIN", NULL, NULL, NULL) == SQLITE_OK &&
             sqlite3_prepare_v2(db, "INSERT INTO k VALUES (?, ?, ?, ?, ?, ?, ?, 0)", -1, &st, NULL) == SQLITE_OK;
    for (int k = 0; ok && k < tr.n; k++) {
        const op *o = &tr.ops[k];
        int host = !strcmp(o->cat, "cpu_op");
        sqlite3_bind_int(st, 1, src);
        sqlite3_bind_text(st, 2, o->cat, -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 3, o->name, -1, SQLITE_TRANSIENT);
        sqlite3_bind_int64(st, 4, o->ts);
        sqlite3_bind_int64(st, 5, o->ts + o->dur);
        sqlite3_bind_int64(st, 6, host ? -1 : o->tid);
        sqlite3_bind_int64(st, 7, host ? o->tid : 0);
        ok = sqlite3_step(st) == SQLITE_DONE;
        sqlite3_reset(st);
        rows += ok;
    }
    if (!ok)
        fprintf(stderr, "servprof parse: %s: torch ops could not be added to the op reports (%s)\n", path,
                sqlite3_errmsg(db));
    sqlite3_finalize(st);
    sqlite3_exec(db, ok ? "COMMIT" : "ROLLBACK", NULL, NULL, NULL);
    trace_free(&tr);
    return ok ? rows : -1;
}
