/* SPDX-License-Identifier: Apache-2.0 */
/*
 * readvfs.h — the read-ahead VFS the parser opens raw stores through
 * (readvfs.c): SQLite's default VFS with 128 KiB read chunks, and the way
 * for the raw scan (rawscan.c) to read through SQLite's own file handle.
 */
#ifndef SERVPROF_PARSE_READVFS_H
#define SERVPROF_PARSE_READVFS_H

#include <sqlite3.h>

/* The read-ahead VFS for raw stores (readvfs.c); NULL if it could not be
 * registered (then SQLite's default is used). */
const char *prs_readvfs_name(void);

/* The file SQLite reads for the main database of db, under any wrapping
 * VFS of ours (readvfs.c): reading through it shares SQLite's descriptor,
 * so no descriptor of ours can drop SQLite's POSIX locks by closing.
 * buffered: whether SQLite's own reads of it keep using the read-ahead
 * chunk (0 while the raw scan reads the rows: the chunk is freed). */
sqlite3_file *prs_readvfs_main_file(sqlite3 *db, int buffered);

#endif
