/* SPDX-License-Identifier: Apache-2.0 */
/*
 * readers.c — the stores read on reader threads (`servprof parse --jobs N`,
 * docs/parse.md "Parallel parse").
 *
 * Each store gets a ring: a fixed array of RING_RECS slots, each a record
 * whose strings (name, cat, args) are copied, because a store's strings
 * are valid only until its cursor steps. The copies go, one after the
 * other, into the ring's text: one buffer of TEXT_BYTES allocated once and
 * used circularly (a record that would straddle its end starts again at
 * its start, the gap charged to that record), so the memory the readers
 * touch is the text buffers and nothing more; a record over BIG bytes (an
 * args text near argcap's 1 MiB limit) gets a buffer of its own instead,
 * freed when its slot is used again. (Each slot had a buffer of its own
 * before: every one grew to the longest record it had seen, 3.7 KiB of a
 * step's rid list, so the rings touched 36 MiB for 3 MiB of records — 45 %
 * of --jobs 2's page faults.) A
 * reader thread serves its stores round robin (thread t: stores t,
 * t + threads, ...): it runs exactly what the parse thread would run —
 * prs_store_peek, copy, prs_store_next, so the SQLite or raw scan, argcap,
 * the reorder window and the one-pass check stay in storeread.c — and
 * fills whichever of its rings has room, up to BATCH records at a time.
 * It never waits on one ring while another of its rings has room, so the
 * merge waiting on an empty ring of a thread whose other rings are full
 * cannot deadlock it. A ring takes records while it holds fewer than
 * RING_RECS and no more than half its text (then any record up to BIG
 * fits), which bounds what the readers hold to stores x (TEXT_BYTES + one
 * record) whatever the input.
 *
 * The merge (merge.c) stays on the parse thread and pops the rings in
 * today's order (timestamp, store index; each ring is its store's own
 * order), so the model sees the same records in the same order as with
 * --jobs 1 and every output is the same, byte for byte.
 *
 * One mutex and two condition variables per thread, shared by its rings:
 * `prod` wakes the reader when the merge has freed room, `cons` wakes the
 * merge when a ring it waits on got records or ended. The merge takes the
 * lock only when it has used up what it last saw published, or every
 * BATCH records to give room back, not on every record; a waiting reader
 * is woken when half its ring is free. The reader is woken whenever a
 * ring is empty, and the merge waits only on an empty ring, so neither
 * waits for the other for good.
 *
 * Shared state the readers touch besides their own stores is in the
 * parse's context (storeread.h: atomic counters, a locked warning table);
 * each reader logs at the parse thread's level (plog.c's is per thread).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* sched_getaffinity, CPU_COUNT */
#endif
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>

#include "argdecode.h"
#include "plog.h"
#include "readers.h"
#include "thrcpu.h"
#include "xalloc.h"

#define RING_RECS 1024
/* A ring's text: 1,024 records of bench_parse's stores take 330 KiB. */
#define TEXT_BYTES ((size_t)512 << 10)
#define BIG (TEXT_BYTES / 4)
#define BATCH 128

typedef struct slot {
    prs_rec rec;
    char *big;            /* its own buffer, when its text is over BIG */
    size_t len;           /* what it holds of the ring's text, the gap included */
    prs_args args;        /* rec's args decoded here (short ones: PRS_READERS_DECODE_MAX) */
} slot;

struct worker;

typedef struct ring {
    prs_store *s;
    struct worker *w;
    slot *slots;          /* RING_RECS of them */
    char *text;           /* TEXT_BYTES, used circularly (see the top) */
    /* under w->mu */
    int count;            /* published and not yet given back */
    size_t bytes;         /* their text (the gaps and big ones' too) */
    int done;             /* the store ended: no record after these */
    unsigned tail;        /* the reader's next slot */
    /* the reader's own */
    size_t text_at;       /* where the next record's text goes */
    /* the merge's own (parse thread) */
    unsigned head;        /* its current slot */
    int avail;            /* published records it has seen and not used */
    int used;             /* used, not yet given back */
    size_t used_bytes;
} ring;

