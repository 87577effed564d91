/* SPDX-License-Identifier: Apache-2.0 */
/*
 * record.c — the recording API of servprof.h: the hot path.
 *
 * DESIGN
 * A record is built in place in the calling thread's ring (tbuf.h): the
 * servprof_rec handle IS the thread's sp_tbuf. servprof_rec_begin_slow()
 * checks the level and the domain, takes the timestamp and writes the
 * header; each attribute call appends a tag, a key and a value (the layout
 * is in rec_format.h); the finishing call appends the name, patches the
 * header's length and kind and publishes the record with one release store
 * of the ring's head. Nothing here locks, allocates (but for the thread's
 * first record, which creates its buffer) or makes a system call; the
 * timestamp is the TSC (rdtsc) where it is invariant, converted by the
 * writer, else the vDSO's CLOCK_REALTIME (clock.h). JSON is built later by
 * the writer thread (argbuild.c).
 *
 * Cost model (measured: docs/benchmarks.md, "Recording").
 * Each piece of a record (header + domain, one attribute, the trailer) is
 * claimed with one room check and, unless it straddles the ring's end,
 * written with plain stores at its final place; short strings are copied
 * inline. servprof.h passes the lengths of string literals (folded by the
 * compiler) so the common call site does no strlen. Rare paths (wrapping,
 * NULL or over-long strings, standalone records) are out of line.
 *
 * When the ring has no room the record goes on being "built" in state
 * SP_TB_OVERFLOW, where every call is a no-op, and the finishing call counts
 * one drop: the caller never waits.
 *
 * A span id is (thread index << 40) | per-thread counter: unique in the
 * process without shared state. A span's end may be written by any thread,
 * into that thread's ring; the writer pairs begin and end.
 *
 * Records that must be written while the thread is in the middle of building
 * another (servprof_span_end() or servprof_link() between a
 * servprof_rec_begin() and its finishing call) are inserted in front of the
 * unfinished one, which is moved up the ring: rare, and cheaper than a
 * second buffer.
 */
/* The functions below are the ones servprof.h's macros stand in for. */
#define SERVPROF_NO_LITERAL_LENGTHS 1

#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include <sys/syscall.h>
#include <unistd.h>

#include "ext.h"
#include "internal.h"
#include "linkkeep.h"
#include "rec_format.h"
#include "rec_state.h"
#include "tbuf.h"

/* publish() patches len, kind and flags as 6 bytes when the header wraps. */
_Static_assert(offsetof(sp_rec_hdr, kind) == 4 && offsetof(sp_rec_hdr, flags) == 5,
               "sp_rec_hdr layout");

_Atomic(const sp_domain_filter *) sp__domain_filter;
sp_rec_counters sp_rec_count;
_Atomic uint32_t sp_rec_epoch;

#define SPAN_INDEX_SHIFT 40

/* ------------------------------------------------------------------ */
/* Small helpers                                                        */
/* ------------------------------------------------------------------ */

static inline void bump(_Atomic uint64_t *c)
{
    /* Single writer (the owning thread): a plain load/store pair, no lock
     * prefix; readers only need an untorn value. */
    atomic_store_explicit(c, atomic_load_explicit(c, memory_order_relaxed) + 1,
                          memory_order_relaxed);
}

static __attribute__((noinline, cold)) void bad_input(void)
{
    sp_count(&sp_rec_count.bad_input, 1);
}

/* An over-long string cut at SERVPROF_MAX_STRING on a UTF-8 character
 * boundary (counted). Out of line: rare. */
static __attribute__((noinline, cold)) size_t cut_long(const char *s)
{
    size_t n = SERVPROF_MAX_STRING;
    while (n > 0 && ((unsigned char)s[n] & 0xC0) == 0x80)
        n--; /* do not split a multi-byte character */
    sp_count(&sp_rec_count.truncated, 1);
    return n;
}

static __attribute__((noinline, cold)) size_t null_str(const char **s)
{
    bad_input();
    *s = "";
    return 0;
}

/* Length of s to copy: NULL counts as bad input and reads as "", over-long
 * strings are cut at SERVPROF_MAX_STRING on a UTF-8 character boundary.
 * `known` is the length when the caller already knows it (a literal's,
 * folded at compile time by servprof.h's wrappers), else SIZE_MAX. */
static inline __attribute__((always_inline)) size_t str_len_k(const char **s, size_t known)
{
    if (__builtin_expect(!*s, 0))
        return null_str(s);
    size_t n = known != SIZE_MAX ? known : strnlen(*s, SERVPROF_MAX_STRING + 1);
    if (__builtin_expect(n > SERVPROF_MAX_STRING, 0))
        n = cut_long(*s);
    return n;
}

static inline size_t str_len(const char **s)
{
    return str_len_k(s, SIZE_MAX);
}

