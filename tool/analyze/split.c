/* SPDX-License-Identifier: Apache-2.0 */
/*
 * split.c — `servprof split`: the reference's prefill.csv / decode.csv.
 *
 * What it answers: "what does one prefill (or decode) step of batch size N
 * spend its time on?" A selection picks scheduling steps (BatchSchedule /
 * batchFrameworkProcessing) of one batch type (batch.csv's batch_type,
 * exactly "Prefill" or "Decode") by batch size, or by a request id in the
 * step's rid list, the first --*-number of them in time order. Each picked
 * step gives rows: the first span of each name on the step's process from
 * the step's start until the next step of that process starts (spans that
 * name one request, such as tokenize, belong to their request, not to the
 * step), for a prefill step also its first request's httpReq / encode /
 * tokenize / decodeEnd / httpRes, a "Between-A-B" row for the gap from each
 * row's end to the next row's start (not from or to the HTTP pair), the
 * tail gap to the next step ("Between-X-AllTime") and "AllTime", the step's
 * start to the next step's start. Each name's max / min / mean / std are
 * taken over all picked steps; the file holds the rows of the picked step
 * with the most rows (the first of those), as the reference prints one
 * step with the statistics of all.
 *
 * Design: one reader for every input. A parse output folder is read from
 * its profiler.db (slice_data: every record; batch: each step's type, size
 * and rid list); raw stores or a session folder are first parsed, with
 * profiler.db as the only output, into a private temporary folder that is
 * removed afterwards (splittmp.c: locked while in use, so the next run can
 * remove one a killed run left), so the three inputs give the same files
 * by construction. The timeline is read in one pass (rows are in time
 * order); a row finds its picked step by binary search on (pid, start),
 * so the cost does not grow with --*-number. At --log-level debug the
 * reference's debug files are written beside the two (see "debug files"
 * below).
 */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>
#include <sqlite3.h>

#include "fmt.h"
#include "fsutil.h"
#include "parse.h"
#include "plog.h"
#include "profile.h"
#include "render.h"
#include "repcols.h"
#include "split.h"
#include "splittmp.h"

#define SCHED_SQL "('BatchSchedule', 'batchFrameworkProcessing')"
/* A row's args: long texts are stored once in slice_args (timeline.c) */
#define ARGS_SQL "coalesce(d.args, (SELECT x.args FROM slice_args x WHERE x.id = d.args_id))"
static const char *const kind_name[SA_SPLIT_NSEL] = {"Prefill", "Decode"};
static const char *const file_name[SA_SPLIT_NSEL] = {"prefill.csv", "decode.csv"};

/* One line on stderr unless `level` is below the thread's threshold
 * (plog.h, set from --log-level for the run). */
