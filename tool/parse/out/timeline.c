/* SPDX-License-Identifier: Apache-2.0 */
/*
 * timeline.c — chrome_tracing.json in the Trace Event Format, streamed as
 * records arrive, and the same timeline as profiler.db tables (process,
 * thread, slice, counter, flow).
 *
 * The file is, by default, the reference's shape: a top-level array of
 * events whose first is a metadata event {"name": "servprof_trace", "ph":
 * "M", "args": {"epoch_origin_ns": ...}} (readers that do `for e in
 * json.load(f)` work, and Perfetto ignores a metadata name it does not
 * know); `--trace-form object` writes {"displayTimeUnit", "otherData":
 * {"epoch_origin_ns", ...}, "traceEvents": [...]} instead. Either way `ts`
 * is microseconds since the earliest record (epoch_origin_ns holds that
 * origin), printed from integer nanoseconds so no precision is lost
 * (absolute epoch microseconds in a double would lose it). One trace
 * process per raw store (pid = store index + 1, unique across hosts, named
 * by role at the end when the roles are known), one thread lane per
 * (domain, thread) — and more lanes for spans that overlap without nesting.
 * Spans are "X", events "i", counters "C", request flows
 * "s"/"t"/"f" with bp "e". Metadata ("M") events may come anywhere in the
 * array, so they are written when a lane appears and at the close.
 *
 * profiler.db's `slice` is a VIEW with the columns of docs/parse.md over
 * `slice_data` (one row per record) and `slice_args` (long args texts):
 * a scheduler step's 3.7 KB rid list is carried byte-identical by its
 * schedule, execution and forward spans, so a long text equal to one of
 * the last few long ones is stored once and referenced by id (2/3 of the
 * bytes of the old table). Short texts stay inline (a second row costs more than
 * it saves); end_time is computed by the view.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "argdecode.h"
#include "dwrite.h"
#include "fmt.h"
#include "pftrace.h"
#include "plog.h"
#include "repcols.h"
#include "storeread.h"
#include "table.h"
#include "timeline.h"
#include "wqueue.h"
#include "xalloc.h"

/* A sub-lane: one trace thread whose spans nest; `ends` is the stack of
 * the open spans' end times. */
typedef struct sublane { int id; int64_t *ends; int n, cap; } sublane;
#define MAX_SUBLANES 32

/* A (store, domain, thread) lane. Spans on one thread need not nest (an
 * asyncio loop interleaves requests), but Perfetto and chrome://tracing
 * drop or misdraw partially overlapping slices on one track, so a span that
 * would overlap without nesting goes to the next sub-lane ("... #2"). */
typedef struct lane { int store; long long tid; char *cat; int id; char *name; sublane *subs; int nsub; } lane;

/* The trace's output buffer: appends are inlined memcpys into a buffer of
 * dwrite.c, which the writer thread puts on disk while the next one fills
 * (stdio cost a call per fputs/fwrite plus its own checks, a measurable
 * share of a json-only parse: docs/benchmarks.md, "Figures behind design
 * comments"; a buffered write() a new page-cache page per 4 KiB). */
typedef struct wout {
    prs_dw *dw;
    char *b;             /* PRS_DW_BUF bytes, from dwrite */
    size_t n;            /* bytes in b */
    unsigned long handovers;
} wout;

static void w_flush(wout *f)
{
    f->b = prs_dw_submit(f->dw);
    f->n = 0;
    f->handovers++;
}

static inline void w_put(wout *f, const char *p, size_t n)
{
    while (n > PRS_DW_BUF - f->n) {
        size_t k = PRS_DW_BUF - f->n;
        memcpy(f->b + f->n, p, k);
        f->n += k;
        p += k;
        n -= k;
        w_flush(f);
    }
    memcpy(f->b + f->n, p, n);
    f->n += n;
}

static inline void w_c(wout *f, int c)
{
    if (f->n == PRS_DW_BUF)
        w_flush(f);
    f->b[f->n++] = (char)c;
}

#define W_LIT(f, lit) w_put((f), (lit), sizeof(lit) - 1)

static inline void w_str(wout *f, const char *s) { w_put(f, s, strlen(s)); }

static void w_int(wout *f, long long v)
{
    static const char d2[] = "00010203040506070809101112131415161718192021222324252627282930313233343536373839"
                             "40414243444546474849505152535455565758596061626364656667686970717273747576777879"
                             "8081828384858687888990919293949596979899";
    char buf[24];
    int i = 24;
    unsigned long long u = v < 0 ? 0ULL - (unsigned long long)v : (unsigned long long)v;
    while (u >= 100) { /* two digits per division */
        unsigned r = (unsigned)(u % 100);
        u /= 100;
        buf[--i] = d2[2 * r + 1];
        buf[--i] = d2[2 * r];
    }
    if (u >= 10) {
        buf[--i] = d2[2 * u + 1];
        buf[--i] = d2[2 * u];
    } else {
        buf[--i] = (char)('0' + u);
    }
    if (v < 0)
        buf[--i] = '-';
    w_put(f, buf + i, (size_t)(24 - i));
}

/* Long args texts remembered for reuse: a step's three spans usually come
 * one after another, but another step's may come between them when
 * scheduling runs ahead of execution. */
#define ARGS_RECENT 4

/* Who owns what, with --jobs N > 1 (prs_out.writers): the encoders'
 * state — f's buffer and fill, first, events, prefix, the insides of pf —
 * is the timeline thread's (wq) from the open to prs_timeline_close's join;
 * the parse thread keeps the lanes, marks, recent args, the tables and the
 * f/pf pointers (set at the open, reset after the join), which it only
 * tests. The enc_* functions are the encoders: they touch nothing else,
 * and run on the timeline thread, or on the parse thread without it. */
