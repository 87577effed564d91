/* SPDX-License-Identifier: Apache-2.0 */
/*
 * writer.c — the writer thread: drains every thread buffer into the store.
 *
 * DESIGN
 * One thread per process while a session is open. Each pass walks the list
 * of thread buffers (tbuf.h) and consumes everything published in each:
 * load head (acquire), decode records, store tail (release) — the walk of
 * tbuf.h's sp_tb_reader, shared with metrics.c's drain thread. Decoding turns
 * a record into a slice row — args JSON built by argbuild.c — or, for a span
 * half, into an entry of the open-span table (rec_spans.c) until the other
 * half arrives. Rows go into one SQLite transaction that is committed once
 * it has been open for SP_WRITER_COMMIT_NS (the writer wakes up for that
 * moment), and at stop; so a reader always sees a consistent prefix at most
 * ~100 ms (+ one pass) old, and so does a kill -9. Committing after every
 * pass that found little (the first design) cost a WAL write per ~1 ms pass
 * while records trickled: ~10-45 us of writer CPU per row at 1-5k rows/s.
 *
 * While the store's background checkpoint runs (storewrite.c), the writer waits
 * before starting its next transaction, so that the WAL can restart from
 * its beginning instead of growing: records stay in the thread buffers,
 * for at most SP_WRITER_CKPT_WAIT_NS and only while every buffer is under a
 * quarter full, so the wait never causes a drop. At sustained high rates
 * checkpoints (their fsyncs) outlast such waits and the WAL grows; past
 * SP_WRITER_WAL_BIG_PAGES (1 GiB) the writer waits longer, while every
 * buffer is under three quarters full (still never a drop), and past
 * SP_WRITER_WAL_HARD_PAGES (4 GiB) whatever the buffers, up to
 * SP_WRITER_CKPT_HARD_WAIT_NS: a bounded WAL (disk) is worth records
 * dropped (counted) in that overload.
 *
 * A pass that takes long (a deep backlog in big buffers) commits on the
 * way when the transaction is due, so the 250 ms promise holds.
 *
 * The writer polls: producers never signal it, because waking a thread is a
 * syscall and the hot path makes none. After a pass that found a lot
 * (>= SP_WRITER_BUSY_BYTES) it sleeps 1 ms (to batch); after passes that
 * found little the sleep doubles up to SP_WRITER_TRICKLE_MAX_MS, and up to
 * SP_WRITER_IDLE_MAX_MS when they found nothing. An idle pass makes no
 * SQLite call. A stop request wakes it through a condition variable.
 *
 * Between passes it also writes what changed outside the rings: a thread's
 * row the first time it shows records in this session (or when renamed),
 * the process name, servprof_meta keys. Buffers whose thread exited are
 * freed once drained. Drops are logged at most once a second.
 *
 * Stop (sp_recorder_close, called after the level went to 0): the writer
 * makes one more full pass, so every record published before the stop is
 * stored, writes spans never ended (duration 0, "unended": true), the
 * session's totals into Meta, commits and closes the store.
 *
 * Records carry the session epoch they were begun in; the writer skips
 * those from another epoch and counts them under their own cause,
 * records_before_session (not records_lost, which is store failures
 * only): they were made before this session began, either with collection
 * off for live metrics alone (between the metrics drain's last pass and
 * this session's start; the metrics saw them), or finished after an
 * earlier stop had drained. Neither is this session's data nor an error.
 */
#include <assert.h>
#include <locale.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "argbuild.h"
#include "internal.h"
#include "linkkeep.h"
#include "metrics.h"
#include "msgdec.h"
#include "rec_format.h"
#include "rec_spans.h"
#include "rec_state.h"
#include "storewrite.h"
#include "tbuf.h"
#include "writer.h"

typedef struct writer {
    /* Set by sp_recorder_open before the thread starts, read-only after. */
    sp_store *st;
    uint32_t epoch;
    int pid;
    char hostname[256];
    int64_t start_ns;
    pthread_t thread;

    /* Under mu. */
    pthread_mutex_t mu;
    pthread_cond_t cv; /* broadcast: the writer, close and fork wait on it */
    int stop;
    int running; /* the thread exists */
    int pause;   /* forks in progress: the writer must park outside SQLite */
    int parked;  /* the writer is parked */

    /* Writer thread only. */
    sp_sbuf args, members, tmp;
    sp_sbuf clean_name, clean_cat, clean_meta; /* UTF-8-cleaned copies */
    sp_tb_scratch wrapped; /* a record that wraps the ring, made contiguous */
    sp_span_table spans;
    sp_msg msg; /* the drop-in's message of the record in hand (msgdec.h) */
    unsigned meta_gen, proc_gen;
    int64_t txn_since; /* monotonic ns when the open transaction began; 0 none */
    int64_t ckpt_wait_since; /* monotonic ns the wait for a checkpoint began; 0 none */
    int pass_cut; /* a drain stopped early for a checkpoint: end this pass */
    int may_cut;  /* not the stop's final pass, which must drain everything */
    uint64_t dropped_at_open, dropped_logged;
    int64_t drop_log_ns;
    uint64_t lost, ends_without_begin, bad_json;
    uint64_t before_session; /* records of another epoch (see DESIGN), not stored */
    uint64_t kept_links;     /* Links made before the session, stored at its start */
    uint64_t counts_at_open[6];
} writer;

