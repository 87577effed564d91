/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_watch.c — the config watcher thread (lib/core/watch.c) alone, with hooks
 * that count their calls, on a real file:
 *
 *  - changed() once at start, then for a rename over the file, an edit in
 *    place, a removal and a re-creation; not for another file of the folder;
 *  - both hooks run on the watcher thread (sp_watch_is_self), never on ours;
 *  - a second start while running is refused (SERVPROF_ESTATE);
 *  - without inotify (SERVPROF_WATCH_POLL_ONLY=1, or a folder that does not
 *    exist yet) the stat poll still sees every change;
 *  - after stop no hook runs, and wake/stop are harmless.
 *
 * Waits are on the counters, polled with a bound (never a bare sleep).
 */
#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "fsutil.h"
#include "internal.h"
#include "runtime.h"

static _Atomic int changes, ticks, off_thread;

static int on_changed(void)
{
    if (!sp_watch_is_self())
        atomic_fetch_add(&off_thread, 1);
    atomic_fetch_add(&changes, 1);
    return 0;
}

static void on_tick(void)
{
    if (!sp_watch_is_self())
        atomic_fetch_add(&off_thread, 1);
    atomic_fetch_add(&ticks, 1);
}

static const sp_watch_hooks hooks = {on_changed, on_tick};

/* Polls until counter reaches at least want: 5 ms steps, 20 s at most
 * (x10 under sanitizers). */
static int wait_count(_Atomic int *counter, int want)
{
    int limit = getenv("SERVPROF_SANITIZE") && *getenv("SERVPROF_SANITIZE") ? 40000 : 4000;
    struct timespec ts = {0, 5000000};
    for (int i = 0; i < limit; i++) {
        if (atomic_load(counter) >= want)
            return 1;
        nanosleep(&ts, NULL);
    }
    fprintf(stderr, "waited for %d, got %d\n", want, atomic_load(counter));
    return 0;
}

/* Lets the watcher run n more loops (each loop ends with one tick). */
static void let_loops_pass(int n)
{
    int want = atomic_load(&ticks) + n;
    for (int i = 0; i < n; i++)
        sp_watch_wake();
    CHECK(wait_count(&ticks, want));
}

static void put(const char *path, const char *text)
{
    CHECK_INT(sp_write_atomic(path, text, strlen(text), 0640), 0);
}

/* The watcher sees each kind of change of path (one at a time). */
static void check_changes_seen(const char *path, const char *other)
{
    int c = atomic_load(&changes);
    put(path, "{\"enable\": 1}"); /* rename over: a new inode */
    CHECK(wait_count(&changes, c + 1));

    c = atomic_load(&changes);
    FILE *f = fopen(path, "a"); /* in place: same inode, new size */
    CHECK(f && fputs("\n", f) >= 0 && fclose(f) == 0);
    CHECK(wait_count(&changes, c + 1));

    c = atomic_load(&changes);
    CHECK_INT(unlink(path), 0);
    CHECK(wait_count(&changes, c + 1));

    c = atomic_load(&changes);
    put(path, "{}");
    CHECK(wait_count(&changes, c + 1));

    /* Another file of the folder: loops run, changed() is not called. */
    let_loops_pass(2); /* the tail of the last edit's events */
    c = atomic_load(&changes);
    put(other, "{\"enable\": 1}");
    let_loops_pass(3);
    CHECK_INT(atomic_load(&changes), c);
}

static void check_stopped(void)
{
    sp_watch_stop();
    int c = atomic_load(&changes), t = atomic_load(&ticks);
    sp_watch_wake(); /* no thread, no pipe: nothing happens */
    sp_watch_stop(); /* twice: a no-op */
    CHECK_INT(atomic_load(&changes), c);
    CHECK_INT(atomic_load(&ticks), t);
    CHECK(!sp_watch_is_self());
}

int main(void)
{
    char tmp[] = "/tmp/sp_test_watch_XXXXXX";
    if (!mkdtemp(tmp))
        return 2;
    char path[256], other[256], later_dir[256], later[300];
    snprintf(path, sizeof path, "%s/config.json", tmp);
    snprintf(other, sizeof other, "%s/other.json", tmp);
    snprintf(later_dir, sizeof later_dir, "%s/later", tmp);
    snprintf(later, sizeof later, "%s/config.json", later_dir);
    put(path, "{}");
    unsetenv("SERVPROF_WATCH_POLL_ONLY");

    /* inotify and the poll together. */
    CHECK_INT(sp_watch_start(path, &hooks), 0);
    CHECK(wait_count(&changes, 1)); /* the first call, at start */
    CHECK_INT(sp_watch_start(path, &hooks), SERVPROF_ESTATE);
    CHECK(!sp_watch_is_self());
    check_changes_seen(path, other);
    check_stopped();

    /* The poll alone, as on NFS. */
    setenv("SERVPROF_WATCH_POLL_ONLY", "1", 1);
    int c = atomic_load(&changes);
    CHECK_INT(sp_watch_start(path, &hooks), 0);
    CHECK(wait_count(&changes, c + 1));
    check_changes_seen(path, other);
    check_stopped();
    unsetenv("SERVPROF_WATCH_POLL_ONLY");

    /* A folder that does not exist yet: inotify cannot watch it, the poll
     * sees the file appear. */
    c = atomic_load(&changes);
    CHECK_INT(sp_watch_start(later, &hooks), 0);
    CHECK(wait_count(&changes, c + 1));
    c = atomic_load(&changes);
    CHECK_INT(sp_mkdirs(later_dir, 0750), 0);
    put(later, "{}");
    CHECK(wait_count(&changes, c + 1));
    check_stopped();

    CHECK_INT(atomic_load(&off_thread), 0);
    check_remove_tree(tmp);
    CHECK_DONE();
}
