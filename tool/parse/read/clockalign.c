/* SPDX-License-Identifier: Apache-2.0 */
/*
 * clockalign.c — puts the stores of several hosts on one clock before they
 * are merged.
 *
 * Each store carries its host's wall clock. When the stores come from more
 * than one host (Meta hostname), a pass over their slice tables, before the
 * merge, collects for every request (ids joined by Link, as in ids.c) the
 * interval its records cover on each host. The host whose interval is the
 * longest is the request's front end (the router or the instance the client
 * talked to): everything another host did for the request happened inside
 * it, in true time. For host H inside front end E that gives, as in
 * distributed tracers' clock-skew adjusters,
 *
 *     off(H) − off(E) ∈ [H.last − E.last, H.first − E.first]
 *
 * where off(X) is how far X's clock reads ahead of true time. Intersecting
 * over all requests narrows each pair of hosts' bound. The reference clock
 * is the host that is most often a front end; the others are reached from
 * it through the pairs (bounds add up along the way). Within its bound a
 * host's offset is taken as close to its parent's as the bound allows:
 * clocks are assumed to agree unless the records prove otherwise, so a
 * host whose records are consistent is never moved. A bound that is empty
 * (the records contradict each other: a request that was not enclosed)
 * is reported and its midpoint used.
 *
 * `--clock-offset HOST=NS` sets a host's offset (ns its clock is ahead of
 * the reference) instead of estimating it. The offset is applied by the
 * store reader (prs_store.clock_shift = −offset) so that every report and
 * the merge see aligned times; clock_offsets.csv lists per host the
 * estimate, its bound, the pairs behind it and where it came from.
 *
 * Cost: one extra read of every store, only when there are several hosts.
 * Memory: 16 bytes per (request id, host).
 */
#include <stdlib.h>
#include <string.h>

#include "clockalign.h"
#include "model.h"
#include "plog.h"
#include "xalloc.h"
#include "storeread.h"

/* What one request did on one host: the time its records cover (first < 0:
 * none), its first sendReqToD and the start of its first PullKVCache (-1). */
typedef struct iv { int64_t first, last, send, pull; } iv;

struct scan {
    prs_ids *ids;
    int nh;
    iv *per;           /* per[node * nh + host] */
    int nnodes_cap;
    prs_args args;
};

static int host_index(prs_clock *c, const char *name)
{
    for (int i = 0; i < c->nhosts; i++)
        if (!strcmp(c->hosts[i].name, name))
            return i;
    return -1;
}

static iv *note(struct scan *sc, int node, int h, int64_t a, int64_t b)
{
    if (node >= sc->nnodes_cap) {
        int n = node * 2 + 1024;
        sc->per = prs_xrealloc(sc->per, (size_t)n * (size_t)sc->nh * sizeof *sc->per);
        for (size_t i = (size_t)sc->nnodes_cap * (size_t)sc->nh; i < (size_t)n * (size_t)sc->nh; i++)
            sc->per[i].first = sc->per[i].send = sc->per[i].pull = -1;
        sc->nnodes_cap = n;
    }
    iv *v = &sc->per[(size_t)node * (size_t)sc->nh + (size_t)h];
    if (v->first < 0) {
        v->first = a;
        v->last = b;
        return v;
    }
    if (a < v->first)
        v->first = a;
    if (b > v->last)
        v->last = b;
    return v;
}

static void first_of(int64_t *slot, int64_t t)
{
    if (*slot < 0 || t < *slot)
        *slot = t;
}

static int node_of(struct scan *sc, prs_str s)
{
    char buf[512];
    int n = prs_str_copy(s, buf, sizeof buf);
    return prs_ids_get(sc->ids, buf, n);
}

/* Meta clock_synced / clock_maxerror_us (the collector's adjtimex reading):
 * a host is synchronised when all its stores say so; its error is the
 * largest they give. */