typedef struct worker {
    pthread_t th;
    int started;
    pthread_mutex_t mu;
    pthread_cond_t prod, cons;
    int prod_waiting, cons_waiting, stop;
    int go;               /* every thread started: reading may begin */
    ring **rings;
    int nr;
    int level;            /* the parse thread's log level */
} worker;

struct prs_readers {
    ring *rings;          /* by store index */
    int n;
    worker *w;
    int nw;
};

int prs_readers_cpus(void)
{
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) != 0)
        return 1;
    int n = CPU_COUNT(&set);
    return n > 0 ? n : 1;
}

/* The default: every CPU this process may use, unless the machine is
 * busy — the threads cost about a sixth more work in all (the copies and
 * hand-overs: docs/benchmarks.md, "Parse"), which pays only when a core
 * is free for them; with a 1-minute load average above cpus - 1 there is
 * none, and one thread is faster. The outputs are the same either way. */
int prs_readers_jobs(int asked)
{
    if (asked > 0)
        return asked;
    int cpus = prs_readers_cpus();
    double load;
    if (cpus > 1 && getloadavg(&load, 1) == 1 && load > cpus - 1)
        return 1;
    return cpus;
}

/* Two cores (measured, docs/parse.md "Parallel parse"): a reader and the
 * encoders on threads beside the parse thread made six threads for two
 * cores, and the run was no faster than --jobs 1 (0.96-1.08x). Moved off
 * the thread that makes the rows, the encoders took twice the CPU (77 ->
 * 167 ms: each row is copied and read again on another core), the
 * readers shared the second core with them and fell behind, and the parse
 * thread slept 120 ms of 270 waiting for records (perf sched). One reader
 * and the encoders where the rows are made: 1.10-1.25x. With more cores
 * the encoders' threads have cores of their own, and the parse thread is
 * then the bound (docs/parse.md: the 16-core derivation). */
int prs_readers_threads(int jobs, int n)
{
    int t = jobs == 2 ? 1 : jobs;
    return t < n ? t : n;
}

int prs_readers_writers(int jobs)
{
    return jobs > 2;
}

/* What r's copy counts against g's text from g->text_at: its bytes (*need),
 * plus the gap before them when they would pass the end. A big one takes
 * no room in it but counts all the same, so that the bound holds. */
static size_t charge(const ring *g, const prs_rec *r, size_t *need)
{
    *need = strlen(r->name) + 1 + strlen(r->cat) + 1 + (size_t)r->args_len + 1;
    if (*need > BIG)
        return *need; /* its own buffer, but it counts towards the bound */
    if (g->text_at + *need > TEXT_BYTES)
        return TEXT_BYTES - g->text_at + *need;
    return *need;
}

/* Copies r into sl: its strings into g's text (or sl->big), need bytes of
 * it; cost is what charge() said. */
static void put(ring *g, slot *sl, const prs_rec *r, size_t need, size_t cost)
{
    free(sl->big);
    sl->big = NULL;
    char *b;
    if (need > BIG) {
        b = sl->big = prs_xmalloc(need);
    } else {
        if (g->text_at + need > TEXT_BYTES)
            g->text_at = 0;
        b = g->text + g->text_at;
        g->text_at += need;
    }
    size_t ln = strlen(r->name) + 1, lc = strlen(r->cat) + 1, la = (size_t)r->args_len + 1;
    memcpy(b, r->name, ln);
    memcpy(b + ln, r->cat, lc);
    memcpy(b + ln + lc, r->args, la - 1);
    b[ln + lc + la - 1] = 0;
    sl->rec = *r;
    sl->rec.name = b;
    sl->rec.cat = b + ln;
    sl->rec.args = b + ln + lc;
    sl->rec.pre = NULL;
    /* Short args are decoded here, while the copy is in this core's cache:
     * on the merge's thread the same decode cost 3x (its reads missed),
     * and it was a sixth of that thread's work. Long ones (a step's rid
     * list, carried byte-identical by three spans) stay with the model,
     * whose cache decodes them once (model.c). */
    if (r->args_len < PRS_READERS_DECODE_MAX) {
        sl->args.range_errors = 0;
        prs_args_decode(&sl->args, sl->rec.args, r->args_len);
        sl->rec.pre = &sl->args;
    }
    sl->len = cost;
}

