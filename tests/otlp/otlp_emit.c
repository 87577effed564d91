/* SPDX-License-Identifier: Apache-2.0 */
/*
 * otlp_emit.c — a small instrumented "server" for the OTLP tests: records N
 * requests in the vocabulary (docs/vocabulary.md) through the public API,
 * with every attribute the llm_request span reads, then shuts down cleanly
 * (the exit flush). Driven by tests/otlp/test_otlp.py.
 *
 *   otlp_emit N [options]
 *     --fail-every K     every K-th request (K, 2K, ...) ends with outcome "error"
 *     --parent MODE      none | sampled | unsampled | alternate (sampled, unsampled, ...)
 *     --b3               give the context as a B3 single header instead
 *     --threads T        T recording threads (default 1)
 *     --gap-us U         wait U µs between requests (default 0)
 *
 * Prints one line per request on stdout: "<rid> <traceparent given or -> <failed 0/1>
 * <outgoing traceparent>", so the test knows what to look for.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "servprof.h"

static int n_req = 10, fail_every = 0, b3 = 0, nthreads = 1, gap_us = 0;
static const char *parent_mode = "none";
static pthread_mutex_t out_mu = PTHREAD_MUTEX_INITIALIZER;

static int64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static void one(int i)
{
    char rid[32], eng[32], tp[64] = "-", hdr[80];
    snprintf(rid, sizeof rid, "req-%d", i);
    snprintf(eng, sizeof eng, "eng-%d", i);
    int failed = fail_every > 0 && (i + 1) % fail_every == 0;
    int sampled = !strcmp(parent_mode, "sampled") || (!strcmp(parent_mode, "alternate") && i % 2 == 0);
    int given = strcmp(parent_mode, "none") != 0;
    int64_t t0 = now_ns();

    servprof_rec *x = servprof_rec_begin(SERVPROF_LEVEL_INFO, "Request");
    servprof_res_str(x, rid);
    servprof_attr_int(x, "max_tokens", 16);
    servprof_attr_double(x, "temperature", 0.7);
    servprof_attr_double(x, "top_p", 0.9);
    servprof_attr_int(x, "n", 1);
    servprof_event(x, "httpReq");
    if (given) {
        /* a caller's ids: distinct per request, never zero */
        snprintf(tp, sizeof tp, "00-%016x%016x-%016x-%s", 0xabc00000u + (unsigned)i, 0x1234u + (unsigned)i,
                 0x77000000u + (unsigned)i, sampled ? "01" : "00");
        if (b3) {
            snprintf(hdr, sizeof hdr, "%.32s-%.16s-%s", tp + 3, tp + 36, sampled ? "1" : "0");
            if (servprof_trace_context(rid, hdr, NULL) != 0)
                fprintf(stderr, "b3 header refused: %s\n", hdr);
        } else if (servprof_trace_context(rid, tp, "vendor=x") != 0) {
            fprintf(stderr, "traceparent refused: %s\n", tp);
        }
    }
    servprof_link(rid, eng);
    x = servprof_rec_begin(SERVPROF_LEVEL_INFO, "Schedule");
    servprof_res_str(x, eng);
    servprof_metric(x, "QueueSize", 1);
    servprof_metric_scope(x, "QueueName", "WAITING");
    servprof_event(x, "Enqueue");
    x = servprof_rec_begin(SERVPROF_LEVEL_INFO, "Schedule");
    servprof_res_str(x, eng);
    servprof_metric(x, "QueueSize", 0);
    servprof_metric_scope(x, "QueueName", "WAITING");
    servprof_event(x, "Dequeue");
    for (int step = 0; step < 3; step++) {
        int64_t s0 = now_ns();
        x = servprof_rec_begin(SERVPROF_LEVEL_INFO, "BatchSchedule");
        servprof_attr_array_begin(x, "rid");
        servprof_attr_object_begin(x, NULL);
        servprof_attr_str(x, "rid", eng);
        servprof_attr_int(x, "iter", step);
        servprof_attr_int(x, "type", step ? 1 : 0);
        servprof_attr_int(x, "num_scheduled_tokens", step ? 1 : 8);
        servprof_attr_end(x);
        servprof_attr_end(x);
        servprof_attr_int(x, "batch_size", 1);
        servprof_span_at(x, "BatchSchedule", s0, now_ns());
        x = servprof_rec_begin(SERVPROF_LEVEL_INFO, "ModelExecute");
        servprof_attr_array_begin(x, "rid");
        servprof_attr_object_begin(x, NULL);
        servprof_attr_str(x, "rid", eng);
        servprof_attr_int(x, "iter", step);
        servprof_attr_end(x);
        servprof_attr_end(x);
        servprof_span sp = servprof_span_begin(x, "modelExec");
        int64_t f0 = now_ns();
        x = servprof_rec_begin(SERVPROF_LEVEL_INFO, "ModelExecute");
        servprof_attr_array_begin(x, "rid");
        servprof_attr_object_begin(x, NULL);
        servprof_attr_str(x, "rid", eng);
        servprof_attr_int(x, "iter", step);
        servprof_attr_end(x);
        servprof_attr_end(x);
        servprof_span_at(x, "forward", f0, now_ns());
        servprof_span_end(sp);
        if (step == 0) {
            x = servprof_rec_begin(SERVPROF_LEVEL_INFO, "Request");
            servprof_res_str(x, rid);
            servprof_event(x, "detokenize");
        }
    }
    x = servprof_rec_begin(SERVPROF_LEVEL_INFO, "Request");
    servprof_res_str(x, rid);
    servprof_metric(x, "recvTokenSize", 8);
    servprof_metric(x, "replyTokenSize", 3);
    servprof_attr_str(x, "outcome", failed ? "error" : "ok");
    servprof_event(x, "httpRes");
    char out[64];
    servprof_trace_outgoing(rid, given ? tp : NULL, out, sizeof out);
    pthread_mutex_lock(&out_mu);
    printf("%s %s %d %s %lld\n", rid, tp, failed, out, (long long)t0);
    pthread_mutex_unlock(&out_mu);
    if (gap_us) {
        struct timespec g = {gap_us / 1000000, (long)(gap_us % 1000000) * 1000};
        nanosleep(&g, NULL);
    }
}

