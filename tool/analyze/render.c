/* SPDX-License-Identifier: Apache-2.0 */
/*
 * render.c — the analyze document as terminal tables and as CSV files.
 * Everything here reads the JSON document (never the profile), so text,
 * CSV and JSON cannot disagree.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "render.h"

static double num(json_t *o, const char *key)
{
    json_t *v = json_object_get(o, key);
    return json_is_number(v) ? json_number_value(v) : NAN;
}

static json_t *path(json_t *o, const char *a, const char *b)
{
    return json_object_get(json_object_get(o, a), b);
}

/* "%*.*f", or "-" when unknown. */
static void cell(FILE *f, double v, int w, int prec)
{
    if (isnan(v))
        fprintf(f, " %*s", w, "-");
    else
        fprintf(f, " %*.*f", w, prec, v);
}

/* "%.*f" (times scale, then suffix) into buf, or "-" when unknown (an empty
 * profile has no mean batch or KV peak): a figure never reads "nan". */
static const char *fig(char buf[40], double v, double scale, int prec, const char *suffix)
{
    if (isnan(v))
        return "-";
    snprintf(buf, 40, "%.*f%s", prec, v * scale, suffix);
    return buf;
}

static void when(FILE *f, long long ns, long long t0)
{
    time_t s = (time_t)(ns / 1000000000);
    struct tm tm;
    localtime_r(&s, &tm);
    char buf[32];
    strftime(buf, sizeof buf, "%H:%M:%S", &tm);
    fprintf(f, "%s.%03lld (+%.3f s)", buf, (ns / 1000000) % 1000, (double)(ns - t0) / 1e9);
}

static void pct_line(FILE *f, const char *name, json_t *p)
{
    fprintf(f, "  %-22s", name);
    cell(f, num(p, "n"), 7, 0);
    static const char *const keys[] = {"mean", "p50", "p90", "p99", "max"};
    for (int i = 0; i < 5; i++)
        cell(f, num(p, keys[i]), 9, 2);
    fputc('\n', f);
}

static void findings_text(FILE *f, json_t *doc, long long t0)
{
    json_t *fs = json_object_get(doc, "findings");
    const char *verdict = json_string_value(path(doc, "headline", "verdict"));
    fprintf(f, "\nVerdict: %s\n", !strcmp(verdict, "bottleneck") ? "bottleneck found (ranked below)"
                                   : !strcmp(verdict, "under_loaded") ? "under-loaded; no bottleneck"
                                   : !strcmp(verdict, "no_data") ? "no requests or steps in the profile"
                                                                 : "no bottleneck found");
    size_t i;
    json_t *x;
    json_array_foreach(fs, i, x) {
        json_t *fig = json_object_get(x, "figure"), *th = json_object_get(x, "threshold");
        fprintf(f, "%2d. [%s] %s\n", (int)json_integer_value(json_object_get(x, "rank")),
                json_string_value(json_object_get(x, "id")), json_string_value(json_object_get(x, "title")));
        fprintf(f, "    figure: %s = %.3f (threshold %s %s %.3f)\n", json_string_value(json_object_get(fig, "name")),
                num(fig, "value"), json_string_value(json_object_get(th, "name")),
                json_string_value(json_object_get(th, "op")), num(th, "value"));
        fprintf(f, "    evidence: %s\n", json_string_value(json_object_get(x, "evidence")));
        json_t *w = json_object_get(x, "windows");
        if (json_array_size(w)) {
            fprintf(f, "    windows:");
            size_t k;
            json_t *y;
            json_array_foreach(w, k, y) fprintf(f, " %lld", (long long)json_integer_value(y));
            fputc('\n', f);
        }
        size_t k;
        json_t *e;
        json_array_foreach(json_object_get(x, "examples"), k, e) {
            fprintf(f, "    look at: ");
            when(f, (long long)json_integer_value(json_object_get(e, "ts_ns")), t0);
            const char *rid = json_string_value(json_object_get(e, "rid"));
            if (rid)
                fprintf(f, " request %s", rid);
            fprintf(f, ": %s\n", json_string_value(json_object_get(e, "what")));
        }
        fprintf(f, "    knob: %s\n", json_string_value(json_object_get(x, "knob")));
    }
}

