/* SPDX-License-Identifier: Apache-2.0 */
/*
 * runtime.c — process life of libservprof: init, start/stop, limits, fork,
 * exit.
 *
 * Design: one mutex, rt_mu, serializes every decision about collection.
 * Four parties race to start or stop: the API (servprof_start/stop/init/
 * shutdown), the watcher thread (edits of the config file), the limits
 * (timelimit, profiler_step_num, checked on the watcher thread's tick) and
 * process events (atexit, fork). Each takes rt_mu and calls start_locked()
 * or stop_locked(); those keep the order that internal.h promises:
 *
 *   start: session folder -> sp_recorder_open -> domain filter -> level
 *          -> sp_samplers_start
 *   stop:  sp_samplers_stop (records its last batch) -> level 0 ->
 *          sp_recorder_close (drains) -> leave the session folder
 *
 * The hot path never takes rt_mu: it reads servprof__level (relaxed). The
 * level starts at SP_LEVEL_UNINIT so that the first record call of the
 * process (or of a fork child) goes to the slow path, which calls
 * sp_runtime_ensure(): "no explicit init needed" without a constructor.
 *
 * Limits: servprof_step() only counts (an atomic add); on the N-th step it
 * wakes the watcher, which stops collection and writes "enable": 0 back
 * into the file, so a scheduler thread never waits for a drain.
 *
 * Fork: the prepare handler takes rt_mu so no start/stop is half done at
 * fork time; the child handler takes no lock and re-initializes the mutex
 * (its owner in the parent is not in the child), then forgets the parent's
 * session, watcher, recorder and samplers, and sets the level back to
 * SP_LEVEL_UNINIT: the child's first record call
 * re-reads the config and, when it says enable, opens the child's own store
 * in the session folder that the parent is using.
 */
#include <assert.h>
#include <errno.h>
#include <pthread.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ext.h"
#include "fsutil.h"
#include "internal.h"
#include "metrics.h"
#include "otlp.h"
#include "runtime.h"
#include "storewrite.h"

_Atomic int servprof__level = SP_LEVEL_UNINIT;


/* ---- state: everything below is owned by rt_mu unless it is atomic ---- */

static pthread_mutex_t rt_mu = PTHREAD_MUTEX_INITIALIZER;
static _Thread_local int in_runtime; /* this thread holds rt_mu: no re-entry */

/* Domain filters are published to the hot path and never freed (a reader
 * may hold an old pointer); identical filters are reused. */
typedef struct filter_node {
    sp_domain_filter f;
    struct filter_node *next;
} filter_node;

/* The process: what outlives a session. A fork child inherits it as it
 * is, except `own`, which belongs to this process image (its init, its
 * watcher thread, its exit) and which the child starts over (atfork_child):
 * the child's first call initializes again and re-reads the config file,
 * so the config view below is refreshed then; `serial` goes on counting
 * (the child's sessions are numbered after the parent's), and the filters
 * and the observer stay valid (filters are never freed). */
static struct {
    struct {
        _Atomic int ready;   /* init done in this process (release/acquire) */
        _Atomic int exiting; /* at_exit ran: never initialize again */
        int watching;        /* the watcher thread runs */
        int shutting;        /* servprof_shutdown() in progress: no starts */
    } own;
    char cfg_path[SP_PATH_MAX]; /* "" when SERVICE_PROF_CONFIG_PATH is unset */
    sp_config cur;              /* the config in force (last good read) */
    char *last_text;            /* content of the last read of the file */
    size_t last_len;
    int file_missing;           /* the file was unreadable at the last look */
    int read_err;               /* its sp_read_file() code then (0: readable) */
    int read_fails;             /* failed reads in a row with that same code */
    int file_enable;            /* "enable" as last read from the file */
    int start_failed;           /* the last file-driven start failed */
    int self_wrote;             /* we wrote "enable": 0 ourselves */
    uint64_t serial;            /* sessions started so far */
    filter_node *filters;
    /* The drop-in's observer of transitions (ext.h); called under rt_mu. */
    _Atomic(servprof__observer) observer;
    int metric_told;            /* the metric_enable last reported to the observer */
} P;

