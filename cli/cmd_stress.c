/* cmd_stress.c — placeholder until the verb is written (owned by its issue). */
#include <stdio.h>
#include "commands.h"
int cmd_stress(int argc, char **argv)
{
    (void)argc; (void)argv;
    fprintf(stderr, "servprof: 'stress' is not built yet\n");
    return 2;
}
