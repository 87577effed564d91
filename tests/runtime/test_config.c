/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_config.c — every config key: valid values, each kind of invalid
 * value (one warning naming key, bad value and value used), missing keys
 * (defaults), unknown keys ("did you mean"), syntax errors (line:column,
 * previous config untouched), prof_dir expansion, default files and
 * auto-creation (and each refusal), and the textual "enable" edit.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "fsutil.h"
#include "internal.h"
#include "runtime.h"

static char msgs[64][1024];
static int nmsgs;

static void collect(void *ctx, int is_error, const char *msg)
{
    (void)ctx;
    if (nmsgs < 64)
        snprintf(msgs[nmsgs++], sizeof msgs[0], "%s%s", is_error ? "E:" : "W:", msg);
}

/* Parses text; returns rc, fills c and the diag counts. */
static int parse(const char *text, sp_config *c, sp_config_diag *d)
{
    nmsgs = 0;
    memset(d, 0, sizeof *d);
    d->emit = collect;
    return sp_config_parse(text, strlen(text), c, d);
}

/* One key with one value: expects `warnings` messages; the first must
 * contain every needle given (NULL-terminated). */
static sp_config one(const char *key, const char *json_value, int warnings, ...)
{
    char text[2048];
    snprintf(text, sizeof text, "{\"%s\": %s}", key, json_value);
    sp_config c;
    sp_config_diag d;
    int rc = parse(text, &c, &d);
    CHECK_INT(rc, 0);
    CHECK_INT(d.nerrors, 0);
    if (d.nwarnings != warnings)
        fprintf(stderr, "  for %s\n", text);
    CHECK_INT(d.nwarnings, warnings);
    va_list ap;
    va_start(ap, warnings);
    for (const char *needle; (needle = va_arg(ap, const char *));) {
        int found = nmsgs > 0 && strstr(msgs[0], needle);
        if (!found)
            fprintf(stderr, "  message for %s lacks \"%s\": %s\n", text, needle,
                    nmsgs ? msgs[0] : "(none)");
        CHECK(found);
    }
    va_end(ap);
    return c;
}

static void test_defaults(void)
{
    sp_config c;
    sp_config_diag d;
    setenv("HOME", "/home/tester", 1);
    CHECK_INT(parse("{}", &c, &d), 0);
    CHECK_INT(d.nwarnings + d.nerrors, 0);
    CHECK_INT(c.enable, 0);
    CHECK_INT(c.metric_enable, 0);
    CHECK_STR(c.prof_dir, "/home/tester/.ms_server_profiler");
    CHECK_INT(c.profiler_level, 20);
    CHECK_INT(c.host_system_usage_freq, -1);
    CHECK_INT(c.npu_memory_usage_freq, -1);
    CHECK_INT(c.acl_task_time, 0);
    CHECK_INT(c.acl_prof_task_time_level, 0);
    CHECK_INT(c.acl_prof_task_time_seconds, 0);
    CHECK_STR(c.acl_data_type_config, "");
    CHECK_STR(c.aclprof_aicore_metrics, "ACL_AICORE_PIPE_UTILIZATION");
    CHECK_STR(c.api_filter, "");
    CHECK_STR(c.kernel_filter, "");
    CHECK_INT(c.timelimit, 0);
    CHECK_INT(c.ndomains, 0);
    CHECK_INT(c.torch_prof_stack, 0);
    CHECK_INT(c.torch_prof_modules, 0);
    CHECK_INT(c.torch_prof_step_num, 0);
    CHECK_INT(c.profiler_step_num, 0);
    CHECK_INT(c.buffer_bytes, SP_DEFAULT_BUFFER_KB * 1024);
}

