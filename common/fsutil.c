/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fsutil.c — folder creation, whole-file reads and atomic replacement.
 *
 * Design: the runtime writes two kinds of files, the config file (created
 * when missing, rewritten when a limit turns collection off, edited by the
 * CLI) and the session state file. Both are replaced with temp + rename so
 * a reader (another process, a watcher, an editor) sees the old or the new
 * text, never a mix. Modes are passed to open()/mkdir() and forced with
 * fchmod()/chmod() on what we created; the umask is never changed because
 * it is the host program's, shared by all its threads.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fsutil.h"
#include "config.h"
#include "log.h"

int sp_mkdirs(const char *path, mode_t mode)
{
    char buf[SP_PATH_MAX];
    size_t n = strlen(path);
    if (n == 0 || n >= sizeof buf)
        return -ENAMETOOLONG;
    memcpy(buf, path, n + 1);
    while (n > 1 && buf[n - 1] == '/')
        buf[--n] = '\0';
    /* Walk the components left to right; each mkdir that succeeds is ours. */
    for (char *p = buf + 1;; p++) {
        if (*p != '/' && *p != '\0')
            continue;
        char saved = *p;
        *p = '\0';
        if (mkdir(buf, mode) == 0) {
            (void)chmod(buf, mode); /* the umask may have narrowed it */
        } else if (errno != EEXIST) {
            return -errno;
        } else {
            struct stat st;
            if (stat(buf, &st) != 0)
                return -errno;
            if (!S_ISDIR(st.st_mode))
                return -ENOTDIR;
        }
        *p = saved;
        if (saved == '\0')
            break;
    }
    return 0;
}

int sp_read_file(const char *path, size_t max, char **out, size_t *len)
{
    *out = NULL;
    *len = 0;
    /* O_NONBLOCK: a FIFO in place of the file must not hang the watcher. */
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0)
        return -errno;
    struct stat st;
    if (fstat(fd, &st) != 0) {
        int e = errno;
        close(fd);
        return -e;
    }
    if (!S_ISREG(st.st_mode)) {
        close(fd);
        return S_ISDIR(st.st_mode) ? -EISDIR : -EINVAL;
    }
    size_t cap = 4096, n = 0;
    char *buf = malloc(cap + 1);
    if (!buf) {
        close(fd);
        return -ENOMEM;
    }
    for (;;) {
        if (n == cap) {
            if (cap > max) {
                free(buf);
                close(fd);
                return -EFBIG;
            }
            char *nb = realloc(buf, cap * 2 + 1);
            if (!nb) {
                free(buf);
                close(fd);
                return -ENOMEM;
            }
            buf = nb;
            cap *= 2;
        }
        ssize_t r = read(fd, buf + n, cap - n);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0) {
            int e = errno;
            free(buf);
            close(fd);
            return -e;
        }
        if (r == 0)
            break;
        n += (size_t)r;
    }
    close(fd);
    if (n > max) {
        free(buf);
        return -EFBIG;
    }
    buf[n] = '\0';
    *out = buf;
    *len = n;
    return 0;
}

void sp_path_dirname(const char *path, char *out, size_t len)
{
    const char *slash = strrchr(path, '/');
    if (!slash) {
        snprintf(out, len, ".");
    } else if (slash == path) {
        snprintf(out, len, "/");
    } else {
        snprintf(out, len, "%.*s", (int)(slash - path), path);
    }
}

const char *sp_path_basename(const char *path)
{
    const char *slash = strrchr(path, '/');
    return slash ? slash + 1 : path;
}

static int write_all(int fd, const char *p, size_t len)
{
    while (len > 0) {
        ssize_t w = write(fd, p, len);
        if (w < 0 && errno == EINTR)
            continue;
        if (w < 0)
            return -errno;
        p += w;
        len -= (size_t)w;
    }
    return 0;
}

int sp_write_atomic(const char *path, const void *data, size_t len, mode_t mode)
{
    return sp_write_replace(path, data, len, mode, 1);
}

int sp_output_target(const char *path, char *target, size_t cap)
{
    struct stat st;
    if (strlen(path) >= cap || cap < PATH_MAX)
        return -ENAMETOOLONG;
    snprintf(target, cap, "%s", path);
    if (lstat(path, &st) != 0)
        return errno == ENOENT ? SP_OUT_REPLACE : -errno;
    if (S_ISLNK(st.st_mode)) {
        if (!realpath(path, target)) { /* dangling: writing path creates its target */
            int e = errno;
            snprintf(target, cap, "%s", path);
            return e == ENOENT ? SP_OUT_IN_PLACE : -e;
        }
        if (stat(target, &st) != 0)
            return -errno;
    }
    if (S_ISDIR(st.st_mode))
        return -EISDIR;
    return S_ISREG(st.st_mode) ? SP_OUT_REPLACE : SP_OUT_IN_PLACE;
}

/* Writes data into path as it is (a FIFO, a device): no temp, no rename.
 * O_CREAT for a dangling symlink: writing through it creates its target
 * (with `mode`), as the shell's `>` does. */
static int write_in_place(const char *path, const void *data, size_t len, mode_t mode)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, mode);
    if (fd < 0)
        return -errno;
    int rc = write_all(fd, data, len);
    if (close(fd) != 0 && rc == 0)
        rc = -errno;
    return rc;
}

int sp_write_replace(const char *path, const void *data, size_t len, mode_t mode, int durable)
{
    static _Atomic unsigned counter;
    char target[SP_PATH_MAX];
    int how = sp_output_target(path, target, sizeof target);
    if (how < 0)
        return how;
    if (how == SP_OUT_IN_PLACE)
        return write_in_place(target, data, len, mode);
    struct stat st;
    if (stat(target, &st) == 0)
        mode = st.st_mode & 07777;
    char dir[SP_PATH_MAX], tmp[SP_PATH_MAX + 64];
    sp_path_dirname(target, dir, sizeof dir);
    int n = snprintf(tmp, sizeof tmp, "%s/.%s.tmp.%d.%u", dir, sp_path_basename(target),
                     (int)getpid(), atomic_fetch_add(&counter, 1));
    if (n < 0 || (size_t)n >= sizeof tmp)
        return -ENAMETOOLONG;
    int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode);
    if (fd < 0)
        return -errno;
    int rc = 0;
    if (fchmod(fd, mode) != 0)
        rc = -errno;
    if (rc == 0)
        rc = write_all(fd, data, len);
    if (rc == 0 && durable && fsync(fd) != 0)
        rc = -errno;
    if (close(fd) != 0 && rc == 0)
        rc = -errno;
    if (rc == 0 && rename(tmp, target) != 0)
        rc = -errno;
    if (rc != 0)
        unlink(tmp);
    return rc;
}

int sp_dir_writable(const char *dir)
{
    struct stat st;
    return stat(dir, &st) == 0 && S_ISDIR(st.st_mode) && access(dir, W_OK | X_OK) == 0;
}
