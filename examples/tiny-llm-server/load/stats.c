/* SPDX-License-Identifier: Apache-2.0 */
/*
 * stats.c — what the clients saw, summarized (see stats.h).
 *
 * TPOT (time per output token after the first) of a request is
 * (e2e - ttft) / (n_out - 1), defined only when it got two tokens or more;
 * throughput divides tokens by the wall time from the first send to the
 * last answer. Only successful requests enter the latency figures; the
 * failures are counted by kind.
 */
#include "stats.h"

#include <stdlib.h>
#include <string.h>

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

double lg_percentile(double *v, size_t n, double p)
{
    if (!n)
        return 0;
    qsort(v, n, sizeof *v, cmp_double);
    double rank = p / 100.0 * (double)(n - 1);
    size_t lo = (size_t)rank;
    if (lo + 1 >= n)
        return v[n - 1];
    return v[lo] + (rank - (double)lo) * (v[lo + 1] - v[lo]);
}

typedef struct dist {
    double mean, p50, p90, p99, max;
} dist;

static dist describe(double *v, size_t n)
{
    dist d = {0};
    if (!n)
        return d;
    double s = 0;
    for (size_t i = 0; i < n; i++)
        s += v[i];
    d.mean = s / (double)n;
    d.p50 = lg_percentile(v, n, 50);
    d.p90 = lg_percentile(v, n, 90);
    d.p99 = lg_percentile(v, n, 99);
    d.max = v[n - 1];
    return d;
}

void lg_summary(FILE *f, const lg_result *res, size_t n, size_t unsent, double wall_s, int json)
{
    double *ttft = malloc((n + 1) * sizeof *ttft), *tpot = malloc((n + 1) * sizeof *tpot);
    double *e2e = malloc((n + 1) * sizeof *e2e), *qd = malloc((n + 1) * sizeof *qd);
    if (!ttft || !tpot || !e2e || !qd) {
        fprintf(stderr, "servprof-load: out of memory for the summary\n");
        free(ttft); free(tpot); free(e2e); free(qd);
        return;
    }
    size_t ok = 0, nt = 0, np = 0, n503 = 0, n4xx = 0, nconn = 0, nother = 0;
    unsigned long out_tokens = 0, in_tokens = 0;
    for (size_t i = 0; i < n; i++) {
        const lg_result *r = &res[i];
        if (r->err[0]) {
            if (r->status == 503) n503++;
            else if (r->status >= 400 && r->status < 500) n4xx++;
            else if (r->status == 0) nconn++;
            else nother++;
            continue;
        }
        e2e[ok] = r->e2e_ms;
        qd[ok++] = r->queue_ms;
        out_tokens += (unsigned long)r->n_out;
        in_tokens += (unsigned long)r->n_prompt;
        if (r->ttft_ms >= 0)
            ttft[nt++] = r->ttft_ms;
        if (r->ttft_ms >= 0 && r->n_out > 1)
            tpot[np++] = (r->e2e_ms - r->ttft_ms) / (r->n_out - 1);
    }
    dist dt = describe(ttft, nt), dp = describe(tpot, np), de = describe(e2e, ok), dq = describe(qd, ok);
    double w = wall_s > 0 ? wall_s : 1e-9;
    if (json) {
        fprintf(f, "{\"requests\":%zu,\"unsent\":%zu,\"ok\":%zu,\"rejected_503\":%zu,\"client_errors_4xx\":%zu,"
                   "\"connection_errors\":%zu,\"other_errors\":%zu,\"wall_s\":%.3f,"
                   "\"request_throughput\":%.3f,\"output_tokens\":%lu,\"prompt_tokens\":%lu,"
                   "\"output_tokens_per_s\":%.2f,\"total_tokens_per_s\":%.2f",
                n, unsent, ok, n503, n4xx, nconn, nother, wall_s, (double)ok / w, out_tokens, in_tokens,
                (double)out_tokens / w, (double)(out_tokens + in_tokens) / w);
        const char *names[] = {"ttft_ms", "tpot_ms", "e2e_ms", "client_queue_ms"};
        dist *ds[] = {&dt, &dp, &de, &dq};
        for (int k = 0; k < 4; k++)
            fprintf(f, ",\"%s\":{\"mean\":%.3f,\"p50\":%.3f,\"p90\":%.3f,\"p99\":%.3f,\"max\":%.3f}",
                    names[k], ds[k]->mean, ds[k]->p50, ds[k]->p90, ds[k]->p99, ds[k]->max);
        fprintf(f, "}\n");
    } else {
        fprintf(f, "requests: %zu sent, %zu ok, %zu rejected (503), %zu client errors (4xx), "
                   "%zu connection errors, %zu other\n", n, ok, n503, n4xx, nconn, nother);
        if (unsent)
            fprintf(f, "%zu arrivals not sent: no client slot was free before the end of the "
                       "duration (raise --concurrency, or the server is saturated)\n", unsent);
        fprintf(f, "wall time %.2f s: %.2f req/s, %.1f output tokens/s, %.1f total tokens/s "
                   "(%lu prompt + %lu output tokens)\n",
                wall_s, (double)ok / w, (double)out_tokens / w, (double)(out_tokens + in_tokens) / w,
                in_tokens, out_tokens);
        fprintf(f, "%-22s %9s %9s %9s %9s %9s\n", "latency (ms)", "mean", "P50", "P90", "P99", "max");
        const char *names[] = {"TTFT", "TPOT", "end-to-end", "client queue"};
        dist *ds[] = {&dt, &dp, &de, &dq};
        for (int k = 0; k < 4; k++)
            fprintf(f, "%-22s %9.2f %9.2f %9.2f %9.2f %9.2f\n", names[k], ds[k]->mean, ds[k]->p50,
                    ds[k]->p90, ds[k]->p99, ds[k]->max);
    }
    free(ttft); free(tpot); free(e2e); free(qd);
}

int lg_write_csv(const char *path, const lg_result *res, size_t n)
{
    FILE *f = fopen(path, "w");
    if (!f)
        return -1;
    fprintf(f, "id,status,start_ns,end_ns,queue_ms,ttft_ms,e2e_ms,prompt_tokens,output_tokens,profiled,error\n");
    for (size_t i = 0; i < n; i++) {
        const lg_result *r = &res[i];
        char err[sizeof r->err];
        size_t k = 0;
        for (const char *p = r->err; *p && k < sizeof err - 1; p++)
            err[k++] = (*p == ',' || *p == '"' || *p == '\n') ? ' ' : *p;
        err[k] = 0;
        fprintf(f, "%s,%d,%lld,%lld,%.3f,%.3f,%.3f,%d,%d,%d,%s\n", r->id, r->status,
                (long long)r->start_ns, (long long)r->end_ns, r->queue_ms, r->ttft_ms, r->e2e_ms,
                r->n_prompt, r->n_out, r->profiled, err);
    }
    return fclose(f) ? -1 : 0;
}