/* The session: valid while collecting, zero otherwise. A fork child is
 * never collecting (its parent's session is the parent's): it starts from
 * zero, all of it (atfork_child). */
static struct {
    int collecting;
    int trace_level;                      /* the level tracing was started with */
    const sp_domain_filter *trace_filter; /* ... and its filter (NULL: every domain) */
    _Atomic int tracing_level;  /* trace_level while collecting, else 0 (drop-in's IsEnable) */
    sp_session sess;
    sp_config sess_cfg;         /* the config the current session started with */
    _Atomic int64_t deadline_ns; /* monotonic; 0 = no timelimit (written under rt_mu) */
    int64_t started_ns;         /* monotonic time of the session's start (under rt_mu) */
    _Atomic int64_t steps;      /* servprof_step() calls this session */
    _Atomic int64_t step_limit; /* 0 = none */
    _Atomic int limit_hit;      /* the N-th step was counted */
} S;

static void tell(int what, int on, int by_exit)
{
    servprof__observer fn = atomic_load(&P.observer);
    if (fn)
        fn(what, on, by_exit);
}

/* Reports a change of "metric_enable" in the config in force. */
static void tell_metric_locked(void)
{
    if (P.cur.metric_enable != P.metric_told) {
        P.metric_told = P.cur.metric_enable;
        tell(SERVPROF__SWITCH_METRIC, P.metric_told, 0);
    }
}

static void lock(void)
{
    assert(!in_runtime); /* rt_mu is not recursive: re-entry would deadlock */
    pthread_mutex_lock(&rt_mu);
    in_runtime = 1;
}

static void unlock(void)
{
    in_runtime = 0;
    pthread_mutex_unlock(&rt_mu);
}

/* ---- config diagnostics to the log ---------------------------------- */

static void log_diag(void *ctx, int is_error, const char *msg)
{
    /* An error means the whole file was not used: say what happens instead. */
    sp_log(is_error ? SP_LOG_ERROR : SP_LOG_WARNING, "config %s: %s%s", (const char *)ctx, msg,
           is_error ? "; the previous settings stay in force" : "");
}

/* A read of the config file failed with rc. Each new reason is logged; the
 * same reason again is only counted (the watcher may look every 100 ms),
 * and the count is logged when the file becomes readable again. */
static void read_failed(int rc)
{
    if (P.file_missing && rc == P.read_err) {
        P.read_fails++;
        return;
    }
    char buf[256];
    sp_log(SP_LOG_WARNING, "config %s: cannot read it: %s; collection stays %s", P.cfg_path,
           sp_config_read_error(rc, buf, sizeof buf), S.collecting ? "on" : "off");
    P.file_missing = 1;
    P.read_err = rc;
    P.read_fails = 1;
}

static void read_ok(void)
{
    if (P.file_missing && P.read_fails > 1)
        sp_log(SP_LOG_INFO, "config %s is readable again (after %d failed reads)", P.cfg_path,
               P.read_fails);
    else if (P.file_missing)
        sp_log(SP_LOG_INFO, "config %s is readable again", P.cfg_path);
    P.file_missing = 0;
    P.read_err = 0;
    P.read_fails = 0;
}

/* Parses text into *out, logging each problem. 0 or SERVPROF_ECONFIG. */
static int parse_logged(const char *text, size_t len, sp_config *out)
{
    sp_config_diag d = {0, 0, log_diag, P.cfg_path};
    return sp_config_parse(text, len, out, &d);
}

/* ---- start / stop ---------------------------------------------------- */

static const sp_domain_filter *filter_for(const sp_config *c)
{
    if (c->ndomains == 0)
        return NULL;
    for (filter_node *n = P.filters; n; n = n->next)
        if (n->f.n == c->ndomains &&
            !memcmp(n->f.names, c->domains, sizeof c->domains[0] * (size_t)c->ndomains))
            return &n->f;
    filter_node *n = calloc(1, sizeof *n);
    if (!n)
        return NULL; /* out of memory: keep every domain rather than none */
    n->f.n = c->ndomains;
    memcpy(n->f.names, c->domains, sizeof c->domains[0] * (size_t)c->ndomains);
    n->next = P.filters;
    P.filters = n;
    return &n->f;
}

