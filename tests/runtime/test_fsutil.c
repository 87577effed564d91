/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_fsutil.c — the runtime's file helpers (common/fsutil.c) on real files:
 *
 *  - sp_mkdirs: parents created with the mode asked for as the umask
 *    narrows it (never wider),
 *    existing folders left alone, a file in the way refused (-ENOTDIR),
 *    empty and over-long paths refused;
 *  - sp_read_file: whole files of any size, the size limit (-EFBIG), a
 *    folder (-EISDIR), a FIFO (-EINVAL at once, never blocking), a missing
 *    file (-ENOENT);
 *  - sp_output_target / sp_write_replace: a regular file replaced (mode
 *    kept), a new file with the mode asked for, a symlink kept as a link
 *    with its target replaced, a dangling link and a FIFO written in place,
 *    a folder refused; no temp file left behind on success or failure;
 *  - sp_path_dirname / sp_path_basename, sp_dir_writable.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "fsutil.h"
#include "internal.h"

static char tmp[] = "/tmp/sp_test_fsutil_XXXXXX";

static const char *at(const char *name)
{
    static char bufs[4][1024];
    static int next;
    char *b = bufs[next++ & 3];
    snprintf(b, sizeof bufs[0], "%s/%s", tmp, name);
    return b;
}

static int mode_of(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 ? (int)(st.st_mode & 07777) : -1;
}

