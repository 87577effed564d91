/* SPDX-License-Identifier: Apache-2.0 */
/*
 * sampler_cupti.c — device activity (kernels, copies, memsets, runtime API
 * calls) through CUPTI's activity API, into the activity store.
 *
 * Design. CUPTI is dlopen()ed at run time ($SERVPROF_CUPTI_LIB, else a
 * libcupti already loaded in the process, else the usual names and CUDA
 * install folders), so libservprof has no build-time CUDA dependency and a
 * machine without CUDA just logs one line. CUPTI only sees what the process
 * it is loaded into does on the GPU: in a process that never uses CUDA it
 * records nothing (one log line says so at start).
 *
 * CUPTI fills buffers we give it (buffer_requested) and hands them back
 * (buffer_completed) on its own thread, or on ours during
 * cuptiActivityFlushAll(). Each returned buffer becomes one transaction in
 * the store. The sampler thread flushes finished buffers every second, so
 * the store trails the GPU by about a second; stop and the ";N" limit force
 * a flush of partly filled buffers too.
 *
 *   acl_task_time 1 or 2, level L0: CONCURRENT_KERNEL, MEMCPY, MEMSET
 *   level L1 (or aclDataTypeConfig with ACL_PROF_ACL_API /
 *   ACL_PROF_RUNTIME_API):           + RUNTIME (CUDA runtime API calls)
 *   acl_task_time 2:                 api_filter / kernel_filter apply
 *
 * Timestamps. CUPTI stamps records with its own nanosecond clock (what
 * cuptiGetTimestamp() returns). At start we read CLOCK_REALTIME, then
 * cuptiGetTimestamp(), then CLOCK_REALTIME again, five times, and keep the
 * tightest pair: offset = midpoint(realtime) - cupti. Every stored time is
 * cupti_ns + offset, the epoch-ns scale of the raw store. The error is half
 * the tightest window (well under a microsecond); the offset is fixed for the
 * session, so a wall-clock step during a session does not tear it apart.
 *
 * Kernel names are demangled with __cxa_demangle when the process has the
 * C++ runtime loaded (every CUDA program built with nvcc does), through a
 * small cache because the same few kernels repeat millions of times.
 * Kernels whose name contains "nccl" are collectives: they also go into
 * table Communication.
 *
 * Locking: `mu` guards the store, the counters and the name caches; it is
 * never held while calling into CUPTI, because cuptiActivityFlushAll() calls
 * buffer_completed() on the calling thread.
 */
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cupti_abi.h"
#include "sampler.h"

#define BUFFER_BYTES (4u << 20)
#define NAME_CACHE 512
#define API_NAMES 2048

typedef char *(*cxa_demangle_fn)(const char *, char *, size_t *, int *);

static struct {
    /* Loaded once per process, never unloaded (set on the sampler thread
     * before any callback can run). */
    void *lib;
    int registered;
    cuptiActivityRegisterCallbacks_fn register_cbs;
    cuptiActivityEnable_fn enable;
    cuptiActivityDisable_fn disable;
    cuptiActivityFlushAll_fn flush_all;
    cuptiActivityGetNextRecord_fn next_record;
    cuptiActivityGetNumDroppedRecords_fn num_dropped;
    cuptiGetTimestamp_fn timestamp;
    cuptiGetResultString_fn result_string;
    cuptiGetCallbackName_fn callback_name;
    cxa_demangle_fn demangle;

    /* Sampler thread only. */
    int kinds[4], nkinds;   /* enabled now */
    int seconds;

    pthread_mutex_t mu;
    /* Under mu. */
    int collecting;         /* records go to the store */
    sp_activity_store *store;   /* opened at the first buffer of a session */
    int store_failed;           /* it could not be: said once, not per buffer */
    char path[SP_PATH_MAX];
    int filters_on;
    char api_filter[SP_FILTER_LEN], kernel_filter[SP_FILTER_LEN];
    int64_t offset_ns;
    sp_cupti_stats stats;
    char *api_name[API_NAMES];
    struct { char *mangled, *shown; } names[NAME_CACHE];
} cu = {.mu = PTHREAD_MUTEX_INITIALIZER};

static const char *result_text(CUptiResult rc)
{
    const char *s = NULL;
    if (cu.result_string && cu.result_string(rc, &s) == CUPTI_SUCCESS && s)
        return s;
    return "unknown CUPTI error";
}

/* ------------------------------------------------------------------ */
/* Names and filters                                                    */
/* ------------------------------------------------------------------ */

