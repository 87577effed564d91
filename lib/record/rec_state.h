/* SPDX-License-Identifier: Apache-2.0 */
/*
 * rec_state.h — state shared by the recorder's files (record.c, writer.c,
 * storewrite.c, argbuild.c, rec_meta.c). Not API; see internal.h for the contract the
 * rest of the library sees.
 */
#ifndef SERVPROF_REC_STATE_H
#define SERVPROF_REC_STATE_H

#include <stdatomic.h>
#include <stdint.h>

/* Process-wide counters (all sessions). Relaxed atomics: they are only ever
 * added to, and only read for reports. Per-thread records/dropped live in
 * each sp_tbuf instead, so the hot path never shares a cache line. */
typedef struct sp_rec_counters {
    _Atomic uint64_t truncated;        /* strings cut to SERVPROF_MAX_STRING */
    _Atomic uint64_t bad_input;        /* NULLs, misuse, invalid attr_json */
    _Atomic uint64_t span_double_end;  /* writer */
    _Atomic uint64_t span_never_ended; /* writer, at close */
    _Atomic uint64_t write_errors;     /* writer: store errors */
    _Atomic uint64_t written;          /* writer: rows committed */
    _Atomic uint64_t lost;             /* writer: records consumed but not stored
                                          (store failed, a transaction rolled back, or
                                          begun in an ended session): records, not rows */
    _Atomic uint64_t stored;           /* writer: records in committed rows (a span's
                                          begin and end are two records, one row) */
    _Atomic uint64_t metrics_only;     /* metrics drain: records taken by live metrics
                                          alone, tracing being off */
} sp_rec_counters;

extern sp_rec_counters sp_rec_count;

static inline void sp_count(_Atomic uint64_t *c, uint64_t n)
{
    atomic_fetch_add_explicit(c, n, memory_order_relaxed);
}

/* The session generation: bumped by sp_recorder_open() before the level is
 * published. Each record carries the value it was begun under, so records
 * finished after a stop (their thread passed the level check before it)
 * are recognised by the next session's writer and not stored there. */
extern _Atomic uint32_t sp_rec_epoch;

/* rec_meta.c: process-level Meta and the process name (servprof_meta,
 * servprof_set_process_name), kept across sessions. */
typedef void (*sp_meta_visit)(void *ctx, const char *key, const char *value);
/* Calls visit for each key when the meta changed since *gen (or always when
 * *gen is 0), then updates *gen. Returns the number of keys visited. */
int sp_meta_each_if_changed(unsigned *gen, sp_meta_visit visit, void *ctx);
/* Copies the process name (set, else /proc/self/comm) into buf; returns its
 * generation so the writer can tell when it changed. */
unsigned sp_meta_process_name(char *buf, size_t len);
/* The generation alone (cheap: no /proc read). */
unsigned sp_meta_process_gen(void);
void sp_meta_atfork_child(void);

#endif /* SERVPROF_REC_STATE_H */
