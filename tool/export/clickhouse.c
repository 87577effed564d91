/* SPDX-License-Identifier: Apache-2.0 */
/*
 * clickhouse.c — the clickhouse:// exporter: the parse's records and report
 * rows into ClickHouse tables, over HTTP, in RowBinary (docs/fleet.md).
 *
 * Schema. `span`: one row per record (times as UInt64 ns, the hot
 * attributes as columns, every request id of the record flattened into
 * the `rids` array, args kept verbatim); `link`: one row per Link record;
 * one table per parse report (request, batch, forward, kvcache, ...), the
 * report's own columns with (export_id, seq) in front; `data_quality`: the
 * parse's data-quality counts, one row per export. With --cluster the
 * rows go to `X_local` tables on every node and a Distributed table `X`
 * over the cluster reads them all; without, `X` is a MergeTree.
 *
 * Where rows go. The exporter shards client-side: every row of one store
 * goes to one node (FNV-1a of the store id), every row of one report table
 * to one node, each INSERT straight into that node's local table. So an
 * INSERT touches one server and is all-or-nothing there (a block under
 * max_insert_block_size is one part), and a shard that is down fails the
 * export there and then, instead of queueing in a Distributed table.
 *
 * Idempotence and resume, without a marker table or engine dedup. Each
 * row carries its position in its own stream: `seq`, the record's index
 * within its store (span, link) or the row's index within its report
 * (tables keyed by export_id). The parse is exact, so these streams are
 * the same on every run of the same input; each node receives each stream
 * in order, block after block; so whatever an earlier run left on a node
 * is a prefix of the stream. Before its first row, a stream asks its node
 * `count(), max(seq)` and skips that many rows: a second export sends
 * nothing, a failed one resumes where it stopped, an INSERT that landed
 * but whose answer was lost is not sent twice. count must equal max+1
 * (else two exports ran at once: refused, named). Measured against
 * ReplacingMergeTree + FINAL in docs/fleet.md: no FINAL on every query.
 *
 * Identity. A store is "HOST:PROF_ID:FIRST_TS" (its host, file stem and
 * first timestamp: two runs with the same pid in a container differ); an
 * export (the report rows) is an FNV-1a of its stores' file names and the
 * session, so the same stores from another folder are the same export.
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "argdecode.h"
#include "chhttp.h"
#include "discover.h"
#include "export.h"
#include "rowbin.h"
#include "sessions.h"

#define MAX_NODES 64
#define FLUSH_BYTES (64u << 20)
/* ClickHouse makes one part of an INSERT up to max_insert_block_size rows
 * (1048576 by default): a block beyond it would not be all-or-nothing. */
#define MAX_BLOCK_ROWS 1000000L

enum { T_SPAN = 0, T_LINK, T_FIXED };
enum { K_I64 = 1, K_F64, K_STR };

typedef struct stream {      /* one store's rows of one table, or one report's */
    char *key;               /* store id or export id */
    int node;
    long long seq;           /* next row's position */
    long long skip;          /* rows already on the node: seq < skip are not sent */
    int ready;               /* its skip is known */
} stream;

typedef struct ctab {   /* a table: its blocks being filled, one per node */
    char *name;              /* ClickHouse table name (without _local) */
    const prs_table *src;    /* report tables: the parse's table */
    char *key;               /* report tables: its key when first seen (owned) */
    int ncols;
    int *kind;               /* report tables: K_* per column */
    rb_buf buf[MAX_NODES];
    long long buf_rows[MAX_NODES];
    long long sent, skipped;
    stream report;           /* report tables: the one stream */
    int created;
} ctab;

/* One block handed to the sender thread. */
typedef struct job {
    struct ctab *t;
    int node;
    rb_buf buf;
    long long rows;
} job;
#define QCAP 2 /* blocks queued behind the one in flight: the parse runs ahead by this much */
#define POOL 4

typedef struct chx {
    const exp_opts *o;
    ch_conn node[MAX_NODES]; /* queries: the parse's thread only */
    ch_conn ins[MAX_NODES];  /* INSERTs: the sender thread only (after open) */
    /* The sender: one thread sends the blocks in the order they were made
     * (FIFO), so each node gets each stream in order while the parse goes
     * on encoding the next blocks. mu guards q, qn, stop, pool, and the
     * writes of failed/err; the parse's thread reads failed atomically. */
    pthread_mutex_t mu;
    pthread_cond_t cv;
    pthread_t th;
    int th_on;
    job q[QCAP];
    int qhead, qn, busy, stop;
    rb_buf pool[POOL];
    int npool;
    int nnodes;
    char db[128];
    char cluster[128];
    int prefer;              /* --prefer: the node every row goes to, -1 none (rows spread by hash) */
    char export_id[17];
    char session[256];
    long block_rows;
    ctab fixed[T_FIXED];
    ctab **rep;              /* report tables, by first sight */
    int nrep;
    stream *st_span, *st_link; /* by store index */
    int nstores;
    int failed;
    char err[1200];
    char *scratch;           /* unescaped strings */
    size_t scap;
    long long converted;     /* report values that had to change type */
    int q_known;             /* the parse's data-quality counts came (ch_quality) */
    long long q_dup, q_empty;
    char q_example[320];
    struct timespec t0;
} chx;

static uint64_t fnv(const void *p, size_t n, uint64_t h)
{
    const unsigned char *s = p;
    for (size_t i = 0; i < n; i++) {
        h ^= s[i];
        h *= 1099511628211ULL;
    }
    return h;
}
#define FNV0 14695981039346656037ULL

