/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ingest.c — fills a profile from one input, reusing the parser.
 *
 * Raw stores: the whole streaming parse runs in this process with every
 * output off (no file is written) and a tap (tap.h) that sees each report
 * row (request, batch, forward) and each record (span durations by name) as
 * the parse makes them. So analyze's figures are the parse's figures, by
 * construction, and the parse's speed and bounded memory carry over. When
 * the parse's one pass meets a late row and starts again in exact mode,
 * the tap's restart empties the profile (and, through sa_opts.also, the
 * report's rows) back to what it was before the parse: nothing is counted
 * twice, and every other input keeps the one pass.
 *
 * A parse output folder (DIR/profiler.db): the same tables are read back
 * with SQLite and fed through the same row handler, columns mapped by name,
 * so a column added later (request.complete) is read where present and an
 * older file without it still works (every request then counts as
 * complete when it has an end).
 *
 * Any other source of the same rows (a database they were exported to:
 * tool/export/chprofile.c) feeds them through sa_ingest_row(), and may hand
 * a span name's figures in already aggregated (sa_ingest_span_agg) instead
 * of every duration.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "colmap.h"
#include "parse.h"
#include "plog.h"
#include "profile.h"
#include "repcols.h"
#include "storeread.h"
#include "table.h"
#include "tap.h"

/* Columns analyze reads, per table (their names: the parser's repcols.h). */
enum { RQ_RID, RQ_START, RQ_E2E, RQ_TTFT, RQ_TPOT, RQ_QUEUE, RQ_PREFILL, RQ_DECODE, RQ_IN, RQ_OUT,
       RQ_PREEMPT, RQ_COMPLETE, RQ_N };
static const char *const rq_names[RQ_N] = {
    PRS_RQ_HTTP_RID, PRS_RQ_START_MS, PRS_RQ_EXEC_MS, PRS_RQ_TTFT_MS, PRS_RQ_TPOT_MS,
    PRS_RQ_QUEUE_MS, PRS_RQ_PREFILL_MS, PRS_RQ_DECODE_MS, PRS_RQ_RECV_TOKENS, PRS_RQ_REPLY_TOKENS,
    PRS_RQ_PREEMPTED, PRS_RQ_COMPLETE};
enum { ST_NAME, ST_RES, ST_START, ST_END, ST_TYPE, ST_BS, ST_PBS, ST_DBS, ST_TOK, ST_DP, ST_PROF, ST_KV,
       ST_HOST, ST_N };
/* batch and forward rows (a step's columns have the same names in both;
 * hostname is forward's only, kvcache_usage_rate batch's) */
static const char *const st_names[ST_N] = {
    PRS_BT_NAME, PRS_BT_RES_LIST, PRS_BT_START_MS, PRS_BT_END_MS, PRS_BT_TYPE, PRS_BT_SIZE, PRS_BT_PREFILL_SIZE,
    PRS_BT_DECODE_SIZE, PRS_BT_TOTAL_TOK, PRS_BT_DP_RANK, PRS_BT_PROF_ID, PRS_BT_KV_USAGE, PRS_FW_HOSTNAME};

/* Disaggregated serving: pd_split_communication and pd_split_kvcache. */
enum { PC_RID, PC_REQ, PC_SEND, PC_SUCC, PC_PRES, PC_END, PC_TTFT, PC_SHARE, PC_N };
static const char *const pc_names[PC_N] = {
    PRS_PC_RID, PRS_PC_REQ_MS, PRS_PC_SEND_MS, PRS_PC_SUCC_MS, PRS_PC_PREFILL_RES_MS,
    PRS_PC_END_MS, PRS_PC_TTFT_MS, PRS_PC_SHARE};
enum { PK_RID, PK_RANK, PK_DUR, PK_START, PK_BYTES, PK_N };
static const char *const pk_names[PK_N] = {PRS_PK_RID, PRS_PK_RANK, PRS_PK_DUR_MS, PRS_PK_START_MS, PRS_PK_BYTES};

enum { CO_TIME, CO_PSTART, CO_DSTART, CO_PEND, CO_DEND, CO_N };
static const char *const co_names[CO_N] = {PRS_CO_START_DT, PRS_CO_PREFILL_START, PRS_CO_DECODE_START,
                                           PRS_CO_PREFILL_END, PRS_CO_DECODE_END};

