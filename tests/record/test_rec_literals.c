/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_rec_literals.c — servprof.h's literal-length wrappers (servprof__*_k,
 * used when optimizing) record exactly what the plain functions record:
 * every string length 0..40 (the inline copy's size classes), NULL
 * literals, a literal longer than SERVPROF_MAX_STRING cut on a UTF-8
 * boundary, keys inside arrays. Each record is written twice, once through
 * the macros and once through function pointers (which never see a
 * literal's length), and the two rows must be identical, counters too.
 */
#include "rec_test.h"

#define S10 "abcdefghij"
#define S100 S10 S10 S10 S10 S10 S10 S10 S10 S10 S10
#define S1000 S100 S100 S100 S100 S100 S100 S100 S100 S100 S100
/* 4095 ASCII bytes then a 2-byte character across the 4096 limit. */
#define LONG_UTF S1000 S1000 S1000 S1000 S10 S10 S10 S10 S10 S10 S10 S10 S10 \
    "abcde" "\xc3\xa9" "tail"

static const char *const lits[] = {
    "", "a", "ab", "abc", "abcd", "abcde", "abcdef", "abcdefg", "abcdefgh", "abcdefghi",
    "abcdefghij", "abcdefghijk", "abcdefghijkl", "abcdefghijklm", "abcdefghijklmn",
    "abcdefghijklmno", "abcdefghijklmnop", "abcdefghijklmnopq", "req-0000001",
    "0123456789012345678901234567890123456789",
};

typedef struct api {
    servprof_rec *(*begin)(int, const char *);
    void (*attr_str)(servprof_rec *, const char *, const char *);
    void (*attr_int)(servprof_rec *, const char *, int64_t);
    void (*res_str)(servprof_rec *, const char *);
    void (*event)(servprof_rec *, const char *);
    servprof_span (*span_begin)(servprof_rec *, const char *);
} api;

/* Through the macros: every string a literal at the call site. */
static void with_macros(int tag)
{
    servprof_rec *r = servprof_rec_begin(SERVPROF_LEVEL_INFO, "Lit");
    servprof_attr_int(r, "tag", tag);
    servprof_attr_str(r, "", "");
    servprof_attr_str(r, "a", "a");
    servprof_attr_str(r, "abc", "abcd");
    servprof_attr_str(r, "abcdefg", "abcdefgh");
    servprof_attr_str(r, "abcdefghijklmnop", "abcdefghijklmnopq");
    servprof_attr_str(r, "req", "0123456789012345678901234567890123456789");
    servprof_attr_str(r, NULL, "nullkey");
    servprof_attr_str(r, "nullval", NULL);
    servprof_attr_str(r, "long", LONG_UTF);
    servprof_attr_int(r, LONG_UTF, 7);
    servprof_res_str(r, "req-0000001");
    servprof_attr_array_begin(r, "arr");
    servprof_attr_str(r, NULL, "in-array");
    servprof_attr_str(r, "ignored-key", "x");
    servprof_attr_int(r, "ignored-too", 3);
    servprof_attr_end(r);
    servprof_event(r, "litEvent");
    r = servprof_rec_begin(SERVPROF_LEVEL_INFO, NULL);
    servprof_attr_int(r, "tag", tag);
    servprof_span_end(servprof_span_begin(r, "litSpan"));
    r = servprof_rec_begin(SERVPROF_LEVEL_INFO, LONG_UTF);
    servprof_attr_int(r, "tag", tag);
    servprof_event(r, LONG_UTF);
    r = servprof_rec_begin(SERVPROF_LEVEL_INFO, "Lit");
    servprof_attr_int(r, "tag", tag);
    servprof_event(r, NULL);
}

/* The same records through function pointers. */
static void with_pointers(const api *f, int tag)
{
    servprof_rec *r = f->begin(SERVPROF_LEVEL_INFO, "Lit");
    f->attr_int(r, "tag", tag);
    f->attr_str(r, lits[0], lits[0]);
    f->attr_str(r, lits[1], lits[1]);
    f->attr_str(r, lits[3], lits[4]);
    f->attr_str(r, lits[7], lits[8]);
    f->attr_str(r, lits[16], lits[17]);
    f->attr_str(r, "req", lits[19]);
    f->attr_str(r, NULL, "nullkey");
    f->attr_str(r, "nullval", NULL);
    f->attr_str(r, "long", LONG_UTF);
    f->attr_int(r, LONG_UTF, 7);
    f->res_str(r, lits[18]);
    servprof_attr_array_begin(r, "arr");
    f->attr_str(r, NULL, "in-array");
    f->attr_str(r, "ignored-key", "x");
    f->attr_int(r, "ignored-too", 3);
    servprof_attr_end(r);
    f->event(r, "litEvent");
    r = f->begin(SERVPROF_LEVEL_INFO, NULL);
    f->attr_int(r, "tag", tag);
    servprof_span_end(f->span_begin(r, "litSpan"));
    r = f->begin(SERVPROF_LEVEL_INFO, LONG_UTF);
    f->attr_int(r, "tag", tag);
    f->event(r, LONG_UTF);
    r = f->begin(SERVPROF_LEVEL_INFO, "Lit");
    f->attr_int(r, "tag", tag);
    f->event(r, NULL);
}

int main(void)
{
#if defined(__OPTIMIZE__)
    printf("literal-length wrappers: on\n");
#else
    printf("literal-length wrappers: off (no optimization): both sides use the plain calls\n");
#endif
    static const api plain = {servprof_rec_begin_slow, servprof_attr_str, servprof_attr_int,
                              servprof_res_str, servprof_event, servprof_span_begin};
    char dir[512], store[4096];
    rt_tmpdir(dir, sizeof dir);
    CHECK_INT(rt_open(dir, 0, store, sizeof store), 0);
    servprof_stats s0, s1, s2;
    servprof_get_stats(&s0);
    with_macros(1);
    servprof_get_stats(&s1);
    with_pointers(&plain, 2);
    servprof_get_stats(&s2);
    CHECK_INT(s1.bad_input - s0.bad_input, 3); /* null key, null value, null event name */
    CHECK_INT(s2.bad_input - s1.bad_input, s1.bad_input - s0.bad_input);
    CHECK_INT(s1.truncated - s0.truncated, 4); /* long value, key, domain, name */
    CHECK_INT(s2.truncated - s1.truncated, s1.truncated - s0.truncated);
    rt_close();

    sqlite3 *db = rt_db(store);
    CHECK_INT(rt_int(db, "SELECT count(*) FROM slice"), 8);
    /* Pairs (tag 1, tag 2) of rows that differ in anything but the tag. */
    CHECK_INT(rt_int(db, "SELECT count(*) FROM slice a JOIN slice b ON a.id < b.id AND a.name = "
                         "b.name AND a.cat = b.cat AND replace(a.args, '\"tag\":1', '\"tag\":2') = "
                         "b.args WHERE json_extract(a.args, '$.tag') = 1 AND "
                         "json_extract(b.args, '$.tag') = 2"),
              4);
    /* And they are what the API promises. */
    CHECK_STR(rt_text(db, "SELECT json_extract(args, '$.abcdefghijklmnop') FROM slice WHERE "
                          "name = 'litEvent'"),
              "abcdefghijklmnopq");
    CHECK_STR(rt_text(db, "SELECT json_extract(args, '$.arr') FROM slice WHERE name = 'litEvent'"),
              "[\"in-array\",\"x\",3]");
    CHECK_INT(rt_int(db, "SELECT length(CAST(json_extract(args, '$.long') AS BLOB)) FROM slice "
                         "WHERE name = 'litEvent'"),
              4095);
    CHECK_INT(rt_int(db, "SELECT count(*) FROM slice WHERE length(CAST(name AS BLOB)) = 4095 AND "
                         "length(CAST(cat AS BLOB)) = 4095"),
              2);
    CHECK_INT(rt_int(db, "SELECT count(*) FROM slice WHERE name = 'litSpan'"), 2);
    sqlite3_close(db);
    RT_DONE();
}
