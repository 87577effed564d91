/* SPDX-License-Identifier: Apache-2.0 */
/*
 * session.c — the session folder, shared by the processes of one host that
 * use the same config file.
 *
 * Layout: <prof_dir>/<MMDD-HHMM>[-N]/Trace_Service/ms_service_<host>-<pid>.db
 * (the recorder creates the .db; we create the folders, 0750).
 *
 * Protocol (why: several worker processes see the same edit of the config
 * file within milliseconds of each other and must land in ONE folder, while
 * the next enable after a disable must make a NEW folder; the reference's
 * shared-memory election races):
 *
 *   <prof_dir>/.servprof.lock     write-locked (fcntl) around every decision
 *                                 below; held for milliseconds.
 *   <prof_dir>/.servprof-session-<h>
 *                                 state for (hostname, config path), h being
 *                                 a 64-bit FNV-1a hash of both. Text lines:
 *                                   dir <session folder name>
 *                                   open <1|0>
 *                                   host <hostname>
 *                                   config <config path>
 *                                 replaced atomically (temp + rename).
 *   (all of them 0640, narrowed by the umask, never widened)
 *   <session>/.servprof-members   every process collecting in the session
 *                                 holds a read lock (fcntl) on it; the
 *                                 kernel drops it when the process dies, so
 *                                 a crash never leaves a session "live".
 *   <session>/.servprof-acks      one line per process that started or
 *                                 stopped collecting in this folder:
 *                                   start|stop <pid> <epoch ns> <config>
 *                                 appended with O_APPEND, one write(2) a
 *                                 line, so lines of several processes never
 *                                 mix. `servprof enable|disable` reads it to
 *                                 say which processes picked the edit up.
 *
 *   start: lock; read state; when it is open, its folder exists and
 *          another process holds .servprof-members (F_GETLK says a write
 *          lock would conflict) -> join that folder; otherwise make a new folder named
 *          after the local time (-1, -2 ... when taken) and write the state
 *          as open. Take the shared members lock; unlock.
 *   stop:  release the members lock. When the stop comes from the config
 *          file (enable 0, or a limit that wrote enable 0), also mark the
 *          state closed if it still names our folder, so that a quick
 *          re-enable cannot join the old session through a process that
 *          has not noticed the disable yet.
 *
 * Shared prof_dir (why: the state file's name is computable, and a server
 * often runs as root): prof_dir is opened once and checked (owned by us or
 * root, not writable by group/others unless sticky); every name above is
 * then opened relative to that folder (openat) with O_NOFOLLOW, and each
 * opened file or folder is checked the same way with fstat (a regular
 * file of one link). The state file is replaced by renaming a temp file
 * made with O_EXCL, so a symlink in its place is replaced, never followed.
 * Anything planted (a symlink, another user's file, a folder others can
 * write) refuses the session with one message: collection stays off, the
 * server runs on.
 *
 * Why fcntl (POSIX record) locks and not flock(): a flock belongs to the
 * open file description, which a fork child shares; a child forked while
 * another parent thread held the prof_dir lock would keep it locked through
 * its inherited descriptor and deadlock itself and the parent. fcntl locks
 * belong to the process and are not inherited. Their catch — closing ANY
 * descriptor of the file drops the process's locks on it — is harmless
 * here: each file is opened once, under the runtime mutex.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "fsutil.h"
#include "internal.h"
#include "runtime.h"

/* Owned by the runtime mutex (sessions open and close under it). Every
 * file of the protocol is opened relative to these folders (see "Shared
 * prof_dir" above), so a path is resolved once, when the session opens. */
static int members_fd = -1;
static int pd_fd = -1;              /* prof_dir, while a session is open */
static int sess_fd = -1;            /* the session folder, likewise */
static char state_name[64];         /* .servprof-session-<h>, in prof_dir */
static char ack_cfg[SP_PATH_MAX];   /* the config path of the open session */

static void close_fd(int *fd)
{
    if (*fd >= 0)
        close(*fd);
    *fd = -1;
}

/* Appends "event pid ns config" to .servprof-acks of the session folder.
 * Best effort: a failure only means `servprof enable` cannot confirm; it
 * is logged. */
