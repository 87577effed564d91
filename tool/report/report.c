/* SPDX-License-Identifier: Apache-2.0 */
/*
 * report.c — the driver of `servprof report`: input folder in, one HTML file out.
 *
 * For each run (the input, and the --compare one):
 *   1. raw stores, or a profiler.db (the input itself, or a parse output
 *      folder's)?
 *   2. analyze's JSON document (report_analyze.c): the figures, windows and
 *      findings, computed once by analyze and shown here. For raw stores the
 *      charts' rows come from that same parse (a second tap on it); nothing
 *      is written to disk but the page;
 *   3. for a profiler.db, the charts' rows are read back from its tables
 *      (report_db.c). Either way report_rows.c makes the charts' data.
 * With --from URL the run's rows and analyze come from the database it was
 * exported to (report_ch.c, an rpt_source the CLI builds), not from files.
 * With --compare, analyze's compare document of the two runs too. Everything
 * goes into one JSON document that report_html.c writes into the page.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "discover.h"
#include "fsutil.h"
#include "parse.h"
#include "plog.h"
#include "report.h"
#include "report_analyze.h"
#include "servprof.h"

typedef struct run {
    const char *input;
    char db[4096];  /* its profiler.db, "" when the input is raw stores */
    char dir[4096]; /* what analyze reads: the raw stores or the profiler.db's folder */
    rpt_rows *rows; /* the charts' rows */
    json_t *analyze;
} run;

static void run_cleanup(run *r)
{
    rpt_rows_free(r->rows);
    r->rows = NULL;
    json_decref(r->analyze);
    r->analyze = NULL;
}

/* Raw stores without analyze (--analyze-json, or analyze failed): one parse
 * with every output off, the rows through the tap. */
static int parse_rows(run *r, int progress)
{
    prs_tap tap = rpt_rows_tap(r->rows);
    prs_opts po = {.input = r->input, .output = ".", .progress = progress, .summary = 0, .tap_counters = 1, .tap = &tap};
    int level = prs_log_level();
    if (level < PRS_WARNING)
        prs_log_set_level(PRS_WARNING);
    int rc = prs_run(&po);
    prs_log_set_level(level);
    if (rc != 0) {
        fprintf(stderr, "servprof report: no raw store under %s could be read; no report written\n", r->input);
        return rc == 2 ? 2 : 1;
    }
    return 0;
}

/* Step 1: a profiler.db (the file itself, or a parse output folder's), or raw stores. */
static int find_input(run *r)
{
    struct stat sb;
    if (stat(r->input, &sb) != 0) {
        fprintf(stderr, "servprof report: input %s: %s\n", r->input, strerror(errno));
        return 2;
    }
    const char *slash = strrchr(r->input, '/');
    const char *leaf = slash ? slash + 1 : r->input;
    if (S_ISREG(sb.st_mode) && strcmp(leaf, "profiler.db") == 0) {
        snprintf(r->db, sizeof r->db, "%s", r->input);
        snprintf(r->dir, sizeof r->dir, "%.*s", slash ? (int)(slash - r->input) : 1, slash ? r->input : ".");
        return 0;
    }
    snprintf(r->dir, sizeof r->dir, "%s", r->input);
    if (S_ISDIR(sb.st_mode)) {
        snprintf(r->db, sizeof r->db, "%s/profiler.db", r->input);
        if (access(r->db, R_OK) == 0)
            return 0;
    }
    r->db[0] = 0;
    /* Raw stores: say at once when there are none (rather than through
     * analyze's and the parser's messages). */
    prs_paths paths = {0};
    int nraw = prs_discover(r->input, &paths) == 0 ? paths.nraw : -1;
    prs_paths_free(&paths);
    if (nraw == 0)
        fprintf(stderr, "servprof report: no raw store (ms_service_*.db) and no profiler.db under %s; no report "
                        "written\n", r->input);
    return nraw > 0 ? 0 : 1;
}

/* A run exported to a database (--from): the rows and analyze's document
 * from the source. Without analyze (it failed) the page still has the
 * charts, as for a local input. */
static int load_source(run *r, const rpt_source *src, const char *analyze_json, int progress)
{
    r->rows = rpt_rows_new();
    if (!r->rows || rpt_source_read(src, r->rows, progress) != 0)
        return 1;
    if (analyze_json) {
        json_error_t e;
        r->analyze = json_load_file(analyze_json, 0, &e);
        if (!r->analyze) {
            fprintf(stderr, "servprof report: --analyze-json %s: %s (line %d); no report written\n", analyze_json,
                    e.text, e.line);
            return 1;
        }
        return 0;
    }
    char err[1024] = "";
    r->analyze = src->analyze(src->ctx, err, sizeof err);
    if (!r->analyze)
        fprintf(stderr, "servprof report: analyze --from %s failed: %s; the page shows the charts without its "
                        "figures and findings\n", src->label, err[0] ? err : "no reason given");
    else
        json_object_set_new(r->analyze, "input", json_string(src->label));
    return 0;
}