static inline size_t cut_len(const char *s, size_t n)
{
    return __builtin_expect(n > SERVPROF_MAX_STRING, 0) ? cut_long(s) : n;
}

/* Copies a string of n bytes. Names, keys and ids are short: up to 16
 * bytes are copied inline with two overlapping loads and stores (reading
 * only [s, s+n)), which saves a libc call per string. */
static inline __attribute__((always_inline)) void copy_str(uint8_t *d, const char *s, size_t n)
{
    if (n >= 8 && n <= 16) {
        uint64_t a, b;
        memcpy(&a, s, 8);
        memcpy(&b, s + n - 8, 8);
        memcpy(d, &a, 8);
        memcpy(d + n - 8, &b, 8);
    } else if (n >= 4 && n < 8) {
        uint32_t a, b;
        memcpy(&a, s, 4);
        memcpy(&b, s + n - 4, 4);
        memcpy(d, &a, 4);
        memcpy(d + n - 4, &b, 4);
    } else if (n < 4) {
        if (n) {
            d[0] = (uint8_t)s[0];
            d[n / 2] = (uint8_t)s[n / 2];
            d[n - 1] = (uint8_t)s[n - 1];
        }
    } else {
        memcpy(d, s, n);
    }
}

/* Claims n more bytes for the record being built: the ring position where
 * they go, after one room check. On no room the record turns to
 * SP_TB_OVERFLOW and 0 is returned (the position is never 0 otherwise:
 * every record starts with a header). */
static inline __attribute__((always_inline)) int claim(sp_tbuf *tb, size_t n, uint64_t *at)
{
    uint64_t end = tb->pos + n;
    if (__builtin_expect(!sp_tb_room(tb, end), 0)) {
        tb->state = SP_TB_OVERFLOW;
        return 0;
    }
    *at = tb->pos;
    tb->pos = end;
    return 1;
}

/* Where n bytes at ring index `at` can be written with plain stores: NULL
 * when they would straddle the ring's end (then write with sp_tb_write). */
static inline __attribute__((always_inline)) uint8_t *direct(const sp_tbuf *tb, uint64_t at, size_t n)
{
    size_t off = (size_t)(at & tb->mask);
    return __builtin_expect(off + n <= tb->cap, 1) ? tb->data + off : NULL;
}

/* Appends n bytes to the record being built; on no room the record turns
 * to SP_TB_OVERFLOW. */
static inline int put(sp_tbuf *tb, const void *src, size_t n)
{
    uint64_t at;
    if (!claim(tb, n, &at))
        return 0;
    sp_tb_write(tb, at, src, n);
    return 1;
}

/* A u16 length and the bytes, with one room check. */
static inline int put_str(sp_tbuf *tb, const char *s, size_t n)
{
    uint16_t len = (uint16_t)n;
    uint64_t at;
    if (!claim(tb, 2 + n, &at))
        return 0;
    uint8_t *p = direct(tb, at, 2 + n);
    if (p) {
        memcpy(p, &len, 2);
        memcpy(p + 2, s, n);
    } else {
        sp_tb_write(tb, at, &len, 2);
        sp_tb_write(tb, at + 2, s, n);
    }
    return 1;
}

/* The record handle when it may take attributes; NULL otherwise. A handle
 * whose record was already finished is misuse (counted). */
static inline __attribute__((always_inline)) sp_tbuf *building(servprof_rec *r)
{
    sp_tbuf *tb = (sp_tbuf *)r;
    if (!tb)
        return NULL;
    if (__builtin_expect(tb->state != SP_TB_BUILDING, 0)) {
        if (tb->state == SP_TB_IDLE)
            bad_input();
        return NULL;
    }
    return tb;
}

static inline int in_array(const sp_tbuf *tb)
{
    return tb->depth > 0 && ((tb->array_bits >> (tb->depth - 1)) & 1);
}

/* put_attr's bytes when they straddle the ring's end (rare). */
static __attribute__((noinline)) void put_attr_wrapped(sp_tbuf *tb, uint64_t at, const uint8_t *hd,
                                                       const char *key, size_t kn, const void *v,
                                                       size_t vn, int vlen)
{
    uint16_t l = (uint16_t)vn;
    sp_tb_write(tb, at, hd, 3);
    sp_tb_write(tb, at + 3, key, kn);
    at += 3 + kn;
    if (vlen) {
        sp_tb_write(tb, at, &l, 2);
        at += 2;
    }
    sp_tb_write(tb, at, v, vn);
}

/* One whole attribute with one room check: tag, key (u16 length + bytes;
 * inside an array the key is not stored, elsewhere a NULL key is bad input
 * and stored as ""), then the value: `vn` bytes of v, preceded by their u16
 * length when `vlen` is set (strings). `kn` is the key's length when known,
 * else SIZE_MAX. Returns 0 when the record overflowed. Always inlined: the
 * callers' constant tag, value size and vlen fold away. */
