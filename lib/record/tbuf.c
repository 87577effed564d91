/* SPDX-License-Identifier: Apache-2.0 */
/*
 * tbuf.c — per-thread record buffers: creation, the global list, thread exit.
 *
 * DESIGN
 * Each recording thread gets one buffer on its first record: a byte ring of
 * sp_config.buffer_bytes (default 4 MiB) plus its control block, from a
 * single allocation. That malloc, the gettid and the prctl that names the
 * thread happen once per thread; every later record only touches the ring.
 * The buffer is pushed at the head of a global list under a mutex; the
 * writer reads the head under that mutex and walks the rest without it,
 * because only the writer ever unlinks (sp_tbuf_reap) and pushes never
 * change an existing node's `next`.
 *
 * A thread's exit runs a pthread key destructor that marks its buffer
 * orphaned (release); the writer frees it once it consumed every byte, so
 * records taken just before a thread ended are never lost. When no writer
 * runs (no session) the destructor frees the buffer itself, and a stopping
 * writer frees the orphans left behind (sp_tbuf_writer_active(0)), so
 * threads that come and go while collection is off cost nothing. Counters
 * of freed buffers are kept in process totals.
 *
 * Memory order: the producer writes record bytes, then stores `head` with
 * release; the writer loads `head` with acquire, reads the bytes, then
 * stores `tail` with release; the producer loads `tail` with acquire before
 * reusing bytes. That is the whole protocol: no lock on either side. The
 * consumer's half lives in one place, the sp_tb_reader walk of tbuf.h, used
 * by the writer and by the metrics drain thread alike.
 */
#include <stddef.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "clock.h"
#include "internal.h"
#include "tbuf.h"

_Static_assert(offsetof(sp_rec_hdr, len) == 0 && sizeof(((sp_rec_hdr *)0)->len) == 4,
               "sp_tb_peek reads a record's length from its first 4 bytes");

__thread sp_tbuf *sp_tbuf_tls __attribute__((tls_model("initial-exec")));

static pthread_mutex_t list_lock = PTHREAD_MUTEX_INITIALIZER;
static sp_tbuf *list_head;              /* under list_lock */
static uint32_t next_index = 1;         /* under list_lock */
static uint64_t retired_records;        /* under list_lock: freed buffers' totals */
static uint64_t retired_dropped;        /* under list_lock */
static _Atomic size_t buffer_size = (size_t)SP_DEFAULT_BUFFER_KB * 1024;
static _Atomic uint64_t alloc_failures;

static pthread_once_t key_once = PTHREAD_ONCE_INIT;
static pthread_key_t exit_key;
static int key_ok;

static int writer_active; /* under list_lock: a writer may be walking the list */

/* Unlinks tb and keeps its counters in the process totals. Under list_lock. */
static void unlink_locked(sp_tbuf *tb)
{
    sp_tbuf **pp = &list_head;
    while (*pp && *pp != tb)
        pp = &(*pp)->next;
    if (*pp)
        *pp = tb->next;
    retired_records += atomic_load_explicit(&tb->records, memory_order_relaxed);
    retired_dropped += atomic_load_explicit(&tb->dropped, memory_order_relaxed);
}

static void on_thread_exit(void *arg)
{
    sp_tbuf *tb = arg;
    if (sp_tbuf_tls == tb)
        sp_tbuf_tls = NULL;
    /* A record left half-built is simply never published. With no writer
     * running nobody would ever free the buffer (a server that starts and
     * ends threads while collection is off would pile them up): free it
     * now. Otherwise the writer frees it once it has drained it. */
    pthread_mutex_lock(&list_lock);
    int free_now = !writer_active;
    if (free_now)
        unlink_locked(tb);
    else
        atomic_store_explicit(&tb->orphaned, 1, memory_order_release);
    pthread_mutex_unlock(&list_lock);
    if (free_now)
        free(tb);
}

void sp_tbuf_writer_active(int on)
{
    sp_tbuf *dead = NULL;
    if (on) /* a session starts: the writer converts ticks from here (clock.h) */
        sp_clock_calibrate();
    pthread_mutex_lock(&list_lock);
    writer_active = on;
    if (!on) {
        /* Buffers orphaned since the writer's last pass: what they still
         * hold was published after the stop and would be skipped anyway. */
        for (sp_tbuf **pp = &list_head; *pp;) {
            sp_tbuf *tb = *pp;
            if (atomic_load_explicit(&tb->orphaned, memory_order_acquire)) {
                unlink_locked(tb);
                tb->next = dead;
                dead = tb;
            } else {
                pp = &tb->next;
            }
        }
    }
    pthread_mutex_unlock(&list_lock);
    while (dead) {
        sp_tbuf *next = dead->next;
        free(dead);
        dead = next;
    }
}

