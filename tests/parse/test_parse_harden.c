/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_parse_harden.c — the args decoder on hostile input: numbers beyond every integer type become "absent" and
 * are counted (never undefined behaviour: this test runs in the sanitizer
 * builds), JSON strings decode exactly (surrogate pairs to one 4-byte UTF-8
 * sequence, \u0000 and lone surrogates to U+FFFD, malformed escapes make
 * the text invalid), and ids of any length stay distinct: an id escaped
 * by one writer and raw from another is one request, however long.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "argdecode.h"
#include "check.h"
#include "fmt.h"
#include "ids.h"

static void decode(prs_args *a, const char *s) { prs_args_decode(a, s, (int)strlen(s)); }

static void test_ranges(void)
{
    prs_args a;
    prs_args_init(&a);
    a.range_errors = 0;
    /* What the library writes for servprof_attr_int(r, "iter", 5000000000). */
    decode(&a, "{\"rid\":[{\"rid\":\"r1\",\"iter\":5000000000,\"type\":1e300,\"num_scheduled_tokens\":1e30}],"
               "\"type\":-3000000000,\"scope#device\":2147483648,\"scope#cpu\":\"1e400\","
               "\"recvTokenSize=\":9007199254740994,\"replyTokenSize=\":-1e19,\"QueueSize=\":12}");
    CHECK_INT(a.valid, 1);
    CHECK_INT(a.nrids, 1);
    CHECK_INT(a.rids[0].iter, -1);
    CHECK_INT(a.rids[0].type, -1);
    CHECK(isnan(a.rids[0].sched_tokens));
    CHECK_INT(a.type, -1);
    CHECK_INT(a.device, -1);
    CHECK_INT(a.cpu_index, -1);
    CHECK(isnan(a.recv_tokens));
    CHECK(isnan(a.reply_tokens));
    CHECK(a.queue_size == 12);
    CHECK_INT(a.range_errors, 8);

    /* The edges that are still in range are kept exactly. */
    a.range_errors = 0;
    decode(&a, "{\"rid\":[{\"rid\":\"r1\",\"iter\":2147483647,\"type\":-2147483648}],"
               "\"scope#device\":7,\"recvTokenSize=\":9007199254740992,\"replyTokenSize=\":-9007199254740992}");
    CHECK_INT(a.rids[0].iter, 2147483647);
    CHECK_INT(a.rids[0].type, -2147483647 - 1);
    CHECK_INT(a.device, 7);
    CHECK(a.recv_tokens == 9007199254740992.0);
    CHECK(a.reply_tokens == -9007199254740992.0);
    CHECK_INT(a.range_errors, 0);
    prs_args_free(&a);
}

/* The rid of a one-entry text, unescaped. */
static int rid_of(const char *text, char *buf, int cap)
{
    prs_args a;
    prs_args_init(&a);
    decode(&a, text);
    int n = a.rid_kind == 1 ? prs_str_copy(a.rid, buf, cap) : -1;
    prs_args_free(&a);
    return n;
}

static void test_strings(void)
{
    char buf[64];
    /* U+1F600 as Python's json.dumps writes it: one 4-byte sequence. */
    CHECK_INT(rid_of("{\"rid\":\"a\\ud83d\\ude00b\"}", buf, sizeof buf), 6);
    CHECK(!memcmp(buf, "a\xF0\x9F\x98\x80" "b", 6));
    /* BMP escapes, and the escapes with one letter. */
    CHECK_INT(rid_of("{\"rid\":\"\\u00e9\\u20ac\\n\\\"\\/\"}", buf, sizeof buf), 8);
    CHECK(!memcmp(buf, "\xC3\xA9\xE2\x82\xAC\n\"/", 8));
    /* \u0000 would cut the id short in every C string: U+FFFD instead. */
    CHECK_INT(rid_of("{\"rid\":\"a\\u0000b\"}", buf, sizeof buf), 5);
    CHECK(!memcmp(buf, "a\xEF\xBF\xBD" "b", 5));
    CHECK_INT((int)strlen(buf), 5);
    /* Unpaired surrogates (high alone, low alone, high then non-low). */
    CHECK_INT(rid_of("{\"rid\":\"\\ud83dx\"}", buf, sizeof buf), 4);
    CHECK(!memcmp(buf, "\xEF\xBF\xBDx", 4));
    CHECK_INT(rid_of("{\"rid\":\"\\ude00\"}", buf, sizeof buf), 3);
    CHECK_INT(rid_of("{\"rid\":\"\\ud83d\\u0041\"}", buf, sizeof buf), 4);
    CHECK(!memcmp(buf, "\xEF\xBF\xBD" "A", 4));
    /* A cut never splits a UTF-8 sequence. */
    CHECK_INT(rid_of("{\"rid\":\"ab\\ud83d\\ude00\"}", buf, 5), 2);

    /* Malformed escapes: the text is not valid JSON (it would break the trace). */
    prs_args a;
    prs_args_init(&a);
    static const char *const bad[] = {"{\"rid\":\"\\q\"}", "{\"rid\":\"\\u12\"}", "{\"rid\":\"\\u12G4\"}",
                                      "{\"rid\":\"abc\\", "{\"x\":\"\\x41\"}"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        decode(&a, bad[i]);
        CHECK_INT(a.valid, 0);
    }
    prs_args_free(&a);
}

