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
enum { SPP_AFF_BLOB = 'A', SPP_AFF_TEXT = 'B', SPP_AFF_NUMERIC = 'C', SPP_AFF_INTEGER = 'D', SPP_AFF_REAL = 'E' };

/* The affinity of a column declared with type decl (NULL or "" -> BLOB),
 * by the rules of https://www.sqlite.org/datatype3.html section 3.1.
 * Pure and thread-safe. */
char spp_affinity(const char *decl);

#endif