static void fail(chx *x, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void fail(chx *x, const char *fmt, ...)
{
    pthread_mutex_lock(&x->mu);
    if (!x->failed) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(x->err, sizeof x->err, fmt, ap);
        va_end(ap);
        __atomic_store_n(&x->failed, 1, __ATOMIC_RELEASE);
    }
    pthread_cond_broadcast(&x->cv);
    pthread_mutex_unlock(&x->mu);
}

static int failed(chx *x) { return __atomic_load_n(&x->failed, __ATOMIC_ACQUIRE); }

/* ---- URL, password, nodes ------------------------------------------------ */

typedef struct churl {
    char user[128], password[256], host[256], db[128];
    int port, has_password;
} churl;

static int parse_url(const char *url, churl *u, char *err, size_t cap)
{
    memset(u, 0, sizeof *u);
    u->port = 8123;
    snprintf(u->db, sizeof u->db, "servprof");
    const char *s = strstr(url, "://");
    if (!s) {
        snprintf(err, cap, "%s: expected clickhouse://HOST:PORT[/DATABASE]", url);
        return -1;
    }
    s += 3;
    const char *slash = strchr(s, '/');
    const char *end = slash ? slash : s + strlen(s);
    const char *at = memchr(s, '@', (size_t)(end - s));
    if (at) {
        const char *colon = memchr(s, ':', (size_t)(at - s));
        size_t ul = (size_t)((colon ? colon : at) - s);
        snprintf(u->user, sizeof u->user, "%.*s", (int)ul, s);
        if (colon) {
            snprintf(u->password, sizeof u->password, "%.*s", (int)(at - colon - 1), colon + 1);
            u->has_password = 1;
        }
        s = at + 1;
    }
    const char *colon = memchr(s, ':', (size_t)(end - s));
    size_t hl = (size_t)((colon ? colon : end) - s);
    if (hl == 0 || hl >= sizeof u->host) {
        snprintf(err, cap, "%s: no host (expected clickhouse://HOST:PORT[/DATABASE])", url);
        return -1;
    }
    snprintf(u->host, sizeof u->host, "%.*s", (int)hl, s);
    if (colon) {
        char *e;
        long p = strtol(colon + 1, &e, 10);
        if (e != end || p <= 0 || p > 65535) {
            snprintf(err, cap, "%s: port '%.*s' is not a number from 1 to 65535", url, (int)(end - colon - 1),
                     colon + 1);
            return -1;
        }
        u->port = (int)p;
    }
    if (slash && slash[1]) {
        size_t dl = strlen(slash + 1);
        if (slash[dl] == '/')
            dl--;
        for (size_t i = 0; i < dl; i++) {
            char c = slash[1 + i];
            if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_')) {
                snprintf(err, cap, "%s: database name '%s': letters, digits and '_' only", url, slash + 1);
                return -1;
            }
        }
        snprintf(u->db, sizeof u->db, "%.*s", (int)dl, slash + 1);
    }
    return 0;
}

/* The password: SERVPROF_CLICKHOUSE_PASSWORD, --password-file, the URL (warned). */
static int password_of(const exp_opts *o, churl *u, char *err, size_t cap)
{
    const char *env = getenv("SERVPROF_CLICKHOUSE_PASSWORD");
    const char *envu = getenv("SERVPROF_CLICKHOUSE_USER");
    if (!u->user[0])
        snprintf(u->user, sizeof u->user, "%s", envu && *envu ? envu : "default");
    if (o->password_file) {
        FILE *f = fopen(o->password_file, "r");
        if (!f) {
            snprintf(err, cap, "--password-file %s: %s", o->password_file, strerror(errno));
            return -1;
        }
        if (!fgets(u->password, sizeof u->password, f))
            u->password[0] = 0;
        fclose(f);
        u->password[strcspn(u->password, "\r\n")] = 0;
    } else if (env)
        snprintf(u->password, sizeof u->password, "%s", env);
    else if (u->has_password)
        fprintf(stderr, "servprof export: warning: the password is in the URL, where the process list "
                        "shows it; use SERVPROF_CLICKHOUSE_PASSWORD or --password-file FILE\n");
    return 0;
}

static int add_node(chx *x, const churl *u, const char *host, int port, char *err, size_t cap)
{
    if (x->nnodes == MAX_NODES) {
        snprintf(err, cap, "more than %d nodes", MAX_NODES);
        return -1;
    }
    if (ch_conn_init(&x->node[x->nnodes], host, port, u->user, u->password, x->o->compress) != 0 ||
        ch_conn_init(&x->ins[x->nnodes], host, port, u->user, u->password, x->o->compress) != 0) {
        snprintf(err, cap, "libcurl could not start");
        return -1;
    }
    x->nnodes++;
    return 0;
}

