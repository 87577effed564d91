/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_report_ops.c — op_summary.csv and op_statistic.csv from activity
 * stores written by the activity store module: statistics per device and
 * name, wait times per stream, CSV quoting of names with commas, several
 * stores merged, bad stores named and skipped, nothing written when there
 * is no kernel.
 */
#include <sys/stat.h>

#include "check.h"
#include "report_ops.h"
#include "smp_util.h"

static void add(sp_activity_store *st, const char *type, const char *name, int64_t start,
                int64_t dur, int dev, int stream, int corr)
{
    sp_act_kernel k = {type, name, start, start + dur, dev, stream, corr};
    CHECK_INT(sp_activity_store_kernel(st, &k), 0);
}

int main(void)
{
    char dir[256], a[512], b[512], bad[512], empty[512];
    smp_tmpdir(dir, sizeof dir, "ops");
    snprintf(a, sizeof a, "%s/Trace_Service/ascend_service_profiler_h-1.db", dir);
    snprintf(b, sizeof b, "%s/Trace_Service/ascend_service_profiler_h-2.db", dir);
    snprintf(bad, sizeof bad, "%s/not_a_db.db", dir);
    snprintf(empty, sizeof empty, "%s/Trace_Service/ascend_service_profiler_h-3.db", dir);
    int64_t T = 1700000000000000000LL;

    sp_activity_store *st = sp_activity_store_open(a);
    CHECK(st != NULL);
    sp_activity_store_begin(st);
    add(st, "KERNEL", "gemm", T, 1000, 0, 7, 1);
    add(st, "KERNEL", "gemm", T + 3000, 3000, 0, 7, 2);    /* waited 2 µs */
    add(st, "KERNEL", "softmax(float*, int)", T + 500, 2000, 0, 8, 3);
    add(st, "MEMCPY_HtoD", "MEMCPY_HtoD", T + 10000, 4000, 0, 7, 4);
    add(st, "KERNEL", "untimed", T + 20000, -5, 0, 7, 5);  /* end < start: ignored */
    sp_activity_store_commit(st);
    sp_activity_store_close(st);

    st = sp_activity_store_open(b);
    sp_activity_store_begin(st);
    add(st, "KERNEL", "gemm", T + 100, 2000, 1, 7, 1);
    add(st, "KERNEL", "gemm", T + 200, 6000, 0, 9, 2);
    sp_activity_store_commit(st);
    sp_activity_store_close(st);

    st = sp_activity_store_open(empty);
    sp_activity_store_close(st);
    FILE *f = fopen(bad, "w");
    fputs("this is not sqlite", f);
    fclose(f);

    /* no kernel anywhere: nothing written, success */
    const char *only_empty[] = {empty};
    CHECK_INT(prs_report_ops(only_empty, 1, dir), 0);
    char out[600];
    snprintf(out, sizeof out, "%s/op_statistic.csv", dir);
    CHECK(access(out, F_OK) != 0);
    CHECK_INT(prs_report_ops(NULL, 0, dir), 0);

    const char *paths[] = {a, bad, b, empty};
    capture_begin();
    CHECK_INT(prs_report_ops(paths, 4, dir), 0);
    char *log = capture_end();
    CHECK(strstr(log, "not_a_db.db") != NULL);
    free(log);

    char *stat = check_slurp(out);
    CHECK(stat != NULL);
    if (stat) {
        fprintf(stderr, "--- op_statistic.csv\n%s", stat);
        CHECK(!strncmp(stat, "Device_id,OP Type,Op Name,Count,Total Time(us),Min Time(us),"
                             "Avg Time(us),Max Time(us),Ratio(%)\n", 80));
        /* device 0: gemm 1+3+6 = 10 µs of 16 busy; memcpy 4; softmax 2 */
        CHECK(strstr(stat, "0,KERNEL,gemm,3,10.000,1.000,3.333,6.000,62.50\n") != NULL);
        CHECK(strstr(stat, "0,MEMCPY_HtoD,MEMCPY_HtoD,1,4.000,4.000,4.000,4.000,25.00\n") != NULL);
        CHECK(strstr(stat, "0,KERNEL,\"softmax(float*, int)\",1,2.000,2.000,2.000,2.000,12.50\n")
              != NULL);
        CHECK(strstr(stat, "1,KERNEL,gemm,1,2.000,2.000,2.000,2.000,100.00\n") != NULL);
        CHECK(strstr(stat, "untimed") == NULL);
        /* largest total first within a device */
        CHECK(strstr(stat, "0,KERNEL,gemm") < strstr(stat, "0,MEMCPY_HtoD"));
        free(stat);
    }
    snprintf(out, sizeof out, "%s/op_summary.csv", dir);
    char *sum = check_slurp(out);
    CHECK(sum != NULL);
    if (sum) {
        fprintf(stderr, "--- op_summary.csv\n%s", sum);
        CHECK(!strncmp(sum, "Device_id,Stream ID,Op Name,OP Type,Task Start Time(us),"
                            "Task Duration(us),Task Wait Time(us),Correlation ID\n", 70));
        CHECK_INT(count_substr(sum, "\n"), 1 + 6);
        CHECK(strstr(sum, "0,7,gemm,KERNEL,1700000000000000.000,1.000,0.000,1\n") != NULL);
        CHECK(strstr(sum, "0,7,gemm,KERNEL,1700000000000003.000,3.000,2.000,2\n") != NULL);
        CHECK(strstr(sum, "0,7,MEMCPY_HtoD,MEMCPY_HtoD,1700000000000010.000,4.000,4.000,4\n")
              != NULL);
        free(sum);
    }

    /* an output folder that cannot be written: an error, named */
    capture_begin();
    CHECK_INT(prs_report_ops(paths, 1, "/nonexistent/out"), -1);
    log = capture_end();
    CHECK(strstr(log, "/nonexistent/out/op_summary.csv") != NULL);
    free(log);

    /* the activity store refuses a folder it cannot create, with a message */
    capture_begin();
    CHECK(sp_activity_store_open("/proc/servprof/x.db") == NULL);
    log = capture_end();
    CHECK(strstr(log, "/proc/servprof/x.db") != NULL);
    free(log);
    CHECK_DONE();
}
