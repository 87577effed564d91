/* SPDX-License-Identifier: Apache-2.0 */
/*
 * watch.c — the thread that notices edits of the config file.
 *
 * Design: one thread, two sources, because neither is enough alone.
 *  - inotify on the file's FOLDER (not the file): an editor that saves by
 *    writing a temp file and renaming it over the config replaces the inode,
 *    which a watch on the file itself would lose. Events are filtered by
 *    name. A burst of events (open, several writes, close) is debounced:
 *    we act once the folder has been quiet for DEBOUNCE_MS, or at most
 *    BURST_MS after the first event, so an edit is acted on within ~100 ms.
 *  - a stat() poll every POLL_MS, comparing inode, size, mtime and ctime in
 *    nanoseconds, for file systems where inotify is silent (NFS, SMB, FUSE:
 *    one file may drive many hosts).
 * Either way the thread calls hooks->changed(); the runtime reads the file
 * and compares its content, so a spurious call costs one small read. When
 * changed() says its read failed for a passing reason (descriptors or
 * memory exhausted for a moment), it is called again on every pass until
 * it gets a definite answer: an unchanged file must not keep a lost read.
 * hooks->tick() runs every loop (limits: timelimit, profiler_step_num), and
 * at once after sp_watch_wake(), which writes a byte to a pipe.
 * Each finished loop ("pass": look at the file, maybe changed(), tick())
 * adds one to a counter, sp_watch_passes(): a test that edits the file or
 * steps towards a limit waits until two passes ended after its action, and
 * then knows that the watcher has seen it (whether or not it reacted).
 *
 * Thread safety: start/stop are called by the runtime with its mutex NOT
 * held (the hooks take it). sp_watch_wake() may be called from any thread.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fsutil.h"
#include "internal.h"
#include "runtime.h"

#define POLL_MS 100
#define DEBOUNCE_MS 15
#define BURST_MS 60

typedef struct ident {
    int exists;
    dev_t dev;
    ino_t ino;
    off_t size;
    struct timespec mtim, ctim;
} ident;

/* Set by sp_watch_start before the thread exists, read-only after. */
static pthread_t thread;
static char path[SP_PATH_MAX];
static char name[NAME_MAX + 1];
static sp_watch_hooks hooks;
static int wake_pipe[2] = {-1, -1}; /* [1] is published in wake_wfd */
static _Atomic int wake_wfd = -1;   /* written by any thread's sp_watch_wake */
static int ino_fd = -1;
/* Shared between the thread and its owner. */
static _Atomic int running;
static _Atomic int quit;
/* Set by the watcher thread itself as it starts: `running` and `thread`
 * are only stored after pthread_create returns, which may be after the
 * thread's first changed() call. */
static _Thread_local int on_watcher;
static _Atomic uint64_t passes; /* loops finished, never reset (tests wait on it) */

static void get_ident(ident *id)
{
    struct stat st;
    memset(id, 0, sizeof *id);
    if (stat(path, &st) != 0)
        return;
    id->exists = 1;
    id->dev = st.st_dev;
    id->ino = st.st_ino;
    id->size = st.st_size;
    id->mtim = st.st_mtim;
    id->ctim = st.st_ctim;
}

static int same_ident(const ident *a, const ident *b)
{
    return a->exists == b->exists && a->dev == b->dev && a->ino == b->ino && a->size == b->size &&
           a->mtim.tv_sec == b->mtim.tv_sec && a->mtim.tv_nsec == b->mtim.tv_nsec &&
           a->ctim.tv_sec == b->ctim.tv_sec && a->ctim.tv_nsec == b->ctim.tv_nsec;
}

/* Reads pending inotify events; nonzero when one concerns our file. */
static int drain_inotify(void)
{
    char buf[4096] __attribute__((aligned(__alignof__(struct inotify_event))));
    int hit = 0;
    for (;;) {
        ssize_t n = read(ino_fd, buf, sizeof buf);
        if (n <= 0)
            return hit;
        for (char *p = buf; p < buf + n;) {
            const struct inotify_event *ev = (const struct inotify_event *)p;
            if ((ev->len > 0 && !strcmp(ev->name, name)) ||
                (ev->mask & (IN_IGNORED | IN_Q_OVERFLOW | IN_DELETE_SELF | IN_MOVE_SELF)))
                hit = 1;
            p += sizeof *ev + ev->len;
        }
    }
}

static void drain_pipe(void)
{
    char buf[64];
    while (read(wake_pipe[0], buf, sizeof buf) > 0) {
    }
}

