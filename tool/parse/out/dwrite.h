/* SPDX-License-Identifier: Apache-2.0 */
/*
 * dwrite.h — a big output file written around the page cache by a
 * background thread (dwrite.c). Used for chrome_tracing.json and
 * profiler.db, the two outputs of gigabytes.
 *
 * The caller fills the buffer it is given and hands it over whole; the
 * thread writes it while the caller fills the next one. Every buffer but
 * the last is exactly `cap` bytes (a multiple of PRS_DW_ALIGN), so every
 * O_DIRECT write starts and ends on an aligned offset.
 */
#ifndef SERVPROF_PARSE_DWRITE_H
#define SERVPROF_PARSE_DWRITE_H
#include <stddef.h>

#define PRS_DW_ALIGN 4096
#define PRS_DW_BUF (4u << 20)  /* bytes per buffer of the big files */

typedef struct prs_dw prs_dw;

/* A staging queue (below): one per parse, in its output (prs_out). */
typedef struct prs_dw_stage {
    struct prs_dw_staged *q;
    int n, cap, on;
} prs_dw_stage;

/* Creates (truncates) path, with buffers of cap bytes (a multiple of
 * PRS_DW_ALIGN). NULL with errno set when it cannot be opened. While
 * stage is on (below; NULL: none), the file written is path PRS_DW_PARTIAL. */
prs_dw *prs_dw_open(prs_dw_stage *stage, const char *path, size_t cap);
/* The same, never staged: for a file the caller names and renames itself
 * (profiler.db.partial, whose page 1 is written after the close). */
prs_dw *prs_dw_open_unstaged(const char *path, size_t cap);

/* Staging (dwrite.c): from _begin on, files are written under a temporary
 * name; a clean close queues the rename to the real name, a failed close
 * removes the temporary file. _add queues a rename of a file written
 * otherwise (tmp NULL: remove final, a report of an earlier run).
 * Without staging on (or with stage NULL), _add does its step at once.
 * _commit does every queued step in order (0, or -1 if a rename failed,
 * printed) and ends staging; _discard removes the temporary files
 * instead. Each parse has its own queue; one thread uses it. */
#define PRS_DW_PARTIAL ".partial"
void prs_dw_stage_begin(prs_dw_stage *s);
void prs_dw_stage_add(prs_dw_stage *s, const char *tmp, const char *final);
/* Removes an output of an earlier run (or an incomplete one) when it is a
 * regular file; a FIFO, a device or a symlink at path is left alone.
 * 0 when removed, else -1. */
int prs_dw_remove(const char *path);
/* 1 when dir, or a folder in it (span_info/), holds a name an output
 * would be written into in place (a FIFO, a device, a dangling link:
 * sp_output_target): what is written there cannot be taken back. The
 * first such path goes into found (cap bytes). 0 for a NULL dir. */
int prs_dw_dir_has_nodes(const char *dir, char *found, size_t cap);
int prs_dw_stage_commit(prs_dw_stage *s);
void prs_dw_stage_discard(prs_dw_stage *s);
/* The buffer to fill next: cap bytes, aligned. */
char *prs_dw_buf(prs_dw *w);
/* Hands over the current buffer, full (cap bytes); returns the next
 * one to fill. May wait while every buffer is queued (the disk is slower
 * than the caller): memory stays bounded. */
char *prs_dw_submit(prs_dw *w);
/* The errno of the first failed write so far, 0 if none. */
int prs_dw_error(prs_dw *w);
/* Writes the last `n` bytes of the current buffer, waits for the thread,
 * closes the file. Returns 0 or the errno of the first failure. */
int prs_dw_close(prs_dw *w, size_t n);

/* A stdio stream over a dwrite file, for writers built on FILE * (the CSV
 * reports): stdio's buffer is copied into dwrite's. fclose() returns EOF
 * with errno set when a write failed. NULL with errno set on failure. */
#include <stdio.h>
FILE *prs_dw_fopen(prs_dw_stage *stage, const char *path);
#endif
