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

/* Owned by the runtime mutex (sessions open and close under it). */
static int members_fd = -1;
static char state_path[SP_PATH_MAX + 64];
static char ack_cfg[SP_PATH_MAX];   /* the config path of the open session */

/* Appends "event pid ns config" to <dir>/.servprof-acks. Best effort: a
 * failure only means `servprof enable` cannot confirm; it is logged. */
static void write_ack(const char *dir, const char *event, const char *cfg)
{
    char path[SP_PATH_MAX + 32], line[SP_PATH_MAX + 96];
    snprintf(path, sizeof path, "%s/.servprof-acks", dir);
    int n = snprintf(line, sizeof line, "%s %d %lld %s\n", event, (int)getpid(),
                     (long long)sp_now_realtime_ns(), cfg);
    if (n < 0 || (size_t)n >= sizeof line)
        return;
    int fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, SP_FILE_MODE);
    ssize_t w = fd >= 0 ? write(fd, line, (size_t)n) : -1;
    if (w != n)
        sp_log(SP_LOG_DEBUG, "cannot append to %s: %s; servprof enable/disable will not see "
               "this %s", path, strerror(errno), event);
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
} state;

static int read_state(const char *path, state *st)
{
    char *text;
    size_t len;
    memset(st, 0, sizeof *st);
    if (sp_read_file(path, 65536, &text, &len) != 0)
        return -1;
    char *save = NULL;
    for (char *line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        if (!strncmp(line, "dir ", 4))
            snprintf(st->dir, sizeof st->dir, "%s", line + 4);
        else if (!strncmp(line, "open ", 5))
            st->open = atoi(line + 5);
    }
    free(text);
    /* A name with a slash or dot-dot could escape prof_dir: ignore it. */
    if (!st->dir[0] || strchr(st->dir, '/') || !strcmp(st->dir, ".."))
        return -1;
    return 0;
}

static int write_state(const char *path, const char *dir, int open, const char *host,
                       const char *cfg)
{
    char text[SP_PATH_MAX + 512];
    int n = snprintf(text, sizeof text, "dir %s\nopen %d\nhost %s\nconfig %s\n", dir, open, host,
                     cfg);
    if (n < 0 || (size_t)n >= sizeof text)
        return -ENAMETOOLONG;
    return sp_write_replace(path, text, (size_t)n, SP_FILE_MODE, 0); /* no fsync: see fsutil.h */
}

static int open_lock(const char *path)
{
    int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, SP_FILE_MODE);
    if (fd < 0)
        return -errno;
    struct stat st;
    if (fstat(fd, &st) == 0 && st.st_uid == geteuid() && (st.st_mode & 07777) != SP_FILE_MODE)
        (void)fchmod(fd, SP_FILE_MODE);
    return fd;
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

/* Nonzero when some process holds the members lock of prof_dir/name. */
static int session_live(const char *prof_dir, const char *name)
{
    char path[SP_PATH_MAX + 300];
    snprintf(path, sizeof path, "%s/%s/.servprof-members", prof_dir, name);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return 0;
    struct flock fl = {.l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = 0, .l_len = 0};
    int live = fcntl(fd, F_GETLK, &fl) == 0 && fl.l_type != F_UNLCK;
    close(fd);
    return live;
}

/* Makes a new folder <MMDD-HHMM>[-N] in prof_dir; name receives it. */
static int make_folder(const char *prof_dir, char *name, size_t len)
{
    time_t now = time(NULL);
    struct tm tm;
    localtime_r(&now, &tm);
    char base[32];
    strftime(base, sizeof base, "%m%d-%H%M", &tm);
    for (int n = 0; n < 10000; n++) {
        char path[SP_PATH_MAX + 300];
        if (n == 0)
            snprintf(name, len, "%s", base);
        else
            snprintf(name, len, "%s-%d", base, n);
        snprintf(path, sizeof path, "%s/%s", prof_dir, name);
        if (mkdir(path, SP_DIR_MODE) == 0) {
            (void)chmod(path, SP_DIR_MODE);
            return 0;
        }
        if (errno != EEXIST)
            return -errno;
    }
    return -EEXIST;
}

