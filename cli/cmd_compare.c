#include "commands.h"
#include <stdio.h>
int cmd_compare(int argc, char **argv){(void)argc;(void)argv;fputs("todo\n",stderr);return 2;}
