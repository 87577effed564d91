/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_shared_dir.c — a prof_dir that another user can write (src/session.c,
 * the trusted helpers of src/fsutil.c), attacked by a real second user.
 *
 * The test runs as root (as servers in containers do), makes an
 * unprivileged user with useradd and forks children that setuid() to it to
 * play the attacker; it exits 77 (ctest SKIP) when it is not root or the
 * user cannot be made. Each case checks what the server did NOT do (the
 * victim file is unchanged, no file was created through a link, nothing
 * was joined) and that the session was refused with a message naming the
 * planted thing:
 *
 *  - prof_dir owned by the attacker (0777): refused before anything in it
 *    is opened, although it holds a state-file symlink to a root file;
 *  - prof_dir of root, 0777 without the sticky bit: refused;
 *  - prof_dir of root, 1777 (as /tmp): a symlinked lock file, a symlinked
 *    state file, a state file of the attacker's, and a root state naming
 *    an attacker's session folder (0777, members lock held by the
 *    attacker) are each refused; with the plants gone a session opens and
 *    its files are the server's, 0640 at most;
 *  - the store is created 0640 under umask 022 (SQLite alone makes 0644);
 *  - an output (sp_output_target, as `parse -o` and `report` use) whose
 *    name is the attacker's symlink to a root file replaces the link and
 *    leaves the root file alone.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "fsutil.h"
#include "internal.h"
#include "runtime.h"
#include "storewrite.h"

#define ATTACKER "sp_attacker"

static char tmp[] = "/tmp/sp_test_shared_XXXXXX";
static char cfg[300], victim[300], state_name[300], logpath[300];
static uid_t auid;
static gid_t agid;
static sp_config conf;
static int saved_stderr = -1;

static const char *at(const char *fmt, const char *a)
{
    static char bufs[8][1024];
    static int next;
    char *b = bufs[next++ & 7];
    char rel[700];
    snprintf(rel, sizeof rel, fmt, a);
    snprintf(b, sizeof bufs[0], "%s/%s", tmp, rel);
    return b;
}

/* Runs fn(arg) as the attacker in a child; returns its exit status. */
static int as_attacker(int (*fn)(const char *), const char *arg)
{
    pid_t pid = fork();
    if (pid == 0) {
        if (setgid(agid) != 0 || setuid(auid) != 0)
            _exit(99);
        _exit(fn(arg));
    }
    int st = 0;
    waitpid(pid, &st, 0);
    return WIFEXITED(st) ? WEXITSTATUS(st) : 98;
}

static int mk_open_dir(const char *p)
{
    return mkdir(p, 0777) == 0 && chmod(p, 0777) == 0 ? 0 : 1;
}

/* The attacker's plants, relative to the prof_dir given. */
static int plant_state_link(const char *pd)
{
    char p[1200];
    snprintf(p, sizeof p, "%s/%s", pd, state_name);
    return symlink(victim, p) == 0 ? 0 : 1;
}

static int plant_lock_link(const char *pd)
{
    char p[1200], q[1200];
    snprintf(p, sizeof p, "%s/.servprof.lock", pd);
    snprintf(q, sizeof q, "%s/created-through-link", tmp);
    return symlink(q, p) == 0 ? 0 : 1;
}

static int plant_state_file(const char *pd)
{
    char p[1200];
    snprintf(p, sizeof p, "%s/%s", pd, state_name);
    int fd = open(p, O_WRONLY | O_CREAT | O_EXCL, 0666);
    const char text[] = "dir evil\nopen 1\n";
    int ok = fd >= 0 && write(fd, text, sizeof text - 1) == (ssize_t)(sizeof text - 1);
    if (fd >= 0)
        close(fd);
    return ok ? 0 : 1;
}

static int unlink_it(const char *p)
{
    return unlink(p) == 0 ? 0 : 1;
}

/* Makes evil/ and evil/Trace_Service 0777 in pd and holds a read lock on
 * evil/.servprof-members until told to stop (a byte on the pipe). */
static int hold_pipe[2], ready_pipe[2];
static int plant_live_folder(const char *pd)
{
    char p[1200];
    snprintf(p, sizeof p, "%s/evil", pd);
    if (mk_open_dir(p))
        return 1;
    snprintf(p, sizeof p, "%s/evil/Trace_Service", pd);
    if (mk_open_dir(p))
        return 1;
    snprintf(p, sizeof p, "%s/evil/.servprof-members", pd);
    int fd = open(p, O_RDWR | O_CREAT, 0666);
    struct flock fl = {.l_type = F_RDLCK, .l_whence = SEEK_SET};
    if (fd < 0 || fcntl(fd, F_SETLK, &fl) != 0)
        return 1;
    (void)!write(ready_pipe[1], "r", 1);
    char c;
    (void)!read(hold_pipe[0], &c, 1);
    return 0;
}

