/* SPDX-License-Identifier: Apache-2.0 */
/*
 * summary.c — the answer on the terminal before any file is opened: what
 * was read (stores, records, time span), what was written, and the
 * headline numbers (requests, TTFT / TPOT / end-to-end P50 and P99, output
 * tokens/s), plus per-span statistics when --span was given. Printed on
 * stdout (it is the command's output; messages go to stderr).
 */
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "stats.h"
#include "summary.h"

static void line(const char *what, double *v, long long n)
{
    n = prs_sort_values(v, n);
    if (!n) {
        printf("  %-22s -\n", what);
        return;
    }
    printf("  %-22s P50 %10.3f ms   P99 %10.3f ms   (n=%lld)\n", what, prs_percentile(v, n, 50),
           prs_percentile(v, n, 99), n);
}

/* Was out/name (re)written by this parse? A file left by an earlier parse,
 * or one that could not be written, is never named as written. The kernel
 * stamps files with a coarse clock (a tick behind the wall clock): 50 ms. */
static int written_now(const char *out, const char *name, int64_t since_ns)
{
    char path[4096];
    struct stat st;
    snprintf(path, sizeof path, "%s/%s", out, name);
    if (stat(path, &st) != 0)
        return 0;
    int64_t mtime = (int64_t)st.st_mtim.tv_sec * 1000000000 + st.st_mtim.tv_nsec;
    return mtime >= since_ns - 50000000;
}

static void clock_text(int64_t ns, char *out, size_t len)
{
    time_t sec = (time_t)(ns / 1000000000);
    struct tm tm;
    localtime_r(&sec, &tm);
    size_t n = strftime(out, len, "%H:%M:%S", &tm);
    snprintf(out + n, len - n, ".%03d", (int)(ns % 1000000000 / 1000000));
}

/* Several sessions: their names and ranges, and how long collection was on. */
static void print_sessions(const prs_sessions *ss, double span_s)
{
    printf("  %d sessions (rates below count the %.3f s collection was on, not the %.3f s "
           "spanned):\n", ss->n, prs_sessions_on_s(ss), span_s);
    for (int i = 0; i < ss->n; i++) {
        const prs_session_range *r = &ss->s[i];
        if (r->first == INT64_MAX) {
            printf("    %-16s no records\n", r->name);
            continue;
        }
        char a[32], b[32];
        clock_text(r->first, a, sizeof a);
        clock_text(r->last, b, sizeof b);
        printf("    %-16s %s - %s  (%.3f s)\n", r->name, a, b, (double)(r->last - r->first) / 1e9);
    }
}

/* Output tokens per second over the time requests were being served: from
 * the first request's start to the last one's end, within each session. */
static double tokens_per_s(const prs_model *m, const prs_sessions *ss)
{
    int n = ss && ss->n > 1 ? ss->n : 1;
    int64_t *first = malloc((size_t)n * sizeof *first), *last = malloc((size_t)n * sizeof *last);
    double on = 0;
    if (!first || !last)
        goto out;
    for (int k = 0; k < n; k++)
        first[k] = -1, last[k] = -1;
    for (long long i = 0; i < m->nfin; i++) {
        int k = n > 1 ? prs_sessions_at(ss, m->fin[i].start) : 0;
        if (k < 0 || m->fin[i].start < 0)
            continue;
        if (first[k] < 0 || m->fin[i].start < first[k])
            first[k] = m->fin[i].start;
        if (m->fin[i].end > last[k])
            last[k] = m->fin[i].end;
    }
    for (int k = 0; k < n; k++)
        if (first[k] >= 0 && last[k] > first[k])
            on += (double)(last[k] - first[k]) / 1e9;
out:
    free(first);
    free(last);
    return on > 0 ? m->out_tokens / on : 0;
}