static void read_sync_meta(sqlite3 *db, prs_clock_host *host)
{
    sqlite3_stmt *st;
    long long synced = -1, maxerr = -1;
    if (sqlite3_prepare_v2(db, "SELECT name, CAST(value AS INTEGER) FROM Meta WHERE name IN "
                           "('clock_synced', 'clock_maxerror_us')", -1, &st, NULL) != SQLITE_OK)
        return;
    while (sqlite3_step(st) == SQLITE_ROW) {
        const char *k = (const char *)sqlite3_column_text(st, 0);
        if (k && !strcmp(k, "clock_synced"))
            synced = sqlite3_column_int64(st, 1);
        else if (k)
            maxerr = sqlite3_column_int64(st, 1);
    }
    sqlite3_finalize(st);
    int ok = synced == 1 && maxerr >= 0 && maxerr < INT64_MAX / 4000;
    if (host->synced == -2) { /* the host's first store */
        host->synced = ok ? 1 : synced == 0 ? 0 : -1;
        host->maxerr_ns = ok ? maxerr * 1000 : -1;
    } else if (!ok || host->synced != 1) {
        host->synced = synced == 0 || host->synced == 0 ? 0 : -1;
        host->maxerr_ns = -1;
    } else if (maxerr * 1000 > host->maxerr_ns) {
        host->maxerr_ns = maxerr * 1000;
    }
}

/* Links and records naming one request by a scalar rid. A step's rid list
 * (kilobytes, on every schedule/execution/forward span) is skipped without
 * decoding: its requests' own records on the same host bound them already,
 * and decoding the lists cost as much as the whole parse. */
static int worth_decoding(const char *args, const char *name)
{
    if (name && !strcmp(name, "Link"))
        return 1;
    const char *k = strstr(args, "\"rid\"");
    if (!k)
        return 0;
    k += 5;
    while (*k == ' ' || *k == ':')
        k++;
    return *k != '[';
}

/* Reads the request ids and times of one store's slice table. */
static void scan_store(struct scan *sc, const char *path, int h, prs_clock_host *host)
{
    sqlite3 *db;
    char *uri = prs_store_uri(path); /* immutable when closed: reading writes nothing beside it */
    int rc = uri ? sqlite3_open_v2(uri, &db, SQLITE_OPEN_READONLY | SQLITE_OPEN_URI, NULL) : SQLITE_NOMEM;
    free(uri);
    if (rc != SQLITE_OK) {
        if (uri)
            sqlite3_close(db);
        return;
    }
    read_sync_meta(db, host);
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(db, "SELECT timestamp, duration, args, name FROM slice WHERE timestamp > 0", -1, &st, NULL) !=
        SQLITE_OK) {
        sqlite3_close(db); /* legacy Mstx store: not used for the estimate */
        return;
    }
    while (sqlite3_step(st) == SQLITE_ROW) {
        int64_t ts = sqlite3_column_int64(st, 0), dur = sqlite3_column_int64(st, 1);
        const char *args = (const char *)sqlite3_column_text(st, 2);
        const char *name = (const char *)sqlite3_column_text(st, 3);
        if (!args || !worth_decoding(args, name))
            continue;
        prs_args_decode(&sc->args, args, sqlite3_column_bytes(st, 2));
        prs_args *a = &sc->args;
        int64_t end = dur > 0 && dur < INT64_MAX - ts ? ts + dur : ts;
        if (a->type == 3 && a->from.p && a->to.p) {
            int absorbed;
            int from = node_of(sc, a->from), to = node_of(sc, a->to);
            prs_ids_link(sc->ids, from, to, &absorbed);
            note(sc, from, h, ts, end);
            note(sc, to, h, ts, end);
        } else if (a->rid_kind == 1) {
            iv *v = note(sc, node_of(sc, a->rid), h, ts, end);
            if (name && !strcmp(name, "sendReqToD"))
                first_of(&v->send, ts);
            else if (name && !strcmp(name, "PullKVCache"))
                first_of(&v->pull, ts);
        }
    }
    sqlite3_finalize(st);
    sqlite3_close(db);
}

/* Folds every id's intervals into its request root's. */
static void fold_roots(struct scan *sc)
{
    int n = prs_ids_count(sc->ids);
    for (int node = 0; node < n && node < sc->nnodes_cap; node++) {
        int root = prs_ids_root(sc->ids, node);
        if (root == node)
            continue;
        for (int h = 0; h < sc->nh; h++) {
            iv *v = &sc->per[(size_t)node * (size_t)sc->nh + (size_t)h];
            if (v->first < 0)
                continue;
            iv *r = note(sc, root, h, v->first, v->last);
            if (v->send >= 0)
                first_of(&r->send, v->send);
            if (v->pull >= 0)
                first_of(&r->pull, v->pull);
        }
    }
}