struct prs_timeline {
    struct prs_wq *wq;   /* the timeline thread (JSON + pftrace encoding); NULL: none */
    wout *f;             /* chrome_tracing.json; NULL when not written */
    char *path;
    int64_t origin;
    int first;           /* no event written yet (no comma) */
    int object_form;     /* {"traceEvents": [...]} rather than a top-level array */
    lane *lanes;
    int nlanes, caplanes;
    int *lane_hash;      /* open addressing over lanes, index + 1 */
    unsigned nslots;
    int next_lane_id;
    /* By lane id: the bytes `,"cat":"...","pid":P,"tid":T,"ts":` every
     * event of that lane repeats, formatted once (a lane is one store,
     * one domain). */
    struct lane_prefix { char *b; int n; } *prefix;
    int nprefix;
    long long next_flow;
    prs_out *o;
    /* trace.pftrace (pftrace.c), fed the same events; NULL when not written */
    prs_pft *pf;
    /* Flow ids the next slice continues (prs_timeline_flow_mark): the JSON
     * draws a flow step once the next one is known, the protobuf trace
     * puts the id on the slice itself. Cleared by each prs_timeline_lane. */
    uint64_t *marks;
    int nmarks, capmarks;
    int counters_only;   /* no output: counter rows for the tap, nothing else (tap_counters) */
    prs_table t_process, t_thread, t_slice, t_args, t_counter, t_flow;
    long long events;
    /* The last ARGS_RECENT long args texts stored in slice_args: a long
     * text equal to one of them is referenced instead of stored again. */
    struct recent_args { char *text; int len, cap; long long id; } recent[ARGS_RECENT];
    int recent_next;        /* the entry replaced next (round robin) */
    long long args_ids;     /* ids given in slice_args */
};

static const prs_col c_process[] = {{"pid", "INTEGER"}, {"process_name", "TEXT"}, {"label", "TEXT"},
                                    {"hostname", "TEXT"}, {"prof_id", "TEXT"}, {"dp_rank", "INTEGER"}};
static const prs_col c_thread[] = {{"pid", "INTEGER"}, {"tid", "INTEGER"}, {"thread_name", "TEXT"},
                                   {"domain", "TEXT"}, {"os_tid", "INTEGER"}};
static const prs_col c_slice[] = {{"timestamp", "INTEGER"}, {"duration", "INTEGER"}, {"name", "TEXT"},
                                  {"cat", "TEXT"}, {"args", "TEXT"}, {"args_id", "INTEGER"},
                                  {"pid", "INTEGER"}, {"tid", "INTEGER"}};
static const prs_col c_args[] = {{"id", "INTEGER PRIMARY KEY"}, {"args", "TEXT"}};
/* The columns of docs/parse.md's `slice`, in its order, then the reference's
 * `id` (insertion order = time order) and `track_id` (our lane: tid). */
static const char slice_view[] =
    "CREATE VIEW slice AS SELECT d.timestamp AS timestamp, d.duration AS duration, "
    "d.timestamp + d.duration AS end_time, d.name AS name, d.cat AS cat, "
    "CASE WHEN d.args_id IS NULL THEN d.args ELSE (SELECT a.args FROM slice_args a WHERE a.id = d.args_id) END "
    "AS args, d.pid AS pid, d.tid AS tid, d.rowid AS id, d.tid AS track_id FROM slice_data d";
/* Args texts at least this long go to slice_args (a step's rid list is
 * kilobytes; events' args are tens of bytes). */
#define LONG_ARGS 512
/* counter and flow: `id` (the rowid, in time order) as the reference has it. */
static const prs_col c_counter[] = {{PRS_CT_ID, "INTEGER PRIMARY KEY"}, {PRS_CT_NAME, "TEXT"}, {PRS_CT_PID, "INTEGER"},
                                    {PRS_CT_TIMESTAMP, "INTEGER"}, {PRS_CT_SERIES, "TEXT"}, {PRS_CT_VALUE, "REAL"}};
static const prs_col c_flow[] = {{"id", "INTEGER PRIMARY KEY"}, {"flow_id", "INTEGER"}, {"name", "TEXT"}, {"cat", "TEXT"}, {"pid", "INTEGER"},
                                 {"tid", "INTEGER"}, {"timestamp", "INTEGER"}, {"type", "TEXT"}};

#define NCOLS(c) ((int)(sizeof c / sizeof *c))

static void timeline_msg(void *ctx, uint8_t *p, size_t n);

prs_timeline *prs_timeline_open(prs_out *o, int json, int perfetto, int tap_counters, int64_t origin,
                                int object_form)
{
    if (!json && !perfetto && !o->db && !tap_counters)
        return NULL;
    prs_timeline *t = prs_xcalloc(1, sizeof *t);
    t->counters_only = !json && !perfetto && !o->db;
    if (perfetto) {
        t->pf = prs_pft_open(&o->stage, o->dir);
        if (!t->pf) {
            prs_log(PRS_ERROR, "cannot write %s/trace.pftrace: %s; the Perfetto trace is not written", o->dir,
                    strerror(errno));
            o->failed = 1;
        }
    }
    t->origin = origin;
    t->first = 1;
    t->o = o;
    t->nslots = 256;
    t->lane_hash = prs_xcalloc(t->nslots, sizeof *t->lane_hash);
    if (json) {
        size_t len = strlen(o->dir) + 32;
        t->path = prs_xmalloc(len);
        snprintf(t->path, len, "%s/chrome_tracing.json", o->dir);
        prs_dw *dw = prs_dw_open(&o->stage, t->path, PRS_DW_BUF);
        if (!dw) {
            prs_log(PRS_ERROR, "cannot write %s: %s; the timeline is not written", t->path, strerror(errno));
            o->failed = 1;
        } else {
            t->f = prs_xmalloc(sizeof *t->f);
            t->f->dw = dw;
            t->f->b = prs_dw_buf(dw);
            t->f->n = 0;
            t->f->handovers = 0;
            t->object_form = object_form;
            if (object_form) {
                W_LIT(t->f, "{\"displayTimeUnit\":\"ms\",\"otherData\":{\"epoch_origin_ns\":\"");
                w_int(t->f, origin);
                W_LIT(t->f, "\",\"ts\":\"microseconds since epoch_origin_ns\",\"generator\":\"servprof parse\"},"
                            "\"traceEvents\":[\n");
            } else {
                /* the origin rides in the first event, a metadata event */
                W_LIT(t->f, "[\n{\"name\":\"servprof_trace\",\"ph\":\"M\",\"pid\":0,\"tid\":0,"
                            "\"args\":{\"epoch_origin_ns\":\"");
                w_int(t->f, origin);
                W_LIT(t->f, "\",\"ts\":\"microseconds since epoch_origin_ns\",\"displayTimeUnit\":\"ms\","
                            "\"generator\":\"servprof parse\"}}");
                t->first = 0;
            }
        }
    }
    prs_table_init(o, &t->t_process, NULL, "process", c_process, NCOLS(c_process), NULL);
    prs_table_init(o, &t->t_thread, NULL, "thread", c_thread, NCOLS(c_thread), NULL);
    prs_table_init(o, &t->t_slice, NULL, "slice_data", c_slice, NCOLS(c_slice), NULL);
    prs_table_init(o, &t->t_args, NULL, "slice_args", c_args, NCOLS(c_args), NULL);
    if (t->t_slice.ins && t->t_args.ins && sqlite3_exec(o->db_conn, slice_view, NULL, NULL, NULL) != SQLITE_OK) {
        prs_log(PRS_ERROR, "profiler.db: cannot create view slice: %s", sqlite3_errmsg(o->db_conn));
        o->failed = 1;
    }
    prs_table_init(o, &t->t_counter, NULL, PRS_T_COUNTER, c_counter, NCOLS(c_counter), NULL);
    prs_table_init(o, &t->t_flow, NULL, "flow", c_flow, NCOLS(c_flow), NULL);
    if (o->writers && (t->f || t->pf)) /* --jobs: JSON and pftrace encoded on a thread of their own */
        t->wq = prs_wq_start(timeline_msg, t, "sp-timeline");
    return t;
}