static void say(int level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void say(int level, const char *fmt, ...)
{
    if (level < prs_log_level() || level >= PRS_NONE)
        return;
    va_list ap;
    va_start(ap, fmt);
    fputs(level == PRS_DEBUG ? "servprof split: debug: " : "servprof split: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
}

/* A scheduling step of the timeline, with what batch.csv says of it. */
typedef struct step {
    int64_t ts, dur, next; /* start; duration; start of the next step of the same process (-1: none) */
    long long pid, tid;
    char *name, *type, *res; /* owned; type and res NULL when batch has no row for it */
    long bs;
} step;

/* One output row. pid/tid absent (AllTime) when has_pt is 0. */
typedef struct row {
    char *name;            /* owned */
    int64_t start, end;    /* ns since the epoch */
    long long pid, tid;
    int has_pt, between;
    char *rid;             /* owned, NULL: empty */
} row;

/* A picked step and the rows found for it. */
typedef struct pick {
    const step *st;
    int kind;
    const char *rid;       /* prefill: the request whose HTTP rows join (owned by the step or the options) */
    int next_same_rid;     /* the next pick with the same rid, -1 */
    row *rows;
    int n, cap;
    sa_strmap seen;        /* names already taken */
} pick;

typedef struct split {
    sqlite3 *db;
    step *steps;
    int nsteps;
    pick *picks;           /* sorted by (pid, start) once chosen */
    int npicks;
    sa_strmap pick_rid;    /* rid -> first pick joining its HTTP rows */
} split;

static int is_http(const char *n)
{
    return !strcmp(n, "httpReq") || !strcmp(n, "httpRes") || !strcmp(n, "encode") || !strcmp(n, "tokenize") ||
           !strcmp(n, "decodeEnd");
}
/* The rows no gap is taken from or to (the reference's filter list). */
static int no_gap(const char *n) { return !strcmp(n, "httpReq") || !strcmp(n, "httpRes"); }
static int is_sched(const char *n) { return !strcmp(n, "BatchSchedule") || !strcmp(n, "batchFrameworkProcessing"); }

static char *dup_or_null(const unsigned char *s) { return s ? strdup((const char *)s) : NULL; }

static void add_row(pick *p, const char *name, int64_t start, int64_t end, long long pid, long long tid, int has_pt,
                    int between, const char *rid)
{
    if (p->n == p->cap) {
        p->cap = p->cap ? p->cap * 2 : 16;
        p->rows = realloc(p->rows, (size_t)p->cap * sizeof *p->rows);
    }
    p->rows[p->n++] = (row){strdup(name), start, end, pid, tid, has_pt, between, rid ? strdup(rid) : NULL};
}

/* ------------------------------------------------------------ steps */

static int cmp_step_ts(const void *a, const void *b)
{
    const step *x = a, *y = b;
    return (x->ts > y->ts) - (x->ts < y->ts);
}

/* The step that starts at `us` µs (batch's start_time) with that name, or NULL. */
static step *step_at(split *s, int64_t us, const char *name)
{
    int64_t ns = us * 1000;
    int lo = 0, hi = s->nsteps;
    while (lo < hi) {
        int mid = (lo + hi) / 2;
        if (s->steps[mid].ts < ns - 1000)
            lo = mid + 1;
        else
            hi = mid;
    }
    for (int i = lo; i < s->nsteps && s->steps[i].ts <= ns + 1000; i++)
        if (!s->steps[i].type && !strcmp(s->steps[i].name, name))
            return &s->steps[i];
    return NULL;
}

static int load_steps(split *s)
{
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(s->db, "SELECT timestamp, name, pid, tid, duration FROM slice_data WHERE name IN "
                                  SCHED_SQL " ORDER BY timestamp, rowid", -1, &st, NULL) != SQLITE_OK)
        return -1;
    int cap = 0;
    while (sqlite3_step(st) == SQLITE_ROW) {
        if (s->nsteps == cap) {
            cap = cap ? cap * 2 : 256;
            s->steps = realloc(s->steps, (size_t)cap * sizeof *s->steps);
        }
        s->steps[s->nsteps++] = (step){.ts = sqlite3_column_int64(st, 0), .next = -1,
                                       .name = dup_or_null(sqlite3_column_text(st, 1)),
                                       .pid = sqlite3_column_int64(st, 2), .tid = sqlite3_column_int64(st, 3),
                                       .dur = sqlite3_column_int64(st, 4)};
    }
    sqlite3_finalize(st);
    if (s->nsteps > 1) /* already in order: keeps it so */
        qsort(s->steps, (size_t)s->nsteps, sizeof *s->steps, cmp_step_ts);
    /* the next step of the same process: the first later one with its pid
     * (processes interleave, so this looks past the few others in between) */
    for (int i = 0; i < s->nsteps; i++)
        for (int j = i + 1; j < s->nsteps; j++)
            if (s->steps[j].pid == s->steps[i].pid && s->steps[j].ts > s->steps[i].ts) {
                s->steps[i].next = s->steps[j].ts;
                break;
            }
    /* batch.csv's view of each step */
    char *q = sqlite3_mprintf("SELECT name, \"%w\", \"%w\", \"%w\", \"%w\" FROM batch WHERE name IN " SCHED_SQL,
                              PRS_BT_START_MS, PRS_BT_TYPE, PRS_BT_SIZE, PRS_BT_RES_LIST);
    int rc = sqlite3_prepare_v2(s->db, q, -1, &st, NULL);
    sqlite3_free(q);
    if (rc != SQLITE_OK)
        return -2;
    while (sqlite3_step(st) == SQLITE_ROW) {
        const char *name = (const char *)sqlite3_column_text(st, 0);
        if (!name || sqlite3_column_type(st, 1) == SQLITE_NULL)
            continue;
        step *x = step_at(s, llround(sqlite3_column_double(st, 1) * 1000.0), name);
        if (!x)
            continue;
        x->type = strdup(sqlite3_column_text(st, 2) ? (const char *)sqlite3_column_text(st, 2) : "");
        x->bs = sqlite3_column_type(st, 3) == SQLITE_NULL ? -1 : (long)sqlite3_column_int64(st, 3);
        x->res = dup_or_null(sqlite3_column_text(st, 4));
    }
    sqlite3_finalize(st);
    return 0;
}

/* The request ids of a step's rid list (JSON: strings, or objects with
 * "rid"), in order; *n of them. Strings owned by *doc. */
static const char **step_rids(const step *x, json_t **doc, int *n)
{
    *n = 0;
    *doc = x->res ? json_loads(x->res, 0, NULL) : NULL;
    if (!json_is_array(*doc))
        return NULL;
    const char **v = calloc(json_array_size(*doc) + 1, sizeof *v);
    size_t i;
    json_t *e;
    json_array_foreach(*doc, i, e) {
        json_t *r = json_is_object(e) ? json_object_get(e, "rid") : e;
        if (json_is_string(r))
            v[(*n)++] = json_string_value(r);
    }
    return v;
}

/* ------------------------------------------------------------ selection */

/* The request ids that have an httpReq (a prefill step counts only when its
 * request was seen arriving, as the reference asks). */
static void load_http(split *s, sa_strmap *m)
{
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(s->db, "SELECT DISTINCT CAST(json_extract(a, '$.rid') AS TEXT) FROM (SELECT " ARGS_SQL
                                  " AS a FROM slice_data d WHERE name = 'httpReq') WHERE json_valid(a)",
                           -1, &st, NULL) != SQLITE_OK)
        return;
    while (sqlite3_step(st) == SQLITE_ROW)
        if (sqlite3_column_text(st, 0))
            sa_strmap_put(m, (const char *)sqlite3_column_text(st, 0), sqlite3_column_bytes(st, 0), 1);
    sqlite3_finalize(st);
}

