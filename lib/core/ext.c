/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ext.c — the small entry points of ext.h that read the recorder's shared
 * state for the drop-in library (dropin/): the domain filter and the
 * Meta counters. The others live with the state they touch: message
 * attributes in record.c, transitions and the config view in runtime.c,
 * the decoder's fuzz entry in msgdec.c.
 */
#include "ext.h"
#include "internal.h"
#include "rec_state.h"

SERVPROF_API int servprof__domain_pass(const char *domain)
{
    const sp_domain_filter *f = atomic_load_explicit(&sp__domain_filter, memory_order_acquire);
    return sp_domain_pass(f, domain);
}

SERVPROF_API int servprof__domain_filter_on(void)
{
    const sp_domain_filter *f = atomic_load_explicit(&sp__domain_filter, memory_order_acquire);
    return f && f->n > 0;
}

SERVPROF_API void servprof__count(int what, uint64_t n)
{
    switch (what) {
    case SERVPROF__COUNT_BAD_INPUT: sp_count(&sp_rec_count.bad_input, n); break;
    case SERVPROF__COUNT_DOUBLE_END: sp_count(&sp_rec_count.span_double_end, n); break;
    case SERVPROF__COUNT_NEVER_ENDED: sp_count(&sp_rec_count.span_never_ended, n); break;
    case SERVPROF__COUNT_TRUNCATED: sp_count(&sp_rec_count.truncated, n); break;
    default: sp_count(&sp_rec_count.bad_input, 1); break;
    }
}