/* A ring of w with room, round robin from *next; NULL when none has room.
 * *live: whether any has not ended. Under w->mu. */
static ring *pick(worker *w, int *next, int *live)
{
    *live = 0;
    for (int k = 0; k < w->nr; k++) {
        int i = (*next + k) % w->nr;
        ring *g = w->rings[i];
        if (g->done)
            continue;
        *live = 1;
        if (g->count < RING_RECS && (g->count == 0 || g->bytes <= TEXT_BYTES / 2)) {
            *next = (i + 1) % w->nr;
            return g;
        }
    }
    return NULL;
}

static void *work(void *arg)
{
    worker *w = arg;
    prs_log_set_level(w->level);
    pthread_setname_np(pthread_self(), "sp-reader");
    int next = 0;
    pthread_mutex_lock(&w->mu);
    while (!w->go && !w->stop)
        pthread_cond_wait(&w->prod, &w->mu);
    while (!w->stop) {
        int live;
        ring *g = pick(w, &next, &live);
        if (!live)
            break;
        if (!g) {
            w->prod_waiting = 1;
            pthread_cond_wait(&w->prod, &w->mu);
            w->prod_waiting = 0;
            continue;
        }
        /* Slots [tail, tail + room) are not the merge's until published. */
        int room = RING_RECS - g->count;
        if (room > BATCH)
            room = BATCH;
        size_t had = g->bytes; /* only the merge lowers it meanwhile */
        unsigned t = g->tail;
        pthread_mutex_unlock(&w->mu);
        if (had == 0)
            g->text_at = 0; /* all given back: no gap needed */
        int k = 0, ended = 0;
        size_t bytes = 0;
        while (k < room) {
            prs_rec r;
            if (!prs_store_peek(g->s, &r)) {
                ended = 1;
                break;
            }
            /* The text in use is at most had + bytes, ending at text_at:
             * what is charged past it must fit in the rest. The first
             * record always fits (pick: at most half the text is in use,
             * and a non-big record's charge is under 2 x BIG = half). */
            size_t need, cost = charge(g, &r, &need);
            if (k > 0 && had + bytes + cost > TEXT_BYTES)
                break;
            put(g, &g->slots[(t + (unsigned)k) % RING_RECS], &r, need, cost);
            bytes += cost;
            k++;
            prs_store_next(g->s);
        }
        pthread_mutex_lock(&w->mu);
        g->tail = (t + (unsigned)k) % RING_RECS;
        g->count += k;
        g->bytes += bytes;
        if (ended)
            g->done = 1;
        if (w->cons_waiting) {
            /* Signalled unlocked: the merge woken under the lock would
             * at once block on it again (a second switch each way). */
            pthread_mutex_unlock(&w->mu);
            pthread_cond_signal(&w->cons);
            pthread_mutex_lock(&w->mu);
        }
    }
    /* Stopped or all ended: the merge must never wait on these rings. */
    for (int i = 0; i < w->nr; i++)
        w->rings[i]->done = 1;
    if (w->cons_waiting)
        pthread_cond_signal(&w->cons);
    pthread_mutex_unlock(&w->mu);
    prs_thrcpu_note("sp-reader");
    return NULL;
}

