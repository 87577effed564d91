/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fsutil.c — folder creation, whole-file reads and atomic replacement.
 *
 * Design: the runtime writes two kinds of files, the config file (created
 * when missing, rewritten when a limit turns collection off, edited by the
 * CLI) and the session state file. Both are replaced with temp + rename so
 * a reader (another process, a watcher, an editor) sees the old or the new
 * text, never a mix. Modes are passed to open()/mkdir(), so the umask may
 * narrow them but nothing widens them; the umask is never changed because
 * it is the host program's, shared by all its threads.
 *
 * The trusted helpers (sp_dir_open_trusted and the *_at functions) are for
 * folders that other users may be able to reach, such as a prof_dir in a
 * shared /tmp: everything is opened relative to an opened folder, final
 * components with O_NOFOLLOW, and what was opened is checked with fstat()
 * (owner, mode, link count) rather than by a path that could be swapped
 * between the check and the use.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
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
            /* ours, with mode as narrowed by the umask: never widened */
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

/* Reads the regular file open on fd (closed here) into *out. */
static int read_fd(int fd, size_t max, char **out, size_t *len)
{
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

int sp_read_file(const char *path, size_t max, char **out, size_t *len)
{
    *out = NULL;
    *len = 0;
    /* O_NONBLOCK: a FIFO in place of the file must not hang the watcher. */
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0)
        return -errno;
    return read_fd(fd, max, out, len);
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

/* A symlink at path (lst: its lstat) may be followed by an output when it
 * is ours (or root's) and sits in a folder only we (or root) can write, or
 * a sticky one: then nobody else can have planted or swapped it. */
static int link_trusted(const char *path, const struct stat *lst)
{
    uid_t me = geteuid();
    if (lst->st_uid != me && lst->st_uid != 0)
        return 0;
    char dir[SP_PATH_MAX];
    sp_path_dirname(path, dir, sizeof dir);
    struct stat st;
    char why[128]; /* the reason is not used here; sized so snprintf never truncates */
    return stat(dir, &st) == 0 && sp_trusted_stat(&st, 1, why, sizeof why);
}

int sp_output_name_trusted(const char *path)
{
    struct stat lst;
    if (lstat(path, &lst) == 0 && S_ISLNK(lst.st_mode))
        return link_trusted(path, &lst);
    char dir[SP_PATH_MAX];
    sp_path_dirname(path, dir, sizeof dir);
    struct stat st;
    char why[128];
    return stat(dir, &st) == 0 && sp_trusted_stat(&st, 1, why, sizeof why);
}

int sp_output_target(const char *path, char *target, size_t cap)
{
    struct stat st;
    if (strlen(path) >= cap || cap < PATH_MAX)
        return -ENAMETOOLONG;
    snprintf(target, cap, "%s", path);
    if (lstat(path, &st) != 0)
        return errno == ENOENT ? SP_OUT_REPLACE : -errno;
    if (S_ISLNK(st.st_mode) && !link_trusted(path, &st))
        return SP_OUT_REPLACE; /* someone else's link: replaced, never written through */
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

/* Whether name is ".BASE.tmp.PID.N" (sp_write_replace's temp for base):
 * *pid is then its writer's process id. */
static int temp_of(const char *name, const char *base, long *pid)
{
    size_t bl = strlen(base);
    if (name[0] != '.' || strncmp(name + 1, base, bl) != 0 || strncmp(name + 1 + bl, ".tmp.", 5) != 0)
        return 0;
    const char *p = name + 1 + bl + 5;
    char *end;
    *pid = strtol(p, &end, 10);
    if (end == p || *pid <= 0 || *end != '.' || !end[1])
        return 0;
    for (p = end + 1; *p; p++)
        if (*p < '0' || *p > '9')
            return 0;
    return 1;
}

/* Removes the temps a writer killed between open and rename left beside
 * base in dir (a split killed while writing its CSVs, say): ours, regular
 * files, their writer gone (kill(pid, 0): ESRCH) and at least
 * TEMP_LEFTOVER_AGE_S old. The age is there because a pid means
 * something only in our pid namespace: a folder shared with a container
 * may hold a live writer's temp under a pid we do not see, and no writer
 * keeps a temp of a small file open for minutes. Best effort, silent
 * (debug log): a leftover that stays costs only its bytes. */
#define TEMP_LEFTOVER_AGE_S 600
static void sweep_temps(const char *dir, const char *base)
{
    DIR *d = opendir(dir);
    if (!d)
        return;
    time_t now = time(NULL);
    struct dirent *de;
    long pid;
    while ((de = readdir(d)) != NULL) {
        struct stat st;
        if (!temp_of(de->d_name, base, &pid) || pid == (long)getpid())
            continue;
        if (kill((pid_t)pid, 0) == 0 || errno != ESRCH) /* alive, or not ours to signal */
            continue;
        if (fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISREG(st.st_mode) ||
            st.st_uid != geteuid() || now - st.st_mtime < TEMP_LEFTOVER_AGE_S)
            continue;
        if (unlinkat(dirfd(d), de->d_name, 0) == 0)
            sp_log(SP_LOG_DEBUG, "removed %s/%s, left by process %ld that is gone", dir, de->d_name, pid);
    }
    closedir(d);
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
    int keep = stat(target, &st) == 0; /* an existing file keeps its mode */
    if (keep)
        mode = st.st_mode & 07777;
    char dir[SP_PATH_MAX], tmp[SP_PATH_MAX + 64];
    sp_path_dirname(target, dir, sizeof dir);
    sweep_temps(dir, sp_path_basename(target));
    int n = snprintf(tmp, sizeof tmp, "%s/.%s.tmp.%d.%u", dir, sp_path_basename(target),
                     (int)getpid(), atomic_fetch_add(&counter, 1));
    if (n < 0 || (size_t)n >= sizeof tmp)
        return -ENAMETOOLONG;
    int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode);
    if (fd < 0)
        return -errno;
    int rc = 0;
    if (keep && fchmod(fd, mode) != 0) /* a new file: mode as the umask narrowed it */
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

/* ---- trusted folders and files ---------------------------------------- */

int sp_trusted_stat(const struct stat *st, int is_dir, char *why, size_t whylen)
{
    uid_t me = geteuid();
    if (st->st_uid != me && st->st_uid != 0) {
        snprintf(why, whylen, "is owned by uid %u, not by this process's uid %u",
                 (unsigned)st->st_uid, (unsigned)me);
        return 0;
    }
    if ((st->st_mode & (S_IWGRP | S_IWOTH)) && !(is_dir && (st->st_mode & S_ISVTX))) {
        snprintf(why, whylen, "is writable by %s (mode %04o)%s",
                 (st->st_mode & S_IWOTH) ? "others" : "its group", (unsigned)(st->st_mode & 07777),
                 is_dir ? " and has no sticky bit" : "");
        return 0;
    }
    return 1;
}

int sp_dir_open_trusted(int dfd, const char *name, int nofollow, char *why, size_t whylen)
{
    why[0] = '\0';
    int fd = openat(dfd, name, O_RDONLY | O_DIRECTORY | O_CLOEXEC | (nofollow ? O_NOFOLLOW : 0));
    if (fd < 0) {
        int e = errno;
        struct stat lst;
        if (nofollow && (e == ELOOP || e == ENOTDIR) && fstatat(dfd, name, &lst, AT_SYMLINK_NOFOLLOW) == 0 &&
            S_ISLNK(lst.st_mode)) {
            snprintf(why, whylen, "is a symbolic link (refused: it could lead anywhere)");
            return -ELOOP;
        }
        snprintf(why, whylen, "cannot be opened: %s", strerror(e));
        return -e;
    }
    struct stat st;
    if (fstat(fd, &st) != 0) {
        int e = errno;
        close(fd);
        snprintf(why, whylen, "cannot be examined: %s", strerror(e));
        return -e;
    }
    if (!sp_trusted_stat(&st, 1, why, whylen)) {
        close(fd);
        return -EPERM;
    }
    return fd;
}

int sp_mkdir_open_at(int dfd, const char *name, mode_t mode, char *why, size_t whylen)
{
    if (mkdirat(dfd, name, mode) != 0 && errno != EEXIST) {
        int e = errno;
        snprintf(why, whylen, "cannot be created: %s", strerror(e));
        return -e;
    }
    return sp_dir_open_trusted(dfd, name, 1, why, whylen);
}

int sp_file_open_at(int dfd, const char *name, int flags, mode_t mode, char *why, size_t whylen)
{
    why[0] = '\0';
    int fd = openat(dfd, name, flags | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK, mode);
    if (fd < 0) {
        /* Say what is there when it is planted: the kernel may answer a
         * symlink with EACCES (sticky folders) rather than ELOOP. */
        int e = errno;
        struct stat lst;
        if (e != ENOENT && fstatat(dfd, name, &lst, AT_SYMLINK_NOFOLLOW) == 0) {
            if (S_ISLNK(lst.st_mode)) {
                snprintf(why, whylen, "is a symbolic link (refused: it could lead anywhere)");
                return -ELOOP;
            }
            if (!sp_trusted_stat(&lst, 0, why, whylen))
                return -EPERM;
        }
        snprintf(why, whylen, "cannot be opened: %s", strerror(e));
        return -e;
    }
    struct stat st;
    int rc = 0;
    if (fstat(fd, &st) != 0) {
        rc = -errno;
        snprintf(why, whylen, "cannot be examined: %s", strerror(-rc));
    } else if (!S_ISREG(st.st_mode)) {
        rc = S_ISDIR(st.st_mode) ? -EISDIR : -EINVAL;
        snprintf(why, whylen, "is not a regular file");
    } else if (st.st_nlink != 1) {
        rc = -EPERM; /* a hard link to a file elsewhere (another user's, or root's) */
        snprintf(why, whylen, "has %lu hard links (refused: it may be someone else's file)",
                 (unsigned long)st.st_nlink);
    } else if (!sp_trusted_stat(&st, 0, why, whylen)) {
        rc = -EPERM;
    }
    if (rc != 0) {
        close(fd);
        return rc;
    }
    return fd;
}

int sp_read_at(int dfd, const char *name, size_t max, char **out, size_t *len, char *why,
               size_t whylen)
{
    *out = NULL;
    *len = 0;
    int fd = sp_file_open_at(dfd, name, O_RDONLY, 0, why, whylen);
    if (fd < 0)
        return fd;
    int rc = read_fd(fd, max, out, len);
    if (rc != 0)
        snprintf(why, whylen, "cannot be read: %s", strerror(-rc));
    return rc;
}

int sp_replace_at(int dfd, const char *name, const void *data, size_t len, mode_t mode,
                  int durable)
{
    static _Atomic unsigned counter;
    char tmp[NAME_MAX + 64];
    int n = snprintf(tmp, sizeof tmp, ".%.200s.tmp.%d.%u", name, (int)getpid(),
                     atomic_fetch_add(&counter, 1));
    if (n < 0 || (size_t)n >= sizeof tmp)
        return -ENAMETOOLONG;
    int fd = openat(dfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode);
    if (fd < 0)
        return -errno;
    int rc = write_all(fd, data, len);
    if (rc == 0 && durable && fsync(fd) != 0)
        rc = -errno;
    if (close(fd) != 0 && rc == 0)
        rc = -errno;
    if (rc == 0 && renameat(dfd, tmp, dfd, name) != 0)
        rc = -errno;
    if (rc != 0)
        unlinkat(dfd, tmp, 0);
    return rc;
}

int sp_precreate_file(const char *path, mode_t mode, char *why, size_t whylen)
{
    int fd = sp_file_open_at(AT_FDCWD, path, O_RDWR | O_CREAT, mode, why, whylen);
    if (fd < 0)
        return fd;
    close(fd);
    return 0;
}
