/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_torch_trace.c — torch profiler traces (torch_prof_*.json, written by
 * the Python binding with acl_task_time 3) in the op reports: host ops on
 * Device_id -1 with their thread as stream, device kernels on their device,
 * counts and totals from the µs times and baseTimeNanoseconds; events that
 * are not whole "X" events skipped; files that are not such traces named and
 * skipped while the others are still reported. Runs in every build
 * (the Python tests that produce real traces run in the plain one only).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "report_ops.h"

static void put(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    CHECK(f != NULL);
    if (!f)
        return;
    fputs(text, f);
    fclose(f);
}

int main(void)
{
    char dir[] = "/tmp/servprof-torch-XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    char good[300], bad[300], nobase[300], out[300];
    snprintf(good, sizeof good, "%s/torch_prof_h-1.json", dir);
    snprintf(bad, sizeof bad, "%s/torch_prof_h-2.json", dir);
    snprintf(nobase, sizeof nobase, "%s/torch_prof_h-3.json", dir);
    snprintf(out, sizeof out, "%s/out", dir);
    CHECK_INT(mkdir(out, 0755), 0);
    put(good,
        "{\"schemaVersion\":1,\"baseTimeNanoseconds\":1700000000000000000,\"traceEvents\":["
        "{\"ph\":\"X\",\"name\":\"aten::linear\",\"ts\":10,\"dur\":30,\"cat\":\"cpu_op\",\"tid\":1},"
        "{\"ph\":\"X\",\"name\":\"aten::addmm\",\"ts\":12.5,\"dur\":20,\"cat\":\"cpu_op\",\"tid\":1,"
        " \"args\":{\"Input Dims\":[[16],[2,16],[16,16]]}},"
        "{\"ph\":\"X\",\"name\":\"aten::addmm\",\"ts\":50,\"dur\":10,\"cat\":\"cpu_op\",\"tid\":1},"
        "{\"ph\":\"X\",\"name\":\"gemm, fp32\",\"ts\":20,\"dur\":4,\"cat\":\"kernel\",\"tid\":0},"
        "{\"ph\":\"i\",\"name\":\"instant\",\"ts\":5},"
        "{\"ph\":\"X\",\"name\":\"no duration\",\"ts\":5,\"cat\":\"cpu_op\",\"tid\":1},"
        "{\"ph\":\"X\",\"name\":\"negative\",\"ts\":5,\"dur\":-1,\"cat\":\"cpu_op\",\"tid\":1}"
        "]}");
    put(bad, "{\"traceEvents\": [ {\"ph\": \"X\", ");  /* cut off: not JSON */
    put(nobase, "{\"traceEvents\": []}");
    const char *torch[] = {good, bad, nobase};
    CHECK_INT(prs_report_ops_all(NULL, 0, torch, 3, out, NULL), 0);

    char path[400];
    snprintf(path, sizeof path, "%s/op_statistic.csv", out);
    char *stat = check_slurp(path);
    CHECK(stat != NULL);
    /* Host: 60 µs in all (linear 30 + addmm 20 + 10); addmm 30/60 = 50 %. */
    CHECK(strstr(stat, "-1,cpu_op,aten::addmm,2,30.000,10.000,15.000,20.000,50.00\n") != NULL);
    CHECK(strstr(stat, "-1,cpu_op,aten::linear,1,30.000,30.000,30.000,30.000,50.00\n") != NULL);
    CHECK(strstr(stat, "0,kernel,\"gemm, fp32\",1,4.000,4.000,4.000,4.000,100.00\n") != NULL);
    CHECK(strstr(stat, "no duration") == NULL);
    CHECK(strstr(stat, "negative") == NULL);
    CHECK(strstr(stat, "instant") == NULL);
    free(stat);

    snprintf(path, sizeof path, "%s/op_summary.csv", out);
    char *summ = check_slurp(path);
    CHECK(summ != NULL);
    /* Start = base + ts; stream = torch's thread. Wait = start - the end of
     * the op before it by start on that thread (as for kernels): the addmm
     * at 50 follows the addmm that ended at 32.5; the one at 12.5 overlaps
     * the linear (no wait). */
    CHECK(strstr(summ, "-1,1,aten::addmm,cpu_op,1700000000000012.500,20.000,0.000,0\n") != NULL);
    CHECK(strstr(summ, "-1,1,aten::addmm,cpu_op,1700000000000050.000,10.000,17.500,0\n") != NULL);
    CHECK(strstr(summ, "0,0,\"gemm, fp32\",kernel,1700000000000020.000,4.000,0.000,0\n") != NULL);
    free(summ);

    /* Only bad files: nothing written, no error. */
    char out2[320];
    snprintf(out2, sizeof out2, "%s/out2", dir);
    CHECK_INT(mkdir(out2, 0755), 0);
    const char *only_bad[] = {bad, nobase};
    CHECK_INT(prs_report_ops_all(NULL, 0, only_bad, 2, out2, NULL), 0);
    snprintf(path, sizeof path, "%s/op_summary.csv", out2);
    CHECK(access(path, F_OK) != 0);

    char cmd[400];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    CHECK_INT(system(cmd), 0);
    CHECK_DONE();
}