#define INF INT64_MAX

/* w[u * nh + v]: the tightest known upper bound of off(v) − off(u). */
static void tighten(int64_t *w, int nh, int u, int v, int64_t bound)
{
    if (bound < w[u * nh + v])
        w[u * nh + v] = bound;
}

/* The constraints every request seen on two hosts or more gives. */
static void collect_pairs(struct scan *sc, int64_t *w, long long *pairs, long long *front)
{
    int nh = sc->nh, n = prs_ids_count(sc->ids);
    for (int node = 0; node < n && node < sc->nnodes_cap; node++) {
        if (prs_ids_root(sc->ids, node) != node)
            continue;
        iv *v = &sc->per[(size_t)node * (size_t)nh];
        int e = -1, seen = 0;
        for (int h = 0; h < nh; h++) {
            if (v[h].first < 0)
                continue;
            seen++;
            if (e < 0 || v[h].last - v[h].first > v[e].last - v[e].first)
                e = h;
        }
        if (seen < 2)
            continue;
        front[e]++;
        for (int h = 0; h < nh; h++) {
            if (h == e || v[h].first < 0)
                continue;
            /* h's records lie inside e's: off(h) − off(e) ∈ [h.last − e.last, h.first − e.first] */
            tighten(w, nh, e, h, v[h].first - v[e].first);
            tighten(w, nh, h, e, v[e].last - v[h].last);
            pairs[h]++;
            pairs[e]++;
        }
        /* The KV is pulled (host b) after it was sent (host a): off(b) − off(a) ≤ pull − send. */
        for (int a = 0; a < nh; a++)
            for (int b = 0; b < nh; b++)
                if (a != b && v[a].send >= 0 && v[b].pull >= 0) {
                    tighten(w, nh, a, b, v[b].pull - v[a].send);
                    pairs[a]++;
                    pairs[b]++;
                }
    }
}

/* Floyd–Warshall over the bounds; 0 when they contradict each other (a
 * negative cycle: no offsets satisfy every pair). */
static int closure(int64_t *w, int nh)
{
    for (int k = 0; k < nh; k++)
        for (int i = 0; i < nh; i++) {
            if (w[i * nh + k] == INF)
                continue;
            for (int j = 0; j < nh; j++)
                if (w[k * nh + j] != INF && w[i * nh + k] + w[k * nh + j] < w[i * nh + j])
                    w[i * nh + j] = w[i * nh + k] + w[k * nh + j];
        }
    for (int i = 0; i < nh; i++)
        if (w[i * nh + i] < 0)
            return 0;
    return 1;
}

static int64_t nearest_zero(int64_t lo, int64_t hi) { return lo > 0 ? lo : hi < 0 ? hi : 0; }

/* Offsets relative to the reference host (the most frequent front end):
 * each host's bound is what the closed constraints allow; then hosts are
 * fixed in turn at the point of their remaining bound nearest to agreeing
 * with the reference, closing the constraints again after each, so that
 * the chosen offsets satisfy every pair together. */
/* Hosts whose kernel says their clock is synchronised, within maxerror of
 * true time: two such hosts' offsets differ by at most the sum. Returns
 * how many bounds were added. */
static int kernel_bounds(prs_clock *c, int64_t *w)
{
    int nh = c->nhosts, n = 0;
    for (int u = 0; u < nh; u++)
        for (int v = 0; v < nh; v++) {
            prs_clock_host *a = &c->hosts[u], *b = &c->hosts[v];
            if (u == v || a->synced != 1 || b->synced != 1 || a->maxerr_ns < 0 || b->maxerr_ns < 0)
                continue;
            tighten(w, nh, u, v, a->maxerr_ns + b->maxerr_ns);
            a->kernel_used = b->kernel_used = 1;
            n++;
        }
    return n;
}