static int load_run(run *r, const char *analyze_json, const char *opt, int progress)
{
    int rc = find_input(r);
    if (rc != 0)
        return rc;
    r->rows = rpt_rows_new();
    if (!r->rows)
        return 1;
    if (r->db[0] && rpt_db_read(r->db, r->rows) != 0)
        return 1;
    if (analyze_json) {
        json_error_t e;
        r->analyze = json_load_file(analyze_json, 0, &e);
        if (!r->analyze) {
            fprintf(stderr, "servprof report: %s %s: %s (line %d); no report written\n", opt, analyze_json, e.text,
                    e.line);
            return 1;
        }
    } else {
        r->analyze = rpt_analyze(r->input, r->dir, r->db[0] ? NULL : r->rows, progress);
        if (!r->analyze && !r->db[0]) {
            /* Its parse may have stopped half way: start the rows again. */
            rpt_rows_free(r->rows);
            r->rows = rpt_rows_new();
            if (!r->rows)
                return 1;
            return parse_rows(r, progress);
        }
        return 0;
    }
    return r->db[0] ? 0 : parse_rows(r, progress);
}

/* Gives each of the slowest requests its TTFT parts: analyze's (queue,
 * schedule, prefill, first-decode wait) when its breakdown holds the request,
 * else request.csv's (prefill then runs up to the first token, and schedule
 * is what is left of TTFT). Then drops analyze's per-request list from the
 * page: one row per request would make a long run's page megabytes larger,
 * and the page shows only the slowest. */
static void attach_breakdown(json_t *db, json_t *analyze)
{
    json_t *bd = json_object_get(json_object_get(analyze, "ttft_breakdown"), "requests");
    json_t *by_rid = json_object();
    size_t i;
    json_t *q;
    json_array_foreach(bd, i, q) {
        const char *rid = json_string_value(json_object_get(q, "rid"));
        if (rid)
            json_object_set(by_rid, rid, q);
    }
    json_array_foreach(json_object_get(db, "slowest"), i, q) {
        const char *rid = json_string_value(json_object_get(q, "rid"));
        json_t *a = rid ? json_object_get(by_rid, rid) : NULL;
        if (a) {
            static const char *const k[] = {"queue_ms", "schedule_ms", "prefill_ms", "first_decode_wait_ms"};
            for (int c = 0; c < 4; c++)
                json_object_set(q, k[c], json_object_get(a, k[c]) ? json_object_get(a, k[c]) : json_null());
            json_object_set_new(q, "parts_from", json_string("analyze"));
        } else {
            double ttft = json_number_value(json_object_get(q, "ttft_ms"));
            double rest = ttft - json_number_value(json_object_get(q, "queue_ms")) -
                          json_number_value(json_object_get(q, "prefill_ms"));
            json_object_set_new(q, "schedule_ms", json_real(rest > 0 ? rest : 0));
            json_object_set_new(q, "parts_from", json_string("request.csv"));
        }
    }
    json_decref(by_rid);
    json_object_del(json_object_get(analyze, "ttft_breakdown"), "requests");
}

/* The timeline files beside a parse output's profiler.db, for the page's
 * links: [{file, href, bytes}], trace.pftrace first (the one a viewer opens
 * whatever the run's length). href is the bare name when the page is
 * written into the same folder (the link survives moving both), else a
 * file:// URL of the absolute path. NULL when there is none (raw input). */
static json_t *timeline_links(const run *r, const char *page)
{
    static const char *const files[] = {"trace.pftrace", "chrome_tracing.json"};
    if (!r->db[0])
        return NULL;
    char dir[4096], pdir[4096], page_copy[4096];
    if (!realpath(r->dir, dir))
        return NULL;
    snprintf(page_copy, sizeof page_copy, "%s", page);
    char *slash = strrchr(page_copy, '/');
    if (slash)
        *slash = 0;
    int same = realpath(slash ? page_copy : ".", pdir) && strcmp(pdir, dir) == 0;
    json_t *a = json_array();
    for (int i = 0; i < 2; i++) {
        char path[4200], href[4300];
        struct stat sb;
        snprintf(path, sizeof path, "%s/%s", dir, files[i]);
        if (stat(path, &sb) != 0 || !S_ISREG(sb.st_mode))
            continue;
        if (same)
            snprintf(href, sizeof href, "%s", files[i]);
        else
            snprintf(href, sizeof href, "file://%s", path);
        json_array_append_new(a, json_pack("{s:s, s:s, s:I}", "file", files[i], "href", href,
                                           "bytes", (json_int_t)sb.st_size));
    }
    if (json_array_size(a) == 0) {
        json_decref(a);
        return NULL;
    }
    return a;
}

