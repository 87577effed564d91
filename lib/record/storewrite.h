/* SPDX-License-Identifier: Apache-2.0 */
/*
 * storewrite.h — the SQLite raw store of one process (docs/api.md, "The raw store").
 * Used by the writer thread only; nothing here is thread-safe.
 */
#ifndef SERVPROF_STOREWRITE_H
#define SERVPROF_STOREWRITE_H

#include <stddef.h>
#include <stdint.h>

typedef struct sp_store sp_store;

typedef struct sp_slice_row {
    int64_t timestamp, duration;
    const char *name;
    size_t name_len;
    const char *cat; /* domain; "" when none */
    size_t cat_len;
    const char *args;
    size_t args_len;
    int tid;
} sp_slice_row;

/* Opens (creating the folder and the file when needed) the store at path:
 * WAL, synchronous=NORMAL, the six tables, prepared statements. Returns
 * NULL after logging why. */
sp_store *sp_store_open(const char *path, int pid);

/* Every write below returns 0, or -1 once the store failed: the first
 * failure is logged and counted, rolls back the open transaction and makes
 * every later call a no-op returning -1 (the store file stays valid: WAL
 * holds only committed transactions). */
int sp_store_begin(sp_store *st);
int sp_store_slice(sp_store *st, const sp_slice_row *row);
int sp_store_meta(sp_store *st, const char *key, const char *value);
int sp_store_process(sp_store *st, const char *name, const char *label, int ppid);
int sp_store_thread(sp_store *st, int tid, const char *name);
/* Nonzero while a background checkpoint runs and the open transaction (if
 * any) has not read or written yet: starting it only after the checkpoint
 * lets the WAL restart from its beginning instead of growing. */
int sp_store_wants_pause(const sp_store *st);
/* The WAL's size, in pages, after the last commit. */
int sp_store_wal_pages(const sp_store *st);
/* Commits the open transaction (no-op when none). */
int sp_store_commit(sp_store *st);
int sp_store_in_txn(const sp_store *st);
/* Nonzero once the store failed (error, or file deleted). */
int sp_store_failed(const sp_store *st);

/* Checks that the file is still the one opened (not deleted or replaced).
 * Returns 0, or -1 (logged once) and the store is failed. */
int sp_store_check_file(sp_store *st);

/* Commits, checkpoints (so the .db alone holds everything) and closes.
 * NULL is a no-op. */
void sp_store_close(sp_store *st);

/* Sets Meta key=value in the store at path, already closed (its writer is
 * gone): for figures that are only final after the store closed (request
 * tracing's counts after the exit flush). Opens no new file: a store that
 * is not there is left alone. Returns 0, or -1 after logging why. */
int sp_store_meta_closed(const char *path, const char *key, const char *value);

/* Fork child: forget the parent's connection without touching it. */
void sp_store_forget(sp_store *st);

/* Figures of the last store opened (benchmarks): background checkpoints
 * done and failed, the longest one, the checkpointer thread's CPU time
 * (known once the store closed), the largest WAL seen at a commit (in
 * 64 KiB pages: it stays small when the WAL restarts). */
typedef struct sp_store_stats {
    uint64_t checkpoints, checkpoint_failures;
    int64_t checkpoint_longest_ns, checkpointer_cpu_ns;
    int max_wal_pages;
} sp_store_stats;
void sp_store_last_stats(sp_store_stats *out);

#endif /* SERVPROF_STOREWRITE_H */