static void test_enable(void)
{
    CHECK_INT(one("enable", "1", 0, NULL).enable, 1);
    CHECK_INT(one("enable", "0", 0, NULL).enable, 0);
    CHECK_INT(one("enable", "2", 1, "'enable'", "2", "using 0", NULL).enable, 0);
    CHECK_INT(one("enable", "true", 1, "'enable'", "true", "using 0", NULL).enable, 0);
    CHECK_INT(one("enable", "\"1\"", 1, "'enable'", "\"1\"", "using 0", NULL).enable, 0);
    CHECK_INT(one("enable", "1.0", 1, "'enable'", "using 0", NULL).enable, 0);
    CHECK_INT(one("enable", "null", 1, "'enable'", "null", NULL).enable, 0);
}

static void test_flags(void)
{
    CHECK_INT(one("metric_enable", "1", 0, NULL).metric_enable, 1);
    CHECK_INT(one("metric_enable", "true", 0, NULL).metric_enable, 1);
    CHECK_INT(one("metric_enable", "false", 0, NULL).metric_enable, 0);
    CHECK_INT(one("metric_enable", "5", 1, "'metric_enable'", "5", "using 0", NULL).metric_enable, 0);
    CHECK_INT(one("metric_enable", "\"on\"", 1, "'metric_enable'", "\"on\"", NULL).metric_enable, 0);
    CHECK_INT(one("torch_prof_stack", "true", 0, NULL).torch_prof_stack, 1);
    CHECK_INT(one("torch_prof_stack", "\"yes\"", 1, "'torch_prof_stack'", "using false", NULL)
                  .torch_prof_stack, 0);
    CHECK_INT(one("torch_prof_modules", "true", 0, NULL).torch_prof_modules, 1);
    CHECK_INT(one("torch_prof_modules", "[]", 1, "'torch_prof_modules'", "[]", NULL)
                  .torch_prof_modules, 0);
}

static void test_level(void)
{
    static const struct { const char *v; int level; } ok[] = {
        {"\"ERROR\"", 10}, {"\"L0\"", 10}, {"\"info\"", 20}, {"\"L1\"", 20}, {"\"Detailed\"", 30},
        {"\"l2\"", 30}, {"\"VERBOSE\"", 40}, {"10", 10}, {"20", 20}, {"30", 30}, {"40", 40},
        {"\" INFO \"", 20},
    };
    for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++)
        CHECK_INT(one("profiler_level", ok[i].v, 0, NULL).profiler_level, ok[i].level);
    CHECK_INT(one("profiler_level", "\"LOUD\"", 1, "'profiler_level'", "\"LOUD\"", "using INFO",
                  NULL).profiler_level, 20);
    CHECK_INT(one("profiler_level", "25", 1, "25", "using INFO", NULL).profiler_level, 20);
    CHECK_INT(one("profiler_level", "true", 1, "true", "using INFO", NULL).profiler_level, 20);
    CHECK_STR(sp_config_level_name(10), "ERROR");
    CHECK_STR(sp_config_level_name(20), "INFO");
    CHECK_STR(sp_config_level_name(30), "DETAILED");
    CHECK_STR(sp_config_level_name(40), "VERBOSE");
}

static void test_freqs(void)
{
    const char *keys[] = {"host_system_usage_freq", "npu_memory_usage_freq"};
    for (int k = 0; k < 2; k++) {
        sp_config c = one(keys[k], "10", 0, NULL);
        int *f = k ? &c.npu_memory_usage_freq : &c.host_system_usage_freq;
        CHECK_INT(*f, 10);
        c = one(keys[k], "1", 0, NULL);
        CHECK_INT(*f, 1);
        c = one(keys[k], "50", 0, NULL);
        CHECK_INT(*f, 50);
        c = one(keys[k], "-1", 0, NULL);
        CHECK_INT(*f, -1);
        c = one(keys[k], "100", 1, keys[k], "100", "using 50", NULL);
        CHECK_INT(*f, 50);
        c = one(keys[k], "0", 1, keys[k], "0", "using -1", NULL);
        CHECK_INT(*f, -1);
        c = one(keys[k], "-5", 1, keys[k], "-5", "using -1", NULL);
        CHECK_INT(*f, -1);
        c = one(keys[k], "\"10\"", 1, keys[k], "\"10\"", "using -1", NULL);
        CHECK_INT(*f, -1);
        c = one(keys[k], "2.5", 1, keys[k], "2.5", "using -1", NULL);
        CHECK_INT(*f, -1);
    }
}