prs_readers *prs_readers_start(prs_store **stores, int n, int jobs)
{
    if (jobs <= 1 || n < 1)
        return NULL;
    for (int i = 0; i < n; i++)
        if (stores[i]->index != i) /* the rings are found by index */
            return NULL;
    prs_readers *r = prs_xcalloc(1, sizeof *r);
    r->n = n;
    r->nw = prs_readers_threads(jobs, n);
    r->rings = prs_xcalloc((size_t)n, sizeof *r->rings);
    r->w = prs_xcalloc((size_t)r->nw, sizeof *r->w);
    for (int t = 0; t < r->nw; t++) {
        worker *w = &r->w[t];
        pthread_mutex_init(&w->mu, NULL);
        pthread_cond_init(&w->prod, NULL);
        pthread_cond_init(&w->cons, NULL);
        w->rings = prs_xcalloc((size_t)(n / r->nw + 1), sizeof *w->rings);
        w->level = prs_log_level();
    }
    for (int i = 0; i < n; i++) {
        ring *g = &r->rings[i];
        worker *w = &r->w[i % r->nw];
        g->s = stores[i];
        g->w = w;
        g->slots = prs_xcalloc(RING_RECS, sizeof *g->slots);
        g->text = prs_xmalloc(TEXT_BYTES);
        w->rings[w->nr++] = g;
    }
    for (int t = 0; t < r->nw; t++) {
        worker *w = &r->w[t];
        if (pthread_create(&w->th, NULL, work, w) != 0) {
            /* Nothing was read yet (no thread has its go): the caller
             * reads every store on its own thread instead. */
            prs_log(PRS_WARNING, "cannot start reader thread %d of %d; reading the stores on one thread", t + 1,
                    r->nw);
            prs_readers_stop(r);
            return NULL;
        }
        w->started = 1;
    }
    for (int t = 0; t < r->nw; t++) {
        worker *w = &r->w[t];
        pthread_mutex_lock(&w->mu);
        w->go = 1;
        pthread_cond_broadcast(&w->prod);
        pthread_mutex_unlock(&w->mu);
    }
    return r;
}

/* Gives the used records of g back to its reader. */
static void give_back(ring *g)
{
    worker *w = g->w;
    pthread_mutex_lock(&w->mu);
    g->count -= g->used;
    g->bytes -= g->used_bytes;
    /* Woken only once half the ring is free (or all of it): a reader woken
     * for every BATCH would switch threads thousands of times a second. */
    int wake = w->prod_waiting && (g->count == 0 || (g->count <= RING_RECS / 2 && g->bytes <= TEXT_BYTES / 4));
    pthread_mutex_unlock(&w->mu);
    if (wake) /* unlocked, as in work() */
        pthread_cond_signal(&w->prod);
    g->used = 0;
    g->used_bytes = 0;
}

int prs_readers_peek(prs_readers *r, const prs_store *s, prs_rec *rec)
{
    ring *g = &r->rings[s->index];
    if (g->avail == 0) {
        if (g->used)
            give_back(g);
        worker *w = g->w;
        pthread_mutex_lock(&w->mu);
        while (g->count == 0 && !g->done) {
            w->cons_waiting = 1;
            pthread_cond_wait(&w->cons, &w->mu);
            w->cons_waiting = 0;
        }
        g->avail = g->count;
        pthread_mutex_unlock(&w->mu);
        if (g->avail == 0)
            return 0;
    }
    *rec = g->slots[g->head].rec;
    return 1;
}

void prs_readers_next(prs_readers *r, const prs_store *s)
{
    ring *g = &r->rings[s->index];
    prs_rec skipped;
    if (g->avail == 0 && !prs_readers_peek(r, s, &skipped))
        return;
    g->used_bytes += g->slots[g->head].len;
    g->used++;
    g->avail--;
    g->head = (g->head + 1) % RING_RECS;
    if (g->used >= BATCH)
        give_back(g);
}

void prs_readers_stop(prs_readers *r)
{
    if (!r)
        return;
    for (int t = 0; t < r->nw; t++) {
        worker *w = &r->w[t];
        pthread_mutex_lock(&w->mu);
        w->stop = 1;
        pthread_cond_broadcast(&w->prod);
        pthread_mutex_unlock(&w->mu);
    }
    for (int t = 0; t < r->nw; t++) {
        worker *w = &r->w[t];
        if (w->started)
            pthread_join(w->th, NULL);
        pthread_mutex_destroy(&w->mu);
        pthread_cond_destroy(&w->prod);
        pthread_cond_destroy(&w->cons);
        free(w->rings);
    }
    for (int i = 0; i < r->n; i++) {
        for (int k = 0; k < RING_RECS && r->rings[i].slots; k++) {
            free(r->rings[i].slots[k].big);
            prs_args_free(&r->rings[i].slots[k].args);
        }
        free(r->rings[i].slots);
        free(r->rings[i].text);
    }
    free(r->rings);
    free(r->w);
    free(r);
}
