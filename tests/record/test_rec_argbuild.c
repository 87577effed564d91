/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_rec_argbuild.c — the JSON text of argbuild.c on its own: string escaping
 * (invalid UTF-8 becomes \ufffd), shortest exact numbers, and valid JSON
 * for random doubles and random byte strings.
 */
#include <math.h>
#include <stdlib.h>

#include "argbuild.h"
#include "rec_test.h"

static const char *str_json(const char *s, size_t n)
{
    static sp_sbuf b;
    sp_sb_clear(&b);
    sp_json_str(&b, s, n);
    return sp_sb_cstr(&b);
}

static const char *dbl_json(double v)
{
    static sp_sbuf b;
    sp_sb_clear(&b);
    sp_json_double(&b, v);
    return sp_sb_cstr(&b);
}

static uint64_t rng = 88172645463325252ULL;
static uint64_t next_rand(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

int main(void)
{
    /* Strings. */
    CHECK_STR(str_json("plain", 5), "\"plain\"");
    CHECK_STR(str_json("q\"b\\s/", 6), "\"q\\\"b\\\\s/\"");
    CHECK_STR(str_json("\n\r\t\b\f\x01\x1f", 7), "\"\\n\\r\\t\\b\\f\\u0001\\u001f\"");
    CHECK_STR(str_json("a\0b", 3), "\"a\\u0000b\"");
    CHECK_STR(str_json("\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80", 9),
              "\"\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80\""); /* é € 😀 kept */
    CHECK_STR(str_json("\xff", 1), "\"\\ufffd\"");
    CHECK_STR(str_json("a\xc3", 2), "\"a\\ufffd\"");          /* cut sequence */
    CHECK_STR(str_json("\xc0\x80", 2), "\"\\ufffd\\ufffd\""); /* overlong NUL */
    CHECK_STR(str_json("\xed\xa0\x80", 3), "\"\\ufffd\\ufffd\\ufffd\""); /* surrogate */
    CHECK_STR(str_json("\xf4\x90\x80\x80", 4), "\"\\ufffd\\ufffd\\ufffd\\ufffd\"");
    CHECK_STR(str_json("\xe0\x9f\xbf", 3), "\"\\ufffd\\ufffd\\ufffd\""); /* overlong 3 */
    CHECK_STR(str_json("x\x80y", 3), "\"x\\ufffdy\"");

    /* Numbers: exact and short. */
    CHECK_STR(dbl_json(0.5), "0.5");
    CHECK_STR(dbl_json(0.1), "0.1");
    CHECK_STR(dbl_json(3.0), "3");
    CHECK_STR(dbl_json(-2.0), "-2");
    CHECK_STR(dbl_json(0.0), "0");
    CHECK_STR(dbl_json(-0.0), "-0.0");
    CHECK_STR(dbl_json(1.0 / 3), "0.3333333333333333");
    CHECK_STR(dbl_json(0.1 + 0.2), "0.30000000000000004");
    CHECK_STR(dbl_json(1e300), "1e+300");
    CHECK_STR(dbl_json(1e-7), "1e-07");
    CHECK_STR(dbl_json(9007199254740992.0), "9007199254740992");
    CHECK_STR(dbl_json(123.456), "123.456");
    CHECK_STR(dbl_json(NAN), "null");
    CHECK_STR(dbl_json(INFINITY), "null");
    CHECK_STR(dbl_json(-INFINITY), "null");
    CHECK_STR(dbl_json(5e-324), "4.94065645841247e-324"); /* subnormal: 15 digits suffice */

    /* Random doubles: the text reads back to the same bits, is no longer
     * than %.17g, and is a valid JSON number. */
    int bad = 0, longer = 0, invalid = 0;
    for (int i = 0; i < 200000; i++) {
        uint64_t bits = next_rand();
        double v;
        memcpy(&v, &bits, 8);
        if (!isfinite(v))
            continue;
        const char *t = dbl_json(v);
        if (strtod(t, NULL) != v)
            bad++;
        char ref[400]; /* one digit less must not read back (normal doubles) */
        int digits = 0, seen = 0;
        for (const char *c = t; *c && *c != 'e'; c++) {
            seen |= *c >= '1' && *c <= '9'; /* significant from the first non-zero */
            digits += seen && *c >= '0' && *c <= '9';
        }
        snprintf(ref, sizeof ref, "%.*g", digits > 1 ? digits - 1 : 1, v);
        if (digits > 15 && fabs(v) >= 2.2250738585072014e-308 && v != floor(v) &&
            strtod(ref, NULL) == v) /* integral values print in full, as integers */
            longer++;
        if (i % 100 == 0) {
            char doc[64];
            snprintf(doc, sizeof doc, "[%s]", t);
            json_error_t err;
            json_t *j = json_loads(doc, 0, &err);
            if (!j)
                invalid++;
            json_decref(j);
        }
    }
    CHECK_INT(bad, 0);
    CHECK_INT(longer, 0);
    CHECK_INT(invalid, 0);

    /* Integers. */
    sp_sbuf b = {0};
    sp_json_int(&b, INT64_MIN);
    sp_sb_put(&b, " ", 1);
    sp_json_int(&b, INT64_MAX);
    sp_sb_put(&b, " ", 1);
    sp_json_int(&b, 0);
    CHECK_STR(sp_sb_cstr(&b), "-9223372036854775808 9223372036854775807 0");
    sp_sb_free(&b);

    /* Random byte strings always make valid JSON strings. */
    int bad_str = 0;
    for (int i = 0; i < 20000; i++) {
        char s[32];
        size_t n = next_rand() % sizeof s;
        for (size_t k = 0; k < n; k++)
            s[k] = (char)next_rand();
        char doc[256];
        snprintf(doc, sizeof doc, "[%s]", str_json(s, n));
        json_error_t err;
        json_t *j = json_loads(doc, JSON_ALLOW_NUL, &err);
        if (!j)
            bad_str++;
        json_decref(j);
    }
    CHECK_INT(bad_str, 0);
    RT_DONE();
}
