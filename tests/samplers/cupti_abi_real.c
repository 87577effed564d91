/* SPDX-License-Identifier: Apache-2.0 */
/*
 * cupti_abi_real.c — half of test_cupti_abi: the offsets and constants of
 * NVIDIA's own CUPTI header (built only where CMake finds cupti.h). Kept in
 * its own file because lib/samplers/cupti_abi.h declares the same names.
 */
#include <stddef.h>
#include <cupti.h>

#include "cupti_abi_table.h"

#define OFF(t, f) (long)offsetof(t, f)

void cupti_abi_real(long *out)
{
    long v[] = {
        OFF(CUpti_ActivityKernel4, start), OFF(CUpti_ActivityKernel4, end),
        OFF(CUpti_ActivityKernel4, deviceId), OFF(CUpti_ActivityKernel4, streamId),
        OFF(CUpti_ActivityKernel4, correlationId), OFF(CUpti_ActivityKernel4, name),
        /* the newest kernel record: same prefix */
        OFF(CUPTI_ABI_NEWEST_KERNEL, start), OFF(CUPTI_ABI_NEWEST_KERNEL, end),
        OFF(CUPTI_ABI_NEWEST_KERNEL, deviceId), OFF(CUPTI_ABI_NEWEST_KERNEL, streamId),
        OFF(CUPTI_ABI_NEWEST_KERNEL, correlationId), OFF(CUPTI_ABI_NEWEST_KERNEL, name),
        OFF(CUPTI_ABI_NEWEST_MEMCPY, copyKind), OFF(CUPTI_ABI_NEWEST_MEMCPY, start),
        OFF(CUPTI_ABI_NEWEST_MEMCPY, end), OFF(CUPTI_ABI_NEWEST_MEMCPY, deviceId),
        OFF(CUPTI_ABI_NEWEST_MEMCPY, streamId), OFF(CUPTI_ABI_NEWEST_MEMCPY, correlationId),
        OFF(CUPTI_ABI_NEWEST_MEMSET, start), OFF(CUPTI_ABI_NEWEST_MEMSET, end),
        OFF(CUPTI_ABI_NEWEST_MEMSET, deviceId), OFF(CUPTI_ABI_NEWEST_MEMSET, streamId),
        OFF(CUPTI_ABI_NEWEST_MEMSET, correlationId),
        OFF(CUpti_ActivityAPI, cbid), OFF(CUpti_ActivityAPI, start), OFF(CUpti_ActivityAPI, end),
        OFF(CUpti_ActivityAPI, processId), OFF(CUpti_ActivityAPI, threadId),
        OFF(CUpti_ActivityAPI, correlationId),
        CUPTI_ACTIVITY_KIND_MEMCPY, CUPTI_ACTIVITY_KIND_MEMSET, CUPTI_ACTIVITY_KIND_KERNEL,
        CUPTI_ACTIVITY_KIND_RUNTIME, CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL,
        CUPTI_ACTIVITY_MEMCPY_KIND_HTOD, CUPTI_ACTIVITY_MEMCPY_KIND_DTOH,
        CUPTI_ACTIVITY_MEMCPY_KIND_DTOD, CUPTI_ACTIVITY_MEMCPY_KIND_HTOH,
        CUPTI_ACTIVITY_MEMCPY_KIND_PTOP, CUPTI_ACTIVITY_FLAG_FLUSH_FORCED, CUPTI_SUCCESS,
        CUPTI_ERROR_MAX_LIMIT_REACHED, CUPTI_CB_DOMAIN_RUNTIME_API,
    };
    for (size_t i = 0; i < sizeof v / sizeof *v && i < CUPTI_ABI_N; i++)
        out[i] = v[i];
}