static void test_acl(void)
{
    for (int v = 0; v <= 3; v++) {
        char s[4];
        snprintf(s, sizeof s, "%d", v);
        CHECK_INT(one("acl_task_time", s, 0, NULL).acl_task_time, v);
    }
    CHECK_INT(one("acl_task_time", "4", 1, "'acl_task_time'", "4", "using 0", NULL).acl_task_time, 0);
    CHECK_INT(one("acl_task_time", "-1", 1, "-1", "using 0", NULL).acl_task_time, 0);
    CHECK_INT(one("acl_task_time", "\"1\"", 1, "\"1\"", "using 0", NULL).acl_task_time, 0);

    sp_config c = one("acl_prof_task_time_level", "\"L1\"", 0, NULL);
    CHECK_INT(c.acl_prof_task_time_level, 1);
    CHECK_INT(c.acl_prof_task_time_seconds, 0);
    c = one("acl_prof_task_time_level", "\"L1;10\"", 0, NULL);
    CHECK_INT(c.acl_prof_task_time_level, 1);
    CHECK_INT(c.acl_prof_task_time_seconds, 10);
    c = one("acl_prof_task_time_level", "\"L0;999\"", 0, NULL);
    CHECK_INT(c.acl_prof_task_time_seconds, 999);
    c = one("acl_prof_task_time_level", "\"\"", 0, NULL);
    CHECK_INT(c.acl_prof_task_time_level, 0);
    c = one("acl_prof_task_time_level", "\"L3\"", 1, "'acl_prof_task_time_level'", "\"L3\"",
            "using L0", NULL);
    CHECK_INT(c.acl_prof_task_time_level, 0);
    c = one("acl_prof_task_time_level", "\"L1;5000\"", 1, "5000", "L1;999", NULL);
    CHECK_INT(c.acl_prof_task_time_level, 1);
    CHECK_INT(c.acl_prof_task_time_seconds, 999);
    c = one("acl_prof_task_time_level", "\"L1;0\"", 1, "below 1", NULL);
    CHECK_INT(c.acl_prof_task_time_seconds, 0);
    c = one("acl_prof_task_time_level", "\"L1;x\"", 1, "\"x\"", NULL);
    CHECK_INT(c.acl_prof_task_time_level, 1);
    CHECK_INT(c.acl_prof_task_time_seconds, 0);
    one("acl_prof_task_time_level", "1", 1, "not a string", NULL);

    c = one("aclDataTypeConfig", "\"ACL_PROF_TASK_TIME, ACL_PROF_ACL_API\"", 0, NULL);
    CHECK_STR(c.acl_data_type_config, "ACL_PROF_TASK_TIME,ACL_PROF_ACL_API");
    c = one("aclDataTypeConfig", "\"ACL_PROF_TASK_TIME,ACL_PROF_BOGUS\"", 1, "ACL_PROF_BOGUS",
            "using \"ACL_PROF_TASK_TIME\"", NULL);
    CHECK_STR(c.acl_data_type_config, "ACL_PROF_TASK_TIME");
    c = one("aclprofAicoreMetrics", "\"ACL_AICORE_MEMORY_BANDWIDTH\"", 0, NULL);
    CHECK_STR(c.aclprof_aicore_metrics, "ACL_AICORE_MEMORY_BANDWIDTH");
    c = one("aclprofAicoreMetrics", "\"FAST\"", 1, "'aclprofAicoreMetrics'", "\"FAST\"",
            "ACL_AICORE_PIPE_UTILIZATION", NULL);
    CHECK_STR(c.aclprof_aicore_metrics, "ACL_AICORE_PIPE_UTILIZATION");

    c = one("api_filter", "\"cudaLaunch;cudaMemcpy\"", 0, NULL);
    CHECK_STR(c.api_filter, "cudaLaunch;cudaMemcpy");
    c = one("kernel_filter", "\"gemm\"", 0, NULL);
    CHECK_STR(c.kernel_filter, "gemm");
    c = one("kernel_filter", "7", 1, "'kernel_filter'", "7", NULL);
    CHECK_STR(c.kernel_filter, "");
    char big[1200 + 3];
    big[0] = '"';
    memset(big + 1, 'a', 1200);
    big[1201] = '"';
    big[1202] = '\0';
    c = one("api_filter", big, 1, "'api_filter'", "longer than", NULL);
    CHECK_STR(c.api_filter, "");
}