/* Column indexes of one table: the parser's colmap (colmap.h), shared with
 * servprof report, which reads the same rows. */
typedef prs_colmap colmap;

typedef struct sa_ingest {
    sa_profile *p;
    colmap rq, bt, fw, pc, pk, co, mr, el;
    const prs_tap *also; /* sa_opts.also: handed every row and record too */
} sa_ingest;
typedef sa_ingest ingest;

static void map_cols(colmap *m, const prs_col *cols, int ncols, const char *const *names, int n)
{
    prs_colmap_fit(m, cols, ncols, names, n);
}

static double num(const prs_val *v, const colmap *m, int k) { return prs_colmap_num(v, m, k); }

static const char *text(const prs_val *v, const colmap *m, int k, int *len) { return prs_colmap_text(v, m, k, len); }

/* The reports' (ms) columns carry microseconds exactly (parse.md); a double
 * of epoch milliseconds is good to ~0.25 us, so round to the microsecond. */
static int64_t ms_to_ns(double ms) { return isnan(ms) ? 0 : (int64_t)llround(ms * 1e3) * 1000; }

#define GROW(arr, n, cap)                                                 \
    do {                                                                  \
        if ((n) == (cap)) {                                               \
            (cap) = (cap) ? (cap) * 2 : 256;                              \
            (arr) = realloc((arr), (size_t)(cap) * sizeof *(arr));        \
        }                                                                 \
    } while (0)

static void add_request(sa_profile *p, const colmap *m, const prs_val *v)
{
    GROW(p->req, p->nreq, p->capreq);
    sa_req *r = &p->req[p->nreq++];
    int len;
    const char *rid = text(v, m, RQ_RID, &len);
    r->rid = strndup(rid, (size_t)len);
    double start = num(v, m, RQ_START);
    r->e2e = num(v, m, RQ_E2E);
    r->start_ns = ms_to_ns(start);
    r->end_ns = isnan(r->e2e) ? 0 : r->start_ns + ms_to_ns(r->e2e);
    r->ttft = num(v, m, RQ_TTFT);
    r->tpot = num(v, m, RQ_TPOT);
    r->queue = num(v, m, RQ_QUEUE);
    r->prefill = num(v, m, RQ_PREFILL);
    r->decode = num(v, m, RQ_DECODE);
    r->in_tok = num(v, m, RQ_IN);
    r->out_tok = num(v, m, RQ_OUT);
    double pre = num(v, m, RQ_PREEMPT);
    r->preempted = isnan(pre) ? 0 : (int)pre;
    double c = num(v, m, RQ_COMPLETE);
    r->complete = (isnan(c) || c != 0) && !isnan(r->e2e) && r->start_ns > 0;
}

static int proc_index(sa_profile *p, const char *prof, int len, int dp)
{
    for (int i = p->nproc - 1; i >= 0; i--)
        if ((int)strlen(p->proc[i].prof_id) == len && !strncmp(p->proc[i].prof_id, prof, (size_t)len)) {
            if (dp >= 0)
                p->proc[i].dp_rank = dp;
            return i;
        }
    GROW(p->proc, p->nproc, p->capproc);
    sa_proc *x = &p->proc[p->nproc];
    x->prof_id = strndup(prof, (size_t)len);
    x->hostname = strdup("");
    x->dp_rank = dp;
    return p->nproc++;
}

static int rinfo_of(sa_profile *p, const char *rid, int len)
{
    int i = sa_strmap_get(&p->rids, rid, len);
    if (i >= 0)
        return i;
    GROW(p->rinfo, p->nrinfo, p->caprinfo);
    sa_ridinfo *x = &p->rinfo[p->nrinfo];
    memset(x, 0, sizeof *x);
    x->proc = -1;
    sa_strmap_put(&p->rids, rid, len, (int)p->nrinfo);
    return (int)p->nrinfo++;
}

