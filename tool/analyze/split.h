/* SPDX-License-Identifier: Apache-2.0 */
/*
 * split.h — `servprof split` as a library call: the reference's prefill.csv
 * and decode.csv, the spans of scheduling steps picked by batch size or by
 * request id, with each span's max / min / mean / std over the picked steps
 * (docs/split.md says which rows and columns, docs/compat.md where we
 * differ). Internal to the servprof tool; a call runs on the thread that
 * makes it and shares nothing with another call.
 */
#ifndef SERVPROF_SPLIT_H
#define SERVPROF_SPLIT_H

#include <stddef.h>

/* The two selections: prefill steps and decode steps. */
enum { SA_SPLIT_PREFILL = 0, SA_SPLIT_DECODE = 1, SA_SPLIT_NSEL = 2 };

typedef struct sa_split_select {
    long batch_size;   /* > 0: steps of exactly this many requests */
    const char *rid;   /* or (not NULL): steps whose rid list holds this request */
    long number;       /* at most this many steps feed the statistics (>= 1) */
} sa_split_select;

typedef struct sa_split_opts {
    const char *input;   /* raw stores / session folder, or a parse output folder (or its profiler.db) */
    const char *output;  /* folder of prefill.csv / decode.csv (created when missing) */
    sa_split_select sel[SA_SPLIT_NSEL]; /* a selection with batch_size 0 and rid NULL is off */
    int progress;        /* the parse's progress bar, as prs_opts.progress (raw stores only) */
    int log_level;       /* PRS_DEBUG .. PRS_NONE (plog.h) as --log-level, or -1: not given (info for
                            split's own messages, warning for the in-process parse's) */
} sa_split_opts;

/* Writes the files of the selections that are on. Returns 0 when every
 * selection that is on found a step and its file was written; 1 when one
 * found none (a line on stderr says which, and the batch sizes there are)
 * or an output could not be written; 2 when the input cannot be read.
 * Messages go to stderr, one line each, prefixed "servprof split: ", those
 * below o->log_level left out; at PRS_DEBUG the reference's debug files
 * (<kind>_detail.csv, <kind>_<number>.csv) are written too. Sets the
 * calling thread's parse log level (plog.h) for the call and restores it.
 * Before it parses raw stores, removes the temporary folders that earlier
 * runs killed mid-parse left behind (their lock no longer held). */
int sa_split_run(const sa_split_opts *o);

#endif
