/* cmd_enable.c — placeholder until the verb is written (owned by its issue). */
#include <stdio.h>
#include "commands.h"
int cmd_enable(int argc, char **argv)
{
    (void)argc; (void)argv;
    fprintf(stderr, "servprof: 'enable' is not built yet\n");
    return 2;
}
int cmd_disable(int argc, char **argv)
{
    (void)argc; (void)argv;
    fprintf(stderr, "servprof: 'disable' is not built yet\n");
    return 2;
}
