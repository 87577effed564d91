/* SPDX-License-Identifier: Apache-2.0 */
/*
 * cmd_config.c — `servprof config init FILE` and `servprof config check FILE`.
 *
 * init writes a config with every key at its default (collection off),
 * atomically and 0640; it refuses to overwrite an existing file unless
 * --force is given.
 * check validates FILE with the library's own reader (sp_config_load: the
 * same parser and jansson flags as every running process and as `servprof
 * enable`) and prints each problem as "FILE: <message>" on its own line on
 * stdout. Exit status: 0 when the file is clean, 1 when there is any
 * warning or error (so CI and scripts can gate on it; the library itself
 * would still run with a file that only has warnings, using the values the
 * messages name), 2 for usage errors.
 */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "commands.h"
#include "config.h"
#include "fsutil.h"
#include "opts.h"

enum { OPT_FORCE = 1 };

static const cli_opt config_opts[] = {
    {OPT_FORCE, "force", 'f', CLI_FLAG, NULL, NULL, "init: replace an existing FILE"},
    {0},
};

static const cli_verb config_verb = {
    "config", "init [--force] FILE | check FILE",
    "init   writes FILE with every key at its default (collection off).\n"
    "check  validates FILE exactly as the library reads it; prints one line per problem.\n"
    "       Exit 0 when clean, 1 with any warning or error.",
    config_opts};

static void print_problem(void *ctx, int is_error, const char *msg)
{
    printf("%s: %s%s\n", (const char *)ctx, is_error ? "error: " : "", msg);
}

static int config_check(const char *path)
{
    sp_config c;
    sp_config_diag d = {0, 0, print_problem, (void *)path};
    int rc = sp_config_load(path, &c, &d);
    if (rc == SERVPROF_ENOTFOUND) {
        printf("%s: error: the file does not exist\n", path);
        return 1;
    }
    if (d.nerrors) {
        fprintf(stderr, "%s: %d error(s), %d warning(s); a process would not use this file "
                "(it keeps the settings it has)\n", path, d.nerrors, d.nwarnings);
        return 1;
    }
    if (d.nwarnings) {
        fprintf(stderr, "%s: %d warning(s); a process would use the values the messages name\n",
                path, d.nwarnings);
        return 1;
    }
    printf("%s: OK (enable %d, prof_dir %s, profiler_level %s)\n", path, c.enable, c.prof_dir,
           sp_config_level_name(c.profiler_level));
    if (c.metric_listen[0])
        printf("%s: metric_port serves http://%s/metrics: %s, at most %d connections\n", path,
               c.metric_listen, sp_config_listen_scope(&c), c.metric_max_conns);
    return 0;
}

static int config_init(const char *path, int force)
{
    if (!force && access(path, F_OK) == 0) {
        fprintf(stderr, "servprof config init: %s already exists; use --force to replace it\n",
                path);
        return 1;
    }
    char text[SP_PATH_MAX + 2048];
    int n = sp_config_default_text(text, sizeof text, 1);
    if (n < 0) {
        fprintf(stderr, "servprof config init: the default prof_dir is too long\n");
        return 1;
    }
    int rc = sp_write_atomic(path, text, (size_t)n, SP_FILE_MODE);
    if (rc != 0) {
        fprintf(stderr, "servprof config init: cannot write %s: %s\n", path, strerror(-rc));
        return 1;
    }
    printf("%s: written with every key at its default (collection off)\n", path);
    return 0;
}

int cmd_config(int argc, char **argv)
{
    cli_parser p;
    cli_init(&p, &config_verb, argc, argv);
    const char *action = NULL, *path = NULL;
    int force = 0;
    for (int id; (id = cli_next(&p)) != CLI_END;) {
        if (id == CLI_STOP)
            return p.status;
        if (id == OPT_FORCE) {
            force = 1;
        } else if (!action) {
            action = p.value;
            if (strcmp(action, "init") != 0 && strcmp(action, "check") != 0)
                return cli_error(&config_verb, "'%s' is not one of: init, check", action);
        } else if (!path) {
            path = p.value;
        } else {
            return cli_error(&config_verb, "one FILE only (got '%s' and '%s')", path, p.value);
        }
    }
    if (!action)
        return cli_error(&config_verb, "what to do is missing: init FILE or check FILE");
    if (!path)
        return cli_error(&config_verb, "%s needs FILE", action);
    if (!strcmp(action, "check")) {
        if (force)
            return cli_error(&config_verb, "--force is for init, not check");
        return config_check(path);
    }
    return config_init(path, force);
}
