/* SPDX-License-Identifier: Apache-2.0 */
/*
 * dwrite.h — a big output file written around the page cache by a
 * background thread (dwrite.c). Used for chrome_tracing.json and
 * profiler.db, the two outputs of gigabytes.
 *
 * The caller fills the buffer it is given and hands it over whole; the
 * thread writes it while the caller fills the next one. Every buffer but
 * the last is exactly `cap` bytes (a multiple of SPP_DW_ALIGN), so every
 * O_DIRECT write starts and ends on an aligned offset.
 */
#ifndef SERVPROF_PARSE_DWRITE_H
#define SERVPROF_PARSE_DWRITE_H
#include <stddef.h>

#define SPP_DW_ALIGN 4096
#define SPP_DW_BUF (4u << 20)  /* bytes per buffer of the big files */

typedef struct spp_dw spp_dw;

/* A staging queue (below): one per parse, in its output (spp_out). */
typedef struct spp_dw_stage {
    struct spp_dw_staged *q;
    int n, cap, on;
} spp_dw_stage;

/* Creates (truncates) path, with buffers of cap bytes (a multiple of
 * SPP_DW_ALIGN). NULL with errno set when it cannot be opened. While
 * stage is on (below; NULL: none), the file written is path SPP_DW_PARTIAL. */
spp_dw *spp_dw_open(spp_dw_stage *stage, const char *path, size_t cap);
/* The same, never staged: for a file the caller names and renames itself
 * (profiler.db.partial, whose page 1 is written after the close). */
spp_dw *spp_dw_open_unstaged(const char *path, size_t cap);

/* Staging (dwrite.c): from _begin on, files are written under a temporary
 * name; a clean close queues the rename to the real name, a failed close
 * removes the temporary file. _add queues a rename of a file written
 * otherwise (tmp NULL: remove final, a report of an earlier run).
 * Without staging on (or with stage NULL), _add does its step at once.
 * _commit does every queued step in order (0, or -1 if a rename failed,
 * printed) and ends staging; _discard removes the temporary files
 * instead. Each parse has its own queue; one thread uses it. */
#define SPP_DW_PARTIAL ".partial"
void spp_dw_stage_begin(spp_dw_stage *s);
void spp_dw_stage_add(spp_dw_stage *s, const char *tmp, const char *final);
/* Removes an output of an earlier run (or an incomplete one) when it is a
 * regular file; a FIFO, a device or a symlink at path is left alone.
 * 0 when removed, else -1. */
int spp_dw_remove(const char *path);
int spp_dw_stage_commit(spp_dw_stage *s);
void spp_dw_stage_discard(spp_dw_stage *s);
/* The buffer to fill next: cap bytes, aligned. */
char *spp_dw_buf(spp_dw *w);
/* Hands over the current buffer, full (cap bytes); returns the next
 * one to fill. May wait while every buffer is queued (the disk is slower
 * than the caller): memory stays bounded. */
char *spp_dw_submit(spp_dw *w);
/* The errno of the first failed write so far, 0 if none. */
int spp_dw_error(spp_dw *w);
/* Writes the last `n` bytes of the current buffer, waits for the thread,
 * closes the file. Returns 0 or the errno of the first failure. */
int spp_dw_close(spp_dw *w, size_t n);

/* A stdio stream over a dwrite file, for writers built on FILE * (the CSV
 * reports): stdio's buffer is copied into dwrite's. fclose() returns EOF
 * with errno set when a write failed. NULL with errno set on failure. */
#include <stdio.h>
FILE *spp_dw_fopen(spp_dw_stage *stage, const char *path);
#endif
