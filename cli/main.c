/*
 * main.c — entry of the servprof tool: finds the verb and hands over.
 */
#include <stdio.h>
#include <string.h>

#include "commands.h"
#include "servprof.h"

typedef struct verb {
    const char *name;
    int (*run)(int argc, char **argv);
    const char *usage;
} verb;

static const verb verbs[] = {
    {"parse", cmd_parse, "parse --input-path DIR [--output-path OUT] [--format csv json db] [--span NAME ...]"},
    {"config", cmd_config, "config init FILE | config check FILE"},
    {"enable", cmd_enable, "enable FILE        set \"enable\": 1, keeping the rest of the file"},
    {"disable", cmd_disable, "disable FILE       set \"enable\": 0, keeping the rest of the file"},
    {"stress", cmd_stress, "stress --threads N --rate R --seconds S"},
    {"metrics", cmd_metrics, "metrics serve [--listen 127.0.0.1:9464] [-i DIR] | metrics dump [-i DIR]"},
};

static void usage(FILE *out)
{
    fprintf(out, "servprof %s — service profiler for LLM inference servers\n\nusage:\n", SERVPROF_VERSION);
    for (size_t i = 0; i < sizeof verbs / sizeof verbs[0]; i++)
        fprintf(out, "  servprof %s\n", verbs[i].usage);
}

int main(int argc, char **argv)
{
    if (argc < 2 || !strcmp(argv[1], "-h") || !strcmp(argv[1], "--help")) {
        usage(argc < 2 ? stderr : stdout);
        return argc < 2 ? 2 : 0;
    }
    if (!strcmp(argv[1], "--version")) {
        printf("servprof %s\n", SERVPROF_VERSION);
        return 0;
    }
    for (size_t i = 0; i < sizeof verbs / sizeof verbs[0]; i++)
        if (!strcmp(argv[1], verbs[i].name))
            return verbs[i].run(argc - 1, argv + 1);
    fprintf(stderr, "servprof: unknown command '%s'\n", argv[1]);
    usage(stderr);
    return 2;
}
