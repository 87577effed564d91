/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_race.c — every party that may start or stop collection, at once:
 * a thread flipping "enable" in the file (the watcher reacts), two threads
 * calling servprof_start/stop, one counting steps towards a step limit,
 * one recording, one reading the session paths. After 2 s everything is
 * turned off; the library must be consistent (level 0, no session, every
 * session folder released) and, under the sanitizers, free of races and
 * leaks.
 *
 * The sleeps in the threads and the 2 s of main are the race's pace and
 * length (how often each party acts, how long they race), not waits for
 * an event: nothing is asserted about their timing. The one wait that
 * matters, for the watcher to have read the final "enable": 0, waits on
 * its pass count.
 */
#include <dirent.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "fsutil.h"
#include "internal.h"
#include "runtime.h"

static _Atomic int done;
static char cfg[256];
static _Atomic long starts, stops, flips;

static void *flipper(void *arg)
{
    (void)arg;
    int v = 1, changed;
    char err[256];
    while (!atomic_load(&done)) {
        if (sp_config_set_enable(cfg, v, &changed, err, sizeof err) == 0)
            atomic_fetch_add(&flips, 1);
        v = !v;
        usleep(7000); /* pace: about 140 edits a second */
    }
    return NULL;
}

static void *api(void *arg)
{
    (void)arg;
    while (!atomic_load(&done)) {
        if (servprof_start() == 0)
            atomic_fetch_add(&starts, 1);
        usleep(2000); /* pace: collect 2 ms between start and stop */
        if (servprof_stop() == 0)
            atomic_fetch_add(&stops, 1);
    }
    return NULL;
}

static void *stepper(void *arg)
{
    (void)arg;
    while (!atomic_load(&done)) {
        servprof_step();
        usleep(500); /* pace: a session reaches the 50-step limit in ~25 ms */
    }
    return NULL;
}

static void *recorder(void *arg)
{
    (void)arg;
    char buf[SP_PATH_MAX];
    while (!atomic_load(&done)) {
        servprof_rec *r = servprof_rec_begin(SERVPROF_LEVEL_INFO, "race");
        servprof_attr_int(r, "n", 1);
        servprof_event(r, "tick");
        servprof_session_dir(buf, sizeof buf);
        servprof_store_path(buf, sizeof buf);
        usleep(200); /* pace */
    }
    return NULL;
}

/* Nonzero once the watcher's pass count reached *(uint64_t *)target. */
static int watcher_reached(void *target)
{
    return sp_watch_passes() >= *(uint64_t *)target;
}

/* Nonzero when any session folder under prof is still held by someone. */
static int any_member(const char *prof)
{
    DIR *d = opendir(prof);
    if (!d)
        return 0;
    int held = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.')
            continue;
        char path[1024];
        snprintf(path, sizeof path, "%s/%s/.servprof-members", prof, e->d_name);
        int fd = open(path, O_RDONLY);
        if (fd < 0)
            continue;
        struct flock fl = {.l_type = F_WRLCK, .l_whence = SEEK_SET};
        if (fcntl(fd, F_GETLK, &fl) == 0 && fl.l_type != F_UNLCK)
            held = 1;
        close(fd);
    }
    closedir(d);
    return held;
}

int main(void)
{
    char tmp[] = "/tmp/sp_test_race_XXXXXX";
    if (!mkdtemp(tmp))
        return 2;
    char text[512], prof[300];
    snprintf(prof, sizeof prof, "%s/prof", tmp);
    snprintf(cfg, sizeof cfg, "%s/c.json", tmp);
    snprintf(text, sizeof text,
             "{\n  \"enable\": 0,\n  \"prof_dir\": \"%s\",\n  \"profiler_step_num\": 50\n}\n", prof);
    CHECK_INT(sp_write_atomic(cfg, text, strlen(text), 0640), 0);
    setenv("SERVICE_PROF_CONFIG_PATH", cfg, 1);
    setenv("PROF_LOG_LEVEL", "ERROR", 1);

    pthread_t t[6];
    void *(*fns[6])(void *) = {flipper, api, api, stepper, recorder, recorder};
    for (int i = 0; i < 6; i++)
        pthread_create(&t[i], NULL, fns[i], NULL);
    sleep(2); /* how long the parties race */
    atomic_store(&done, 1);
    for (int i = 0; i < 6; i++)
        pthread_join(t[i], NULL);

    /* Off through the file and through the API: the state must settle. */
    int changed;
    char err[256];
    CHECK_INT(sp_config_set_enable(cfg, 0, &changed, err, sizeof err), 0);
    /* Two passes after the write: the watcher has read the file's last
     * state (else it might start collection after the servprof_stop below). */
    uint64_t target = sp_watch_passes() + 2;
    CHECK(check_wait_until(watcher_reached, &target, 5000));
    servprof_stop();
    char buf[SP_PATH_MAX];
    CHECK_INT(servprof_session_dir(buf, sizeof buf), SERVPROF_ESTATE);
    CHECK_INT(atomic_load(&servprof__level), 0);
    CHECK(!any_member(prof));
    fprintf(stderr, "%ld API starts, %ld API stops, %ld file flips\n", atomic_load(&starts),
            atomic_load(&stops), atomic_load(&flips));
    CHECK(atomic_load(&flips) > 20);
    CHECK(atomic_load(&starts) > 0);

    /* The library still works: start, check, shutdown. */
    CHECK_INT(servprof_start(), 0);
    CHECK_INT(servprof_session_dir(buf, sizeof buf), 0);
    servprof_shutdown();
    CHECK(!any_member(prof));
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf %s", tmp);
    if (system(cmd) != 0)
        fprintf(stderr, "could not remove %s\n", tmp);
    CHECK_DONE();
}
