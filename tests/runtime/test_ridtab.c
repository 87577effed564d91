/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_ridtab.c — the consumer's request-id table (lib/core/ridtab.h) on
 * its own: add and find, ids that collide in a bucket, aliases (Link),
 * drop with aliases, aging by touch, and enough entries to fill the chains
 * the two users' cap allows.
 */
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "check.h"
#include "ridtab.h"

typedef struct st {
    sp_ridtab_ent e;
    int value;
    char id[];
} st;

static sp_ridtab T; /* zeroed: empty */

static st *add(const char *id, int64_t ts)
{
    size_t n = strlen(id);
    return (st *)sp_ridtab_add(&T, id, n, sp_ridtab_hash(id, n), offsetof(st, id), ts);
}

static st *look(const char *id, int64_t ts)
{
    size_t n = strlen(id);
    return (st *)sp_ridtab_lookup(&T, id, n, sp_ridtab_hash(id, n), ts);
}

static void test_add_find(void)
{
    st *a = add("req-1", 10);
    CHECK(a != NULL);
    CHECK_STR(a->id, "req-1");
    CHECK(a->e.id == a->id);
    CHECK_INT(a->value, 0); /* the user's fields come zeroed */
    CHECK(look("req-1", 20) == a);
    CHECK_INT(a->e.touch, 20);
    CHECK(look("req-2", 20) == NULL);
    CHECK(look("req-", 20) == NULL); /* a prefix is another id */
    CHECK(sp_ridtab_lookup(&T, "req-1", 0, sp_ridtab_hash("req-1", 0), 20) == NULL);
    CHECK_INT(T.n, 1);
    CHECK_INT(T.ncanon, 1);
    sp_ridtab_drop(&T, &a->e);
    CHECK(look("req-1", 30) == NULL);
    CHECK_INT(T.n, 0);
    CHECK_INT(T.ncanon, 0);
}

/* 65536 ids (the users' cap) in 16384 buckets: every chain is walked and
 * every id still found; dropping every other one keeps the rest found. */
static void test_many(void)
{
    char id[32];
    int found = 0, gone = 0;
    for (int i = 0; i < 65536; i++) {
        snprintf(id, sizeof id, "r%d", i);
        st *s = add(id, i);
        if (s)
            s->value = i;
    }
    CHECK_INT(T.n, 65536);
    for (int i = 0; i < 65536; i += 2) {
        snprintf(id, sizeof id, "r%d", i);
        st *s = look(id, 0);
        if (s)
            sp_ridtab_drop(&T, &s->e);
    }
    for (int i = 0; i < 65536; i++) {
        snprintf(id, sizeof id, "r%d", i);
        st *s = look(id, 0);
        if (i % 2)
            found += s && s->value == i;
        else
            gone += !s;
    }
    CHECK_INT(found, 32768);
    CHECK_INT(gone, 32768);
    CHECK_INT(T.n, 32768);
    sp_ridtab_free(&T);
    CHECK_INT(T.n, 0);
    CHECK(look("r1", 0) == NULL);
}

/* Link: b (with its own alias c) becomes an alias of a; every id then
 * finds a, and dropping a frees all three. */
static void test_alias(void)
{
    st *a = add("front", 1), *b = add("engine", 2), *c = add("engine2", 3);
    sp_ridtab_alias(&T, &b->e, &c->e);
    CHECK(look("engine2", 4) == b);
    CHECK_INT(T.ncanon, 2);
    sp_ridtab_alias(&T, &a->e, &b->e);
    CHECK_INT(T.ncanon, 1);
    CHECK_INT(T.n, 3);
    CHECK(look("front", 5) == a);
    CHECK(look("engine", 6) == a);
    CHECK(look("engine2", 7) == a);
    CHECK_INT(a->e.touch, 7); /* a lookup by an alias touches the canonical */
    CHECK(sp_ridtab_find(&T, "engine", 6, sp_ridtab_hash("engine", 6)) == &b->e);
    sp_ridtab_drop(&T, &a->e);
    CHECK_INT(T.n, 0);
    CHECK(look("engine", 8) == NULL);
    CHECK(look("engine2", 8) == NULL);
}

static int kept_calls;

/* Drops what is stale unless its value says "ended" (1). */
static int stale(sp_ridtab_ent *e, void *arg)
{
    int *dropped = arg;
    if (((st *)e)->value == 1) {
        kept_calls++;
        return 0;
    }
    ++*dropped;
    return 1;
}

static void test_sweep(void)
{
    st *old = add("old", 100), *ended = add("ended", 100), *fresh = add("fresh", 100);
    st *al = add("old-alias", 100);
    ended->value = 1;
    sp_ridtab_alias(&T, &old->e, &al->e);
    look("fresh", 950); /* touched late: not stale */
    int dropped = 0;
    sp_ridtab_sweep(&T, 1000, 500, stale, &dropped);
    CHECK_INT(dropped, 1); /* old (the alias is not offered: it is not canonical) */
    CHECK(kept_calls >= 1);
    CHECK(look("old", 1000) == NULL);
    CHECK(look("old-alias", 1000) == NULL);
    CHECK(look("ended", 1000) == ended);
    CHECK(look("fresh", 1000) == fresh);
    CHECK_INT(T.n, 2);
    CHECK_INT(T.ncanon, 2);
    sp_ridtab_free(&T);
    sp_ridtab_free(NULL);
}

int main(void)
{
    test_add_find();
    test_many();
    test_alias();
    test_sweep();
    CHECK_DONE();
}