/* Credits one step to each id of its res_list (a JSON array of ids). */
static void credit_ids(sa_profile *p, const char *s, int n, int src, const sa_step *st)
{
    char id[512];
    const char *e = s + n;
    while (s < e && *s != '[')
        s++;
    while (s < e) {
        s++;
        while (s < e && (*s == ' ' || *s == ','))
            s++;
        if (s >= e || *s == ']')
            break;
        int k = 0;
        if (*s == '"') {
            for (s++; s < e && *s != '"'; s++) {
                if (*s == '\\' && s + 1 < e)
                    s++;
                if (k < (int)sizeof id - 1)
                    id[k++] = *s;
            }
            s++;
        } else {
            while (s < e && *s != ',' && *s != ']')
                if (k < (int)sizeof id - 1)
                    id[k++] = *s++;
                else
                    s++;
        }
        s--; /* the loop's s++ steps over the separator */
        int xi = rinfo_of(p, id, k); /* may move p->rinfo */
        sa_ridinfo *x = &p->rinfo[xi];
        if (!x->first_start[src])
            x->first_start[src] = st->start;
        if (x->nends[src] < SA_KEEP_ENDS)
            x->ends[src][x->nends[src]++] = st->end;
        if (x->proc < 0)
            x->proc = st->proc;
        double ms = (double)(st->end - st->start) / 1e6;
        if (src == SA_SRC_EXEC)
            x->exec_ms += ms;
        else if (src == SA_SRC_BATCH)
            x->sched_ms += ms;
    }
}

static int step_kind(double pbs, double dbs, const char *type, int tlen)
{
    if (!isnan(pbs) || !isnan(dbs)) {
        int pf = !isnan(pbs) && pbs > 0, dc = !isnan(dbs) && dbs > 0;
        if (pf || dc)
            return pf && dc ? SA_MIXED : pf ? SA_PREFILL : SA_DECODE;
    }
    int pf = 0, dc = 0;
    for (int i = 0; i + 6 <= tlen; i++) {
        if (!strncmp(type + i, "Prefill", 7 <= tlen - i ? 7 : 6))
            pf = 1;
        if (!strncmp(type + i, "Decode", 6))
            dc = 1;
    }
    return pf && dc ? SA_MIXED : pf ? SA_PREFILL : SA_DECODE;
}

static int src_of_name(const char *name, int len)
{
#define IS(lit) (len == (int)sizeof lit - 1 && !strncmp(name, lit, sizeof lit - 1))
    if (IS("modelExec") || IS("modelRunnerExec") || IS("Execute"))
        return SA_SRC_EXEC;
    if (IS("batchFrameworkProcessing") || IS("BatchSchedule"))
        return SA_SRC_BATCH;
    if (IS("forward"))
        return SA_SRC_FORWARD;
#undef IS
    return -1;
}

static void add_step(sa_profile *p, const colmap *m, const prs_val *v, int forced_src)
{
    int nlen, plen, tlen, rlen;
    const char *name = text(v, m, ST_NAME, &nlen);
    int src = forced_src >= 0 ? forced_src : src_of_name(name, nlen);
    if (src < 0)
        return;
    const char *prof = text(v, m, ST_PROF, &plen);
    double dp = num(v, m, ST_DP);
    sa_step st;
    st.start = ms_to_ns(num(v, m, ST_START));
    st.end = ms_to_ns(num(v, m, ST_END));
    if (st.start <= 0 || st.end < st.start)
        return;
    st.proc = proc_index(p, prof, plen, isnan(dp) ? -1 : (int)dp);
    const char *type = text(v, m, ST_TYPE, &tlen);
    double pbs = num(v, m, ST_PBS), dbs = num(v, m, ST_DBS);
    st.kind = step_kind(pbs, dbs, type, tlen);
    double bs = num(v, m, ST_BS);
    st.bs = isnan(bs) ? 0 : (int)bs;
    st.dec = !isnan(dbs) ? (int)dbs : st.kind == SA_DECODE ? st.bs : st.kind == SA_MIXED ? st.bs - 1 : 0;
    st.tokens = num(v, m, ST_TOK);
    sa_steps *ss = &p->steps[src];
    GROW(ss->v, ss->n, ss->cap);
    ss->v[ss->n++] = st;
    if (src == SA_SRC_FORWARD) {
        int hlen;
        const char *host = text(v, m, ST_HOST, &hlen);
        if (hlen && !p->proc[st.proc].hostname[0]) {
            free(p->proc[st.proc].hostname);
            p->proc[st.proc].hostname = strndup(host, (size_t)hlen);
        }
        return;
    }
    double kv = num(v, m, ST_KV);
    if (!isnan(kv)) {
        GROW(p->kv, p->nkv, p->capkv);
        p->kv[p->nkv++] = (sa_kvpoint){st.start, kv > 1 ? kv / 100 : kv, st.proc};
    }
    const char *res = text(v, m, ST_RES, &rlen);
    if (rlen)
        credit_ids(p, res, rlen, src, &st);
}