void prs_summary_print(prs_model *m, int nstores, int nskipped, int nactivity, double seconds,
                       const prs_sessions *ss, int64_t started_ns)
{
    double span_s = m->nrec ? (double)(m->last_ns - m->origin_ns) / 1e9 : 0;
    printf("servprof parse: read %d store%s", nstores, nstores == 1 ? "" : "s");
    if (nskipped)
        printf(" (%d skipped)", nskipped);
    if (nactivity)
        printf(" + %d activity store%s", nactivity, nactivity == 1 ? "" : "s");
    printf(", %lld records spanning %.3f s, in %.2f s", m->nrec, span_s, seconds);
    if (seconds > 0)
        printf(" (%.0f records/s)", (double)m->nrec / seconds);
    printf("\n");
    if (ss && ss->n > 1)
        print_sessions(ss, span_s);
    /* Only what this parse wrote; what it could not write is in the messages. */
    const char *out = m->opts->output;
    const prs_table *all[] = {&m->t_request, &m->t_batch, &m->t_forward, &m->t_kvcache, &m->t_reqstatus};
    char wrote[1024] = "";
    size_t w = 0;
#define WROTE(name) \
    if (written_now(out, name, started_ns) && w < sizeof wrote) \
        w += (size_t)snprintf(wrote + w, sizeof wrote - w, " %s", name)
    for (int i = 0; i < 5; i++)
        if (m->opts->csv && all[i]->rows) {
            WROTE(all[i]->csv_name);
        }
    if (m->opts->csv && m->nspan_names) {
        WROTE("span_info/");
    }
    if (m->opts->json) {
        WROTE("chrome_tracing.json");
    }
    if (m->opts->db) {
        WROTE("profiler.db");
    }
    if (m->opts->csv && nactivity) {
        WROTE("op_summary.csv");
        WROTE("op_statistic.csv");
    }
#undef WROTE
    if (w)
        printf("  wrote to %s:%s\n", out, wrote);
    else
        printf("  wrote nothing to %s\n", out);
    /* Report rows: what went into the CSV files and/or profiler.db. */
    const prs_table *ts[] = {&m->t_request, &m->t_batch, &m->t_forward, &m->t_kvcache, &m->t_reqstatus};
    const char *names[] = {"request", "batch", "forward", "kvcache", "request_status"};
    if (m->opts->csv || m->opts->db) {
        printf("  rows%s:", m->opts->csv ? "" : " (in profiler.db)");
        for (int i = 0; i < 5; i++)
            printf(" %s %lld%s", names[i], ts[i]->rows, i < 4 ? "," : "\n");
    }
    printf("  requests: %d", m->nfin);
    if (m->nincomplete)
        printf(" (%lld cut by the collection window: complete = 0, not in the percentiles)", m->nincomplete);
    printf("\n");
    long long n = m->nfin;
    double *v = malloc((size_t)(n ? n : 1) * sizeof *v);
    for (long long i = 0; i < n; i++)
        v[i] = m->fin[i].ttft;
    line("TTFT", v, n);
    for (long long i = 0; i < n; i++)
        v[i] = m->fin[i].tpot;
    line("TPOT", v, n);
    for (long long i = 0; i < n; i++)
        v[i] = m->fin[i].e2e;
    line("end-to-end", v, n);
    for (long long i = 0; i < n; i++)
        v[i] = m->fin[i].wait;
    line("queue wait", v, n);
    free(v);
    double tps = tokens_per_s(m, ss);
    if (tps > 0 && m->out_tokens > 0)
        printf("  output tokens: %.0f, %.1f tokens/s\n", m->out_tokens, tps);
    if (m->stats && m->nspan_names) {
        printf("  %-26s %8s %10s %10s %10s %10s %10s %10s %12s\n", "span (ms)", "count", "min", "avg", "P50",
               "P90", "P99", "max", "total");
        for (int i = 0; i < m->nspan_names; i++) {
            prs_summary_row r;
            prs_stats_get(m->stats, i, &r);
            if (!r.n) {
                printf("  %-26s %8d\n", m->span_names[i], 0);
                continue;
            }
            printf("  %-26s %8lld %10.3f %10.3f %10.3f %10.3f %10.3f %10.3f %12.3f\n", m->span_names[i], r.n,
                   r.min, r.avg, r.p50, r.p90, r.p99, r.max, r.total);
        }
    }
    fflush(stdout);
}
