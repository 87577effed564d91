/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_otlp_pb.c — the trace-context parser and the protobuf encoder's
 * corner cases (common/otlp_ctx.c, common/otlp_pb.c). The bodies as a whole
 * are checked by decoding them with the official .proto files
 * (test_otlp.py); here: what a header may and may not be, varint lengths
 * past 127 bytes, derived ids.
 */
#include <stdio.h>
#include <string.h>

#include "check.h"
#include "otlp_ctx.h"
#include "otlp_pb.h"

static void test_traceparent(void)
{
    sp_tc t;
    const char *why = NULL;
    CHECK_INT(sp_tc_parse("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", &t, &why), 0);
    CHECK_INT(t.trace_id[0], 0x4b);
    CHECK_INT(t.trace_id[15], 0x36);
    CHECK_INT(t.parent_id[7], 0xb7);
    CHECK_INT(t.flags, 1);
    CHECK_INT(t.has_parent, 1);
    char out[64];
    sp_tc_format(t.trace_id, t.parent_id, t.flags, out, sizeof out);
    CHECK_STR(out, "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01");
    /* invalid ones: each says why */
    const char *bad[] = {
        "00-00000000000000000000000000000000-00f067aa0ba902b7-01", /* zero trace id */
        "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01", /* zero parent */
        "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01", /* upper case */
        "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", /* version ff */
        "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-x", /* 00 with extra */
        "00-4bf92f3577b34da6a3ce929d0e0e47zz-00f067aa0ba902b7-01", /* non-hex */
        "", "1", "garbage"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        why = NULL;
        CHECK_INT(sp_tc_parse(bad[i], &t, &why), -1);
        CHECK(why != NULL);
    }
    /* a later version: its first four fields */
    CHECK_INT(sp_tc_parse("01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00-what", &t, &why), 0);
    CHECK_INT(t.flags, 0);
}

static void test_b3(void)
{
    sp_tc t;
    const char *why;
    CHECK_INT(sp_tc_parse("80f198ee56343ba864fe8b2a57d3eff7-e457b5a2e4d86bd1-1-05e3ac9a4f6e3b90", &t, &why), 0);
    CHECK_INT(t.trace_id[0], 0x80);
    CHECK_INT(t.parent_id[0], 0xe4);
    CHECK_INT(t.flags, 1);
    CHECK_INT(sp_tc_parse("64fe8b2a57d3eff7-e457b5a2e4d86bd1-0", &t, &why), 0); /* 64-bit trace id */
    CHECK_INT(t.trace_id[0], 0);
    CHECK_INT(t.trace_id[8], 0x64);
    CHECK_INT(t.flags, 0);
    CHECK_INT(sp_tc_parse("64fe8b2a57d3eff7-e457b5a2e4d86bd1-d", &t, &why), 0); /* debug: sampled */
    CHECK_INT(t.flags, 1);
    CHECK_INT(sp_tc_parse("64fe8b2a57d3eff7-e457b5a2e4d86bd1-x", &t, &why), -1);
    CHECK_INT(sp_tc_parse_b3("80f198ee56343ba864fe8b2a57d3eff7", "e457b5a2e4d86bd1", "0", &t, &why), 0);
    CHECK_INT(t.flags, 0);
    CHECK_INT(sp_tc_parse_b3("80f198ee56343ba864fe8b2a57d3eff7", "e457b5a2e4d86bd1", NULL, &t, &why), 0);
    CHECK_INT(t.flags, 1);
    CHECK_INT(sp_tc_parse_b3("80f1", "e457b5a2e4d86bd1", NULL, &t, &why), -1);
}

static void test_ids(void)
{
    uint8_t tr[16], a[8], b[8], c[8];
    sp_tc_auto_trace_id(42, "r1", 2, tr);
    sp_tc_span_id(42, tr, "r1", 2, SP_PH_SERVER, a);
    sp_tc_span_id(42, tr, "r1", 2, SP_PH_SERVER, b);
    CHECK(!memcmp(a, b, 8)); /* derived: the same inputs, the same id */
    sp_tc_span_id(43, tr, "r1", 2, SP_PH_SERVER, c);
    CHECK(memcmp(a, c, 8) != 0); /* another process: another span */
    sp_tc_span_id(42, tr, "r1", 2, SP_PH_QUEUE, c);
    CHECK(memcmp(a, c, 8) != 0);
    /* ratio sampling: deterministic, and about the ratio over many ids */
    int yes = 0;
    for (int i = 0; i < 20000; i++) {
        char rid[16];
        int n = snprintf(rid, sizeof rid, "%d", i);
        sp_tc_auto_trace_id(7, rid, (size_t)n, tr);
        yes += sp_tc_ratio_sampled(tr, 0.25);
    }
    /* 20000 * 0.25 = 5000, sigma = sqrt(20000 * .25 * .75) = 61: 4 sigma */
    CHECK(yes > 5000 - 245 && yes < 5000 + 245);
    CHECK_INT(sp_tc_ratio_sampled(tr, 1), 1);
    CHECK_INT(sp_tc_ratio_sampled(tr, 0), 0);
}

static void test_pb_lengths(void)
{
    /* A string attribute of 300 bytes: the KeyValue's and AnyValue's lengths
     * take two varint bytes, so the bodies were moved up (nest_end). */
    char big[301];
    memset(big, 'x', 300);
    big[300] = 0;
    sp_otlp_attr at = {.key = "k", .type = SP_OTLP_STR, .s = big};
    sp_otlp_span s;
    memset(&s, 0, sizeof s);
    s.trace_id[0] = 1;
    s.span_id[0] = 2;
    s.name = "n";
    s.attrs = &at;
    s.nattrs = 1;
    sp_otlp_buf b = {0};
    sp_otlp_span_encode(&b, &s);
    CHECK(!b.oom);
    /* trace_id: tag 0x0a, len 16 */
    CHECK_INT(b.p[0], 0x0a);
    CHECK_INT(b.p[1], 16);
    /* find the attributes' tag (field 9, LEN: 0x4a) and its two-byte length */
    size_t i = 0;
    while (i < b.len && b.p[i] != 0x4a)
        i++;
    CHECK(i < b.len);
    size_t kvlen = (size_t)(b.p[i + 1] & 0x7f) | (size_t)b.p[i + 2] << 7;
    /* key: 0a 01 'k' (3) + value tag 12, 2-byte len, then string tag 0a 2-byte len + 300 */
    CHECK_INT((int)kvlen, 3 + 1 + 2 + 1 + 2 + 300);
    sp_otlp_buf_free(&b);
}

int main(void)
{
    test_traceparent();
    test_b3();
    test_ids();
    test_pb_lengths();
    CHECK_DONE();
}
