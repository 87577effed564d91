/* SPDX-License-Identifier: Apache-2.0 */
/*
 * clockalign.h — per-host clock offsets for stores of several hosts
 * (clockalign.c): estimated from the requests' causal intervals, or set
 * with --clock-offset, applied by the store reader, reported in
 * clock_offsets.csv.
 */
#ifndef SERVPROF_PARSE_CLOCKALIGN_H
#define SERVPROF_PARSE_CLOCKALIGN_H

#include "parse.h"
#include "storeread.h"
#include "table.h"


enum { PRS_CLOCK_NONE = 0, PRS_CLOCK_REFERENCE, PRS_CLOCK_ESTIMATED, PRS_CLOCK_OVERRIDE };

typedef struct prs_clock_host {
    const char *name;      /* the stores' hostname (not owned) */
    int64_t offset;        /* ns this host's clock reads ahead of the reference */
    int64_t lo, hi;        /* the bound the records allow on offset */
    long long pairs;       /* requests behind the bound to its parent host */
    int source;            /* PRS_CLOCK_* */
    int synced;            /* Meta clock_synced of all its stores: 1, 0, -1 unknown */
    int64_t maxerr_ns;     /* the kernel's max error (Meta clock_maxerror_us), -1 unknown */
    int kernel_used;       /* that error bounded the estimate */
} prs_clock_host;

typedef struct prs_clock {
    prs_clock_host *hosts;
    int nhosts;
} prs_clock;

/* With stores of two hosts or more: estimates (or takes from opts) each
 * host's offset and sets every store's clock_shift. Returns 1 when it did,
 * 0 for stores of one host (nothing changed). */
int prs_clock_align(prs_clock *c, prs_store **stores, int n, const prs_opts *opts);
/* clock_offsets.csv / table clock_offsets (several hosts only). */
void prs_clock_report(const prs_clock *c, prs_out *out);
void prs_clock_free(prs_clock *c);

#endif
