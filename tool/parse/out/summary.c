/* SPDX-License-Identifier: Apache-2.0 */
/*
 * summary.c — the answer on the terminal before any file is opened: what
 * was read (stores, records, time span), what was written, and the
 * headline numbers (requests, TTFT / TPOT / end-to-end P50 and P99, output
 * tokens/s), plus per-span statistics when --span was given. Printed on
 * stdout (it is the command's output; messages go to stderr). The lines
 * common to every parse are here; each report adds its own lines through
 * its summary hook (prs_model_summary, in the reports' table order), and
 * the reports with a `table` hook are counted in the "wrote" and "rows"
 * lines.
 */
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "stats.h"
#include "summary.h"

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
    const prs_table *all[64];
    int nall = 0;
    for (int i = 0; i < prs_nreports && nall < 64; i++)
        if (m->rep[i] && prs_reports[i]->table)
            all[nall++] = prs_reports[i]->table(m->rep[i]);
    char wrote[1024] = "";
    size_t w = 0;
#define WROTE(name) \
    if (written_now(out, name, started_ns) && w < sizeof wrote) \
        w += (size_t)snprintf(wrote + w, sizeof wrote - w, " %s", name)
    for (int i = 0; i < nall; i++)
        if (m->opts->csv && all[i]->rows) {
            WROTE(all[i]->csv_name);
        }
    if (m->opts->csv && prs_spaninfo_on(m)) {
        WROTE("span_info/");
    }
    if (m->opts->json) {
        WROTE("chrome_tracing.json");
    }
    if (m->opts->perfetto) {
        WROTE("trace.pftrace");
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
    if (m->opts->csv || m->opts->db) {
        printf("  rows%s:", m->opts->csv ? "" : " (in profiler.db)");
        for (int i = 0; i < nall; i++)
            printf(" %s %lld%s", all[i]->key, all[i]->rows, i < nall - 1 ? "," : "\n");
    }
    prs_model_summary(m, ss);
    fflush(stdout);
}