/* Every node of --cluster: --nodes, else system.clusters at the URL's HTTP port. */
static int cluster_nodes(chx *x, const churl *u, char *err, size_t cap)
{
    if (x->o->nodes) {
        /* the listed nodes replace the entry node: it is one of them */
        ch_conn_close(&x->node[0]);
        ch_conn_close(&x->ins[0]);
        x->nnodes = 0;
        const char *s = x->o->nodes;
        while (*s) {
            size_t n = strcspn(s, ",");
            char one[512];
            snprintf(one, sizeof one, "%.*s", (int)n, s);
            churl v;
            if (parse_url(one, &v, err, cap) != 0 || add_node(x, u, v.host, v.port, err, cap) != 0)
                return -1;
            s += n + (s[n] == ',');
        }
        return 0;
    }
    char q[512], lit[300];
    ch_quote(x->cluster, lit, sizeof lit);
    snprintf(q, sizeof q,
             "SELECT host_address FROM system.clusters WHERE cluster = %s AND replica_num = 1 "
             "ORDER BY shard_num FORMAT TabSeparated", lit);
    if (ch_query(&x->node[0], q, err, cap) != 0)
        return -1;
    char *list = strdup(x->node[0].resp);
    ch_conn entry = x->node[0];
    memset(&x->node[0], 0, sizeof x->node[0]);
    ch_conn_close(&x->ins[0]);
    x->nnodes = 0;
    int rc = 0;
    int port = atoi(strrchr(entry.base, ':') + 1);
    for (char *line = strtok(list, "\n"); line && rc == 0; line = strtok(NULL, "\n"))
        rc = add_node(x, u, line, port, err, cap);
    free(list);
    ch_conn_close(&entry);
    if (rc == 0 && x->nnodes == 0) {
        snprintf(err, cap, "cluster '%s' is not in the server's remote_servers (system.clusters)", x->cluster);
        return -1;
    }
    return rc;
}

/* ---- tables ---------------------------------------------------------------- */

static const char *const span_cols =
    "store String, seq UInt64, host String, prof_id String, pid Int64, tid Int64, thread String, "
    "ts UInt64, dur UInt64, end UInt64, name String, domain String, rid String, rids Array(String), "
    "iters Array(Int32), batch_type String, batch_size Nullable(Float64), queue_name String, "
    "queue_size Nullable(Float64), status String, args String";
static const char *const link_cols =
    "store String, seq UInt64, ts UInt64, from_rid String, to_rid String";
static const char *const exports_cols =
    "export_id String, session String, input String, stores UInt64, records UInt64, t DateTime, "
    "store_ids Array(String)";
/* The parse's data-quality counts, one row per export, under analyze's own key names. */
static const char *const quality_cols =
    "export_id String, duplicate_ids UInt64, duplicate_example String, figures_left_empty UInt64";

/* A query (DDL) on every node; 0 or -1 (failed, named). "Already exists"
 * counts as done: two exports creating at once race between the IF NOT
 * EXISTS check and the create, and older servers then answer 57 / 82. */
static int on_all(chx *x, const char *sql)
{
    char err[1024];
    for (int i = 0; i < x->nnodes; i++)
        if (ch_query(&x->node[i], sql, err, sizeof err) != 0 && x->node[i].server_code != 57 &&
            x->node[i].server_code != 82) {
            fail(x, "%s", err);
            return -1;
        }
    return 0;
}

/* CREATE the table `name` (columns cols, key order) where it is missing. */
static int create_table(chx *x, const char *name, const char *cols, const char *order, const char *engine)
{
    char *sql = malloc(strlen(cols) + 1024);
    char db[140], loc[300], dist[300];
    ch_ident(x->db, db, sizeof db);
    char lname[300];
    snprintf(lname, sizeof lname, "%s%s", name, x->cluster[0] ? "_local" : "");
    ch_ident(lname, loc, sizeof loc);
    ch_ident(name, dist, sizeof dist);
    sprintf(sql, "CREATE TABLE IF NOT EXISTS %s.%s (%s) ENGINE = %s() ORDER BY (%s)", db, loc, cols, engine,
            order);
    int rc = on_all(x, sql);
    if (rc == 0 && x->cluster[0]) {
        char cl[300], dbl[300], ll[300];
        ch_quote(x->cluster, cl, sizeof cl);
        ch_quote(x->db, dbl, sizeof dbl);
        ch_quote(lname, ll, sizeof ll);
        sprintf(sql, "CREATE TABLE IF NOT EXISTS %s.%s AS %s.%s ENGINE = Distributed(%s, %s, %s, rand())", db,
                dist, db, loc, cl, dbl, ll);
        rc = on_all(x, sql);
    }
    free(sql);
    return rc;
}

static void local_name(const chx *x, const char *name, char *out, size_t cap)
{
    char db[140], t[260], l[300];
    ch_ident(x->db, db, sizeof db);
    snprintf(t, sizeof t, "%s%s", name, x->cluster[0] ? "_local" : "");
    ch_ident(t, l, sizeof l);
    snprintf(out, cap, "%s.%s", db, l);
}

/* The table that holds all of name's rows: the Distributed one on a
 * cluster (every shard), else the MergeTree itself. */
static void whole_name(const chx *x, const char *name, char *out, size_t cap)
{
    if (!x->cluster[0]) {
        local_name(x, name, out, cap);
        return;
    }
    char db[140], tb[300];
    ch_ident(x->db, db, sizeof db);
    ch_ident(name, tb, sizeof tb);
    snprintf(out, cap, "%s.%s", db, tb);
}

/* ---- streams: resume ------------------------------------------------------- */

/* Asks what an earlier run left of the stream: sets skip. On a cluster the
 * question goes to the Distributed table, so the count covers every shard:
 * an earlier run may have sent the stream to another node (another
 * --prefer, or none), and the rows are still counted once. The table is
 * ordered by (store, seq) / (export_id, seq), so each shard answers from
 * its index. */