int sp_name_filter_pass(const char *filter, const char *name)
{
    if (!filter || !*filter)
        return 1;
    if (!name)
        return 0;
    for (const char *p = filter; *p;) {
        const char *semi = strchr(p, ';');
        size_t len = semi ? (size_t)(semi - p) : strlen(p);
        /* trim spaces around each item: "a; b" means "a" and "b" */
        const char *s = p;
        while (len && *s == ' ')
            s++, len--;
        while (len && s[len - 1] == ' ')
            len--;
        if (len) {
            for (const char *h = name; *h; h++)
                if (!strncmp(h, s, len))
                    return 1;
        }
        if (!semi)
            break;
        p = semi + 1;
    }
    return 0;
}

/* "cudaLaunchKernel_v7000" -> "cudaLaunchKernel". Under mu. */
static const char *api_name(uint32_t cbid, char *tmp, size_t tmplen)
{
    if (cbid < API_NAMES && cu.api_name[cbid])
        return cu.api_name[cbid];
    const char *raw = NULL;
    if (!cu.callback_name ||
        cu.callback_name(CUPTI_CB_DOMAIN_RUNTIME_API, cbid, &raw) != CUPTI_SUCCESS || !raw) {
        snprintf(tmp, tmplen, "runtime_api_%u", cbid);
        return tmp;
    }
    snprintf(tmp, tmplen, "%s", raw);
    char *v = strrchr(tmp, '_');
    if (v && v[1] == 'v' && v[2] >= '0' && v[2] <= '9' && strspn(v + 2, "0123456789") == strlen(v + 2))
        *v = '\0';
    if (cbid < API_NAMES && (cu.api_name[cbid] = strdup(tmp)))
        return cu.api_name[cbid];
    return tmp;
}

/* Demangled kernel name, cached; the raw name when it is not a C++ name or
 * no demangler is loaded. Under mu. */
static const char *kernel_name(const char *raw)
{
    if (!raw)
        return "";
    if (!cu.demangle || raw[0] != '_' || raw[1] != 'Z')
        return raw;
    uint32_t h = 2166136261u;
    for (const char *p = raw; *p; p++)
        h = (h ^ (uint8_t)*p) * 16777619u;
    int slot = (int)(h % NAME_CACHE);
    if (cu.names[slot].mangled && !strcmp(cu.names[slot].mangled, raw))
        return cu.names[slot].shown;
    int status = 0;
    char *shown = cu.demangle(raw, NULL, NULL, &status);
    char *copy = strdup(raw);
    if (status != 0 || !shown || !copy) {
        free(shown);
        free(copy);
        return raw;
    }
    free(cu.names[slot].mangled);
    free(cu.names[slot].shown);
    cu.names[slot].mangled = copy;
    cu.names[slot].shown = shown;
    return shown;
}

/* ------------------------------------------------------------------ */
/* Records                                                              */
/* ------------------------------------------------------------------ */

static const char *copy_type(uint8_t kind)
{
    switch (kind) {
    case CUPTI_ACTIVITY_MEMCPY_KIND_HTOD: return "MEMCPY_HtoD";
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOH: return "MEMCPY_DtoH";
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOD: return "MEMCPY_DtoD";
    case CUPTI_ACTIVITY_MEMCPY_KIND_HTOH: return "MEMCPY_HtoH";
    case CUPTI_ACTIVITY_MEMCPY_KIND_PTOP: return "MEMCPY_PtoP";
    case CUPTI_ACTIVITY_MEMCPY_KIND_HTOA: return "MEMCPY_HtoA";
    case CUPTI_ACTIVITY_MEMCPY_KIND_ATOH: return "MEMCPY_AtoH";
    case CUPTI_ACTIVITY_MEMCPY_KIND_ATOA: return "MEMCPY_AtoA";
    case CUPTI_ACTIVITY_MEMCPY_KIND_ATOD: return "MEMCPY_AtoD";
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOA: return "MEMCPY_DtoA";
    default: return "MEMCPY";
    }
}

/* CUPTI leaves end (or start) 0 for an activity it could not time;
 * such a record would put a bogus bar at 1970: drop it. */
static int times_ok(uint64_t start, uint64_t end)
{
    return start != 0 && end >= start;
}