/* An id of n bytes: "L" then digits of i, padded with non-ASCII (é). */
static void long_id(char *raw, char *esc, int n, int variant)
{
    int o = 0, e = 0;
    o += sprintf(raw, "L%d-", variant);
    e += sprintf(esc, "L%d-", variant);
    while (o + 2 <= n) {
        memcpy(raw + o, "\xC3\xA9", 2);
        memcpy(esc + e, "\\u00e9", 6);
        o += 2;
        e += 6;
    }
    raw[o] = esc[e] = 0;
}

static void test_long_ids(void)
{
    static char raw1[4096], esc1[4096 * 3], raw2[4096], esc2[4096 * 3], text[16384];
    prs_ids *ids = prs_ids_new();
    prs_args a;
    prs_args_init(&a);
    long_id(raw1, esc1, 2000, 1);
    long_id(raw2, esc2, 2000, 2);
    /* Two ids that differ only after the first 511 bytes. */
    raw2[1] = '1';
    esc2[1] = '1';
    raw2[1500] = 'x';
    raw2[1501] = 'y';
    CHECK(strcmp(raw1, raw2) != 0);

    snprintf(text, sizeof text, "{\"rid\":\"%s\"}", raw1);
    decode(&a, text);
    int n_raw = prs_ids_get_str(ids, a.rid);
    snprintf(text, sizeof text, "{\"rid\":\"%s\"}", esc1);
    decode(&a, text);
    CHECK(a.rid.esc);
    int n_esc = prs_ids_get_str(ids, a.rid);
    CHECK_INT(n_esc, n_raw); /* Python's escaped id and C's raw one: the same request */
    CHECK_INT(prs_ids_name_len(ids, n_raw), (int)strlen(raw1));

    snprintf(text, sizeof text, "{\"rid\":\"%s\"}", raw2);
    decode(&a, text);
    int n2 = prs_ids_get_str(ids, a.rid);
    CHECK(n2 != n_raw);
    CHECK_INT(prs_ids_find_str(ids, a.rid), n2);
    CHECK_INT(prs_ids_count(ids), 2);
    prs_args_free(&a);
    prs_ids_free(ids);
}

/* One CSV field as prs_csv_field writes it. */
static const char *csv_of(const char *s)
{
    static char out[256];
    memset(out, 0, sizeof out);
    FILE *f = fmemopen(out, sizeof out - 1, "w");
    prs_csv_field(f, s, (int)strlen(s));
    fclose(f);
    return out;
}

/* Formula injection: text a spreadsheet would run gets a leading quote;
 * numbers and ordinary text are written as they are. */
static void test_csv_injection(void)
{
    CHECK_STR(csv_of("=cmd|' /C calc'!A0"), "\"'=cmd|' /C calc'!A0\"");
    CHECK_STR(csv_of("@SUM(A1)"), "\"'@SUM(A1)\"");
    CHECK_STR(csv_of("+1+2"), "\"'+1+2\"");
    CHECK_STR(csv_of("-2+3,x"), "\"'-2+3,x\"");
    CHECK_STR(csv_of("\tx"), "\"'\tx\"");
    CHECK_STR(csv_of("\rx"), "\"'\rx\"");
    CHECK_STR(csv_of("=\"q\""), "\"'=\"\"q\"\"\"");
    CHECK_STR(csv_of("-3"), "-3");
    CHECK_STR(csv_of("+1.5e3"), "+1.5e3");
    CHECK_STR(csv_of("-0.25"), "-0.25");
    CHECK_STR(csv_of("req-1=2"), "req-1=2");
    CHECK_STR(csv_of("a,b"), "\"a,b\"");
    CHECK_STR(csv_of(""), "");
    CHECK_STR(csv_of("-"), "\"'-\"");
}

int main(void)
{
    test_csv_injection();
    test_ranges();
    test_strings();
    test_long_ids();
    CHECK_DONE();
}
