/* SPDX-License-Identifier: Apache-2.0 */
/*
 * timeline.h — chrome_tracing.json (and the timeline tables of profiler.db).
 */
#ifndef SERVPROF_PARSE_TIMELINE_H
#define SERVPROF_PARSE_TIMELINE_H

#include "model.h"

/* json: write chrome_tracing.json; o: the db tables go there when db is on.
 * Returns NULL when neither is wanted. */
spp_timeline *spp_timeline_open(spp_out *o, int json, int64_t origin_ns);
/* The trace thread id for a record of (store, domain, thread) spanning
 * [ts, ts + dur): the lane of that thread, or a sub-lane of it when the span
 * would overlap another without nesting. Call once per record, in time order. */
int spp_timeline_lane(spp_timeline *t, const spp_store *s, const char *cat, long long tid, int64_t ts,
                      int64_t dur);
/* One span ("X") or event ("i") with every attribute in args. */
void spp_timeline_slice(spp_timeline *t, const spp_rec *r, const spp_args *a, int lane);
/* A counter sample ("C") of process pid, one or more series. */
void spp_timeline_counter(spp_timeline *t, int pid, const char *name, int64_t ts_ns,
                          const char *const *series, const double *vals, int n);
/* A flow step: ph 's', 't' or 'f', bound to the enclosing slice (bp "e"). */
void spp_timeline_flow(spp_timeline *t, char ph, long long id, int pid, int tid, int64_t ts_ns);
/* Device activity stores: kernels/API lanes and correlation flows. */
void spp_timeline_activity(spp_timeline *t, char *const *paths, int n);
/* Process names/labels, closes the file. Returns 0 or -1. */
int spp_timeline_close(spp_timeline *t, spp_store **stores, int n);
/* Trace pid of a store. */
static inline int spp_timeline_pid(const spp_store *s) { return s->index + 1; }

#endif
