/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_fd_exhaust.c — an edit of the config file that the watcher could not
 * read because the process had no descriptor left is not lost
 * (src/watch.c, on_changed in src/runtime.c).
 *
 * A child lowers its RLIMIT_NOFILE, starts the library with "enable": 0,
 * then takes every descriptor left. The parent turns "enable" to 1 (the
 * child has no descriptor to do it with). The child lets the watcher make
 * passes, which fail with EMFILE, and checks that nothing started; then it
 * gives the descriptors back and, without any further edit of the file,
 * waits for collection to start. Before the fix, the failed read stood
 * until the file changed again: the child waited in vain.
 *
 * Waits are on the watcher's pass counter and on servprof_session_dir(),
 * each with a bound (check_wait_until), never a bare sleep.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "fsutil.h"
#include "internal.h"
#include "runtime.h"
#include "servprof.h"

static char tmp[] = "/tmp/sp_test_fdx_XXXXXX";
static char cfg[300];

static void put(int enable)
{
    char text[600];
    int n = snprintf(text, sizeof text, "{\"enable\": %d, \"prof_dir\": \"%s/prof\"}", enable, tmp);
    CHECK_INT(sp_write_atomic(cfg, text, (size_t)n, 0640), 0);
}

static int passes_reached(void *arg)
{
    return sp_watch_passes() >= *(uint64_t *)arg;
}

static int collecting(void *arg)
{
    (void)arg;
    char dir[4096];
    return servprof_session_dir(dir, sizeof dir) == 0;
}

/* Lets the watcher finish n more passes. */
static int let_passes(int n)
{
    uint64_t want = sp_watch_passes() + (uint64_t)n;
    return check_wait_until(passes_reached, &want, 20000);
}

static int child(int to_parent, int from_parent)
{
    struct rlimit rl = {64, 64};
    if (setrlimit(RLIMIT_NOFILE, &rl) != 0)
        return 3;
    setenv("SERVICE_PROF_CONFIG_PATH", cfg, 1);
    CHECK_INT(servprof_init(), 0);
    CHECK(!collecting(NULL));
    CHECK(let_passes(2));
    /* Take every descriptor left. */
    int fds[64], n = 0;
    for (int fd; n < 64 && (fd = dup(0)) >= 0;)
        fds[n++] = fd;
    CHECK(n < 64 && errno == EMFILE);
    char c = 'x';
    CHECK_INT(write(to_parent, &c, 1), 1);
    CHECK_INT(read(from_parent, &c, 1), 1); /* the parent has written "enable": 1 */
    CHECK(let_passes(3));
    CHECK(!collecting(NULL)); /* the edit could not be read: nothing started */
    for (int i = 0; i < n; i++)
        close(fds[i]);
    /* No further edit: the watcher must try the read again by itself. */
    CHECK(check_wait_until(collecting, NULL, 20000));
    servprof_shutdown();
    return check_failures ? 1 : 0;
}

int main(void)
{
    if (!mkdtemp(tmp))
        return 2;
    snprintf(cfg, sizeof cfg, "%s/config.json", tmp);
    put(0);
    int up[2], down[2];
    CHECK_INT(pipe(up), 0);
    CHECK_INT(pipe(down), 0);
    pid_t pid = fork();
    if (pid == 0)
        _exit(child(up[1], down[0]));
    char c;
    if (read(up[0], &c, 1) == 1) {
        put(1);
        CHECK_INT(write(down[1], &c, 1), 1);
    }
    int st = 0;
    CHECK_INT(waitpid(pid, &st, 0), pid);
    CHECK(WIFEXITED(st));
    CHECK_INT(WEXITSTATUS(st), 0);
    check_remove_tree(tmp);
    CHECK_DONE();
}