int sp_session_open(sp_session *s, const sp_config *c, const char *cfg_path, uint64_t serial)
{
    if (members_fd >= 0) {
        close(members_fd); /* a leftover membership: never two at once */
        members_fd = -1;
    }
    memset(s, 0, sizeof *s);
    if (gethostname(s->hostname, sizeof s->hostname - 1) != 0 || !s->hostname[0])
        snprintf(s->hostname, sizeof s->hostname, "localhost");
    const char *pd = c->prof_dir;
    int rc = sp_mkdirs(pd, SP_DIR_MODE);
    if (rc != 0) {
        sp_log(SP_LOG_ERROR, "cannot create prof_dir '%s': %s; collection stays off", pd,
               strerror(-rc));
        return SERVPROF_EIO;
    }
    char cfg_abs[SP_PATH_MAX];
    const char *cfg = "(none)";
    if (cfg_path && *cfg_path)
        cfg = realpath(cfg_path, cfg_abs) ? cfg_abs : cfg_path;
    uint64_t h = fnv1a(fnv1a(14695981039346656037ull, s->hostname), "\n");
    h = fnv1a(h, cfg);
    char lock_path[SP_PATH_MAX + 64];
    snprintf(lock_path, sizeof lock_path, "%s/.servprof.lock", pd);
    snprintf(state_path, sizeof state_path, "%s/.servprof-session-%016llx", pd,
             (unsigned long long)h);

    int lfd = open_lock(lock_path);
    if (lfd < 0 || lock_fd(lfd, F_WRLCK) != 0) {
        sp_log(SP_LOG_ERROR, "cannot lock '%s': %s; collection stays off", lock_path,
               strerror(lfd < 0 ? -lfd : errno));
        if (lfd >= 0)
            close(lfd);
        return SERVPROF_EIO;
    }
    state st;
    char name[256];
    int joined = 0;
    char path[SP_PATH_MAX + 300];
    if (read_state(state_path, &st) == 0 && st.open && session_live(pd, st.dir)) {
        snprintf(name, sizeof name, "%s", st.dir);
        joined = 1;
    } else {
        rc = make_folder(pd, name, sizeof name);
        if (rc == 0) {
            int wrc = write_state(state_path, name, 1, s->hostname, cfg);
            if (wrc != 0)
                sp_log(SP_LOG_WARNING, "cannot write '%s': %s; other processes will not join "
                       "session %s", state_path, strerror(-wrc), name);
        }
    }
    if (rc == 0) {
        snprintf(path, sizeof path, "%s/%s/Trace_Service", pd, name);
        rc = sp_mkdirs(path, SP_DIR_MODE);
    }
    if (rc == 0) {
        snprintf(path, sizeof path, "%s/%s/.servprof-members", pd, name);
        members_fd = open_lock(path);
        rc = members_fd < 0 ? members_fd : lock_fd(members_fd, F_RDLCK);
    }
    close(lfd);
    if (rc != 0) {
        sp_log(SP_LOG_ERROR, "cannot create a session folder in '%s': %s; collection stays off",
               pd, strerror(-rc));
        if (members_fd >= 0)
            close(members_fd);
        members_fd = -1;
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
        close(members_fd);
        members_fd = -1;
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
        close(members_fd);
        members_fd = -1;
        write_ack(s->dir, "stop", ack_cfg);
    }
    if (!close_generation || !state_path[0])
        return;
    char pd[SP_PATH_MAX];
    sp_path_dirname(s->dir, pd, sizeof pd);
    char lock_path[SP_PATH_MAX + 64];
    snprintf(lock_path, sizeof lock_path, "%s/.servprof.lock", pd);
    int lfd = open_lock(lock_path);
    if (lfd < 0)
        return;
    state st;
    if (lock_fd(lfd, F_WRLCK) == 0 && read_state(state_path, &st) == 0 && st.open &&
        !strcmp(st.dir, sp_path_basename(s->dir))) {
        const char *host = s->hostname;
        char *text;
        size_t len;
        char cfg[SP_PATH_MAX] = "(none)";
        if (sp_read_file(state_path, 65536, &text, &len) == 0) {
            char *p = strstr(text, "\nconfig ");
            if (p) {
                p += 8;
                char *e = strchr(p, '\n');
                if (e)
                    *e = '\0';
                snprintf(cfg, sizeof cfg, "%s", p);
            }
            free(text);
        }
        (void)write_state(state_path, st.dir, 0, host, cfg);
    }
    close(lfd);
}

void sp_session_atfork_child(void)
{
    /* The child holds no fcntl lock; closing its copy touches no parent lock. */
    if (members_fd >= 0)
        close(members_fd);
    members_fd = -1;
}