static void test_limits(void)
{
    CHECK_INT(one("timelimit", "60", 0, NULL).timelimit, 60);
    CHECK_INT(one("timelimit", "7200", 0, NULL).timelimit, 7200);
    CHECK_INT(one("timelimit", "9000", 1, "'timelimit'", "9000", "using 7200", NULL).timelimit, 7200);
    CHECK_INT(one("timelimit", "-3", 1, "-3", "using 0", NULL).timelimit, 0);
    CHECK_INT(one("timelimit", "\"10\"", 1, "\"10\"", "using 0", NULL).timelimit, 0);
    CHECK_INT(one("profiler_step_num", "5", 0, NULL).profiler_step_num, 5);
    CHECK_INT(one("profiler_step_num", "0", 0, NULL).profiler_step_num, 0);
    CHECK_INT(one("profiler_step_num", "-2", 1, "'profiler_step_num'", "-2", "no step limit", NULL)
                  .profiler_step_num, 0);
    CHECK_INT(one("profiler_step_num", "1.5", 1, "1.5", NULL).profiler_step_num, 0);
    CHECK_INT(one("torch_prof_step_num", "3", 0, NULL).torch_prof_step_num, 3);
    CHECK_INT(one("torch_prof_step_num", "-3", 1, "-3", "using 0", NULL).torch_prof_step_num, 0);
    CHECK_INT(one("buffer_size_kb", "64", 0, NULL).buffer_bytes, 64 * 1024);
    CHECK_INT(one("buffer_size_kb", "4096", 0, NULL).buffer_bytes, 4096 * 1024);
    CHECK_INT(one("buffer_size_kb", "8", 1, "'buffer_size_kb'", "8", "using 64", NULL).buffer_bytes,
              64 * 1024);
    CHECK_INT(one("buffer_size_kb", "100000", 1, "using 65536", NULL).buffer_bytes, 65536 * 1024);
    CHECK_INT(one("buffer_size_kb", "\"big\"", 1, "\"big\"", NULL).buffer_bytes,
              SP_DEFAULT_BUFFER_KB * 1024);
}

static void test_domain(void)
{
    sp_config c = one("domain", "\" Schedule ; Request;;BatchSchedule \"", 0, NULL);
    CHECK_INT(c.ndomains, 3);
    CHECK_STR(c.domains[0], "Schedule");
    CHECK_STR(c.domains[1], "Request");
    CHECK_STR(c.domains[2], "BatchSchedule");
    CHECK_INT(one("domain", "\"\"", 0, NULL).ndomains, 0);
    CHECK_INT(one("domain", "\" ; ; \"", 0, NULL).ndomains, 0);
    CHECK_INT(one("domain", "[\"a\"]", 1, "'domain'", "not a string", NULL).ndomains, 0);
    char text[4096] = "\"";
    for (int i = 0; i < 40; i++)
        snprintf(text + strlen(text), sizeof text - strlen(text), "d%d;", i);
    strcat(text, "\"");
    c = one("domain", text, 1, "more than 32", NULL);
    CHECK_INT(c.ndomains, 32);
    char longname[200] = "\"ok;";
    memset(longname + 4, 'x', 100);
    strcpy(longname + 104, "\"");
    c = one("domain", longname, 1, "longer than", NULL);
    CHECK_INT(c.ndomains, 1);
    CHECK_STR(c.domains[0], "ok");
}