static void *worker(void *arg)
{
    int t = (int)(intptr_t)arg;
    for (int i = t; i < n_req; i += nthreads)
        one(i);
    return NULL;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: otlp_emit N [--fail-every K] [--parent MODE] [--b3] [--threads T] [--gap-us U]\n");
        return 2;
    }
    n_req = atoi(argv[1]);
    for (int i = 2; i < argc; i++) {
        if (!strcmp(argv[i], "--fail-every") && i + 1 < argc) fail_every = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--parent") && i + 1 < argc) parent_mode = argv[++i];
        else if (!strcmp(argv[i], "--b3")) b3 = 1;
        else if (!strcmp(argv[i], "--threads") && i + 1 < argc) nthreads = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--gap-us") && i + 1 < argc) gap_us = atoi(argv[++i]);
        else {
            fprintf(stderr, "otlp_emit: unknown option %s\n", argv[i]);
            return 2;
        }
    }
    servprof_init();
    servprof_set_process_name("otlp-emit");
    servprof_meta("model_name", "tiny-model");
    servprof_meta("dpRankId", "0");
    pthread_t th[64];
    if (nthreads < 1 || nthreads > 64)
        nthreads = 1;
    for (int t = 0; t < nthreads; t++)
        pthread_create(&th[t], NULL, worker, (void *)(intptr_t)t);
    for (int t = 0; t < nthreads; t++)
        pthread_join(th[t], NULL);
    fflush(stdout);
    servprof_shutdown(); /* the exit flush: every span queued is sent or counted */
    return 0;
}
