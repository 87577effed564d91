/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_cupti_abi.c — lib/samplers/cupti_abi.h (declared by hand from the public
 * documentation) against NVIDIA's own CUPTI header, where one is installed:
 * every field offset the activity parser reads, in the oldest and newest
 * record versions, and every constant it uses. Registered only when CMake
 * finds cupti.h (CUDA toolkit); the build never needs it otherwise.
 */
#include <stddef.h>
#include <stdio.h>

#include "check.h"
#include "cupti_abi.h"
#include "cupti_abi_table.h"

#define OFF(t, f) (long)offsetof(t, f)

int main(void)
{
    long ours[CUPTI_ABI_N] = {
        OFF(sp_cupti_kernel, start), OFF(sp_cupti_kernel, end), OFF(sp_cupti_kernel, deviceId),
        OFF(sp_cupti_kernel, streamId), OFF(sp_cupti_kernel, correlationId),
        OFF(sp_cupti_kernel, name),
        OFF(sp_cupti_kernel, start), OFF(sp_cupti_kernel, end), OFF(sp_cupti_kernel, deviceId),
        OFF(sp_cupti_kernel, streamId), OFF(sp_cupti_kernel, correlationId),
        OFF(sp_cupti_kernel, name),
        OFF(sp_cupti_memcpy, copyKind), OFF(sp_cupti_memcpy, start), OFF(sp_cupti_memcpy, end),
        OFF(sp_cupti_memcpy, deviceId), OFF(sp_cupti_memcpy, streamId),
        OFF(sp_cupti_memcpy, correlationId),
        OFF(sp_cupti_memset, start), OFF(sp_cupti_memset, end), OFF(sp_cupti_memset, deviceId),
        OFF(sp_cupti_memset, streamId), OFF(sp_cupti_memset, correlationId),
        OFF(sp_cupti_api, cbid), OFF(sp_cupti_api, start), OFF(sp_cupti_api, end),
        OFF(sp_cupti_api, processId), OFF(sp_cupti_api, threadId),
        OFF(sp_cupti_api, correlationId),
        CUPTI_ACTIVITY_KIND_MEMCPY, CUPTI_ACTIVITY_KIND_MEMSET, CUPTI_ACTIVITY_KIND_KERNEL,
        CUPTI_ACTIVITY_KIND_RUNTIME, CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL,
        CUPTI_ACTIVITY_MEMCPY_KIND_HTOD, CUPTI_ACTIVITY_MEMCPY_KIND_DTOH,
        CUPTI_ACTIVITY_MEMCPY_KIND_DTOD, CUPTI_ACTIVITY_MEMCPY_KIND_HTOH,
        CUPTI_ACTIVITY_MEMCPY_KIND_PTOP, CUPTI_ACTIVITY_FLAG_FLUSH_FORCED, CUPTI_SUCCESS,
        CUPTI_ERROR_MAX_LIMIT_REACHED, CUPTI_CB_DOMAIN_RUNTIME_API,
    };
    long real[CUPTI_ABI_N];
    cupti_abi_real(real);
    for (int i = 0; i < CUPTI_ABI_N; i++) {
        if (ours[i] != real[i])
            fprintf(stderr, "%s: ours %ld, CUPTI's %ld\n", cupti_abi_names[i], ours[i], real[i]);
        CHECK_INT(ours[i], real[i]);
    }
    CHECK_DONE();
}