void sa_render_findings(json_t *doc, FILE *f)
{
    findings_text(f, doc, (long long)json_integer_value(path(doc, "run", "start_ns")));
}

static void summary_table(FILE *f, const char *title, json_t *rows)
{
    fprintf(f, "\n%s\n  %-32s %12s %12s %12s %12s %12s %12s\n", title, "Metric", "Average", "Max", "Min", "P50",
            "P90", "P99");
    size_t i;
    json_t *r;
    json_array_foreach(rows, i, r) {
        fprintf(f, "  %-32s", json_string_value(json_object_get(r, "metric")));
        static const char *const keys[] = {"average", "max", "min", "p50", "p90", "p99"};
        for (int k = 0; k < 6; k++)
            cell(f, num(r, keys[k]), 12, 4);
        fputc('\n', f);
    }
}

void sa_render_text(json_t *doc, FILE *f)
{
    json_t *run = json_object_get(doc, "run"), *h = json_object_get(doc, "headline");
    long long t0 = (long long)json_integer_value(json_object_get(run, "start_ns"));
    const char *src = json_string_value(json_object_get(doc, "source"));
    fprintf(f, "servprof analyze: %s (%s", json_string_value(json_object_get(doc, "input")),
            !strcmp(src, "raw") ? "raw stores" : !strcmp(src, "clickhouse") ? "ClickHouse" : "profiler.db");
    if (json_is_integer(json_object_get(run, "records")))
        fprintf(f, ", %lld records", (long long)json_integer_value(json_object_get(run, "records")));
    fprintf(f, ", %zu process(es))\n", json_array_size(json_object_get(run, "processes")));
    char b[6][40];
    fprintf(f, "run %s s: %lld requests (%lld complete, %lld cut by the collection window), %s req/s, "
               "%s output tokens/s\n",
            fig(b[0], num(run, "duration_s"), 1, 2, ""), (long long)num(h, "requests"), (long long)num(h, "complete"),
            (long long)num(h, "incomplete"), fig(b[1], num(h, "throughput_rps"), 1, 2, ""),
            fig(b[2], num(h, "output_tokens_per_s"), 1, 1, ""));
    fprintf(f, "engine time: busy %s, stalled %s (work waiting, device idle), idle %s (nothing to "
               "run); mean batch %s; KV peak %s; %lld preemption(s)\n",
            fig(b[0], num(h, "busy_frac"), 100, 1, "%"), fig(b[1], num(h, "stalled_frac"), 100, 1, "%"),
            fig(b[2], num(h, "idle_frac"), 100, 1, "%"), fig(b[3], num(h, "batch_size_mean"), 1, 2, ""),
            fig(b[4], num(h, "kv_usage_peak"), 100, 1, "%"), (long long)num(h, "preemptions"));
    json_t *q = json_object_get(doc, "data_quality");
    if (json_integer_value(json_object_get(q, "duplicate_ids")) > 0)
        fprintf(f, "data quality: %lld id(s) linked from two process stores (first: %s): their requests "
                   "were merged into one; ids must be unique across processes\n",
                (long long)json_integer_value(json_object_get(q, "duplicate_ids")),
                json_string_value(json_object_get(q, "duplicate_example")));
    if (json_integer_value(json_object_get(q, "figures_left_empty")) > 0)
        fprintf(f, "data quality: %lld figure(s) left empty (a first token outside its request's life, or "
                   "an end before the start: check the clocks and the request ids)\n",
                (long long)json_integer_value(json_object_get(q, "figures_left_empty")));
    findings_text(f, doc, t0);

    fprintf(f, "\nLatency of complete requests (ms)   %7s %9s %9s %9s %9s %9s\n", "n", "mean", "P50", "P90", "P99",
            "max");
    pct_line(f, "TTFT", json_object_get(h, "ttft_ms"));
    pct_line(f, "TPOT", json_object_get(h, "tpot_ms"));
    pct_line(f, "end-to-end", json_object_get(h, "e2e_ms"));
    pct_line(f, "queue wait", json_object_get(h, "queue_ms"));
    json_t *tb = path(doc, "ttft_breakdown", "percentiles");
    fprintf(f, "\nTTFT breakdown (ms)                 %7s %9s %9s %9s %9s %9s\n", "n", "mean", "P50", "P90", "P99",
            "max");
    pct_line(f, "queue", json_object_get(tb, "queue_ms"));
    pct_line(f, "schedule", json_object_get(tb, "schedule_ms"));
    pct_line(f, "prefill", json_object_get(tb, "prefill_ms"));
    pct_line(f, "first-decode wait", json_object_get(tb, "first_decode_wait_ms"));

    json_t *ws = json_object_get(doc, "windows");
    fprintf(f, "\nWindows (%lld x %.2f s; requests by end, steps by start)\n", (long long)num(ws, "count"),
            num(ws, "width_s"));
    fprintf(f, "  %3s %8s %6s %7s %8s %8s %8s %8s %6s %6s %6s %6s %6s %6s\n", "#", "start_s", "done", "req/s",
            "TTFTp90", "TPOTp90", "e2e_p90", "queue90", "pf_bs", "dc_bs", "KVmax", "busy", "stall", "idle");
    size_t i;
    json_t *w;
    json_array_foreach(json_object_get(ws, "rows"), i, w) {
        if (strcmp(json_string_value(json_object_get(w, "scope")), "all") != 0)
            continue;
        fprintf(f, "  %3lld", (long long)num(w, "index"));
        cell(f, (num(w, "start_ns") - (double)t0) / 1e9, 8, 2);
        cell(f, num(w, "finished"), 6, 0);
        cell(f, num(w, "throughput_rps"), 7, 2);
        cell(f, num(json_object_get(w, "ttft_ms"), "p90"), 8, 1);
        cell(f, num(json_object_get(w, "tpot_ms"), "p90"), 8, 2);
        cell(f, num(json_object_get(w, "e2e_ms"), "p90"), 8, 1);
        cell(f, num(json_object_get(w, "queue_ms"), "p90"), 8, 1);
        cell(f, num(path(w, "steps", "prefill"), "batch_size_mean"), 6, 2);
        cell(f, num(path(w, "steps", "decode"), "batch_size_mean"), 6, 2);
        cell(f, 100 * num(w, "kv_usage_max"), 6, 1);
        cell(f, 100 * num(w, "busy_frac"), 6, 1);
        cell(f, 100 * num(w, "stalled_frac"), 6, 1);
        cell(f, 100 * num(w, "idle_frac"), 6, 1);
        fputc('\n', f);
    }

    fprintf(f, "\nSlowest requests (ms)\n  %-24s %9s %9s %9s %9s %9s  %s\n", "request", "e2e", "TTFT", "queue",
            "prefill", "decode", "dominant");
    json_t *r;
    json_array_foreach(json_object_get(doc, "slowest"), i, r) {
        if (i >= 5)
            break;
        fprintf(f, "  %-24s", json_string_value(json_object_get(r, "rid")));
        cell(f, num(r, "e2e_ms"), 9, 1);
        cell(f, num(r, "ttft_ms"), 9, 1);
        cell(f, num(r, "queue_ms"), 9, 1);
        cell(f, num(r, "prefill_ms"), 9, 1);
        cell(f, num(r, "decode_ms"), 9, 1);
        fprintf(f, "  %s\n", json_string_value(json_object_get(r, "dominant")));
    }
    json_t *sum = json_object_get(doc, "summaries");
    summary_table(f, "request_summary", json_object_get(sum, "request"));
    summary_table(f, "batch_summary", json_object_get(sum, "batch"));
    fprintf(f, "\nservice_summary\n");
    json_array_foreach(json_object_get(sum, "service"), i, r) {
        fprintf(f, "  %-36s", json_string_value(json_object_get(r, "metric")));
        cell(f, num(r, "value"), 14, 4);
        fputc('\n', f);
    }
}