/* Entries of folder dir whose name starts with "." (temp files). */
static int hidden_entries(const char *dir)
{
    int n = 0;
    DIR *d = opendir(dir);
    struct dirent *e;
    while (d && (e = readdir(d)))
        if (e->d_name[0] == '.' && strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
            n++;
    if (d)
        closedir(d);
    return n;
}

static char *read_back(const char *path)
{
    char *text = NULL;
    size_t len;
    return sp_read_file(path, 1 << 20, &text, &len) == 0 ? text : NULL;
}

static void test_mkdirs(void)
{
    mode_t old = umask(077);
    CHECK_INT(sp_mkdirs(at("m/a/b"), 0755), 0);
    CHECK_INT(mode_of(at("m/a")), 0700); /* the umask narrows, nothing widens */
    CHECK_INT(mode_of(at("m/a/b")), 0700);
    CHECK_INT(chmod(at("m/a"), 0700), 0);
    CHECK_INT(sp_mkdirs(at("m/a/b/c///"), 0750), 0); /* trailing slashes */
    CHECK_INT(mode_of(at("m/a")), 0700);             /* existing: left alone */
    CHECK_INT(mode_of(at("m/a/b/c")), 0700);
    umask(old);
    CHECK_INT(sp_write_atomic(at("m/file"), "x", 1, 0640), 0);
    CHECK_INT(sp_mkdirs(at("m/file/sub"), 0750), -ENOTDIR);
    CHECK_INT(sp_mkdirs(at("m/file"), 0750), -ENOTDIR);
    CHECK_INT(sp_mkdirs("", 0750), -ENAMETOOLONG);
    char *longp = malloc(SP_PATH_MAX + 10);
    memset(longp, 'a', SP_PATH_MAX + 9);
    longp[0] = '/';
    longp[SP_PATH_MAX + 9] = 0;
    CHECK_INT(sp_mkdirs(longp, 0750), -ENAMETOOLONG);
    free(longp);
    CHECK_INT(sp_mkdirs("/", 0750), 0);
}

static void test_read_file(void)
{
    /* Bigger than the first 4 KiB buffer: grown, read whole. */
    size_t n = 10000;
    char *big = malloc(n);
    for (size_t i = 0; i < n; i++)
        big[i] = (char)('a' + i % 26);
    CHECK_INT(sp_write_atomic(at("big"), big, n, 0640), 0);
    char *text = NULL;
    size_t len = 0;
    CHECK_INT(sp_read_file(at("big"), n, &text, &len), 0);
    CHECK_INT(len, n);
    CHECK(text && memcmp(text, big, n) == 0 && text[n] == '\0');
    free(text);
    /* Over the limit, found while growing and found at the end. */
    CHECK_INT(sp_read_file(at("big"), 4000, &text, &len), -EFBIG);
    CHECK(text == NULL && len == 0);
    CHECK_INT(sp_read_file(at("big"), n - 1, &text, &len), -EFBIG);
    CHECK_INT(sp_write_atomic(at("small"), "12345", 5, 0640), 0);
    CHECK_INT(sp_read_file(at("small"), 4, &text, &len), -EFBIG);
    CHECK_INT(sp_read_file(at("small"), 5, &text, &len), 0);
    CHECK_STR(text, "12345");
    free(text);
    free(big);
    /* Empty, missing, a folder, a FIFO with no writer (must not block). */
    CHECK_INT(sp_write_atomic(at("empty"), "", 0, 0640), 0);
    CHECK_INT(sp_read_file(at("empty"), 10, &text, &len), 0);
    CHECK(text && text[0] == '\0' && len == 0);
    free(text);
    CHECK_INT(sp_read_file(at("missing"), 10, &text, &len), -ENOENT);
    CHECK_INT(sp_read_file(tmp, 10, &text, &len), -EISDIR);
    CHECK_INT(mkfifo(at("fifo"), 0600), 0);
    CHECK_INT(sp_read_file(at("fifo"), 10, &text, &len), -EINVAL);
    CHECK(text == NULL);
}

static void test_paths(void)
{
    char out[64];
    sp_path_dirname("name", out, sizeof out);
    CHECK_STR(out, ".");
    sp_path_dirname("/name", out, sizeof out);
    CHECK_STR(out, "/");
    sp_path_dirname("/a/b/name", out, sizeof out);
    CHECK_STR(out, "/a/b");
    sp_path_dirname("a/name", out, sizeof out);
    CHECK_STR(out, "a");
    CHECK_STR(sp_path_basename("/a/b/name"), "name");
    CHECK_STR(sp_path_basename("name"), "name");
    CHECK_STR(sp_path_basename("/a/"), "");

    CHECK(sp_dir_writable(tmp));
    CHECK(!sp_dir_writable(at("missing")));
    CHECK(!sp_dir_writable(at("small"))); /* a file, not a folder */
}

static void test_output_target(void)
{
    char target[PATH_MAX + 16];
    CHECK_INT(sp_output_target(at("absent"), target, sizeof target), SP_OUT_REPLACE);
    CHECK_STR(target, at("absent"));
    CHECK_INT(sp_output_target(at("small"), target, sizeof target), SP_OUT_REPLACE);
    CHECK_INT(sp_output_target(tmp, target, sizeof target), -EISDIR);
    CHECK_INT(sp_output_target(at("fifo"), target, sizeof target), SP_OUT_IN_PLACE);
    char small[16];
    CHECK_INT(sp_output_target(at("small"), small, sizeof small), -ENAMETOOLONG);
    /* A link to a file: the file is the target. */
    CHECK_INT(symlink(at("small"), at("link")), 0);
    CHECK_INT(sp_output_target(at("link"), target, sizeof target), SP_OUT_REPLACE);
    char real[PATH_MAX];
    CHECK(realpath(at("small"), real) != NULL);
    CHECK_STR(target, real);
    /* A dangling link: written in place (creates what it points to). */
    CHECK_INT(symlink(at("nowhere"), at("dangling")), 0);
    CHECK_INT(sp_output_target(at("dangling"), target, sizeof target), SP_OUT_IN_PLACE);
    CHECK_STR(target, at("dangling"));
    /* A link to a folder is a folder. */
    CHECK_INT(symlink(at("m"), at("dirlink")), 0);
    CHECK_INT(sp_output_target(at("dirlink"), target, sizeof target), -EISDIR);
}

/* A file at name, its mtime age_s seconds ago. */
static void plant(const char *name, int age_s)
{
    int fd = open(at(name), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    CHECK(fd >= 0);
    close(fd);
    struct timespec ts[2] = {{time(NULL) - age_s, 0}, {time(NULL) - age_s, 0}};
    CHECK_INT(utimensat(AT_FDCWD, at(name), ts, 0), 0);
}

/* The temps of a writer killed before its rename go with the next write
 * of the same name; a live writer's, a young one and another name's stay. */
static void test_write_sweeps_leftovers(void)
{
    pid_t dead = fork();
    if (dead == 0)
        _exit(0);
    CHECK(dead > 0);
    CHECK_INT(waitpid(dead, NULL, 0), dead);
    char old[64], young[64], live[64], other[64];
    snprintf(old, sizeof old, ".swept.csv.tmp.%d.0", (int)dead);
    snprintf(young, sizeof young, ".swept.csv.tmp.%d.1", (int)dead);
    snprintf(live, sizeof live, ".swept.csv.tmp.%d.7", (int)getppid());
    snprintf(other, sizeof other, ".other.csv.tmp.%d.0", (int)dead);
    plant(old, 3600);
    plant(young, 5);
    plant(live, 3600);
    plant(other, 3600);
    CHECK_INT(sp_write_atomic(at("swept.csv"), "a,b\n", 4, 0644), 0);
    CHECK(access(at(old), F_OK) != 0);
    CHECK(access(at(young), F_OK) == 0);
    CHECK(access(at(live), F_OK) == 0);
    CHECK(access(at(other), F_OK) == 0);
    unlink(at(young));
    unlink(at(live));
    unlink(at(other));
}

static void test_write_replace(void)
{
    mode_t old = umask(077);
    CHECK_INT(sp_write_replace(at("new"), "one", 3, 0644, 0), 0);
    umask(old);
    CHECK_INT(mode_of(at("new")), 0600); /* the mode asked for, narrowed by the umask */
    char *t = read_back(at("new"));
    CHECK_STR(t, "one");
    free(t);
    CHECK_INT(chmod(at("new"), 0600), 0);
    CHECK_INT(sp_write_atomic(at("new"), "two!", 4, 0644), 0);
    CHECK_INT(mode_of(at("new")), 0600); /* an existing file keeps its mode */
    t = read_back(at("new"));
    CHECK_STR(t, "two!");
    free(t);

    /* Through a link: the link stays, its file gets the data. */
    CHECK_INT(sp_write_atomic(at("link"), "via link", 8, 0640), 0);
    struct stat st;
    CHECK_INT(lstat(at("link"), &st), 0);
    CHECK(S_ISLNK(st.st_mode));
    t = read_back(at("small"));
    CHECK_STR(t, "via link");
    free(t);
    /* A dangling link: its target is created. */
    CHECK_INT(sp_write_atomic(at("dangling"), "made", 4, 0640), 0);
    t = read_back(at("nowhere"));
    CHECK_STR(t, "made");
    free(t);
    CHECK_INT(lstat(at("dangling"), &st), 0);
    CHECK(S_ISLNK(st.st_mode));

    /* A FIFO is written into, not replaced by a file. */
    int rd = open(at("fifo"), O_RDONLY | O_NONBLOCK);
    CHECK(rd >= 0);
    CHECK_INT(sp_write_atomic(at("fifo"), "piped", 5, 0640), 0);
    char buf[16] = "";
    CHECK_INT(read(rd, buf, sizeof buf - 1), 5);
    CHECK_STR(buf, "piped");
    close(rd);
    CHECK_INT(lstat(at("fifo"), &st), 0);
    CHECK(S_ISFIFO(st.st_mode));

    /* Refused: a folder, a missing folder; nothing left behind. */
    CHECK_INT(sp_write_atomic(at("m"), "x", 1, 0640), -EISDIR);
    CHECK_INT(sp_write_atomic(at("nodir/file"), "x", 1, 0640), -ENOENT);
    CHECK_INT(hidden_entries(tmp), 0);
    CHECK_INT(hidden_entries(at("m")), 0);
}

int main(void)
{
    if (!mkdtemp(tmp))
        return 2;
    test_mkdirs();
    test_read_file();
    test_paths();
    test_output_target();
    test_write_replace();
    test_write_sweeps_leftovers();
    check_remove_tree(tmp);
    CHECK_DONE();
}