static void add_handoff(sa_profile *p, const colmap *m, const prs_val *v)
{
    GROW(p->pd, p->npd, p->cappd);
    sa_pdreq *x = &p->pd[p->npd++];
    int len;
    const char *rid = text(v, m, PC_RID, &len);
    x->rid = strndup(rid, (size_t)len);
    for (int k = 0; k < SA_PD_N; k++)
        x->t[k] = ms_to_ns(num(v, m, PC_REQ + k));
    x->ttft = num(v, m, PC_TTFT);
    x->share = num(v, m, PC_SHARE);
}

static void add_pull(sa_profile *p, const colmap *m, const prs_val *v)
{
    double dur = num(v, m, PK_DUR), rank = num(v, m, PK_RANK);
    if (isnan(dur) || dur < 0)
        return;
    GROW(p->pull, p->npull, p->cappull);
    sa_pull *x = &p->pull[p->npull++];
    int len;
    const char *rid = text(v, m, PK_RID, &len);
    x->rid = strndup(rid, (size_t)len);
    x->rank = isnan(rank) ? -1 : (int)rank;
    x->start = ms_to_ns(num(v, m, PK_START));
    x->dur_ms = dur;
    x->bytes = num(v, m, PK_BYTES);
}

/* "YYYY-MM-DD HH:MM:SS.ffffff" in local time (the parse wrote it with
 * localtime: right when analyze runs in the parse's time zone) to epoch ns;
 * 0 when it is not that. */
static int64_t local_datetime_ns(const char *s, int n)
{
    char buf[40];
    if (n < 19 || n >= (int)sizeof buf)
        return 0;
    memcpy(buf, s, (size_t)n);
    buf[n] = 0;
    struct tm tm = {0};
    int us = 0;
    if (sscanf(buf, "%d-%d-%d %d:%d:%d.%6d", &tm.tm_year, &tm.tm_mon, &tm.tm_mday, &tm.tm_hour, &tm.tm_min,
               &tm.tm_sec, &us) < 6)
        return 0;
    tm.tm_year -= 1900;
    tm.tm_mon -= 1;
    tm.tm_isdst = -1;
    time_t t = mktime(&tm);
    return t == (time_t)-1 ? 0 : (int64_t)t * 1000000000 + (int64_t)us * 1000;
}

static void add_coord(sa_profile *p, const colmap *m, const prs_val *v)
{
    int len;
    const char *dt = text(v, m, CO_TIME, &len);
    int64_t ts = local_datetime_ns(dt, len);
    if (!ts)
        return;
    for (int k = 0; k < 4; k++)
        if (num(v, m, CO_PSTART + k) == 1) {
            GROW(p->coord, p->ncoord, p->capcoord);
            p->coord[p->ncoord++] = (sa_coord){ts, k};
        }
}

static void ingest_row(ingest *g, const char *key, const prs_col *cols, int ncols, const prs_val *v)
{
    if (!key)
        return;
    if (!strcmp(key, PRS_T_REQUEST)) {
        map_cols(&g->rq, cols, ncols, rq_names, RQ_N);
        add_request(g->p, &g->rq, v);
    } else if (!strcmp(key, PRS_T_BATCH)) {
        map_cols(&g->bt, cols, ncols, st_names, ST_N);
        add_step(g->p, &g->bt, v, -1);
    } else if (!strcmp(key, PRS_T_FORWARD)) {
        map_cols(&g->fw, cols, ncols, st_names, ST_N);
        add_step(g->p, &g->fw, v, SA_SRC_FORWARD);
    } else if (!strcmp(key, PRS_T_PD_COMM)) {
        map_cols(&g->pc, cols, ncols, pc_names, PC_N);
        add_handoff(g->p, &g->pc, v);
    } else if (!strcmp(key, PRS_T_PD_KV)) {
        map_cols(&g->pk, cols, ncols, pk_names, PK_N);
        add_pull(g->p, &g->pk, v);
    } else if (!strcmp(key, PRS_T_COORDINATOR)) {
        map_cols(&g->co, cols, ncols, co_names, CO_N);
        add_coord(g->p, &g->co, v);
    } else if (!strcmp(key, PRS_T_MOE_RANK)) {
        map_cols(&g->mr, cols, ncols, sa_moe_rank_cols, MR_N);
        sa_moe_add_rank_row(g->p, &g->mr, v);
    } else if (!strcmp(key, PRS_T_EXPERT_LOAD)) {
        map_cols(&g->el, cols, ncols, sa_moe_load_cols, EL_N);
        sa_moe_add_load_row(g->p, &g->el, v);
    }
}

