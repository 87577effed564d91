/* SPDX-License-Identifier: Apache-2.0 */
/*
 * cupti_abi.h — the few CUPTI types, constants and record layouts servprof
 * uses, declared from NVIDIA's public CUPTI reference (cupti_activity.h,
 * cupti_result.h, cupti_callbacks.h); no CUDA headers are needed to build.
 * CUPTI is loaded with dlopen() at run time; the test double
 * tests/samplers/fake_cupti.c implements the same symbols.
 *
 * Record layouts. CUPTI hands out the newest version of each record its
 * release knows (CUpti_ActivityKernel4 ... Kernel9, Memcpy ... Memcpy6,
 * Memset ... Memset4). Versions only ever append fields, so the prefix
 * declared here — every field up to the ones we read — is the same in all
 * of them; nothing past the prefix is read. Records are packed and 8-byte
 * aligned (PACKED_ALIGNMENT in the real header).
 */
#ifndef SERVPROF_CUPTI_ABI_H
#define SERVPROF_CUPTI_ABI_H

#include <stddef.h>
#include <stdint.h>

typedef int CUptiResult;
#define CUPTI_SUCCESS 0
#define CUPTI_ERROR_INVALID_PARAMETER 1
#define CUPTI_ERROR_MAX_LIMIT_REACHED 12
#define CUPTI_ERROR_NOT_INITIALIZED 15
#define CUPTI_ERROR_UNKNOWN 999

typedef int CUpti_ActivityKind;
#define CUPTI_ACTIVITY_KIND_MEMCPY 1
#define CUPTI_ACTIVITY_KIND_MEMSET 2
#define CUPTI_ACTIVITY_KIND_KERNEL 3
#define CUPTI_ACTIVITY_KIND_DRIVER 4
#define CUPTI_ACTIVITY_KIND_RUNTIME 5
#define CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL 10

/* CUpti_ActivityMemcpyKind */
#define CUPTI_ACTIVITY_MEMCPY_KIND_HTOD 1
#define CUPTI_ACTIVITY_MEMCPY_KIND_DTOH 2
#define CUPTI_ACTIVITY_MEMCPY_KIND_HTOA 3
#define CUPTI_ACTIVITY_MEMCPY_KIND_ATOH 4
#define CUPTI_ACTIVITY_MEMCPY_KIND_ATOA 5
#define CUPTI_ACTIVITY_MEMCPY_KIND_ATOD 6
#define CUPTI_ACTIVITY_MEMCPY_KIND_DTOA 7
#define CUPTI_ACTIVITY_MEMCPY_KIND_DTOD 8
#define CUPTI_ACTIVITY_MEMCPY_KIND_HTOH 9
#define CUPTI_ACTIVITY_MEMCPY_KIND_PTOP 10

/* CUpti_CallbackDomain */
#define CUPTI_CB_DOMAIN_DRIVER_API 1
#define CUPTI_CB_DOMAIN_RUNTIME_API 2

/* cuptiActivityFlushAll flag */
#define CUPTI_ACTIVITY_FLAG_FLUSH_FORCED 1

#define SP_CUPTI_PACKED __attribute__((__packed__)) __attribute__((aligned(8)))

typedef struct SP_CUPTI_PACKED {
    CUpti_ActivityKind kind;
} CUpti_Activity;

/* Prefix of CUpti_ActivityKernel4..9 (offsets in comments). */
typedef struct SP_CUPTI_PACKED {
    CUpti_ActivityKind kind;              /* 0 */
    uint8_t cacheConfig;                  /* 4 */
    uint8_t sharedMemoryConfig;           /* 5 */
    uint16_t registersPerThread;          /* 6 */
    int32_t partitionedGlobalCacheRequested; /* 8 */
    int32_t partitionedGlobalCacheExecuted;  /* 12 */
    uint64_t start;                       /* 16 */
    uint64_t end;                         /* 24 */
    uint64_t completed;                   /* 32 */
    uint32_t deviceId;                    /* 40 */
    uint32_t contextId;                   /* 44 */
    uint32_t streamId;                    /* 48 */
    int32_t gridX, gridY, gridZ;          /* 52 */
    int32_t blockX, blockY, blockZ;       /* 64 */
    int32_t staticSharedMemory;           /* 76 */
    int32_t dynamicSharedMemory;          /* 80 */
    uint32_t localMemoryPerThread;        /* 84 */
    uint32_t localMemoryTotal;            /* 88 */
    uint32_t correlationId;               /* 92 */
    int64_t gridId;                       /* 96 */
    const char *name;                     /* 104 */
    void *reserved0;                      /* 112 */
} sp_cupti_kernel;