/* One record into the store. Under mu, inside a transaction. */
static void store_record(const CUpti_Activity *rec)
{
    sp_act_kernel k;
    switch (rec->kind) {
    case CUPTI_ACTIVITY_KIND_KERNEL:
    case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL: {
        const sp_cupti_kernel *r = (const sp_cupti_kernel *)rec;
        if (!times_ok(r->start, r->end))
            break;
        const char *name = kernel_name(r->name);
        if (cu.filters_on && !sp_name_filter_pass(cu.kernel_filter, name) &&
            !sp_name_filter_pass(cu.kernel_filter, r->name)) {
            cu.stats.filtered++;
            break;
        }
        k = (sp_act_kernel){"KERNEL", name, (int64_t)r->start + cu.offset_ns,
                            (int64_t)r->end + cu.offset_ns, r->deviceId, r->streamId,
                            r->correlationId};
        if (sp_activity_store_kernel(cu.store, &k) == 0)
            cu.stats.kernels++;
        if (strstr(name, "nccl") && sp_activity_store_comm(cu.store, &k) == 0)
            cu.stats.comms++;
        break;
    }
    case CUPTI_ACTIVITY_KIND_MEMCPY: {
        const sp_cupti_memcpy *r = (const sp_cupti_memcpy *)rec;
        if (!times_ok(r->start, r->end))
            break;
        const char *type = copy_type(r->copyKind);
        k = (sp_act_kernel){type, type, (int64_t)r->start + cu.offset_ns,
                            (int64_t)r->end + cu.offset_ns, r->deviceId, r->streamId,
                            r->correlationId};
        if (sp_activity_store_kernel(cu.store, &k) == 0)
            cu.stats.copies++;
        break;
    }
    case CUPTI_ACTIVITY_KIND_MEMSET: {
        const sp_cupti_memset *r = (const sp_cupti_memset *)rec;
        if (!times_ok(r->start, r->end))
            break;
        k = (sp_act_kernel){"MEMSET", "MEMSET", (int64_t)r->start + cu.offset_ns,
                            (int64_t)r->end + cu.offset_ns, r->deviceId, r->streamId,
                            r->correlationId};
        if (sp_activity_store_kernel(cu.store, &k) == 0)
            cu.stats.copies++;
        break;
    }
    case CUPTI_ACTIVITY_KIND_RUNTIME: {
        const sp_cupti_api *r = (const sp_cupti_api *)rec;
        if (!times_ok(r->start, r->end))
            break;
        char tmp[128];
        const char *name = api_name(r->cbid, tmp, sizeof tmp);
        if (cu.filters_on && !sp_name_filter_pass(cu.api_filter, name)) {
            cu.stats.filtered++;
            break;
        }
        sp_act_api a = {name, (int64_t)r->start + cu.offset_ns, (int64_t)r->end + cu.offset_ns,
                        r->processId, r->threadId, r->correlationId};
        if (sp_activity_store_api(cu.store, &a) == 0)
            cu.stats.apis++;
        break;
    }
    default:
        break; /* kinds we did not ask for (another CUPTI user's) */
    }
}

/* ------------------------------------------------------------------ */
/* CUPTI callbacks (CUPTI's thread, or ours inside FlushAll)            */
/* ------------------------------------------------------------------ */

static void buffer_requested(uint8_t **buffer, size_t *size, size_t *max_records)
{
    /* CUPTI wants 8-byte alignment; malloc gives 16. On failure CUPTI
     * drops records and counts them, which we report. */
    *buffer = malloc(BUFFER_BYTES);
    *size = *buffer ? BUFFER_BYTES : 0;
    *max_records = 0;
}

static void buffer_completed(CUcontext ctx, uint32_t stream, uint8_t *buffer, size_t size,
                             size_t valid)
{
    (void)size;
    pthread_mutex_lock(&cu.mu);
    size_t dropped = 0;
    if (cu.num_dropped && cu.num_dropped(ctx, stream, &dropped) == CUPTI_SUCCESS)
        cu.stats.dropped += dropped;
    if (buffer && valid > 0) {
        if (cu.collecting && !cu.store && !cu.store_failed) {
            cu.store = sp_activity_store_open(cu.path); /* logs why when it fails */
            cu.store_failed = !cu.store;
        }
        if (!cu.collecting || !cu.store) {
            cu.stats.late++;
        } else if (sp_activity_store_begin(cu.store) == 0) {
            CUpti_Activity *rec = NULL;
            CUptiResult rc;
            while ((rc = cu.next_record(buffer, valid, &rec)) == CUPTI_SUCCESS)
                store_record(rec);
            sp_activity_store_commit(cu.store);
            if (rc != CUPTI_ERROR_MAX_LIMIT_REACHED)
                sp_log(SP_LOG_WARNING, "device activity: a CUPTI buffer ended early: %s",
                       result_text(rc));
        }
    }
    pthread_mutex_unlock(&cu.mu);
    free(buffer);
}