/* The domain filter while live metrics are on: the metrics' domains, plus
 * tracing's while it collects (NULL: every domain). */
static const sp_domain_filter *metrics_filter_locked(void)
{
    if (S.collecting && !S.trace_filter)
        return NULL;
    sp_config u;
    memset(u.domains, 0, sizeof u.domains); /* filter_for compares whole names */
    u.ndomains = 0;
    for (int i = 0; S.collecting && i < S.trace_filter->n; i++)
        memcpy(u.domains[u.ndomains++], S.trace_filter->names[i], SP_DOMAIN_LEN);
    /* metrics' domains, then request tracing's (lib/otlp) while it is on */
    int nm = SP_METRICS_NDOMAINS + (sp_otlp_on() ? SP_OTLP_NDOMAINS : 0);
    for (int m = 0; m < nm; m++) {
        const char *want = m < SP_METRICS_NDOMAINS ? sp_metrics_domains[m]
                                                   : sp_otlp_domains[m - SP_METRICS_NDOMAINS];
        int have = 0;
        for (int i = 0; i < u.ndomains && !have; i++)
            have = !strcmp(u.domains[i], want);
        if (have)
            continue;
        if (u.ndomains == SP_MAX_DOMAINS)
            return NULL; /* no room for the union: every domain */
        snprintf(u.domains[u.ndomains++], SP_DOMAIN_LEN, "%s", want);
    }
    return filter_for(&u);
}

/* Live metrics (metrics.c): publishes the level the call sites record at,
 * tracing's while collecting or what metrics need (mlevel), whichever is
 * higher, and the filter that lets the domains of both through. */
static void publish_level_locked(int mlevel)
{
    int lvl = S.collecting ? S.trace_level : 0;
    if (mlevel > lvl)
        lvl = mlevel;
    if (mlevel)
        atomic_store_explicit(&sp__domain_filter, metrics_filter_locked(), memory_order_release);
    else if (S.collecting)
        atomic_store_explicit(&sp__domain_filter, S.trace_filter, memory_order_release);
    /* The drop-in's IsEnable level: a session's, else INFO while request
     * tracing over OTLP runs (its spans need the reference clients' records;
     * live metrics alone do not raise it: they read no drop-in message). */
    int dl = S.collecting ? S.trace_level : sp_otlp_on() ? SERVPROF_LEVEL_INFO : 0;
    atomic_store_explicit(&S.tracing_level, dl, memory_order_relaxed);
    atomic_store_explicit(&servprof__level, lvl, memory_order_release);
}

SERVPROF_API int servprof__tracing_level(void)
{
    return atomic_load_explicit(&S.tracing_level, memory_order_relaxed);
}

static int start_locked(void)
{
    if (S.collecting || P.own.shutting)
        return SERVPROF_ESTATE;
    int rc = sp_session_open(&S.sess, &P.cur, P.cfg_path, P.serial + 1);
    if (rc != 0)
        return rc; /* logged by session.c */
    int mlevel = sp_metrics_configure(&P.cur, 1); /* the writer drains from here */
    rc = sp_recorder_open(&S.sess, &P.cur);
    if (rc != 0) {
        sp_log(SP_LOG_ERROR, "cannot open the raw store '%s': %s; collection stays off",
               S.sess.store_path, servprof_strerror(rc));
        sp_session_leave(&S.sess, 0);
        publish_level_locked(sp_metrics_configure(&P.cur, 0));
        return rc;
    }
    P.serial++;
    S.sess_cfg = P.cur;
    S.trace_filter = filter_for(&P.cur);
    atomic_store_explicit(&sp__domain_filter, S.trace_filter, memory_order_release);
    atomic_store(&S.steps, 0);
    atomic_store(&S.limit_hit, 0);
    atomic_store(&S.step_limit, P.cur.profiler_step_num);
    S.started_ns = sp_now_monotonic_ns();
    atomic_store(&S.deadline_ns, P.cur.timelimit ? S.started_ns + (int64_t)P.cur.timelimit * 1000000000 : 0);
    S.collecting = 1;
    assert(P.cur.profiler_level >= SERVPROF_LEVEL_ERROR && P.cur.profiler_level <= SERVPROF_LEVEL_VERBOSE);
    S.trace_level = P.cur.profiler_level;
    publish_level_locked(mlevel);
    sp_samplers_start(&S.sess, &P.cur);
    tell(SERVPROF__SWITCH_COLLECTION, 1, 0);
    sp_log(SP_LOG_INFO, "Profiler Enabled Successfully! Output path: %s (this process: %s)",
           S.sess.dir, S.sess.store_path);
    return 0;
}