/* Prefix of CUpti_ActivityMemcpy..Memcpy6. */
typedef struct SP_CUPTI_PACKED {
    CUpti_ActivityKind kind;   /* 0 */
    uint8_t copyKind;          /* 4 */
    uint8_t srcKind;           /* 5 */
    uint8_t dstKind;           /* 6 */
    uint8_t flags;             /* 7 */
    uint64_t bytes;            /* 8 */
    uint64_t start;            /* 16 */
    uint64_t end;              /* 24 */
    uint32_t deviceId;         /* 32 */
    uint32_t contextId;        /* 36 */
    uint32_t streamId;         /* 40 */
    uint32_t correlationId;    /* 44 */
    uint32_t runtimeCorrelationId; /* 48 */
    uint32_t pad;              /* 52 */
    void *reserved0;           /* 56 */
} sp_cupti_memcpy;

/* Prefix of CUpti_ActivityMemset..Memset4. */
typedef struct SP_CUPTI_PACKED {
    CUpti_ActivityKind kind;   /* 0 */
    uint32_t value;            /* 4 */
    uint64_t bytes;            /* 8 */
    uint64_t start;            /* 16 */
    uint64_t end;              /* 24 */
    uint32_t deviceId;         /* 32 */
    uint32_t contextId;        /* 36 */
    uint32_t streamId;         /* 40 */
    uint32_t correlationId;    /* 44 */
    uint16_t flags;            /* 48 */
    uint16_t memoryKind;       /* 50 */
    uint32_t pad;              /* 52 */
    void *reserved0;           /* 56 */
} sp_cupti_memset;

/* CUpti_ActivityAPI (runtime and driver API records). */
typedef struct SP_CUPTI_PACKED {
    CUpti_ActivityKind kind;   /* 0 */
    uint32_t cbid;             /* 4 */
    uint64_t start;            /* 8 */
    uint64_t end;              /* 16 */
    uint32_t processId;        /* 24 */
    uint32_t threadId;         /* 28 */
    uint32_t correlationId;    /* 32 */
    uint32_t returnValue;      /* 36 */
} sp_cupti_api;

_Static_assert(offsetof(sp_cupti_kernel, start) == 16, "kernel.start");
_Static_assert(offsetof(sp_cupti_kernel, deviceId) == 40, "kernel.deviceId");
_Static_assert(offsetof(sp_cupti_kernel, correlationId) == 92, "kernel.correlationId");
_Static_assert(offsetof(sp_cupti_kernel, name) == 104, "kernel.name");
_Static_assert(offsetof(sp_cupti_memcpy, correlationId) == 44, "memcpy.correlationId");
_Static_assert(offsetof(sp_cupti_memset, correlationId) == 44, "memset.correlationId");
_Static_assert(sizeof(sp_cupti_api) == 40, "api size");

typedef void *CUcontext;
typedef void (*CUpti_BuffersCallbackRequestFunc)(uint8_t **buffer, size_t *size,
                                                 size_t *maxNumRecords);
typedef void (*CUpti_BuffersCallbackCompleteFunc)(CUcontext ctx, uint32_t streamId,
                                                  uint8_t *buffer, size_t size,
                                                  size_t validSize);

typedef CUptiResult (*cuptiActivityRegisterCallbacks_fn)(CUpti_BuffersCallbackRequestFunc,
                                                        CUpti_BuffersCallbackCompleteFunc);
typedef CUptiResult (*cuptiActivityEnable_fn)(CUpti_ActivityKind);
typedef CUptiResult (*cuptiActivityDisable_fn)(CUpti_ActivityKind);
typedef CUptiResult (*cuptiActivityFlushAll_fn)(uint32_t flag);
typedef CUptiResult (*cuptiActivityGetNextRecord_fn)(uint8_t *buffer, size_t validBufferSizeBytes,
                                                    CUpti_Activity **record);
typedef CUptiResult (*cuptiActivityGetNumDroppedRecords_fn)(CUcontext ctx, uint32_t streamId,
                                                           size_t *dropped);
typedef CUptiResult (*cuptiGetTimestamp_fn)(uint64_t *timestamp);
typedef CUptiResult (*cuptiGetResultString_fn)(CUptiResult result, const char **str);
typedef CUptiResult (*cuptiGetCallbackName_fn)(int domain, uint32_t cbid, const char **name);

#endif