static void log_to_file(void)
{
    fflush(stderr);
    saved_stderr = dup(2);
    int fd = open(logpath, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    dup2(fd, 2);
    close(fd);
}

/* Restores stderr; returns what was logged meanwhile (free()). */
static char *log_back(void)
{
    fflush(stderr);
    dup2(saved_stderr, 2);
    close(saved_stderr);
    char *t = check_slurp(logpath);
    fputs(t ? t : "", stderr); /* the test's own output shows it too */
    return t;
}

static char *victim_text(void)
{
    return check_slurp(victim);
}

/* Opens a session in pd; expects a refusal whose message names `names`. */
static void expect_refused(const char *pd, const char *names, int line)
{
    sp_config c = conf;
    snprintf(c.prof_dir, sizeof c.prof_dir, "%s", pd);
    sp_session s;
    log_to_file();
    int rc = sp_session_open(&s, &c, cfg, 1);
    char *log = log_back();
    if (rc == 0)
        sp_session_leave(&s, 1);
    if (rc == 0 || !log || !strstr(log, names) || !strstr(log, "collection stays off")) {
        fprintf(stderr, "line %d: session in %s: rc %d, log: %s\n", line, pd, rc,
                log ? log : "(none)");
        check_failures++;
    }
    free(log);
    char *v = victim_text();
    CHECK_STR(v, "root's own file\n");
    free(v);
    CHECK(access(at("%s", "created-through-link"), F_OK) != 0);
}

/* The state file's name for (host, cfg): made by a session of our own in a
 * scratch folder, since it is a hash of both. */
static void learn_state_name(void)
{
    sp_config c = conf;
    snprintf(c.prof_dir, sizeof c.prof_dir, "%s", at("%s", "scratch"));
    sp_session s;
    CHECK_INT(sp_session_open(&s, &c, cfg, 1), 0);
    sp_session_leave(&s, 1);
    DIR *d = opendir(c.prof_dir);
    struct dirent *e;
    while (d && (e = readdir(d)))
        if (!strncmp(e->d_name, ".servprof-session-", 18))
            snprintf(state_name, sizeof state_name, "%s", e->d_name);
    if (d)
        closedir(d);
    CHECK(state_name[0] != 0);
}

static void check_prof_dirs(void)
{
    /* The attacker's own 0777 folder, a state link to root's file in it. */
    const char *owned = at("%s", "owned");
    CHECK_INT(mkdir(owned, 0700), 0);
    CHECK_INT(chown(owned, auid, agid), 0);
    CHECK_INT(as_attacker(mk_open_dir, at("%s", "owned/sub")), 0);
    CHECK_INT(chmod(owned, 0777), 0);
    CHECK_INT(as_attacker(plant_state_link, owned), 0);
    CHECK_INT(as_attacker(plant_lock_link, owned), 0);
    expect_refused(owned, "is owned by uid", __LINE__);
    expect_refused(owned, owned, __LINE__);

    /* root's, but writable by everyone and not sticky. */
    const char *open_dir = at("%s", "open");
    CHECK_INT(mkdir(open_dir, 0700), 0);
    CHECK_INT(chmod(open_dir, 0777), 0);
    CHECK_INT(as_attacker(plant_state_link, open_dir), 0);
    expect_refused(open_dir, "has no sticky bit", __LINE__);
}

static void check_sticky(void)
{
    const char *pd = at("%s", "sticky");
    CHECK_INT(mkdir(pd, 0700), 0);
    CHECK_INT(chmod(pd, 01777), 0);
    char lock[1200], st[1200];
    snprintf(lock, sizeof lock, "%s/.servprof.lock", pd);
    snprintf(st, sizeof st, "%s/%s", pd, state_name);

    CHECK_INT(as_attacker(plant_lock_link, pd), 0);
    expect_refused(pd, "lock file", __LINE__);
    CHECK_INT(as_attacker(unlink_it, lock), 0);

    CHECK_INT(as_attacker(plant_state_link, pd), 0);
    expect_refused(pd, "symbolic link", __LINE__);
    CHECK_INT(as_attacker(unlink_it, st), 0);

    CHECK_INT(as_attacker(plant_state_file, pd), 0);
    expect_refused(pd, "is owned by uid", __LINE__);
    CHECK_INT(as_attacker(unlink_it, st), 0);

    /* A state of root's naming a live folder of the attacker's. */
    CHECK_INT(pipe(hold_pipe), 0);
    CHECK_INT(pipe(ready_pipe), 0);
    pid_t holder = fork();
    if (holder == 0)
        _exit(as_attacker(plant_live_folder, pd));
    char c = 0;
    CHECK_INT(read(ready_pipe[0], &c, 1), 1);
    CHECK_INT(sp_write_atomic(st, "dir evil\nopen 1\n", 16, 0640), 0);
    expect_refused(pd, "session folder", __LINE__);
    char ts[1200];
    snprintf(ts, sizeof ts, "%s/evil/Trace_Service", pd);
    DIR *d = opendir(ts);
    int entries = 0;
    struct dirent *e;
    while (d && (e = readdir(d)))
        entries += e->d_name[0] != '.';
    if (d)
        closedir(d);
    CHECK_INT(entries, 0); /* no store of ours in the attacker's folder */
    CHECK_INT(write(hold_pipe[1], "q", 1), 1);
    int wst;
    waitpid(holder, &wst, 0);
    CHECK(WIFEXITED(wst) && WEXITSTATUS(wst) == 0);
    CHECK_INT(unlink(st), 0);

    /* Nothing planted: a session opens, and what it made is root's. */
    sp_config cf = conf;
    snprintf(cf.prof_dir, sizeof cf.prof_dir, "%s", pd);
    sp_session s;
    mode_t old = umask(022);
    CHECK_INT(sp_session_open(&s, &cf, cfg, 2), 0);
    sp_store *store = sp_store_open(s.store_path, (int)getpid());
    CHECK(store != NULL);
    sp_store_close(store);
    umask(old);
    struct stat sb;
    CHECK_INT(stat(s.store_path, &sb), 0);
    CHECK_INT(sb.st_mode & 0777, 0640); /* SQLite alone: 0644 */
    CHECK_INT(sb.st_uid, 0);
    char acks[4400];
    snprintf(acks, sizeof acks, "%s/.servprof-acks", s.dir);
    CHECK_INT(stat(acks, &sb), 0);
    CHECK_INT(sb.st_mode & 0777, 0640);
    CHECK_INT(stat(st, &sb), 0);
    CHECK_INT(sb.st_mode & 0777, 0640);
    CHECK_INT(stat(s.dir, &sb), 0);
    CHECK_INT(sb.st_mode & 0777, 0750);
    sp_session_leave(&s, 1);
}

static int plant_output_link(const char *dir)
{
    char p[1200];
    snprintf(p, sizeof p, "%s/request.csv", dir);
    return symlink(victim, p) == 0 ? 0 : 1;
}

/* parse -o / report into a folder others can write: never through a link. */
static void check_output(void)
{
    const char *out = at("%s", "out");
    CHECK_INT(mkdir(out, 0700), 0);
    CHECK_INT(chmod(out, 0777), 0);
    CHECK_INT(as_attacker(plant_output_link, out), 0);
    char path[1200], target[PATH_MAX + 16];
    snprintf(path, sizeof path, "%s/request.csv", out);
    CHECK_INT(sp_output_target(path, target, sizeof target), SP_OUT_REPLACE);
    CHECK_STR(target, path); /* the link itself is replaced */
    CHECK_INT(sp_write_atomic(path, "id\n", 3, 0640), 0);
    char *v = victim_text();
    CHECK_STR(v, "root's own file\n");
    free(v);
    struct stat sb;
    CHECK_INT(lstat(path, &sb), 0);
    CHECK(S_ISREG(sb.st_mode));
    /* Our own link in our own folder is still followed (docs/parse.md). */
    char mine[1200];
    snprintf(mine, sizeof mine, "%s/mine.csv", tmp);
    CHECK_INT(symlink(at("%s", "mine-target"), mine), 0);
    CHECK_INT(sp_write_atomic(at("%s", "mine-target"), "a\n", 2, 0640), 0);
    CHECK_INT(sp_write_atomic(mine, "b\n", 2, 0640), 0);
    CHECK_INT(lstat(mine, &sb), 0);
    CHECK(S_ISLNK(sb.st_mode));
}

int main(void)
{
    if (geteuid() != 0) {
        printf("SKIP: needs root to play a second user\n");
        return 77;
    }
    struct passwd *pw = getpwnam(ATTACKER);
    if (!pw) {
        (void)!system("useradd -M -r -s /usr/sbin/nologin " ATTACKER " >/dev/null 2>&1");
        pw = getpwnam(ATTACKER); /* a parallel run may have made it meanwhile */
    }
    if (!pw) {
        printf("SKIP: cannot create user %s (useradd)\n", ATTACKER);
        return 77;
    }
    auid = pw->pw_uid;
    agid = pw->pw_gid;
    if (!mkdtemp(tmp))
        return 2;
    CHECK_INT(chmod(tmp, 0755), 0); /* the attacker may reach its folders */
    snprintf(cfg, sizeof cfg, "%s/config.json", tmp);
    snprintf(victim, sizeof victim, "%s/victim", tmp);
    snprintf(logpath, sizeof logpath, "%s/log", tmp);
    CHECK_INT(sp_write_atomic(cfg, "{}", 2, 0640), 0);
    CHECK_INT(sp_write_atomic(victim, "root's own file\n", 16, 0600), 0);
    sp_config_defaults(&conf);
    learn_state_name();

    check_prof_dirs();
    check_sticky();
    check_output();

    check_remove_tree(tmp);
    CHECK_DONE();
}