static void add_pick(split *s, const step *x, int kind, const char *rid)
{
    s->picks = realloc(s->picks, (size_t)(s->npicks + 1) * sizeof *s->picks);
    s->picks[s->npicks++] = (pick){.st = x, .kind = kind, .rid = rid ? strdup(rid) : NULL, .next_same_rid = -1};
}

/* Picks the steps of selection k. Returns how many. */
static int choose(split *s, const sa_split_select *sel, int k, const sa_strmap *http)
{
    int got = 0;
    for (int i = 0; i < s->nsteps && got < sel->number; i++) {
        const step *x = &s->steps[i];
        if (!x->type || strcmp(x->type, kind_name[k]) != 0 || x->next < 0)
            continue; /* not this type, or no next step to end its window */
        json_t *doc = NULL;
        int n;
        const char **rids = step_rids(x, &doc, &n);
        const char *who = NULL;
        if (sel->rid) {
            for (int j = 0; j < n && !who; j++)
                if (!strcmp(rids[j], sel->rid))
                    who = sel->rid;
        } else if (x->bs == sel->batch_size && n > 0)
            who = rids[0];
        else if (x->bs == sel->batch_size && k == SA_SPLIT_DECODE)
            who = ""; /* a decode step needs no request of its own */
        if (who && k == SA_SPLIT_PREFILL && sa_strmap_get(http, who, (int)strlen(who)) < 0)
            who = NULL;
        if (who) {
            add_pick(s, x, k, k == SA_SPLIT_PREFILL ? who : NULL);
            got++;
        }
        free(rids);
        json_decref(doc);
    }
    return got;
}

/* The batch sizes of the steps of type k (for the message when none matched). */
static void sizes_seen(const split *s, int k, char *buf, size_t cap)
{
    buf[0] = 0;
    size_t used = 0;
    long seen[16];
    int nseen = 0;
    for (int i = 0; i < s->nsteps && nseen < 16; i++) {
        const step *x = &s->steps[i];
        if (!x->type || strcmp(x->type, kind_name[k]) != 0)
            continue;
        int dup = 0;
        for (int j = 0; j < nseen; j++)
            dup |= seen[j] == x->bs;
        if (dup)
            continue;
        seen[nseen++] = x->bs;
        used += (size_t)snprintf(buf + used, used < cap ? cap - used : 0, "%s%ld", nseen > 1 ? ", " : "", x->bs);
        if (used >= cap)
            break;
    }
}

/* ------------------------------------------------------------ rows */

static int cmp_pick(const void *a, const void *b)
{
    const pick *x = a, *y = b;
    if (x->st->pid != y->st->pid)
        return (x->st->pid > y->st->pid) - (x->st->pid < y->st->pid);
    return (x->st->ts > y->st->ts) - (x->st->ts < y->st->ts);
}

/* The pick whose window holds (pid, ts), or NULL. */
static pick *pick_at(split *s, long long pid, int64_t ts)
{
    int lo = 0, hi = s->npicks; /* first pick after (pid, ts) */
    while (lo < hi) {
        int mid = (lo + hi) / 2;
        const step *x = s->picks[mid].st;
        if (x->pid < pid || (x->pid == pid && x->ts <= ts))
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo == 0)
        return NULL;
    pick *p = &s->picks[lo - 1];
    return p->st->pid == pid && ts < p->st->next ? p : NULL;
}

static void take(pick *p, const char *name, int64_t ts, int64_t dur, long long pid, long long tid, const char *rid)
{
    int len = (int)strlen(name);
    if (sa_strmap_get(&p->seen, name, len) >= 0)
        return;
    sa_strmap_put(&p->seen, name, len, 1);
    add_row(p, name, ts, ts + dur, pid, tid, 1, 0, rid);
}

