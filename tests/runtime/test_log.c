/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_log.c — the library's log lines (common/log.c), read back from stderr
 * redirected into a file:
 *
 *  - the line format "[msservice_profiler] [PID:<pid>] [<LEVEL>] message\n";
 *  - PROF_LOG_LEVEL: each level name (any case) and the WARN alias set the
 *    threshold, NONE silences even errors, unset or "" means INFO;
 *  - an unknown value keeps INFO (errors must not be silenced by a typo) and
 *    says so once, naming the value and the accepted ones;
 *  - a message longer than the line buffer is cut, still one whole line.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "internal.h"

static char capture_path[] = "/tmp/servprof-log-XXXXXX";
static int saved_stderr = -1;

/* From here on, stderr goes to a fresh capture file. */
static void capture_begin(void)
{
    int fd = open(capture_path, O_WRONLY | O_TRUNC);
    if (fd < 0) {
        perror(capture_path);
        exit(1);
    }
    fflush(stderr);
    saved_stderr = dup(STDERR_FILENO);
    dup2(fd, STDERR_FILENO);
    close(fd);
}

/* stderr back; the captured text (free() it). */
static char *capture_end(void)
{
    fflush(stderr);
    dup2(saved_stderr, STDERR_FILENO);
    close(saved_stderr);
    char *text = check_slurp(capture_path);
    if (!text) {
        perror(capture_path);
        exit(1);
    }
    return text;
}

/* Logs one line at each level under PROF_LOG_LEVEL=value (NULL: unset)
 * and returns what reached stderr. */
static char *log_all_levels(const char *value)
{
    if (value)
        setenv("PROF_LOG_LEVEL", value, 1);
    else
        unsetenv("PROF_LOG_LEVEL");
    sp_log_reset();
    capture_begin();
    sp_log(SP_LOG_DEBUG, "d-line %d", 1);
    sp_log(SP_LOG_INFO, "i-line %s", "x");
    sp_log(SP_LOG_WARNING, "w-line");
    sp_log(SP_LOG_ERROR, "e-line");
    return capture_end();
}

static char prefix[64];

/* The exact line sp_log writes for `level` and `msg`. */
static const char *line_of(const char *level, const char *msg)
{
    static char line[256];
    snprintf(line, sizeof line, "%s[%s] %s\n", prefix, level, msg);
    return line;
}

static void expect_levels(const char *value, int from)
{
    static const char *const names[] = {"DEBUG", "INFO", "WARNING", "ERROR"};
    static const char *const msgs[] = {"d-line 1", "i-line x", "w-line", "e-line"};
    char *got = log_all_levels(value);
    char want[1024] = "";
    for (int i = from; i < 4; i++)
        strcat(want, line_of(names[i], msgs[i]));
    if (strcmp(got, want) != 0)
        fprintf(stderr, "PROF_LOG_LEVEL=%s:\n--- got\n%s--- want\n%s---\n", value ? value : "(unset)",
                got, want);
    CHECK_STR(got, want);
    free(got);
}

static void check_thresholds(void)
{
    expect_levels(NULL, SP_LOG_INFO);
    expect_levels("", SP_LOG_INFO);
    expect_levels("DEBUG", SP_LOG_DEBUG);
    expect_levels("debug", SP_LOG_DEBUG);
    expect_levels("Info", SP_LOG_INFO);
    expect_levels("WARNING", SP_LOG_WARNING);
    expect_levels("warn", SP_LOG_WARNING);
    expect_levels("ERROR", SP_LOG_ERROR);
    expect_levels("NONE", 4);
    setenv("PROF_LOG_LEVEL", "none", 1);
    sp_log_reset();
    CHECK(!sp_log_enabled(SP_LOG_ERROR));
    CHECK(!sp_log_enabled(SP_LOG_NONE)); /* NONE is a threshold, never a level */
    setenv("PROF_LOG_LEVEL", "debug", 1);
    sp_log_reset();
    CHECK(sp_log_enabled(SP_LOG_DEBUG));
    CHECK(!sp_log_enabled(SP_LOG_NONE));
}

static void check_unknown_value(void)
{
    char *got = log_all_levels("verbose");
    char want[1024];
    snprintf(want, sizeof want,
             "%s[WARNING] PROF_LOG_LEVEL='verbose' is not one of DEBUG, INFO, WARNING, ERROR, "
             "NONE; using INFO\n", prefix);
    strcat(want, line_of("INFO", "i-line x"));
    strcat(want, line_of("WARNING", "w-line"));
    strcat(want, line_of("ERROR", "e-line"));
    CHECK_STR(got, want);
    free(got);
    /* Said once: the threshold is cached until the next reset. */
    capture_begin();
    sp_log(SP_LOG_ERROR, "again");
    got = capture_end();
    CHECK_STR(got, line_of("ERROR", "again"));
    free(got);
}

static void check_long_message(void)
{
    unsetenv("PROF_LOG_LEVEL");
    sp_log_reset();
    size_t n = 5000;
    char *msg = malloc(n + 1);
    memset(msg, 'm', n);
    msg[n] = 0;
    capture_begin();
    sp_log(SP_LOG_ERROR, "%s", msg);
    sp_log(SP_LOG_ERROR, "after");
    char *got = capture_end();
    /* One cut line of the buffer's size (2048 with the newline), then the next. */
    char *nl = strchr(got, '\n');
    CHECK(nl != NULL);
    if (nl) {
        size_t first = (size_t)(nl - got) + 1;
        CHECK_INT(first, 2047);
        char head[128];
        snprintf(head, sizeof head, "%s[ERROR] mmmm", prefix);
        CHECK(strncmp(got, head, strlen(head)) == 0);
        CHECK(strspn(got + strlen(prefix) + 8, "m") == first - strlen(prefix) - 8 - 1);
        CHECK_STR(nl + 1, line_of("ERROR", "after"));
    }
    free(got);
    free(msg);
}

int main(void)
{
    int fd = mkstemp(capture_path);
    if (fd < 0)
        return 1;
    close(fd);
    snprintf(prefix, sizeof prefix, "[msservice_profiler] [PID:%d] ", (int)getpid());
    check_thresholds();
    check_unknown_value();
    check_long_message();
    unlink(capture_path);
    CHECK_DONE();
}
