/* SPDX-License-Identifier: Apache-2.0 */
/*
 * commands.h — the verbs of the servprof tool. Each verb lives in its own
 * file (cmd_<verb>.c), parses its options with the shared helper in opts.h
 * and gets argv starting at the verb itself. It returns the process exit
 * status: 0 success, 1 the job found problems, 2 usage.
 *
 * SERVPROF_VERBS is the dispatch table of tool/cli/main.c: adding a verb is one
 * row here (name, function, one-line summary) and its cmd_<verb>.c. The
 * declarations below and `servprof --help` come from the same rows, and the
 * CLI-conventions test (tests/cli) walks every verb that `servprof --help`
 * lists.
 */
#ifndef SERVPROF_CLI_COMMANDS_H
#define SERVPROF_CLI_COMMANDS_H

#define SERVPROF_VERBS(X)                                                                  \
    X(parse, cmd_parse, "parse raw stores into a timeline, CSV reports and profiler.db")  \
    X(analyze, cmd_analyze, "summaries, time budget and ranked findings of a run")         \
    X(compare, cmd_compare, "compare two runs; --fail-if gates CI")                        \
    X(split, cmd_split, "prefill.csv / decode.csv: one step's spans, picked by batch size or rid") \
    X(report, cmd_report, "one self-contained HTML page: the run at a glance")             \
    X(config, cmd_config, "write a default config file, or check one as the library would") \
    X(enable, cmd_enable, "set \"enable\": 1 and report which processes started")          \
    X(disable, cmd_disable, "set \"enable\": 0 and report which processes stopped")        \
    X(stress, cmd_stress, "record a synthetic load to check a setup and its disk")        \
    X(metrics, cmd_metrics, "serve or print the live metrics of a metrics folder (Prometheus)") \
    X(hooks, cmd_hooks, "check which entries of Python hook files bind (runs python3)") \
    X(export, cmd_export, "send a parse to ClickHouse (clickhouse://); exporting again resumes")

#define SERVPROF_VERB_DECLARE(name, fn, summary) int fn(int argc, char **argv);
SERVPROF_VERBS(SERVPROF_VERB_DECLARE)
#undef SERVPROF_VERB_DECLARE

#endif