static void write_ack(const char *dir, const char *event, const char *cfg)
{
    char line[SP_PATH_MAX + 96], why[160];
    int n = snprintf(line, sizeof line, "%s %d %lld %s\n", event, (int)getpid(),
                     (long long)sp_now_realtime_ns(), cfg);
    if (n < 0 || (size_t)n >= sizeof line || sess_fd < 0)
        return;
    int fd = sp_file_open_at(sess_fd, ".servprof-acks", O_WRONLY | O_APPEND | O_CREAT,
                             SP_FILE_MODE, why, sizeof why);
    ssize_t w = fd >= 0 ? write(fd, line, (size_t)n) : -1;
    if (w != n)
        sp_log(fd < 0 ? SP_LOG_WARNING : SP_LOG_DEBUG, "%s/.servprof-acks %s; servprof "
               "enable/disable will not see this %s", dir,
               fd < 0 ? why : strerror(errno), event);
    if (fd >= 0)
        close(fd);
}

static uint64_t fnv1a(uint64_t h, const char *s)
{
    for (; *s; s++) {
        h ^= (unsigned char)*s;
        h *= 1099511628211ull;
    }
    return h;
}

typedef struct state {
    char dir[256];
    int open;
    char cfg[SP_PATH_MAX];
} state;

/* Reads the state file of prof_dir. Returns 0, -ENOENT when there is none
 * (or it names no usable folder), or another -errno when it is there but
 * refused (a symlink, another user's file): `why` says so. */
static int read_state(state *st, char *why, size_t whylen)
{
    char *text;
    size_t len;
    memset(st, 0, sizeof *st);
    snprintf(st->cfg, sizeof st->cfg, "(none)");
    int rc = sp_read_at(pd_fd, state_name, 65536, &text, &len, why, whylen);
    if (rc != 0)
        return rc;
    char *save = NULL;
    for (char *line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        if (!strncmp(line, "dir ", 4))
            snprintf(st->dir, sizeof st->dir, "%s", line + 4);
        else if (!strncmp(line, "open ", 5))
            st->open = atoi(line + 5);
        else if (!strncmp(line, "config ", 7))
            snprintf(st->cfg, sizeof st->cfg, "%s", line + 7);
    }
    free(text);
    /* A name with a slash or dot-dot could escape prof_dir: ignore it. */
    if (!st->dir[0] || strchr(st->dir, '/') || !strcmp(st->dir, "..") || !strcmp(st->dir, "."))
        return -ENOENT;
    return 0;
}

static int write_state(const char *dir, int open, const char *host, const char *cfg)
{
    char text[SP_PATH_MAX + 512];
    int n = snprintf(text, sizeof text, "dir %s\nopen %d\nhost %s\nconfig %s\n", dir, open, host,
                     cfg);
    if (n < 0 || (size_t)n >= sizeof text)
        return -ENAMETOOLONG;
    /* no fsync: see fsutil.h (sp_write_replace) */
    return sp_replace_at(pd_fd, state_name, text, (size_t)n, SP_FILE_MODE, 0);
}

/* Waits for a whole-file fcntl lock: F_WRLCK or F_RDLCK. */
static int lock_fd(int fd, short type)
{
    struct flock fl = {.l_type = type, .l_whence = SEEK_SET, .l_start = 0, .l_len = 0};
    while (fcntl(fd, F_SETLKW, &fl) != 0) {
        if (errno != EINTR)
            return -errno;
    }
    return 0;
}

/* Nonzero when some process holds the members lock of the folder dfd. */
static int session_live(int dfd)
{
    char why[160];
    int fd = sp_file_open_at(dfd, ".servprof-members", O_RDONLY, 0, why, sizeof why);
    if (fd < 0)
        return 0;
    struct flock fl = {.l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = 0, .l_len = 0};
    int live = fcntl(fd, F_GETLK, &fl) == 0 && fl.l_type != F_UNLCK;
    close(fd);
    return live;
}

/* Makes a new folder <MMDD-HHMM>[-N] in prof_dir; name receives it. */
static int make_folder(char *name, size_t len)
{
    time_t now = time(NULL);
    struct tm tm;
    localtime_r(&now, &tm);
    char base[32];
    strftime(base, sizeof base, "%m%d-%H%M", &tm);
    for (int n = 0; n < 10000; n++) {
        if (n == 0)
            snprintf(name, len, "%s", base);
        else
            snprintf(name, len, "%s-%d", base, n);
        if (mkdirat(pd_fd, name, SP_DIR_MODE) == 0)
            return 0;
        if (errno != EEXIST)
            return -errno;
    }
    return -EEXIST;
}