static void stream_ready(chx *x, ctab *t, stream *s, const char *keycol)
{
    s->ready = 1;
    if (failed(x))
        return;
    char tn[460], lit[1200], sql[2048], err[1024];
    whole_name(x, t->name, tn, sizeof tn);
    ch_quote(s->key, lit, sizeof lit);
    snprintf(sql, sizeof sql, "SELECT count(), max(seq) FROM %s WHERE %s = %s FORMAT TabSeparated", tn, keycol, lit);
    if (ch_query(&x->node[s->node], sql, err, sizeof err) != 0) {
        fail(x, "%s", err);
        return;
    }
    long long n = 0, mx = 0;
    if (sscanf(x->node[s->node].resp, "%lld\t%lld", &n, &mx) != 2) {
        fail(x, "%s: unexpected answer to the resume query: %.80s", x->node[s->node].label, x->node[s->node].resp);
        return;
    }
    if (n > 0 && mx + 1 != n) {
        fail(x, "%s: table %s holds %lld rows of %s '%s' but their seq reaches %lld: not one run's prefix "
                "(did two exports of it run at once?); delete them "
                "(ALTER TABLE ... DELETE WHERE %s = ...) and export again",
             x->node[s->node].label, t->name, n, keycol, s->key, mx, keycol);
        return;
    }
    s->skip = n;
    t->skipped += n;
}

/* ---- blocks ------------------------------------------------------------------ */

static void *sender(void *arg)
{
    chx *x = arg;
    pthread_mutex_lock(&x->mu);
    for (;;) {
        while (x->qn == 0 && !x->stop)
            pthread_cond_wait(&x->cv, &x->mu);
        if (x->qn == 0)
            break;
        job j = x->q[x->qhead];
        x->qhead = (x->qhead + 1) % QCAP;
        x->qn--;
        x->busy = 1;
        pthread_cond_broadcast(&x->cv);
        pthread_mutex_unlock(&x->mu);
        if (!failed(x)) {
            char tn[460], q[800], err[1024];
            local_name(x, j.t->name, tn, sizeof tn);
            snprintf(q, sizeof q, "INSERT INTO %s FORMAT RowBinary", tn);
            if (ch_insert(&x->ins[j.node], q, j.buf.p, j.buf.n, err, sizeof err) != 0)
                fail(x, "%s", err);
            else
                j.t->sent += j.rows; /* the sender's alone until it is joined */
        }
        pthread_mutex_lock(&x->mu);
        x->busy = 0;
        j.buf.n = 0;
        if (x->npool < POOL)
            x->pool[x->npool++] = j.buf;
        else
            free(j.buf.p);
        pthread_cond_broadcast(&x->cv);
    }
    pthread_mutex_unlock(&x->mu);
    return NULL;
}

/* Hands t's block for node to the sender (waiting while QCAP are queued). */
static void flush(chx *x, ctab *t, int node)
{
    rb_buf *b = &t->buf[node];
    if (t->buf_rows[node] == 0 || failed(x)) {
        b->n = 0;
        t->buf_rows[node] = 0;
        return;
    }
    if (b->oom) {
        fail(x, "out of memory encoding a block of %s", t->name);
        return;
    }
    pthread_mutex_lock(&x->mu);
    while (x->qn == QCAP && !x->failed)
        pthread_cond_wait(&x->cv, &x->mu);
    if (!x->failed) {
        job *j = &x->q[(x->qhead + x->qn) % QCAP];
        j->t = t;
        j->node = node;
        j->buf = *b;
        j->rows = t->buf_rows[node];
        x->qn++;
        memset(b, 0, sizeof *b);
        if (x->npool)
            *b = x->pool[--x->npool];
        pthread_cond_broadcast(&x->cv);
    } else
        b->n = 0;
    pthread_mutex_unlock(&x->mu);
    t->buf_rows[node] = 0;
}

/* Waits until every block handed over is sent (or the export failed), and ends the sender. */
static void sender_stop(chx *x)
{
    if (!x->th_on)
        return;
    pthread_mutex_lock(&x->mu);
    x->stop = 1;
    pthread_cond_broadcast(&x->cv);
    pthread_mutex_unlock(&x->mu);
    pthread_join(x->th, NULL);
    x->th_on = 0;
}

static void row_done(chx *x, ctab *t, int node)
{
    if (++t->buf_rows[node] >= x->block_rows || t->buf[node].n >= FLUSH_BYTES)
        flush(x, t, node);
}

/* s as a C string, unescaped (valid until the next call). */
static const char *unesc(chx *x, prs_str s, size_t *len)
{
    if (!s.p) {
        *len = 0;
        return "";
    }
    if (!s.esc) {
        *len = (size_t)s.n;
        return s.p;
    }
    if ((size_t)s.n + 1 > x->scap) {
        x->scap = (size_t)s.n + 1 + 256;
        x->scratch = realloc(x->scratch, x->scap);
    }
    *len = (size_t)prs_str_copy(s, x->scratch, (int)x->scap);
    return x->scratch;
}

static void put_pstr(chx *x, rb_buf *b, prs_str s)
{
    size_t n;
    const char *p = unesc(x, s, &n);
    rb_str(b, p, n);
}

static void put_nf64(rb_buf *b, double v)
{
    if (isnan(v))
        rb_u8(b, 1);
    else {
        rb_u8(b, 0);
        rb_f64(b, v);
    }
}

/* ---- the tap ------------------------------------------------------------------ */