/* One pass over the timeline: each record to the picked step whose window
 * holds it, and a picked prefill's HTTP records to it. */
static int gather(split *s)
{
    if (s->npicks > 1)
        qsort(s->picks, (size_t)s->npicks, sizeof *s->picks, cmp_pick);
    for (int i = s->npicks - 1; i >= 0; i--) {
        pick *p = &s->picks[i];
        if (!p->rid)
            continue;
        int len = (int)strlen(p->rid);
        p->next_same_rid = sa_strmap_get(&s->pick_rid, p->rid, len);
        sa_strmap_put(&s->pick_rid, p->rid, len, i);
    }
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(s->db,
                           "SELECT timestamp, duration, name, pid, tid, CASE WHEN a IS NOT NULL AND json_valid(a)"
                           " AND json_type(a, '$.rid') IN ('text', 'integer')"
                           " THEN CAST(json_extract(a, '$.rid') AS TEXT) END FROM (SELECT timestamp, duration, name,"
                           " pid, tid, " ARGS_SQL " AS a FROM slice_data d)",
                           -1, &st, NULL) != SQLITE_OK)
        return -1;
    while (sqlite3_step(st) == SQLITE_ROW) {
        int64_t ts = sqlite3_column_int64(st, 0), dur = sqlite3_column_int64(st, 1);
        const char *name = (const char *)sqlite3_column_text(st, 2);
        long long pid = sqlite3_column_int64(st, 3), tid = sqlite3_column_int64(st, 4);
        const char *rid = (const char *)sqlite3_column_text(st, 5);
        if (!name)
            continue;
        if (rid) { /* a record of one request: to the prefill picks of that request */
            if (!is_http(name))
                continue;
            for (int i = sa_strmap_get(&s->pick_rid, rid, (int)strlen(rid)); i >= 0; i = s->picks[i].next_same_rid)
                take(&s->picks[i], name, ts, dur, pid, tid, rid);
            continue;
        }
        if (dur <= 0)
            continue; /* events have no time to spend */
        pick *p = pick_at(s, pid, ts);
        if (!p || (is_sched(name) && ts != p->st->ts))
            continue;
        take(p, name, ts, dur, pid, tid, NULL);
    }
    sqlite3_finalize(st);
    return 0;
}

static int cmp_row(const void *a, const void *b)
{
    const row *x = a, *y = b;
    if (x->start != y->start)
        return (x->start > y->start) - (x->start < y->start);
    if (x->between != y->between)
        return x->between - y->between; /* a gap after the rows that start with it */
    return strcmp(y->name, x->name);    /* name descending, as the reference sorts */
}

/* The gap rows, the tail and AllTime, after the rows found. */
static void finish_pick(pick *p)
{
    if (p->n > 1)
        qsort(p->rows, (size_t)p->n, sizeof *p->rows, cmp_row);
    int n = p->n, prev = -1;
    for (int i = 0; i < n; i++) {
        if (no_gap(p->rows[i].name))
            continue;
        if (prev >= 0) {
            const row *a = &p->rows[prev], *b = &p->rows[i];
            char *nm = sqlite3_mprintf("Between-%s-%s", a->name, b->name);
            add_row(p, nm, a->end, b->start, a->pid, a->tid, 1, 1, NULL);
            sqlite3_free(nm);
        }
        prev = i;
    }
    if (p->n > 1)
        qsort(p->rows, (size_t)p->n, sizeof *p->rows, cmp_row);
    /* the tail: a decode step from its last row, a prefill from its httpRes */
    const row *last = NULL;
    for (int i = 0; i < n + (p->n - n); i++) {
        const row *r = &p->rows[i];
        if (r->between)
            continue;
        if (p->kind == SA_SPLIT_PREFILL ? !strcmp(r->name, "httpRes") : (!last || r->start >= last->start))
            last = r;
    }
    if (last) {
        char *nm = sqlite3_mprintf("Between-%s-AllTime", last->name);
        add_row(p, nm, last->end, p->st->next, last->pid, last->tid, 1, 1, NULL);
        sqlite3_free(nm);
    }
    add_row(p, "AllTime", p->st->ts, p->st->next, 0, 0, 0, 0, NULL);
}

/* ------------------------------------------------------------ output */

typedef struct stat_acc { double max, min, sum, sumsq; long n; } stat_acc;

/* µs // 1000 of the reference: whole milliseconds since the epoch, rounded down */
static long long whole_ms(int64_t ns) { return (long long)(ns >= 0 ? ns / 1000000 : -((-ns + 999999) / 1000000)); }

