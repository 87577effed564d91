/*
 * commands.h — the verbs of the servprof tool. Each verb lives in its own
 * file (cmd_<verb>.c) and gets argv starting at the verb itself. It returns
 * the process exit status: 0 success, 1 the job found problems, 2 usage.
 */
#ifndef SERVPROF_CLI_COMMANDS_H
#define SERVPROF_CLI_COMMANDS_H

int cmd_config(int argc, char **argv);  /* config init FILE | config check FILE */
int cmd_enable(int argc, char **argv);  /* enable FILE */
int cmd_disable(int argc, char **argv); /* disable FILE */
int cmd_stress(int argc, char **argv);  /* stress --threads N --rate R --seconds S */
int cmd_parse(int argc, char **argv);   /* parse --input-path DIR ... */
int cmd_metrics(int argc, char **argv); /* metrics serve | metrics dump */

#endif