static writer W = {.mu = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER};
static int w_open;                     /* runtime's thread only (open/close) */
static _Atomic uint64_t rows_committed; /* this store */
static uint64_t rows_in_txn;            /* writer thread */
static uint64_t recs_in_txn;            /* writer thread: the records those rows hold */
static _Atomic int64_t last_cpu_ns;     /* CPU time of the last writer thread */
/* Figures of the current / last session (benchmarks): written by the writer,
 * read by anyone (relaxed). */
static _Atomic int64_t stat_longest_pass_ns, stat_longest_commit_ns, stat_longest_wait_ns;
static _Atomic uint64_t stat_max_fill, stat_waits;

int64_t sp_writer_last_cpu_ns(void)
{
    return atomic_load_explicit(&last_cpu_ns, memory_order_relaxed);
}

void sp_writer_last_stats(sp_writer_stats *out)
{
    out->longest_pass_ns = atomic_load_explicit(&stat_longest_pass_ns, memory_order_relaxed);
    out->longest_commit_ns = atomic_load_explicit(&stat_longest_commit_ns, memory_order_relaxed);
    out->max_buffer_fill = atomic_load_explicit(&stat_max_fill, memory_order_relaxed);
    out->checkpoint_waits = atomic_load_explicit(&stat_waits, memory_order_relaxed);
    out->longest_checkpoint_wait_ns = atomic_load_explicit(&stat_longest_wait_ns,
                                                           memory_order_relaxed);
}

/* Writer thread only writes these: a plain load and store is enough. */
static void stat_max(_Atomic int64_t *a, int64_t v)
{
    if (v > atomic_load_explicit(a, memory_order_relaxed))
        atomic_store_explicit(a, v, memory_order_relaxed);
}

uint64_t sp_writer_rows(void)
{
    return atomic_load_explicit(&rows_committed, memory_order_relaxed);
}

/* ------------------------------------------------------------------ */
/* Decoding                                                             */
/* ------------------------------------------------------------------ */

static const char *read_str(const uint8_t **p, const uint8_t *end, size_t *n)
{
    uint16_t len = 0;
    if (end - *p < 2) {
        *n = 0;
        return "";
    }
    memcpy(&len, *p, 2);
    *p += 2;
    if ((size_t)(end - *p) < len)
        len = (uint16_t)(end - *p);
    const char *s = (const char *)*p;
    *p += len;
    *n = len;
    return s;
}

/* Losses are counted in records, as they were emitted: a span's row holds
 * two (its begin and its end), so the accounting adds up (emitted =
 * stored + dropped + lost + ...; cmd_stress.c checks it). */
static void count_lost_n(writer *w, uint64_t n)
{
    w->lost += n;
    sp_count(&sp_rec_count.lost, n);
}

static void count_lost(writer *w)
{
    count_lost_n(w, 1);
}

/* recs: how many records the row holds (2 for a span's begin and end). */
static void add_row(writer *w, int64_t ts, int64_t dur, const char *name, size_t nl,
                    const char *cat, size_t cl, const char *args, size_t al, int tid,
                    unsigned recs)
{
    if (sp_store_failed(w->st)) {
        count_lost_n(w, recs);
        return;
    }
    if (!sp_store_in_txn(w->st)) {
        if (sp_store_begin(w->st) != 0) {
            count_lost_n(w, recs);
            return;
        }
        w->txn_since = sp_now_monotonic_ns();
    }
    sp_slice_row row = {ts, dur, name, nl, cat, cl, args, al, tid};
    if (sp_store_slice(w->st, &row) == 0) {
        rows_in_txn++;
        recs_in_txn += recs;
    } else {
        count_lost_n(w, recs);
    }
}

/* Builds args = {"type":N<prefix><members>} from parts. */
static void make_args(writer *w, int type, const char *extra, size_t el, const char *members,
                      size_t ml)
{
    static const char *const heads[4] = {"{\"type\":0", "{\"type\":1", "{\"type\":2",
                                         "{\"type\":3"};
    assert(type >= 0 && type <= 3);
    sp_sb_clear(&w->args);
    sp_sb_put(&w->args, heads[type], 9);
    sp_sb_put(&w->args, extra, el);
    sp_sb_put(&w->args, members, ml);
    sp_sb_put(&w->args, "}", 1);
}

static void span_row(writer *w, sp_open_span *b, int64_t end_ts, const char *end_members,
                     size_t eml, int unended)
{
    sp_sb_clear(&w->tmp);
    sp_sb_put(&w->tmp, b->args, b->args_len);
    sp_sb_put(&w->tmp, end_members, eml);
    if (unended)
        sp_sb_put(&w->tmp, ",\"unended\":true", 15);
    make_args(w, 2, "", 0, w->tmp.p ? w->tmp.p : "", w->tmp.len);
    int64_t dur = end_ts >= b->ts ? end_ts - b->ts : 0;
    add_row(w, b->ts, dur, b->name, b->name_len, b->cat, b->cat_len, w->args.p, w->args.len,
            b->tid, unended ? 1 : 2);
}