static stream *store_stream(chx *x, stream **arr, const prs_rec *r, ctab *t)
{
    int i = r->store->index;
    if (i >= x->nstores) {
        int n = i + 16;
        x->st_span = realloc(x->st_span, (size_t)n * sizeof *x->st_span);
        x->st_link = realloc(x->st_link, (size_t)n * sizeof *x->st_link);
        memset(x->st_span + x->nstores, 0, (size_t)(n - x->nstores) * sizeof *x->st_span);
        memset(x->st_link + x->nstores, 0, (size_t)(n - x->nstores) * sizeof *x->st_link);
        x->nstores = n;
    }
    stream *s = &(*arr)[i];
    if (!s->key) {
        /* The first record of a store is its earliest: part of its identity,
         * on the host's own clock (r->ts has the clock offset applied), so the
         * store keeps its id whatever offsets an export gives its host. */
        char id[1024];
        snprintf(id, sizeof id, "%s:%s:%" PRId64, r->store->hostname, r->store->prof_id,
                 r->ts - r->store->clock_shift);
        x->st_span[i].key = strdup(id);
        x->st_link[i].key = strdup(id);
        x->st_span[i].node = x->st_link[i].node =
            x->prefer >= 0 ? x->prefer : (int)(fnv(id, strlen(id), FNV0) % (uint64_t)x->nnodes);
    }
    if (!s->ready)
        stream_ready(x, t, s, "store");
    return s;
}

static void ch_record(void *mv, const prs_rec *r)
{
    chx *x = mv;
    if (failed(x))
        return;
    ctab *t = &x->fixed[T_SPAN];
    stream *s = store_stream(x, &x->st_span, r, t);
    long long seq = s->seq++;
    prs_args a;
    prs_args_init(&a);
    prs_args_decode(&a, r->args, r->args_len);
    if (seq >= s->skip && !failed(x)) {
        rb_buf *b = &t->buf[s->node];
        rb_cstr(b, s->key);
        rb_u64(b, (uint64_t)seq);
        rb_cstr(b, r->store->hostname);
        rb_cstr(b, r->store->prof_id);
        rb_i64(b, r->pid);
        rb_i64(b, r->tid);
        rb_cstr(b, prs_store_thread_name(r->store, r->tid));
        rb_u64(b, (uint64_t)r->ts);
        rb_u64(b, (uint64_t)r->dur);
        rb_u64(b, (uint64_t)(r->ts + r->dur));
        rb_cstr(b, r->name);
        rb_cstr(b, r->cat);
        if (a.rid_kind == 1)
            put_pstr(x, b, a.rid);
        else
            rb_str(b, "", 0);
        int nr = a.rid_kind == 1 ? 1 : a.rid_kind == 2 ? a.nrids : 0;
        rb_varint(b, (uint64_t)nr);
        for (int k = 0; k < nr; k++)
            put_pstr(x, b, a.rid_kind == 1 ? a.rid : a.rids[k].rid);
        rb_varint(b, (uint64_t)nr);
        for (int k = 0; k < nr; k++)
            rb_i32(b, a.rid_kind == 2 ? a.rids[k].iter : -1);
        put_pstr(x, b, a.batch_type);
        put_nf64(b, a.batch_size);
        put_pstr(x, b, a.queue_name);
        put_nf64(b, a.queue_size);
        put_pstr(x, b, a.status);
        rb_str(b, r->args, (size_t)r->args_len);
        row_done(x, t, s->node);
    }
    if (!strcmp(r->name, "Link") && a.from.p && a.to.p && !failed(x)) {
        ctab *lt = &x->fixed[T_LINK];
        stream *ls = store_stream(x, &x->st_link, r, lt);
        long long lseq = ls->seq++;
        if (lseq >= ls->skip && !failed(x)) {
            rb_buf *b = &lt->buf[ls->node];
            rb_cstr(b, ls->key);
            rb_u64(b, (uint64_t)lseq);
            rb_u64(b, (uint64_t)r->ts);
            put_pstr(x, b, a.from);
            put_pstr(x, b, a.to);
            row_done(x, lt, ls->node);
        }
    }
    prs_args_free(&a);
}

/* A report's key ("request", "span_info/forward.csv") as a table name. */
static void table_name(const char *key, char *out, size_t cap)
{
    size_t k = 0;
    for (const char *s = key; *s && k + 1 < cap; s++) {
        if (!strcmp(s, ".csv"))
            break;
        char c = *s;
        out[k++] = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ? c : '_';
    }
    out[k] = 0;
}

static int kind_of(const char *sqltype)
{
    if (!strncmp(sqltype, "INTEGER", 7))
        return K_I64;
    if (!strncmp(sqltype, "REAL", 4))
        return K_F64;
    return K_STR;
}

static ctab *report_table(chx *x, const prs_table *src)
{
    /* by pointer and key: the MoE reports (moeset.c) fill one prs_table
     * for moe_rank, expert_load and eplb_balance in turn */
    for (int i = 0; i < x->nrep; i++)
        if (x->rep[i]->src == src && !strcmp(x->rep[i]->key, src->key))
            return x->rep[i];
    ctab *t = calloc(1, sizeof *t);
    t->key = strdup(src->key);
    char name[256];
    table_name(src->key, name, sizeof name);
    t->name = strdup(name);
    t->src = src;
    t->ncols = src->ncols;
    t->kind = calloc((size_t)src->ncols + 1, sizeof *t->kind);
    x->rep = realloc(x->rep, (size_t)(x->nrep + 1) * sizeof *x->rep);
    x->rep[x->nrep++] = t;
    size_t cap = 256 + (size_t)src->ncols * 300;
    char *cols = malloc(cap);
    size_t n = (size_t)snprintf(cols, cap, "export_id String, seq UInt64");
    for (int i = 0; i < src->ncols; i++) {
        char id[300];
        ch_ident(src->cols[i].name, id, sizeof id);
        t->kind[i] = kind_of(src->cols[i].sqltype);
        n += (size_t)snprintf(cols + n, cap - n, ", %s Nullable(%s)", id,
                              t->kind[i] == K_I64 ? "Int64" : t->kind[i] == K_F64 ? "Float64" : "String");
    }
    if (x->o->create)
        create_table(x, t->name, cols, "export_id, seq", "MergeTree");
    free(cols);
    t->report.key = strdup(x->export_id);
    t->report.node = x->prefer >= 0 ? x->prefer
                                    : (int)(fnv(name, strlen(name), fnv(x->export_id, 16, FNV0)) % (uint64_t)x->nnodes);
    stream_ready(x, t, &t->report, "export_id");
    return t;
}