/* Refuses the session: one message naming what and what to do. */
static int refuse(const char *what, const char *path, const char *why)
{
    sp_log(SP_LOG_ERROR, "%s '%s' %s; refusing to use it: another user could make this "
           "process write where they choose. Use a prof_dir that only this user can write "
           "(chmod go-w, or chmod +t for a shared one) and remove files you did not make; "
           "collection stays off", what, path, why);
    return SERVPROF_EIO;
}

static void close_all_fds(void)
{
    close_fd(&members_fd);
    close_fd(&sess_fd);
    close_fd(&pd_fd);
}

int sp_session_open(sp_session *s, const sp_config *c, const char *cfg_path, uint64_t serial)
{
    close_all_fds(); /* a leftover membership: never two at once */
    memset(s, 0, sizeof *s);
    if (gethostname(s->hostname, sizeof s->hostname - 1) != 0 || !s->hostname[0])
        snprintf(s->hostname, sizeof s->hostname, "localhost");
    const char *pd = c->prof_dir;
    char why[200];
    int rc = sp_mkdirs(pd, SP_DIR_MODE);
    if (rc != 0) {
        sp_log(SP_LOG_ERROR, "cannot create prof_dir '%s': %s; collection stays off", pd,
               strerror(-rc));
        return SERVPROF_EIO;
    }
    /* prof_dir itself may be reached through a symlink (the config names
     * it); what is opened is checked. Everything else is relative to it. */
    pd_fd = sp_dir_open_trusted(AT_FDCWD, pd, 0, why, sizeof why);
    if (pd_fd < 0) {
        int e = pd_fd;
        pd_fd = -1;
        if (e == -EPERM)
            return refuse("prof_dir", pd, why);
        sp_log(SP_LOG_ERROR, "prof_dir '%s' %s; collection stays off", pd, why);
        return SERVPROF_EIO;
    }
    char cfg_abs[SP_PATH_MAX];
    const char *cfg = "(none)";
    if (cfg_path && *cfg_path)
        cfg = realpath(cfg_path, cfg_abs) ? cfg_abs : cfg_path;
    uint64_t h = fnv1a(fnv1a(14695981039346656037ull, s->hostname), "\n");
    h = fnv1a(h, cfg);
    snprintf(state_name, sizeof state_name, ".servprof-session-%016llx", (unsigned long long)h);

    int lfd = sp_file_open_at(pd_fd, ".servprof.lock", O_RDWR | O_CREAT, SP_FILE_MODE, why,
                              sizeof why);
    if (lfd < 0 && (lfd == -ELOOP || lfd == -EPERM || lfd == -EINVAL)) {
        char p[SP_PATH_MAX + 32];
        snprintf(p, sizeof p, "%s/.servprof.lock", pd);
        close_all_fds();
        return refuse("lock file", p, why);
    }
    if (lfd < 0 || lock_fd(lfd, F_WRLCK) != 0) {
        sp_log(SP_LOG_ERROR, "cannot lock '%s/.servprof.lock': %s; collection stays off", pd,
               lfd < 0 ? why : strerror(errno));
        if (lfd >= 0)
            close(lfd);
        close_all_fds();
        return SERVPROF_EIO;
    }
    state st;
    char name[256];
    int joined = 0;
    int src = read_state(&st, why, sizeof why);
    if (src == -ELOOP || src == -EPERM || src == -EINVAL) {
        char p[SP_PATH_MAX + 96];
        snprintf(p, sizeof p, "%s/%s", pd, state_name);
        close(lfd);
        close_all_fds();
        return refuse("session state file", p, why);
    }
    rc = 0;
    if (src == 0 && st.open) {
        /* Join only a folder that passes the trust rule, found through no
         * symlink; one that does not is refused, not replaced, since a
         * process of ours may be collecting there. */
        int dfd = sp_dir_open_trusted(pd_fd, st.dir, 1, why, sizeof why);
        if (dfd == -EPERM || dfd == -ELOOP) {
            char p[SP_PATH_MAX + 300];
            snprintf(p, sizeof p, "%s/%s", pd, st.dir);
            close(lfd);
            close_all_fds();
            return refuse("session folder", p, why);
        }
        if (dfd >= 0 && session_live(dfd)) {
            snprintf(name, sizeof name, "%s", st.dir);
            sess_fd = dfd;
            joined = 1;
        } else if (dfd >= 0) {
            close(dfd);
        }
    }
    if (!joined) {
        rc = make_folder(name, sizeof name);
        if (rc == 0) {
            sess_fd = sp_dir_open_trusted(pd_fd, name, 1, why, sizeof why);
            if (sess_fd < 0) {
                rc = sess_fd;
                sess_fd = -1;
            }
        }
        if (rc == 0) {
            int wrc = write_state(name, 1, s->hostname, cfg);
            if (wrc != 0)
                sp_log(SP_LOG_WARNING, "cannot write '%s/%s': %s; other processes will not join "
                       "session %s", pd, state_name, strerror(-wrc), name);
        }
    }
    const char *step = "create";
    if (rc == 0) {
        int tfd = sp_mkdir_open_at(sess_fd, "Trace_Service", SP_DIR_MODE, why, sizeof why);
        if (tfd == -EPERM || tfd == -ELOOP) {
            char p[SP_PATH_MAX + 300];
            snprintf(p, sizeof p, "%s/%s/Trace_Service", pd, name);
            close(lfd);
            close_all_fds();
            return refuse("session folder", p, why);
        }
        rc = tfd < 0 ? tfd : 0;
        if (tfd >= 0)
            close(tfd);
    }
    if (rc == 0) {
        step = "join";
        members_fd = sp_file_open_at(sess_fd, ".servprof-members", O_RDWR | O_CREAT, SP_FILE_MODE,
                                     why, sizeof why);
        if (members_fd == -EPERM || members_fd == -ELOOP || members_fd == -EINVAL) {
            char p[SP_PATH_MAX + 300];
            snprintf(p, sizeof p, "%s/%s/.servprof-members", pd, name);
            members_fd = -1;
            close(lfd);
            close_all_fds();
            return refuse("members file", p, why);
        }
        rc = members_fd < 0 ? members_fd : lock_fd(members_fd, F_RDLCK);
    }
    close(lfd);
    if (rc != 0) {
        sp_log(SP_LOG_ERROR, "cannot %s a session folder in '%s': %s; collection stays off",
               step, pd, strerror(-rc));
        close_all_fds();
        return SERVPROF_EIO;
    }
    int n = snprintf(s->dir, sizeof s->dir, "%s/%s", pd, name);
    int n1 = snprintf(s->store_path, sizeof s->store_path, "%s/Trace_Service/ms_service_%s-%d.db",
                      s->dir, s->hostname, (int)getpid());
    int n2 = snprintf(s->activity_path, sizeof s->activity_path,
                      "%s/Trace_Service/ascend_service_profiler_%s-%d.db", s->dir, s->hostname,
                      (int)getpid());
    if (n < 0 || n1 < 0 || n2 < 0 || (size_t)n1 >= sizeof s->store_path ||
        (size_t)n2 >= sizeof s->activity_path) {
        sp_log(SP_LOG_ERROR, "prof_dir '%s' is too long; collection stays off", pd);
        close_all_fds();
        return SERVPROF_EINVAL;
    }
    s->start_ns = sp_now_realtime_ns();
    s->serial = serial;
    snprintf(ack_cfg, sizeof ack_cfg, "%s", cfg);
    write_ack(s->dir, "start", ack_cfg);
    sp_log(SP_LOG_DEBUG, "%s session folder %s", joined ? "joined" : "created", s->dir);
    return 0;
}

void sp_session_leave(const sp_session *s, int close_generation)
{
    if (members_fd >= 0) {
        close_fd(&members_fd);
        write_ack(s->dir, "stop", ack_cfg);
    }
    close_fd(&sess_fd);
    if (!close_generation || pd_fd < 0) {
        close_fd(&pd_fd);
        return;
    }
    char why[200];
    int lfd = sp_file_open_at(pd_fd, ".servprof.lock", O_RDWR | O_CREAT, SP_FILE_MODE, why,
                              sizeof why);
    if (lfd < 0) {
        close_fd(&pd_fd);
        return;
    }
    state st;
    if (lock_fd(lfd, F_WRLCK) == 0 && read_state(&st, why, sizeof why) == 0 && st.open &&
        !strcmp(st.dir, sp_path_basename(s->dir)))
        (void)write_state(st.dir, 0, s->hostname, st.cfg);
    close(lfd);
    close_fd(&pd_fd);
}

void sp_session_atfork_child(void)
{
    /* The child holds no fcntl lock; closing its copies touches no parent
     * lock (the lock file and the members file are not among them). */
    close_all_fds();
}