/* close_generation: the stop comes from the file (see session.c). */
static int stop_locked(int close_generation, const char *why)
{
    if (!S.collecting)
        return SERVPROF_ESTATE;
    sp_samplers_stop(); /* first: its last batch of rows is recorded while the level is on */
    atomic_store_explicit(&servprof__level, sp_metrics_level(), memory_order_release);
    if (sp_otlp_on()) { /* request tracing's counts so far, into this store's Meta (at
                         * shutdown servprof_shutdown replaces them with the final ones) */
        char t[512];
        sp_otlp_counts_text(t, sizeof t);
        sp_recorder_meta("otlp_counts", t);
    }
    sp_recorder_close();
    sp_session_leave(&S.sess, close_generation);
    S.collecting = 0;
    publish_level_locked(sp_metrics_configure(&P.cur, 0)); /* metrics drain from here */
    atomic_store(&S.deadline_ns, 0);
    atomic_store(&S.step_limit, 0);
    tell(SERVPROF__SWITCH_COLLECTION, 0, P.own.shutting);
    sp_log(SP_LOG_INFO, "Profiler Disabled Successfully! (%s) Data is in %s", why, S.sess.dir);
    return 0;
}

/* A limit was reached: stop, then write "enable": 0 back to the file. */
static void limit_stop_locked(const char *why)
{
    stop_locked(1, why);
    if (!P.cfg_path[0])
        return;
    char err[512];
    int changed = 0;
    if (sp_config_set_enable(P.cfg_path, 0, &changed, err, sizeof err) != 0) {
        sp_log(SP_LOG_ERROR, "cannot write \"enable\": 0 into %s: %s; collection is off in this "
               "process anyway", P.cfg_path, err);
        return;
    }
    P.file_enable = 0;
    P.self_wrote = changed;
}

/* ---- the watcher's hooks (watcher thread) ---------------------------- */

/* Errors that say nothing about the file: the process (or the system) ran
 * short for a moment. The read is tried again on the watcher's next pass. */
static int transient_error(int rc)
{
    return rc == -EMFILE || rc == -ENFILE || rc == -ENOMEM || rc == -EINTR || rc == -EAGAIN;
}

