/* SPDX-License-Identifier: Apache-2.0 */
/*
 * dropin_native.c — dropin_client.cpp's scenario, step for step, through
 * servprof's own C API. test_dropin_equiv.py records both and checks that
 * their stores hold the same rows and parse into the same reports.
 */
#include <servprof.h>

static void batch(servprof_rec *r)
{
    static const char *const rids[2] = {"req-1", "req-2"};
    static const int iters[2] = {0, 3};
    servprof_attr_array_begin(r, "rid");
    for (int i = 0; i < 2; i++) {
        servprof_attr_object_begin(r, NULL);
        servprof_attr_str(r, "rid", rids[i]);
        servprof_attr_int(r, "iter", iters[i]);
        servprof_attr_end(r);
    }
    servprof_attr_end(r);
}

int main(void)
{
    servprof_meta("model", "toy-7b");
    /* 1. attributes of each kind */
    servprof_rec *r = servprof_rec_begin(SERVPROF_LEVEL_INFO, "Request");
    servprof_res_str(r, "req-1");
    servprof_attr_str(r, "s", "text");
    servprof_attr_int(r, "i", 42);
    servprof_attr_double(r, "d", 0.5);
    servprof_event(r, "httpReq");
    r = servprof_rec_begin(SERVPROF_LEVEL_INFO, "Request");
    servprof_res_int(r, 7);
    servprof_event(r, "tokenize");
    /* 2. metrics */
    r = servprof_rec_begin(SERVPROF_LEVEL_INFO, "Schedule");
    servprof_res_str(r, "req-1");
    servprof_metric(r, "QueueSize", 3);
    servprof_metric_inc(r, "WAITING", 1);
    servprof_metric_scope(r, "QueueName", "WAITING");
    servprof_event(r, "Enqueue");
    r = servprof_rec_begin(SERVPROF_LEVEL_INFO, "KVCache");
    servprof_metric(r, "UsagePercent", 0.25);
    servprof_metric_scope(r, "", "req");
    servprof_event(r, "KVCacheStatus");
    /* 3. a batch span */
    r = servprof_rec_begin(SERVPROF_LEVEL_INFO, "BatchSchedule");
    batch(r);
    servprof_attr_str(r, "batch_type", "Prefill,Decode");
    servprof_span s = servprof_span_begin(r, "batchFrameworkProcessing");
    r = servprof_rec_begin(SERVPROF_LEVEL_INFO, NULL);
    servprof_attr_int(r, "batch_size", 2);
    servprof_span_end_rec(r, s);
    r = servprof_rec_begin(SERVPROF_LEVEL_INFO, "Execute");
    batch(r);
    servprof_span_end(servprof_span_begin(r, "forward"));
    /* 4. a link, an event above the configured level */
    servprof_link_rec(servprof_rec_begin(SERVPROF_LEVEL_INFO, NULL), "req-1", "http-1");
    servprof_event(servprof_rec_begin(SERVPROF_LEVEL_VERBOSE, "Request"), "hidden");
    /* 5. what the legacy text forms say */
    r = servprof_rec_begin(SERVPROF_LEVEL_INFO, "Request");
    servprof_res_str(r, "req-2");
    servprof_event(r, "legacyEvent");
    r = servprof_rec_begin(SERVPROF_LEVEL_INFO, "Execute");
    s = servprof_span_begin(r, "legacySpan");
    r = servprof_rec_begin(SERVPROF_LEVEL_INFO, NULL);
    servprof_attr_int(r, "n", 5);
    servprof_span_end_rec(r, s);
    /* 6. steps, a detailed event */
    for (int step = 1; step <= 3; step++)
        servprof_step();
    r = servprof_rec_begin(SERVPROF_LEVEL_DETAILED, "Execute");
    servprof_attr_int(r, "step", 3);
    servprof_event(r, "stepDone");
    r = servprof_rec_begin(SERVPROF_LEVEL_INFO, "Request");
    servprof_res_str(r, "req-1");
    servprof_event(r, "httpRes");
    servprof_stop();
    return 0;
}
