/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_parse_plog.c — the parser's messages (plog.c): the exact line each
 * level writes on stderr, the threshold that filters them, the level names
 * --log-level accepts, the cut of an over-long message, and the threshold
 * being the calling thread's (a parse on another thread keeps its own).
 * stderr is captured into a file around each call.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <wchar.h>

#include "check.h"
#include "plog.h"

static char capture_path[] = "/tmp/spp-plog-XXXXXX";
static int capture_fd = -1, saved_fd = -1;

static void capture_start(void)
{
    fflush(stderr);
    CHECK(ftruncate(capture_fd, 0) == 0);
    CHECK(lseek(capture_fd, 0, SEEK_SET) == 0);
    saved_fd = dup(2);
    CHECK(saved_fd >= 0 && dup2(capture_fd, 2) == 2);
}

/* What was written on stderr since capture_start (free() it). */
static char *capture_end(void)
{
    fflush(stderr);
    CHECK(dup2(saved_fd, 2) == 2);
    close(saved_fd);
    char *s = check_slurp(capture_path);
    CHECK(s != NULL);
    return s ? s : strdup("");
}

/* What prs_log(level, "%s", msg) writes at threshold `threshold`. */
static char *logged(int threshold, int level, const char *msg)
{
    prs_log_set_level(threshold);
    capture_start();
    prs_log(level, "%s", msg);
    return capture_end();
}

#define CHECK_LOGGED(threshold, level, msg, want)                                                  \
    do {                                                                                           \
        char *got_ = logged(threshold, level, msg);                                                \
        CHECK_STR(got_, want);                                                                     \
        free(got_);                                                                                \
    } while (0)

static void test_lines_and_threshold(void)
{
    CHECK_INT(prs_log_level(), PRS_INFO); /* the default, before any set */
    CHECK_LOGGED(PRS_INFO, PRS_INFO, "read 2 stores", "servprof parse: info: read 2 stores\n");
    CHECK_LOGGED(PRS_INFO, PRS_WARNING, "store x: skipped", "servprof parse: warning: store x: skipped\n");
    CHECK_LOGGED(PRS_INFO, PRS_ERROR, "nothing to parse", "servprof parse: error: nothing to parse\n");
    CHECK_LOGGED(PRS_INFO, PRS_DEBUG, "window 1 ms", ""); /* below the threshold */
    CHECK_LOGGED(PRS_DEBUG, PRS_DEBUG, "window 1 ms", "servprof parse: debug: window 1 ms\n");
    CHECK_LOGGED(PRS_ERROR, PRS_WARNING, "store x: skipped", "");
    CHECK_LOGGED(PRS_ERROR, PRS_ERROR, "bad", "servprof parse: error: bad\n");
    CHECK_LOGGED(PRS_NONE, PRS_ERROR, "bad", ""); /* none: silent */
    CHECK_LOGGED(PRS_DEBUG, PRS_NONE, "never", ""); /* "none" is a threshold, not a level to write at */
    CHECK_LOGGED(PRS_DEBUG, PRS_NONE + 1, "never", "");
    prs_log_set_level(PRS_WARNING);
    CHECK_INT(prs_log_level(), PRS_WARNING);

    /* printf formatting, one line per call */
    prs_log_set_level(PRS_INFO);
    capture_start();
    prs_log(PRS_WARNING, "store %s: %lld record(s) at %.1f", "a.db", 12LL, 2.5);
    prs_log(PRS_INFO, "second");
    char *got = capture_end();
    CHECK_STR(got, "servprof parse: warning: store a.db: 12 record(s) at 2.5\nservprof parse: info: second\n");
    free(got);
}

/* A message longer than the line buffer is cut, and the line still ends
 * with its newline: 2047 bytes in all. */
static void test_long_message(void)
{
    size_t n = 5000;
    char *msg = malloc(n + 1);
    for (size_t i = 0; i < n; i++)
        msg[i] = (char)('a' + i % 26);
    msg[n] = 0;
    char *got = logged(PRS_INFO, PRS_ERROR, msg);
    const char *prefix = "servprof parse: error: ";
    size_t plen = strlen(prefix);
    CHECK_INT(strlen(got), 2047);
    CHECK(!strncmp(got, prefix, plen));
    CHECK(!strncmp(got + plen, msg, 2046 - plen)); /* the message's start, unchanged */
    CHECK(got[2046] == '\n');
    CHECK(strchr(got, '\n') == got + 2046); /* one line */
    free(got);
    free(msg);
}

/* A message vsnprintf cannot format (a wide character the C locale cannot
 * encode) still writes its level line, with no text. */
static void test_unformattable(void)
{
    prs_log_set_level(PRS_INFO);
    capture_start();
    prs_log(PRS_ERROR, "%ls", L"\x20ac");
    char *got = capture_end();
    CHECK_STR(got, "servprof parse: error: \n");
    free(got);
}

static void test_names(void)
{
    static const struct { const char *name; int level; } cases[] = {
        {"debug", PRS_DEBUG}, {"DEBUG", PRS_DEBUG}, {"info", PRS_INFO},       {"Info", PRS_INFO},
        {"warning", PRS_WARNING}, {"WARN", PRS_WARNING}, {"warn", PRS_WARNING}, {"error", PRS_ERROR},
        {"fatal", PRS_ERROR}, {"Critical", PRS_ERROR}, {"none", PRS_NONE},    {"NONE", PRS_NONE},
        {"verbose", -1},       {"", -1},               {"warnings", -1},      {"debu", -1},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        int got = prs_log_level_from_name(cases[i].name);
        if (got != cases[i].level)
            fprintf(stderr, "level name '%s'\n", cases[i].name);
        CHECK_INT(got, cases[i].level);
    }
}

typedef struct thread_seen { int level_at_start, level_after; } thread_seen;

static void *other_thread(void *arg)
{
    thread_seen *t = arg;
    t->level_at_start = prs_log_level();
    prs_log_set_level(PRS_DEBUG);
    prs_log(PRS_DEBUG, "from the other thread");
    t->level_after = prs_log_level();
    return NULL;
}

/* The threshold is the thread's: a thread starts at the default and its
 * set does not change this thread's. */
static void test_thread_level(void)
{
    prs_log_set_level(PRS_ERROR);
    thread_seen t = {-1, -1};
    capture_start();
    pthread_t th;
    int made = pthread_create(&th, NULL, other_thread, &t) == 0;
    if (made)
        pthread_join(th, NULL);
    prs_log(PRS_DEBUG, "from this thread"); /* below this thread's threshold */
    char *got = capture_end();
    CHECK(made);
    CHECK_INT(t.level_at_start, PRS_INFO);
    CHECK_INT(t.level_after, PRS_DEBUG);
    CHECK_INT(prs_log_level(), PRS_ERROR);
    CHECK_STR(got, "servprof parse: debug: from the other thread\n");
    free(got);
}

int main(void)
{
    capture_fd = mkstemp(capture_path);
    CHECK(capture_fd >= 0);
    if (capture_fd < 0)
        CHECK_DONE();
    test_lines_and_threshold();
    test_long_message();
    test_unformattable();
    test_names();
    test_thread_level();
    close(capture_fd);
    unlink(capture_path);
    CHECK_DONE();
}