static void add_span(sa_profile *p, const char *name, int len, int64_t ts, int64_t dur)
{
    int i = sa_strmap_get(&p->span_names, name, len);
    if (i < 0) {
        GROW(p->span, p->nspan, p->capspan);
        memset(&p->span[p->nspan], 0, sizeof *p->span);
        p->span[p->nspan].name = strndup(name, (size_t)len);
        i = p->nspan++;
        sa_strmap_put(&p->span_names, name, len, i);
    }
    sa_span *s = &p->span[i];
    GROW(s->dur_ms, s->n, s->cap);
    double ms = (double)dur / 1e6;
    s->dur_ms[s->n++] = (float)ms;
    s->total_ms += ms;
    if (ms > s->max_ms) {
        s->max_ms = ms;
        s->max_ts = ts;
    }
}

static void tap_row(void *ctx, const prs_table *t, const prs_val *v)
{
    ingest *g = ctx;
    ingest_row(g, t->key, t->cols, t->ncols, v);
    if (g->also && g->also->row)
        g->also->row(g->also->ctx, t, v);
}

static void tap_record(void *ctx, const prs_rec *r)
{
    ingest *g = ctx;
    g->p->records++;
    if (r->dur > 0)
        add_span(g->p, r->name, (int)strlen(r->name), r->ts, r->dur);
    if (g->also && g->also->record)
        g->also->record(g->also->ctx, r);
}

static void profile_release(sa_profile *p);

/* The parse's data-quality counts (request.c, at the end of the run). */
static void tap_quality(void *ctx, const prs_quality *q)
{
    ingest *g = ctx;
    g->p->quality_known = 1;
    g->p->dup_ids = q->dup_ids;
    g->p->empty_figures = q->empty_figures;
    snprintf(g->p->dup_example, sizeof g->p->dup_example, "%s", q->dup_example);
    if (g->also && g->also->quality)
        g->also->quality(g->also->ctx, q);
}

/* The parse starts over (tap.h): the profile and the column maps go back
 * to what sa_profile_load made before the parse, and so does `also`. */
static void tap_restart(void *ctx)
{
    ingest *g = ctx;
    sa_profile *p = g->p;
    const prs_tap *also = g->also;
    const char *input = p->input;
    profile_release(p);
    memset(p, 0, sizeof *p);
    p->input = input;
    *g = (ingest){.p = p, .also = also};
    if (also && also->restart)
        also->restart(also->ctx);
}

static int load_raw(ingest *g, const sa_opts *o, char *err, size_t errcap)
{
    prs_opts po = {0};
    po.input = o->input;
    po.output = "."; /* every output is off: nothing is written there (it exists: no folder made) */
    po.progress = o->progress; /* the same bar as `servprof parse` */
    po.tap_counters = o->tap_counters;
    g->also = o->also;
    int level = prs_log_level();
    if (!o->verbose && level < PRS_WARNING)
        prs_log_set_level(PRS_WARNING);
    /* a consumer riding along that cannot start over keeps the parse exact */
    int can_restart = !g->also || g->also->restart;
    prs_tap tap = {.row = tap_row, .record = tap_record, .restart = can_restart ? tap_restart : NULL,
                   .quality = tap_quality, .ctx = g};
    po.tap = &tap;
    int rc = prs_run(&po);
    prs_log_set_level(level);
    /* A store that was read but holds no record is data (analyze says "no
     * requests or steps", as it does of that store's parse output), not an error. */
    if (rc != 0) {
        snprintf(err, errcap, "%s: no raw store (ms_service_*.db) could be read, and no profiler.db there",
                 o->input);
        return -1;
    }
    return 0;
}