static void *watch_main(void *arg)
{
    (void)arg;
    on_watcher = 1;
    ident last;
    get_ident(&last);
    /* An edit between the runtime's first read and our start is not lost. */
    int again = hooks.changed();
    while (!atomic_load(&quit)) {
        struct pollfd fds[2] = {{wake_pipe[0], POLLIN, 0}, {ino_fd, POLLIN, 0}};
        int nfds = ino_fd >= 0 ? 2 : 1;
        int r = poll(fds, (nfds_t)nfds, POLL_MS);
        if (atomic_load(&quit))
            break;
        int changed = 0;
        if (r > 0 && (fds[0].revents & POLLIN))
            drain_pipe();
        if (r > 0 && nfds == 2 && (fds[1].revents & POLLIN) && drain_inotify()) {
            /* Debounce: wait for the burst of a save to end. */
            int64_t first = sp_now_monotonic_ns();
            for (;;) {
                struct pollfd q = {ino_fd, POLLIN, 0};
                if (poll(&q, 1, DEBOUNCE_MS) <= 0)
                    break;
                drain_inotify();
                if (sp_now_monotonic_ns() - first > (int64_t)BURST_MS * 1000000)
                    break;
            }
            changed = 1;
        }
        ident now;
        get_ident(&now);
        if (!same_ident(&now, &last))
            changed = 1;
        last = now;
        if (changed || again)
            again = hooks.changed(); /* a transient failure is retried next pass */
        hooks.tick();
        atomic_fetch_add(&passes, 1);
    }
    return NULL;
}

int sp_watch_start(const char *p, const sp_watch_hooks *h)
{
    if (atomic_load(&running))
        return SERVPROF_ESTATE;
    snprintf(path, sizeof path, "%s", p);
    snprintf(name, sizeof name, "%s", sp_path_basename(p));
    hooks = *h;
    if (pipe2(wake_pipe, O_CLOEXEC | O_NONBLOCK) != 0) {
        sp_log(SP_LOG_ERROR, "cannot watch '%s': pipe: %s; edits of the file are not seen", p,
               strerror(errno));
        return SERVPROF_EIO;
    }
    /* SERVPROF_WATCH_POLL_ONLY=1 behaves as on a file system where inotify
     * is silent (NFS, SMB): for tests, and a way out should inotify misbehave. */
    const char *poll_only = getenv("SERVPROF_WATCH_POLL_ONLY");
    ino_fd = poll_only && *poll_only && strcmp(poll_only, "0") ? -1
                                                               : inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
    if (ino_fd >= 0) {
        char dir[SP_PATH_MAX];
        sp_path_dirname(p, dir, sizeof dir);
        if (inotify_add_watch(ino_fd, dir, IN_CLOSE_WRITE | IN_MODIFY | IN_MOVED_TO | IN_MOVED_FROM |
                                                IN_CREATE | IN_DELETE | IN_ATTRIB) < 0) {
            sp_log(SP_LOG_DEBUG, "inotify on '%s': %s; polling every %d ms", dir, strerror(errno),
                   POLL_MS);
            close(ino_fd);
            ino_fd = -1;
        }
    } else if (poll_only) {
        sp_log(SP_LOG_DEBUG, "SERVPROF_WATCH_POLL_ONLY: polling '%s' every %d ms", p, POLL_MS);
    } else {
        sp_log(SP_LOG_DEBUG, "inotify: %s; polling every %d ms", strerror(errno), POLL_MS);
    }
    atomic_store(&quit, 0);
    atomic_store(&wake_wfd, wake_pipe[1]);
    int rc = pthread_create(&thread, NULL, watch_main, NULL);
    if (rc != 0) {
        sp_log(SP_LOG_ERROR, "cannot start the config watcher: %s; edits of '%s' are not seen",
               strerror(rc), p);
        atomic_store(&wake_wfd, -1);
        close(wake_pipe[0]);
        close(wake_pipe[1]);
        wake_pipe[0] = wake_pipe[1] = -1;
        if (ino_fd >= 0)
            close(ino_fd);
        ino_fd = -1;
        return SERVPROF_EIO;
    }
    atomic_store(&running, 1);
    return 0;
}

void sp_watch_stop(void)
{
    if (!atomic_load(&running))
        return;
    atomic_store(&quit, 1);
    sp_watch_wake();
    pthread_join(thread, NULL);
    atomic_store(&running, 0);
    atomic_store(&wake_wfd, -1);
    close(wake_pipe[0]);
    close(wake_pipe[1]);
    wake_pipe[0] = wake_pipe[1] = -1;
    if (ino_fd >= 0)
        close(ino_fd);
    ino_fd = -1;
}

void sp_watch_wake(void)
{
    int fd = atomic_load(&wake_wfd);
    if (fd >= 0)
        (void)!write(fd, "w", 1);
}

uint64_t sp_watch_passes(void)
{
    return atomic_load(&passes);
}

int sp_watch_is_self(void)
{
    return on_watcher;
}

void sp_watch_atfork_child(void)
{
    /* The thread does not exist in the child: forget it, free its fds. */
    on_watcher = 0; /* a fork from the watcher: the child's thread is not it */
    atomic_store(&running, 0);
    atomic_store(&wake_wfd, -1);
    if (wake_pipe[0] >= 0)
        close(wake_pipe[0]);
    if (wake_pipe[1] >= 0)
        close(wake_pipe[1]);
    wake_pipe[0] = wake_pipe[1] = -1;
    if (ino_fd >= 0)
        close(ino_fd);
    ino_fd = -1;
}