static int write_kind(split *s, int k, const char *outdir)
{
    sa_strmap names = {0};
    stat_acc *acc = NULL;
    int nacc = 0;
    const pick *best = NULL;
    for (int i = 0; i < s->npicks; i++) {
        const pick *p = &s->picks[i];
        if (p->kind != k)
            continue;
        if (!best || p->n > best->n || (p->n == best->n && p->st->ts < best->st->ts))
            best = p;
        for (int j = 0; j < p->n; j++) {
            const row *r = &p->rows[j];
            int len = (int)strlen(r->name), a = sa_strmap_get(&names, r->name, len);
            if (a < 0) {
                acc = realloc(acc, (size_t)(nacc + 1) * sizeof *acc);
                acc[nacc] = (stat_acc){-INFINITY, INFINITY, 0, 0, 0};
                sa_strmap_put(&names, r->name, len, a = nacc++);
            }
            double ms = (double)(r->end - r->start) / 1e6;
            acc[a].max = fmax(acc[a].max, ms);
            acc[a].min = fmin(acc[a].min, ms);
            acc[a].sum += ms;
            acc[a].sumsq += ms * ms;
            acc[a].n++;
        }
    }
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    fputs("name,during_time(ms),max,min,mean,std,pid,tid,start_time(ms),end_time(ms)", f);
    fputs(k == SA_SPLIT_PREFILL ? ",rid\n" : "\n", f);
    for (int j = 0; best && j < best->n; j++) {
        const row *r = &best->rows[j];
        const stat_acc *a = &acc[sa_strmap_get(&names, r->name, (int)strlen(r->name))];
        double mean = a->sum / (double)a->n;
        /* the sample deviation (n - 1), 0 for one value, as the reference's */
        double var = a->n > 1 ? (a->sumsq - a->sum * mean) / (double)(a->n - 1) : 0;
        sa_csv_str(f, r->name);
        fprintf(f, ",%.3f,%.4f,%.4f,%.4f,%.4f,", (double)(r->end - r->start) / 1e6, a->max, a->min, mean,
                var > 0 ? sqrt(var) : 0.0);
        if (r->has_pt)
            fprintf(f, "%lld,%lld", r->pid, r->tid);
        else
            fputc(',', f);
        fprintf(f, ",%lld,%lld", whole_ms(r->start), whole_ms(r->end));
        if (k == SA_SPLIT_PREFILL) {
            fputc(',', f);
            sa_csv_str(f, r->rid);
        }
        fputc('\n', f);
    }
    fclose(f);
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", outdir, file_name[k]);
    int rc = sp_write_atomic(path, buf, len, 0644);
    if (rc != 0)
        say(PRS_ERROR, "%s: cannot write: %s", path, strerror(errno));
    free(buf);
    free(acc);
    sa_strmap_free(&names);
    return rc == 0 ? 0 : 1;
}

/* ------------------------------------------------------------ debug files
 *
 * At --log-level debug the reference also writes <kind>_detail.csv (the
 * timeline it picks from) and <kind>_<number>.csv (every picked step's
 * rows before the statistics, each step led by an empty row), with the
 * columns of its timeline table. Their times are the reference's
 * unconverted ones, microseconds (despite the "(ms)" in the names), here
 * with the nanoseconds as three decimals. */

#define DBG_HEAD "name,during_time(ms),pid,tid,start_time(ms),end_time(ms),rid,start_datetime,end_datetime," \
                 "batch_type,batch_size,rid_list,token_id_list\n"

/* ns as µs with three decimals, exactly (a double would round the epoch's) */
static void put_us(FILE *f, int64_t ns)
{
    uint64_t a = ns < 0 ? (uint64_t)0 - (uint64_t)ns : (uint64_t)ns;
    fprintf(f, "%s%llu.%03llu", ns < 0 ? "-" : "", (unsigned long long)(a / 1000), (unsigned long long)(a % 1000));
}

/* A step's rid list as one CSV field, as the reference's table prints it
 * (a Python list of strings: ['a', 'b']). */
static void put_rid_list(FILE *f, const step *x)
{
    json_t *doc = NULL;
    int n;
    const char **rids = step_rids(x, &doc, &n);
    char *buf = NULL;
    size_t len = 0;
    FILE *m = open_memstream(&buf, &len);
    fputc('[', m);
    for (int i = 0; i < n; i++)
        fprintf(m, "%s'%s'", i ? ", " : "", rids[i]);
    fputc(']', m);
    fclose(m);
    sa_csv_str(f, buf);
    free(buf);
    free(rids);
    json_decref(doc);
}

/* One row of a debug file. has_pt: pid/tid known; dated: a record of the
 * timeline (the datetimes shown), not a gap or AllTime; x: the step whose
 * batch columns the row carries, or NULL. */
