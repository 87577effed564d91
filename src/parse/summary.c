/*
 * summary.c — the answer on the terminal before any file is opened: what
 * was read (stores, records, time span), what was written, and the
 * headline numbers (requests, TTFT / TPOT / end-to-end P50 and P99, output
 * tokens/s), plus per-span statistics when --span was given. Printed on
 * stdout (it is the command's output; messages go to stderr).
 */
#include <stdlib.h>
#include <string.h>

#include "stats.h"
#include "summary.h"

static void line(const char *what, double *v, long long n)
{
    n = spp_sort_values(v, n);
    if (!n) {
        printf("  %-22s -\n", what);
        return;
    }
    printf("  %-22s P50 %10.3f ms   P99 %10.3f ms   (n=%lld)\n", what, spp_percentile(v, n, 50),
           spp_percentile(v, n, 99), n);
}

void spp_summary_print(spp_model *m, int nstores, int nskipped, int nactivity, double seconds)
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
    printf("\n  wrote to %s:", m->opts->output);
    const spp_table *all[] = {&m->t_request, &m->t_batch, &m->t_forward, &m->t_kvcache, &m->t_reqstatus};
    for (int i = 0; i < 5; i++)
        if (m->opts->csv && all[i]->rows)
            printf(" %s", all[i]->csv_name);
    if (m->opts->csv && m->nspan_names)
        printf(" span_info/");
    if (m->opts->json)
        printf(" chrome_tracing.json");
    if (m->opts->db)
        printf(" profiler.db");
    if (m->opts->csv && nactivity)
        printf(" op_summary.csv op_statistic.csv");
    printf("\n");
    const spp_table *ts[] = {&m->t_request, &m->t_batch, &m->t_forward, &m->t_kvcache, &m->t_reqstatus};
    const char *names[] = {"request", "batch", "forward", "kvcache", "request_status"};
    printf("  rows:");
    for (int i = 0; i < 5; i++)
        printf(" %s %lld%s", names[i], ts[i]->rows, i < 4 ? "," : "\n");
    printf("  requests: %d", m->nfin);
    if (m->nincomplete)
        printf(" (%lld cut by the collection window: complete = 0, not in the percentiles)", m->nincomplete);
    printf("\n");
    long long n = m->nfin;
    double *v = malloc((size_t)(n ? n : 1) * sizeof *v);
    int64_t first = -1, last = -1;
    for (long long i = 0; i < n; i++) {
        v[i] = m->fin[i].ttft;
        if (m->fin[i].start >= 0 && (first < 0 || m->fin[i].start < first))
            first = m->fin[i].start;
        if (m->fin[i].end > last)
            last = m->fin[i].end;
    }
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
    if (first >= 0 && last > first && m->out_tokens > 0)
        printf("  output tokens: %.0f, %.1f tokens/s\n", m->out_tokens,
               m->out_tokens / ((double)(last - first) / 1e9));
    if (m->stats && m->nspan_names) {
        printf("  %-26s %8s %10s %10s %10s %10s %10s %10s %12s\n", "span (ms)", "count", "min", "avg", "P50",
               "P90", "P99", "max", "total");
        for (int i = 0; i < m->nspan_names; i++) {
            spp_summary_row r;
            spp_stats_get(m->stats, i, &r);
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
