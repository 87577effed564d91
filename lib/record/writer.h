/* SPDX-License-Identifier: Apache-2.0 */
/*
 * writer.h — the writer thread (writer.c). It implements the recorder
 * contract of internal.h (sp_recorder_open / close / atfork_child); this
 * header only exposes its tuning knobs, for tests and benchmarks.
 */
#ifndef SERVPROF_WRITER_H
#define SERVPROF_WRITER_H

#include <stdint.h>

/* Longest time a transaction stays open while records keep coming: the most
 * a kill -9 can lose. The goal is at most 250 ms (docs/benchmarks.md). */
#define SP_WRITER_COMMIT_NS (100 * 1000000LL)
/* Longest sleep of a writer whose passes find nothing (it polls: producers
 * never wake it, that would be a syscall on the hot path). A 4 MiB buffer
 * takes ~70 ms to fill at 60 MB/s, the fastest one thread writes. */
#define SP_WRITER_IDLE_MAX_MS 20
/* Longest sleep while passes find a little (records trickle). */
#define SP_WRITER_TRICKLE_MAX_MS 10
/* A pass that found at least this much means records are flowing fast:
 * the writer then sleeps only 1 ms, to keep buffers far from full. */
#define SP_WRITER_BUSY_BYTES (16 * 1024)
/* Longest wait for a background checkpoint before the next transaction
 * (writer.c): a 4 MiB buffer takes ~45 ms to fill at 1 M records/s, and the
 * wait also ends when any buffer is a quarter full. */
#define SP_WRITER_CKPT_WAIT_NS (50 * 1000000LL)
/* A WAL past SP_WRITER_WAL_BIG_PAGES (64 KiB pages: 1 GiB) makes the writer
 * wait for the checkpoint up to SP_WRITER_CKPT_HARD_WAIT_NS while every
 * buffer is under three quarters full (still no drop: at 1 M records/s on
 * one thread a checkpoint can outlast a quarter of a buffer). Past
 * SP_WRITER_WAL_HARD_PAGES (4 GiB) it waits whatever its buffers: records
 * drop meanwhile, counted, for a bounded disk in a sustained overload. */
#define SP_WRITER_WAL_BIG_PAGES 16384
#define SP_WRITER_WAL_HARD_PAGES 65536
#define SP_WRITER_CKPT_HARD_WAIT_NS (300 * 1000000LL)

/* Rows the running writer has committed into the current store (tests). */
uint64_t sp_writer_rows(void);
/* CPU time the last writer thread used, from its start to its end (bench). */
int64_t sp_writer_last_cpu_ns(void);

/* Stall figures of the current or last session (bench): the longest pass
 * (drain of every buffer, rows into SQLite; a commit excluded), the longest
 * commit, the most bytes found waiting in one thread buffer, the waits for
 * a background checkpoint and the longest. */
typedef struct sp_writer_stats {
    int64_t longest_pass_ns, longest_commit_ns;
    uint64_t max_buffer_fill;
    uint64_t checkpoint_waits;
    int64_t longest_checkpoint_wait_ns;
} sp_writer_stats;
void sp_writer_last_stats(sp_writer_stats *out);

#endif /* SERVPROF_WRITER_H */