static void test_prof_dir(void)
{
    setenv("HOME", "/home/tester", 1);
    setenv("SP_TEST_ROOT", "/data/prof", 1);
    unsetenv("SP_TEST_UNSET");
    CHECK_STR(one("prof_dir", "\"/abs/dir\"", 0, NULL).prof_dir, "/abs/dir");
    CHECK_STR(one("prof_dir", "\"~/p\"", 0, NULL).prof_dir, "/home/tester/p");
    CHECK_STR(one("prof_dir", "\"~\"", 0, NULL).prof_dir, "/home/tester");
    CHECK_STR(one("prof_dir", "\"${SP_TEST_ROOT}/run-${SP_TEST_ROOT}\"", 0, NULL).prof_dir,
              "/data/prof/run-/data/prof");
    CHECK_STR(one("prof_dir", "\"${SP_TEST_UNSET}/x\"", 1, "'prof_dir'", "SP_TEST_UNSET",
                  "is not set", "using /home/tester/.ms_server_profiler", NULL).prof_dir,
              "/home/tester/.ms_server_profiler");
    CHECK_STR(one("prof_dir", "\"${SP_TEST_ROOT\"", 1, "closing", NULL).prof_dir,
              "/home/tester/.ms_server_profiler");
    CHECK_STR(one("prof_dir", "\"\"", 1, "empty", NULL).prof_dir, "/home/tester/.ms_server_profiler");
    CHECK_STR(one("prof_dir", "42", 1, "not a string", NULL).prof_dir,
              "/home/tester/.ms_server_profiler");
}

static void test_unknown_and_syntax(void)
{
    sp_config c = one("enabel", "1", 1, "unknown key 'enabel'", "did you mean 'enable'?", NULL);
    CHECK_INT(c.enable, 0);
    one("timelimt", "1", 1, "did you mean 'timelimit'?", NULL);
    one("Profiler_Level", "\"INFO\"", 1, "did you mean 'profiler_level'?", NULL);
    one("host_system_usage_frequency", "1", 1, "unknown key", NULL);
    one("zzz", "1", 1, "unknown key 'zzz' ignored", NULL);
    CHECK(!strstr(msgs[0], "did you mean"));

    /* A syntax error leaves the caller's config untouched and says where. */
    sp_config keep;
    sp_config_diag d;
    parse("{\"enable\": 1, \"timelimit\": 5}", &keep, &d);
    CHECK_INT(keep.enable, 1);
    CHECK_INT(parse("{\n  \"enable\": 0,\n  \"timelimit\": \n", &keep, &d), SERVPROF_ECONFIG);
    CHECK_INT(d.nerrors, 1);
    CHECK(strstr(msgs[0], "line 4") != NULL);
    CHECK(strstr(msgs[0], "column") != NULL);
    CHECK_INT(keep.enable, 1);
    CHECK_INT(keep.timelimit, 5);
    CHECK_INT(parse("", &keep, &d), SERVPROF_ECONFIG); /* empty file mid-save */
    CHECK_INT(keep.enable, 1);
    CHECK_INT(parse("[1, 2]", &keep, &d), SERVPROF_ECONFIG);
    CHECK(strstr(msgs[0], "not a JSON object") != NULL);
    CHECK_INT(parse("{\"enable\": 1, \"enable\": 0}", &keep, &d), SERVPROF_ECONFIG);
    CHECK(strstr(msgs[0], "duplicate") != NULL);
    CHECK_INT(keep.enable, 1);

    /* Five different mistakes give five messages. */
    parse("{\"enable\": 2, \"timelimit\": 9000, \"profiler_level\": \"LOUD\", "
          "\"host_system_usage_freq\": 100, \"domian\": \"x\"}", &c, &d);
    CHECK_INT(d.nwarnings, 5);
    CHECK_INT(nmsgs, 5);
}