static void on_span_begin(writer *w, const sp_rec_hdr *h, int tid, const char *name, size_t nl,
                          const char *cat, size_t cl)
{
    sp_spans_note_begin(&w->spans, h->span);
    sp_open_span *e = sp_spans_find(&w->spans, h->span);
    if (e && !e->has_begin) { /* its end was drained first */
        sp_open_span *b = sp_span_new(h->span, name, nl, cat, cl, w->members.p ? w->members.p : "",
                                      w->members.len);
        if (b) {
            b->ts = h->ts;
            b->tid = tid;
            span_row(w, b, e->ts, e->args, e->args_len, 0);
            free(b);
        } else {
            count_lost_n(w, 2); /* this begin and the end held for it */
        }
        sp_spans_remove(&w->spans, e);
        free(e);
        return;
    }
    sp_open_span *b = sp_span_new(h->span, name, nl, cat, cl, w->members.p ? w->members.p : "",
                                  w->members.len);
    if (!b || sp_spans_add(&w->spans, b) != 0) {
        free(b);
        count_lost(w);
        return;
    }
    b->has_begin = 1;
    b->ts = h->ts;
    b->tid = tid;
}

static void on_span_end(writer *w, const sp_rec_hdr *h, int tid)
{
    sp_open_span *b = sp_spans_find(&w->spans, h->span);
    if (b && b->has_begin) {
        span_row(w, b, h->ts, w->members.p ? w->members.p : "", w->members.len, 0);
        sp_spans_remove(&w->spans, b);
        free(b);
        return;
    }
    if (b || sp_spans_begun(&w->spans, h->span)) {
        sp_count(&sp_rec_count.span_double_end, 1);
        return;
    }
    /* Begun on another thread whose ring the writer has not reached yet. */
    sp_open_span *e = sp_span_new(h->span, "", 0, "", 0, w->members.p ? w->members.p : "",
                                  w->members.len);
    if (!e || sp_spans_add(&w->spans, e) != 0) {
        free(e);
        count_lost(w);
        return;
    }
    e->ts = h->ts;
    e->tid = tid;
}

/* A Link made before the session (linkkeep.c, or a ring record of the
 * previous epoch): a row dated at the session's start, so the parser joins
 * the ids before the request's records of this session; args carry
 * "before_session": true. */
/* recs: the records the row stands for in the loss count: 1 for a ring
 * record, 0 for a linkkeep.c Link (made while off, never a ring record). */
static void kept_link(writer *w, const char *from, size_t fl, const char *to, size_t tl, int tid,
                      unsigned recs)
{
    sp_sb_clear(&w->tmp);
    sp_sb_put(&w->tmp, ",\"from\":", 8);
    sp_json_str(&w->tmp, from, fl);
    sp_sb_put(&w->tmp, ",\"to\":", 6);
    sp_json_str(&w->tmp, to, tl);
    static const char flag[] = ",\"before_session\":true";
    sp_sb_put(&w->tmp, flag, sizeof flag - 1);
    make_args(w, 3, w->tmp.p, w->tmp.len, "", 0);
    add_row(w, w->start_ns, 0, "Link", 4, "", 0, w->args.p, w->args.len, tid, recs);
    w->kept_links++;
}

static void take_kept(void *ctx, const char *from, size_t nf, const char *to, size_t nt, int tid)
{
    kept_link(ctx, from, nf, to, nt, tid, 0);
}

static void write_thread_row(writer *w, sp_tbuf *tb)
{
    char name[64];
    sp_tbuf_lock();
    memcpy(name, tb->name, sizeof name);
    unsigned gen = tb->name_gen;
    sp_tbuf_unlock();
    name[sizeof name - 1] = 0;
    if (sp_store_failed(w->st))
        return;
    if (!sp_store_in_txn(w->st)) {
        if (sp_store_begin(w->st) != 0)
            return;
        w->txn_since = sp_now_monotonic_ns();
    }
    size_t n;
    if (sp_store_thread(w->st, tb->tid, sp_utf8_clean(&w->clean_name, name, strlen(name), &n)) == 0) {
        tb->row_epoch = w->epoch;
        tb->name_gen_written = gen;
    }
}

