/* SPDX-License-Identifier: Apache-2.0 */
/*
 * splittmp.c — the private folder `servprof split` parses raw stores into.
 *
 * A split of raw stores parses them into a folder of its own under
 * $TMPDIR (servprof-split-XXXXXX, from mkdtemp) and removes it when it is
 * done. A run killed mid-parse (Ctrl-C, SIGKILL, out of memory) cannot
 * remove it, and a parse of a large session leaves gigabytes there, so
 * each run that makes such a folder first removes the leftovers of earlier
 * ones. "Left over" must never mean "another run's, still working": each
 * run holds an exclusive flock(2) on the file .lock in its folder for as
 * long as the folder lives, and the kernel drops it when the process dies,
 * however it dies. A sweeper that can take the lock knows the owner is
 * gone, and keeps holding it while it removes the folder. The one window
 * without a lock — between mkdtemp and the lock — is covered by age: a
 * folder without .lock goes only when it is a minute old. A signal handler
 * could not cover SIGKILL, and removing a tree is not async-signal-safe,
 * so there is none.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "splittmp.h"

#define LOCK_NAME ".lock"
#define UNLOCKED_AGE_S 60 /* a folder without its lock: made at least this long ago */

static const char *tmp_root(void)
{
    const char *t = getenv("TMPDIR");
    return t && *t ? t : "/tmp";
}

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st, (void)flag, (void)ftw;
    remove(path);
    return 0;
}

static void rm_tree(const char *dir) { nftw(dir, rm_entry, 8, FTW_DEPTH | FTW_PHYS); }

/* Whether the folder `dir` (this user's, named as ours) is no run's: its
 * lock taken here (then held in *fd until the removal), or no lock and old. */
static int abandoned(const char *dir, const struct stat *st, int *fd)
{
    char lock[4096];
    *fd = -1;
    if ((size_t)snprintf(lock, sizeof lock, "%s/" LOCK_NAME, dir) >= sizeof lock)
        return 0;
    *fd = open(lock, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    if (*fd < 0)
        return errno == ENOENT && time(NULL) - st->st_mtime >= UNLOCKED_AGE_S;
    if (flock(*fd, LOCK_EX | LOCK_NB) == 0)
        return 1;
    close(*fd);
    *fd = -1;
    return 0;
}

int sa_split_tmp_sweep(void)
{
    const char *root = tmp_root();
    DIR *d = opendir(root);
    if (!d)
        return 0;
    int gone = 0;
    for (struct dirent *e; (e = readdir(d));) {
        if (strncmp(e->d_name, SA_SPLIT_TMP_PREFIX, sizeof SA_SPLIT_TMP_PREFIX - 1) != 0)
            continue;
        char dir[4096];
        struct stat st;
        snprintf(dir, sizeof dir, "%s/%s", root, e->d_name);
        if (lstat(dir, &st) != 0 || !S_ISDIR(st.st_mode) || st.st_uid != geteuid())
            continue; /* not a folder (a link is never followed), or not ours to remove */
        int fd;
        if (abandoned(dir, &st, &fd)) {
            rm_tree(dir);
            gone++;
        }
        if (fd >= 0)
            close(fd);
    }
    closedir(d);
    return gone;
}

int sa_split_tmp_make(char *buf, size_t cap)
{
    if ((size_t)snprintf(buf, cap, "%s/" SA_SPLIT_TMP_PREFIX "XXXXXX", tmp_root()) >= cap)
        return -ENAMETOOLONG;
    if (!mkdtemp(buf))
        return -errno;
    char lock[4096];
    if ((size_t)snprintf(lock, sizeof lock, "%s/" LOCK_NAME, buf) >= sizeof lock) {
        rm_tree(buf);
        return -ENAMETOOLONG;
    }
    int fd = open(lock, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0 || flock(fd, LOCK_EX | LOCK_NB) != 0) {
        int err = errno;
        if (fd >= 0)
            close(fd);
        rm_tree(buf);
        return -err;
    }
    return fd;
}

void sa_split_tmp_remove(const char *dir, int fd)
{
    rm_tree(dir);
    if (fd >= 0)
        close(fd);
}
