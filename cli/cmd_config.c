/*
 * cmd_config.c — `servprof config init FILE` and `servprof config check FILE`.
 *
 * init writes a config with every key at its default (collection off),
 * atomically and 0640; it refuses to overwrite an existing file unless
 * --force is given.
 * check validates FILE exactly as the library would and prints each problem
 * as "FILE: <message>" on its own line on stdout. Exit status: 0 when the
 * file is clean, 1 when there is any warning or error (so CI and scripts
 * can gate on it; the library itself would still run with a file that only
 * has warnings, using the values the messages name), 2 for usage errors.
 */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "commands.h"
#include "fsutil.h"
#include "internal.h"
#include "runtime.h"

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
    if (d.nerrors || d.nwarnings) {
        fprintf(stderr, "%s: %d error(s), %d warning(s)\n", path, d.nerrors, d.nwarnings);
        return 1;
    }
    printf("%s: OK (enable %d, prof_dir %s, profiler_level %s)\n", path, c.enable, c.prof_dir,
           sp_config_level_name(c.profiler_level));
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
    if (argc >= 3 && !strcmp(argv[1], "check") && argc == 3)
        return config_check(argv[2]);
    if (argc >= 3 && !strcmp(argv[1], "init")) {
        int force = 0;
        const char *path = NULL;
        for (int i = 2; i < argc; i++) {
            if (!strcmp(argv[i], "--force"))
                force = 1;
            else if (!path)
                path = argv[i];
            else
                path = NULL, i = argc; /* two paths: usage error */
        }
        if (path)
            return config_init(path, force);
    }
    fprintf(stderr, "usage: servprof config init [--force] FILE\n"
                    "       servprof config check FILE\n");
    return 2;
}
