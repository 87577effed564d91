/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_parse_reportlist.c — the table of reports that drives the model
 * (reports.c) and the tool's out-of-memory policy (xalloc.h).
 *
 * The table: every row names itself once, can open, takes only record
 * kinds that exist and has a record hook exactly when it takes some; the
 * reports whose results others ask for are in it, before those that ask
 * (kvcache.c and forward.c look batch.c's state up in their open); the
 * reports the summary counts give their tables in the order of the
 * summary's "rows:" line. A real parse then shows each table row's
 * report opened, fed and closed: each one's CSV exists and has rows.
 *
 * Out of memory: prs_xmalloc of more than any machine has, in a child
 * process, ends it with status 1 and the one message on stderr, never a
 * signal; a size that fits returns memory.
 */
#include <fcntl.h>
#include <stdint.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "model.h"
#include "servingstore.h"
#include "xalloc.h"

/* Under AddressSanitizer an allocation beyond its limit aborts the
 * process by default; the policy under test needs malloc's own answer
 * (NULL), as a plain build gets it. Unused without ASan. */
const char *__asan_default_options(void);
__attribute__((visibility("default"), used)) const char *__asan_default_options(void)
{
    return "allocator_may_return_null=1";
}

static int row_of(const prs_report *r)
{
    for (int i = 0; i < prs_nreports; i++)
        if (prs_reports[i] == r)
            return i;
    return -1;
}

static void test_table(void)
{
    CHECK(prs_nreports >= 7);
    for (int i = 0; i < prs_nreports; i++) {
        const prs_report *r = prs_reports[i];
        CHECK(r->name && *r->name);
        CHECK(r->open != NULL);
        for (int j = 0; j < i; j++)
            if (!strcmp(prs_reports[j]->name, r->name)) {
                fprintf(stderr, "report %s is in the table twice\n", r->name);
                CHECK(0);
            }
        /* a record hook exactly when it takes some kind, and only kinds that exist */
        CHECK((r->record != NULL) == (r->kinds != 0));
        if (r->kinds != PRS_ALL_KINDS)
            CHECK_INT(r->kinds & ~((1u << PRS_NKINDS) - 1), 0);
    }
    /* the reports others ask for are there, before those that ask */
    int batch = row_of(&prs_report_batch);
    CHECK(batch >= 0);
    CHECK(row_of(&prs_report_request) >= 0);
    CHECK(row_of(&prs_report_reqstatus) >= 0);
    CHECK(row_of(&prs_report_spaninfo) >= 0);
    for (int i = 0; i < prs_nreports; i++)
        if (!strcmp(prs_reports[i]->name, "kvcache") || !strcmp(prs_reports[i]->name, "forward"))
            CHECK(i > batch);
    /* PRS_KIND covers every kind in one unsigned */
    CHECK(PRS_NKINDS <= 32);
}

/* A real parse: every report the table drives opens, takes its records,
 * finishes and closes (its CSV is written, with rows). */
static void test_parse_drives_every_report(void)
{
    char in[] = "/tmp/sp_reportlist_XXXXXX";
    CHECK(mkdtemp(in) != NULL);
    char path[512], out[256];
    snprintf(path, sizeof path, "%s/ms_service_x-1.db", in);
    snprintf(out, sizeof out, "%s/out", in);
    serving_store(path, 4, 3, LIFETIME_NONE);
    prs_opts o = {0};
    o.input = in;
    o.output = out;
    o.csv = 1;
    o.summary = 0;
    CHECK_INT(prs_run(&o), 0);
    static const char *const csv[] = {"request.csv", "batch.csv", "forward.csv", "kvcache.csv",
                                      "request_status.csv"};
    for (size_t i = 0; i < sizeof csv / sizeof *csv; i++) {
        snprintf(path, sizeof path, "%s/%s", out, csv[i]);
        char *text = check_slurp(path);
        if (!text)
            fprintf(stderr, "%s was not written\n", path);
        CHECK(text != NULL);
        CHECK(text && strchr(text, '\n') && strchr(text, '\n')[1]); /* a header and a row at least */
        free(text);
    }
    check_remove_tree(in);
}

/* Runs fn in a child; its exit status and what it wrote on stderr. */
static int in_child(void (*fn)(void), char *err, size_t cap)
{
    int p[2];
    CHECK(pipe(p) == 0);
    pid_t pid = fork();
    CHECK(pid >= 0);
    if (pid == 0) {
        dup2(p[1], STDERR_FILENO);
        close(p[0]);
        fn();
        _exit(0);
    }
    close(p[1]);
    size_t n = 0;
    ssize_t r;
    char rest[512];
    while (n + 1 < cap && (r = read(p[0], err + n, cap - 1 - n)) > 0)
        n += (size_t)r;
    while (read(p[0], rest, sizeof rest) > 0) /* to its end: a child never dies of a closed pipe */
        ;
    err[n] = 0;
    close(p[0]);
    int st = 0;
    CHECK(waitpid(pid, &st, 0) == pid);
    if (!WIFEXITED(st)) {
        fprintf(stderr, "child ended by signal %d\n", WIFSIGNALED(st) ? WTERMSIG(st) : -1);
        return -1;
    }
    return WEXITSTATUS(st);
}

static void alloc_too_much(void)
{
    volatile size_t huge = SIZE_MAX / 2; /* no machine has it: malloc returns NULL */
    char *p = prs_xmalloc(huge);
    p[0] = 1; /* never reached: a NULL here would be the bug this policy prevents */
}

static void realloc_too_much(void)
{
    char *p = prs_xmalloc(16);
    volatile size_t huge = SIZE_MAX / 2;
    p = prs_xrealloc(p, huge);
    p[0] = 1;
}

static void alloc_fits(void)
{
    char *p = prs_xcalloc(1000, 1000);
    for (int i = 0; i < 1000000; i++)
        if (p[i])
            _exit(7);
    p = prs_xrealloc(p, 2000000);
    char *s = prs_xstrdup("x");
    free(s);
    free(p);
}

static void test_out_of_memory(void)
{
    char err[1024];
    CHECK_INT(in_child(alloc_too_much, err, sizeof err), 1);
    if (!strstr(err, "out of memory"))
        fprintf(stderr, "the child said: %s\n", err);
    CHECK(strstr(err, "out of memory") != NULL);
    CHECK(strstr(err, "bytes asked") != NULL);
    const char *line = strstr(err, "servprof: error: out of memory");
    CHECK(line != NULL && !strstr(line + 1, "servprof")); /* said once (ASan may add its warning) */
    CHECK_INT(in_child(realloc_too_much, err, sizeof err), 1);
    CHECK(strstr(err, "out of memory") != NULL);
    CHECK_INT(in_child(alloc_fits, err, sizeof err), 0);
    CHECK_STR(err, "");
}

int main(void)
{
    test_table();
    test_parse_drives_every_report();
    test_out_of_memory();
    CHECK_DONE();
}