static void make_key(void)
{
    key_ok = pthread_key_create(&exit_key, on_thread_exit) == 0;
}

void sp_tbuf_set_size(size_t bytes)
{
    size_t cap = 64 * 1024;
    while (cap * 2 <= bytes && cap < ((size_t)1 << 30))
        cap *= 2;
    atomic_store_explicit(&buffer_size, cap, memory_order_relaxed);
}

sp_tbuf *sp_tbuf_create(void)
{
    size_t cap = atomic_load_explicit(&buffer_size, memory_order_relaxed);
    size_t head = (sizeof(sp_tbuf) + 63) & ~(size_t)63;
    uint8_t *mem = aligned_alloc(64, head + cap);
    if (!mem) {
        if (atomic_fetch_add(&alloc_failures, 1) == 0)
            sp_log(SP_LOG_ERROR, "no memory for a %zu-byte thread buffer: this thread's records "
                   "are dropped", cap);
        return NULL;
    }
    sp_tbuf *tb = (sp_tbuf *)mem;
    memset(tb, 0, sizeof *tb);
    tb->data = mem + head;
    tb->cap = cap;
    tb->mask = cap - 1;
    tb->tid = (int)syscall(SYS_gettid);
    if (prctl(PR_GET_NAME, tb->name, 0, 0, 0) != 0 || !tb->name[0])
        snprintf(tb->name, sizeof tb->name, "thread-%d", tb->tid);
    pthread_once(&key_once, make_key);
    if (key_ok)
        pthread_setspecific(exit_key, tb);
    pthread_mutex_lock(&list_lock);
    tb->index = next_index++;
    tb->next = list_head;
    list_head = tb;
    pthread_mutex_unlock(&list_lock);
    sp_tbuf_tls = tb;
    return tb;
}

sp_tbuf *sp_tbuf_first(void)
{
    pthread_mutex_lock(&list_lock);
    sp_tbuf *tb = list_head;
    pthread_mutex_unlock(&list_lock);
    return tb;
}

void sp_tbuf_lock(void)
{
    pthread_mutex_lock(&list_lock);
}

void sp_tbuf_unlock(void)
{
    pthread_mutex_unlock(&list_lock);
}

int sp_tbuf_reap(sp_tbuf *tb)
{
    if (!atomic_load_explicit(&tb->orphaned, memory_order_acquire))
        return 0;
    if (sp_tb_unread(tb) != 0)
        return 0;
    pthread_mutex_lock(&list_lock);
    unlink_locked(tb);
    pthread_mutex_unlock(&list_lock);
    free(tb);
    return 1;
}

void sp_tbuf_totals(uint64_t *records, uint64_t *dropped)
{
    pthread_mutex_lock(&list_lock);
    uint64_t r = retired_records, d = retired_dropped;
    for (sp_tbuf *tb = list_head; tb; tb = tb->next) {
        r += atomic_load_explicit(&tb->records, memory_order_relaxed);
        d += atomic_load_explicit(&tb->dropped, memory_order_relaxed);
    }
    pthread_mutex_unlock(&list_lock);
    *records = r;
    *dropped = d;
}

void sp_tbuf_atfork_child(void)
{
    /* The parent's threads do not exist here and the lock may have been held
     * at fork: start over with a fresh lock and list. The parent's buffers
     * are leaked on purpose (their memory is copy-on-write anyway). */
    pthread_mutex_t fresh = PTHREAD_MUTEX_INITIALIZER;
    list_lock = fresh;
    sp_clock_atfork_child();
    list_head = NULL;
    writer_active = 0;
    sp_tbuf *mine = sp_tbuf_tls;
    sp_tbuf_tls = NULL;
    if (key_ok && mine)
        pthread_setspecific(exit_key, NULL);
}

size_t sp_tb_peek_corrupt(sp_tb_reader *r)
{
    sp_log(SP_LOG_ERROR, "internal: corrupt thread buffer (tid %d); %llu bytes skipped",
           r->tb->tid, (unsigned long long)(r->head - r->tail));
    r->tail = r->head;
    return 0;
}

size_t sp_tb_peek_wrapped(sp_tb_reader *r, sp_tb_scratch *s, uint32_t len, const uint8_t **rec)
{
    if (s->cap < len) {
        uint8_t *grown = realloc(s->buf, len);
        if (!grown) {
            *rec = NULL;
            return len;
        }
        s->buf = grown;
        s->cap = len;
    }
    sp_tb_read(r->tb, r->tail, s->buf, len);
    *rec = s->buf;
    return len;
}