/* ------------------------------------------------------------------ */
/* Loading                                                              */
/* ------------------------------------------------------------------ */

static void *open_cupti(char *tried, size_t len)
{
    const char *env = getenv("SERVPROF_CUPTI_LIB");
    if (env && *env) {
        void *h = dlopen(env, RTLD_NOW | RTLD_LOCAL);
        if (!h)
            snprintf(tried, len, "SERVPROF_CUPTI_LIB=%s: %s", env, dlerror());
        return h;
    }
    static const char *const names[] = {"libcupti.so", "libcupti.so.13", "libcupti.so.12",
                                        "libcupti.so.11.8"};
    /* One the program (torch ...) already loaded wins: two CUPTIs in one
     * process would not see each other's state. */
    for (size_t i = 0; i < sizeof names / sizeof *names; i++) {
        void *h = dlopen(names[i], RTLD_NOW | RTLD_NOLOAD);
        if (h)
            return h;
    }
    for (size_t i = 0; i < sizeof names / sizeof *names; i++) {
        void *h = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
        if (h)
            return h;
    }
    char path[SP_PATH_MAX];
    const char *homes[] = {getenv("CUDA_HOME"), getenv("CUDA_PATH"), "/usr/local/cuda"};
    for (size_t i = 0; i < 3; i++) {
        if (!homes[i] || !*homes[i])
            continue;
        snprintf(path, sizeof path, "%s/extras/CUPTI/lib64/libcupti.so", homes[i]);
        void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
        if (h)
            return h;
    }
    snprintf(tried, len, "no libcupti.so on the library path nor in $CUDA_HOME, $CUDA_PATH, "
             "/usr/local/cuda (extras/CUPTI/lib64); set SERVPROF_CUPTI_LIB to its path");
    return NULL;
}

static int load_symbols(void)
{
    struct { void **slot; const char *name; } want[] = {
        {(void **)&cu.register_cbs, "cuptiActivityRegisterCallbacks"},
        {(void **)&cu.enable, "cuptiActivityEnable"},
        {(void **)&cu.disable, "cuptiActivityDisable"},
        {(void **)&cu.flush_all, "cuptiActivityFlushAll"},
        {(void **)&cu.next_record, "cuptiActivityGetNextRecord"},
        {(void **)&cu.timestamp, "cuptiGetTimestamp"},
    };
    for (size_t i = 0; i < sizeof want / sizeof *want; i++) {
        *want[i].slot = dlsym(cu.lib, want[i].name);
        if (!*want[i].slot) {
            sp_log(SP_LOG_WARNING, "device activity: CUPTI has no %s; device activity is not "
                   "collected, everything else goes on", want[i].name);
            return -1;
        }
    }
    cu.num_dropped = (cuptiActivityGetNumDroppedRecords_fn)dlsym(cu.lib,
                                                                "cuptiActivityGetNumDroppedRecords");
    cu.result_string = (cuptiGetResultString_fn)dlsym(cu.lib, "cuptiGetResultString");
    cu.callback_name = (cuptiGetCallbackName_fn)dlsym(cu.lib, "cuptiGetCallbackName");
    cu.demangle = (cxa_demangle_fn)dlsym(RTLD_DEFAULT, "__cxa_demangle");
    return 0;
}

/* offset = realtime - cupti clock, from the tightest of five readings. */
static int64_t clock_offset(void)
{
    int64_t best_window = INT64_MAX, offset = 0;
    for (int i = 0; i < 5; i++) {
        uint64_t t = 0;
        int64_t r0 = sp_now_realtime_ns();
        CUptiResult rc = cu.timestamp(&t);
        int64_t r1 = sp_now_realtime_ns();
        if (rc != CUPTI_SUCCESS)
            continue;
        if (r1 - r0 < best_window) {
            best_window = r1 - r0;
            offset = r0 + (r1 - r0) / 2 - (int64_t)t;
        }
    }
    return offset;
}

/* aclDataTypeConfig names with a CUDA counterpart (docs/samplers.md):
 * the API ones add runtime API calls; the task-time and HCCL ones are what
 * is collected anyway (kernels, copies; NCCL kernels also in
 * Communication). Returns nonzero when API calls are asked for, and names
 * in `ignored` those that have no counterpart here. */