static inline __attribute__((always_inline)) int put_attr(sp_tbuf *tb, uint8_t tag,
                                                          const char *key, size_t kn,
                                                          const void *v, size_t vn, int vlen)
{
    if (__builtin_expect(in_array(tb), 0)) {
        key = "";
        kn = 0;
    } else {
        kn = str_len_k(&key, kn);
    }
    size_t total = 3 + kn + (vlen ? 2 : 0) + vn;
    uint64_t at;
    if (!claim(tb, total, &at))
        return 0;
    uint8_t hd[3] = {tag, (uint8_t)(kn & 0xFF), (uint8_t)(kn >> 8)};
    uint8_t *p = direct(tb, at, total);
    if (__builtin_expect(p == NULL, 0)) {
        put_attr_wrapped(tb, at, hd, key, kn, v, vn, vlen);
        return 1;
    }
    memcpy(p, hd, 3);
    copy_str(p + 3, key, kn);
    p += 3 + kn;
    if (vlen) {
        uint16_t l = (uint16_t)vn;
        memcpy(p, &l, 2);
        copy_str(p + 2, (const char *)v, vn);
    } else {
        memcpy(p, v, vn);
    }
    return 1;
}

/* Tag and key of an attribute whose value follows in separate writes. */
static inline int put_key(sp_tbuf *tb, uint8_t tag, const char *key)
{
    return put_attr(tb, tag, key, SIZE_MAX, "", 0, 0);
}

/* ------------------------------------------------------------------ */
/* Publishing                                                           */
/* ------------------------------------------------------------------ */

static inline void reset(sp_tbuf *tb)
{
    tb->pos = tb->rec_start;
    tb->state = SP_TB_IDLE;
}

static inline void drop(sp_tbuf *tb)
{
    bump(&tb->dropped);
    reset(tb);
}

/* Finishes the record being built: patches kind (and span fields) into the
 * header and publishes it. When `flags` >= 0, ts replaces the header's time
 * and flags its SP_HDR_* flags: SP_HDR_TICKS for a time from
 * sp_clock_read() that gave ticks, 0 for the caller's realtime ns
 * (servprof_span_at); ts2, when nonzero, is stored too. Returns 0 when the
 * record was dropped. */
static inline int publish(sp_tbuf *tb, uint8_t kind, uint64_t span, int64_t ts, int64_t ts2,
                          int flags)
{
    if (__builtin_expect(tb->state != SP_TB_BUILDING, 0)) {
        drop(tb);
        return 0;
    }
    /* Patch only what changed: the header was written zeroed but for the
     * epoch, the flags and the begin time. Constant sizes: the copies
     * inline, straight into the ring when the header does not wrap. */
    uint64_t at = tb->rec_start;
    uint32_t len = (uint32_t)(tb->pos - at);
    uint8_t *p = direct(tb, at, sizeof(sp_rec_hdr));
    if (__builtin_expect(p != NULL, 1)) {
        memcpy(p + offsetof(sp_rec_hdr, len), &len, 4);
        p[offsetof(sp_rec_hdr, kind)] = kind;
        if (flags >= 0) {
            p[offsetof(sp_rec_hdr, flags)] = (uint8_t)flags;
            memcpy(p + offsetof(sp_rec_hdr, ts), &ts, 8);
        }
        if (ts2)
            memcpy(p + offsetof(sp_rec_hdr, ts2), &ts2, 8);
        if (span)
            memcpy(p + offsetof(sp_rec_hdr, span), &span, 8);
    } else {
        uint8_t lk[6];
        memcpy(lk, &len, 4);
        lk[4] = kind;
        lk[5] = (uint8_t)flags;
        sp_tb_write(tb, at, lk, flags >= 0 ? 6 : 5);
        if (flags >= 0)
            sp_tb_write(tb, at + offsetof(sp_rec_hdr, ts), &ts, 8);
        if (ts2)
            sp_tb_write(tb, at + offsetof(sp_rec_hdr, ts2), &ts2, 8);
        if (span)
            sp_tb_write(tb, at + offsetof(sp_rec_hdr, span), &span, 8);
    }
    tb->rec_start = tb->pos;
    tb->state = SP_TB_IDLE;
    bump(&tb->records);
    atomic_store_explicit(&tb->head, tb->pos, memory_order_release);
    return 1;
}

/* Writes a complete record (rec, n bytes) now, even while the thread is in
 * the middle of building another: that one is moved up by n bytes. */
static int publish_standalone(sp_tbuf *tb, const uint8_t *rec, size_t n)
{
    uint64_t start = tb->rec_start, len = tb->pos - start;
    if (!sp_tb_room(tb, tb->pos + n)) {
        bump(&tb->dropped);
        return 0;
    }
    for (uint64_t i = len; i-- > 0;) /* backwards: the ranges overlap */
        tb->data[(start + n + i) & tb->mask] = tb->data[(start + i) & tb->mask];
    sp_tb_write(tb, start, rec, n);
    tb->rec_start = start + n;
    tb->pos += n;
    bump(&tb->records);
    atomic_store_explicit(&tb->head, start + n, memory_order_release);
    return 1;
}

