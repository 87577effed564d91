/* SPDX-License-Identifier: Apache-2.0 */
/*
 * rec_meta.c — process-level Meta (servprof_meta) and the process name.
 *
 * Both outlive sessions: a program sets them once (often before collection
 * starts) and every store opened later must carry them. They live here
 * under one mutex with a generation counter; the writer thread copies them
 * into the store when it opens one and again whenever the generation moved.
 * Keys are few and set rarely, so a plain array is enough.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "rec_state.h"

typedef struct meta_kv {
    char *key;
    char *value;
} meta_kv;

static pthread_mutex_t meta_lock = PTHREAD_MUTEX_INITIALIZER;
static meta_kv *kvs;               /* under meta_lock */
static int nkvs, cap_kvs;          /* under meta_lock */
static unsigned meta_gen = 1;      /* under meta_lock; bumped by every change */
static char proc_name[256];        /* under meta_lock; "" = use /proc/self/comm */
static unsigned proc_name_gen = 1; /* under meta_lock */

static char *dup_cut(const char *s)
{
    size_t n = strnlen(s, SERVPROF_MAX_STRING + 1);
    if (n > SERVPROF_MAX_STRING) {
        n = SERVPROF_MAX_STRING;
        sp_count(&sp_rec_count.truncated, 1);
    }
    char *d = malloc(n + 1);
    if (d) {
        memcpy(d, s, n);
        d[n] = 0;
    }
    return d;
}

/* Sets key to v (taking ownership of k and v). Under meta_lock. */
static int put_locked(char *k, char *v)
{
    for (int i = 0; i < nkvs; i++) {
        if (!strcmp(kvs[i].key, k)) {
            free(kvs[i].value);
            free(k);
            kvs[i].value = v;
            return 0;
        }
    }
    if (nkvs == cap_kvs) {
        int ncap = cap_kvs ? cap_kvs * 2 : 16;
        meta_kv *n = realloc(kvs, (size_t)ncap * sizeof *n);
        if (!n) {
            free(k);
            free(v);
            return SERVPROF_ENOMEM;
        }
        kvs = n;
        cap_kvs = ncap;
    }
    kvs[nkvs].key = k;
    kvs[nkvs].value = v;
    nkvs++;
    return 0;
}

/* Misuse warnings (an empty key or name, called in a loop) are rate-limited
 * per call site as the drop warnings are: the first at once, then at most
 * one every MISUSE_LOG_NS, saying how many were not shown; every call is
 * counted in bad_input all the same. Thread-safe. */
#define MISUSE_LOG_NS 10000000000LL

void sp_warn_misuse(sp_misuse_limit *lim, const char *fn, const char *what, const char *then)
{
    sp_count(&sp_rec_count.bad_input, 1);
    int64_t now = sp_now_monotonic_ns(), next = atomic_load(&lim->next_ns);
    if (now < next || !atomic_compare_exchange_strong(&lim->next_ns, &next, now + MISUSE_LOG_NS)) {
        atomic_fetch_add(&lim->unshown, 1);
        return;
    }
    uint64_t unshown = atomic_exchange(&lim->unshown, 0);
    if (unshown)
        sp_log(SP_LOG_WARNING, "%s: %s; %s (and %llu more such calls since the last warning, "
               "counted in bad_input)", fn, what, then, (unsigned long long)unshown);
    else
        sp_log(SP_LOG_WARNING, "%s: %s; %s", fn, what, then);
}

int sp_recorder_meta(const char *key, const char *value)
{
    if (!key || !*key || !value) {
        static sp_misuse_limit lim;
        sp_warn_misuse(&lim, "servprof_meta", !key ? "key is NULL" : !*key ? "key is empty" :
                       "value is NULL", "nothing stored");
        return SERVPROF_EINVAL;
    }
    char *k = dup_cut(key), *v = dup_cut(value);
    if (!k || !v) {
        free(k);
        free(v);
        return SERVPROF_ENOMEM;
    }
    pthread_mutex_lock(&meta_lock);
    int rc = put_locked(k, v);
    meta_gen++;
    pthread_mutex_unlock(&meta_lock);
    return rc;
}

int sp_meta_each_if_changed(unsigned *gen, sp_meta_visit visit, void *ctx)
{
    int n = 0;
    pthread_mutex_lock(&meta_lock);
    if (*gen != meta_gen) {
        /* Visiting under the lock keeps the strings alive; the writer is the
         * only caller and servprof_meta() is rare, so the wait is harmless. */
        for (int i = 0; i < nkvs; i++, n++)
            visit(ctx, kvs[i].key, kvs[i].value);
        *gen = meta_gen;
    }
    pthread_mutex_unlock(&meta_lock);
    return n;
}

static void read_comm(char *buf, size_t len)
{
    FILE *f = fopen("/proc/self/comm", "r");
    buf[0] = 0;
    if (f) {
        if (fgets(buf, (int)len, f))
            buf[strcspn(buf, "\n")] = 0;
        fclose(f);
    }
    if (!buf[0])
        snprintf(buf, len, "process");
}

unsigned sp_meta_process_gen(void)
{
    pthread_mutex_lock(&meta_lock);
    unsigned g = proc_name_gen;
    pthread_mutex_unlock(&meta_lock);
    return g;
}

unsigned sp_meta_process_name(char *buf, size_t len)
{
    pthread_mutex_lock(&meta_lock);
    unsigned g = proc_name_gen;
    int have = proc_name[0] != 0;
    if (have)
        snprintf(buf, len, "%s", proc_name);
    pthread_mutex_unlock(&meta_lock);
    if (!have)
        read_comm(buf, len);
    return g;
}

SERVPROF_API void servprof_set_process_name(const char *name)
{
    if (!name || !*name) {
        static sp_misuse_limit lim;
        sp_warn_misuse(&lim, "servprof_set_process_name", name ? "name is empty" : "name is NULL",
                       "kept the old name");
        return;
    }
    if (strlen(name) >= sizeof proc_name)
        sp_count(&sp_rec_count.truncated, 1);
    pthread_mutex_lock(&meta_lock);
    snprintf(proc_name, sizeof proc_name, "%s", name);
    proc_name_gen++;
    pthread_mutex_unlock(&meta_lock);
    /* Meta process_name says the program chose this name (the process row
     * alone cannot: it falls back to /proc/self/comm), so the parser names
     * the timeline's process by it rather than by its role (docs/parse.md). */
    (void)sp_recorder_meta("process_name", name);
}

SERVPROF_API int servprof_meta(const char *key, const char *value)
{
    return sp_recorder_meta(key, value);
}

void sp_meta_atfork_child(void)
{
    /* Meta and the name stay (the child is the same program); only the
     * lock may have been held by a parent thread at fork. */
    pthread_mutex_t fresh = PTHREAD_MUTEX_INITIALIZER;
    meta_lock = fresh;
}