static int on_changed(void)
{
    lock();
    if (!atomic_load(&P.own.ready) || P.own.shutting) {
        unlock();
        return 0;
    }
    char *text;
    size_t len;
    int rc = sp_read_file(P.cfg_path, SP_CONFIG_MAX_BYTES, &text, &len);
    if (rc != 0) {
        read_failed(rc);
        unlock();
        return transient_error(rc);
    }
    read_ok();
    if (P.last_text && len == P.last_len && !memcmp(text, P.last_text, len)) {
        free(text); /* touched, not changed */
        unlock();
        return 0;
    }
    free(P.last_text);
    P.last_text = text;
    P.last_len = len;
    sp_config next;
    if (parse_logged(text, len, &next) != 0) {
        unlock(); /* logged: the previous config stays in force */
        return 0;
    }
    sp_config old = P.cur;
    P.cur = next;
    tell_metric_locked();
    if (next.enable != P.file_enable) {
        P.file_enable = next.enable;
        P.self_wrote = 0;
        if (next.enable && !S.collecting) {
            P.start_failed = start_locked() != 0;
        } else if (!next.enable && S.collecting) {
            stop_locked(1, "\"enable\": 0 in the config file");
        } else {
            sp_log(SP_LOG_INFO, "config %s: \"enable\": %d; collection was already %s",
                   P.cfg_path, next.enable, S.collecting ? "on" : "off");
        }
    } else if (next.enable && !S.collecting && P.start_failed) {
        sp_log(SP_LOG_INFO, "config %s changed; retrying the start that failed", P.cfg_path);
        P.start_failed = start_locked() != 0;
    } else {
        char keys[512];
        int n = sp_config_changed_keys(&old, &next, keys, sizeof keys);
        int level = P.self_wrote ? SP_LOG_DEBUG : SP_LOG_INFO;
        P.self_wrote = 0;
        if (n && S.collecting)
            sp_log(level, "config %s changed, \"enable\" stays %d: collection goes on as it is; "
                   "changes to %s take effect at the next start", P.cfg_path, next.enable, keys);
        else if (n)
            sp_log(level, "config %s changed, \"enable\" stays %d: collection stays off; "
                   "changes to %s take effect at the next start", P.cfg_path, next.enable, keys);
        else
            sp_log(level, "config %s changed, \"enable\" stays %d: collection stays %s",
                   P.cfg_path, next.enable, S.collecting ? "on" : "off");
    }
    publish_level_locked(sp_metrics_configure(&P.cur, S.collecting)); /* metric_enable is live */
    unlock();
    return 0;
}

static void on_tick(void)
{
    /* Cheap when there is nothing to do: no lock every 100 ms. */
    int64_t deadline = atomic_load(&S.deadline_ns);
    if (!atomic_load(&S.limit_hit) && (!deadline || sp_now_monotonic_ns() < deadline))
        return;
    lock();
    if (P.own.shutting) {
        unlock();
        return;
    }
    int64_t now = sp_now_monotonic_ns();
    if (S.collecting && atomic_load(&S.limit_hit)) {
        char why[96];
        snprintf(why, sizeof why, "profiler_step_num: %lld steps reached",
                 (long long)atomic_load(&S.step_limit));
        limit_stop_locked(why);
    } else if (S.collecting && atomic_load(&S.deadline_ns) && now >= atomic_load(&S.deadline_ns)) {
        /* How long it collected, by the reading compared with the deadline:
         * users see the tick's lag, tests that it stopped after the limit. */
        char why[96];
        snprintf(why, sizeof why, "timelimit: %d s reached after %lld ms of collection",
                 P.cur.timelimit, (long long)((now - S.started_ns) / 1000000));
        limit_stop_locked(why);
    }
    atomic_store(&S.limit_hit, 0);
    unlock();
}

/* ---- init, fork, exit ------------------------------------------------- */

static void at_exit(void)
{
    /* Threads of the program may still make API calls while the process
     * exits; they must not bring the library (a session, a thread) back. */
    atomic_store(&P.own.exiting, 1);
    servprof_shutdown();
    int uninit = SP_LEVEL_UNINIT; /* so that late record calls stay on the fast path */
    atomic_compare_exchange_strong(&servprof__level, &uninit, 0);
}

/* Before fork: wait for any start/stop in progress, so that the child is
 * not born in the middle of one (with SQLite's own global mutexes held by a
 * thread that the child will not have). Released in both processes. */
static _Thread_local int fork_locked; /* atfork_prepare took rt_mu */

static void atfork_prepare(void)
{
    /* A fork from inside the runtime (a sampler library spawning a helper
     * while we start it) already holds rt_mu: taking it again would hang. */
    fork_locked = !in_runtime;
    if (fork_locked)
        pthread_mutex_lock(&rt_mu);
}

static void atfork_parent(void)
{
    if (fork_locked)
        pthread_mutex_unlock(&rt_mu);
    fork_locked = 0;
}