/* Fixes the hosts named by --clock-offset; returns how many. */
static int apply_overrides(prs_clock *c, int64_t *w, int ref, const prs_opts *opts)
{
    int nh = c->nhosts, n = 0;
    for (int i = 0; i < opts->nclock; i++)
        for (int h = 0; h < nh; h++) {
            if (strcmp(c->hosts[h].name, opts->clock_hosts[i]) != 0)
                continue;
            if (h == ref) {
                prs_log(PRS_WARNING, "--clock-offset %s: '%s' is the reference clock (the front end of most "
                        "requests); its offset stays 0", opts->clock_hosts[i], c->hosts[h].name);
                continue;
            }
            w[ref * nh + h] = opts->clock_ns[i];
            w[h * nh + ref] = -opts->clock_ns[i];
            c->hosts[h].source = PRS_CLOCK_OVERRIDE;
            n++;
        }
    return n;
}

static void solve(prs_clock *c, int64_t *w, long long *pairs, const long long *front, const prs_opts *opts)
{
    int nh = c->nhosts, ref = 0;
    for (int h = 1; h < nh; h++)
        if (front[h] > front[ref])
            ref = h;
    c->hosts[ref].source = PRS_CLOCK_REFERENCE;
    int overrides = apply_overrides(c, w, ref, opts);
    int64_t *plain = prs_xmalloc((size_t)nh * (size_t)nh * sizeof *plain);
    memcpy(plain, w, (size_t)nh * (size_t)nh * sizeof *w);
    if (kernel_bounds(c, w) && !closure(w, nh)) {
        memcpy(w, plain, (size_t)nh * (size_t)nh * sizeof *w);
        prs_log(PRS_WARNING, "clocks: the error bounds the hosts' kernels gave (Meta clock_maxerror_us) "
                "contradict the records; the records alone are used");
        for (int h = 0; h < nh; h++)
            c->hosts[h].kernel_used = 0;
    }
    free(plain);
    if (!closure(w, nh)) {
        /* --clock-offset wins over the records; without it, nothing is moved */
        for (int i = 0; i < nh * nh; i++)
            w[i] = i % (nh + 1) == 0 ? 0 : INF;
        apply_overrides(c, w, ref, opts);
        closure(w, nh);
        prs_log(PRS_WARNING, "clocks: the records' causal pairs contradict each other%s; %s",
                overrides ? " or the --clock-offset values" : " (a request not enclosed by its front end?)",
                overrides ? "only --clock-offset is applied" : "hosts' clocks are left as recorded");
        memset(pairs, 0, (size_t)nh * sizeof *pairs);
    }
    for (int h = 0; h < nh; h++) {
        prs_clock_host *hh = &c->hosts[h];
        hh->pairs = pairs[h];
        hh->lo = w[h * nh + ref] == INF ? INT64_MIN : -w[h * nh + ref];
        hh->hi = w[ref * nh + h];
    }
    for (int h = 0; h < nh; h++) {
        prs_clock_host *hh = &c->hosts[h];
        if (h == ref || (hh->lo == INT64_MIN && hh->hi == INF))
            continue; /* the reference; a host no request joins to the others: as recorded */
        int64_t lo = w[h * nh + ref] == INF ? INT64_MIN : -w[h * nh + ref], hi = w[ref * nh + h];
        hh->offset = nearest_zero(lo, hi);
        if (hh->source == PRS_CLOCK_NONE)
            hh->source = PRS_CLOCK_ESTIMATED;
        w[ref * nh + h] = hh->offset;
        w[h * nh + ref] = -hh->offset;
        closure(w, nh);
    }
}

static void estimate(prs_clock *c, prs_store **stores, int n, const prs_opts *opts)
{
    struct scan sc = {0};
    sc.ids = prs_ids_new();
    sc.nh = c->nhosts;
    prs_args_init(&sc.args);
    for (int i = 0; i < n; i++)
        scan_store(&sc, stores[i]->path, host_index(c, stores[i]->hostname),
                   &c->hosts[host_index(c, stores[i]->hostname)]);
    fold_roots(&sc);
    int nh = c->nhosts;
    int64_t *w = prs_xmalloc((size_t)nh * (size_t)nh * sizeof *w);
    for (int i = 0; i < nh * nh; i++)
        w[i] = i % (nh + 1) == 0 ? 0 : INF;
    long long *front = prs_xcalloc((size_t)nh, sizeof *front), *pairs = prs_xcalloc((size_t)nh, sizeof *pairs);
    collect_pairs(&sc, w, pairs, front);
    solve(c, w, pairs, front, opts);
    free(w);
    free(front);
    free(pairs);
    free(sc.per);
    prs_args_free(&sc.args);
    prs_ids_free(sc.ids);
}