/* Feeds every row of table `name` of db through the row handler. */
static void read_table(ingest *g, sqlite3 *db, const char *name)
{
    char sql[128];
    snprintf(sql, sizeof sql, "SELECT * FROM \"%s\"", name);
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK)
        return; /* table absent: that part of the profile stays empty */
    int n = sqlite3_column_count(st);
    prs_col *cols = calloc((size_t)n, sizeof *cols);
    prs_val *v = calloc((size_t)n, sizeof *v);
    for (int i = 0; i < n; i++)
        cols[i].name = sqlite3_column_name(st, i);
    while (sqlite3_step(st) == SQLITE_ROW) {
        for (int i = 0; i < n; i++) {
            memset(&v[i], 0, sizeof v[i]);
            switch (sqlite3_column_type(st, i)) {
            case SQLITE_INTEGER: v[i].kind = PRS_INT; v[i].i = sqlite3_column_int64(st, i); break;
            case SQLITE_FLOAT: v[i].kind = PRS_REAL; v[i].d = sqlite3_column_double(st, i); break;
            case SQLITE_TEXT:
                v[i].kind = PRS_TEXT;
                v[i].s = (const char *)sqlite3_column_text(st, i);
                v[i].n = sqlite3_column_bytes(st, i);
                break;
            default: break;
            }
        }
        ingest_row(g, name, cols, n, v);
    }
    sqlite3_finalize(st);
    free(cols);
    free(v);
}

static int load_db(ingest *g, const char *path, char *err, size_t errcap)
{
    sqlite3 *db;
    char uri[4200];
    snprintf(uri, sizeof uri, "file:%s?mode=ro", path);
    if (sqlite3_open_v2(uri, &db, SQLITE_OPEN_READONLY | SQLITE_OPEN_URI, NULL) != SQLITE_OK ||
        sqlite3_exec(db, "SELECT 1 FROM request LIMIT 1", NULL, NULL, NULL) != SQLITE_OK) {
        snprintf(err, errcap, "%s: not a readable profiler.db (%s)", path, sqlite3_errmsg(db));
        sqlite3_close(db);
        return -1;
    }
    read_table(g, db, PRS_T_REQUEST);
    read_table(g, db, PRS_T_BATCH);
    read_table(g, db, PRS_T_FORWARD);
    read_table(g, db, PRS_T_PD_COMM);
    read_table(g, db, PRS_T_PD_KV);
    read_table(g, db, PRS_T_COORDINATOR);
    read_table(g, db, PRS_T_MOE_RANK);
    read_table(g, db, PRS_T_EXPERT_LOAD);
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(db, "SELECT name, timestamp, duration FROM slice_data WHERE duration > 0", -1, &st,
                           NULL) == SQLITE_OK) {
        while (sqlite3_step(st) == SQLITE_ROW)
            add_span(g->p, (const char *)sqlite3_column_text(st, 0), sqlite3_column_bytes(st, 0),
                     sqlite3_column_int64(st, 1), sqlite3_column_int64(st, 2));
        sqlite3_finalize(st);
    }
    sqlite3_close(db);
    return 0;
}

static int cmp_step(const void *a, const void *b)
{
    const sa_step *x = a, *y = b;
    return (x->start > y->start) - (x->start < y->start);
}

static int cmp_kv(const void *a, const void *b)
{
    const sa_kvpoint *x = a, *y = b;
    return (x->ts > y->ts) - (x->ts < y->ts);
}