static void handle(writer *w, sp_tbuf *tb, const uint8_t *rec, size_t len)
{
    sp_rec_hdr h;
    memcpy(&h, rec, sizeof h);
    sp_rec_hdr_times(&h); /* TSC ticks -> realtime ns (clock.h) */
    sp_metrics_on_record(&h, rec, len); /* live metrics: every record, stored or not */
    /* Made before this session began: not lost, not stored. A Link among
     * them (live metrics on, tracing off) still names this session's
     * requests: stored, dated at the session's start (kept_link). */
    int before = h.epoch != w->epoch;
    if (before && h.kind != SP_REC_LINK) {
        w->before_session++;
        return;
    }
    if (sp_store_failed(w->st)) {
        count_lost(w);
        return;
    }
    if (tb->row_epoch != w->epoch)
        write_thread_row(w, tb);
    const uint8_t *p = rec + sizeof h, *end = rec + len;
    size_t cl, nl = 0;
    const char *cat = read_str(&p, end, &cl), *name = "";
    cat = sp_utf8_clean(&w->clean_cat, cat, cl, &cl);
    sp_sb_clear(&w->members);
    sp_msg_reset(&w->msg);
    int has_msg = sp_msg_take(&w->msg, &w->members, &p, end); /* drop-in records (msgdec.c) */
    w->bad_json += (uint64_t)w->msg.malformed;
    if (has_msg < 0 || sp_args_members(&w->members, &p, end, &w->bad_json) != 0) {
        sp_log(SP_LOG_ERROR, "internal: malformed record (kind %d, %zu bytes); args dropped",
               h.kind, len);
        sp_sb_clear(&w->members);
    }
    int type = h.kind == SP_REC_EVENT ? 0 : 2;
    switch (h.kind) {
    case SP_REC_EVENT:
        name = read_str(&p, end, &nl);
        name = sp_utf8_clean(&w->clean_name, name, nl, &nl);
        if (!sp_msg_apply(&w->msg, 1, &name, &nl, &cat, &cl, &type))
            break; /* the message's domain is filtered out */
        make_args(w, type, "", 0, w->members.p, w->members.len);
        add_row(w, h.ts, 0, name, nl, cat, cl, w->args.p, w->args.len, tb->tid, 1);
        break;
    case SP_REC_SPAN_AT:
        name = read_str(&p, end, &nl);
        name = sp_utf8_clean(&w->clean_name, name, nl, &nl);
        if (!sp_msg_apply(&w->msg, 0, &name, &nl, &cat, &cl, &type))
            break;
        make_args(w, 2, "", 0, w->members.p, w->members.len);
        add_row(w, h.ts, h.ts2 - h.ts, name, nl, cat, cl, w->args.p, w->args.len, tb->tid, 1);
        break;
    case SP_REC_LINK: {
        size_t fl, tl;
        const char *from = read_str(&p, end, &fl);
        const char *to = read_str(&p, end, &tl);
        sp_sb_clear(&w->tmp);
        sp_sb_put(&w->tmp, ",\"from\":", 8);
        sp_json_str(&w->tmp, from, fl);
        sp_sb_put(&w->tmp, ",\"to\":", 6);
        sp_json_str(&w->tmp, to, tl);
        if (before) {
            kept_link(w, from, fl, to, tl, tb->tid, 1);
            break;
        }
        make_args(w, 3, w->tmp.p, w->tmp.len, w->members.p, w->members.len);
        add_row(w, h.ts, 0, "Link", 4, cat, cl, w->args.p, w->args.len, tb->tid, 1);
        break;
    }
    case SP_REC_SPAN_BEGIN:
        name = read_str(&p, end, &nl);
        name = sp_utf8_clean(&w->clean_name, name, nl, &nl);
        on_span_begin(w, &h, tb->tid, name, nl, cat, cl);
        break;
    case SP_REC_SPAN_END:
        on_span_end(w, &h, tb->tid);
        break;
    default:
        sp_log(SP_LOG_ERROR, "internal: unknown record kind %d skipped", h.kind);
    }
}

static void commit(writer *w);

/* Consumes everything published in tb. Returns the bytes consumed. */
static size_t drain(writer *w, sp_tbuf *tb)
{
    unsigned recs = 0;
    sp_tb_reader r;
    sp_tb_begin(&r, tb);
    uint64_t start = r.tail;
    if (r.head - r.tail > atomic_load_explicit(&stat_max_fill, memory_order_relaxed))
        atomic_store_explicit(&stat_max_fill, r.head - r.tail, memory_order_relaxed);
    const uint8_t *rec;
    size_t len;
    while ((len = sp_tb_peek(&r, &w->wrapped, &rec)) != 0) {
        if (rec)
            handle(w, tb, rec, len);
        else
            count_lost(w); /* it wraps, and no memory to make it contiguous */
        sp_tb_advance(&r, len);
        if ((++recs & 1023) == 0 && w->txn_since &&
            sp_now_monotonic_ns() - w->txn_since >= SP_WRITER_COMMIT_NS) {
            commit(w); /* a long drain: keep the commit promise */
            if (w->may_cut && sp_store_wants_pause(w->st)) {
                w->pass_cut = 1; /* end the pass: the loop waits for the checkpoint */
                break;
            }
        }
        if (r.tail - r.released > tb->cap / 4) /* give room back while draining */
            sp_tb_release(&r);
    }
    sp_tb_release(&r);
    return (size_t)(r.tail - start);
}

/* ------------------------------------------------------------------ */
/* The loop                                                             */
/* ------------------------------------------------------------------ */

