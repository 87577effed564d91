/*
 * writer.h — the writer thread (writer.c). It implements the recorder
 * contract of internal.h (sp_recorder_open / close / atfork_child); this
 * header only exposes its tuning knobs, for tests and benchmarks.
 */
#ifndef SERVPROF_WRITER_H
#define SERVPROF_WRITER_H

#include <stdint.h>

/* Longest time a transaction stays open while records keep coming: the most
 * a kill -9 can lose. collection.md asks for at most 250 ms. */
#define SP_WRITER_COMMIT_NS (100 * 1000000LL)
/* Longest sleep of an idle writer (it polls: producers never wake it, that
 * would be a syscall on the hot path). */
#define SP_WRITER_IDLE_MAX_MS 10

/* Rows the running writer has committed into the current store (tests). */
uint64_t sp_writer_rows(void);
/* CPU time the last writer thread used, from its start to its end (bench). */
int64_t sp_writer_last_cpu_ns(void);

#endif /* SERVPROF_WRITER_H */
