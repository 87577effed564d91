/* SPDX-License-Identifier: Apache-2.0 */
/*
 * cmd_hooks.c — `servprof hooks check FILE...`: whether each entry of hook
 * files binds in a Python environment, and why not, without starting the
 * server.
 *
 * Design: hook files are Python's business (servprof.hooks reads them,
 * imports the modules they name and wraps functions), so this verb checks
 * its options like every verb (opts.h) and then execs
 * `PYTHON -m servprof hooks check ...` — the same table, the same exit
 * status (0 every entry binds, 1 some do not, 2 usage). PYTHON is --python,
 * else $SERVPROF_PYTHON, else python3 on PATH. So that the interpreter finds
 * the servprof package, the folder holding it goes first on PYTHONPATH when
 * it can be found: the site-packages folder of a wheel this tool came in
 * (servprof/bin/servprof), else the source tree's python/ folder the tool
 * was built from.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "commands.h"
#include "opts.h"

#ifndef SERVPROF_SOURCE_PYDIR
#define SERVPROF_SOURCE_PYDIR ""
#endif

enum { OPT_SET = 1, OPT_PYTHON };

static const cli_opt opts[] = {
    {OPT_SET, "set", 0, CLI_VALUE, "NAME", NULL, "a shipped hook set: vllm, sglang or auto"},
    {OPT_PYTHON, "python", 0, CLI_VALUE, "PY", NULL,
     "the interpreter of the server's environment (default $SERVPROF_PYTHON, else python3)"},
    {0},
};

static const cli_verb verb = {
    "hooks",
    "check [--set NAME]... [--python PY] [FILE...]",
    "Prints, for every entry of the hook files (docs/hooks.md), whether it binds in the\n"
    "environment of PY and why not: module not installed, attribute gone, version out of\n"
    "range, a parameter an expression names missing. It imports the modules the hooks name\n"
    "and starts nothing else. Exit status 0 when every entry binds, 1 when some do not.",
    opts};

static int is_dir(const char *p)
{
    struct stat st;
    return p[0] && stat(p, &st) == 0 && S_ISDIR(st.st_mode);
}

/* The folder holding the servprof package, or "" when not found. */
static void package_parent(char *out, size_t len)
{
    char self[PATH_MAX];
    out[0] = '\0';
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    if (n > 0) {
        self[n] = '\0';
        /* .../site-packages/servprof/bin/servprof -> .../site-packages */
        for (int up = 0; up < 3; up++) {
            char *slash = strrchr(self, '/');
            if (!slash)
                break;
            *slash = '\0';
        }
        char pkg[PATH_MAX + 32];
        snprintf(pkg, sizeof pkg, "%s/servprof/hooks", self);
        if (is_dir(pkg)) {
            snprintf(out, len, "%s", self);
            return;
        }
    }
    char src[PATH_MAX + 32];
    snprintf(src, sizeof src, "%s/servprof/hooks", SERVPROF_SOURCE_PYDIR);
    if (SERVPROF_SOURCE_PYDIR[0] && is_dir(src))
        snprintf(out, len, "%s", SERVPROF_SOURCE_PYDIR);
}

int cmd_hooks(int argc, char **argv)
{
    const char *python = getenv("SERVPROF_PYTHON");
    const char **args = calloc((size_t)argc * 2 + 8, sizeof *args);
    if (!args) {
        fprintf(stderr, "servprof hooks: out of memory\n");
        return 1;
    }
    int n = 0, sub = 0;
    args[n++] = NULL; /* the interpreter, set below */
    args[n++] = "-m";
    args[n++] = "servprof";
    args[n++] = "hooks";
    args[n++] = "check";
    cli_parser p;
    cli_init(&p, &verb, argc, argv);
    for (int id; (id = cli_next(&p)) != CLI_END;) {
        switch (id) {
        case CLI_STOP: free(args); return p.status;
        case OPT_SET: args[n++] = "--set"; args[n++] = p.value; break;
        case OPT_PYTHON: python = p.value; break;
        case CLI_ARG:
            if (!sub) {
                if (strcmp(p.value, "check") != 0) {
                    free(args);
                    return cli_error(&verb, "unknown sub-verb '%s' (the one there is: check)", p.value);
                }
                sub = 1;
            } else {
                args[n++] = p.value;
            }
            break;
        }
    }
    if (!sub) {
        free(args);
        return cli_error(&verb, "give the sub-verb: servprof hooks check FILE... (see --help)");
    }
    if (n == 5) {
        free(args);
        return cli_error(&verb, "give a hook FILE or --set NAME to check");
    }
    if (!python || !python[0])
        python = "python3";
    args[0] = python;
    char parent[PATH_MAX];
    package_parent(parent, sizeof parent);
    if (parent[0]) {
        const char *old = getenv("PYTHONPATH");
        size_t len = strlen(parent) + (old ? strlen(old) : 0) + 2;
        char *pp = malloc(len);
        if (pp) {
            snprintf(pp, len, "%s%s%s", parent, old && old[0] ? ":" : "", old ? old : "");
            setenv("PYTHONPATH", pp, 1);
            free(pp);
        }
    }
    execvp(python, (char *const *)args);
    fprintf(stderr, "servprof hooks: cannot run %s: %s (set --python or SERVPROF_PYTHON)\n", python,
            strerror(errno));
    free(args);
    return 127;
}