/* Bytes a JSON string takes as they are: printable ASCII but '"' and '\\'
 * (NUL, control bytes and UTF-8 take the slow path). */
static const unsigned char json_plain[256] = {
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    1, 1, 0, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 1, 1, 1,
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
};

/* A JSON string: quotes, backslashes and control bytes escaped, invalid
 * UTF-8 replaced by U+FFFD so that the file always loads. */
static void json_str(wout *f, const char *s, int n)
{
    w_c(f, '"');
    const char *run = s;
    for (int i = 0; i < n;) {
        unsigned char c = (unsigned char)s[i];
        if (json_plain[c]) {
            i++;
            continue;
        }
        if (c >= 0x80) {
            int k = prs_utf8_len(s + i, s + n);
            if (k) {
                i += k;
                continue;
            }
        }
        w_put(f, run, (size_t)(s + i - run));
        if (c == '"' || c == '\\') {
            w_c(f, '\\');
            w_c(f, (int)c);
        } else if (c < 0x20) {
            char u[6] = {'\\', 'u', '0', '0', "0123456789abcdef"[c >> 4], "0123456789abcdef"[c & 15]};
            w_put(f, u, 6);
        } else {
            W_LIT(f, "\\ufffd");
        }
        i++;
        run = s + i;
    }
    w_put(f, run, (size_t)(s + n - run));
    w_c(f, '"');
}

/* json_str of a NUL-terminated string, without a strlen first: names and
 * domains are short and plain, one pass finds both the end and the need
 * to escape. */
static void json_cstr(wout *f, const char *s)
{
    const unsigned char *p = (const unsigned char *)s;
    while (json_plain[*p])
        p++;
    if (*p) {
        json_str(f, s, (int)strlen(s));
        return;
    }
    w_c(f, '"');
    w_put(f, s, (size_t)((const char *)p - s));
    w_c(f, '"');
}

/* Microseconds since the origin, exactly, from integer nanoseconds. */
static void put_ts(wout *f, int64_t ns)
{
    if (ns < 0) {
        w_c(f, '-');
        ns = -ns;
    }
    w_int(f, ns / 1000);
    int r = (int)(ns % 1000);
    char frac[4] = {'.', (char)('0' + r / 100), (char)('0' + r / 10 % 10), (char)('0' + r % 10)};
    w_put(f, frac, 4);
}

static void begin(prs_timeline *t)
{
    if (!t->first)
        W_LIT(t->f, ",\n");
    t->first = 0;
    t->events++;
}

static void meta(prs_timeline *t, const char *what, int pid, int tid, const char *key, const char *val,
                 long long ival)
{
    if (!t->f)
        return;
    begin(t);
    W_LIT(t->f, "{\"ph\":\"M\",\"name\":\"");
    w_str(t->f, what);
    W_LIT(t->f, "\",\"pid\":");
    w_int(t->f, pid);
    W_LIT(t->f, ",\"tid\":");
    w_int(t->f, tid);
    W_LIT(t->f, ",\"args\":{\"");
    w_str(t->f, key);
    W_LIT(t->f, "\":");
    if (val)
        json_str(t->f, val, (int)strlen(val));
    else
        w_int(t->f, ival);
    W_LIT(t->f, "}}");
}

static unsigned lane_hash(int store, long long tid, const char *cat)
{
    unsigned h = 2166136261u ^ (unsigned)store;
    h = (h ^ (unsigned)tid) * 16777619u;
    h = (h ^ (unsigned)(tid >> 32)) * 16777619u;
    for (const char *p = cat; *p; p++)
        h = (h ^ (unsigned char)*p) * 16777619u;
    return h;
}

static void enc_thread(prs_timeline *t, int pid, int id, const char *name)
{
    prs_pft_thread(t->pf, pid, id, name);
    meta(t, "thread_name", pid, id, "name", name, 0);
    meta(t, "thread_sort_index", pid, id, "sort_index", NULL, id);
}

/* ---- the hand-over to the timeline thread: one message per event, its
 * strings and arrays copied after a fixed head (tmsg). */
enum { T_SLICE, T_COUNTER, T_FLOW, T_THREAD, T_PROCESS, T_KERNEL };
typedef struct tmsg {
    int kind, pid, valid, n;  /* n: marks, flows or series after the head */
    long long tid, id;
    int64_t ts, dur;
    int len[3];               /* name, cat (or label), args: bytes, each copied with a NUL */
    char ph;
} tmsg;

/* Queues an event: n 8-byte items (marks, flows, values) and up to three
 * strings (lengths l0..l2, -1: absent); returns the head, the items at
 * *items, the strings' room at *text. */
