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

/* Creates (truncates) path, with buffers of cap bytes (a multiple of
 * SPP_DW_ALIGN). NULL with errno set when it cannot be opened. */
spp_dw *spp_dw_open(const char *path, size_t cap);
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
FILE *spp_dw_fopen(const char *path);
#endif