/* ------------------------------------------------------------------ */
/* Begin                                                                */
/* ------------------------------------------------------------------ */

/* Whether a domain of length dn is in the filter: a length check and a
 * memcmp per name, no libc string scan (the length is usually a literal's,
 * known at compile time). Names are NUL-terminated within SP_DOMAIN_LEN. */
static inline int domain_pass_n(const sp_domain_filter *f, const char *domain, size_t dn)
{
    if (dn >= SP_DOMAIN_LEN)
        return 0;
    if (dn == 0) {
        for (int i = 0; i < f->n; i++)
            if (f->names[i][0] == 0)
                return 1;
        return 0;
    }
    for (int i = 0; i < f->n; i++) {
        const char *name = f->names[i];
        /* strlen(name) == dn, and the first bytes agree, before any call. */
        if (name[dn] == 0 && name[dn - 1] != 0 && name[0] == domain[0] &&
            !memcmp(name, domain, dn))
            return 1;
    }
    return 0;
}

int sp_domain_pass(const sp_domain_filter *f, const char *domain)
{
    if (!f || f->n <= 0 || !domain)
        return 1;
    return domain_pass_n(f, domain, strnlen(domain, SP_DOMAIN_LEN));
}

/* The level being collected, initializing the library on first use.
 * 0 when off. */
static inline int current_level(void)
{
    int on = atomic_load_explicit(&servprof__level, memory_order_relaxed);
    if (__builtin_expect(on == SP_LEVEL_UNINIT, 0)) {
        sp_runtime_ensure();
        on = atomic_load_explicit(&servprof__level, memory_order_relaxed);
        if (on == SP_LEVEL_UNINIT)
            on = 0;
    }
    return on;
}

SERVPROF_API servprof_rec *servprof_rec_begin_slow(int level, const char *domain)
{
    return servprof__rec_begin_k(level, domain, SIZE_MAX);
}

SERVPROF_API servprof_rec *servprof__rec_begin_k(int level, const char *domain, size_t dn)
{
    int on = current_level();
    if (on <= 0 || level > on)
        return NULL;
    if (domain) {
        /* The length before truncation: an over-long domain matches no
         * filter name, and is only counted as truncated when kept. */
        if (dn == SIZE_MAX)
            dn = strnlen(domain, SERVPROF_MAX_STRING + 1);
        const sp_domain_filter *f = atomic_load_explicit(&sp__domain_filter, memory_order_acquire);
        if (f && f->n > 0 && !domain_pass_n(f, domain, dn))
            return NULL;
    }
    sp_tbuf *tb = sp_tbuf_self();
    if (__builtin_expect(!tb, 0))
        return NULL;
    if (__builtin_expect(tb->state != SP_TB_IDLE, 0)) {
        bad_input(); /* the previous record was never finished: abandoned */
        reset(tb);
    }
    tb->depth = 0;
    tb->skip_depth = 0;
    tb->array_bits = 0;
    int ticks;
    int64_t ts = sp_clock_read(&ticks);
    dn = domain ? str_len_k(&domain, dn) : 0;
    size_t total = sizeof(sp_rec_hdr) + 2 + dn;
    uint64_t at;
    tb->state = SP_TB_BUILDING;
    if (!claim(tb, total, &at))
        return (servprof_rec *)tb; /* SP_TB_OVERFLOW: the finishing call counts the drop */
    sp_rec_hdr h = {0};
    h.flags = ticks ? SP_HDR_TICKS : 0;
    h.epoch = atomic_load_explicit(&sp_rec_epoch, memory_order_relaxed);
    h.ts = ts;
    uint16_t dlen = (uint16_t)dn;
    uint8_t *p = direct(tb, at, total);
    if (__builtin_expect(p != NULL, 1)) {
        memcpy(p, &h, sizeof h);
        memcpy(p + sizeof h, &dlen, 2);
        copy_str(p + sizeof h + 2, domain ? domain : "", dn);
    } else {
        sp_tb_write(tb, at, &h, sizeof h);
        sp_tb_write(tb, at + sizeof h, &dlen, 2);
        if (dn)
            sp_tb_write(tb, at + sizeof h + 2, domain, dn);
    }
    return (servprof_rec *)tb;
}

SERVPROF_API void servprof_rec_cancel(servprof_rec *r)
{
    sp_tbuf *tb = (sp_tbuf *)r;
    if (!tb)
        return;
    if (tb->state == SP_TB_IDLE)
        bad_input();
    else
        reset(tb);
}