/* Picks the step sources and the run's extent. */
static void finish(sa_profile *p)
{
    for (int s = 0; s < SA_NSRC; s++)
        if (p->steps[s].n)
            qsort(p->steps[s].v, (size_t)p->steps[s].n, sizeof(sa_step), cmp_step);
    if (p->nkv)
        qsort(p->kv, (size_t)p->nkv, sizeof *p->kv, cmp_kv);
    p->src = p->steps[SA_SRC_EXEC].n ? SA_SRC_EXEC : p->steps[SA_SRC_BATCH].n ? SA_SRC_BATCH : SA_SRC_FORWARD;
    p->busy_src = p->steps[SA_SRC_FORWARD].n ? SA_SRC_FORWARD : p->steps[SA_SRC_EXEC].n ? SA_SRC_EXEC
                                                                                          : SA_SRC_BATCH;
    int64_t t0 = INT64_MAX, t1 = 0;
    for (long long i = 0; i < p->nreq; i++) {
        if (p->req[i].start_ns > 0 && p->req[i].start_ns < t0)
            t0 = p->req[i].start_ns;
        if (p->req[i].end_ns > t1)
            t1 = p->req[i].end_ns;
    }
    for (int s = 0; s < SA_NSRC; s++)
        for (long long i = 0; i < p->steps[s].n; i++) {
            if (p->steps[s].v[i].start < t0)
                t0 = p->steps[s].v[i].start;
            if (p->steps[s].v[i].end > t1)
                t1 = p->steps[s].v[i].end;
        }
    /* hand-offs and KV pulls (a PD store may have no request or step rows) */
    for (long long i = 0; i < p->npd; i++)
        for (int k = 0; k < SA_PD_N; k++) {
            int64_t t = p->pd[i].t[k];
            if (t > 0 && t < t0)
                t0 = t;
            if (t > t1)
                t1 = t;
        }
    for (long long i = 0; i < p->npull; i++) {
        int64_t a = p->pull[i].start, b = a + (int64_t)llround(p->pull[i].dur_ms * 1e6);
        if (a > 0 && a < t0)
            t0 = a;
        if (a > 0 && b > t1)
            t1 = b;
    }
    for (long long i = 0; i < p->ncoord; i++) {
        if (p->coord[i].ts < t0)
            t0 = p->coord[i].ts;
        if (p->coord[i].ts > t1)
            t1 = p->coord[i].ts;
    }
    if (t0 == INT64_MAX)
        t0 = t1 = 0;
    p->t0 = t0;
    p->t1 = t1 > t0 ? t1 : t0;
}

