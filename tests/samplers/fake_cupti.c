/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fake_cupti.c — libfake_cupti.so, a test double for CUPTI's activity API:
 * the entry points servprof calls, with scripted activity, so the CUPTI
 * code path (buffers, record walking, names, filters, levels, clock
 * conversion, the activity store) is tested without a GPU.
 *
 * Model: every cuptiActivityFlushAll() "completes" one scripted batch of
 * activity for the kinds enabled at any time since the previous flush
 * (nothing when none was), at most FAKE_CUPTI_BATCHES times (default 1000). Records are laid out as
 * CUPTI lays them out (the prefixes of lib/samplers/cupti_abi.h, followed by junk
 * bytes standing for the fields newer record versions append), 8-byte
 * aligned. The fake clock is CLOCK_MONOTONIC + 10^15 ns, so a missing or
 * wrong conversion to epoch ns is obvious.
 *
 * One batch: kernels "_Z6matmulPfS_S_i" x3 (1, 2, 3 µs, device 0 stream 7),
 * "softmax_kernel" x2 (0.5, 1.5 µs, device 1 stream 8),
 * "ncclDevKernel_AllReduce_Sum_f32" x1 (4 µs, device 0 stream 9), one
 * kernel with end = 0 (untimed: must be dropped); memcpy HtoD and DtoH;
 * one memset; runtime API: cudaLaunchKernel_v7000 x6 (cbid 211),
 * cudaMemcpyAsync_v3020 x2 (cbid 41), cbid 999 (no name) x1.
 * Correlation ids: kernels 1-6, copies 7-8, memset 9, API 1-8 and 10.
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cupti_abi.h"

#define FAKE_API __attribute__((visibility("default")))
#define JUNK 48 /* bytes appended to each record, like newer versions */

FAKE_API int fake_cupti_enabled[64];
static int pending[64]; /* enabled at some time since the last flush */
FAKE_API int fake_cupti_flushes, fake_cupti_batches;

static CUpti_BuffersCallbackRequestFunc on_request;
static CUpti_BuffersCallbackCompleteFunc on_complete;

static uint64_t fake_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec + 1000000000000000ull;
}

static size_t record_size(int kind)
{
    size_t s;
    switch (kind) {
    case CUPTI_ACTIVITY_KIND_KERNEL:
    case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL: s = sizeof(sp_cupti_kernel) + JUNK; break;
    case CUPTI_ACTIVITY_KIND_MEMCPY: s = sizeof(sp_cupti_memcpy) + JUNK; break;
    case CUPTI_ACTIVITY_KIND_MEMSET: s = sizeof(sp_cupti_memset) + JUNK; break;
    default: s = sizeof(sp_cupti_api); break;
    }
    return (s + 7) & ~(size_t)7;
}

FAKE_API CUptiResult cuptiActivityRegisterCallbacks(CUpti_BuffersCallbackRequestFunc req,
                                                    CUpti_BuffersCallbackCompleteFunc done)
{
    on_request = req;
    on_complete = done;
    return CUPTI_SUCCESS;
}

FAKE_API CUptiResult cuptiActivityEnable(CUpti_ActivityKind k)
{
    if (k < 0 || k >= 64)
        return CUPTI_ERROR_INVALID_PARAMETER;
    fake_cupti_enabled[k] = 1;
    pending[k] = 1;
    return CUPTI_SUCCESS;
}

FAKE_API CUptiResult cuptiActivityDisable(CUpti_ActivityKind k)
{
    if (k < 0 || k >= 64)
        return CUPTI_ERROR_INVALID_PARAMETER;
    fake_cupti_enabled[k] = 0;
    return CUPTI_SUCCESS;
}

FAKE_API CUptiResult cuptiGetTimestamp(uint64_t *t)
{
    *t = fake_now();
    return CUPTI_SUCCESS;
}

FAKE_API CUptiResult cuptiGetResultString(CUptiResult rc, const char **s)
{
    *s = rc == CUPTI_SUCCESS ? "CUPTI_SUCCESS" : "CUPTI_ERROR_FAKE";
    return CUPTI_SUCCESS;
}

FAKE_API CUptiResult cuptiGetCallbackName(int domain, uint32_t cbid, const char **name)
{
    if (domain != CUPTI_CB_DOMAIN_RUNTIME_API)
        return CUPTI_ERROR_INVALID_PARAMETER;
    if (cbid == 211)
        *name = "cudaLaunchKernel_v7000";
    else if (cbid == 41)
        *name = "cudaMemcpyAsync_v3020";
    else
        return CUPTI_ERROR_INVALID_PARAMETER;
    return CUPTI_SUCCESS;
}

FAKE_API CUptiResult cuptiActivityGetNumDroppedRecords(CUcontext c, uint32_t s, size_t *n)
{
    (void)c; (void)s;
    *n = 0;
    return CUPTI_SUCCESS;
}

FAKE_API CUptiResult cuptiActivityGetNextRecord(uint8_t *buffer, size_t valid,
                                                CUpti_Activity **record)
{
    size_t off = 0;
    if (*record)
        off = (size_t)((uint8_t *)*record - buffer) + record_size((*record)->kind);
    if (off >= valid)
        return CUPTI_ERROR_MAX_LIMIT_REACHED;
    *record = (CUpti_Activity *)(buffer + off);
    return CUPTI_SUCCESS;
}

