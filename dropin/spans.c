/* SPDX-License-Identifier: Apache-2.0 */
/*
 * spans.c — the reference ABI's spans: StartSpan, StartSpanWithName,
 * SpanEndEx, MarkSpanAttr, EndSpan.
 *
 * DESIGN
 * The reference's clients name a span's domain and attributes only when it
 * ends (SpanEndEx), so a span is recorded as ONE native record at its end
 * (servprof_span_at: both times, name, domain, the message), not as two
 * halves: the domain filter then applies to the span as a whole, and the
 * writer does no pairing. The start is kept on the starting thread: a
 * table of SLOTS slots (handle, start time, state, name), found from the
 * handle without a lock or a search. A handle is (thread number << 40) |
 * per-thread counter: unique in the process, never 0 (0 is "not
 * recording", returned while collection is off).
 *
 * States: OPEN (started) -> ENDED (SpanEndEx / MarkSpanAttr recorded it;
 * the C++ header then calls EndSpan, which only frees the slot) -> FREE.
 * EndSpan on an OPEN span records it without attributes, as a native span
 * end does. Counted, never recorded twice: an end of an ENDED span by
 * SpanEndEx / MarkSpanAttr or of a FREE one (Meta span_double_end); a
 * handle that is not this thread's or is too old (Meta bad_input); a span
 * still OPEN when its slot is needed again, SLOTS spans later (Meta
 * spans_never_ended). Spans still open when a session stops are not seen
 * (docs/dropin.md).
 *
 * The table is allocated on a thread's first span and freed when the
 * thread exits (a pthread key).
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "dropin.h"

#define SLOTS 256                 /* open spans per thread before one is evicted */
#define NAME_KEEP 128             /* bytes of the start's name kept (with NUL) */
#define COUNTER_BITS 40

enum { FREE = 0, OPEN = 1, ENDED = 2 };

typedef struct slot {
    uint64_t handle;
    int64_t start_ns;
    int state;
    char name[NAME_KEEP];
} slot;

typedef struct span_table {
    uint64_t thread_no;
    uint64_t counter;
    slot s[SLOTS];
} span_table;

static _Thread_local span_table *mine;
static _Atomic uint64_t threads_seen;
static pthread_key_t table_key;
static pthread_once_t key_once = PTHREAD_ONCE_INIT;

static void table_free(void *t)
{
    free(t);
}

static void make_key(void)
{
    (void)pthread_key_create(&table_key, table_free);
}

static span_table *my_table(void)
{
    if (__builtin_expect(mine != NULL, 1))
        return mine;
    span_table *t = calloc(1, sizeof *t);
    if (!t)
        return NULL;
    t->thread_no = atomic_fetch_add(&threads_seen, 1) + 1;
    pthread_once(&key_once, make_key);
    (void)pthread_setspecific(table_key, t);
    mine = t;
    return t;
}

/* The slot of handle h on this thread, or NULL (counted as bad input). */
static slot *find(SpanHandle h)
{
    span_table *t = mine;
    if (!t || (h >> COUNTER_BITS) != t->thread_no) {
        servprof__count(SERVPROF__COUNT_BAD_INPUT, 1);
        return NULL;
    }
    slot *s = &t->s[(h & ((1ULL << COUNTER_BITS) - 1)) % SLOTS];
    if (s->handle != h) {
        servprof__count(SERVPROF__COUNT_BAD_INPUT, 1);
        return NULL;
    }
    return s;
}

DROPIN_API SpanHandle StartSpanWithName(const char *name)
{
    if (dropin_level() <= 0)
        return 0;
    span_table *t = my_table();
    if (!t)
        return 0;
    t->counter++;
    slot *s = &t->s[(t->counter & ((1ULL << COUNTER_BITS) - 1)) % SLOTS];
    if (s->state == OPEN)
        servprof__count(SERVPROF__COUNT_NEVER_ENDED, 1);
    s->handle = (t->thread_no << COUNTER_BITS) | (t->counter & ((1ULL << COUNTER_BITS) - 1));
    s->state = OPEN;
    size_t n = name ? strnlen(name, NAME_KEEP) : 0;
    if (n == NAME_KEEP) {
        n = NAME_KEEP - 1; /* only used when the end names no span */
        servprof__count(SERVPROF__COUNT_TRUNCATED, 1);
    }
    memcpy(s->name, name ? name : "", n);
    s->name[n] = 0;
    s->start_ns = servprof_now_ns();
    return s->handle;
}

DROPIN_API SpanHandle StartSpan(void)
{
    return StartSpanWithName("");
}

/* Records the span of slot s, now ended; take: the legacy message form. */
static void record(slot *s, const char *name, const char *domain, const char *msg, int take)
{
    int64_t end = servprof_now_ns();
    s->state = ENDED;
    servprof_rec *r = dropin_begin(domain);
    if (!r)
        return;
    if (msg)
        servprof__attr_msg(r, take, msg, dropin_msg_len(msg));
    servprof_span_at(r, name && *name ? name : s->name, s->start_ns, end);
}

/* Ends span h with a message (take: the legacy form), once. */
static void end_with(SpanHandle h, const char *name, const char *domain, const char *msg,
                     int take)
{
    if (!h)
        return; /* begun while collection was off */
    slot *s = find(h);
    if (!s)
        return;
    if (s->state != OPEN) {
        servprof__count(SERVPROF__COUNT_DOUBLE_END, 1);
        return;
    }
    record(s, name, domain, msg, take);
}

DROPIN_API void SpanEndEx(const char *name, const char *domain, const char *msg,
                          SpanHandle spanHandle)
{
    end_with(spanHandle, name, domain, msg ? msg : "", 0);
}

/* The legacy end: name, domain and attributes inside msg. */
DROPIN_API void MarkSpanAttr(const char *msg, SpanHandle spanHandle)
{
    if (msg) /* NULL is ignored, as the reference does */
        end_with(spanHandle, NULL, NULL, msg, 1);
}

DROPIN_API void EndSpan(SpanHandle spanHandle)
{
    if (!spanHandle)
        return;
    slot *s = find(spanHandle);
    if (!s)
        return;
    if (s->state == ENDED) { /* the C++ header's SpanEnd(): SpanEndEx, then EndSpan */
        s->state = FREE;
        return;
    }
    if (s->state == FREE) {
        servprof__count(SERVPROF__COUNT_DOUBLE_END, 1);
        return;
    }
    record(s, NULL, NULL, NULL, 0);
    s->state = FREE;
}
