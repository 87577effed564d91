/* SPDX-License-Identifier: Apache-2.0 */
/*
 * cmd_enable.c — `servprof enable FILE` and `servprof disable FILE`: set
 * the top-level "enable" to 1 or 0, keeping every other byte of the file,
 * then say which running processes picked the change up.
 *
 * Design: the file is read and checked by the library's own code
 * (sp_config_set_enable_diag: the parser and jansson flags every process
 * uses), so a file a process would reject — a duplicate key, a byte-order
 * mark, a syntax error — is refused here and left unchanged (exit 1); its
 * warnings are printed and the edit goes on, as a process would go on.
 *
 * Confirmation: each process that starts or stops collecting appends a line
 * "start|stop PID NS CONFIG" to <session>/.servprof-acks (lib/core/session.c).
 * After writing, we look for lines newer than the edit naming this config
 * file, under the prof_dir the file names, every 50 ms for up to --wait
 * seconds (default 2); once one process has answered we wait only until
 * 300 ms pass with no new answer. Then we print the session folder and the
 * pids, or say plainly that no process picked the change up (not an error:
 * the server may start later; exit 0 either way).
 *
 * Exit status: 0 done (or already so), 1 the file was refused or could not
 * be written, 2 usage.
 */
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "commands.h"
#include "config.h"
#include "fsutil.h"
#include "opts.h"

#define MAX_ACKS 64

enum { OPT_NO_WAIT = 1, OPT_WAIT };

static const cli_opt opts[] = {
    {OPT_NO_WAIT, "no-wait", 0, CLI_FLAG, NULL, NULL,
     "do not wait for the running processes to confirm"},
    {OPT_WAIT, "wait", 'w', CLI_VALUE, "SECONDS", NULL,
     "how long to wait for them (0..60, default 2)"},
    {0},
};

static const cli_verb enable_verb = {
    "enable", "[options] FILE",
    "Sets \"enable\": 1 in the config file FILE (the rest of the file is kept), after\n"
    "checking the whole file as the library does: a file every process would reject\n"
    "is left unchanged (exit 1). Then waits for the processes watching FILE to start\n"
    "collecting and prints their session folder and pids.",
    opts};

static const cli_verb disable_verb = {
    "disable", "[options] FILE",
    "Sets \"enable\": 0 in the config file FILE (the rest of the file is kept), after\n"
    "checking the whole file as the library does: a file every process would reject\n"
    "is left unchanged (exit 1). Then waits for the processes watching FILE to stop\n"
    "(each drains its records first) and prints their session folder and pids.",
    opts};

typedef struct ack {
    int pid;
    char session[256]; /* the folder's name under prof_dir */
} ack;

typedef struct acks {
    ack a[MAX_ACKS];
    int n;
} acks;

static void print_diag(void *ctx, int is_error, const char *msg)
{
    const char *const *names = ctx; /* {verb, file} */
    fprintf(stderr, "servprof %s: %s: %s%s\n", names[0], names[1], is_error ? "error: " : "warning: ",
            msg);
}

static void quiet_diag(void *ctx, int is_error, const char *msg)
{
    (void)ctx, (void)is_error, (void)msg;
}

static void add_ack(acks *out, int pid, const char *session)
{
    for (int i = 0; i < out->n; i++)
        if (out->a[i].pid == pid && !strcmp(out->a[i].session, session))
            return;
    if (out->n < MAX_ACKS) {
        out->a[out->n].pid = pid;
        snprintf(out->a[out->n].session, sizeof out->a[out->n].session, "%s", session);
        out->n++;
    }
}

/* Reads one session's ack lines: `event` lines at or after since_ns for cfg. */
static void read_acks(const char *prof_dir, const char *session, const char *event,
                      int64_t since_ns, const char *cfg, acks *out)
{
    char path[SP_PATH_MAX + 300];
    snprintf(path, sizeof path, "%s/%s/.servprof-acks", prof_dir, session);
    char *text;
    size_t len;
    if (sp_read_file(path, 1u << 20, &text, &len) != 0)
        return;
    char *save = NULL;
    for (char *line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        char ev[8];
        int pid, used = 0;
        long long ns;
        if (sscanf(line, "%7s %d %lld %n", ev, &pid, &ns, &used) != 3 || !used)
            continue;
        if (!strcmp(ev, event) && ns >= since_ns && !strcmp(line + used, cfg))
            add_ack(out, pid, session);
    }
    free(text);
}

