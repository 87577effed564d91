/* SPDX-License-Identifier: Apache-2.0 */
/*
 * tbuf.h — per-thread record buffers (see tbuf.c for the design).
 *
 * One sp_tbuf per recording thread: a single-producer single-consumer byte
 * ring. The producer is the thread that owns it (record.c); the consumer is
 * the writer thread (writer.c), or metrics.c's drain thread while tracing is
 * off, both through the sp_tb_reader walk below. Indices are 64-bit byte
 * counts that only grow; the position in the ring is index & mask.
 */
#ifndef SERVPROF_TBUF_H
#define SERVPROF_TBUF_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "rec_format.h"

/* The shortest record: a header (rec_format.h, whose first field is the
 * record's length). */
#define SP_TB_MIN_RECORD sizeof(sp_rec_hdr)

enum { SP_TB_IDLE = 0, SP_TB_BUILDING = 1, SP_TB_OVERFLOW = 2 };

typedef struct sp_tbuf {
    /* Set at creation, read-only after (published under the list lock). */
    uint8_t *data;
    uint64_t cap;   /* power of two */
    uint64_t mask;  /* cap - 1 */
    uint32_t index; /* 1, 2, ... in creation order; the high bits of span ids */
    int tid;

    /* Producer only (the owning thread). Own cache line: the writer reads
     * the fields above (data, mask, cap) for every record it drains, and
     * must not pull the line the producer writes for every record. */
    uint64_t pos __attribute__((aligned(64))); /* where the record being built grows */
    uint64_t rec_start;   /* where the record being built starts */
    uint64_t cached_tail; /* last tail seen: refreshed only when short of room */
    int state;            /* SP_TB_IDLE / BUILDING / OVERFLOW (built, will drop) */
    int depth;            /* open containers of the record being built */
    int skip_depth;       /* containers ignored beyond SP_MAX_NESTING */
    uint64_t array_bits;  /* bit d-1 set: the container at depth d is an array */
    uint64_t span_counter;

    /* Producer writes (release for head, relaxed for counters), others read. */
    _Atomic uint64_t head;    /* end of the last published record */
    _Atomic uint64_t records; /* records published */
    _Atomic uint64_t dropped; /* records dropped: no room */
    _Atomic int orphaned;     /* the thread exited: free once drained */

    /* Writer only; own cache line so the producer's stores do not bounce it. */
    _Atomic uint64_t tail __attribute__((aligned(64))); /* writer stores (release) */
    uint32_t row_epoch;        /* session whose thread row was written */
    unsigned name_gen_written; /* name_gen of the written thread row */
    uint64_t dropped_seen;     /* dropped count already reported */

    /* Under sp_tbuf_lock(). */
    char name[64];     /* servprof_set_thread_name, else the kernel's comm */
    unsigned name_gen; /* bumped on every rename */
    struct sp_tbuf *next;
} sp_tbuf;

/* The calling thread's buffer, NULL until its first record. */
extern __thread sp_tbuf *sp_tbuf_tls __attribute__((tls_model("initial-exec")));

/* The calling thread's buffer, created (once per thread: the only malloc of
 * the hot path) when missing. NULL when memory ran out (counted). */
sp_tbuf *sp_tbuf_create(void);
static inline sp_tbuf *sp_tbuf_self(void)
{
    sp_tbuf *tb = sp_tbuf_tls;
    return tb ? tb : sp_tbuf_create();
}

/* Size of buffers created from now on (rounded down to a power of two,
 * at least 64 KiB). Thread-safe. */
void sp_tbuf_set_size(size_t bytes);

/* The list of every live buffer, newest first. Entries are only unlinked by
 * the writer (sp_tbuf_reap), so the writer may walk `next` without the lock
 * once it read the head under it. */
sp_tbuf *sp_tbuf_first(void);
void sp_tbuf_lock(void);
void sp_tbuf_unlock(void);

/* Writer: frees tb when its thread exited and it is drained. Returns 1 when
 * freed. Its counters move to the process totals. */
int sp_tbuf_reap(sp_tbuf *tb);

/* The writer thread starts (1) or has stopped (0). While none runs, a
 * thread's exit frees its buffer at once; stopping frees the orphans. */
void sp_tbuf_writer_active(int on);

/* Sums of records and dropped over live and freed buffers. */
void sp_tbuf_totals(uint64_t *records, uint64_t *dropped);

/* Fork child: forget every buffer (they belong to the parent's threads). */
void sp_tbuf_atfork_child(void);

/* ---- producer side ------------------------------------------------ */

/* Nonzero when the bytes up to index `end` fit without overwriting what
 * the writer has not consumed yet. */
static inline int sp_tb_room(sp_tbuf *tb, uint64_t end)
{
    if (end - tb->cached_tail <= tb->cap)
        return 1;
    tb->cached_tail = atomic_load_explicit(&tb->tail, memory_order_acquire);
    return end - tb->cached_tail <= tb->cap;
}