static void put_val(chx *x, rb_buf *b, int kind, const prs_val *v)
{
    char num[64];
    if (v->kind == PRS_NULL) {
        rb_u8(b, 1);
        return;
    }
    if (kind != K_STR && v->kind == PRS_TEXT && v->n == 3 && !memcmp(v->s, "N/A", 3)) {
        rb_u8(b, 1); /* the reports' "no value" in a number column (request.cache_hit_rate) */
        return;
    }
    if (kind == K_STR) {
        rb_u8(b, 0);
        if (v->kind == PRS_TEXT)
            rb_str(b, v->s, (size_t)v->n);
        else {
            int n = v->kind == PRS_INT ? snprintf(num, sizeof num, "%lld", v->i)
                                       : snprintf(num, sizeof num, "%.17g", v->d);
            rb_str(b, num, (size_t)n);
            x->converted++;
        }
        return;
    }
    if (kind == K_I64) {
        if (v->kind == PRS_INT) {
            rb_u8(b, 0);
            rb_i64(b, v->i);
        } else if (v->kind != PRS_TEXT && v->d == floor(v->d) && fabs(v->d) < 9.2e18) {
            rb_u8(b, 0);
            rb_i64(b, (int64_t)v->d);
            x->converted++;
        } else {
            rb_u8(b, 1);
            x->converted++;
        }
        return;
    }
    /* K_F64 */
    if (v->kind == PRS_INT) {
        rb_u8(b, 0);
        rb_f64(b, (double)v->i);
    } else if (v->kind == PRS_REAL || v->kind == PRS_MS) {
        rb_u8(b, 0);
        rb_f64(b, v->d);
    } else {
        char *e;
        char tmp[64];
        snprintf(tmp, sizeof tmp, "%.*s", v->n < 63 ? v->n : 63, v->s);
        double d = strtod(tmp, &e);
        if (*tmp && !*e) {
            rb_u8(b, 0);
            rb_f64(b, d);
        } else
            rb_u8(b, 1);
        x->converted++;
    }
}

static void ch_row(void *mv, const prs_table *src, const prs_val *vals)
{
    chx *x = mv;
    if (failed(x) || !src->key)
        return;
    ctab *t = report_table(x, src);
    if (failed(x))
        return;
    stream *s = &t->report;
    long long seq = s->seq++;
    if (seq < s->skip)
        return;
    rb_buf *b = &t->buf[s->node];
    rb_cstr(b, s->key);
    rb_u64(b, (uint64_t)seq);
    for (int i = 0; i < t->ncols; i++)
        put_val(x, b, t->kind[i], &vals[i]);
    row_done(x, t, s->node);
}

/* ---- open / finish ------------------------------------------------------------ */

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

/* The export's id: its stores' file names and the session (see the header). */
static int export_identity(chx *x, char *err, size_t cap)
{
    prs_paths p = {0};
    if (prs_discover(x->o->input, &p) != 0) {
        snprintf(err, cap, "%s: cannot be read", x->o->input);
        return -1;
    }
    if (x->o->session) {
        /* only that session's stores make the export (the parse reads just those) */
        prs_sessions ss = {0};
        int rc = prs_sessions_find(&p, x->o->input, x->o->session, &ss);
        prs_sessions_free(&ss);
        if (rc != 0) {
            prs_paths_free(&p);
            snprintf(err, cap, "%s: no session '%s' there (see the message above)", x->o->input, x->o->session);
            return -1;
        }
    }
    char **names = malloc(((size_t)p.nraw + 1) * sizeof *names);
    for (int i = 0; i < p.nraw; i++) {
        const char *b = strrchr(p.raw[i], '/');
        names[i] = b ? (char *)b + 1 : p.raw[i];
    }
    qsort(names, (size_t)p.nraw, sizeof *names, cmp_str);
    uint64_t h = FNV0;
    for (int i = 0; i < p.nraw; i++)
        h = fnv(names[i], strlen(names[i]) + 1, h);
    h = fnv(x->session, strlen(x->session) + 1, h);
    snprintf(x->export_id, sizeof x->export_id, "%016" PRIx64, h);
    free(names);
    int n = p.nraw;
    prs_paths_free(&p);
    if (n == 0) {
        snprintf(err, cap, "%s: no raw store (ms_service_*.db) there", x->o->input);
        return -1;
    }
    return 0;
}

/* --prefer N (1-based) or a node's URL (clickhouse://HOST:PORT): its index
 * in x->prefer, or -1 with a message listing the nodes. */
static int prefer_node(chx *x, const char *v, char *err, size_t cap)
{
    char *end;
    long n = strtol(v, &end, 10);
    if (!*end && n >= 1 && n <= x->nnodes) {
        x->prefer = (int)n - 1;
        return 0;
    }
    churl u;
    char e2[256];
    if (*end && parse_url(v, &u, e2, sizeof e2) == 0) {
        char want[300];
        snprintf(want, sizeof want, "clickhouse://%s:%d", u.host, u.port);
        for (int i = 0; i < x->nnodes; i++)
            if (!strcmp(x->node[i].label, want)) {
                x->prefer = i;
                return 0;
            }
    }
    size_t k = (size_t)snprintf(err, cap, "--prefer %s: not a node of cluster '%s' (1 to %d, or one of:", v,
                                x->cluster, x->nnodes);
    for (int i = 0; i < x->nnodes && k < cap; i++)
        k += (size_t)snprintf(err + k, cap - k, " %s", x->node[i].label);
    if (k < cap)
        snprintf(err + k, cap - k, ")");
    return -1;
}