static tmsg *put_event(prs_timeline *t, int kind, int n, const char *s0, int l0, const char *s1, int l1,
                       const char *s2, int l2, void **items)
{
    size_t text = (size_t)(l0 + 1) + (size_t)(l1 + 1) + (size_t)(l2 + 1);
    size_t head = prs_wq_round(sizeof(tmsg));
    tmsg *m = prs_wq_put(t->wq, head + (size_t)n * 8 + text);
    memset(m, 0, sizeof *m);
    m->kind = kind;
    m->n = n;
    m->len[0] = l0;
    m->len[1] = l1;
    m->len[2] = l2;
    *items = (uint8_t *)m + head;
    char *p = (char *)m + head + (size_t)n * 8;
    const char *src[3] = {s0, s1, s2};
    for (int i = 0; i < 3; i++) {
        if (m->len[i] < 0)
            continue;
        if (m->len[i] > 0) /* a zero-length field may come as NULL (memcpy's arguments must not) */
            memcpy(p, src[i], (size_t)m->len[i]);
        p[m->len[i]] = 0;
        p += m->len[i] + 1;
    }
    return m;
}

static int slen(const char *s) { return s ? (int)strlen(s) : -1; }

static void emit_thread(prs_timeline *t, int pid, int id, const char *name)
{
    if (!t->wq) {
        enc_thread(t, pid, id, name);
        return;
    }
    void *items;
    tmsg *m = put_event(t, T_THREAD, 0, name, slen(name), NULL, -1, NULL, -1, &items);
    m->pid = pid;
    m->tid = id;
}

static void thread_row(prs_timeline *t, int pid, int id, const char *name, const char *cat, long long tid)
{
    emit_thread(t, pid, id, name);
    prs_val v[5] = {prs_v_int(pid), prs_v_int(id), prs_v_text(name, -1), prs_v_text(cat, -1), prs_v_int(tid)};
    prs_table_row(t->o, &t->t_thread, v);
}

static lane *find_lane(prs_timeline *t, const prs_store *s, const char *cat, long long tid)
{
    unsigned h = lane_hash(s->index, tid, cat) & (t->nslots - 1);
    while (t->lane_hash[h]) {
        lane *l = &t->lanes[t->lane_hash[h] - 1];
        if (l->store == s->index && l->tid == tid && !strcmp(l->cat, cat))
            return l;
        h = (h + 1) & (t->nslots - 1);
    }
    if (t->nlanes == t->caplanes) {
        t->caplanes = t->caplanes ? t->caplanes * 2 : 64;
        t->lanes = prs_xrealloc(t->lanes, (size_t)t->caplanes * sizeof *t->lanes);
    }
    lane *l = &t->lanes[t->nlanes++];
    memset(l, 0, sizeof *l);
    l->store = s->index;
    l->tid = tid;
    l->cat = prs_xstrdup(cat);
    l->id = ++t->next_lane_id;
    t->lane_hash[h] = t->nlanes;
    if ((unsigned)t->nlanes * 2 > t->nslots) {
        unsigned ns = t->nslots * 2;
        int *nh = prs_xcalloc(ns, sizeof *nh);
        for (int i = 0; i < t->nlanes; i++) {
            unsigned k = lane_hash(t->lanes[i].store, t->lanes[i].tid, t->lanes[i].cat) & (ns - 1);
            while (nh[k])
                k = (k + 1) & (ns - 1);
            nh[k] = i + 1;
        }
        free(t->lane_hash);
        t->lane_hash = nh;
        t->nslots = ns;
    }
    char name[256];
    const char *tname = prs_store_thread_name(s, tid);
    if (tname)
        snprintf(name, sizeof name, "%s (%s %lld)", *cat ? cat : "(no domain)", tname, tid);
    else
        snprintf(name, sizeof name, "%s (thread %lld)", *cat ? cat : "(no domain)", tid);
    l->name = prs_xstrdup(name);
    l->subs = prs_xcalloc(MAX_SUBLANES, sizeof *l->subs);
    l->subs[0].id = l->id;
    l->nsub = 1;
    thread_row(t, prs_timeline_pid(s), l->id, name, cat, tid);
    return l;
}

static void push_end(sublane *sl, int64_t end)
{
    if (sl->n == sl->cap) {
        sl->cap = sl->cap ? sl->cap * 2 : 8;
        sl->ends = prs_xrealloc(sl->ends, (size_t)sl->cap * sizeof *sl->ends);
    }
    sl->ends[sl->n++] = end;
}

int prs_timeline_lane(prs_timeline *t, const prs_store *s, const char *cat, long long tid, int64_t ts,
                      int64_t dur)
{
    if (!t || t->counters_only)
        return 0;
    t->nmarks = 0; /* a new record: marks of the last one had no slice */
    lane *l = find_lane(t, s, cat, tid);
    if (dur <= 0)
        return l->id; /* an instant never breaks nesting */
    int64_t end = ts + dur;
    for (int k = 0; k < l->nsub; k++) {
        sublane *sl = &l->subs[k];
        while (sl->n && sl->ends[sl->n - 1] <= ts)
            sl->n--;
        if (sl->n == 0 || sl->ends[sl->n - 1] >= end) {
            push_end(sl, end);
            return sl->id;
        }
    }
    if (l->nsub == MAX_SUBLANES) { /* give up on nesting rather than add lanes forever */
        push_end(&l->subs[l->nsub - 1], end);
        return l->subs[l->nsub - 1].id;
    }
    sublane *sl = &l->subs[l->nsub++];
    sl->id = ++t->next_lane_id;
    char name[300];
    snprintf(name, sizeof name, "%s #%d", l->name, l->nsub);
    thread_row(t, prs_timeline_pid(s), sl->id, name, cat, tid);
    push_end(sl, end);
    return sl->id;
}

/* The id in slice_args of a long args text: a recent one's when equal,
 * else a new row. */
static long long long_args_id(prs_timeline *t, const char *text, int len)
{
    for (int i = 0; i < ARGS_RECENT; i++) {
        const struct recent_args *e = &t->recent[i];
        if (e->id && e->len == len && memcmp(e->text, text, (size_t)len) == 0)
            return e->id;
    }
    struct recent_args *e = &t->recent[t->recent_next];
    t->recent_next = (t->recent_next + 1) % ARGS_RECENT;
    if (len > e->cap) {
        e->cap = len * 2;
        free(e->text);
        e->text = prs_xmalloc((size_t)e->cap);
    }
    memcpy(e->text, text, (size_t)len);
    e->len = len;
    e->id = ++t->args_ids;
    prs_val v[2] = {prs_v_int(e->id), prs_v_text(text, len)};
    prs_table_row(t->o, &t->t_args, v);
    return e->id;
}

