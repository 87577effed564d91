/*
 * cmd_enable.c — `servprof enable FILE` and `servprof disable FILE`: set
 * the top-level "enable" to 1 or 0, keeping every other byte of the file,
 * replaced atomically (see src/config_edit.c). A running process that
 * watches FILE starts or stops collection within ~200 ms.
 * Exit status: 0 done (or already so), 1 the file could not be edited,
 * 2 usage.
 */
#include <stdio.h>
#include <string.h>

#include "commands.h"
#include "internal.h"
#include "runtime.h"

static int set_enable(int argc, char **argv, int value)
{
    if (argc != 2) {
        fprintf(stderr, "usage: servprof %s FILE\n", value ? "enable" : "disable");
        return 2;
    }
    char err[512];
    int changed = 0;
    if (sp_config_set_enable(argv[1], value, &changed, err, sizeof err) != 0) {
        fprintf(stderr, "servprof %s: %s: %s\n", value ? "enable" : "disable", argv[1], err);
        return 1;
    }
    printf("%s: \"enable\": %d%s\n", argv[1], value, changed ? "" : " (already)");
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
