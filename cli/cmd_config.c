/* cmd_config.c — placeholder until the verb is written (owned by its issue). */
#include <stdio.h>
#include "commands.h"
int cmd_config(int argc, char **argv)
{
    (void)argc; (void)argv;
    fprintf(stderr, "servprof: 'config' is not built yet\n");
    return 2;
}