/* Every session folder under prof_dir whose ack file changed since since_ns. */
static void scan_acks(const char *prof_dir, const char *event, int64_t since_ns, const char *cfg,
                      acks *out)
{
    DIR *d = opendir(prof_dir);
    if (!d)
        return;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.')
            continue;
        char path[SP_PATH_MAX + 300];
        struct stat st;
        snprintf(path, sizeof path, "%s/%s/.servprof-acks", prof_dir, e->d_name);
        if (stat(path, &st) != 0)
            continue;
        int64_t mtime = (int64_t)st.st_mtim.tv_sec * 1000000000 + st.st_mtim.tv_nsec;
        if (mtime + 1000000000 >= since_ns) /* a second of slack for coarse clocks */
            read_acks(prof_dir, e->d_name, event, since_ns, cfg, out);
    }
    closedir(d);
}

static int64_t mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* Polls for acknowledgements: bounded by wait_s, and by 300 ms of quiet
 * once someone answered. */
static void wait_acks(const char *prof_dir, const char *event, int64_t since_ns, const char *cfg,
                      double wait_s, acks *out)
{
    int64_t start = mono_ns(), deadline = start + (int64_t)(wait_s * 1e9), last_new = 0;
    for (int round = 0; round < 100000; round++) {
        int before = out->n;
        scan_acks(prof_dir, event, since_ns, cfg, out);
        int64_t now = mono_ns();
        if (out->n > before)
            last_new = now;
        if (now >= deadline || (last_new && now - last_new >= 300000000))
            return;
        struct timespec ts = {0, 50000000};
        nanosleep(&ts, NULL);
    }
}

static void report(const char *file, const char *prof_dir, const acks *got, int value,
                   double wait_s)
{
    if (got->n == 0) {
        printf("no process picked the change up within %g s (none watches %s with "
               "SERVICE_PROF_CONFIG_PATH, or none could %s)\n", wait_s, file,
               value ? "start: see its log" : "stop");
        return;
    }
    /* One line per session folder, with its pids. */
    for (int i = 0; i < got->n; i++) {
        int first = 1;
        for (int j = 0; j < i; j++)
            if (!strcmp(got->a[j].session, got->a[i].session))
                first = 0;
        if (!first)
            continue;
        printf("session %s/%s: %s in pid", prof_dir, got->a[i].session,
               value ? "started" : "stopped");
        for (int j = i; j < got->n; j++)
            if (!strcmp(got->a[j].session, got->a[i].session))
                printf(" %d", got->a[j].pid);
        printf("\n");
    }
}

static int set_enable(int argc, char **argv, int value)
{
    const cli_verb *verb = value ? &enable_verb : &disable_verb;
    cli_parser p;
    cli_init(&p, verb, argc, argv);
    const char *file = NULL;
    double wait_s = 2;
    for (int id; (id = cli_next(&p)) != CLI_END;) {
        if (id == CLI_STOP)
            return p.status;
        if (id == OPT_NO_WAIT)
            wait_s = 0;
        else if (id == OPT_WAIT && cli_number(&p, 0, 60, &wait_s) != 0)
            return 2;
        else if (id == CLI_ARG && file)
            return cli_error(verb, "one FILE only (got '%s' and '%s')", file, p.value);
        else if (id == CLI_ARG)
            file = p.value;
    }
    if (!file)
        return cli_error(verb, "FILE is required: the config file the processes watch "
                               "(SERVICE_PROF_CONFIG_PATH)");

    const char *names[2] = {verb->name, file};
    sp_config_diag d = {0, 0, print_diag, (void *)names};
    char err[768];
    int changed = 0;
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now); /* the clock the library stamps acks with */
    int64_t since = (int64_t)now.tv_sec * 1000000000 + now.tv_nsec;
    if (sp_config_set_enable_diag(file, value, &changed, &d, err, sizeof err) != 0) {
        fprintf(stderr, "servprof %s: %s: %s\n", verb->name, file, err);
        return 1;
    }
    printf("%s: \"enable\": %d%s\n", file, value, changed ? "" : " (already)");
    if (!changed || wait_s <= 0)
        return 0;

    sp_config_diag silent = {0, 0, quiet_diag, NULL}; /* its warnings were printed above */
    sp_config c;
    if (sp_config_load(file, &c, &silent) != 0)
        return 0;
    char cfg_abs[PATH_MAX];
    const char *cfg = realpath(file, cfg_abs) ? cfg_abs : file;
    acks got = {.n = 0};
    wait_acks(c.prof_dir, value ? "start" : "stop", since, cfg, wait_s, &got);
    report(file, c.prof_dir, &got, value, wait_s);
    return 0;
}

int cmd_enable(int argc, char **argv)
{
    return set_enable(argc, argv, 1);
}

int cmd_disable(int argc, char **argv)
{
    return set_enable(argc, argv, 0);
}