/* ------------------------------------------------------------------ */
/* Attributes                                                           */
/* ------------------------------------------------------------------ */

/* A string attribute; kn and vn are the lengths when known, else SIZE_MAX. */
static inline void attr_str_k(servprof_rec *r, uint8_t tag, const char *key, size_t kn,
                              const char *val, size_t vn)
{
    sp_tbuf *tb = building(r);
    if (!tb)
        return;
    vn = str_len_k(&val, vn);
    put_attr(tb, tag, key, kn, val, vn, 1);
}

SERVPROF_API void servprof_res_str(servprof_rec *r, const char *rid)
{
    attr_str_k(r, SP_TAG_STR, "rid", 3, rid, SIZE_MAX);
}

SERVPROF_API void servprof_res_int(servprof_rec *r, int64_t rid)
{
    sp_tbuf *tb = building(r);
    if (tb)
        put_attr(tb, SP_TAG_INT, "rid", 3, &rid, 8, 0);
}

SERVPROF_API void servprof_attr_str(servprof_rec *r, const char *key, const char *val)
{
    attr_str_k(r, SP_TAG_STR, key, SIZE_MAX, val, SIZE_MAX);
}

SERVPROF_API void servprof__attr_str_k(servprof_rec *r, const char *key, size_t kn,
                                       const char *val, size_t vn)
{
    attr_str_k(r, SP_TAG_STR, key, kn, val, vn);
}

SERVPROF_API void servprof_attr_strn(servprof_rec *r, const char *key, const char *val, size_t len)
{
    sp_tbuf *tb = building(r);
    if (!tb)
        return;
    if (!val) {
        bad_input();
        val = "";
        len = 0;
    }
    len = cut_len(val, len);
    put_attr(tb, SP_TAG_STR, key, SIZE_MAX, val, len, 1);
}

SERVPROF_API void servprof_attr_json(servprof_rec *r, const char *key, const char *json)
{
    attr_str_k(r, SP_TAG_JSON, key, SIZE_MAX, json, SIZE_MAX);
}

/* The drop-in's message (ext.h): copied as given, decoded by the writer. */
SERVPROF_API void servprof__attr_msg(servprof_rec *r, int take_name_domain, const char *msg,
                                     size_t len)
{
    sp_tbuf *tb = building(r);
    if (!tb)
        return;
    if (__builtin_expect(!msg, 0))
        len = null_str(&msg);
    if (__builtin_expect(len > SERVPROF__MSG_MAX, 0)) {
        len = SERVPROF__MSG_MAX;
        sp_count(&sp_rec_count.truncated, 1);
    }
    put_attr(tb, SP_TAG_MSG, take_name_domain ? "x" : "", take_name_domain ? 1 : 0, msg, len, 1);
}

static inline void attr_num_k(servprof_rec *r, uint8_t tag, const char *key, size_t kn,
                              const void *val)
{
    sp_tbuf *tb = building(r);
    if (tb)
        put_attr(tb, tag, key, kn, val, 8, 0);
}

SERVPROF_API void servprof_attr_int(servprof_rec *r, const char *key, int64_t val)
{
    attr_num_k(r, SP_TAG_INT, key, SIZE_MAX, &val);
}

SERVPROF_API void servprof__attr_int_k(servprof_rec *r, const char *key, size_t kn, int64_t val)
{
    attr_num_k(r, SP_TAG_INT, key, kn, &val);
}

SERVPROF_API void servprof_attr_double(servprof_rec *r, const char *key, double val)
{
    attr_num_k(r, SP_TAG_DOUBLE, key, SIZE_MAX, &val);
}

SERVPROF_API void servprof_metric(servprof_rec *r, const char *name, double val)
{
    attr_num_k(r, SP_TAG_GAUGE, name, SIZE_MAX, &val);
}

SERVPROF_API void servprof_metric_inc(servprof_rec *r, const char *name, double val)
{
    attr_num_k(r, SP_TAG_INC, name, SIZE_MAX, &val);
}

SERVPROF_API void servprof_metric_scope(servprof_rec *r, const char *name, const char *val)
{
    attr_str_k(r, SP_TAG_SCOPE, name, SIZE_MAX, val, SIZE_MAX);
}

SERVPROF_API void servprof_attr_bool(servprof_rec *r, const char *key, int val)
{
    sp_tbuf *tb = building(r);
    uint8_t b = val != 0;
    if (tb)
        put_attr(tb, SP_TAG_BOOL, key, SIZE_MAX, &b, 1, 0);
}

static void put_array(servprof_rec *r, uint8_t tag, const char *key, const void *vals, size_t n)
{
    sp_tbuf *tb = building(r);
    if (!tb)
        return;
    if (!vals && n) {
        bad_input();
        n = 0;
    }
    if (n > UINT32_MAX / 8) { /* cannot fit any buffer: drop the record */
        tb->state = SP_TB_OVERFLOW;
        return;
    }
    uint32_t cnt = (uint32_t)n;
    if (put_key(tb, tag, key) && put(tb, &cnt, 4) && n)
        put(tb, vals, n * 8);
}