static void slice_row(prs_timeline *t, const prs_rec *r, int pid, int lane_id)
{
    prs_val args = prs_v_text(r->args, r->args_len), args_id = prs_v_null();
    if (r->args_len >= LONG_ARGS && t->t_args.ins) {
        args_id = prs_v_int(long_args_id(t, r->args, r->args_len));
        args = prs_v_null();
    }
    prs_val v[8] = {prs_v_int(r->ts), prs_v_int(r->dur), prs_v_text(r->name, -1), prs_v_text(r->cat, -1),
                    args, args_id, prs_v_int(pid), prs_v_int(lane_id)};
    prs_table_row(t->o, &t->t_slice, v);
}

/* Writes `,"cat":...,"pid":P,"tid":T,"ts":` of lane lane_id, kept from
 * the first time (when it did not straddle a buffer hand-over). */
static void lane_prefix(prs_timeline *t, const char *cat, int pid, int lane_id)
{
    wout *f = t->f;
    if (lane_id >= 0 && lane_id < t->nprefix && t->prefix[lane_id].b) {
        w_put(f, t->prefix[lane_id].b, (size_t)t->prefix[lane_id].n);
        return;
    }
    size_t at = f->n;
    unsigned long handovers = f->handovers;
    W_LIT(f, ",\"cat\":");
    json_cstr(f, cat);
    W_LIT(f, ",\"pid\":");
    w_int(f, pid);
    W_LIT(f, ",\"tid\":");
    w_int(f, lane_id);
    W_LIT(f, ",\"ts\":");
    if (lane_id < 0 || f->handovers != handovers)
        return; /* the bytes are not all in this buffer: kept next time */
    if (lane_id >= t->nprefix) {
        int n = lane_id * 2 + 16;
        t->prefix = prs_xrealloc(t->prefix, (size_t)n * sizeof *t->prefix);
        memset(t->prefix + t->nprefix, 0, (size_t)(n - t->nprefix) * sizeof *t->prefix);
        t->nprefix = n;
    }
    t->prefix[lane_id].n = (int)(f->n - at);
    t->prefix[lane_id].b = prs_xmalloc(f->n - at);
    memcpy(t->prefix[lane_id].b, f->b + at, f->n - at);
}

static void enc_slice(prs_timeline *t, int pid, int lane_id, const char *name, const char *cat, int64_t ts,
                      int64_t dur, const char *args, int args_len, int valid, const uint64_t *marks, int nmarks)
{
    if (t->f) {
        wout *f = t->f;
        begin(t);
        if (dur > 0)
            W_LIT(f, "{\"ph\":\"X\",\"name\":");
        else
            W_LIT(f, "{\"ph\":\"i\",\"s\":\"t\",\"name\":");
        json_cstr(f, name);
        lane_prefix(t, cat, pid, lane_id);
        put_ts(f, ts - t->origin);
        if (dur > 0) {
            W_LIT(f, ",\"dur\":");
            put_ts(f, dur);
        }
        W_LIT(f, ",\"args\":");
        if (valid) {
            w_put(f, args, (size_t)args_len);
        } else {
            /* Not JSON (an old writer that did not escape): kept as text. */
            W_LIT(f, "{\"raw\":");
            json_str(f, args, args_len);
            w_c(f, '}');
        }
        w_c(f, '}');
    }
    if (t->pf)
        prs_pft_slice(t->pf, pid, lane_id, name, cat, ts, dur, args, args_len, valid, marks, nmarks, NULL, 0);
}

void prs_timeline_slice(prs_timeline *t, const prs_rec *r, const prs_args *a, int lane_id)
{
    if (!t || t->counters_only)
        return;
    int pid = prs_timeline_pid(r->store);
    if (!t->wq) {
        enc_slice(t, pid, lane_id, r->name, r->cat, r->ts, r->dur, r->args, r->args_len, a->valid, t->marks,
                  t->nmarks);
    } else if (t->f || t->pf) {
        void *items;
        tmsg *m = put_event(t, T_SLICE, t->nmarks, r->name, (int)strlen(r->name), r->cat, (int)strlen(r->cat),
                            r->args, r->args_len, &items);
        m->pid = pid;
        m->tid = lane_id;
        m->ts = r->ts;
        m->dur = r->dur;
        m->valid = a->valid;
        if (t->nmarks) /* marks is NULL until the first flow mark */
            memcpy(items, t->marks, (size_t)t->nmarks * sizeof *t->marks);
    }
    t->nmarks = 0;
    if (t->t_slice.ins)
        slice_row(t, r, pid, lane_id);
}

void prs_timeline_flow_mark(prs_timeline *t, long long id)
{
    if (!t || !t->pf)
        return;
    if (t->nmarks == t->capmarks) {
        t->capmarks = t->capmarks ? t->capmarks * 2 : 8;
        t->marks = prs_xrealloc(t->marks, (size_t)t->capmarks * sizeof *t->marks);
    }
    t->marks[t->nmarks++] = (uint64_t)id + 1; /* request roots start at 0; a flow id of 0 reads as unset */
}

static void put_num(wout *f, double d)
{
    if (d == floor(d) && fabs(d) < 1e15) { /* "%.0f" of an integral double below 1e15 */
        if (d == 0 && signbit(d))
            w_c(f, '-');
        w_int(f, (long long)d);
    } else {
        char b[32];
        w_put(f, b, (size_t)prs_fmt_g6(d, b));
    }
}

static void enc_counter(prs_timeline *t, int pid, const char *name, int64_t ts, const char *const *series,
                        const double *vals, int n);