static size_t put_kernel(uint8_t *b, size_t off, const char *name, uint64_t start, uint64_t dur,
                         uint32_t dev, uint32_t stream, uint32_t corr)
{
    sp_cupti_kernel k;
    memset(&k, 0, sizeof k);
    k.kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
    k.start = start;
    k.end = dur ? start + dur : 0;
    k.deviceId = dev;
    k.streamId = stream;
    k.correlationId = corr;
    k.gridId = 1;
    k.name = name;
    memset(b + off, 0xAB, record_size(k.kind));
    memcpy(b + off, &k, sizeof k);
    return off + record_size(k.kind);
}

static size_t put_copy(uint8_t *b, size_t off, uint8_t kind, uint64_t start, uint32_t corr)
{
    sp_cupti_memcpy m;
    memset(&m, 0, sizeof m);
    m.kind = CUPTI_ACTIVITY_KIND_MEMCPY;
    m.copyKind = kind;
    m.bytes = 4096;
    m.start = start;
    m.end = start + 700;
    m.streamId = 7;
    m.correlationId = corr;
    memset(b + off, 0xCD, record_size(m.kind));
    memcpy(b + off, &m, sizeof m);
    return off + record_size(m.kind);
}

static size_t put_api(uint8_t *b, size_t off, uint32_t cbid, uint64_t start, uint32_t corr)
{
    sp_cupti_api a;
    memset(&a, 0, sizeof a);
    a.kind = CUPTI_ACTIVITY_KIND_RUNTIME;
    a.cbid = cbid;
    a.start = start;
    a.end = start + 300;
    a.processId = 4242;
    a.threadId = 77;
    a.correlationId = corr;
    memcpy(b + off, &a, sizeof a);
    return off + record_size(a.kind);
}

FAKE_API CUptiResult cuptiActivityFlushAll(uint32_t flag)
{
    (void)flag;
    fake_cupti_flushes++;
    const char *lim = getenv("FAKE_CUPTI_BATCHES");
    int max = lim ? atoi(lim) : 1000;
    /* What was enabled at any time since the last flush has activity to
     * hand back, even if it was disabled since (like CUPTI's buffers). */
    int kern = pending[CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL];
    int copy = pending[CUPTI_ACTIVITY_KIND_MEMCPY];
    int set = pending[CUPTI_ACTIVITY_KIND_MEMSET];
    int api = pending[CUPTI_ACTIVITY_KIND_RUNTIME];
    memcpy(pending, fake_cupti_enabled, sizeof pending);
    if (!on_request || !on_complete || fake_cupti_batches >= max || !(kern || copy || set || api))
        return CUPTI_SUCCESS;
    fake_cupti_batches++;
    uint8_t *b = NULL;
    size_t size = 0, maxrec = 0;
    on_request(&b, &size, &maxrec);
    if (!b || size < 4096)
        return CUPTI_SUCCESS;
    uint64_t t = fake_now() - 1000000; /* activity of the last millisecond */
    size_t off = 0;
    if (kern) {
        off = put_kernel(b, off, "_Z6matmulPfS_S_i", t, 1000, 0, 7, 1);
        off = put_kernel(b, off, "_Z6matmulPfS_S_i", t + 10000, 2000, 0, 7, 2);
        off = put_kernel(b, off, "_Z6matmulPfS_S_i", t + 20000, 3000, 0, 7, 3);
        off = put_kernel(b, off, "softmax_kernel", t + 1000, 500, 1, 8, 4);
        off = put_kernel(b, off, "softmax_kernel", t + 5000, 1500, 1, 8, 5);
        off = put_kernel(b, off, "ncclDevKernel_AllReduce_Sum_f32", t + 30000, 4000, 0, 9, 6);
        off = put_kernel(b, off, "untimed_kernel", t + 40000, 0, 0, 7, 11);
    }
    if (copy) {
        off = put_copy(b, off, CUPTI_ACTIVITY_MEMCPY_KIND_HTOD, t + 50000, 7);
        off = put_copy(b, off, CUPTI_ACTIVITY_MEMCPY_KIND_DTOH, t + 60000, 8);
    }
    if (set) {
        sp_cupti_memset m;
        memset(&m, 0, sizeof m);
        m.kind = CUPTI_ACTIVITY_KIND_MEMSET;
        m.bytes = 1024;
        m.start = t + 70000;
        m.end = t + 70400;
        m.streamId = 7;
        m.correlationId = 9;
        memset(b + off, 0xEF, record_size(m.kind));
        memcpy(b + off, &m, sizeof m);
        off += record_size(m.kind);
    }
    if (api) {
        for (uint32_t i = 1; i <= 6; i++)
            off = put_api(b, off, 211, t - 5000 + i * 100, i);
        off = put_api(b, off, 41, t + 49000, 7);
        off = put_api(b, off, 41, t + 59000, 8);
        off = put_api(b, off, 999, t + 80000, 10);
    }
    on_complete(NULL, 0, b, size, off);
    return CUPTI_SUCCESS;
}