SERVPROF_API void servprof_attr_int_array(servprof_rec *r, const char *key, const int64_t *vals,
                                          size_t n)
{
    put_array(r, SP_TAG_INT_ARR, key, vals, n);
}

SERVPROF_API void servprof_attr_double_array(servprof_rec *r, const char *key, const double *vals,
                                             size_t n)
{
    put_array(r, SP_TAG_DBL_ARR, key, vals, n);
}

static void open_container(servprof_rec *r, uint8_t tag, const char *key)
{
    sp_tbuf *tb = building(r);
    if (!tb)
        return;
    if (tb->depth >= SP_MAX_NESTING) {
        bad_input();
        tb->skip_depth++;
        return;
    }
    if (put_key(tb, tag, key)) {
        if (tag == SP_TAG_ARR)
            tb->array_bits |= (uint64_t)1 << tb->depth;
        else
            tb->array_bits &= ~((uint64_t)1 << tb->depth);
        tb->depth++;
    }
}

SERVPROF_API void servprof_attr_array_begin(servprof_rec *r, const char *key)
{
    open_container(r, SP_TAG_ARR, key);
}

SERVPROF_API void servprof_attr_object_begin(servprof_rec *r, const char *key)
{
    open_container(r, SP_TAG_OBJ, key);
}

SERVPROF_API void servprof_attr_end(servprof_rec *r)
{
    sp_tbuf *tb = building(r);
    if (!tb)
        return;
    if (tb->skip_depth > 0) {
        tb->skip_depth--;
        return;
    }
    if (tb->depth == 0) {
        bad_input(); /* nothing open */
        return;
    }
    uint8_t t = SP_TAG_END;
    if (put(tb, &t, 1))
        tb->depth--;
}

/* ------------------------------------------------------------------ */
/* Finishing                                                            */
/* ------------------------------------------------------------------ */

/* The attribute stream's end tag followed by the name (nn: its length
 * when known, else SIZE_MAX), with one room check. */
static inline void put_trailer_name(sp_tbuf *tb, const char *name, size_t nn)
{
    nn = str_len_k(&name, nn);
    uint8_t hd[3] = {SP_TAG_STOP, (uint8_t)(nn & 0xFF), (uint8_t)(nn >> 8)};
    uint64_t at;
    if (!claim(tb, 3 + nn, &at))
        return;
    uint8_t *p = direct(tb, at, 3 + nn);
    if (__builtin_expect(p != NULL, 1)) {
        memcpy(p, hd, 3);
        copy_str(p + 3, name, nn);
    } else {
        sp_tb_write(tb, at, hd, 3);
        sp_tb_write(tb, at + 3, name, nn);
    }
}

static inline sp_tbuf *finishing(servprof_rec *r)
{
    sp_tbuf *tb = (sp_tbuf *)r;
    if (!tb)
        return NULL;
    if (__builtin_expect(tb->state == SP_TB_IDLE, 0)) {
        bad_input(); /* finished twice */
        return NULL;
    }
    return tb;
}

static inline void event_k(servprof_rec *r, const char *name, size_t nn)
{
    sp_tbuf *tb = finishing(r);
    if (!tb)
        return;
    if (tb->state == SP_TB_BUILDING)
        put_trailer_name(tb, name, nn);
    publish(tb, SP_REC_EVENT, 0, 0, 0, -1);
}

SERVPROF_API void servprof_event(servprof_rec *r, const char *name)
{
    event_k(r, name, SIZE_MAX);
}

void sp_rec_event_at(servprof_rec *r, const char *name, int64_t ts_ns)
{
    sp_tbuf *tb = finishing(r);
    if (!tb)
        return;
    if (tb->state == SP_TB_BUILDING)
        put_trailer_name(tb, name, SIZE_MAX);
    /* The caller's time is realtime ns already: flags 0. */
    publish(tb, SP_REC_EVENT, 0, ts_ns, 0, 0);
}

SERVPROF_API void servprof__event_k(servprof_rec *r, const char *name, size_t nn)
{
    event_k(r, name, nn);
}

static inline servprof_span span_begin_k(servprof_rec *r, const char *name, size_t nn)
{
    sp_tbuf *tb = finishing(r);
    if (!tb)
        return 0;
    if (tb->state == SP_TB_BUILDING)
        put_trailer_name(tb, name, nn);
    uint64_t id = ((uint64_t)tb->index << SPAN_INDEX_SHIFT) | (tb->span_counter + 1);
    if (!publish(tb, SP_REC_SPAN_BEGIN, id, 0, 0, -1))
        return 0; /* dropped: ending it will be a no-op */
    tb->span_counter++;
    return id;
}