void prs_timeline_counter(prs_timeline *t, int pid, const char *name, int64_t ts,
                          const char *const *series, const double *vals, int n)
{
    if (!t)
        return;
    int any = 0;
    for (int i = 0; i < n; i++)
        any |= !isnan(vals[i]);
    if (!any)
        return;
    if (!t->wq) {
        enc_counter(t, pid, name, ts, series, vals, n);
    } else if (t->f || t->pf) {
        size_t sl = 0;
        for (int i = 0; i < n; i++)
            sl += strlen(series[i]) + 1;
        void *items;
        char *all = prs_xmalloc(sl ? sl : 1), *p = all;
        for (int i = 0; i < n; i++) {
            size_t k = strlen(series[i]) + 1;
            memcpy(p, series[i], k);
            p += k;
        }
        tmsg *m = put_event(t, T_COUNTER, n, name, (int)strlen(name), all, (int)sl, NULL, -1, &items);
        free(all);
        m->pid = pid;
        m->ts = ts;
        if (n)
            memcpy(items, vals, (size_t)n * sizeof *vals);
    }
    for (int i = 0; i < n; i++) {
        if (isnan(vals[i]))
            continue;
        prs_val v[6] = {prs_v_int(t->t_counter.rows + 1), prs_v_text(name, -1), prs_v_int(pid), prs_v_int(ts),
                        prs_v_text(series[i], -1), prs_v_real(vals[i])};
        prs_table_row(t->o, &t->t_counter, v);
    }
}

static void enc_counter(prs_timeline *t, int pid, const char *name, int64_t ts, const char *const *series,
                        const double *vals, int n)
{
    if (t->f) {
        wout *f = t->f;
        begin(t);
        W_LIT(f, "{\"ph\":\"C\",\"name\":");
        json_str(f, name, (int)strlen(name));
        W_LIT(f, ",\"pid\":");
        w_int(f, pid);
        W_LIT(f, ",\"ts\":");
        put_ts(f, ts - t->origin);
        W_LIT(f, ",\"args\":{");
        int k = 0;
        for (int i = 0; i < n; i++) {
            if (isnan(vals[i]))
                continue;
            if (k++)
                w_c(f, ',');
            json_str(f, series[i], (int)strlen(series[i]));
            w_c(f, ':');
            put_num(f, vals[i]);
        }
        W_LIT(f, "}}");
    }
    prs_pft_counter(t->pf, pid, name, ts, series, vals, n);
}

static void enc_flow(prs_timeline *t, char ph, long long id, const char *name, const char *cat, int pid, int tid,
                     int64_t ts)
{
    if (t->f) {
        begin(t);
        wout *f = t->f;
        W_LIT(f, "{\"ph\":\"");
        w_c(f, ph);
        W_LIT(f, "\",\"id\":");
        w_int(f, id);
        W_LIT(f, ",\"name\":\"");
        w_str(f, name);
        W_LIT(f, "\",\"cat\":\"");
        w_str(f, cat);
        W_LIT(f, "\",\"pid\":");
        w_int(f, pid);
        W_LIT(f, ",\"tid\":");
        w_int(f, tid);
        W_LIT(f, ",\"ts\":");
        put_ts(t->f, ts - t->origin);
        W_LIT(t->f, ",\"bp\":\"e\"}");
    }
}

static void flow_event(prs_timeline *t, char ph, long long id, const char *name, const char *cat, int pid,
                       int tid, int64_t ts)
{
    if (!t->wq) {
        enc_flow(t, ph, id, name, cat, pid, tid, ts);
    } else if (t->f) {
        void *items;
        tmsg *m = put_event(t, T_FLOW, 0, name, (int)strlen(name), cat, (int)strlen(cat), NULL, -1, &items);
        m->ph = ph;
        m->id = id;
        m->pid = pid;
        m->tid = tid;
        m->ts = ts;
    }
    char type[2] = {ph, 0};
    prs_val v[8] = {prs_v_int(t->t_flow.rows + 1), prs_v_int(id), prs_v_text(name, -1), prs_v_text(cat, -1),
                    prs_v_int(pid), prs_v_int(tid), prs_v_int(ts), prs_v_text(type, 1)};
    prs_table_row(t->o, &t->t_flow, v);
}

void prs_timeline_flow(prs_timeline *t, char ph, long long id, int pid, int tid, int64_t ts)
{
    if (!t || t->counters_only)
        return;
    if (id >= t->next_flow)
        t->next_flow = id + 1;
    flow_event(t, ph, id, "request", "request", pid, tid, ts);
}

static const char *role_of(const prs_store *s)
{
    if (s->name_chosen && s->process_name && *s->process_name)
        return s->process_name; /* servprof_set_process_name wins over the role */
    if (s->has_forward)
        return "forward";
    if (s->has_batch)
        return "schedule";
    if (s->process_name && *s->process_name)
        return s->process_name;
    if (s->has_request)
        return "server";
    return "process";
}

static void enc_process(prs_timeline *t, int pid, const char *name, const char *label)
{
    prs_pft_process(t->pf, pid, name, label);
    meta(t, "process_name", pid, 0, "name", name, 0);
    if (label && *label)
        meta(t, "process_labels", pid, 0, "labels", label, 0);
    meta(t, "process_sort_index", pid, 0, "sort_index", NULL, pid);
}

static void process_meta(prs_timeline *t, int pid, const char *name, const char *label, const char *host,
                         const char *prof, int dp)
{
    if (!t->wq) {
        enc_process(t, pid, name, label);
    } else {
        void *items;
        tmsg *m = put_event(t, T_PROCESS, 0, name, slen(name), label, slen(label), NULL, -1, &items);
        m->pid = pid;
    }
    prs_val v[6] = {prs_v_int(pid), prs_v_text(name, -1), prs_v_text(label ? label : "", -1),
                    prs_v_text(host ? host : "", -1), prs_v_text(prof ? prof : "", -1),
                    dp >= 0 ? prs_v_int(dp) : prs_v_null()};
    prs_table_row(t->o, &t->t_process, v);
}

/* ------------------------------------------------------ device activity */

/* A kernel or an API call of an activity store: a span with empty args on
 * lane (pid, tid); flows: its correlation flow id (nfl 0 or 1). */
static void enc_kernel(prs_timeline *t, int pid, long long tid, const char *name, const char *cat, int64_t s0,
                       int64_t dur, const uint64_t *fl, int nfl)
{
    if (t->pf)
        prs_pft_slice(t->pf, pid, tid, name, cat, s0, dur, "{}", 2, 1, fl, nfl, NULL, 0);
    if (!t->f)
        return;
    begin(t);
    W_LIT(t->f, "{\"ph\":\"X\",\"name\":");
    json_str(t->f, name, (int)strlen(name));
    W_LIT(t->f, ",\"cat\":");
    json_str(t->f, cat, (int)strlen(cat));
    W_LIT(t->f, ",\"pid\":");
    w_int(t->f, pid);
    W_LIT(t->f, ",\"tid\":");
    w_int(t->f, tid);
    W_LIT(t->f, ",\"ts\":");
    put_ts(t->f, s0 - t->origin);
    W_LIT(t->f, ",\"dur\":");
    put_ts(t->f, dur);
    W_LIT(t->f, ",\"args\":{}}");
}