static void meta_visit(void *ctx, const char *key, const char *value)
{
    writer *w = ctx;
    size_t n;
    char *k = strdup(sp_utf8_clean(&w->clean_meta, key, strlen(key), &n));
    if (k)
        sp_store_meta(w->st, k, sp_utf8_clean(&w->clean_meta, value, strlen(value), &n));
    free(k);
}

static void begin_if_needed(writer *w)
{
    if (!sp_store_failed(w->st) && !sp_store_in_txn(w->st) && sp_store_begin(w->st) == 0)
        w->txn_since = sp_now_monotonic_ns();
}

/* Process name, servprof_meta keys and thread renames, when they changed. */
static void write_side_rows(writer *w)
{
    char name[256];
    unsigned g = w->proc_gen;
    if (sp_meta_process_gen() != w->proc_gen)
        g = sp_meta_process_name(name, sizeof name);
    if (g != w->proc_gen) {
        begin_if_needed(w);
        size_t n;
        const char *clean = sp_utf8_clean(&w->clean_name, name, strlen(name), &n);
        if (sp_store_process(w->st, clean, w->hostname, (int)getppid()) == 0)
            w->proc_gen = g;
    }
    sp_meta_each_if_changed(&w->meta_gen, meta_visit, w);
    for (sp_tbuf *tb = sp_tbuf_first(); tb; tb = tb->next) {
        if (tb->row_epoch != w->epoch)
            continue;
        sp_tbuf_lock();
        unsigned gen = tb->name_gen;
        sp_tbuf_unlock();
        if (gen != tb->name_gen_written)
            write_thread_row(w, tb);
    }
}

static void log_drops(writer *w, int64_t now)
{
    uint64_t records, dropped;
    sp_tbuf_totals(&records, &dropped);
    if (dropped == w->dropped_logged || now - w->drop_log_ns < 1000000000LL)
        return;
    sp_log(SP_LOG_WARNING,
           "%llu records dropped since the last report (%llu this session): thread buffers were "
           "full; raise buffer_size_kb or record less",
           (unsigned long long)(dropped - w->dropped_logged),
           (unsigned long long)(dropped - w->dropped_at_open));
    w->dropped_logged = dropped;
    w->drop_log_ns = now;
}

static void commit(writer *w)
{
    if (!sp_store_in_txn(w->st))
        return;
    int64_t t0 = sp_now_monotonic_ns();
    if (sp_store_check_file(w->st) == 0 && sp_store_commit(w->st) == 0)
        atomic_fetch_add_explicit(&rows_committed, rows_in_txn, memory_order_relaxed);
    if (!sp_store_failed(w->st)) {
        sp_count(&sp_rec_count.written, rows_in_txn);
        sp_count(&sp_rec_count.stored, recs_in_txn);
    } else {
        count_lost_n(w, recs_in_txn); /* rolled back: its records, not its rows */
    }
    rows_in_txn = 0;
    recs_in_txn = 0;
    w->txn_since = 0;
    stat_max(&stat_longest_commit_ns, sp_now_monotonic_ns() - t0);
}

static size_t pass(writer *w)
{
    size_t bytes = 0;
    w->pass_cut = 0;
    sp_tbuf *tb = sp_tbuf_first();
    while (tb && !w->pass_cut) {
        sp_tbuf *next = tb->next; /* read before a reap frees tb */
        bytes += drain(w, tb);
        sp_tbuf_reap(tb);
        tb = next;
    }
    sp_metrics_after_pass(); /* live metrics: publish now and then */
    return bytes;
}

static void unended(void *ctx, sp_open_span *s)
{
    writer *w = ctx;
    if (s->has_begin) {
        sp_count(&sp_rec_count.span_never_ended, 1);
        span_row(w, s, s->ts, "", 0, 1);
    } else {
        w->ends_without_begin++;
    }
    free(s);
}

static void put_meta_u64(writer *w, const char *key, uint64_t v)
{
    char buf[32];
    snprintf(buf, sizeof buf, "%llu", (unsigned long long)v);
    sp_store_meta(w->st, key, buf);
}

static uint64_t counter_now(int i)
{
    _Atomic uint64_t *c[6] = {&sp_rec_count.span_never_ended, &sp_rec_count.span_double_end,
                              &sp_rec_count.truncated, &sp_rec_count.bad_input,
                              &sp_rec_count.write_errors, &sp_rec_count.written};
    return atomic_load_explicit(c[i], memory_order_relaxed);
}

