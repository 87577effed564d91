/* SPDX-License-Identifier: Apache-2.0 */
/*
 * all_calls_off.c — every function of servprof.h, called once, built with
 * -DSERVPROF_DISABLE -Werror and linked with no servprof library: it links
 * only when every function has its no-op twin in the header, and
 * test_install.py checks that each SERVPROF_API name appears here.
 */
#include <servprof.h>
#include <stdio.h>

int main(void)
{
    char buf[64];
    int64_t ints[2] = {1, 2};
    double dbls[2] = {1.5, 2.5};
    servprof_stats st;
    int bad = 0;
    bad |= servprof_init() != 0;
    bad |= servprof_start() != SERVPROF_ESTATE;
    bad |= servprof_session_dir(buf, sizeof buf) != SERVPROF_ESTATE;
    bad |= servprof_store_path(buf, sizeof buf) != SERVPROF_ESTATE;
    int64_t cfg_value = 0;
    bad |= servprof_session_config_int("acl_task_time", &cfg_value) != SERVPROF_ESTATE;
    bad |= servprof_meta("k", "v") != 0;
    bad |= servprof_is_enabled(SERVPROF_LEVEL_ERROR) != 0;
    servprof_set_process_name("p");
    servprof_set_thread_name("t");
    servprof_step();
    servprof_rec *r = servprof_rec_begin(SERVPROF_LEVEL_INFO, "D");
    bad |= r != NULL;
    bad |= servprof_rec_begin_slow(SERVPROF_LEVEL_INFO, "D") != NULL;
    bad |= servprof__rec_begin_k(SERVPROF_LEVEL_INFO, "D", 1) != NULL;
    servprof_res_str(r, "rid");
    servprof_res_int(r, 1);
    servprof_attr_str(r, "k", "v");
    servprof_attr_strn(r, "k", "v", 1);
    servprof_attr_int(r, "k", 1);
    servprof_attr_double(r, "k", 1.0);
    servprof_attr_bool(r, "k", 1);
    servprof_attr_int_array(r, "k", ints, 2);
    servprof_attr_double_array(r, "k", dbls, 2);
    servprof_attr_json(r, "k", "{}");
    servprof_attr_array_begin(r, "rid");
    servprof_attr_object_begin(r, NULL);
    servprof_attr_end(r);
    servprof_metric(r, "m", 1);
    servprof_metric_inc(r, "m", 1);
    servprof_metric_scope(r, "s", "v");
    servprof__attr_str_k(r, "k", 1, "v", 1);
    servprof__attr_int_k(r, "k", 1, 1);
    servprof__event_k(r, "e", 1);
    servprof_rec_cancel(r);
    servprof_event(r, "e");
    servprof_link_rec(r, "a", "b");
    servprof_link("a", "b");
    char tp[64] = "x";
    bad |= servprof_trace_context("a", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", NULL) != 0;
    bad |= servprof_trace_context_b3("a", "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7", "1") != 0;
    servprof_trace_end("a", "ok");
    bad |= servprof_trace_outgoing("a", NULL, tp, sizeof tp) != SERVPROF_ESTATE || tp[0] != 0;
    servprof_span s = servprof_span_begin(r, "s");
    bad |= s != 0 || servprof__span_begin_k(r, "s", 1) != 0;
    servprof_span_end(s);
    servprof_span_end_rec(r, s);
    servprof_span_at(r, "s", servprof_now_ns(), servprof_now_ns());
    servprof_get_stats(&st);
    (servprof_get_stats)(&st);
    servprof_get_stats_n(&st, sizeof st);
    bad |= st.records != 0 || st.written != 0;
    bad |= servprof_stop() != SERVPROF_ESTATE;
    servprof_shutdown();
    printf("off %s %u %s\n", servprof_version_string(), servprof_version(), servprof_strerror(0));
    return bad;
}
