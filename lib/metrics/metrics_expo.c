/* SPDX-License-Identifier: Apache-2.0 */
/*
 * metrics_expo.c — a folder of per-process metrics files -> one Prometheus
 * text exposition (format 0.0.4), what `servprof metrics serve` answers.
 *
 * DESIGN
 * Every *.metrics file of the folder is read (metrics_file.c) and folded
 * into the group of its labels: role (process name), model_name, dp_rank.
 * Processes of one group add up, which makes a multi-process server one
 * scrape target. The dead-process convention is client_python's
 * multiprocess mode: counters and histograms of a dead process stay in the
 * sums (its file stays; a rate() never sees them go backwards), gauges count
 * only live processes (client_python's "livesum"), so a crashed worker's
 * last queue length does not linger. Clearing the folder before a server
 * (re)starts is the operator's job, as with PROMETHEUS_MULTIPROC_DIR.
 *
 * Output is sorted by labels, so two scrapes of the same files are
 * byte-identical. The cost is one read of each file (a few KiB) and one
 * line per bucket per group; docs/benchmarks.md has the figure for 64
 * processes.
 */
#include <dirent.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "argbuild.h"
#include "metrics.h"

#define PREFIX "servprof_"
#define GROUP_OUTCOMES 64

typedef struct group {
    char role[64], model[128], dp_rank[32];
    char lab[512]; /* the labels as text (make_labels) */
    char outcome[GROUP_OUTCOMES][SP_M_OUTCOME_LEN];
    double outcome_n[GROUP_OUTCOMES];
    int nout;
    double other;
    double counter[SP_MC_N];
    double gauge[SP_MG_N];
    uint64_t gauge_set; /* over live processes */
    sp_mhist_data hist[SP_MH_N];
} group;

typedef struct expo {
    group *g;
    int n, cap;
    int live, dead, unreadable;
    sp_sbuf out;
} expo;