static void emit_kernel(prs_timeline *t, int pid, long long tid, const char *name, const char *cat, int64_t s0,
                        int64_t dur, const uint64_t *fl, int nfl)
{
    if (!t->wq) {
        enc_kernel(t, pid, tid, name, cat, s0, dur, fl, nfl);
        return;
    }
    void *items;
    tmsg *m = put_event(t, T_KERNEL, nfl, name, (int)strlen(name), cat, (int)strlen(cat), NULL, -1, &items);
    m->pid = pid;
    m->tid = tid;
    m->ts = s0;
    m->dur = dur;
    if (nfl)
        memcpy(items, fl, (size_t)nfl * sizeof *fl);
}

/* The timeline thread: one message, one encoder call (wqueue.c). */
static void timeline_msg(void *ctx, uint8_t *p, size_t n)
{
    (void)n;
    prs_timeline *t = ctx;
    tmsg *m = (tmsg *)p;
    const uint8_t *items = p + prs_wq_round(sizeof *m);
    const char *str[3] = {NULL, NULL, NULL};
    const char *at = (const char *)items + (size_t)m->n * 8;
    for (int i = 0; i < 3; i++)
        if (m->len[i] >= 0) {
            str[i] = at;
            at += m->len[i] + 1;
        }
    switch (m->kind) {
    case T_SLICE:
        enc_slice(t, m->pid, (int)m->tid, str[0], str[1], m->ts, m->dur, str[2], m->len[2], m->valid,
                  (const uint64_t *)items, m->n);
        break;
    case T_COUNTER: {
        const char *series[64] = {0};
        const char **sv = m->n <= 64 ? series : prs_xmalloc((size_t)m->n * sizeof *sv);
        const char *q = str[1];
        for (int i = 0; i < m->n; i++) {
            sv[i] = q;
            q += strlen(q) + 1;
        }
        enc_counter(t, m->pid, str[0], m->ts, sv, (const double *)items, m->n);
        if (sv != series)
            free(sv);
        break;
    }
    case T_FLOW:
        enc_flow(t, m->ph, m->id, str[0], str[1], m->pid, (int)m->tid, m->ts);
        break;
    case T_THREAD:
        enc_thread(t, m->pid, (int)m->tid, str[0]);
        break;
    case T_PROCESS:
        enc_process(t, m->pid, str[0], str[1]);
        break;
    case T_KERNEL:
        enc_kernel(t, m->pid, m->tid, str[0], str[1], m->ts, m->dur, (const uint64_t *)items, m->n);
        break;
    }
}

static void activity_store(prs_timeline *t, const char *path, int idx)
{
    char *uri = prs_store_uri(path); /* immutable when closed: reading writes nothing beside it */
    sqlite3 *db = NULL;
    int rc = uri ? sqlite3_open_v2(uri, &db, SQLITE_OPEN_READONLY | SQLITE_OPEN_URI, NULL) : SQLITE_NOMEM;
    free(uri);
    if (rc != SQLITE_OK) {
        prs_log(PRS_WARNING, "activity store %s: cannot open (%s); skipped", path, db ? sqlite3_errmsg(db) : "out of memory");
        sqlite3_close(db);
        return;
    }
    sqlite3_busy_timeout(db, 5000);
    int api_pid = 200000 + idx;
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    char name[512];
    snprintf(name, sizeof name, "activity %s", base);
    int wrote_api = 0;
    sqlite3_stmt *st;
    /* Kernels, copies and sets: one process per device, one lane per stream.
     * The protobuf trace puts the correlation flows on the slices (a flow id
     * per correlationId, on the API call and the kernels it launched), so it
     * reads correlationId too where the table has one. */
    uint64_t corr_base = (1ULL << 41) + ((uint64_t)idx << 32);
    int corr = t->pf && sqlite3_prepare_v2(db, "SELECT type, name, start, end, deviceId, streamId, correlationId "
                                               "FROM Kernel ORDER BY start", -1, &st, NULL) == SQLITE_OK;
    if (corr || sqlite3_prepare_v2(db, "SELECT type, name, start, end, deviceId, streamId FROM Kernel ORDER BY start",
                                   -1, &st, NULL) == SQLITE_OK) {
        int devs[64], ndev = 0;
        while (sqlite3_step(st) == SQLITE_ROW) {
            const char *type = (const char *)sqlite3_column_text(st, 0);
            const char *kn = (const char *)sqlite3_column_text(st, 1);
            int64_t s0 = sqlite3_column_int64(st, 2), e0 = sqlite3_column_int64(st, 3);
            int dev = sqlite3_column_int(st, 4);
            long long stream = sqlite3_column_int64(st, 5);
            int pid = 100000 + dev;
            int known = 0;
            for (int i = 0; i < ndev; i++)
                known |= devs[i] == dev;
            if (!known && ndev < 64) {
                devs[ndev++] = dev;
                char pn[64];
                snprintf(pn, sizeof pn, "device %d", dev);
                process_meta(t, pid, pn, base, NULL, NULL, -1);
            }
            uint64_t fl = corr_base + (uint64_t)sqlite3_column_int64(st, 6);
            int nfl = t->pf && corr && sqlite3_column_type(st, 6) != SQLITE_NULL;
            if (t->pf || t->f)
                emit_kernel(t, pid, stream, kn ? kn : "", type ? type : "KERNEL", s0, e0 > s0 ? e0 - s0 : 0, &fl,
                            nfl);
        }
        sqlite3_finalize(st);
    }
    corr = t->pf && sqlite3_prepare_v2(db, "SELECT name, start, end, threadId, correlationId FROM Api ORDER BY start",
                                       -1, &st, NULL) == SQLITE_OK;
    if (corr || sqlite3_prepare_v2(db, "SELECT name, start, end, threadId FROM Api ORDER BY start", -1, &st, NULL) ==
        SQLITE_OK) {
        while (sqlite3_step(st) == SQLITE_ROW) {
            if (!wrote_api++)
                process_meta(t, api_pid, name, base, NULL, NULL, -1);
            const char *an = (const char *)sqlite3_column_text(st, 0);
            int64_t s0 = sqlite3_column_int64(st, 1), e0 = sqlite3_column_int64(st, 2);
            uint64_t fl = corr_base + (uint64_t)sqlite3_column_int64(st, 4);
            int nfl = t->pf && corr && sqlite3_column_type(st, 4) != SQLITE_NULL;
            if (t->pf || t->f)
                emit_kernel(t, api_pid, sqlite3_column_int64(st, 3), an ? an : "", "api", s0, e0 > s0 ? e0 - s0 : 0,
                            &fl, nfl);
        }
        sqlite3_finalize(st);
    }
    /* API call -> the kernels it launched, by correlationId. */
    if (sqlite3_prepare_v2(db, "SELECT a.start, a.threadId, k.start, k.deviceId, k.streamId FROM Api a "
                               "JOIN Kernel k ON k.correlationId = a.correlationId", -1, &st, NULL) == SQLITE_OK) {
        while (sqlite3_step(st) == SQLITE_ROW) {
            long long id = t->next_flow++;
            flow_event(t, 's', id, "launch", "correlation", api_pid, sqlite3_column_int(st, 1),
                       sqlite3_column_int64(st, 0));
            flow_event(t, 'f', id, "launch", "correlation", 100000 + sqlite3_column_int(st, 3),
                       sqlite3_column_int(st, 4), sqlite3_column_int64(st, 2));
        }
        sqlite3_finalize(st);
    }
    sqlite3_close(db);
}