static void *ch_open(const exp_opts *o, char *err, size_t cap)
{
    churl u;
    if (parse_url(o->url, &u, err, cap) != 0)
        return NULL;
    if (password_of(o, &u, err, cap) != 0)
        return NULL;
    chx *x = calloc(1, sizeof *x);
    x->o = o;
    pthread_mutex_init(&x->mu, NULL);
    pthread_cond_init(&x->cv, NULL);
    clock_gettime(CLOCK_MONOTONIC, &x->t0);
    snprintf(x->db, sizeof x->db, "%s", u.db);
    snprintf(x->cluster, sizeof x->cluster, "%s", o->cluster ? o->cluster : "");
    snprintf(x->session, sizeof x->session, "%s", o->session ? o->session : "");
    x->block_rows = o->block_rows > 0 ? o->block_rows : 200000;
    if (x->block_rows > MAX_BLOCK_ROWS)
        x->block_rows = MAX_BLOCK_ROWS;
    x->fixed[T_SPAN].name = strdup("span");
    x->fixed[T_LINK].name = strdup("link");
    if (export_identity(x, err, cap) != 0 || add_node(x, &u, u.host, u.port, err, cap) != 0 ||
        ch_ping(&x->node[0], err, cap) != 0 || ch_query(&x->node[0], "SELECT version()", err, cap) != 0)
        goto bad;
    if (x->cluster[0] && cluster_nodes(x, &u, err, cap) != 0)
        goto bad;
    x->prefer = -1;
    if (o->prefer && prefer_node(x, o->prefer, err, cap) != 0)
        goto bad;
    for (int i = 1; i < x->nnodes; i++)
        if (ch_ping(&x->node[i], err, cap) != 0)
            goto bad;
    if (o->create) {
        char sql[300], db[140];
        ch_ident(x->db, db, sizeof db);
        snprintf(sql, sizeof sql, "CREATE DATABASE IF NOT EXISTS %s", db);
        if (on_all(x, sql) != 0 || create_table(x, "span", span_cols, "store, seq", "MergeTree") != 0 ||
            create_table(x, "link", link_cols, "store, seq", "MergeTree") != 0 ||
            create_table(x, "exports", exports_cols, "export_id", "ReplacingMergeTree") != 0 ||
            create_table(x, "data_quality", quality_cols, "export_id", "ReplacingMergeTree") != 0) {
            snprintf(err, cap, "%s", x->err);
            goto bad;
        }
    }
    if (pthread_create(&x->th, NULL, sender, x) != 0) {
        snprintf(err, cap, "cannot start the sender thread");
        goto bad;
    }
    x->th_on = 1;
    return x;
bad:
    for (int i = 0; i < x->nnodes; i++) {
        ch_conn_close(&x->node[i]);
        ch_conn_close(&x->ins[i]);
    }
    pthread_mutex_destroy(&x->mu);
    pthread_cond_destroy(&x->cv);
    free(x->fixed[T_SPAN].name);
    free(x->fixed[T_LINK].name);
    free(x);
    return NULL;
}

static void flush_all(chx *x, ctab *t)
{
    for (int i = 0; i < x->nnodes; i++)
        flush(x, t, i);
}

static void ch_quality(void *mv, const prs_quality *q)
{
    chx *x = mv;
    x->q_known = 1;
    x->q_dup = q->dup_ids;
    x->q_empty = q->empty_figures;
    snprintf(x->q_example, sizeof x->q_example, "%s", q->dup_example ? q->dup_example : "");
}

/* A Distributed insert refused because a shard is unreachable names the
 * coordinator only (code 279 "All connection tries failed", or code 32
 * "Attempt to read after eof" when the shard dies mid-packet), whichever
 * shard is down: after any failure with several nodes, ask every node and
 * name those that do not answer, so the message says what to bring back. */
static void name_down_shards(chx *x)
{
    if (x->nnodes < 2)
        return;
    for (int i = 0; i < x->nnodes; i++) {
        char err[1024];
        if (ch_ping(&x->node[i], err, sizeof err) != 0)
            fprintf(stderr, "servprof export: %s does not answer: it is the shard that is down\n",
                    x->node[i].label);
    }
}

/* The export's data-quality row, once: like a stream of one row, it is
 * sent only when no earlier run of the same export left it (the question
 * goes to the Distributed table, as stream_ready's), so a repeated or
 * resumed export does not store it twice; two exports at once might, and
 * analyze reads any() per export_id, so even then nothing is doubled.
 * Sent before the exports row: an export listed there has its counts. */