static void finish_session(writer *w)
{
    uint64_t never_before = atomic_load_explicit(&sp_rec_count.span_never_ended,
                                                 memory_order_relaxed);
    begin_if_needed(w);
    sp_spans_drain(&w->spans, unended, w);
    uint64_t never = atomic_load_explicit(&sp_rec_count.span_never_ended, memory_order_relaxed) -
                     never_before;
    /* Meta counts this session's, also those the drop-in found (ext.h). */
    uint64_t never_meta = counter_now(0) - w->counts_at_open[0];
    uint64_t records, dropped;
    sp_tbuf_totals(&records, &dropped);
    dropped -= w->dropped_at_open;
    commit(w); /* the rows first: Meta below counts them */
    begin_if_needed(w);
    put_meta_u64(w, "dropped_records", dropped);
    put_meta_u64(w, "spans_never_ended", never_meta);
    put_meta_u64(w, "span_double_end", counter_now(1) - w->counts_at_open[1]);
    put_meta_u64(w, "truncated_strings", counter_now(2) - w->counts_at_open[2]);
    put_meta_u64(w, "bad_input", counter_now(3) - w->counts_at_open[3] + w->bad_json);
    put_meta_u64(w, "span_ends_without_begin", w->ends_without_begin);
    put_meta_u64(w, "records_lost", w->lost);
    put_meta_u64(w, "records_before_session", w->before_session);
    put_meta_u64(w, "links_before_session", w->kept_links);
    put_meta_u64(w, "records_written", counter_now(5) - w->counts_at_open[5]);
    put_meta_u64(w, "write_errors", counter_now(4) - w->counts_at_open[4]);
    put_meta_u64(w, "session_end_ns", (uint64_t)sp_now_realtime_ns());
    commit(w);
    sp_count(&sp_rec_count.bad_input, w->bad_json);
    if (dropped || never || w->lost || w->ends_without_begin)
        sp_log(SP_LOG_WARNING,
               "session summary: %llu records dropped (buffers full), %llu lost (store errors), "
               "%llu spans never ended (stored with duration 0 and \"unended\": true), "
               "%llu span ends without a begin",
               (unsigned long long)dropped, (unsigned long long)w->lost,
               (unsigned long long)never, (unsigned long long)w->ends_without_begin);
}

/* Whether to skip this pass and wait for the store's checkpoint (see
 * DESIGN): only while it asks; for SP_WRITER_CKPT_WAIT_NS at most while
 * every buffer is under a quarter full; with a big WAL longer, while every
 * buffer is under three quarters full; with a huge one whatever the buffers
 * (writer.h). */
static int wait_for_checkpoint(writer *w, int64_t now)
{
    if (!sp_store_wants_pause(w->st))
        return 0;
    int64_t waited = w->ckpt_wait_since ? now - w->ckpt_wait_since : 0;
    uint64_t wal = (uint64_t)sp_store_wal_pages(w->st);
    if (wal >= SP_WRITER_WAL_HARD_PAGES)
        return waited < SP_WRITER_CKPT_HARD_WAIT_NS;
    int big = wal >= SP_WRITER_WAL_BIG_PAGES;
    if (waited >= (big ? SP_WRITER_CKPT_HARD_WAIT_NS : SP_WRITER_CKPT_WAIT_NS))
        return 0;
    for (sp_tbuf *tb = sp_tbuf_first(); tb; tb = tb->next) {
        uint64_t fill = sp_tb_unread(tb);
        if (fill > (big ? tb->cap / 4 * 3 : tb->cap / 4))
            return 0;
    }
    return 1;
}

/* Keeps the wait's figures; the wait ends with the first pass made. */
static void note_wait(writer *w, int waiting, int64_t now)
{
    if (waiting && !w->ckpt_wait_since) {
        w->ckpt_wait_since = now;
        atomic_fetch_add_explicit(&stat_waits, 1, memory_order_relaxed);
    } else if (!waiting && w->ckpt_wait_since) {
        stat_max(&stat_longest_wait_ns, now - w->ckpt_wait_since);
        w->ckpt_wait_since = 0;
    }
}

/* How long to sleep after a pass that found `bytes`: 1 ms when busy (to
 * batch), doubling up to the trickle / idle maximum otherwise, and never
 * past the moment the open transaction is due for its commit. */
static long next_sleep_ns(writer *w, int *sleep_ms, size_t bytes, int64_t now)
{
    int max = bytes ? SP_WRITER_TRICKLE_MAX_MS : SP_WRITER_IDLE_MAX_MS;
    if (bytes >= SP_WRITER_BUSY_BYTES)
        *sleep_ms = 1;
    else
        *sleep_ms = *sleep_ms * 2 > max ? max : *sleep_ms * 2;
    int64_t ns = (int64_t)*sleep_ms * 1000000;
    if (w->txn_since) {
        int64_t due = w->txn_since + SP_WRITER_COMMIT_NS - now;
        if (due < ns)
            ns = due < 1000000 ? 1000000 : due;
    }
    assert(ns > 0 && ns < 1000000000);
    return (long)ns;
}