/* ------------------------------------------------------------------ CSV */

static void csv_num(FILE *f, double v)
{
    if (!isnan(v))
        fprintf(f, "%.4f", v);
}

void sa_csv_str(FILE *f, const char *s)
{
    if (!s)
        return;
    if (!strpbrk(s, ",\"\n\r")) {
        fputs(s, f);
        return;
    }
    fputc('"', f);
    for (; *s; s++) {
        if (*s == '"')
            fputc('"', f);
        fputc(*s, f);
    }
    fputc('"', f);
}

/* ",v" for each of the n keys of object o. */
static void csv_nums(FILE *f, json_t *o, const char *const *keys, int n)
{
    for (int k = 0; k < n; k++) {
        fputc(',', f);
        csv_num(f, num(o, keys[k]));
    }
}

static void csv_stats(FILE *f, json_t *rows)
{
    fputs("Metric,Average,Max,Min,P50,P90,P99\n", f);
    size_t i;
    json_t *r;
    json_array_foreach(rows, i, r) {
        sa_csv_str(f, json_string_value(json_object_get(r, "metric")));
        static const char *const keys[] = {"average", "max", "min", "p50", "p90", "p99"};
        csv_nums(f, r, keys, 6);
        fputc('\n', f);
    }
}

static void csv_service(FILE *f, json_t *rows)
{
    fputs("Metric,Value\n", f);
    size_t i;
    json_t *r;
    json_array_foreach(rows, i, r) {
        sa_csv_str(f, json_string_value(json_object_get(r, "metric")));
        fputc(',', f);
        csv_num(f, num(r, "value"));
        fputc('\n', f);
    }
}

