/* SPDX-License-Identifier: Apache-2.0 */
/*
 * plog.c — the parser's messages: one line each on stderr,
 * "servprof parse: <LEVEL>: <message>". The threshold comes from
 * --log-level (default info). Warnings name the file or value that was
 * wrong and say what was done instead.
 *
 * The threshold is the calling thread's (_Thread_local): a parse runs on
 * the thread that calls prs_run, and every message of it is logged from
 * that thread (the output writer threads of dwrite.c and dbsql.c report
 * through their owner, never here), so two parses on two threads each
 * keep their own level. Thread-local rather than carried in the parse's
 * context: the fifty-odd message sites (the args decoder, the formatters,
 * the fuzz targets) would all need the context for one int, and in an
 * executable a thread-local is read as cheaply as a global (one
 * %fs-relative load; docs/benchmarks.md, "Parse", has the instruction
 * count). A thread that never set its level gets the default, info.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "plog.h"



static _Thread_local int threshold = PRS_INFO;
static const char *const names[] = {"debug", "info", "warning", "error", "none"};
static _Thread_local prs_log_buf *capture; /* this thread's messages go here (wqueue.c) */

void prs_log_capture(prs_log_buf *b) { capture = b; }

void prs_log_replay(prs_log_buf *b)
{
    for (unsigned long at = 0; at < b->n;) {
        const char *m = b->text + at;
        prs_log(m[0] - 1, "%s", m + 1);
        at += strlen(m) + 1;
    }
    free(b->text);
    b->text = NULL;
    b->n = b->cap = 0;
}

static void keep(int level, const char *msg)
{
    size_t len = strlen(msg) + 2;
    if (capture->n + len > capture->cap) {
        unsigned long cap = capture->cap ? capture->cap * 2 : 1024;
        while (cap < capture->n + len)
            cap *= 2;
        char *t = realloc(capture->text, cap);
        if (!t)
            return; /* out of memory: the message is lost, the failure itself is not */
        capture->text = t;
        capture->cap = cap;
    }
    capture->text[capture->n] = (char)(level + 1); /* never NUL */
    memcpy(capture->text + capture->n + 1, msg, len - 1);
    capture->n += len;
}

void prs_log_set_level(int level) { threshold = level; }
int prs_log_level(void) { return threshold; }

int prs_log_level_from_name(const char *name)
{
    for (int i = 0; i <= PRS_NONE; i++)
        if (!strcasecmp(name, names[i]))
            return i;
    if (!strcasecmp(name, "warn"))
        return PRS_WARNING;
    if (!strcasecmp(name, "fatal") || !strcasecmp(name, "critical"))
        return PRS_ERROR;
    return -1;
}

void prs_log(int level, const char *fmt, ...)
{
    if (capture && level >= 0 && level < PRS_NONE) { /* kept for the parse thread, at its level */
        char msg[2048];
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(msg, sizeof msg, fmt, ap);
        va_end(ap);
        keep(level, msg);
        return;
    }
    if (level < threshold || level >= PRS_NONE)
        return;
    char line[2048];
    int n = snprintf(line, sizeof line, "servprof parse: %s: ", names[level]);
    va_list ap;
    va_start(ap, fmt);
    int m = vsnprintf(line + n, sizeof line - (size_t)n - 1, fmt, ap);
    va_end(ap);
    if (m < 0)
        m = 0;
    size_t len = (size_t)n + (size_t)m;
    if (len > sizeof line - 2)
        len = sizeof line - 2;
    line[len++] = '\n';
    fwrite(line, 1, len, stderr); /* one write per line: stderr is unbuffered */
}