static void atfork_child(void)
{
    /* The forking thread holds rt_mu (prepare); other owners are gone in
     * the child anyway: start from a fresh mutex rather than unlock. */
    pthread_mutex_t fresh = PTHREAD_MUTEX_INITIALIZER;
    memcpy(&rt_mu, &fresh, sizeof rt_mu);
    in_runtime = 0;
    fork_locked = 0;
    /* What survives a fork is one decision, made by the two structs: the
     * session starts from zero (the child has no thread yet, so nothing
     * reads S meanwhile), P.own starts over, the rest of P is inherited. */
    memset(&S, 0, sizeof S);
    P.own.watching = 0;
    P.own.shutting = 0;
    atomic_store(&P.own.exiting, 0);
    sp_watch_atfork_child();
    sp_session_atfork_child();
    sp_recorder_atfork_child();
    sp_samplers_atfork_child();
    sp_metrics_atfork_child();
    atomic_store(&P.own.ready, 0);
    atomic_store_explicit(&servprof__level, SP_LEVEL_UNINIT, memory_order_release);
}

/* Reads SERVICE_PROF_CONFIG_PATH and the file (creating it when missing).
 * Returns 0 or a negative code; the library stays usable either way. */
static int read_initial_config(void)
{
    sp_config_defaults(&P.cur);
    P.file_enable = 0;
    free(P.last_text);
    P.last_text = NULL;
    P.last_len = 0;
    P.file_missing = 0;
    P.read_err = 0;
    P.read_fails = 0;
    const char *env = getenv("SERVICE_PROF_CONFIG_PATH");
    if (!env || !*env) {
        P.cfg_path[0] = '\0';
        sp_log(SP_LOG_DEBUG, "SERVICE_PROF_CONFIG_PATH is not set: collecting only on "
               "servprof_start()");
        return 0;
    }
    if (strlen(env) >= sizeof P.cfg_path) {
        P.cfg_path[0] = '\0';
        sp_log(SP_LOG_ERROR, "SERVICE_PROF_CONFIG_PATH is longer than %d bytes; ignoring it",
               SP_PATH_MAX - 1);
        return SERVPROF_EINVAL;
    }
    /* Absolute, so that a later chdir() of the program changes nothing. */
    char cwd[SP_PATH_MAX];
    size_t n = 0;
    if (env[0] != '/' && getcwd(cwd, sizeof cwd) && strlen(cwd) + strlen(env) + 2 <= sizeof P.cfg_path) {
        n = strlen(cwd);
        memcpy(P.cfg_path, cwd, n);
        P.cfg_path[n++] = '/';
    }
    memcpy(P.cfg_path + n, env, strlen(env) + 1);
    char *text;
    size_t len;
    int rc = sp_read_file(P.cfg_path, SP_CONFIG_MAX_BYTES, &text, &len);
    if (rc == -ENOENT) {
        char why[SP_PATH_MAX + 128];
        if (sp_config_create_default(P.cfg_path, why, sizeof why) == 0) {
            sp_log(SP_LOG_INFO, "created config file %s with collection off (\"enable\": 0)",
                   P.cfg_path);
            rc = sp_read_file(P.cfg_path, SP_CONFIG_MAX_BYTES, &text, &len);
        } else {
            sp_log(SP_LOG_WARNING, "config file %s does not exist and was not created: %s; "
                   "collection stays off until the file appears", P.cfg_path, why);
            P.file_missing = 1;
            P.read_err = -ENOENT;
            P.read_fails = 1;
            return 0;
        }
    }
    if (rc != 0) {
        char buf[256];
        sp_log(SP_LOG_ERROR, "config %s: cannot read it: %s; collection stays off", P.cfg_path,
               sp_config_read_error(rc, buf, sizeof buf));
        P.file_missing = 1; /* a later fix of the file is picked up and said */
        P.read_err = rc;
        P.read_fails = 1;
        return SERVPROF_EIO;
    }
    P.last_text = text;
    P.last_len = len;
    sp_config c;
    if (parse_logged(text, len, &c) != 0)
        return SERVPROF_ECONFIG; /* logged; defaults (off) stay */
    P.cur = c;
    P.file_enable = c.enable;
    return 0;
}

