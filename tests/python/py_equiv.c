/* SPDX-License-Identifier: Apache-2.0 */
/*
 * py_equiv.c — the C twin of equiv_scenario.py.
 *
 * test_py_api.py runs this program and equiv_scenario.py, each in its own
 * process and prof_dir with collection on from the config file, and
 * compares the rows of the two raw stores: every call of the Python
 * binding must write what the C caller below writes. Keep the two files
 * step for step in the same order.
 */
#include <stdint.h>
#include <stdio.h>

#include "servprof.h"

static void batch_rids(servprof_rec *r)
{
    servprof_attr_array_begin(r, "rid");
    servprof_attr_object_begin(r, NULL);
    servprof_attr_str(r, "rid", "req-1");
    servprof_attr_int(r, "iter", 0);
    servprof_attr_int(r, "type", 0);
    servprof_attr_int(r, "num_scheduled_tokens", 128);
    servprof_attr_end(r);
    servprof_attr_object_begin(r, NULL);
    servprof_attr_str(r, "rid", "req-2");
    servprof_attr_int(r, "iter", 3);
    servprof_attr_int(r, "type", 1);
    servprof_attr_int(r, "num_scheduled_tokens", 1);
    servprof_attr_end(r);
    servprof_attr_end(r);
}

int main(void)
{
    int rc = servprof_init();
    if (rc != 0) {
        fprintf(stderr, "py_equiv: servprof_init: %s\n", servprof_strerror(rc));
        return 1;
    }
    servprof_rec *r;
    servprof_set_thread_name("equiv-main");

    /* 1. scalar attributes of every type */
    r = servprof_rec_begin(SERVPROF_LEVEL_INFO, "Request");
    servprof_res_str(r, "req-1");
    servprof_attr_str(r, "s", "text");
    servprof_attr_int(r, "i", 42);
    servprof_attr_double(r, "d", 0.5);
    servprof_attr_bool(r, "b", 1);
    servprof_attr_int(r, "neg", -7);
    servprof_attr_double(r, "whole", 3.0);
    servprof_attr_str(r, "utf8", "h\xc3\xa9llo \xe2\x9c\x93");
    servprof_event(r, "httpReq");

    /* 2. an integer request id */
    r = servprof_rec_begin(SERVPROF_LEVEL_INFO, "Request");
    servprof_res_int(r, 7);
    servprof_event(r, "tokenize");

    /* 3. metrics */
    r = servprof_rec_begin(SERVPROF_LEVEL_INFO, "Schedule");
    servprof_res_str(r, "req-1");
    servprof_metric(r, "QueueSize", 3);
    servprof_metric_inc(r, "WAITING", 1);
    servprof_metric_scope(r, "QueueName", "WAITING");
    servprof_event(r, "Enqueue");

    /* 4. per-request scope, a fractional gauge */
    r = servprof_rec_begin(SERVPROF_LEVEL_INFO, "KVCache");
    servprof_metric(r, "UsagePercent", 0.25);
    servprof_metric_scope(r, "", "req");
    servprof_event(r, "KVCacheStatus");

    /* 5. a batch span: rid list at the start, batch_size at the end */
    r = servprof_rec_begin(SERVPROF_LEVEL_INFO, "BatchSchedule");
    batch_rids(r);
    servprof_attr_str(r, "batch_type", "Prefill,Decode");
    servprof_span h = servprof_span_begin(r, "batchFrameworkProcessing");
    r = servprof_rec_begin(SERVPROF_LEVEL_INFO, "BatchSchedule");
    servprof_attr_int(r, "batch_size", 2);
    servprof_span_end_rec(r, h);

    /* 5b. a span ended with nothing added; a scope whose value is a number */
    r = servprof_rec_begin(SERVPROF_LEVEL_INFO, "Schedule");
    servprof_attr_int(r, "scope#QueueName", 2);
    h = servprof_span_begin(r, "swap");
    servprof_span_end(h);

    /* 6. nested values, numeric arrays, null, a huge integer */
    r = servprof_rec_begin(SERVPROF_LEVEL_DETAILED, "Execute");
    servprof_attr_object_begin(r, "cfg");
    servprof_attr_array_begin(r, "a");
    servprof_attr_int(r, NULL, 1);
    servprof_attr_double(r, NULL, 2.5);
    servprof_attr_str(r, NULL, "x");
    servprof_attr_end(r);
    servprof_attr_json(r, "b", "null");
    servprof_attr_end(r);
    int64_t ids[] = {1, 2, 3};
    servprof_attr_int_array(r, "ids", ids, 3);
    double ws[] = {0.5, 1.5};
    servprof_attr_double_array(r, "ws", ws, 2);
    servprof_attr_json(r, "none", "null");
    servprof_attr_str(r, "big", "1180591620717411303424"); /* beyond int64 */
    servprof_event(r, "config");

    /* 7. links: through a record, and the shorthand */
    r = servprof_rec_begin(SERVPROF_LEVEL_INFO, NULL);
    servprof_link_rec(r, "http-1", "req-1");
    servprof_link("http-2", "req-2");

    /* 8. a whole span (with span(...)) */
    int64_t t0 = servprof_now_ns();
    r = servprof_rec_begin(SERVPROF_LEVEL_INFO, "Execute");
    batch_rids(r);
    servprof_attr_int(r, "batch_size", 2);
    servprof_span_at(r, "forward", t0, servprof_now_ns());

    /* 9. a span whose body raised ValueError */
    t0 = servprof_now_ns();
    r = servprof_rec_begin(SERVPROF_LEVEL_INFO, "Execute");
    servprof_res_str(r, "req-3");
    servprof_attr_bool(r, "error", 1);
    servprof_attr_str(r, "exception", "ValueError");
    servprof_span_at(r, "sample", t0, servprof_now_ns());

    /* 10. a traced function */
    t0 = servprof_now_ns();
    r = servprof_rec_begin(SERVPROF_LEVEL_INFO, "Execute");
    servprof_span_at(r, "model_step", t0, servprof_now_ns());

    /* 11. a level that is not collected (profiler_level DETAILED): no row */
    r = servprof_rec_begin(SERVPROF_LEVEL_VERBOSE, "Execute");
    servprof_event(r, "hidden");

    /* 12. events through the module function, with a list attribute */
    r = servprof_rec_begin(SERVPROF_LEVEL_INFO, "Request");
    servprof_res_str(r, "req-1");
    servprof_attr_int(r, "replyTokenSize=", 17);
    servprof_event(r, "httpRes");

    /* 13. Meta */
    rc = servprof_meta("model", "toy-7b");
    servprof_shutdown();
    return rc == 0 ? 0 : 1;
}