static void csv_findings(FILE *f, json_t *doc)
{
    fputs("rank,id,bottleneck,score,title,figure,value,threshold,op,limit,windows,knob\n", f);
    size_t i;
    json_t *x;
    json_array_foreach(json_object_get(doc, "findings"), i, x) {
        json_t *fig = json_object_get(x, "figure"), *th = json_object_get(x, "threshold");
        fprintf(f, "%lld,", (long long)num(x, "rank"));
        sa_csv_str(f, json_string_value(json_object_get(x, "id")));
        fprintf(f, ",%d,", json_is_true(json_object_get(x, "bottleneck")));
        csv_num(f, num(x, "score"));
        fputc(',', f);
        sa_csv_str(f, json_string_value(json_object_get(x, "title")));
        fputc(',', f);
        sa_csv_str(f, json_string_value(json_object_get(fig, "name")));
        fputc(',', f);
        csv_num(f, num(fig, "value"));
        fputc(',', f);
        sa_csv_str(f, json_string_value(json_object_get(th, "name")));
        fputc(',', f);
        sa_csv_str(f, json_string_value(json_object_get(th, "op")));
        fputc(',', f);
        csv_num(f, num(th, "value"));
        fputc(',', f);
        char wl[256] = "";
        size_t k;
        json_t *y;
        json_array_foreach(json_object_get(x, "windows"), k, y) {
            size_t n = strlen(wl);
            snprintf(wl + n, sizeof wl - n, "%s%lld", k ? " " : "", (long long)json_integer_value(y));
        }
        sa_csv_str(f, wl);
        fputc(',', f);
        sa_csv_str(f, json_string_value(json_object_get(x, "knob")));
        fputc('\n', f);
    }
}

static void csv_windows(FILE *f, json_t *doc)
{
    fputs("scope,prof_id,dp_rank,index,start_ns,end_ns,finished,throughput_rps,output_tokens_per_s,"
          "ttft_p50_ms,ttft_p90_ms,ttft_p99_ms,tpot_p50_ms,tpot_p90_ms,tpot_p99_ms,e2e_p50_ms,e2e_p90_ms,"
          "e2e_p99_ms,queue_p50_ms,queue_p90_ms,queue_p99_ms,prefill_steps,prefill_batch_mean,"
          "prefill_tokens_mean,prefill_step_ms_mean,decode_steps,decode_batch_mean,decode_tokens_mean,"
          "decode_step_ms_mean,mixed_steps,mixed_batch_mean,mixed_tokens_mean,mixed_step_ms_mean,"
          "kv_usage_mean,kv_usage_max,preemptions,busy_frac,stalled_frac,idle_frac\n",
          f);
    size_t i;
    json_t *w;
    json_array_foreach(path(doc, "windows", "rows"), i, w) {
        sa_csv_str(f, json_string_value(json_object_get(w, "scope")));
        fputc(',', f);
        sa_csv_str(f, json_string_value(json_object_get(w, "prof_id")));
        fputc(',', f);
        if (json_is_integer(json_object_get(w, "dp_rank")))
            fprintf(f, "%lld", (long long)num(w, "dp_rank"));
        fprintf(f, ",%lld,%lld,%lld,%lld,", (long long)num(w, "index"),
                (long long)json_integer_value(json_object_get(w, "start_ns")),
                (long long)json_integer_value(json_object_get(w, "end_ns")), (long long)num(w, "finished"));
        csv_num(f, num(w, "throughput_rps"));
        fputc(',', f);
        csv_num(f, num(w, "output_tokens_per_s"));
        static const char *const ps[] = {"ttft_ms", "tpot_ms", "e2e_ms", "queue_ms"};
        static const char *const qs[] = {"p50", "p90", "p99"};
        for (int a = 0; a < 4; a++)
            csv_nums(f, json_object_get(w, ps[a]), qs, 3);
        static const char *const kinds[] = {"prefill", "decode", "mixed"};
        static const char *const ks[] = {"count", "batch_size_mean", "tokens_mean", "step_ms_mean"};
        for (int a = 0; a < 3; a++)
            csv_nums(f, path(w, "steps", kinds[a]), ks, 4);
        static const char *const tail[] = {"kv_usage_mean", "kv_usage_max", "preemptions", "busy_frac",
                                           "stalled_frac", "idle_frac"};
        csv_nums(f, w, tail, 6);
        fputc('\n', f);
    }
}