static void dbg_row(FILE *f, const char *name, int64_t start, int64_t end, const long long *pt, int dated,
                    const char *rid, const step *x)
{
    sa_csv_str(f, name);
    fputc(',', f);
    put_us(f, end - start);
    if (pt)
        fprintf(f, ",%lld,%lld,", pt[0], pt[1]);
    else
        fputs(",,,", f);
    put_us(f, start);
    fputc(',', f);
    put_us(f, end);
    fputc(',', f);
    sa_csv_str(f, rid);
    char sdt[40] = "", edt[40] = "";
    if (dated) {
        prs_fmt_datetime(start, sdt);
        prs_fmt_datetime(end, edt);
    }
    fprintf(f, ",%s,%s,", sdt, edt);
    if (x && x->type) {
        sa_csv_str(f, x->type);
        fprintf(f, ",%ld,", x->bs);
        put_rid_list(f, x);
    } else
        fputs(",,", f);
    fputs(",\n", f); /* token_id_list: not recorded */
}

/* A row of the detail file, to be sorted (start ascending, name descending). */
typedef struct dbg_line {
    int64_t start, end;
    long long pt[2];
    const char *name;      /* owned by the step, the all-time literal or `rid_text` */
    char *rid_text;        /* owned: the HTTP record's name and rid, NUL between */
    const step *x;         /* the step of a step row, NULL otherwise */
    int all_time;
} dbg_line;

static int cmp_dbg_line(const void *a, const void *b)
{
    const dbg_line *x = a, *y = b;
    if (x->start != y->start)
        return (x->start > y->start) - (x->start < y->start);
    return strcmp(y->name, x->name);
}

static void add_line(dbg_line **v, int *n, int *cap, dbg_line l)
{
    if (*n == *cap) {
        *cap = *cap ? *cap * 2 : 256;
        *v = realloc(*v, (size_t)*cap * sizeof **v);
    }
    (*v)[(*n)++] = l;
}

/* The HTTP records of every request (httpReq, encode, tokenize, decodeEnd,
 * httpRes, with their rid) into *v. */
static int detail_http(split *s, dbg_line **v, int *n, int *cap)
{
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(s->db,
                           "SELECT timestamp, duration, name, pid, tid, CAST(json_extract(a, '$.rid') AS TEXT)"
                           " FROM (SELECT timestamp, duration, name, pid, tid, " ARGS_SQL " AS a FROM slice_data d"
                           " WHERE name IN ('httpReq', 'httpRes', 'encode', 'tokenize', 'decodeEnd'))"
                           " WHERE json_valid(a) AND json_type(a, '$.rid') IN ('text', 'integer')",
                           -1, &st, NULL) != SQLITE_OK)
        return -1;
    while (sqlite3_step(st) == SQLITE_ROW) {
        const char *name = (const char *)sqlite3_column_text(st, 2), *rid = (const char *)sqlite3_column_text(st, 5);
        if (!name || !rid)
            continue;
        size_t ln = strlen(name), lr = strlen(rid);
        char *t = malloc(ln + lr + 2);
        memcpy(t, name, ln + 1);
        memcpy(t + ln + 1, rid, lr + 1);
        int64_t ts = sqlite3_column_int64(st, 0);
        add_line(v, n, cap, (dbg_line){ts, ts + sqlite3_column_int64(st, 1),
                                       {sqlite3_column_int64(st, 3), sqlite3_column_int64(st, 4)}, t, t, NULL, 0});
    }
    sqlite3_finalize(st);
    return 0;
}

/* <kind>_detail.csv: every step (each type), an AllTime row for each step
 * followed by another of its process, and every request's HTTP records,
 * from the first httpReq (prefill) or the first step (decode) on. */
static int write_detail(split *s, int k, const char *outdir)
{
    dbg_line *v = NULL;
    int n = 0, cap = 0;
    for (int i = 0; i < s->nsteps; i++) {
        const step *x = &s->steps[i];
        add_line(&v, &n, &cap, (dbg_line){x->ts, x->ts + x->dur, {x->pid, x->tid}, x->name, NULL, x, 0});
        if (x->next >= 0)
            add_line(&v, &n, &cap, (dbg_line){x->ts, x->next, {0, 0}, "AllTime", NULL, NULL, 1});
    }
    int rc = detail_http(s, &v, &n, &cap);
    if (n > 1)
        qsort(v, (size_t)n, sizeof *v, cmp_dbg_line);
    int from = 0; /* the reference's start: its first httpReq, or its first step */
    while (from < n && (k == SA_SPLIT_PREFILL ? strcmp(v[from].name, "httpReq") != 0 : !v[from].x))
        from++;
    if (from == n)
        from = 0; /* none: all of it, as the reference does */
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    fputs(DBG_HEAD, f);
    for (int i = from; i < n; i++) {
        const dbg_line *l = &v[i];
        dbg_row(f, l->name, l->start, l->end, l->all_time ? NULL : l->pt, !l->all_time,
                l->rid_text ? l->rid_text + strlen(l->rid_text) + 1 : NULL, l->x);
    }
    fclose(f);
    for (int i = 0; i < n; i++)
        free(v[i].rid_text);
    free(v);
    char path[4096];
    snprintf(path, sizeof path, "%s/%s_detail.csv", outdir, k == SA_SPLIT_PREFILL ? "prefill" : "decode");
    if (rc == 0 && (rc = sp_write_atomic(path, buf, len, 0644)) != 0)
        say(PRS_ERROR, "%s: cannot write: %s", path, strerror(errno));
    else if (rc == 0)
        say(PRS_DEBUG, "wrote %s", path);
    free(buf);
    return rc == 0 ? 0 : 1;
}