SERVPROF_API servprof_span servprof_span_begin(servprof_rec *r, const char *name)
{
    return span_begin_k(r, name, SIZE_MAX);
}

SERVPROF_API servprof_span servprof__span_begin_k(servprof_rec *r, const char *name, size_t nn)
{
    return span_begin_k(r, name, nn);
}

SERVPROF_API void servprof_span_at(servprof_rec *r, const char *name, int64_t start_ns,
                                   int64_t end_ns)
{
    sp_tbuf *tb = finishing(r);
    if (!tb)
        return;
    if (end_ns < start_ns) {
        bad_input();
        end_ns = start_ns; /* stored with duration 0 */
    }
    if (tb->state == SP_TB_BUILDING)
        put_trailer_name(tb, name, SIZE_MAX);
    /* The caller's times are realtime ns already: flags 0. */
    publish(tb, SP_REC_SPAN_AT, 0, start_ns, end_ns, 0);
}

static void keep_link(const char *from, const char *to);

SERVPROF_API void servprof_link_rec(servprof_rec *r, const char *from, const char *to)
{
    if (!r && atomic_load_explicit(&servprof__level, memory_order_relaxed) == 0) {
        keep_link(from, to); /* servprof_rec_begin gave NULL because collection is off */
        return;
    }
    sp_tbuf *tb = finishing(r);
    if (!tb)
        return;
    if (tb->state == SP_TB_BUILDING) {
        size_t nf = str_len(&from), nt = str_len(&to);
        uint8_t stop = SP_TAG_STOP;
        if (put(tb, &stop, 1) && put_str(tb, from, nf))
            put_str(tb, to, nt);
    }
    publish(tb, SP_REC_LINK, 0, 0, 0, -1);
}

/* emit_small's general case: through a stack copy (the record may wrap,
 * or go in front of one being built). */
static __attribute__((noinline)) void emit_small_slow(sp_tbuf *tb, const sp_rec_hdr *h,
                                                      const uint8_t *tail, size_t n)
{
    uint8_t rec[sizeof(sp_rec_hdr) + 3 + 2 * (2 + SERVPROF_MAX_STRING)];
    memcpy(rec, h, sizeof *h);
    rec[sizeof *h] = 0; /* domain length 0 */
    rec[sizeof *h + 1] = 0;
    rec[sizeof *h + 2] = SP_TAG_STOP;
    if (n)
        memcpy(rec + sizeof *h + 3, tail, n);
    if (tb->state == SP_TB_IDLE) {
        if (!sp_tb_room(tb, tb->pos + h->len)) {
            bump(&tb->dropped);
            return;
        }
        sp_tb_write(tb, tb->pos, rec, h->len);
        tb->pos += h->len;
        tb->rec_start = tb->pos;
        bump(&tb->records);
        atomic_store_explicit(&tb->head, tb->pos, memory_order_release);
    } else {
        publish_standalone(tb, rec, h->len);
    }
}

/* A record without attributes written outside the begin/finish protocol:
 * header, no domain, empty attribute stream, then `tail` (already encoded). */
static inline void emit_small(sp_tbuf *tb, uint8_t kind, uint64_t span, const uint8_t *tail,
                              size_t n)
{
    int ticks;
    sp_rec_hdr h = {0};
    h.len = (uint32_t)(sizeof h + 3 + n);
    h.kind = kind;
    h.ts = sp_clock_read(&ticks);
    h.flags = ticks ? SP_HDR_TICKS : 0;
    h.epoch = atomic_load_explicit(&sp_rec_epoch, memory_order_relaxed);
    h.span = span;
    uint64_t end = tb->pos + h.len;
    uint8_t *p = NULL;
    if (__builtin_expect(tb->state != SP_TB_IDLE || !sp_tb_room(tb, end) ||
                             !(p = direct(tb, tb->pos, h.len)),
                         0)) {
        emit_small_slow(tb, &h, tail, n);
        return;
    }
    memcpy(p, &h, sizeof h);
    p[sizeof h] = 0; /* domain length 0 */
    p[sizeof h + 1] = 0;
    p[sizeof h + 2] = SP_TAG_STOP;
    if (n)
        memcpy(p + sizeof h + 3, tail, n);
    tb->pos = end;
    tb->rec_start = end;
    bump(&tb->records);
    atomic_store_explicit(&tb->head, end, memory_order_release);
}

SERVPROF_API void servprof_span_end(servprof_span span)
{
    if (!span || current_level() <= 0)
        return;
    sp_tbuf *tb = sp_tbuf_self();
    if (tb)
        emit_small(tb, SP_REC_SPAN_END, span, NULL, 0);
}