static inline void sp_tb_write(sp_tbuf *tb, uint64_t at, const void *src, size_t n)
{
    size_t off = (size_t)(at & tb->mask), first = (size_t)tb->cap - off;
    if (n <= first) {
        memcpy(tb->data + off, src, n);
    } else {
        memcpy(tb->data + off, src, first);
        memcpy(tb->data, (const uint8_t *)src + first, n - first);
    }
}

/* ---- consumer side ------------------------------------------------- */
/*
 * One consumer at a time (the writer, or metrics.c's drain thread while
 * tracing is off) takes records in order:
 *
 *     sp_tb_reader r;
 *     sp_tb_begin(&r, tb);
 *     while ((len = sp_tb_peek(&r, &scratch, &rec)) != 0) {
 *         if (rec) use(rec, len);      // rec: the whole record, contiguous
 *         sp_tb_advance(&r, len);
 *     }
 *     sp_tb_release(&r);               // hand the bytes back to the producer
 *
 * begin loads head with acquire: every record published before it is
 * complete in the ring; records published later wait for the next walk.
 * release stores tail with release: the producer, which loads tail with
 * acquire before reusing bytes, cannot overwrite a record still being read.
 * A long walk may call sp_tb_release() on the way to give room back early.
 */

/* A walk over one buffer. Owned by the consumer thread. */
typedef struct sp_tb_reader {
    sp_tbuf *tb;
    uint64_t tail;     /* start of the next record */
    uint64_t head;     /* end of what was published when the walk began */
    uint64_t released; /* tail as last stored for the producer */
} sp_tb_reader;

/* A consumer's scratch for records that wrap the ring's end (one record
 * long; grown with realloc, freed by the consumer). */
typedef struct sp_tb_scratch {
    uint8_t *buf;
    size_t cap;
} sp_tb_scratch;

static inline void sp_tb_read(const sp_tbuf *tb, uint64_t at, void *dst, size_t n)
{
    size_t off = (size_t)(at & tb->mask), first = (size_t)tb->cap - off;
    if (n <= first) {
        memcpy(dst, tb->data + off, n);
    } else {
        memcpy(dst, tb->data + off, first);
        memcpy((uint8_t *)dst + first, tb->data, n - first);
    }
}

/* Consumer: the bytes published but not consumed yet. */
static inline uint64_t sp_tb_unread(sp_tbuf *tb)
{
    return atomic_load_explicit(&tb->head, memory_order_acquire) -
           atomic_load_explicit(&tb->tail, memory_order_relaxed);
}

static inline void sp_tb_begin(sp_tb_reader *r, sp_tbuf *tb)
{
    r->tb = tb;
    /* Only this thread stores tail: relaxed reads our own last store. */
    r->tail = r->released = atomic_load_explicit(&tb->tail, memory_order_relaxed);
    r->head = atomic_load_explicit(&tb->head, memory_order_acquire);
}

/* Out of line: the rare cases of sp_tb_peek (tbuf.c). */
size_t sp_tb_peek_corrupt(sp_tb_reader *r);
size_t sp_tb_peek_wrapped(sp_tb_reader *r, sp_tb_scratch *s, uint32_t len, const uint8_t **rec);

/* The next record: returns its length (0: none left in this walk) and sets
 * *rec to its bytes, contiguous, valid until sp_tb_advance(). A record that
 * wraps the ring's end is copied into `s`; when that copy finds no memory
 * *rec is NULL: the caller skips the record (advance) and counts it lost.
 * A record whose length cannot be right (a bug) is logged and the rest of
 * the walk skipped. */
static inline size_t sp_tb_peek(sp_tb_reader *r, sp_tb_scratch *s, const uint8_t **rec)
{
    if (r->tail == r->head)
        return 0;
    sp_tbuf *tb = r->tb;
    uint32_t len; /* every record starts with its length (rec_format.h) */
    sp_tb_read(tb, r->tail, &len, sizeof len);
    if (len < SP_TB_MIN_RECORD || len > r->head - r->tail)
        return sp_tb_peek_corrupt(r);
    size_t off = (size_t)(r->tail & tb->mask);
    if (off + len > tb->cap)
        return sp_tb_peek_wrapped(r, s, len, rec);
    *rec = tb->data + off;
    return len;
}

static inline void sp_tb_advance(sp_tb_reader *r, size_t len)
{
    r->tail += len;
}

/* Gives the records consumed so far back to the producer. */
static inline void sp_tb_release(sp_tb_reader *r)
{
    if (r->tail != r->released) {
        atomic_store_explicit(&r->tb->tail, r->tail, memory_order_release);
        r->released = r->tail;
    }
}

#endif /* SERVPROF_TBUF_H */