int prs_clock_align(prs_clock *c, prs_store **stores, int n, const prs_opts *opts)
{
    memset(c, 0, sizeof *c);
    for (int i = 0; i < n; i++) {
        if (host_index(c, stores[i]->hostname) >= 0)
            continue;
        c->hosts = prs_xrealloc(c->hosts, (size_t)(c->nhosts + 1) * sizeof *c->hosts);
        prs_clock_host *h = &c->hosts[c->nhosts++];
        memset(h, 0, sizeof *h);
        h->name = stores[i]->hostname;
        h->synced = -2; /* no store read yet */
    }
    for (int i = 0; i < opts->nclock; i++)
        if (host_index(c, opts->clock_hosts[i]) < 0) {
            prs_log(PRS_WARNING, "--clock-offset: no store comes from host '%s'; ignored", opts->clock_hosts[i]);
        }
    if (c->nhosts < 2) {
        /* One host: nothing to estimate, but an offset given for it still
         * moves it (an exporter of one host of a fleet, given the fleet's
         * offsets, so that every host's rows land on one clock). */
        for (int i = 0; c->nhosts == 1 && i < opts->nclock; i++)
            if (!strcmp(opts->clock_hosts[i], c->hosts[0].name) && opts->clock_ns[i]) {
                for (int k = 0; k < n; k++)
                    stores[k]->clock_shift = -opts->clock_ns[i];
                prs_log(PRS_INFO, "clock of host '%s' reads %+.3f ms (--clock-offset); its records are moved by "
                        "%+.3f ms", c->hosts[0].name, (double)opts->clock_ns[i] / 1e6,
                        -(double)opts->clock_ns[i] / 1e6);
                return 1;
            }
        return 0;
    }
    estimate(c, stores, n, opts);
    for (int i = 0; i < n; i++) {
        prs_clock_host *h = &c->hosts[host_index(c, stores[i]->hostname)];
        stores[i]->clock_shift = -h->offset;
    }
    for (int h = 0; h < c->nhosts; h++)
        if (c->hosts[h].offset)
            prs_log(PRS_INFO, "clock of host '%s' reads %+.3f ms from the reference; its records are moved by "
                    "%+.3f ms (clock_offsets.csv)", c->hosts[h].name, (double)c->hosts[h].offset / 1e6,
                    -(double)c->hosts[h].offset / 1e6);
    return 1;
}

void prs_clock_report(const prs_clock *c, prs_out *out)
{
    if (c->nhosts < 2)
        return;
    static const prs_col cols[] = {
        {"hostname", "TEXT"}, {"offset(ms)", "REAL"}, {"lower_bound(ms)", "REAL"}, {"upper_bound(ms)", "REAL"},
        {"pairs", "INTEGER"}, {"source", "TEXT"}, {"clock_synced", "INTEGER"}, {"kernel_max_error(ms)", "REAL"},
        {"kernel_bound_used", "INTEGER"},
    };
    static const char *const sources[] = {"none", "reference", "estimated", "override"};
    prs_table t;
    prs_table_init(out, &t, "clock_offsets.csv", "clock_offsets", cols, 9, NULL);
    for (int i = 0; i < c->nhosts; i++) {
        const prs_clock_host *h = &c->hosts[i];
        int known = h->source != PRS_CLOCK_NONE;
        prs_val v[9] = {
            prs_v_text(h->name, -1), prs_v_ns(h->offset),
            known && h->lo != INT64_MIN ? prs_v_ns(h->lo) : prs_v_null(),
            known && h->hi != INT64_MAX ? prs_v_ns(h->hi) : prs_v_null(), prs_v_int(h->pairs), prs_v_text(sources[h->source], -1),
            h->synced >= 0 ? prs_v_int(h->synced) : prs_v_null(),
            h->maxerr_ns >= 0 ? prs_v_ns(h->maxerr_ns) : prs_v_null(), prs_v_int(h->kernel_used),
        };
        prs_table_row(out, &t, v);
    }
    prs_table_close(out, &t);
}

void prs_clock_free(prs_clock *c)
{
    free(c->hosts);
    c->hosts = NULL;
    c->nhosts = 0;
}
