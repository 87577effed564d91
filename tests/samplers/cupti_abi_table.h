/* SPDX-License-Identifier: Apache-2.0 */
/* cupti_abi_table.h — the list compared by test_cupti_abi: field offsets
 * and constants, in the same order on both sides. */
#ifndef CUPTI_ABI_TABLE_H
#define CUPTI_ABI_TABLE_H
#define CUPTI_ABI_N 43
static const char *const cupti_abi_names[CUPTI_ABI_N] = {
    "Kernel4.start", "Kernel4.end", "Kernel4.deviceId", "Kernel4.streamId",
    "Kernel4.correlationId", "Kernel4.name",
    "KernelN.start", "KernelN.end", "KernelN.deviceId", "KernelN.streamId",
    "KernelN.correlationId", "KernelN.name",
    "MemcpyN.copyKind", "MemcpyN.start", "MemcpyN.end", "MemcpyN.deviceId",
    "MemcpyN.streamId", "MemcpyN.correlationId",
    "MemsetN.start", "MemsetN.end", "MemsetN.deviceId", "MemsetN.streamId",
    "MemsetN.correlationId",
    "API.cbid", "API.start", "API.end", "API.processId", "API.threadId", "API.correlationId",
    "KIND_MEMCPY", "KIND_MEMSET", "KIND_KERNEL", "KIND_RUNTIME", "KIND_CONCURRENT_KERNEL",
    "MEMCPY_KIND_HTOD", "MEMCPY_KIND_DTOH", "MEMCPY_KIND_DTOD", "MEMCPY_KIND_HTOH",
    "MEMCPY_KIND_PTOP", "FLAG_FLUSH_FORCED", "SUCCESS", "ERROR_MAX_LIMIT_REACHED",
    "CB_DOMAIN_RUNTIME_API",
};
void cupti_abi_real(long *out);
#endif