static json_t *run_json(run *r, const char *label, int buckets, const char *page)
{
    json_t *db = rpt_rows_json(r->rows, buckets);
    if (!db)
        return NULL;
    attach_breakdown(db, r->analyze);
    return json_pack("{s:s, s:s, s:O?, s:o, s:o?}", "label", label, "input", r->input, "analyze", r->analyze,
                     "db", db, "timeline", timeline_links(r, page));
}

/* The last `parts` components of a path, without trailing slashes, into b. */
static const char *short_name(const char *p, int parts, char *b, size_t cap)
{
    size_t n = strlen(p);
    while (n > 1 && p[n - 1] == '/')
        n--;
    const char *s = p + n;
    for (int k = 0; k < parts; k++) {
        if (k && s > p)
            s--; /* over the slash */
        while (s > p && s[-1] != '/')
            s--;
    }
    snprintf(b, cap, "%.*s", (int)(p + n - s), s);
    return b;
}

/* The page's folder, created (with its parents) as parse creates its output
 * folder, and checked before the inputs are read, so a bad -o costs no
 * parse. 0, or 1 with the message. */
static int make_output_folder(const char *output)
{
    char dir[4096];
    sp_path_dirname(output, dir, sizeof dir);
    int err = sp_mkdirs(dir, 0755);
    if (err != 0) {
        fprintf(stderr, "servprof report: cannot create the folder %s for %s: %s; no report written\n", dir,
                output, strerror(-err));
        return 1;
    }
    /* An existing output (a FIFO, /dev/null, a link) may be written in place. */
    if (access(output, F_OK) != 0 && !sp_dir_writable(dir)) {
        fprintf(stderr, "servprof report: cannot write into %s (for %s): %s; no report written\n", dir, output,
                strerror(errno ? errno : EACCES));
        return 1;
    }
    return 0;
}

int rpt_run(const rpt_opts *o)
{
    run a = {.input = o->from ? o->from->label : o->input}, b = {.input = o->compare};
    json_t *doc = NULL, *runs = NULL, *cmp = NULL;
    int rc = make_output_folder(o->output);
    if (rc == 0 && o->from)
        rc = load_source(&a, o->from, o->analyze_json, o->progress);
    else if (rc == 0)
        rc = load_run(&a, o->analyze_json, "--analyze-json", o->progress);
    if (rc == 0 && o->compare)
        rc = load_run(&b, o->compare_analyze_json, "--compare-analyze-json", o->progress);
    if (rc != 0)
        goto out;
    rc = 1;
    runs = json_array();
    json_t *ra = run_json(&a, "A", o->buckets, o->output);
    if (!ra || json_array_append_new(runs, ra) != 0)
        goto out;
    if (o->compare) {
        json_t *rb = run_json(&b, "B", o->buckets, o->output);
        if (!rb || json_array_append_new(runs, rb) != 0)
            goto out;
        if (o->compare_json) {
            json_error_t e;
            cmp = json_load_file(o->compare_json, 0, &e);
            if (!cmp) {
                fprintf(stderr, "servprof report: --compare-json %s: %s (line %d); no report written\n",
                        o->compare_json, e.text, e.line);
                goto out;
            }
        } else {
            cmp = rpt_compare(a.input, a.dir, b.input, b.dir);
        }
    }
    char title[1100], na[512], nb[512];
    if (o->compare) {
        /* Two runs' folders are often both called "prof": name them by their parents then. */
        int parts = 1;
        while (parts < 4 && !strcmp(short_name(o->input, parts, na, sizeof na),
                                    short_name(o->compare, parts, nb, sizeof nb)))
            parts++;
        snprintf(title, sizeof title, "servprof report: %s vs %s", na, nb);
    } else {
        snprintf(title, sizeof title, "servprof report: %s", short_name(a.input, 2, na, sizeof na));
    }
    doc = json_pack("{s:s, s:s, s:s, s:i, s:o, s:O?}", "title", title, "servprof", SERVPROF_VERSION, "uplot",
                    rpt_asset_uplot_version, "buckets", o->buckets, "runs", runs,
                    "compare", cmp);
    runs = NULL;
    if (!doc || rpt_html_write(o->output, doc) != 0)
        goto out;
    rc = 0;
    if (!o->quiet) {
        struct stat sb;
        long long kb = stat(o->output, &sb) == 0 ? (long long)(sb.st_size + 1023) / 1024 : -1;
        printf("report: %s (%lld KiB)%s\n", o->output, kb,
               a.analyze ? "" : " — without analyze's figures and findings (see the message above)");
    }
out:
    json_decref(runs);
    json_decref(cmp);
    json_decref(doc);
    run_cleanup(&a);
    run_cleanup(&b);
    return rc;
}
