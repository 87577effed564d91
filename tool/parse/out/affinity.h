/* SPDX-License-Identifier: Apache-2.0 */
/*
 * affinity.h — the column affinity SQLite derives from a declared type
 * (affinity.c), shared by the page writer (btwrite.c, what to store) and
 * the page reader (rawscan.c, what a column may hold), so both apply the
 * one rule SQLite applies.
 */
#ifndef SERVPROF_PARSE_AFFINITY_H
#define SERVPROF_PARSE_AFFINITY_H

/* Column affinities, SQLite's own letters and order (NUMERIC and above
 * are the numeric affinities). */
enum { PRS_AFF_BLOB = 'A', PRS_AFF_TEXT = 'B', PRS_AFF_NUMERIC = 'C', PRS_AFF_INTEGER = 'D', PRS_AFF_REAL = 'E' };

/* The affinity of a column declared with type decl (NULL or "" -> BLOB),
 * by the rules of https://www.sqlite.org/datatype3.html section 3.1.
 * Pure and thread-safe. */
char prs_affinity(const char *decl);

#endif