static void put_quality(chx *x)
{
    if (!x->q_known || failed(x))
        return;
    char tn[460], id[40], ex[700], sql[2048], err[1024];
    whole_name(x, "data_quality", tn, sizeof tn);
    ch_quote(x->export_id, id, sizeof id);
    snprintf(sql, sizeof sql, "SELECT count() FROM %s WHERE export_id = %s FORMAT TabSeparated", tn, id);
    if (ch_query(&x->node[0], sql, err, sizeof err) != 0) {
        if (x->node[0].server_code == 60) { /* a database made by an older servprof, without --create now */
            fprintf(stderr, "servprof export: note: database %s has no data_quality table (made by an older "
                            "servprof): the parse's data-quality counts are not stored (add --create to make "
                            "it)\n", x->db);
            return;
        }
        fail(x, "%s", err);
        return;
    }
    if (atoll(x->node[0].resp) > 0)
        return;
    local_name(x, "data_quality", tn, sizeof tn);
    ch_quote(x->q_example, ex, sizeof ex);
    snprintf(sql, sizeof sql, "INSERT INTO %s VALUES (%s, %lld, %s, %lld)", tn, id, x->q_dup, ex, x->q_empty);
    if (ch_query(&x->node[0], sql, err, sizeof err) != 0)
        fail(x, "%s", err);
}

static int ch_finish(void *mv, int parse_rc)
{
    chx *x = mv;
    for (int k = 0; k < T_FIXED; k++)
        flush_all(x, &x->fixed[k]);
    for (int i = 0; i < x->nrep; i++)
        flush_all(x, x->rep[i]);
    sender_stop(x);
    long long sent = 0, skipped = 0, records = 0, rep_rows = 0;
    for (int k = 0; k < T_FIXED; k++) {
        sent += x->fixed[k].sent;
        skipped += x->fixed[k].skipped;
    }
    for (int i = 0; i < x->nstores; i++)
        records += x->st_span[i].seq;
    for (int i = 0; i < x->nrep; i++) {
        sent += x->rep[i]->sent;
        skipped += x->rep[i]->skipped;
        rep_rows += x->rep[i]->report.seq;
    }
    const char *label = x->node[0].label;
    if (!x->failed && parse_rc == 0 && records > 0)
        put_quality(x);
    if (!x->failed && parse_rc == 0 && records > 0) {
        /* the export is whole: say so where analyze --session finds it */
        char tn[460], id[40], ses[600], in[2200];
        local_name(x, "exports", tn, sizeof tn);
        ch_quote(x->export_id, id, sizeof id);
        ch_quote(x->session, ses, sizeof ses);
        ch_quote(x->o->input, in, sizeof in);
        int nst = 0;
        size_t cap = 8192 + (size_t)x->nstores * 2100, n;
        char *sql = malloc(cap);
        n = (size_t)snprintf(sql, cap, "INSERT INTO %s VALUES (%s, %s, %s, ", tn, id, ses, in);
        for (int i = 0; i < x->nstores; i++)
            nst += x->st_span[i].key != NULL;
        n += (size_t)snprintf(sql + n, cap - n, "%d, %lld, now(), [", nst, records);
        for (int i = 0, k = 0; i < x->nstores; i++)
            if (x->st_span[i].key) {
                char q[2100];
                ch_quote(x->st_span[i].key, q, sizeof q);
                n += (size_t)snprintf(sql + n, cap - n, "%s%s", k++ ? ", " : "", q);
            }
        snprintf(sql + n, cap - n, "])");
        char err[1024];
        if (ch_query(&x->node[0], sql, err, sizeof err) != 0)
            fail(x, "%s", err);
        free(sql);
    }
    struct timespec t1;
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double s = (double)(t1.tv_sec - x->t0.tv_sec) + (double)(t1.tv_nsec - x->t0.tv_nsec) / 1e9;
    if (x->failed) {
        fprintf(stderr, "servprof export: %s\n", x->err);
        name_down_shards(x);
        fprintf(stderr, "servprof export: stopped: %lld rows sent before the failure are kept (none half-sent); "
                        "run the same command again to send only what is missing\n", sent);
        return -1;
    }
    if (parse_rc != 0 || records == 0) {
        fprintf(stderr, "servprof export: the parse of %s failed (exit %d): %lld rows sent\n", x->o->input,
                parse_rc, sent);
        return -1;
    }
    fprintf(stderr,
            "servprof export: %lld records, %lld report rows (%d tables) of export %s to %s/%s on %d node%s: "
            "%lld rows sent, %lld already there, %.2f s\n",
            records, rep_rows, x->nrep, x->export_id, label, x->db, x->nnodes, x->nnodes == 1 ? "" : "s", sent,
            skipped, s);
    if (x->converted)
        fprintf(stderr, "servprof export: %lld report values had another type than their column's: "
                        "converted (text as text, a fraction in an integer column as NULL)\n", x->converted);
    return 0;
}

static void free_tab(ctab *t)
{
    for (int i = 0; i < MAX_NODES; i++)
        free(t->buf[i].p);
    free(t->name);
    free(t->key);
    free(t->kind);
    free(t->report.key);
}

static void ch_close(void *mv)
{
    chx *x = mv;
    if (!x)
        return;
    for (int k = 0; k < T_FIXED; k++)
        free_tab(&x->fixed[k]);
    for (int i = 0; i < x->nrep; i++) {
        free_tab(x->rep[i]);
        free(x->rep[i]);
    }
    free(x->rep);
    for (int i = 0; i < x->nstores; i++) {
        free(x->st_span[i].key);
        free(x->st_link[i].key);
    }
    free(x->st_span);
    free(x->st_link);
    sender_stop(x);
    for (int i = 0; i < x->nnodes; i++) {
        ch_conn_close(&x->node[i]);
        ch_conn_close(&x->ins[i]);
    }
    for (int i = 0; i < x->npool; i++)
        free(x->pool[i].p);
    pthread_mutex_destroy(&x->mu);
    pthread_cond_destroy(&x->cv);
    free(x->scratch);
    free(x);
}

const exp_module exp_clickhouse = {"clickhouse", ch_open, ch_row, ch_record, ch_finish, ch_close, 1, ch_quality};