static int init_locked(void)
{
    static int registered; /* once per program; inherited by fork children */
    if (!registered) {
        registered = 1;
        /* SQLite's malloc takes a process-wide mutex only to keep memory
         * statistics. A fork while the writer thread holds it would leave a
         * child that deadlocks on its first store open. We do not need the
         * statistics; this fails harmlessly when SQLite is already in use. */
        (void)sqlite3_config(SQLITE_CONFIG_MEMSTATUS, 0);
        atexit(at_exit);
        pthread_atfork(atfork_prepare, atfork_parent, atfork_child);
    }
    sp_log_reset();
    S.collecting = 0;
    P.start_failed = 0;
    P.self_wrote = 0;
    int rc = read_initial_config();
    P.metric_told = 0;
    tell_metric_locked();
    atomic_store_explicit(&servprof__level, 0, memory_order_release);
    publish_level_locked(sp_metrics_configure(&P.cur, 0));
    atomic_store(&P.own.ready, 1);
    if (P.file_enable) {
        int src = start_locked();
        P.start_failed = src != 0;
        if (rc == 0)
            rc = src;
    }
    return rc;
}

static const sp_watch_hooks hooks = {on_changed, on_tick};

/* Starts the watcher once init is done; called with rt_mu NOT held. */
static void start_watcher(void)
{
    lock();
    int want = atomic_load(&P.own.ready) && P.cfg_path[0] && !P.own.watching;
    if (want)
        P.own.watching = 1;
    char path[SP_PATH_MAX];
    snprintf(path, sizeof path, "%s", P.cfg_path);
    unlock();
    if (want && sp_watch_start(path, &hooks) != 0) {
        lock();
        P.own.watching = 0;
        unlock();
    }
}

static int ensure(void)
{
    if (atomic_load_explicit(&P.own.ready, memory_order_acquire))
        return 0;
    if (in_runtime)
        return 0; /* re-entered from our own callees (recorder, samplers) */
    if (atomic_load(&P.own.exiting))
        return SERVPROF_ESTATE;
    lock();
    int rc = 0;
    int did = 0;
    if (!atomic_load(&P.own.ready) && !atomic_load(&P.own.exiting)) {
        rc = init_locked();
        did = 1;
    }
    unlock();
    if (did)
        start_watcher();
    return rc;
}

void sp_runtime_ensure(void)
{
    (void)ensure();
}

/* ---- the public control functions ---------------------------------------- */

SERVPROF_API int servprof_init(void)
{
    return ensure();
}

SERVPROF_API void servprof_shutdown(void)
{
    if (in_runtime || sp_watch_is_self())
        return; /* from our own thread: it would join itself */
    lock();
    if (!atomic_load(&P.own.ready)) {
        unlock();
        return;
    }
    P.own.shutting = 1; /* no start from here on, whoever asks */
    /* Request tracing's counts are final only after its exit flush, which
     * comes after the store closed (the writer's last pass makes the last
     * spans): so the Meta row written at stop is brought up to date here. */
    int traced_store = S.collecting && sp_otlp_on();
    char store[SP_PATH_MAX];
    snprintf(store, sizeof store, "%s", S.sess.store_path);
    stop_locked(0, "shutdown");
    atomic_store_explicit(&servprof__level, 0, memory_order_release);
    sp_metrics_configure(NULL, 0); /* final values published, file closed; tracing flushed */
    if (traced_store) {
        char t[512];
        sp_otlp_counts_text(t, sizeof t);
        sp_store_meta_closed(store, "otlp_counts", t);
    }
    int was_watching = P.own.watching;
    P.own.watching = 0;
    unlock();
    if (was_watching)
        sp_watch_stop(); /* joins: the hooks take rt_mu */
    lock();
    P.own.shutting = 0;
    atomic_store(&P.own.ready, 0);
    atomic_store_explicit(&servprof__level, 0, memory_order_release);
    free(P.last_text);
    P.last_text = NULL;
    P.last_len = 0;
    unlock();
}

