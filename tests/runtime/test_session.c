/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_session.c — the session folder protocol (lib/core/session.c) on a real
 * prof_dir:
 *
 *  - a start makes <MMDD-HHMM>[-N]/Trace_Service (0750), names the store
 *    and activity files after host and pid, writes the state file (dir,
 *    open, host, config) and a "start" line in .servprof-acks; a leave
 *    adds a "stop" line, and closes the state only when asked;
 *  - a process that starts while another holds the session (a fork child)
 *    joins its folder; with nobody left, the next start makes a new one;
 *  - a state naming a folder outside prof_dir ("../x") is ignored;
 *  - failures: prof_dir blocked by a file (SERVPROF_EIO), a state file that
 *    cannot be written (the session still opens: logged), a prof_dir too
 *    long for the store's path (SERVPROF_EINVAL); each leaves no
 *    membership behind.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
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

static char tmp[] = "/tmp/sp_test_session_XXXXXX";
static char prof[256], cfg[256], cfg_abs[4096];
static sp_config conf;

/* The one state file of prof_dir (.servprof-session-<hash>), or "". */
static void state_file(const char *pd, char *out, size_t len)
{
    out[0] = 0;
    DIR *d = opendir(pd);
    struct dirent *e;
    while (d && (e = readdir(d)))
        if (!strncmp(e->d_name, ".servprof-session-", 18))
            snprintf(out, len, "%s/%s", pd, e->d_name);
    if (d)
        closedir(d);
}

static char *slurp_at(const char *dir, const char *name)
{
    char path[4400];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    return check_slurp(path);
}

/* Nonzero when the folder's name is MMDD-HHMM or MMDD-HHMM-N. */
static int dated_name(const char *name)
{
    if (strlen(name) < 9)
        return 0;
    for (int i = 0; i < 9; i++)
        if (i == 4 ? name[i] != '-' : (name[i] < '0' || name[i] > '9'))
            return 0;
    return name[9] == 0 || (name[9] == '-' && name[10] >= '1' && name[10] <= '9');
}

static void check_first_session(sp_session *s)
{
    CHECK_INT(sp_session_open(s, &conf, cfg, 1), 0);
    char parent[4096];
    sp_path_dirname(s->dir, parent, sizeof parent);
    CHECK_STR(parent, prof);
    CHECK(dated_name(sp_path_basename(s->dir)));
    CHECK_INT(s->serial, 1);
    CHECK(s->start_ns > 0);
    char want[8192];
    snprintf(want, sizeof want, "%s/Trace_Service/ms_service_%s-%d.db", s->dir, s->hostname,
             (int)getpid());
    CHECK_STR(s->store_path, want);
    snprintf(want, sizeof want, "%s/Trace_Service/ascend_service_profiler_%s-%d.db", s->dir,
             s->hostname, (int)getpid());
    CHECK_STR(s->activity_path, want);
    struct stat st;
    snprintf(want, sizeof want, "%s/Trace_Service", s->dir);
    CHECK(stat(want, &st) == 0 && S_ISDIR(st.st_mode) && (st.st_mode & 0777) == 0750);

    char sp[4400];
    state_file(prof, sp, sizeof sp);
    char *state = check_slurp(sp);
    snprintf(want, sizeof want, "dir %s\nopen 1\nhost %s\nconfig %s\n", sp_path_basename(s->dir),
             s->hostname, cfg_abs);
    CHECK_STR(state, want);
    free(state);

    char *acks = slurp_at(s->dir, ".servprof-acks");
    char head[64];
    snprintf(head, sizeof head, "start %d ", (int)getpid());
    CHECK(acks && !strncmp(acks, head, strlen(head)));
    CHECK(acks && strstr(acks, cfg_abs) && acks[strlen(acks) - 1] == '\n');
    CHECK(acks && !strchr(acks, '\n')[1]); /* one line */
    free(acks);

    sp_session_leave(s, 0);
    acks = slurp_at(s->dir, ".servprof-acks");
    snprintf(head, sizeof head, "\nstop %d ", (int)getpid());
    CHECK(acks && strstr(acks, head));
    free(acks);
    state = check_slurp(sp);
    CHECK(state && strstr(state, "\nopen 1\n")); /* not closed: close_generation 0 */
    free(state);
}