static void csv_ttft(FILE *f, json_t *doc)
{
    fputs("rid,start_ns,ttft_ms,queue_ms,schedule_ms,prefill_ms,first_decode_wait_ms\n", f);
    size_t i;
    json_t *r;
    json_array_foreach(path(doc, "ttft_breakdown", "requests"), i, r) {
        sa_csv_str(f, json_string_value(json_object_get(r, "rid")));
        fprintf(f, ",%lld", (long long)json_integer_value(json_object_get(r, "start_ns")));
        static const char *const ks[] = {"ttft_ms", "queue_ms", "schedule_ms", "prefill_ms", "first_decode_wait_ms"};
        csv_nums(f, r, ks, 5);
        fputc('\n', f);
    }
}

void sa_render_csv(json_t *doc, FILE *f)
{
    json_t *sum = json_object_get(doc, "summaries");
    fputs("# request_summary.csv\n", f);
    csv_stats(f, json_object_get(sum, "request"));
    fputs("# batch_summary.csv\n", f);
    csv_stats(f, json_object_get(sum, "batch"));
    fputs("# service_summary.csv\n", f);
    csv_service(f, json_object_get(sum, "service"));
    fputs("# findings.csv\n", f);
    csv_findings(f, doc);
}

typedef void (*writer)(FILE *f, json_t *doc);

static void w_req(FILE *f, json_t *d) { csv_stats(f, path(d, "summaries", "request")); }
static void w_batch(FILE *f, json_t *d) { csv_stats(f, path(d, "summaries", "batch")); }
static void w_service(FILE *f, json_t *d) { csv_service(f, path(d, "summaries", "service")); }
static void w_json(FILE *f, json_t *d)
{
    json_dumpf(d, f, JSON_INDENT(1) | JSON_REAL_PRECISION(10));
    fputc('\n', f);
}

int sa_render_files(json_t *doc, const char *dir, char *err, size_t errcap)
{
    if (mkdir(dir, 0755) != 0 && errno != EEXIST) {
        snprintf(err, errcap, "cannot create %s: %s", dir, strerror(errno));
        return -1;
    }
    static const struct { const char *name; writer fn; } files[] = {
        {"request_summary.csv", w_req}, {"batch_summary.csv", w_batch}, {"service_summary.csv", w_service},
        {"findings.csv", csv_findings}, {"windows.csv", csv_windows}, {"ttft_breakdown.csv", csv_ttft},
        {"analyze.json", w_json},
    };
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
        char p[4096];
        snprintf(p, sizeof p, "%s/%s", dir, files[i].name);
        FILE *f = fopen(p, "w");
        if (!f) {
            snprintf(err, errcap, "cannot write %s: %s", p, strerror(errno));
            return -1;
        }
        files[i].fn(f, doc);
        if (fclose(f) != 0) {
            snprintf(err, errcap, "writing %s failed: %s", p, strerror(errno));
            remove(p);
            return -1;
        }
    }
    return 0;
}