static void put(expo *e, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void put(expo *e, const char *fmt, ...)
{
    char buf[1024];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    if (n > 0)
        sp_sb_put(&e->out, buf, (size_t)n < sizeof buf ? (size_t)n : sizeof buf - 1);
}

static group *group_of(expo *e, const sp_mdata *d)
{
    for (int i = 0; i < e->n; i++)
        if (!strcmp(e->g[i].role, d->role) && !strcmp(e->g[i].model, d->model) &&
            !strcmp(e->g[i].dp_rank, d->dp_rank))
            return &e->g[i];
    if (e->n == e->cap) {
        int cap = e->cap ? e->cap * 2 : 4;
        group *g = realloc(e->g, (size_t)cap * sizeof *g);
        if (!g)
            return NULL;
        e->g = g;
        e->cap = cap;
    }
    group *g = &e->g[e->n++];
    memset(g, 0, sizeof *g);
    snprintf(g->role, sizeof g->role, "%s", d->role);
    snprintf(g->model, sizeof g->model, "%s", d->model);
    snprintf(g->dp_rank, sizeof g->dp_rank, "%s", d->dp_rank);
    return g;
}

static void escape_into(char *dst, size_t cap, size_t *n, const char *v);

static void add_outcome(group *g, const char *name, double n)
{
    char esc[SP_M_OUTCOME_LEN];
    size_t len = 0;
    escape_into(esc, sizeof esc, &len, name);
    for (int i = 0; i < g->nout; i++)
        if (!strcmp(g->outcome[i], esc)) {
            g->outcome_n[i] += n;
            return;
        }
    if (g->nout == GROUP_OUTCOMES) {
        g->other += n;
        return;
    }
    memcpy(g->outcome[g->nout], esc, sizeof esc);
    g->outcome_n[g->nout++] = n;
}

static void fold(expo *e, const sp_mdata *d, int alive)
{
    group *g = group_of(e, d);
    if (!g) {
        e->unreadable++;
        return;
    }
    for (int i = 0; i < SP_M_OUTCOMES && d->outcome[i][0]; i++)
        add_outcome(g, d->outcome[i], d->outcome_n[i]);
    g->other += d->other_outcomes;
    for (int i = 0; i < SP_MC_N; i++)
        g->counter[i] += d->counter[i];
    if (alive) {
        for (int i = 0; i < SP_MG_N; i++)
            if (d->gauge_set & ((uint64_t)1 << i))
                g->gauge[i] += d->gauge[i];
        g->gauge_set |= d->gauge_set;
    }
    for (int h = 0; h < SP_MH_N; h++) {
        g->hist[h].count += d->hist[h].count;
        g->hist[h].sum += d->hist[h].sum;
        for (int b = 0; b < SP_M_BUCKETS_MAX; b++)
            g->hist[h].b[b] += d->hist[h].b[b];
    }
}

/* ---- text ------------------------------------------------------------ */

/* Appends v escaped for a label value. Bytes that are not valid UTF-8
 * become U+FFFD, one per byte (as the recorder does): the exposition must
 * be UTF-8, and since one scrape sums every process, one bad byte in one
 * model_name would otherwise make Prometheus reject all of them. A
 * sequence is written whole or not at all (never cut at cap). */
static void escape_into(char *dst, size_t cap, size_t *n, const char *v)
{
    static const char fffd[] = "\xEF\xBF\xBD";
    size_t left = strlen(v);
    for (const unsigned char *p = (const unsigned char *)v; *p; left--, p++) {
        if (*p == '\\' || *p == '"' || *p == '\n') {
            if (*n + 3 >= cap)
                break;
            dst[(*n)++] = '\\';
            dst[(*n)++] = *p == '\n' ? 'n' : (char)*p;
            continue;
        }
        size_t l = *p < 0x80 ? 1 : sp_utf8_len(p, left);
        const char *src = l ? (const char *)p : fffd;
        size_t w = l ? l : 3;
        if (*n + w + 1 >= cap)
            break;
        memcpy(dst + *n, src, w);
        *n += w;
        if (l > 1) {
            p += l - 1;
            left -= l - 1;
        }
    }
    dst[*n] = 0;
}

/* g->lab: the group's labels, escaped, without braces ("" when none). */
static void make_labels(group *g)
{
    const char *names[3] = {"role", "model_name", "dp_rank"};
    const char *vals[3] = {g->role, g->model, g->dp_rank};
    size_t n = 0;
    g->lab[0] = 0;
    for (int i = 0; i < 3; i++) {
        if (!vals[i][0])
            continue;
        n += (size_t)snprintf(g->lab + n, sizeof g->lab - n, "%s%s=\"", n ? "," : "", names[i]);
        escape_into(g->lab, sizeof g->lab, &n, vals[i]);
        if (n + 1 < sizeof g->lab)
            g->lab[n++] = '"';
        g->lab[n] = 0;
    }
}

/* `{labels,extra="v"}` (nothing when there is no label at all); extra's
 * value is one of ours (an outcome is escaped when it is stored). */
static void put_labels(expo *e, const group *g, const char *extra_name, const char *extra)
{
    if (!g->lab[0] && !extra_name)
        return;
    sp_sb_put(&e->out, "{", 1);
    sp_sb_put(&e->out, g->lab, strlen(g->lab));
    if (extra_name) {
        if (g->lab[0])
            sp_sb_put(&e->out, ",", 1);
        put(e, "%s=\"%s\"", extra_name, extra);
    }
    sp_sb_put(&e->out, "}", 1);
}

/* Writes v and a newline at d (room for 32 bytes): integers (counts)
 * without printf. Returns the length. */
static size_t fmt_number(char *d, double v)
{
    if (v >= 0 && v < 1e15 && v == (double)(uint64_t)v) {
        char buf[24];
        int i = (int)sizeof buf;
        uint64_t x = (uint64_t)v;
        buf[--i] = '\n';
        do {
            buf[--i] = (char)('0' + x % 10);
            x /= 10;
        } while (x);
        memcpy(d, buf + i, sizeof buf - (size_t)i);
        return sizeof buf - (size_t)i;
    }
    return (size_t)snprintf(d, 32, "%.17g\n", v);
}

static void put_number(expo *e, double v)
{
    char buf[32];
    sp_sb_put(&e->out, buf, fmt_number(buf, v));
}

static void put_head(expo *e, const sp_mdef *d, const char *type)
{
    put(e, "# HELP " PREFIX "%s %s\n# TYPE " PREFIX "%s %s\n", d->name, d->help, d->name, type);
}

static int by_labels(const void *a, const void *b)
{
    const group *x = a, *y = b;
    int c = strcmp(x->role, y->role);
    if (!c)
        c = strcmp(x->model, y->model);
    return c ? c : strcmp(x->dp_rank, y->dp_rank);
}

static void render(expo *e)
{
    if (e->n)
        qsort(e->g, (size_t)e->n, sizeof *e->g, by_labels);
    size_t per_line = 100; /* name, le, count, newline */
    for (int i = 0; i < e->n; i++) {
        make_labels(&e->g[i]);
        per_line += strlen(e->g[i].lab) / (size_t)e->n + 1;
    }
    /* The text's size at once: growing by doubling would copy it twice over. */
    size_t want = 16384 + (size_t)e->n * SP_MH_N * SP_M_BUCKETS_MAX * per_line;
    if (e->out.cap < want) {
        char *p = realloc(e->out.p, want);
        if (p) {
            e->out.p = p;
            e->out.cap = want;
        }
    }
    put_head(e, &sp_mrequests_def, "counter");
    for (int i = 0; i < e->n; i++) {
        group *g = &e->g[i];
        for (int k = 0; k < g->nout; k++) {
            put(e, PREFIX "%s", sp_mrequests_def.name);
            put_labels(e, g, "outcome", g->outcome[k]);
            put(e, " %.17g\n", g->outcome_n[k]);
        }
        if (g->other > 0) {
            put(e, PREFIX "%s", sp_mrequests_def.name);
            put_labels(e, g, "outcome", "other");
            put(e, " %.17g\n", g->other);
        }
    }
    for (int c = 0; c < SP_MC_N; c++) {
        put_head(e, &sp_mcounter_defs[c], "counter");
        for (int i = 0; i < e->n; i++) {
            put(e, PREFIX "%s", sp_mcounter_defs[c].name);
            put_labels(e, &e->g[i], NULL, NULL);
            put(e, " %.17g\n", e->g[i].counter[c]);
        }
    }
    for (int m = 0; m < SP_MG_N; m++) {
        put_head(e, &sp_mgauge_defs[m], "gauge");
        for (int i = 0; i < e->n; i++) {
            if (!(e->g[i].gauge_set & ((uint64_t)1 << m)))
                continue; /* never reported by a live process */
            put(e, PREFIX "%s", sp_mgauge_defs[m].name);
            put_labels(e, &e->g[i], NULL, NULL);
            put(e, " %.17g\n", e->g[i].gauge[m]);
        }
    }
    for (int h = 0; h < SP_MH_N; h++) {
        const double *bounds;
        int nb = sp_mhist_bounds(h, &bounds);
        /* ",le=\"0.5\"} " for each bucket, formatted once per histogram. */
        char le[SP_M_BUCKETS_MAX][40]; /* 13 KiB of stack */
        for (int b = 0; b <= nb; b++) {
            if (b < nb)
                snprintf(le[b], sizeof le[b], "le=\"%.6g\"} ", bounds[b]);
            else
                snprintf(le[b], sizeof le[b], "le=\"+Inf\"} ");
        }
        size_t lel[SP_M_BUCKETS_MAX];
        for (int b = 0; b <= nb; b++)
            lel[b] = strlen(le[b]);
        put_head(e, &sp_mhist_defs[h], "histogram");
        for (int i = 0; i < e->n; i++) {
            const group *g = &e->g[i];
            const sp_mhist_data *d = &g->hist[h];
            /* Each bucket line is built in one piece: "name_bucket{labels," once,
             * then le and the count (the text's bulk: 338 lines a histogram). */
            char line[700];
            size_t pl = (size_t)snprintf(line, 600, PREFIX "%s_bucket{%s%s", sp_mhist_defs[h].name,
                                         g->lab, g->lab[0] ? "," : "");
            if (pl >= 600)
                pl = 599;
            double cum = 0;
            for (int b = 0; b <= nb; b++) {
                cum += d->b[b];
                memcpy(line + pl, le[b], lel[b]);
                size_t n = pl + lel[b];
                n += fmt_number(line + n, cum);
                sp_sb_put(&e->out, line, n);
            }
            put(e, PREFIX "%s_sum", sp_mhist_defs[h].name);
            put_labels(e, g, NULL, NULL);
            put(e, " %.17g\n", d->sum);
            put(e, PREFIX "%s_count", sp_mhist_defs[h].name);
            put_labels(e, g, NULL, NULL);
            put(e, " ");
            put_number(e, cum);
        }
    }
    put(e, "# HELP " PREFIX "metrics_processes Processes with a metrics file in the folder, by "
           "state (dead: counters kept, gauges dropped).\n# TYPE " PREFIX "metrics_processes gauge\n");
    put(e, PREFIX "metrics_processes{state=\"live\"} %d\n", e->live);
    put(e, PREFIX "metrics_processes{state=\"dead\"} %d\n", e->dead);
    put(e, "# HELP " PREFIX "metrics_files_unreadable Files of the folder that could not be read "
           "at this scrape.\n# TYPE " PREFIX "metrics_files_unreadable gauge\n");
    put(e, PREFIX "metrics_files_unreadable %d\n", e->unreadable);
}

static int is_metrics_file(const char *name)
{
    size_t n = strlen(name);
    return !strncmp(name, "servprof-", 9) && n > 8 && !strcmp(name + n - 8, ".metrics");
}

int sp_metrics_render(const char *dir, char **out, size_t *len)
{
    expo e = {0};
    int rc = 0;
    sp_mdata *d = malloc(sizeof *d);
    DIR *dh = d ? opendir(dir) : NULL;
    if (!dh) {
        int err = d ? errno : ENOMEM;
        put(&e, "# servprof: cannot read the metrics folder %s: %s\n", dir, strerror(err));
        rc = -err;
    }
    struct dirent *de;
    char path[SP_PATH_MAX + 256], why[256];
    while (dh && (de = readdir(dh))) {
        if (!is_metrics_file(de->d_name))
            continue;
        snprintf(path, sizeof path, "%s/%s", dir, de->d_name);
        int alive = 0;
        int64_t pid = 0;
        if (sp_mfile_read(path, d, &alive, &pid, why, sizeof why) != 0) {
            e.unreadable++;
            put(&e, "# servprof: skipped %s: %s\n", de->d_name, why);
            continue;
        }
        alive ? e.live++ : e.dead++;
        fold(&e, d, alive);
    }
    if (dh)
        closedir(dh);
    free(d);
    render(&e);
    free(e.g);
    if (e.out.oom) {
        sp_sb_free(&e.out);
        *out = NULL;
        *len = 0;
        return -ENOMEM;
    }
    sp_sb_cstr(&e.out);
    *out = e.out.p;
    *len = e.out.len;
    return rc;
}