static void test_default_files(const char *tmp)
{
    char text[8192];
    int n = sp_config_default_text(text, sizeof text, 0);
    CHECK(n > 0);
    sp_config c;
    sp_config_diag d;
    CHECK_INT(parse(text, &c, &d), 0);
    CHECK_INT(d.nwarnings, 0);
    CHECK_INT(c.enable, 0);
    CHECK(strstr(text, "\"domain\": \"\"") != NULL);
    n = sp_config_default_text(text, sizeof text, 1);
    CHECK(n > 0);
    CHECK_INT(parse(text, &c, &d), 0);
    CHECK_INT(d.nwarnings, 0);
    CHECK(strstr(text, "profiler_step_num") && strstr(text, "aclprofAicoreMetrics") &&
          strstr(text, "buffer_size_kb") && strstr(text, "npu_memory_usage_freq"));
    CHECK_INT(sp_config_default_text(text, 10, 1), -1);

    /* Auto-creation and its refusals. */
    char path[600], why[512];
    snprintf(path, sizeof path, "%s/auto.json", tmp);
    CHECK_INT(sp_config_create_default(path, why, sizeof why), 0);
    struct stat st;
    CHECK_INT(stat(path, &st), 0);
    CHECK_INT(st.st_mode & 0777, 0640);
    CHECK_INT(sp_config_load(path, &c, &d), 0);
    CHECK_INT(c.enable, 0);
    snprintf(path, sizeof path, "%s/auto.conf", tmp);
    CHECK(sp_config_create_default(path, why, sizeof why) != 0);
    CHECK(strstr(why, ".json") != NULL);
    CHECK(access(path, F_OK) != 0);
    snprintf(path, sizeof path, "%s/no/such/dir/a.json", tmp);
    CHECK(sp_config_create_default(path, why, sizeof why) != 0);
    CHECK(strstr(why, "not writable") != NULL);
    if (geteuid() != 0) { /* root writes anywhere */
        char ro[256];
        snprintf(ro, sizeof ro, "%s/ro", tmp);
        mkdir(ro, 0500);
        snprintf(path, sizeof path, "%s/a.json", ro);
        CHECK(sp_config_create_default(path, why, sizeof why) != 0);
        CHECK(access(path, F_OK) != 0);
    }
    snprintf(path, sizeof path, "%s/missing.json", tmp);
    CHECK_INT(sp_config_load(path, &c, &d), SERVPROF_ENOTFOUND);
    /* Not a regular file: an error, never a hang (a FIFO has no writer). */
    snprintf(path, sizeof path, "%s/fifo.json", tmp);
    CHECK_INT(mkfifo(path, 0600), 0);
    nmsgs = 0;
    memset(&d, 0, sizeof d);
    d.emit = collect;
    CHECK_INT(sp_config_load(path, &c, &d), SERVPROF_EIO);
    CHECK_INT(d.nerrors, 1);
    CHECK(strstr(msgs[0], "not a regular file") != NULL);
    CHECK_INT(sp_config_load(tmp, &c, &d), SERVPROF_EIO);
    /* Larger than 1 MiB. */
    snprintf(path, sizeof path, "%s/big.json", tmp);
    FILE *f = fopen(path, "w");
    CHECK(f != NULL);
    if (f) {
        fputc('{', f);
        for (int i = 0; i < 200000; i++)
            fputs("\"k\":1,", f);
        fputs("\"e\":1}", f);
        fclose(f);
    }
    CHECK_INT(sp_config_load(path, &c, &d), SERVPROF_EIO);
    CHECK(strstr(msgs[nmsgs - 1], "larger than the 1 MiB limit for a config file") != NULL);
}

static void edit(const char *in, int v, const char *want)
{
    char *out = NULL, err[256] = "";
    size_t len;
    int rc = sp_config_edit_enable_text(in, strlen(in), v, &out, &len, err, sizeof err);
    if (want) {
        CHECK_INT(rc, 0);
        if (rc == 0) {
            CHECK_INT(len, strlen(want));
            CHECK_STR(out, want);
        } else {
            fprintf(stderr, "  edit error: %s\n", err);
        }
    } else {
        CHECK(rc != 0);
        CHECK(err[0] != '\0');
    }
    free(out);
}