static int mapped_from_ascend(const char *list, char *ignored, size_t len)
{
    static const char *const api[] = {"ACL_PROF_ACL_API", "ACL_PROF_RUNTIME_API", NULL};
    static const char *const implied[] = {"ACL_PROF_TASK_TIME", "ACL_PROF_TASK_TIME_L0",
                                          "ACL_PROF_HCCL_TRACE", NULL};
    int want_api = 0;
    ignored[0] = '\0';
    for (const char *p = list; *p;) {
        size_t n = strcspn(p, ",");
        char name[64];
        snprintf(name, sizeof name, "%.*s", (int)(n < 63 ? n : 63), p);
        char *t = name;
        while (*t == ' ')
            t++;
        for (size_t e = strlen(t); e && t[e - 1] == ' ';)
            t[--e] = '\0';
        int known = 0;
        for (int i = 0; api[i]; i++)
            if (!strcmp(t, api[i]))
                known = want_api = 1;
        for (int i = 0; implied[i]; i++)
            if (!strcmp(t, implied[i]))
                known = 1;
        if (!known && *t) {
            size_t used = strlen(ignored);
            snprintf(ignored + used, len - used, "%s%s", used ? ", " : "", t);
        }
        p += n;
        if (*p == ',')
            p++;
    }
    return want_api;
}

/* One warning naming the Ascend-only settings that change nothing here. */
static void warn_unmapped(const sp_config *c, const char *ignored)
{
    if (*ignored)
        sp_log(SP_LOG_WARNING, "aclDataTypeConfig: %s %s no CUDA counterpart in servprof and %s "
               "ignored (see docs/samplers.md)", ignored, strchr(ignored, ',') ? "have" : "has",
               strchr(ignored, ',') ? "are" : "is");
    const char *m = c->aclprof_aicore_metrics;
    if (*m && strcmp(m, "ACL_AICORE_PIPE_UTILIZATION") && strcmp(m, "ACL_AICORE_NONE"))
        sp_log(SP_LOG_WARNING, "aclprofAicoreMetrics: %s (Ascend AI Core counters) has no CUDA "
               "counterpart in servprof (CUPTI metrics are not collected); ignored", m);
}

/* ------------------------------------------------------------------ */
/* Start, flush, limit, stop                                            */
/* ------------------------------------------------------------------ */

