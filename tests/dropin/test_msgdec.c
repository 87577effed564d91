/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_msgdec.c — the message decoder (lib/record/msgdec.c) case by case: each
 * input, whether name and domain are taken from it, and the args members,
 * name, domain, type and malformed flag it must give. Then every case and
 * a set of broken inputs go through the fuzz entry (servprof__msg_fuzz),
 * which aborts when the output is not JSON.
 */
#include <stdlib.h>
#include <string.h>

#include "argbuild.h"
#include "check.h"
#include "ext.h"
#include "msgdec.h"

typedef struct tcase {
    const char *in;
    int take;
    const char *members; /* what follows {"type":N */
    int type;            /* -1: none */
    const char *name, *domain; /* NULL: not taken */
    int malformed;
} tcase;

static const tcase cases[] = {
    /* the Python package: json.dumps, ", " / ": " separators, type last */
    {"{\"rid\": \"r1\", \"QueueSize=\": 3.0, \"type\": 0}", 0, ",\"rid\":\"r1\",\"QueueSize=\":3", 0,
     NULL, NULL, 0},
    /* \u escapes decoded and re-encoded as UTF-8; a surrogate pair */
    {"{\"s\": \"h\\u00e9llo \\u2713 \\ud83d\\ude00\", \"type\": 2}", 0,
     ",\"s\":\"h\xc3\xa9llo \xe2\x9c\x93 \xf0\x9f\x98\x80\"", 2, NULL, NULL, 0},
    /* the C++ header: std::to_string numbers, nested JSON values */
    {"{\"d\":0.500000,\"rid\":[{\"rid\":\"a\",\"iter\":0}],\"type\":2}", 0,
     ",\"d\":0.5,\"rid\":[{\"rid\":\"a\",\"iter\":0}]", 2, NULL, NULL, 0},
    /* NaN / Infinity (Python writes them) become null, as native doubles */
    {"{\"a\": NaN, \"b\": -Infinity, \"c\": Infinity}", 0, ",\"a\":null,\"b\":null,\"c\":null",
     -1, NULL, NULL, 0},
    /* integers beyond int64 kept as written; -0 and exponents normalized */
    {"{\"big\": 1180591620717411303424, \"m\": -9223372036854775808, \"e\": 1e2, \"o\": 1e999, \"z\": -0}", 0,
     ",\"big\":1180591620717411303424,\"m\":-9223372036854775808,\"e\":100,\"o\":null,\"z\":0", -1, NULL, NULL, 0},
    /* true / false / null, an empty object and array, escapes kept escaped */
    {"{\"t\":true,\"f\":false,\"n\":null,\"o\":{},\"l\":[],\"q\":\"a\\\"b\\\\c\\n\"}", 0,
     ",\"t\":true,\"f\":false,\"n\":null,\"o\":{},\"l\":[],\"q\":\"a\\\"b\\\\c\\n\"", -1, NULL, NULL,
     0},
    /* "" and {}: no members */
    {"", 0, "", -1, NULL, NULL, 0},
    {"  {}  ", 0, "", -1, NULL, NULL, 0},
    /* the legacy ^key^ text, name and domain taken */
    {"^name^:^httpReq^,^domain^:^Request^,^rid^:^r7^,^type^:0,", 1, ",\"rid\":\"r7\"", 0,
     "httpReq", "Request", 0},
    /* name and domain stay members when the record has its own */
    {"{\"name\":\"x\",\"domain\":\"y\"}", 0, ",\"name\":\"x\",\"domain\":\"y\"", -1, NULL, NULL, 0},
    /* a "type" that is not 0..3 is dropped and not used */
    {"{\"type\":7,\"k\":1}", 0, ",\"k\":1", -1, NULL, NULL, 0},
    /* malformed: members before the fault kept, then the whole text */
    {"{\"rid\": \"r1\", \"n\": 3,, oops", 0,
     ",\"rid\":\"r1\",\"n\":3,\"raw\":\"{\\\"rid\\\": \\\"r1\\\", \\\"n\\\": 3,, oops\"", -1, NULL,
     NULL, 1},
    {"^name^:^bad^,^rid^:^a\"b^,", 1, ",\"rid\":\"a\",\"raw\":\"^name^:^bad^,^rid^:^a\\\"b^,\"",
     -1, "bad", NULL, 1},
    {"[1, 2]", 0, ",\"raw\":\"[1, 2]\"", -1, NULL, NULL, 1},
    {"{\"a\":1} trailing", 0, ",\"a\":1,\"raw\":\"{\\\"a\\\":1} trailing\"", -1, NULL, NULL, 1},
    {"{\"a\":\"\\x\"}", 0, ",\"raw\":\"{\\\"a\\\":\\\"\\\\x\\\"}\"", -1, NULL, NULL, 1},
    /* invalid UTF-8 in a value: U+FFFD escapes, as native strings */
    {"{\"s\":\"\xff\"}", 0, ",\"s\":\"\\ufffd\"", -1, NULL, NULL, 0},
};

/* Inputs that must only not crash and give JSON (the fuzz entry checks). */
static const char *const broken[] = {
    "{", "}", "{\"", "{\"a\"", "{\"a\":", "{\"a\":-", "{\"a\":1.", "{\"a\":1e", "{\"a\":tru",
    "{\"a\":\"\\u12\"}", "{\"a\":\"\\ud800\"}", "{\"a\":[1,2", "{\"a\":{\"b\":", "^^^^", ",", "^a^",
    "{\"a\":[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]}",
    "{\"a\":01}", "{\"a\":+1}", "{\"a\":.5}", "{'a':1}", "{\"a\":1,}", "\x00\x01\x02",
};

int main(void)
{
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const tcase *c = &cases[i];
        sp_msg m = {0};
        sp_sbuf b = {0};
        sp_msg_reset(&m);
        m.take = c->take;
        sp_msg_decode(&m, &b, c->in, strlen(c->in));
        sp_sb_cstr(&b);
        fprintf(stderr, "case %zu: %s\n", i, c->in);
        CHECK_STR(b.p ? b.p : "", c->members);
        CHECK_INT(m.type, c->type);
        CHECK_INT(m.malformed, c->malformed);
        CHECK_INT(m.has_name, c->name != NULL);
        if (c->name && m.has_name)
            CHECK_STR(m.name.p, c->name);
        CHECK_INT(m.has_domain, c->domain != NULL);
        if (c->domain && m.has_domain)
            CHECK_STR(m.domain.p, c->domain);
        CHECK_INT(servprof__msg_fuzz((const uint8_t *)c->in, strlen(c->in)), 0);
        sp_sb_free(&b);
        sp_msg_free(&m);
    }
    for (size_t i = 0; i < sizeof broken / sizeof broken[0]; i++)
        CHECK_INT(servprof__msg_fuzz((const uint8_t *)broken[i], strlen(broken[i])), 0);
    CHECK_INT(servprof__msg_fuzz((const uint8_t *)"\x00\x01\x02", 3), 0);
    /* nesting past the bound is malformed, not a deep recursion */
    char deep[200];
    strcpy(deep, "{\"a\":");
    for (int i = 0; i < 60; i++)
        strcat(deep, "[");
    sp_msg m = {0};
    sp_sbuf b = {0};
    sp_msg_reset(&m);
    sp_msg_decode(&m, &b, deep, strlen(deep));
    CHECK_INT(m.malformed, 1);
    sp_sb_free(&b);
    sp_msg_free(&m);
    CHECK_DONE();
}