static int is_file(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

sa_ingest *sa_ingest_new(const char *input)
{
    sa_ingest *g = calloc(1, sizeof *g);
    g->p = calloc(1, sizeof *g->p);
    g->p->input = input;
    return g;
}

const char *const *sa_ingest_columns(const char *key, int *n)
{
    static const struct { const char *key; const char *const *names; int n; } t[] = {
        {PRS_T_REQUEST, rq_names, RQ_N},      {PRS_T_BATCH, st_names, ST_N},
        {PRS_T_FORWARD, st_names, ST_N},      {PRS_T_PD_COMM, pc_names, PC_N},
        {PRS_T_PD_KV, pk_names, PK_N},        {PRS_T_COORDINATOR, co_names, CO_N},
        {PRS_T_MOE_RANK, sa_moe_rank_cols, MR_N}, {PRS_T_EXPERT_LOAD, sa_moe_load_cols, EL_N}};
    for (size_t i = 0; i < sizeof t / sizeof *t; i++)
        if (!strcmp(key, t[i].key)) {
            *n = t[i].n;
            return t[i].names;
        }
    *n = 0;
    return NULL;
}

void sa_ingest_row(sa_ingest *g, const char *key, const prs_col *cols, int ncols, const prs_val *v)
{
    ingest_row(g, key, cols, ncols, v);
}

void sa_ingest_span_agg(sa_ingest *g, const char *name, long long n, double total_ms, double max_ms,
                        int64_t max_ts, const sa_pct *dur)
{
    sa_profile *p = g->p;
    int len = (int)strlen(name);
    if (sa_strmap_get(&p->span_names, name, len) >= 0)
        return; /* one row per name: a second is a caller's bug, not data */
    GROW(p->span, p->nspan, p->capspan);
    sa_span *s = &p->span[p->nspan];
    memset(s, 0, sizeof *s);
    s->name = strdup(name);
    s->n = n;
    s->total_ms = total_ms;
    s->max_ms = max_ms;
    s->max_ts = max_ts;
    s->agg = 1;
    s->dur = *dur;
    sa_strmap_put(&p->span_names, name, len, p->nspan++);
}

sa_profile *sa_ingest_profile(sa_ingest *g) { return g->p; }

sa_profile *sa_ingest_finish(sa_ingest *g)
{
    sa_profile *p = g->p;
    finish(p);
    free(g);
    return p;
}

void sa_ingest_free(sa_ingest *g)
{
    if (!g)
        return;
    sa_profile_free(g->p);
    free(g);
}

sa_profile *sa_profile_load(const sa_opts *o, char *err, size_t errcap)
{
    struct stat st;
    if (!o->input || stat(o->input, &st) != 0) {
        snprintf(err, errcap, "%s: %s", o->input ? o->input : "(no input)", strerror(errno));
        return NULL;
    }
    sa_profile *p = calloc(1, sizeof *p);
    p->input = o->input;
    ingest g = {.p = p};
    char dbpath[4096];
    size_t len = strlen(o->input);
    if (S_ISREG(st.st_mode) && len >= 11 && !strcmp(o->input + len - 11, "profiler.db"))
        snprintf(dbpath, sizeof dbpath, "%s", o->input);
    else
        snprintf(dbpath, sizeof dbpath, "%s/profiler.db", o->input);
    int rc;
    if (is_file(dbpath)) {
        p->from_db = 1;
        p->records = -1;
        rc = load_db(&g, dbpath, err, errcap);
    } else {
        rc = load_raw(&g, o, err, errcap);
    }
    if (rc != 0) {
        sa_profile_free(p);
        return NULL;
    }
    finish(p);
    return p;
}

/* Frees what p owns; p itself stays. */
static void profile_release(sa_profile *p)
{
    for (long long i = 0; i < p->nreq; i++)
        free(p->req[i].rid);
    free(p->req);
    free(p->rinfo);
    sa_strmap_free(&p->rids);
    for (int s = 0; s < SA_NSRC; s++)
        free(p->steps[s].v);
    for (int i = 0; i < p->nproc; i++) {
        free(p->proc[i].prof_id);
        free(p->proc[i].hostname);
    }
    free(p->proc);
    free(p->kv);
    for (int i = 0; i < p->nspan; i++) {
        free(p->span[i].name);
        free(p->span[i].dur_ms);
    }
    free(p->span);
    sa_strmap_free(&p->span_names);
    for (long long i = 0; i < p->npd; i++)
        free(p->pd[i].rid);
    free(p->pd);
    for (long long i = 0; i < p->npull; i++)
        free(p->pull[i].rid);
    free(p->pull);
    free(p->coord);
    sa_moe_free(p);
}

void sa_profile_free(sa_profile *p)
{
    if (!p)
        return;
    profile_release(p);
    free(p);
}

int sa_req_info(const sa_profile *p, const sa_req *r)
{
    return sa_strmap_get(&p->rids, r->rid, (int)strlen(r->rid));
}

sa_ttft_parts sa_ttft_split(const sa_profile *p, const sa_req *r)
{
    sa_ttft_parts t = {NAN, NAN, NAN, NAN};
    if (isnan(r->ttft))
        return t;
    t.queue = isnan(r->queue) ? 0 : r->queue;
    int i = sa_req_info(p, r);
    int src = -1;
    if (i >= 0) {
        const sa_ridinfo *x = &p->rinfo[i];
        /* The first step that ran it: execution, else schedule, else forward. */
        src = x->first_start[SA_SRC_EXEC] ? SA_SRC_EXEC : x->first_start[SA_SRC_BATCH] ? SA_SRC_BATCH
                                                          : x->first_start[SA_SRC_FORWARD] ? SA_SRC_FORWARD : -1;
        if (src >= 0) {
            /* Prefill ends with the last of its first steps that ended by the
             * first token (50 us of slack for clocks read in another order). */
            int64_t first_tok = r->start_ns + (int64_t)llround(r->ttft * 1e6);
            int64_t end = x->ends[src][0];
            for (int k = 1; k < x->nends[src]; k++)
                if (x->ends[src][k] <= first_tok + 50000)
                    end = x->ends[src][k];
            if (end > first_tok)
                end = first_tok > x->first_start[src] ? first_tok : x->first_start[src];
            t.prefill = (double)(end - x->first_start[src]) / 1e6;
            double fdw = (double)(first_tok - end) / 1e6;
            t.first_decode_wait = fdw > 0 ? fdw : 0;
        }
    }
    double rest = r->ttft - t.queue - (src >= 0 ? t.prefill + t.first_decode_wait : 0);
    if (rest < 0) {
        /* Rounding or a step that began before the first token's clock: keep
         * the parts summing to TTFT by trimming the wait, then the queue. */
        if (src >= 0) {
            double cut = fmin(-rest, t.first_decode_wait);
            t.first_decode_wait -= cut;
            rest += cut;
        }
        if (rest < 0) {
            t.queue = fmax(0, t.queue + rest);
            rest = 0;
        }
    }
    t.schedule = rest;
    return t;
}