int sp_cupti_start(const sp_session *s, const sp_config *c)
{
    if (!cu.lib) {
        char why[SP_PATH_MAX + 128] = "";
        cu.lib = open_cupti(why, sizeof why);
        if (!cu.lib) {
            sp_log(SP_LOG_WARNING, "device activity (acl_task_time=%d): CUPTI not available "
                   "(%s); no kernels or API calls are recorded, everything else goes on",
                   c->acl_task_time, why);
            return -1;
        }
        if (load_symbols() < 0) {
            cu.lib = NULL; /* leave it loaded: unloading CUPTI is not safe */
            return -1;
        }
    }
    if (!cu.registered) {
        CUptiResult rc = cu.register_cbs(buffer_requested, buffer_completed);
        if (rc != CUPTI_SUCCESS) {
            sp_log(SP_LOG_WARNING, "device activity: cuptiActivityRegisterCallbacks failed: %s; "
                   "no device activity, everything else goes on", result_text(rc));
            return -1;
        }
        cu.registered = 1;
    }
    char ignored[SP_FILTER_LEN];
    /* evaluated apart so the ignored names are always collected */
    int api_mapped = mapped_from_ascend(c->acl_data_type_config, ignored, sizeof ignored);
    int want_api = c->acl_prof_task_time_level >= 1 || api_mapped;

    pthread_mutex_lock(&cu.mu);
    snprintf(cu.path, sizeof cu.path, "%s", s->activity_path);
    cu.store_failed = 0;
    cu.filters_on = c->acl_task_time == 2;
    snprintf(cu.api_filter, sizeof cu.api_filter, "%s", c->api_filter);
    snprintf(cu.kernel_filter, sizeof cu.kernel_filter, "%s", c->kernel_filter);
    memset(&cu.stats, 0, sizeof cu.stats);
    pthread_mutex_unlock(&cu.mu);

    int64_t offset = clock_offset();
    pthread_mutex_lock(&cu.mu);
    cu.offset_ns = offset;
    cu.stats.clock_offset_ns = offset;
    cu.collecting = 1;
    pthread_mutex_unlock(&cu.mu);

    static const int kinds[] = {CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL,
                                CUPTI_ACTIVITY_KIND_MEMCPY, CUPTI_ACTIVITY_KIND_MEMSET,
                                CUPTI_ACTIVITY_KIND_RUNTIME};
    static const char *const kind_names[] = {"kernels", "copies", "memsets",
                                             "runtime API calls"};
    int nwant = want_api ? 4 : 3;
    char failed[256] = "";
    CUptiResult last = CUPTI_SUCCESS;
    cu.nkinds = 0;
    for (int i = 0; i < nwant; i++) {
        CUptiResult rc = cu.enable(kinds[i]);
        if (rc == CUPTI_SUCCESS) {
            cu.kinds[cu.nkinds++] = kinds[i];
            continue;
        }
        last = rc;
        size_t len = strlen(failed);
        snprintf(failed + len, sizeof failed - len, "%s%s", len ? ", " : "", kind_names[i]);
    }
    if (cu.nkinds == 0) {
        /* Typically CUDA without a driver: CUPTI loads but cannot trace. */
        sp_log(SP_LOG_WARNING, "device activity: CUPTI cannot trace %s (%s; no NVIDIA driver or "
               "GPU?); no device activity, everything else goes on", failed, result_text(last));
        pthread_mutex_lock(&cu.mu);
        cu.collecting = 0;
        pthread_mutex_unlock(&cu.mu);
        return -1;
    }
    if (failed[0])
        sp_log(SP_LOG_WARNING, "device activity: CUPTI cannot trace %s (%s); the rest is "
               "collected", failed, result_text(last));
    warn_unmapped(c, ignored);
    cu.seconds = c->acl_prof_task_time_seconds;
    void *cuda = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_NOLOAD);
    if (cuda)
        dlclose(cuda);
    sp_log(SP_LOG_INFO, "device activity: CUPTI collecting %s%s%s into %s%s",
           want_api ? "kernels, copies and runtime API calls" : "kernels and copies",
           cu.filters_on && (c->api_filter[0] || c->kernel_filter[0]) ? " (filtered)" : "",
           c->acl_prof_task_time_seconds > 0 ? " for a limited time" : "", s->activity_path,
           cuda ? "" : "; CUDA is not loaded in this process (yet): CUPTI only records what "
                       "this process runs on the GPU");
    return 0;
}

void sp_cupti_flush(void)
{
    if (cu.nkinds)
        cu.flush_all(0);
}

static void disable_all(void)
{
    for (int i = 0; i < cu.nkinds; i++)
        cu.disable(cu.kinds[i]);
    cu.nkinds = 0;
    cu.flush_all(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
}

void sp_cupti_limit(void)
{
    if (!cu.nkinds)
        return;
    disable_all();
    sp_log(SP_LOG_INFO, "device activity: stopped after %d s (acl_prof_task_time_level); the "
           "rest of the collection goes on", cu.seconds);
}

void sp_cupti_stop(void)
{
    if (!cu.lib)
        return;
    if (cu.nkinds)
        disable_all();
    pthread_mutex_lock(&cu.mu);
    cu.collecting = 0;
    sp_activity_store_close(cu.store);
    cu.store = NULL;
    sp_cupti_stats st = cu.stats;
    pthread_mutex_unlock(&cu.mu);
    sp_log(SP_LOG_INFO, "device activity: %llu kernels, %llu copies/sets, %llu API calls "
           "recorded%s", (unsigned long long)st.kernels, (unsigned long long)st.copies,
           (unsigned long long)st.apis,
           st.kernels + st.copies + st.apis == 0 ? " (nothing: does this process use CUDA?)" : "");
    if (st.dropped)
        sp_log(SP_LOG_WARNING, "device activity: CUPTI dropped %llu records (buffers full)",
               (unsigned long long)st.dropped);
}

void sp_cupti_get_stats(sp_cupti_stats *out)
{
    pthread_mutex_lock(&cu.mu);
    *out = cu.stats;
    pthread_mutex_unlock(&cu.mu);
}

void sp_cupti_atfork_child(void)
{
    /* CUPTI does not follow a fork: forget everything, including the store
     * (its SQLite handle belongs to the parent), without touching locks. */
    pthread_mutex_init(&cu.mu, NULL);
    cu.collecting = 0;
    cu.store = NULL;
    cu.nkinds = 0;
    cu.registered = 0;
}