static void *writer_main(void *arg)
{
    writer *w = arg;
    pthread_setname_np(pthread_self(), "servprof-writer");
    sigset_t all;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, NULL); /* the program's signals are not ours */
    locale_t c_loc = newlocale(LC_ALL_MASK, "C", (locale_t)0);
    if (c_loc)
        uselocale(c_loc); /* %g must print '.', whatever the program set */
    int sleep_ms = 1;
    sp_linkkeep_take(take_kept, w); /* links made while collection was off: the first commit */
    for (;;) {
        pthread_mutex_lock(&w->mu);
        while (w->pause && !w->stop) { /* a fork: hold no lock of SQLite's meanwhile */
            w->parked = 1;
            pthread_cond_broadcast(&w->cv);
            pthread_cond_wait(&w->cv, &w->mu);
        }
        w->parked = 0;
        int stop = w->stop;
        pthread_mutex_unlock(&w->mu);
        int64_t t0 = sp_now_monotonic_ns();
        int waiting = !stop && wait_for_checkpoint(w, t0);
        note_wait(w, waiting, t0);
        size_t bytes = 0;
        if (!waiting) {
            w->may_cut = !stop;
            bytes = pass(w);
            write_side_rows(w);
        }
        int64_t now = sp_now_monotonic_ns();
        stat_max(&stat_longest_pass_ns, now - t0);
        /* 1 ms early: the wake-up below aims at the deadline, and a timer
         * that fires a little early must not cost one more pass. */
        if (w->txn_since && now - w->txn_since >= SP_WRITER_COMMIT_NS - 1000000)
            commit(w);
        log_drops(w, now);
        if (stop)
            break; /* the pass above started after the stop: it drained all;
                      finish_session commits */
        if (bytes > 256 * 1024)
            continue;
        long sleep_ns = waiting ? 1000000 : next_sleep_ns(w, &sleep_ms, bytes, now);
        struct timespec until;
        clock_gettime(CLOCK_REALTIME, &until);
        until.tv_nsec += sleep_ns;
        if (until.tv_nsec >= 1000000000L) {
            until.tv_sec++;
            until.tv_nsec -= 1000000000L;
        }
        pthread_mutex_lock(&w->mu);
        if (!w->stop)
            pthread_cond_timedwait(&w->cv, &w->mu, &until);
        pthread_mutex_unlock(&w->mu);
    }
    finish_session(w);
    struct timespec cpu;
    if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &cpu) == 0)
        atomic_store_explicit(&last_cpu_ns, (int64_t)cpu.tv_sec * 1000000000 + cpu.tv_nsec,
                              memory_order_relaxed);
    if (c_loc) {
        uselocale(LC_GLOBAL_LOCALE);
        freelocale(c_loc);
    }
    return NULL;
}

/* ------------------------------------------------------------------ */
/* Open, close, fork                                                    */
/* ------------------------------------------------------------------ */

static void write_open_rows(writer *w, const sp_session *s, const sp_config *c)
{
    char buf[64];
    begin_if_needed(w);
    sp_store_meta(w->st, "hostname", w->hostname);
    snprintf(buf, sizeof buf, "%d", (int)getppid());
    sp_store_meta(w->st, "ppid", buf);
    snprintf(buf, sizeof buf, "%d", w->pid);
    sp_store_meta(w->st, "pid", buf);
    sp_store_meta(w->st, "version", SERVPROF_VERSION);
    sp_store_meta(w->st, "clock_source", sp_clock_source());
    long maxerr, esterr;
    int synced = sp_clock_sync_state(&maxerr, &esterr);
    snprintf(buf, sizeof buf, "%d", synced);
    sp_store_meta(w->st, "clock_synced", buf);
    snprintf(buf, sizeof buf, "%ld", maxerr);
    sp_store_meta(w->st, "clock_maxerror_us", buf);
    snprintf(buf, sizeof buf, "%ld", esterr);
    sp_store_meta(w->st, "clock_esterror_us", buf);
    snprintf(buf, sizeof buf, "%lld", (long long)s->start_ns);
    sp_store_meta(w->st, "session_start_ns", buf);
    snprintf(buf, sizeof buf, "%llu", (unsigned long long)s->serial);
    sp_store_meta(w->st, "session_serial", buf);
    snprintf(buf, sizeof buf, "%zu", c ? c->buffer_bytes : 0);
    sp_store_meta(w->st, "buffer_bytes", buf);
    w->meta_gen = 0; /* every servprof_meta key, at once */
    w->proc_gen = 0;
    write_side_rows(w);
    commit(w);
}

/* fork() while the writer is inside SQLite would leave SQLite's (or the
 * allocator's) locks held forever in the child, which then hangs at its
 * first store. So a fork waits until the writer parks between passes (a
 * pass is short), and lets it go on in the parent. The child forgets the
 * writer (sp_recorder_atfork_child, from the runtime's child hook). */
static void fork_prepare(void)
{
    writer *w = &W;
    pthread_mutex_lock(&w->mu);
    if (w->running) {
        w->pause++;
        pthread_cond_broadcast(&w->cv);
        while (w->running && !w->parked && !w->stop)
            pthread_cond_wait(&w->cv, &w->mu);
    }
    pthread_mutex_unlock(&w->mu);
}

static void fork_parent(void)
{
    writer *w = &W;
    pthread_mutex_lock(&w->mu);
    if (w->pause > 0 && --w->pause == 0)
        pthread_cond_broadcast(&w->cv);
    pthread_mutex_unlock(&w->mu);
}