/* A child holds a session; we join it; once it is gone a start is new. */
static void check_join(void)
{
    int to_parent[2], to_child[2];
    CHECK_INT(pipe(to_parent), 0);
    CHECK_INT(pipe(to_child), 0);
    pid_t child = fork();
    if (child == 0) {
        sp_session cs;
        char dir[4096] = "";
        if (sp_session_open(&cs, &conf, cfg, 1) == 0)
            snprintf(dir, sizeof dir, "%s", cs.dir);
        (void)!write(to_parent[1], dir, sizeof dir);
        char go;
        (void)!read(to_child[0], &go, 1); /* hold the session until told */
        sp_session_leave(&cs, 0);
        _exit(0);
    }
    char child_dir[4096] = "";
    CHECK_INT(read(to_parent[0], child_dir, sizeof child_dir), (long)sizeof child_dir);
    CHECK(child_dir[0] != 0);
    sp_session s;
    CHECK_INT(sp_session_open(&s, &conf, cfg, 2), 0);
    CHECK_STR(s.dir, child_dir); /* joined */
    sp_session_leave(&s, 0);
    CHECK_INT(write(to_child[1], "g", 1), 1);
    int status = 0;
    CHECK(waitpid(child, &status, 0) == child && WIFEXITED(status) && WEXITSTATUS(status) == 0);
    for (int i = 0; i < 2; i++) {
        close(to_parent[i]);
        close(to_child[i]);
    }
    /* Nobody holds it now: a new folder. */
    CHECK_INT(sp_session_open(&s, &conf, cfg, 3), 0);
    CHECK(strcmp(s.dir, child_dir) != 0);
    CHECK(dated_name(sp_path_basename(s.dir)));
    /* Turned off through the file: the state is closed, the rest kept. */
    sp_session_leave(&s, 1);
    char sp[4400], want[8192];
    state_file(prof, sp, sizeof sp);
    char *state = check_slurp(sp);
    snprintf(want, sizeof want, "dir %s\nopen 0\nhost %s\nconfig %s\n", sp_path_basename(s.dir),
             s.hostname, cfg_abs);
    CHECK_STR(state, want);
    free(state);
}

/* A state that names a folder outside prof_dir is not followed. */
static void check_bad_state(void)
{
    char sp[4400];
    state_file(prof, sp, sizeof sp);
    const char *evil = "dir ..\nopen 1\n";
    CHECK_INT(sp_write_atomic(sp, evil, strlen(evil), 0640), 0);
    sp_session s;
    CHECK_INT(sp_session_open(&s, &conf, cfg, 4), 0);
    char parent[4096];
    sp_path_dirname(s.dir, parent, sizeof parent);
    CHECK_STR(parent, prof);
    CHECK(dated_name(sp_path_basename(s.dir)));
    sp_session_leave(&s, 0);
}

static void check_open_failures(void)
{
    sp_config c = conf;
    sp_session s;
    /* prof_dir under a file. */
    char file[300];
    snprintf(file, sizeof file, "%s/plainfile", tmp);
    CHECK_INT(sp_write_atomic(file, "x", 1, 0640), 0);
    snprintf(c.prof_dir, sizeof c.prof_dir, "%s/sub", file);
    CHECK_INT(sp_session_open(&s, &c, cfg, 5), SERVPROF_EIO);

    /* The state file cannot be written (a folder in its place): the
     * session opens all the same, alone. */
    snprintf(c.prof_dir, sizeof c.prof_dir, "%s/stateless", tmp);
    CHECK_INT(sp_session_open(&s, &c, NULL, 6), 0);
    sp_session_leave(&s, 0);
    char sp[4400];
    state_file(c.prof_dir, sp, sizeof sp);
    CHECK(sp[0] != 0);
    CHECK_INT(unlink(sp), 0);
    CHECK_INT(mkdir(sp, 0750), 0);
    CHECK_INT(sp_session_open(&s, &c, NULL, 7), 0);
    CHECK(dated_name(sp_path_basename(s.dir)));
    char *acks = slurp_at(s.dir, ".servprof-acks");
    CHECK(acks && strstr(acks, " (none)\n")); /* no config file */
    free(acks);
    sp_session_leave(&s, 1); /* the state cannot be read: left as it is */
    struct stat st;
    CHECK(stat(sp, &st) == 0 && S_ISDIR(st.st_mode));

    /* A prof_dir so long that the store's path does not fit. */
    char deep[SP_PATH_MAX];
    int n = snprintf(deep, sizeof deep, "%s", tmp);
    while (n < 4060 - 101)
        n += snprintf(deep + n, sizeof deep - (size_t)n, "/%0100d", 0);
    while (n < 4060)
        n += snprintf(deep + n, sizeof deep - (size_t)n, "/d");
    snprintf(c.prof_dir, sizeof c.prof_dir, "%s", deep);
    CHECK_INT(sp_session_open(&s, &c, NULL, 8), SERVPROF_EINVAL);

    /* None of these left a membership: a fresh start still works. */
    CHECK_INT(sp_session_open(&s, &conf, cfg, 9), 0);
    sp_session_leave(&s, 0);
}

int main(void)
{
    if (!mkdtemp(tmp))
        return 2;
    snprintf(prof, sizeof prof, "%s/prof", tmp);
    snprintf(cfg, sizeof cfg, "%s/config.json", tmp);
    CHECK_INT(sp_write_atomic(cfg, "{}", 2, 0640), 0);
    CHECK(realpath(cfg, cfg_abs) != NULL);
    sp_config_defaults(&conf);
    snprintf(conf.prof_dir, sizeof conf.prof_dir, "%s", prof);

    sp_session s;
    check_first_session(&s);
    check_join();
    check_bad_state();
    check_open_failures();

    check_remove_tree(tmp);
    CHECK_DONE();
}