void prs_timeline_activity(prs_timeline *t, char *const *paths, int n)
{
    if (!t || t->counters_only)
        return;
    if (t->next_flow < (1LL << 40))
        t->next_flow = 1LL << 40; /* apart from request flow ids */
    for (int i = 0; i < n; i++)
        activity_store(t, paths[i], i);
}

/* trace.pftrace's size per byte of chrome_tracing.json, for the note
 * below (docs/benchmarks.md, "trace.pftrace": 0.30-0.33 measured). */
#define PFT_PER_JSON 0.33

/* The JSON size above which parse suggests --format perfetto: 300 MB
 * (SERVPROF_PARSE_JSON_NOTE_MB overrides it, for the tests). */
static double json_note_bytes(void)
{
    const char *e = getenv("SERVPROF_PARSE_JSON_NOTE_MB");
    double mb = e && *e ? atof(e) : 300;
    return mb * 1e6;
}

int prs_timeline_close(prs_timeline *t, prs_store **stores, int n)
{
    if (!t)
        return 0;
    for (int i = 0; i < n; i++) {
        const prs_store *s = stores[i];
        char label[512];
        if (s->dp_rank >= 0)
            snprintf(label, sizeof label, "%s dp%d (%s)", s->hostname, s->dp_rank, s->prof_id);
        else
            snprintf(label, sizeof label, "%s (%s)", s->hostname, s->prof_id);
        process_meta(t, prs_timeline_pid(s), role_of(s), label, s->hostname, s->prof_id, s->dp_rank);
    }
    prs_wq_stop(t->wq); /* the encoders are this thread's again */
    t->wq = NULL;
    int rc = 0;
    int perfetto_written = t->pf != NULL;
    if (t->pf) {
        prs_pft_stats ps = prs_pft_stats_of(t->pf);
        if (ps.unnested)
            prs_log(PRS_WARNING, "trace.pftrace: %lld span(s) crossed the end of the span they started in on "
                    "a lane with %d sub-lanes in use; each was cut at that end (begin/end events cannot overlap)",
                    ps.unnested, MAX_SUBLANES);
        int err = prs_pft_close(t->pf);
        t->pf = NULL;
        if (err) {
            prs_log(PRS_ERROR, "writing %s/trace.pftrace failed: %s; the incomplete file is removed", t->o->dir,
                    strerror(err));
            rc = -1;
        }
    }
    if (t->f) {
        if (t->object_form)
            W_LIT(t->f, "\n]}\n");
        else
            W_LIT(t->f, "\n]\n");
        double bytes = (double)t->f->handovers * PRS_DW_BUF + (double)t->f->n;
        int err = prs_dw_close(t->f->dw, t->f->n);
        if (!err && !perfetto_written && bytes > json_note_bytes())
            prs_log(PRS_INFO, "chrome_tracing.json is %.0f MB: trace viewers load a JSON trace this big slowly or "
                    "not at all (chrome://tracing gives up near 500 MB); --format perfetto writes the same "
                    "timeline as trace.pftrace, Perfetto's protobuf trace, about %.0f MB for this run "
                    "(%.2f of the JSON's size, as measured in docs/benchmarks.md)",
                    bytes / 1e6, bytes * PFT_PER_JSON / 1e6, PFT_PER_JSON);
        if (err) {
            prs_log(PRS_ERROR, "writing %s failed: %s; the incomplete file is removed", t->path, strerror(err));
            prs_dw_remove(t->path); /* a cut-off trace does not load anyway */
            rc = -1;
        }
        free(t->f);
        t->f = NULL;
    }
    prs_table_close(t->o, &t->t_process);
    prs_table_close(t->o, &t->t_thread);
    prs_table_close(t->o, &t->t_slice);
    prs_table_close(t->o, &t->t_args);
    prs_table_close(t->o, &t->t_counter);
    prs_table_close(t->o, &t->t_flow);
    for (int i = 0; i < t->nlanes; i++) {
        for (int k = 0; k < t->lanes[i].nsub; k++)
            free(t->lanes[i].subs[k].ends);
        free(t->lanes[i].subs);
        free(t->lanes[i].name);
        free(t->lanes[i].cat);
    }
    free(t->lanes);
    free(t->marks);
    for (int i = 0; i < ARGS_RECENT; i++)
        free(t->recent[i].text);
    free(t->lane_hash);
    for (int i = 0; i < t->nprefix; i++)
        free(t->prefix[i].b);
    free(t->prefix);
    free(t->path);
    free(t);
    return rc;
}
