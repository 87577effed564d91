/* SPDX-License-Identifier: Apache-2.0 */
/*
 * timeline.h — chrome_tracing.json (and the timeline tables of profiler.db).
 */
#ifndef SERVPROF_PARSE_TIMELINE_H
#define SERVPROF_PARSE_TIMELINE_H

#include "model.h"

/* json: write chrome_tracing.json; perfetto: trace.pftrace (pftrace.c);
 * o: the db tables go there when db is on.
 * tap_counters: with neither, still make the counter rows, for the parse's
 * tap only (servprof report's charts): lanes, slices and flows are skipped.
 * Returns NULL when nothing is wanted. */
prs_timeline *prs_timeline_open(prs_out *o, int json, int perfetto, int tap_counters, int64_t origin_ns,
                                int object_form);
/* The trace thread id for a record of (store, domain, thread) spanning
 * [ts, ts + dur): the lane of that thread, or a sub-lane of it when the span
 * would overlap another without nesting. Call once per record, in time order. */
int prs_timeline_lane(prs_timeline *t, const prs_store *s, const char *cat, long long tid, int64_t ts,
                      int64_t dur);
/* One span ("X") or event ("i") with every attribute in args. */
void prs_timeline_slice(prs_timeline *t, const prs_rec *r, const prs_args *a, int lane);
/* A counter sample ("C") of process pid, one or more series. */
void prs_timeline_counter(prs_timeline *t, int pid, const char *name, int64_t ts_ns,
                          const char *const *series, const double *vals, int n);
/* A flow step: ph 's', 't' or 'f', bound to the enclosing slice (bp "e"). */
/* The record being handled is a step of flow id (called between its
 * prs_timeline_lane and prs_timeline_slice): trace.pftrace puts the id on
 * the record's slice, where the JSON draws 's'/'t'/'f' once the next step
 * is known (prs_timeline_flow). */
void prs_timeline_flow_mark(prs_timeline *t, long long id);
void prs_timeline_flow(prs_timeline *t, char ph, long long id, int pid, int tid, int64_t ts_ns);
/* Device activity stores: kernels/API lanes and correlation flows. */
void prs_timeline_activity(prs_timeline *t, char *const *paths, int n);
/* Process names/labels, closes the file. Returns 0 or -1. */
int prs_timeline_close(prs_timeline *t, prs_store **stores, int n);
/* Trace pid of a store. */
static inline int prs_timeline_pid(const prs_store *s) { return s->index + 1; }

#endif