SERVPROF_API void servprof_span_end_rec(servprof_rec *r, servprof_span span)
{
    sp_tbuf *tb = (sp_tbuf *)r;
    if (!tb) {
        servprof_span_end(span);
        return;
    }
    if (tb->state == SP_TB_IDLE) {
        bad_input();
        servprof_span_end(span);
        return;
    }
    if (!span) { /* the span was never recorded: nothing to end */
        reset(tb);
        return;
    }
    if (tb->state == SP_TB_OVERFLOW) {
        /* No room for the end's attributes: count them dropped but still
         * end the span, or it would be reported as never ended. */
        drop(tb);
        emit_small(tb, SP_REC_SPAN_END, span, NULL, 0);
        return;
    }
    uint8_t stop = SP_TAG_STOP;
    put(tb, &stop, 1);
    int ticks;
    int64_t ts = sp_clock_read(&ticks);
    if (!publish(tb, SP_REC_SPAN_END, span, ts, 0, ticks ? SP_HDR_TICKS : 0))
        emit_small(tb, SP_REC_SPAN_END, span, NULL, 0);
}

/* Collection off (no session, no live metrics): the link is kept for the
 * next session's first commit (linkkeep.c), so a request that straddles
 * `servprof enable` keeps its front-end id. */
static void keep_link(const char *from, const char *to)
{
    static _Thread_local int tid;
    if (!tid)
        tid = (int)syscall(SYS_gettid);
    size_t nf = str_len(&from), nt = str_len(&to);
    sp_linkkeep_note(from, nf, to, nt, tid);
}

SERVPROF_API void servprof_link(const char *from, const char *to)
{
    int level = current_level();
    if (level < SERVPROF_LEVEL_INFO) {
        if (level == 0)
            keep_link(from, to);
        return;
    }
    sp_tbuf *tb = sp_tbuf_self();
    if (!tb)
        return;
    size_t nf = str_len(&from), nt = str_len(&to);
    uint8_t tail[2 * (2 + SERVPROF_MAX_STRING)];
    uint16_t l = (uint16_t)nf;
    memcpy(tail, &l, 2);
    memcpy(tail + 2, from, nf);
    l = (uint16_t)nt;
    memcpy(tail + 2 + nf, &l, 2);
    memcpy(tail + 4 + nf, to, nt);
    emit_small(tb, SP_REC_LINK, 0, tail, 4 + nf + nt);
}

/* ------------------------------------------------------------------ */
/* Names and counters                                                   */
/* ------------------------------------------------------------------ */

SERVPROF_API void servprof_set_thread_name(const char *name)
{
    if (!name || !*name) {
        static sp_misuse_limit lim;
        sp_warn_misuse(&lim, "servprof_set_thread_name", name ? "name is empty" : "name is NULL",
                       "kept the old name");
        return;
    }
    sp_tbuf *tb = sp_tbuf_self();
    if (!tb)
        return;
    sp_tbuf_lock();
    snprintf(tb->name, sizeof tb->name, "%s", name);
    tb->name_gen++;
    sp_tbuf_unlock();
}

/* The fields of version 0.1's servprof_stats: what servprof_get_stats(),
 * the original entry point, fills. */
#define STATS_V0_SIZE (offsetof(servprof_stats, write_errors) + sizeof(uint64_t))

SERVPROF_API void servprof_get_stats_n(servprof_stats *out, size_t size)
{
    if (!out)
        return;
    servprof_stats all;
    memset(&all, 0, sizeof all);
    sp_tbuf_totals(&all.records, &all.dropped);
    all.written = atomic_load_explicit(&sp_rec_count.written, memory_order_relaxed);
    all.truncated = atomic_load_explicit(&sp_rec_count.truncated, memory_order_relaxed);
    all.bad_input = atomic_load_explicit(&sp_rec_count.bad_input, memory_order_relaxed);
    all.span_double_end = atomic_load_explicit(&sp_rec_count.span_double_end,
                                               memory_order_relaxed);
    all.span_never_ended = atomic_load_explicit(&sp_rec_count.span_never_ended,
                                                memory_order_relaxed);
    all.write_errors = atomic_load_explicit(&sp_rec_count.write_errors, memory_order_relaxed);
    all.stored = atomic_load_explicit(&sp_rec_count.stored, memory_order_relaxed);
    all.lost = atomic_load_explicit(&sp_rec_count.lost, memory_order_relaxed);
    all.metrics_only = atomic_load_explicit(&sp_rec_count.metrics_only, memory_order_relaxed);
    /* A caller built against an older header passes a smaller size: it gets
     * the fields it knows. A newer one passes more: the rest is zero. */
    size_t known = size < sizeof all ? size : sizeof all;
    memcpy(out, &all, known);
    if (size > known)
        memset((char *)out + known, 0, size - known);
}

SERVPROF_API void(servprof_get_stats)(servprof_stats *out)
{
    servprof_get_stats_n(out, STATS_V0_SIZE);
}
