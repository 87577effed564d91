/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_rec_domain.c — the domain filter on the hot path: only records of
 * the listed domains are kept (exact names: no prefix, no longer name),
 * records without a domain always are; literal domains (length known at
 * compile time) and runtime strings decide alike; a domain of 63 bytes can
 * match, 64 or more never; an over-long domain that is filtered out is not
 * counted as truncated.
 */
#include "rec_test.h"

static void rec(const char *domain, int i)
{
    servprof_rec *r = servprof_rec_begin_slow(SERVPROF_LEVEL_INFO, domain); /* runtime length */
    servprof_attr_int(r, "i", i);
    servprof_event(r, "e");
}

int main(void)
{
    static sp_domain_filter f;
    char d63[64], d64[65], dyn[32];
    memset(d63, 'x', 63);
    d63[63] = 0;
    memset(d64, 'x', 64);
    d64[64] = 0;
    f.n = 3;
    snprintf(f.names[0], SP_DOMAIN_LEN, "Schedule");
    snprintf(f.names[1], SP_DOMAIN_LEN, "%s", d63);
    snprintf(f.names[2], SP_DOMAIN_LEN, "Request");

    CHECK(sp_domain_pass(&f, "Schedule"));
    CHECK(sp_domain_pass(&f, d63));
    CHECK(!sp_domain_pass(&f, d64));
    CHECK(!sp_domain_pass(&f, "Sched"));
    CHECK(!sp_domain_pass(&f, "Schedules"));
    CHECK(!sp_domain_pass(&f, ""));
    CHECK(sp_domain_pass(&f, NULL));
    CHECK(sp_domain_pass(NULL, "anything"));

    char dir[512], store[4096];
    rt_tmpdir(dir, sizeof dir);
    CHECK_INT(rt_open(dir, 0, store, sizeof store), 0);
    atomic_store(&sp__domain_filter, &f);
    servprof_stats s0, s1;
    servprof_get_stats(&s0);
    /* Literal domains through the inline begin (length folded). */
    servprof_event(servprof_rec_begin(SERVPROF_LEVEL_INFO, "Schedule"), "lit-keep");
    servprof_event(servprof_rec_begin(SERVPROF_LEVEL_INFO, "Request"), "lit-keep");
    servprof_event(servprof_rec_begin(SERVPROF_LEVEL_INFO, "Sched"), "lit-drop");
    servprof_event(servprof_rec_begin(SERVPROF_LEVEL_INFO, "ScheduleX"), "lit-drop");
    servprof_event(servprof_rec_begin(SERVPROF_LEVEL_INFO, ""), "lit-drop");
    servprof_event(servprof_rec_begin(SERVPROF_LEVEL_INFO, NULL), "lit-keep");
    /* Runtime strings. */
    snprintf(dyn, sizeof dyn, "Sched%s", "ule");
    rec(dyn, 1);
    snprintf(dyn, sizeof dyn, "Request");
    rec(dyn, 2);
    snprintf(dyn, sizeof dyn, "Requests");
    rec(dyn, 3);
    rec(d63, 4);
    rec(d64, 5);
    char *huge = malloc(SERVPROF_MAX_STRING + 10);
    memset(huge, 'y', SERVPROF_MAX_STRING + 9);
    huge[SERVPROF_MAX_STRING + 9] = 0;
    rec(huge, 6);
    servprof_get_stats(&s1);
    CHECK_INT(s1.truncated - s0.truncated, 0);
    atomic_store(&sp__domain_filter, NULL);
    rec(huge, 7); /* no filter: kept, and cut (counted) */
    servprof_get_stats(&s0);
    CHECK_INT(s0.truncated - s1.truncated, 1);
    free(huge);
    rt_close();

    sqlite3 *db = rt_db(store);
    CHECK_INT(rt_int(db, "SELECT count(*) FROM slice WHERE name='lit-keep'"), 3);
    CHECK_INT(rt_int(db, "SELECT count(*) FROM slice WHERE name='lit-drop'"), 0);
    CHECK_STR(rt_text(db, "SELECT group_concat(json_extract(args,'$.i')) FROM (SELECT args FROM "
                          "slice WHERE name='e' ORDER BY id)"),
              "1,2,4,7");
    CHECK_INT(rt_int(db, "SELECT length(cat) FROM slice WHERE json_extract(args,'$.i')=7"),
              SERVPROF_MAX_STRING);
    sqlite3_close(db);
    RT_DONE();
}
