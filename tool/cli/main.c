/* SPDX-License-Identifier: Apache-2.0 */
/*
 * main.c — entry of the servprof tool: finds the verb and hands over.
 *
 *   servprof VERB [options]      runs the verb (see commands.h for the table)
 *   servprof help [VERB]         the tool's or the verb's usage, on stdout
 *   servprof --help | --version  the same for the tool
 *
 * Every verb gets the same --help and --version from the shared option
 * helper (opts.h), so `servprof help VERB` is `servprof VERB --help`.
 */
#include <stdio.h>
#include <string.h>

#include "commands.h"
#include "opts.h"
#include "servprof.h"

typedef struct verb {
    const char *name;
    int (*run)(int argc, char **argv);
    const char *summary;
} verb;

#define SERVPROF_VERB_ROW(name, fn, summary) {#name, fn, summary},
static const verb verbs[] = {SERVPROF_VERBS(SERVPROF_VERB_ROW)};
#undef SERVPROF_VERB_ROW
#define NVERBS (sizeof verbs / sizeof verbs[0])

static void usage(FILE *out)
{
    fprintf(out, "servprof %s — service profiler for LLM inference servers\n\n"
                 "usage: servprof VERB [options]     (servprof help VERB, servprof VERB --help)\n\n"
                 "verbs:\n", SERVPROF_VERSION);
    for (size_t i = 0; i < NVERBS; i++)
        fprintf(out, "  %-10s %s\n", verbs[i].name, verbs[i].summary);
    fprintf(out, "\noptions: -h, --help   this help;  --version   the version\n");
}

static const verb *find(const char *name)
{
    for (size_t i = 0; i < NVERBS; i++)
        if (!strcmp(name, verbs[i].name))
            return &verbs[i];
    return NULL;
}

static void verb_names(char *out, size_t len)
{
    size_t n = 0;
    out[0] = '\0';
    for (size_t i = 0; i < NVERBS && n < len; i++)
        n += (size_t)snprintf(out + n, len - n, "%s%s", n ? ", " : "", verbs[i].name);
}

/* servprof help [VERB] */
static int help(int argc, char **argv)
{
    if (argc < 3) {
        usage(stdout);
        return 0;
    }
    const verb *v = find(argv[2]);
    if (!v) {
        char names[256];
        verb_names(names, sizeof names);
        fprintf(stderr, "servprof help: unknown verb '%s' (verbs: %s)\n", argv[2], names);
        return 2;
    }
    char *args[] = {(char *)v->name, "--help", NULL};
    return v->run(2, args);
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    const char *a = argv[1];
    if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
        usage(stdout);
        return 0;
    }
    if (!strcmp(a, "--version")) {
        cli_print_version();
        return 0;
    }
    if (!strcmp(a, "help"))
        return help(argc, argv);
    const verb *v = find(a);
    if (v)
        return v->run(argc - 1, argv + 1);
    char names[256];
    verb_names(names, sizeof names);
    fprintf(stderr, "servprof: unknown %s '%s' (verbs: %s, help; options: --help, --version)\n",
            a[0] == '-' ? "option" : "verb", a, names);
    return 2;
}
