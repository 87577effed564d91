/* SPDX-License-Identifier: Apache-2.0 */
/*
 * smp_util.h — helpers for the sampler tests: a temporary folder, stderr
 * capture (the library logs there), and an observer that keeps every row
 * the samplers emit.
 */
#ifndef SERVPROF_TEST_SMP_UTIL_H
#define SERVPROF_TEST_SMP_UTIL_H

#include <fcntl.h>
#include <ftw.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sampler.h"

/* Slack factor for timing: sanitizer builds run many times slower. */
static inline int smp_sanitized(void)
{
    const char *s = getenv("SERVPROF_SANITIZE");
    return s && *s;
}

/* Temporary folders are removed at exit unless SERVPROF_KEEP_TMP is set. */
static char smp_dirs[64][256];
static int smp_ndirs;

static inline int smp_rm_one(const char *path, const struct stat *st, int flag, struct FTW *f)
{
    (void)st; (void)flag; (void)f;
    return remove(path) == 0 ? 0 : 0; /* best effort */
}

static inline void smp_cleanup(void)
{
    if (getenv("SERVPROF_KEEP_TMP"))
        return;
    for (int i = 0; i < smp_ndirs; i++)
        nftw(smp_dirs[i], smp_rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

static inline void smp_tmpdir(char *out, size_t len, const char *tag)
{
    snprintf(out, len, "/tmp/servprof-%s-XXXXXX", tag);
    if (!mkdtemp(out)) {
        perror("mkdtemp");
        exit(2);
    }
    if (smp_ndirs == 0)
        atexit(smp_cleanup);
    if (smp_ndirs < 64)
        snprintf(smp_dirs[smp_ndirs++], sizeof smp_dirs[0], "%s", out);
}

/* ---- stderr capture ---- */
static int cap_saved = -1;
static char cap_path[256];

static inline void capture_begin(void)
{
    fflush(stderr);
    snprintf(cap_path, sizeof cap_path, "/tmp/servprof-cap-%d-XXXXXX", (int)getpid());
    int fd = mkstemp(cap_path);
    cap_saved = dup(2);
    dup2(fd, 2);
    close(fd);
}

/* Returns what was written to stderr since capture_begin (malloc'd), and
 * echoes it to the real stderr so the test log still shows it. */
static inline char *capture_end(void)
{
    fflush(stderr);
    dup2(cap_saved, 2);
    close(cap_saved);
    FILE *f = fopen(cap_path, "r");
    char *buf = calloc(1, 65536);
    if (f) {
        size_t n = fread(buf, 1, 65535, f);
        buf[n] = '\0';
        fclose(f);
    }
    unlink(cap_path);
    fputs(buf, stderr);
    return buf;
}

static inline int count_substr(const char *hay, const char *needle)
{
    int n = 0;
    for (const char *p = hay; (p = strstr(p, needle)); p += strlen(needle))
        n++;
    return n;
}

/* ---- observed rows ---- */
typedef struct obs_row {
    char domain[16], name[32];
    int level, nvalues;
    char keys[SP_SAMPLE_MAX_VALUES][16];
    double values[SP_SAMPLE_MAX_VALUES];
    int has_scope;
    char scope_key[16];
    int64_t scope;
    int64_t mono_ns;
    int64_t deadline_ns; /* the pass's deadline (sampler thread), 0 elsewhere */
} obs_row;

static struct {
    pthread_mutex_t mu;
    obs_row rows[8192];
    int n;
} obs = {.mu = PTHREAD_MUTEX_INITIALIZER};

static inline void obs_fn(void *ctx, const sp_sample_row *r)
{
    (void)ctx;
    pthread_mutex_lock(&obs.mu);
    if (obs.n < 8192) {
        obs_row *o = &obs.rows[obs.n++];
        memset(o, 0, sizeof *o);
        snprintf(o->domain, sizeof o->domain, "%s", r->domain);
        snprintf(o->name, sizeof o->name, "%s", r->name);
        o->level = r->level;
        o->nvalues = r->nvalues;
        for (int i = 0; i < r->nvalues; i++) {
            snprintf(o->keys[i], sizeof o->keys[i], "%s", r->keys[i]);
            o->values[i] = r->values[i];
        }
        if (r->scope_key) {
            o->has_scope = 1;
            snprintf(o->scope_key, sizeof o->scope_key, "%s", r->scope_key);
            o->scope = r->scope;
        }
        o->mono_ns = sp_now_monotonic_ns();
        o->deadline_ns = sp_samplers_pass_deadline();
    }
    pthread_mutex_unlock(&obs.mu);
}

static inline void obs_reset(void)
{
    pthread_mutex_lock(&obs.mu);
    obs.n = 0;
    pthread_mutex_unlock(&obs.mu);
}

/* Value of key in row o, or NaN-ish -1e300 when absent. */
static inline double obs_value(const obs_row *o, const char *key)
{
    for (int i = 0; i < o->nvalues; i++)
        if (!strcmp(o->keys[i], key))
            return o->values[i];
    return -1e300;
}

static inline int obs_count(const char *name, int scoped)
{
    int n = 0;
    pthread_mutex_lock(&obs.mu);
    for (int i = 0; i < obs.n; i++)
        if (!strcmp(obs.rows[i].name, name) && obs.rows[i].has_scope == scoped)
            n++;
    pthread_mutex_unlock(&obs.mu);
    return n;
}

/* Waits until `want` rows called name were observed, polling every 5 ms
 * for at most 10 s (100 s under sanitizers); returns the count reached. */
static inline int obs_wait(const char *name, int scoped, int want)
{
    int limit = (smp_sanitized() ? 100 : 10) * 200, n = obs_count(name, scoped);
    for (int i = 0; i < limit && n < want; i++) {
        struct timespec ts = {0, 5000000L};
        nanosleep(&ts, NULL);
        n = obs_count(name, scoped);
    }
    return n;
}

/* A config with every sampler off, and a session in dir. */
static inline void smp_setup(sp_config *c, sp_session *s, const char *dir)
{
    memset(c, 0, sizeof *c);
    c->enable = 1;
    c->profiler_level = SERVPROF_LEVEL_INFO;
    c->host_system_usage_freq = -1;
    c->npu_memory_usage_freq = -1;
    memset(s, 0, sizeof *s);
    snprintf(s->dir, sizeof s->dir, "%s", dir);
    snprintf(s->hostname, sizeof s->hostname, "testhost");
    snprintf(s->store_path, sizeof s->store_path, "%s/Trace_Service/ms_service_testhost-%d.db",
             dir, (int)getpid());
    snprintf(s->activity_path, sizeof s->activity_path,
             "%s/Trace_Service/ascend_service_profiler_testhost-%d.db", dir, (int)getpid());
    s->start_ns = sp_now_realtime_ns();
    s->serial = 1;
}

static inline void sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0)
        ;
}

#endif