static int cmp_pick_ts(const void *a, const void *b)
{
    const pick *x = *(const pick *const *)a, *y = *(const pick *const *)b;
    return (x->st->ts > y->st->ts) - (x->st->ts < y->st->ts);
}

/* <kind>_<number>.csv: the rows of every picked step of kind k, in time
 * order, each step led by an empty row, before the statistics. */
static int write_groups(split *s, int k, long number, const char *outdir)
{
    const pick **v = malloc((size_t)(s->npicks + 1) * sizeof *v);
    int n = 0;
    for (int i = 0; i < s->npicks; i++)
        if (s->picks[i].kind == k)
            v[n++] = &s->picks[i];
    if (n > 1)
        qsort(v, (size_t)n, sizeof *v, cmp_pick_ts);
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    fputs(DBG_HEAD, f);
    for (int i = 0; i < n; i++) {
        fputs(",,,,,,,,,,,,\n", f);
        for (int j = 0; j < v[i]->n; j++) {
            const row *r = &v[i]->rows[j];
            long long pt[2] = {r->pid, r->tid};
            const step *x = is_sched(r->name) && r->start == v[i]->st->ts ? v[i]->st : NULL;
            int record = !r->between && r->has_pt;
            dbg_row(f, r->name, r->start, r->end, r->has_pt ? pt : NULL, record, r->rid, x);
        }
    }
    fclose(f);
    free(v);
    char path[4096];
    snprintf(path, sizeof path, "%s/%s_%ld.csv", outdir, k == SA_SPLIT_PREFILL ? "prefill" : "decode", number);
    int rc = sp_write_atomic(path, buf, len, 0644);
    if (rc != 0)
        say(PRS_ERROR, "%s: cannot write: %s", path, strerror(errno));
    else
        say(PRS_DEBUG, "wrote %s", path);
    free(buf);
    return rc == 0 ? 0 : 1;
}

/* ------------------------------------------------------------ input */

/* Raw stores or a session folder: parsed into tmp (profiler.db only). */
static int parse_to(const sa_split_opts *o, const char *tmp)
{
    prs_opts po = {0};
    po.input = o->input;
    po.output = tmp;
    po.db = 1;
    po.progress = o->progress;
    /* the parse's info lines (its summary) are not split's: shown only when
     * --log-level asks for them */
    int level = prs_log_level();
    if (o->log_level < 0 && level < PRS_WARNING)
        prs_log_set_level(PRS_WARNING);
    int rc = prs_run(&po);
    prs_log_set_level(level);
    return rc;
}

