/* SPDX-License-Identifier: Apache-2.0 */
/*
 * rt_probe.c — a small instrumented process for the runtime's integration
 * tests (driven by test_*.py). A background thread records an event every
 * millisecond through the public API (no explicit init: the first record
 * call starts the library), and the main thread reports every change of the
 * session on stdout ("ON <dir> <store>" / "OFF") and obeys commands read
 * from stdin, one per line:
 *   step N      servprof_step() N times          -> "stepped N"
 *   start/stop  servprof_start()/servprof_stop() -> "start <rc>" / "stop <rc>"
 *   fork        a child records for 0.5 s, shuts the library down, exits;
 *               it prints "child <pid> <session dir> <store>"; the parent
 *               prints "forked <pid> <exit status>"
 *   forkstorm N N forks while another thread starts/stops in a loop; each
 *               child records, reads its session, exits; "storm <ok> <N>"
 *   ticks       how many ticks the recorder has made -> "ticks N" (tests
 *               wait for a count instead of sleeping)
 *   passes      how many passes the config watcher has finished ->
 *               "passes N" (tests wait until it has looked at an edit)
 *   state       the session now -> "state ON <dir> <store>" / "state OFF"
 *               (after the change line, if it changed)
 *   quit        exit(0) (the library stops at exit)
 */
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "runtime.h" /* sp_watch_passes() */
#include "servprof.h"

static _Atomic int stop_recording;
static _Atomic int stop_toggler;
static _Atomic long long ticks; /* record_one() calls so far */

static void sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000};
    nanosleep(&ts, NULL);
}

static void record_one(void)
{
    servprof_rec *r = servprof_rec_begin(SERVPROF_LEVEL_INFO, "probe");
    servprof_attr_int(r, "pid", getpid());
    servprof_event(r, "tick");
    r = servprof_rec_begin(SERVPROF_LEVEL_INFO, "other");
    servprof_event(r, "other_tick");
}

static void *recorder(void *arg)
{
    (void)arg;
    while (!atomic_load(&stop_recording)) {
        record_one();
        atomic_fetch_add(&ticks, 1);
        sleep_ms(1);
    }
    return NULL;
}

static void *toggler(void *arg)
{
    (void)arg;
    while (!atomic_load(&stop_toggler)) {
        servprof_start();
        servprof_stop();
    }
    return NULL;
}

/* "ON <dir> <store>" or "OFF" into line. */
static void session_line(char *line, size_t len)
{
    char dir[4096], store[4096];
    if (servprof_session_dir(dir, sizeof dir) == 0 && servprof_store_path(store, sizeof store) == 0)
        snprintf(line, len, "ON %s %s", dir, store);
    else
        snprintf(line, len, "OFF");
}

static void report(char *last, size_t len)
{
    char line[8300];
    session_line(line, sizeof line);
    if (strcmp(line, last) != 0) {
        printf("%s\n", line);
        snprintf(last, len, "%s", line);
    }
}

static void child_run(void)
{
    alarm(20); /* a deadlock shows as SIGALRM */
    for (int i = 0; i < 500; i++) {
        record_one();
        if (i == 50) {
            char dir[4096] = "-", store[4096] = "-";
            servprof_session_dir(dir, sizeof dir);
            servprof_store_path(store, sizeof store);
            printf("child %d %s %s\n", (int)getpid(), dir, store);
            fflush(stdout);
        }
        sleep_ms(1);
    }
    /* An explicit shutdown (drains the child's store), then _exit: the
     * parent's own atexit path is tested by "quit". */
    servprof_shutdown();
    _exit(0);
}

static void fork_storm(int n)
{
    pthread_t t;
    atomic_store(&stop_toggler, 0);
    pthread_create(&t, NULL, toggler, NULL);
    int ok = 0;
    char codes[512] = "";
    for (int i = 0; i < n; i++) {
        pid_t pid = fork();
        if (pid == 0) {
            alarm(20);
            record_one();
            char dir[4096];
            servprof_session_dir(dir, sizeof dir);
            servprof_start();
            record_one();
            _exit(servprof_stop() == 0 ? 0 : 3);
        }
        int st = 0;
        waitpid(pid, &st, 0);
        int code = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
        ok += code == 0;
        if (code && strlen(codes) < sizeof codes - 8)
            snprintf(codes + strlen(codes), sizeof codes - strlen(codes), " %d", code);
    }
    atomic_store(&stop_toggler, 1);
    pthread_join(t, NULL);
    printf("storm %d %d%s\n", ok, n, codes);
}

int main(void)
{
    setvbuf(stdout, NULL, _IOLBF, 0);
    pthread_t rec;
    pthread_create(&rec, NULL, recorder, NULL);
    char last[8300] = "";
    char buf[256];
    size_t used = 0;
    printf("ready %d\n", (int)getpid());
    for (;;) {
        report(last, sizeof last);
        struct pollfd p = {0, POLLIN, 0};
        if (poll(&p, 1, 5) <= 0)
            continue;
        ssize_t n = read(0, buf + used, sizeof buf - 1 - used);
        if (n <= 0)
            break; /* stdin closed: quit */
        used += (size_t)n;
        buf[used] = '\0';
        char *nl;
        while ((nl = strchr(buf, '\n'))) {
            *nl = '\0';
            int arg = 0;
            if (sscanf(buf, "step %d", &arg) == 1) {
                for (int i = 0; i < arg; i++)
                    servprof_step();
                printf("stepped %d\n", arg);
            } else if (!strcmp(buf, "ticks")) {
                printf("ticks %lld\n", atomic_load(&ticks));
            } else if (!strcmp(buf, "passes")) {
                printf("passes %llu\n", (unsigned long long)sp_watch_passes());
            } else if (!strcmp(buf, "state")) {
                report(last, sizeof last); /* the change line first, then its copy */
                printf("state %s\n", last);
            } else if (!strcmp(buf, "start")) {
                printf("start %d\n", servprof_start());
            } else if (!strcmp(buf, "stop")) {
                printf("stop %d\n", servprof_stop());
            } else if (!strcmp(buf, "fork")) {
                fflush(stdout);
                pid_t pid = fork();
                if (pid == 0)
                    child_run();
                int st = 0;
                waitpid(pid, &st, 0);
                printf("forked %d %d\n", (int)pid, WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st));
            } else if (sscanf(buf, "forkstorm %d", &arg) == 1) {
                fflush(stdout);
                fork_storm(arg);
            } else if (!strcmp(buf, "quit")) {
                atomic_store(&stop_recording, 1);
                pthread_join(rec, NULL);
                printf("bye\n");
                exit(0);
            }
            memmove(buf, nl + 1, strlen(nl + 1) + 1);
            used = strlen(buf);
        }
    }
    atomic_store(&stop_recording, 1);
    pthread_join(rec, NULL);
    return 0;
}