SERVPROF_API int servprof_start(void)
{
    ensure();
    lock();
    int rc = start_locked();
    if (rc == 0)
        P.start_failed = 0;
    unlock();
    return rc;
}

SERVPROF_API int servprof_stop(void)
{
    ensure();
    lock();
    int rc = stop_locked(0, "servprof_stop()");
    unlock();
    return rc;
}

SERVPROF_API void servprof_step(void)
{
    if (!atomic_load_explicit(&P.own.ready, memory_order_acquire))
        ensure();
    int64_t limit = atomic_load_explicit(&S.step_limit, memory_order_relaxed);
    int64_t n = atomic_fetch_add_explicit(&S.steps, 1, memory_order_relaxed) + 1;
    if (!limit || n != limit)
        return;
    atomic_store(&S.limit_hit, 1);
    if (sp_watch_is_self())
        return; /* the tick after this call handles it */
    lock();
    int w = P.own.watching;
    unlock();
    if (w) {
        sp_watch_wake(); /* the watcher stops and rewrites the file */
    } else {
        lock(); /* no watcher (no config file): stop here */
        if (S.collecting && atomic_load(&S.limit_hit)) {
            char why[96];
            snprintf(why, sizeof why, "profiler_step_num: %lld steps reached", (long long)limit);
            limit_stop_locked(why);
        }
        atomic_store(&S.limit_hit, 0);
        unlock();
    }
}

static int copy_out(const char *src, char *buf, size_t len)
{
    if (!buf || strlen(src) >= len)
        return SERVPROF_EINVAL;
    memcpy(buf, src, strlen(src) + 1);
    return 0;
}

SERVPROF_API int servprof_session_dir(char *buf, size_t len)
{
    ensure();
    lock();
    int rc = S.collecting ? copy_out(S.sess.dir, buf, len) : SERVPROF_ESTATE;
    unlock();
    return rc;
}

SERVPROF_API int servprof_session_config_int(const char *key, int64_t *out)
{
    if (!key || !out)
        return SERVPROF_EINVAL;
    ensure();
    lock();
    int rc = SERVPROF_ESTATE;
    if (S.collecting) {
        if (!strcmp(key, "session")) {
            *out = (int64_t)P.serial;
            rc = 0;
        } else {
            rc = sp_config_int_key(&S.sess_cfg, key, out) == 0 ? 0 : SERVPROF_EINVAL;
        }
    }
    unlock();
    return rc;
}

SERVPROF_API int servprof_store_path(char *buf, size_t len)
{
    ensure();
    lock();
    int rc = S.collecting ? copy_out(S.sess.store_path, buf, len) : SERVPROF_ESTATE;
    unlock();
    return rc;
}

/* ---- the drop-in's view (ext.h) ------------------------------------------ */

SERVPROF_API void servprof__observe(servprof__observer fn)
{
    atomic_store(&P.observer, fn);
}

SERVPROF_API void servprof__config_view(servprof__cfg *out)
{
    ensure();
    lock();
    memset(out, 0, sizeof *out);
    out->collecting = S.collecting;
    out->metric_enable = P.cur.metric_enable;
    out->profiler_level = P.cur.profiler_level;
    out->acl_task_time = P.cur.acl_task_time;
    out->acl_prof_task_time_level = P.cur.acl_prof_task_time_level;
    out->torch_prof_stack = P.cur.torch_prof_stack;
    out->torch_prof_modules = P.cur.torch_prof_modules;
    out->torch_prof_step_num = P.cur.torch_prof_step_num;
    snprintf(out->aicore_metrics, sizeof out->aicore_metrics, "%s", P.cur.aclprof_aicore_metrics);
    snprintf(out->prof_dir, sizeof out->prof_dir, "%s", P.cur.prof_dir);
    if (S.collecting)
        snprintf(out->session_dir, sizeof out->session_dir, "%s", S.sess.dir);
    unlock();
}