static int is_file(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

static void split_free(split *s)
{
    for (int i = 0; i < s->nsteps; i++) {
        free(s->steps[i].name);
        free(s->steps[i].type);
        free(s->steps[i].res);
    }
    free(s->steps);
    for (int i = 0; i < s->npicks; i++) {
        pick *p = &s->picks[i];
        for (int j = 0; j < p->n; j++) {
            free(p->rows[j].name);
            free(p->rows[j].rid);
        }
        free(p->rows);
        free((char *)p->rid);
        sa_strmap_free(&p->seen);
    }
    free(s->picks);
    sa_strmap_free(&s->pick_rid);
    if (s->db)
        sqlite3_close(s->db);
}

static int run_db(const sa_split_opts *o, const char *dbpath)
{
    split s = {0};
    char *uri = sqlite3_mprintf("file:%s?mode=ro", dbpath);
    int rc = sqlite3_open_v2(uri, &s.db, SQLITE_OPEN_READONLY | SQLITE_OPEN_URI, NULL);
    sqlite3_free(uri);
    if (rc != SQLITE_OK || sqlite3_exec(s.db, "SELECT 1 FROM slice_data LIMIT 1", NULL, NULL, NULL) != SQLITE_OK) {
        say(PRS_ERROR, "%s: no timeline in it (slice_data: %s); parse the stores again with --format db", dbpath,
            sqlite3_errmsg(s.db));
        split_free(&s);
        return 2;
    }
    rc = load_steps(&s);
    if (rc != 0) {
        say(PRS_ERROR, "%s: %s (%s)", dbpath,
            rc == -1 ? "the timeline cannot be read" : "no batch table: its steps' types "
            "and sizes are unknown", sqlite3_errmsg(s.db));
        split_free(&s);
        return 2;
    }
    sa_strmap http = {0};
    load_http(&s, &http);
    int want[SA_SPLIT_NSEL] = {0}, got[SA_SPLIT_NSEL] = {0}, status = 0;
    for (int k = 0; k < SA_SPLIT_NSEL; k++) {
        const sa_split_select *sel = &o->sel[k];
        want[k] = sel->batch_size > 0 || sel->rid;
        if (want[k])
            got[k] = choose(&s, sel, k, &http);
    }
    sa_strmap_free(&http);
    if (gather(&s) != 0) {
        say(PRS_ERROR, "%s: the timeline cannot be read (%s)", dbpath, sqlite3_errmsg(s.db));
        split_free(&s);
        return 2;
    }
    for (int i = 0; i < s.npicks; i++)
        finish_pick(&s.picks[i]);
    int debug = prs_log_level() <= PRS_DEBUG;
    if ((want[0] && (got[0] || debug)) || (want[1] && (got[1] || debug))) {
        if (sp_mkdirs(o->output, 0755) != 0) {
            say(PRS_ERROR, "%s: cannot create the output folder: %s", o->output, strerror(errno));
            split_free(&s);
            return 1;
        }
    }
    for (int k = 0; k < SA_SPLIT_NSEL; k++) {
        if (!want[k])
            continue;
        const sa_split_select *sel = &o->sel[k];
        if (debug) /* the detail even when nothing was picked: it shows what there was */
            status |= write_detail(&s, k, o->output);
        if (got[k]) {
            status |= write_kind(&s, k, o->output);
            if (debug)
                status |= write_groups(&s, k, sel->number, o->output);
            continue;
        }
        char sizes[256];
        sizes_seen(&s, k, sizes, sizeof sizes);
        if (sel->rid)
            say(PRS_WARNING,
                "%s: no %s step (followed by another step of its process) holds request %s; %s not written",
                kind_name[k], kind_name[k], sel->rid, file_name[k]);
        else
            say(PRS_WARNING,
                "%s: no %s step of batch size %ld (followed by another step of its process%s); %s not written; "
                "batch sizes of its %s steps: %s",
                kind_name[k], kind_name[k], sel->batch_size, k == SA_SPLIT_PREFILL ? ", its request's httpReq seen" : "",
                file_name[k], kind_name[k], sizes[0] ? sizes : "none (no such step)");
        status = 1;
    }
    split_free(&s);
    return status;
}

/* The input's profiler.db, or raw stores parsed into a folder of our own. */
static int run_input(const sa_split_opts *o)
{
    struct stat st;
    if (!o->input || stat(o->input, &st) != 0) {
        say(PRS_ERROR, "%s: %s", o->input ? o->input : "(no input)", strerror(errno));
        return 2;
    }
    char dbpath[4096];
    size_t len = strlen(o->input);
    if (S_ISREG(st.st_mode) && len >= 11 && !strcmp(o->input + len - 11, "profiler.db"))
        snprintf(dbpath, sizeof dbpath, "%s", o->input);
    else
        snprintf(dbpath, sizeof dbpath, "%s/profiler.db", o->input);
    if (is_file(dbpath))
        return run_db(o, dbpath);
    int swept = sa_split_tmp_sweep();
    if (swept)
        say(PRS_DEBUG, "removed %d folder(s) that killed runs left in the temporary folder", swept);
    char tmp[3072];
    int lock = sa_split_tmp_make(tmp, sizeof tmp);
    if (lock < 0) {
        say(PRS_ERROR, "%s: cannot make a folder for the parse: %s", tmp, strerror(-lock));
        return 1;
    }
    int rc = parse_to(o, tmp);
    snprintf(dbpath, sizeof dbpath, "%s/profiler.db", tmp);
    if (rc == 2 || !is_file(dbpath)) {
        say(PRS_ERROR, "%s: no raw store (ms_service_*.db) could be read, and no profiler.db there", o->input);
        rc = 2;
    } else
        rc = run_db(o, dbpath);
    sa_split_tmp_remove(tmp, lock);
    return rc;
}

int sa_split_run(const sa_split_opts *o)
{
    int level = prs_log_level();
    if (o->log_level >= 0)
        prs_log_set_level(o->log_level);
    int rc = run_input(o);
    prs_log_set_level(level);
    return rc;
}
