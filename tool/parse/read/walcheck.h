/* SPDX-License-Identifier: Apache-2.0 */
/*
 * walcheck.h — a store's -wal file checked as SQLite would read it
 * (walcheck.c), to tell a damaged WAL from a wrong or empty store.
 */
#ifndef SERVPROF_PARSE_WALCHECK_H
#define SERVPROF_PARSE_WALCHECK_H
#include <stdint.h>

typedef struct prs_wal_info {
    int present;          /* a non-empty <store>-wal exists */
    long long size;       /* its bytes */
    int header_ok;        /* magic, version, page size and checksum right */
    uint32_t page_size;   /* from the header (when header_ok) */
    long long frames;     /* whole frames in the file */
    long long used;       /* frames SQLite reads: up to the last commit before any break */
    long long damaged_at; /* 1-based frame whose checksum fails, 0 if none */
    long long after;      /* frames of the same generation after that one */
    int damaged;          /* committed data SQLite will not read: a bad header with frames, or frames after a break */
    long long lost_rows;  /* about how many rows (table-leaf cells) the unread frames hold */
} prs_wal_info;

/* Checks db_path's WAL; main_psz (the main file's page size) counts the
 * frames when the WAL header is damaged. Returns w->damaged. Never fails:
 * an unreadable WAL is reported as absent. */
int prs_wal_check(const char *db_path, uint32_t main_psz, prs_wal_info *w);
#endif