static void test_edit(const char *tmp)
{
    edit("{\n    \"enable\": 1,\n    \"prof_dir\": \"/x\" // \n}", 0, NULL); /* not JSON */
    edit("{\n    \"enable\": 1,\n    \"prof_dir\": \"/x\"\n}", 0,
         "{\n    \"enable\": 0,\n    \"prof_dir\": \"/x\"\n}");
    edit("{\"a\":{\"enable\":1},\"enable\" :  true ,\"s\":\"\\\"enable\\\": 1\"}", 0,
         "{\"a\":{\"enable\":1},\"enable\" :  0 ,\"s\":\"\\\"enable\\\": 1\"}");
    edit("{\n  \"prof_dir\": \"/x\",\n  \"domain\": \"\"\n}", 1,
         "{\n  \"enable\": 1,\n  \"prof_dir\": \"/x\",\n  \"domain\": \"\"\n}");
    edit("{}", 1, "{\"enable\": 1}");
    edit("  { \"x\": [1, {\"y\": \"}\"}], \"enable\": 0 }\n", 1,
         "  { \"x\": [1, {\"y\": \"}\"}], \"enable\": 1 }\n");
    edit("[\"enable\", 1]", 1, NULL);

    /* On a file: the mode stays, a symlink stays a link, the rest is kept. */
    char path[512], link[512];
    snprintf(path, sizeof path, "%s/edit.json", tmp);
    const char *orig = "{\n\t\"timelimit\": 30,\n\t\"enable\": 1, \"domain\": \"a;b\"\n}\n";
    CHECK_INT(sp_write_atomic(path, orig, strlen(orig), 0600), 0);
    snprintf(link, sizeof link, "%s/link.json", tmp);
    CHECK_INT(symlink(path, link), 0);
    char err[256];
    int changed = -1;
    CHECK_INT(sp_config_set_enable(link, 0, &changed, err, sizeof err), 0);
    CHECK_INT(changed, 1);
    char *text;
    size_t len;
    CHECK_INT(sp_read_file(path, 1 << 20, &text, &len), 0);
    CHECK_STR(text, "{\n\t\"timelimit\": 30,\n\t\"enable\": 0, \"domain\": \"a;b\"\n}\n");
    free(text);
    struct stat st;
    CHECK_INT(lstat(link, &st), 0);
    CHECK(S_ISLNK(st.st_mode));
    CHECK_INT(stat(path, &st), 0);
    CHECK_INT(st.st_mode & 0777, 0600);
    CHECK_INT(sp_config_set_enable(path, 0, &changed, err, sizeof err), 0);
    CHECK_INT(changed, 0);
    snprintf(path, sizeof path, "%s/nothere.json", tmp);
    CHECK_INT(sp_config_set_enable(path, 1, &changed, err, sizeof err), SERVPROF_ENOTFOUND);
}

static void test_mkdirs(const char *tmp)
{
    char path[512];
    snprintf(path, sizeof path, "%s/a/b/c/", tmp);
    mode_t old = umask(077); /* the test may change its own umask */
    CHECK_INT(sp_mkdirs(path, 0750), 0);
    umask(old);
    struct stat st;
    CHECK_INT(stat(path, &st), 0);
    CHECK_INT(st.st_mode & 0777, 0700); /* narrowed by the umask, never widened */
    snprintf(path, sizeof path, "%s/edit.json/x", tmp);
    CHECK(sp_mkdirs(path, 0750) != 0);
}

int main(void)
{
    char tmp[] = "/tmp/sp_test_config_XXXXXX";
    if (!mkdtemp(tmp))
        return 2;
    test_defaults();
    test_enable();
    test_flags();
    test_level();
    test_freqs();
    test_acl();
    test_limits();
    test_domain();
    test_prof_dir();
    test_unknown_and_syntax();
    test_default_files(tmp);
    test_edit(tmp);
    test_mkdirs(tmp);
    char cmd[600];
    snprintf(cmd, sizeof cmd, "chmod -R u+w %s && rm -rf %s", tmp, tmp);
    if (system(cmd) != 0)
        fprintf(stderr, "could not remove %s\n", tmp);
    CHECK_DONE();
}
