/* SPDX-License-Identifier: Apache-2.0 */
/*
 * callbacks.c — RegisterProfilerStartCallback, ...StopCallback,
 * ...StartMetricCallback, ...StopMetricCallback.
 *
 * DESIGN
 * libservprof reports every transition to one observer (ext.h): a session
 * started or stopped (config file, StartServerProfiler/StopServerProfiler,
 * timelimit, profiler_step_num), "metric_enable" turned on or off. It does
 * so on the thread that made the transition, holding the runtime's lock,
 * so the observer only queues the news. One thread of ours,
 * "servprof-cb", started with the first registration, calls the
 * registered callbacks in the order of the transitions, holding no lock
 * of the library: a callback may call back into it (IsEnable, MarkEventEx,
 * even StopServerProfiler). A callback registered while collection (or
 * metric_enable) is already on is called once at once, from that thread,
 * as the reference does. Stops made by exit() or servprof_shutdown() call
 * no callback: the program (a Python interpreter) may be finishing.
 *
 * The queue is bounded (QUEUE transitions waiting); past that a transition
 * is dropped and logged to stderr once. A fork child starts its own thread
 * on its first transition.
 */
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "dropin.h"

#define QUEUE 256

enum { CB_START = 0, CB_STOP = 1, CB_METRIC_START = 2, CB_METRIC_STOP = 3, NCB = 4 };

typedef void (*callback)(void);

/* Everything below is under mu. */
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static callback cbs[NCB];
static unsigned char queue[QUEUE];
static unsigned q_head, q_tail; /* q_head - q_tail transitions wait */
static int collecting_seen, metric_seen, seen_valid;
static pid_t thread_pid;        /* the process whose thread runs; 0 none */
static int exiting, overflow_logged;

static void *deliver_main(void *arg)
{
    (void)arg;
    pthread_setname_np(pthread_self(), "servprof-cb");
    sigset_t all;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, NULL); /* the program's signals are not ours */
    pthread_mutex_lock(&mu);
    for (;;) {
        while (q_head == q_tail && !exiting)
            pthread_cond_wait(&cv, &mu);
        if (exiting)
            break;
        callback fn = cbs[queue[q_tail % QUEUE]];
        q_tail++;
        pthread_mutex_unlock(&mu);
        if (fn)
            fn();
        pthread_mutex_lock(&mu);
    }
    pthread_mutex_unlock(&mu);
    return NULL;
}

/* Under mu: the delivering thread of this process exists. */
static void ensure_thread_locked(void)
{
    if (thread_pid == getpid())
        return;
    pthread_t t;
    pthread_attr_t a;
    pthread_attr_init(&a);
    pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
    if (pthread_create(&t, &a, deliver_main, NULL) == 0)
        thread_pid = getpid();
    else
        fprintf(stderr, "[msservice_profiler] [PID:%d] [ERROR] cannot start the callback thread; "
                "start/stop callbacks will not be called\n", (int)getpid());
    pthread_attr_destroy(&a);
}

/* Under mu. */
static void push_locked(int which)
{
    if (!cbs[which] || exiting)
        return;
    if (q_head - q_tail >= QUEUE) {
        if (!overflow_logged)
            fprintf(stderr, "[msservice_profiler] [PID:%d] [WARNING] %d start/stop transitions "
                    "wait for their callbacks; later ones are not called back\n", (int)getpid(),
                    QUEUE);
        overflow_logged = 1;
        return;
    }
    queue[q_head % QUEUE] = (unsigned char)which;
    q_head++;
    ensure_thread_locked();
    pthread_cond_signal(&cv);
}

void dropin_observe(int what, int on, int by_exit)
{
    if (what == SERVPROF__SWITCH_COLLECTION && on)
        dropin_step_rebase();
    pthread_mutex_lock(&mu);
    seen_valid = 1;
    if (what == SERVPROF__SWITCH_COLLECTION) {
        collecting_seen = on;
        if (!by_exit)
            push_locked(on ? CB_START : CB_STOP);
    } else {
        metric_seen = on;
        if (!by_exit)
            push_locked(on ? CB_METRIC_START : CB_METRIC_STOP);
    }
    pthread_mutex_unlock(&mu);
}

static void mark_exiting(void)
{
    pthread_mutex_lock(&mu);
    exiting = 1;
    pthread_cond_broadcast(&cv);
    pthread_mutex_unlock(&mu);
}

static void atfork_child(void)
{
    pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
    pthread_cond_t c = PTHREAD_COND_INITIALIZER;
    mu = m;
    cv = c;
    q_head = q_tail = 0;
    thread_pid = 0; /* the parent's thread is not in the child */
}

/* Registered at load, before any libservprof call can start a session, so
 * that every transition of the process is seen. */
__attribute__((constructor)) static void dropin_load(void)
{
    servprof__observe(dropin_observe);
    pthread_atfork(NULL, NULL, atfork_child);
}

__attribute__((destructor)) static void dropin_unload(void)
{
    servprof__observe(NULL); /* dlclose: the observer's code goes away */
    mark_exiting();
}

static void register_cb(int which, callback fn)
{
    /* libservprof first registers its atexit handler, then we ours, which
     * runs first: no callback from the stop that exit() makes. */
    servprof_init();
    static _Atomic int atexit_done;
    if (!atomic_exchange(&atexit_done, 1))
        atexit(mark_exiting);
    servprof__cfg *view = NULL;
    pthread_mutex_lock(&mu);
    int need_view = !seen_valid;
    pthread_mutex_unlock(&mu);
    if (need_view && (view = malloc(sizeof *view)) != NULL)
        servprof__config_view(view); /* libservprof ran before this library was loaded */
    pthread_mutex_lock(&mu);
    if (!seen_valid && view) {
        collecting_seen = view->collecting;
        metric_seen = view->metric_enable;
        seen_valid = 1;
    }
    cbs[which] = fn;
    if ((which == CB_START && collecting_seen) || (which == CB_METRIC_START && metric_seen))
        push_locked(which);
    pthread_mutex_unlock(&mu);
    free(view);
}

DROPIN_API void RegisterProfilerStartCallback(void (*cb)(void))
{
    register_cb(CB_START, cb);
}

DROPIN_API void RegisterProfilerStopCallback(void (*cb)(void))
{
    register_cb(CB_STOP, cb);
}

DROPIN_API void RegisterProfilerStartMetricCallback(void (*cb)(void))
{
    register_cb(CB_METRIC_START, cb);
}

DROPIN_API void RegisterProfilerStopMetricCallback(void (*cb)(void))
{
    register_cb(CB_METRIC_STOP, cb);
}