static void register_fork_hooks(void)
{
    pthread_atfork(fork_prepare, fork_parent, NULL);
}

int sp_recorder_open(const sp_session *s, const sp_config *c)
{
    static pthread_once_t hooks_once = PTHREAD_ONCE_INIT;
    pthread_once(&hooks_once, register_fork_hooks);
    if (w_open) {
        sp_log(SP_LOG_WARNING, "recorder already open; the second open is ignored");
        return SERVPROF_ESTATE;
    }
    if (!s || !s->store_path[0]) {
        sp_log(SP_LOG_ERROR, "recorder: no store path; nothing is recorded");
        return SERVPROF_EINVAL;
    }
    size_t bytes = c && c->buffer_bytes ? c->buffer_bytes : (size_t)SP_DEFAULT_BUFFER_KB * 1024;
    sp_tbuf_set_size(bytes);
    writer *w = &W;
    w->pid = (int)getpid();
    sp_store *st = sp_store_open(s->store_path, w->pid);
    if (!st)
        return SERVPROF_ESTORE;
    w->st = st;
    pthread_mutex_lock(&w->mu);
    w->stop = 0;
    pthread_mutex_unlock(&w->mu);
    if (s->hostname[0])
        snprintf(w->hostname, sizeof w->hostname, "%s", s->hostname);
    else if (gethostname(w->hostname, sizeof w->hostname) != 0)
        snprintf(w->hostname, sizeof w->hostname, "localhost");
    w->start_ns = s->start_ns;
    w->epoch = atomic_fetch_add(&sp_rec_epoch, 1) + 1;
    w->lost = w->ends_without_begin = w->bad_json = w->before_session = w->kept_links = 0;
    uint64_t records;
    sp_tbuf_totals(&records, &w->dropped_at_open);
    w->dropped_logged = w->dropped_at_open;
    w->drop_log_ns = 0;
    for (int i = 0; i < 6; i++)
        w->counts_at_open[i] = counter_now(i);
    atomic_store_explicit(&rows_committed, 0, memory_order_relaxed);
    atomic_store_explicit(&stat_longest_pass_ns, 0, memory_order_relaxed);
    atomic_store_explicit(&stat_longest_commit_ns, 0, memory_order_relaxed);
    atomic_store_explicit(&stat_max_fill, 0, memory_order_relaxed);
    atomic_store_explicit(&stat_waits, 0, memory_order_relaxed);
    atomic_store_explicit(&stat_longest_wait_ns, 0, memory_order_relaxed);
    w->ckpt_wait_since = 0;
    rows_in_txn = 0;
    recs_in_txn = 0;
    write_open_rows(w, s, c);
    if (sp_store_failed(st)) {
        sp_store_close(st);
        w->st = NULL;
        return SERVPROF_ESTORE;
    }
    sp_tbuf_writer_active(1);
    pthread_mutex_lock(&w->mu);
    int rc = pthread_create(&w->thread, NULL, writer_main, w);
    w->running = rc == 0;
    pthread_mutex_unlock(&w->mu);
    if (rc != 0) {
        sp_log(SP_LOG_ERROR, "recorder: cannot start the writer thread: %s; nothing is recorded",
               strerror(rc));
        sp_tbuf_writer_active(0);
        sp_store_close(st);
        w->st = NULL;
        return SERVPROF_ESTATE;
    }
    w_open = 1;
    return 0;
}

void sp_recorder_close(void)
{
    if (!w_open)
        return;
    writer *w = &W;
    pthread_mutex_lock(&w->mu);
    w->stop = 1;
    pthread_cond_broadcast(&w->cv);
    pthread_mutex_unlock(&w->mu);
    pthread_join(w->thread, NULL);
    pthread_mutex_lock(&w->mu);
    w->running = 0;
    pthread_cond_broadcast(&w->cv); /* a fork waiting for the writer to park */
    pthread_mutex_unlock(&w->mu);
    sp_tbuf_writer_active(0);
    sp_store_close(w->st);
    w->st = NULL;
    sp_sb_free(&w->args);
    sp_sb_free(&w->members);
    sp_sb_free(&w->tmp);
    sp_sb_free(&w->clean_name);
    sp_sb_free(&w->clean_cat);
    sp_sb_free(&w->clean_meta);
    free(w->wrapped.buf);
    w->wrapped.buf = NULL;
    w->wrapped.cap = 0;
    sp_spans_free(&w->spans);
    sp_msg_free(&w->msg);
    w_open = 0;
}

void sp_recorder_atfork_child(void)
{
    /* The writer thread does not exist in the child, its structures may be
     * mid-update: forget them all (a small leak) and start clean. */
    if (w_open)
        sp_store_forget(W.st);
    sp_linkkeep_atfork_child();
    writer fresh = {.mu = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER};
    W = fresh;
    w_open = 0;
    rows_in_txn = 0;
    recs_in_txn = 0;
    atomic_store_explicit(&rows_committed, 0, memory_order_relaxed);
    sp_tbuf_atfork_child();
    sp_meta_atfork_child();
}
