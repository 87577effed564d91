/* SPDX-License-Identifier: Apache-2.0 */
/*
 * pftrace.c — trace.pftrace: the timeline of chrome_tracing.json as
 * Perfetto's native protobuf trace (a `Trace` of `TracePacket`s carrying
 * `TrackEvent`s, protos/perfetto/trace/perfetto_trace.proto), streamed in
 * one pass with bounded memory.
 *
 * Why a second format: the JSON costs ~320 B per record and viewers give
 * up near 500 MB; Perfetto's UI loads JSON through a slow path. The
 * protobuf trace says the same in a fraction of the bytes, because
 *  - names, categories, debug-annotation names and frequent string values
 *    are interned (InternedData): sent once per sequence, then a varint id;
 *  - timestamps are deltas on an incremental sequence clock (clock 64,
 *    ClockSnapshot.is_incremental), one or two bytes instead of a decimal
 *    microsecond text;
 *  - lanes are tracks (TrackDescriptor, once) named by a small uuid.
 *
 * Layout. Every packet is on a trusted_packet_sequence_id. A sequence
 * opens with SEQ_INCREMENTAL_STATE_CLEARED, trace_packet_defaults (the
 * incremental clock) and a ClockSnapshot mapping clock 64 to BOOTTIME and
 * REALTIME at the sequence's first timestamp (trace time = epoch ns: the
 * records' own clock). Every event packet sets SEQ_NEEDS_INCREMENTAL_STATE
 * (its timestamp is a delta on the sequence's clock; most use interned
 * ids); descriptors need no state and set no flag. Incremental timestamps must not go back,
 * so an event earlier than the sequence's last one (device activity and
 * torch traces come after the records, each in its own time order) opens
 * a new sequence, whose interning starts afresh.
 *
 * Tracks mirror the JSON's numbering: a process track per trace pid
 * (ProcessDescriptor, renamed at the end when the roles are known), a
 * thread track per (pid, tid) — tid being the JSON's lane id, so each
 * sub-lane is a track — and a counter track per (pid, "name series").
 * A span is SLICE_BEGIN now and SLICE_END at its end: the ends wait in a
 * min-heap (ties: the later-pushed, inner span first) and are written
 * before any event at or after them, so the stream stays in time order and
 * memory holds only the open spans. timeline.c's sub-lanes make spans on
 * one lane nest; where it gives up (MAX_SUBLANES), a span that would cross
 * its parent's end is cut there and counted (`unnested`), since B/E events
 * cannot express a partial overlap.
 *
 * Args become debug annotations, one per top-level key: integers int,
 * other numbers double, booleans bool, strings string (interned on their
 * second sight when short, through a list of the last few when long),
 * objects and arrays nested annotations (dict_entries / array_values,
 * names interned): Perfetto shows them as the JSON importer does
 * (args.rid[3].iter), and a step's rid list of 32 entries costs ~40 B an
 * entry instead of its ~110 B of text, since its keys and its request
 * ids (repeated step after step) are ids. Past MAX_DEPTH, and for empty
 * ones, the JSON text (legacy_json_value). null is legacy_json "null".
 * An args text equal to one of the last four long ones (a step's three
 * spans carry the same text) reuses its encoded annotations: the ids in
 * them stay defined for the whole sequence. So does a short text found in
 * a table by hash (a request's per-token events carry one text every
 * token), kept only when its encoding sent no string value as text.
 *
 * The write cost is the args' JSON parsed (the JSON writer copies it), so
 * what the stream repeats is not redone: the keys of an object are
 * compared with the skeleton of the objects met at the same position of
 * the same event name's args (the dicts of one array share a position):
 * each key's text and the bytes it encodes to (put_members); a key that
 * does not match is compared with the key met last at its position
 * (put_key), then looked up. A string value in a list is compared with the
 * one met last at the same place (a rid list names the same requests in
 * the same order, step after step; str_value_at). Event names and
 * categories are compared with the last ones on the event's track, then
 * with the last one under the same first bytes (intern_named); thread
 * tracks are found by (pid, tid) (thread_track). Every such cache
 * remembers the sequence its ids belong to, and none of them changes the
 * output (str_value_at moves intern()'s LRU clock as a hit there would).
 *
 * Interning is by 4-way set-associative caches per kind (a set per hash,
 * the least recently used entry making room): memory is fixed, a name
 * evicted and seen again is simply interned again under a new id. (A
 * direct-mapped cache made two hot keys that share a slot evict each
 * other on every record.) Ids are per sequence.
 *
 * Hand-encoded, not protobuf-c (Debian's libprotobuf-c): the format used
 * is a handful of messages and three wire types (pbenc.h, ~130 lines).
 * protobuf-c builds a message tree per event (TracePacket -> TrackEvent
 * -> DebugAnnotation[] -> dict/array entries, each with its has_ flags),
 * measures it (get_packed_size) and then packs it: two walks of the tree
 * and a struct per nested value, where this file appends each field once
 * as it reads the args. bench/pbenc/bench_pbenc.c encodes the same
 * events (bench_parse's two dominant shapes) both ways into the same
 * bytes: protobuf-c took 3.7-5.6x the time (docs/benchmarks.md,
 * "trace.pftrace"). It would also need the 680 KB official .proto (or a
 * trimmed copy) compiled by protoc-c at build time. The tests decode the
 * output with the official definitions (tests/parse/test_pftrace.py).
 *
 * One writer per parse, used on the parse's thread only (not thread-safe).
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "argdecode.h"
#include "fmt.h"
#include "pbenc.h"
#include "pftrace.h"
#include "xalloc.h"

/* Field numbers of perfetto_trace.proto (checked by the tests, which
 * decode with that file). */
enum {
    TRACE_PACKET = 1,
    TP_CLOCK_SNAPSHOT = 6, TP_TIMESTAMP = 8, TP_SEQ_ID = 10, TP_TRACK_EVENT = 11, TP_INTERNED = 12,
    TP_SEQ_FLAGS = 13, TP_DEFAULTS = 59, TP_TRACK_DESCRIPTOR = 60,
    DEF_CLOCK_ID = 58,
    CS_CLOCKS = 1, CS_PRIMARY = 2, CLK_ID = 1, CLK_TS = 2, CLK_INCREMENTAL = 3,
    TE_CATEGORY_IIDS = 3, TE_ANNOT = 4, TE_TYPE = 9, TE_NAME_IID = 10, TE_TRACK = 11,
    TE_CATEGORIES = 22, TE_NAME = 23, TE_COUNTER = 30, TE_DCOUNTER = 44, TE_FLOWS = 47, TE_TERM_FLOWS = 48,
    TE_EXTRA_UUIDS = 31, TE_EXTRA_VALUES = 12, TE_EXTRA_DUUIDS = 45, TE_EXTRA_DVALUES = 46,
    DA_NAME_IID = 1, DA_BOOL = 2, DA_INT = 4, DA_DOUBLE = 5, DA_STRING = 6, DA_JSON = 9, DA_NAME = 10,
    DA_DICT = 11, DA_ARRAY = 12, DA_STRING_IID = 17,
    ID_CATEGORIES = 1, ID_NAMES = 2, ID_ANNOT_NAMES = 3, ID_STRINGS = 29, ID_IID = 1, ID_NAME = 2,
    TD_UUID = 1, TD_NAME = 2, TD_PROCESS = 3, TD_THREAD = 4, TD_PARENT = 5, TD_COUNTER = 8,
    PD_PID = 1, PD_NAME = 6, PD_LABELS = 8, THD_PID = 1, THD_TID = 2, THD_NAME = 5,
};
enum { SEQ_CLEARED = 1, SEQ_NEEDS_STATE = 2 };
enum { T_BEGIN = 1, T_END = 2, T_INSTANT = 3, T_COUNTER = 4 };
enum { CLOCK_REALTIME = 1, CLOCK_BOOTTIME = 6, CLOCK_SEQ = 64 };

/* ------------------------------------------------------------- interning */

/* The kinds of InternedData this file uses, and their cache sizes. */
enum { IN_NAME, IN_CAT, IN_ANNOT, IN_STR, IN_KINDS };
static const unsigned in_slots[IN_KINDS] = {1024, 64, 256, 4096};
static const unsigned in_field[IN_KINDS] = {ID_NAMES, ID_CATEGORIES, ID_ANNOT_NAMES, ID_STRINGS};
/* Longest text interned through the caches (longer: sent as is, or, for
 * string values, through the recent-long list). */
#define IN_MAXLEN 256
#define IN_WAYS 4   /* set-associative: a few hot names sharing a set keep their ids */
/* String values at least this long go through the recent-long list. */
#define LONG_STR 256
#define LONG_RECENT 8
/* Objects and arrays nest as dict_entries / array_values this deep; deeper
 * ones are sent as their JSON text (legacy_json_value). */
#define MAX_DEPTH 8
/* Args texts this long or longer are looked up among the last ARGS_RECENT
 * before they are encoded. */
#define ARGS_CACHE_MIN 256
#define ARGS_RECENT 4
/* Shorter args texts are kept with their encodings in a table by hash,
 * SMALL_SLOTS entries of at most SMALL_ENC encoded bytes. */
#define SMALL_SLOTS 512
#define SMALL_ENC 384
/* The key cache by position (put_key): slots, and the longest key it keeps. */
#define KEY_SLOTS 1024
#define KEY_MAXLEN 40
/* Dict skeletons (put_object): slots, and the keys each remembers. */
#define SKEL_SLOTS 128
#define SKEL_KEYS 8
/* The string value cache by position (str_value_at): slots, longest text. */
#define VAL_SLOTS 1024
#define VAL_MAXLEN 32
/* Thread tracks remembered by (pid, tid) (thread_track). */
#define TCACHE 64
/* Event names and categories remembered by their first bytes (name_cat). */
#define NAME_SLOTS 256

typedef struct islot {
    uint64_t h;
    uint64_t used;  /* p->clock_use at the last use: the least recent is replaced */
    uint64_t iid;   /* 0: seen once, not interned yet (IN_STR only) */
    int len;
    char s[IN_MAXLEN];
} islot;

/* A key met at one position of one args shape, and its name id. */
typedef struct kslot {
    uint32_t seq;   /* the sequence its iid belongs to; 0: empty */
    int len;
    uint64_t iid;
    char s[KEY_MAXLEN];
} kslot;

typedef struct track {
    uint64_t h;
    int kind, pid;   /* kind: 0 process, 1 thread, 2 counter */
    long long tid;
    char *name;      /* counter: "name series" (owned) */
    uint64_t uuid;
    int64_t *ends;   /* thread: the open spans' ends, innermost last */
    int nends, capends;
    kslot last_name, last_cat; /* thread: the last event name and category on it (name_cat) */
} track;

/* The keys of the dicts met at one position of an args shape (put_object):
 * key i's text with its quotes and colon, and the dict entry's name
 * fields (DA_NAME_IID and its id). */
typedef struct skel {
    uint64_t pos;
    uint32_t seq;   /* the sequence the ids belong to; 0: empty */
    struct skey {
        unsigned char litlen, enclen; /* litlen 0: key i not known */
        char lit[KEY_MAXLEN + 3];
        unsigned char enc[16];
    } k[SKEL_KEYS];
} skel;

/* The interned string value met last at one position (and list index). */
typedef struct vslot {
    uint32_t seq;   /* the sequence its iid belongs to; 0: empty */
    int len;
    uint64_t iid;
    islot *e;       /* where intern() keeps it: its LRU clock is kept as a hit there would */
    char s[VAL_MAXLEN];
} vslot;

typedef struct pend { int64_t end; uint64_t order, uuid; } pend;

struct prs_pft {
    prs_dw *dw;
    char *b;                    /* the dwrite buffer being filled */
    size_t n;
    char *path;
    int failed;
    /* the current sequence */
    uint32_t seq;               /* 0: none open yet */
    int64_t last;               /* its clock: the last timestamp written */
    islot *in[IN_KINDS];
    uint64_t clock_use;
    uint64_t next_iid[IN_KINDS];
    struct { char *s; int len, cap; uint64_t iid; } recent[LONG_RECENT];
    int recent_next;
    /* tracks: open addressing, index + 1 */
    track *tracks;
    int ntracks, captracks;
    int *thash;
    unsigned tslots;
    struct tcache { int pid, idx; long long tid; } tcache[TCACHE]; /* idx: track + 1; 0 empty */
    uint64_t next_uuid;
    /* ends not yet written: a binary min-heap */
    pend *heap;
    int nheap, capheap;
    uint64_t order;
    /* scratch encoders: the event, its interned data, one annotation, text */
    prs_pb te, id, txt, un, isc, hd;
    /* the last long args texts and their encoded annotations (annotations_cached) */
    struct args_enc { char *text; unsigned char *enc; int len; size_t nenc, captext, capenc; uint32_t seq; } enc[ARGS_RECENT];
    int enc_next;
    /* short args texts and their encodings, by hash (annotations_cached) */
    struct small_enc { uint64_t h; uint32_t seq; short len, nenc; char text[ARGS_CACHE_MIN]; unsigned char enc[SMALL_ENC]; } *small;
    unsigned long long literals; /* string values sent as text so far */
    kslot *keys;                /* KEY_SLOTS: the key cache by position */
    skel *skels;                /* SKEL_SLOTS: dict skeletons by position (put_object) */
    vslot *vals;                /* VAL_SLOTS: string values by position (str_value_at) */
    uint64_t elem;              /* the list element being written: its index + 1; 0: none */
    islot *hit;                 /* where the last intern() that returned an id keeps it */
    kslot names[NAME_SLOTS];    /* event names, then categories, by first bytes (intern_named) */
    uint64_t shape;             /* the event's shape context: its name id, mixed */
    prs_pft_stats st;
};

/* A hash of n bytes, 8 at a time (the interned texts are hashed on every
 * record: byte-at-a-time FNV was a tenth of the writer's time). */
static uint64_t hash_bytes(uint64_t h, const void *p, size_t n)
{
    const unsigned char *s = p;
    uint64_t w;
    for (; n >= 8; s += 8, n -= 8) {
        memcpy(&w, s, 8);
        h = (h ^ w) * 0x9E3779B97F4A7C15ULL;
        h ^= h >> 29;
    }
    /* the last n < 8 bytes as memcpy into a zeroed word would put them,
     * from two overlapping loads (a memcpy of variable size is a call) */
    if (n >= 4) {
        uint32_t lo, hi;
        memcpy(&lo, s, 4);
        memcpy(&hi, s + n - 4, 4);
        w = lo | (uint64_t)hi << (8 * (n - 4));
    } else if (n) {
        w = s[0] | (uint64_t)s[n >> 1] << (8 * (n >> 1)) | (uint64_t)s[n - 1] << (8 * (n - 1));
    } else {
        w = 0;
    }
    h = (h ^ w ^ ((uint64_t)n << 56)) * 0x9E3779B97F4A7C15ULL;
    return h ^ (h >> 32);
}

/* Whether the n bytes at a and b are equal: keys are short, and a call
 * to memcmp cost more than the comparison. */
static inline __attribute__((always_inline)) int same(const char *a, const char *b, int n)
{
    uint64_t x, y;
    if (n >= 8) {
        /* whole words, the last one overlapping the one before */
        for (int i = 0;; i += 8) {
            if (i > n - 8)
                i = n - 8;
            memcpy(&x, a + i, 8);
            memcpy(&y, b + i, 8);
            if (x != y)
                return 0;
            if (i == n - 8)
                return 1;
        }
    }
    if (n >= 4) { /* two words of four, overlapping */
        uint32_t x4, y4, u4, v4;
        memcpy(&x4, a, 4);
        memcpy(&y4, b, 4);
        memcpy(&u4, a + n - 4, 4);
        memcpy(&v4, b + n - 4, 4);
        return x4 == y4 && u4 == v4;
    }
    while (n-- > 0)
        if (*a++ != *b++)
            return 0;
    return 1;
}

/* ------------------------------------------------------------- output */

static void put(prs_pft *p, const void *src, size_t n)
{
    const char *s = src;
    if (n <= PRS_DW_BUF - p->n) { /* the usual case: room in the buffer */
        memcpy(p->b + p->n, s, n);
        p->n += n;
        return;
    }
    while (n > PRS_DW_BUF - p->n) {
        size_t k = PRS_DW_BUF - p->n;
        memcpy(p->b + p->n, s, k);
        p->n += k;
        s += k;
        n -= k;
        p->b = prs_dw_submit(p->dw);
        p->n = 0;
    }
    memcpy(p->b + p->n, s, n);
    p->n += n;
}

static void put_varint(prs_pft *p, uint64_t v)
{
    unsigned char b[10];
    int i = 0;
    while (v >= 0x80) {
        b[i++] = (unsigned char)(v | 0x80);
        v >>= 7;
    }
    b[i++] = (unsigned char)v;
    put(p, b, (size_t)i);
}

/* Writes one TracePacket: head (its scalar fields) then the interned data
 * and the event when present (fields of a message may come in any order). */
static void packet(prs_pft *p, const prs_pb *head, const prs_pb *interned, unsigned ev_field, const prs_pb *ev)
{
    size_t n = head->n;
    if (interned && interned->n)
        n += 1 + (size_t)pb_varint_len(interned->n) + interned->n;
    if (ev)
        n += (size_t)pb_varint_len((uint64_t)ev_field << 3 | PB_LEN) + (size_t)pb_varint_len(ev->n) + ev->n;
    /* the packet's tag and length and its head in one copy (heads are a
     * few varints; a descriptor's is written the long way) */
    unsigned char hb[64];
    prs_pb h = {hb, 0, sizeof hb};
    pb_varint_in(&h, TRACE_PACKET << 3 | PB_LEN);
    pb_varint_in(&h, n);
    if (head->n <= sizeof hb - h.n) {
        memcpy(hb + h.n, head->b, head->n);
        h.n += head->n;
        put(p, hb, h.n);
    } else {
        put(p, hb, h.n);
        put(p, head->b, head->n);
    }
    if (interned && interned->n) {
        put_varint(p, TP_INTERNED << 3 | PB_LEN);
        put_varint(p, interned->n);
        put(p, interned->b, interned->n);
    }
    if (ev) {
        h.n = 0;
        pb_varint_in(&h, (uint64_t)ev_field << 3 | PB_LEN);
        pb_varint_in(&h, ev->n);
        put(p, hb, h.n);
        put(p, ev->b, ev->n);
    }
    p->st.packets++;
    p->st.bytes += 1 + (unsigned long long)pb_varint_len(n) + n;
}

/* ------------------------------------------------------------- sequences */

static void clock(prs_pb *cs, unsigned id, uint64_t ts, int incremental)
{
    prs_pb c = {0};
    pb_uint(&c, CLK_ID, id);
    pb_uint(&c, CLK_TS, ts);
    if (incremental)
        pb_uint(&c, CLK_INCREMENTAL, 1);
    pb_msg(cs, CS_CLOCKS, &c);
    pb_free(&c);
}

static void reset_interning(prs_pft *p)
{
    for (int k = 0; k < IN_KINDS; k++) {
        for (unsigned i = 0; i < in_slots[k]; i++) {
            p->in[k][i].len = -1;
            p->in[k][i].used = 0;
        }
        p->next_iid[k] = 1;
    }
    for (int i = 0; i < LONG_RECENT; i++)
        p->recent[i].iid = 0;
}

/* Opens sequence p->seq + 1 at time ts: state cleared, clock 64 set. */
static void new_sequence(prs_pft *p, int64_t ts)
{
    p->seq++;
    p->st.sequences++;
    p->last = ts;
    reset_interning(p);
    prs_pb head = {0}, cs = {0}, def = {0};
    pb_uint(&head, TP_SEQ_ID, p->seq);
    pb_uint(&head, TP_SEQ_FLAGS, SEQ_CLEARED);
    pb_uint(&def, DEF_CLOCK_ID, CLOCK_SEQ);
    pb_msg(&head, TP_DEFAULTS, &def);
    uint64_t base = ts > 0 ? (uint64_t)ts : 0;
    clock(&cs, CLOCK_BOOTTIME, base, 0);
    clock(&cs, CLOCK_REALTIME, base, 0);
    clock(&cs, CLOCK_SEQ, base, 1);
    pb_uint(&cs, CS_PRIMARY, CLOCK_BOOTTIME);
    pb_msg(&head, TP_CLOCK_SNAPSHOT, &cs);
    packet(p, &head, NULL, 0, NULL);
    pb_free(&head);
    pb_free(&cs);
    pb_free(&def);
}

/* The head of an event packet at ts: the delta on the sequence clock. */
static void event_head(prs_pft *p, prs_pb *head, int64_t ts)
{
    head->n = 0;
    pb_uint(head, TP_TIMESTAMP, (uint64_t)(ts - p->last));
    p->last = ts;
    pb_uint(head, TP_SEQ_ID, p->seq);
    pb_uint(head, TP_SEQ_FLAGS, SEQ_NEEDS_STATE);
}

static unsigned char *varint_at(unsigned char *q, uint64_t v)
{
    while (v >= 0x80) {
        *q++ = (unsigned char)(v | 0x80);
        v >>= 7;
    }
    *q++ = (unsigned char)v;
    return q;
}

/* Writes the event packet of p->te at ts, with the interned data in
 * interned (NULL: none): the bytes event_head and packet() write, but
 * straight into the output buffer when the packet fits (one check and
 * the three copies, not a head built apart and four put()s). Inlined, as
 * intern_on_track is: the calls themselves were 1 % of a perfetto parse's
 * instructions. */
static inline __attribute__((always_inline)) void event_packet(prs_pft *p, int64_t ts,
                                                               const prs_pb *interned)
{
    uint64_t delta = (uint64_t)(ts - p->last);
    size_t in_n = interned ? interned->n : 0;
    const prs_pb *ev = &p->te;
    size_t n = 1 + (size_t)pb_varint_len(delta) + 1 + (size_t)pb_varint_len(p->seq) + 2;
    if (in_n)
        n += 1 + (size_t)pb_varint_len(in_n) + in_n;
    n += 1 + (size_t)pb_varint_len(ev->n) + ev->n;
    size_t total = 1 + (size_t)pb_varint_len(n) + n;
    if (total > PRS_DW_BUF - p->n) { /* straddles a buffer hand-over: the long way */
        event_head(p, &p->hd, ts);
        packet(p, &p->hd, interned, TP_TRACK_EVENT, ev);
        return;
    }
    p->last = ts;
    unsigned char *q = (unsigned char *)p->b + p->n;
    *q++ = TRACE_PACKET << 3 | PB_LEN;
    q = varint_at(q, n);
    *q++ = TP_TIMESTAMP << 3 | PB_VARINT;
    q = varint_at(q, delta);
    *q++ = TP_SEQ_ID << 3 | PB_VARINT;
    q = varint_at(q, p->seq);
    *q++ = TP_SEQ_FLAGS << 3 | PB_VARINT;
    *q++ = SEQ_NEEDS_STATE;
    if (in_n) {
        *q++ = TP_INTERNED << 3 | PB_LEN;
        q = varint_at(q, in_n);
        memcpy(q, interned->b, in_n);
        q += in_n;
    }
    *q++ = TP_TRACK_EVENT << 3 | PB_LEN;
    q = varint_at(q, ev->n);
    memcpy(q, ev->b, ev->n);
    q += ev->n;
    p->n += total;
    p->st.packets++;
    p->st.bytes += total;
}

/* The iid of text s (n bytes) of kind k in this sequence, interning it
 * into p->id when new; 0 when it is not to be interned (too long, or a
 * string value seen for the first time). */
static uint64_t intern(prs_pft *p, int k, const char *s, int n)
{
    if (n >= IN_MAXLEN)
        return 0;
    uint64_t h = hash_bytes(14695981039346656037ULL ^ (uint64_t)k, s, (size_t)n);
    islot *set = &p->in[k][(h & (in_slots[k] / IN_WAYS - 1)) * IN_WAYS], *e = set;
    for (int w = 0; w < IN_WAYS; w++) {
        if (set[w].len == n && set[w].h == h && same(set[w].s, s, n)) {
            e = &set[w];
            e->used = ++p->clock_use;
            p->hit = e;
            if (e->iid)
                return e->iid;
            goto second_sight;
        }
        if (set[w].used < e->used)
            e = &set[w]; /* the least recently used way, replaced below */
    }
    e->h = h;
    e->len = n;
    memcpy(e->s, s, (size_t)n);
    e->iid = 0;
    e->used = ++p->clock_use;
    if (k == IN_STR)
        return 0; /* a value seen once is sent as is: most rids are */
    p->hit = e;
second_sight:
    e->iid = p->next_iid[k]++;
    prs_pb *m = &p->isc;
    size_t at = m->n;
    pb_uint(m, ID_IID, e->iid);
    pb_bytes(m, ID_NAME, s, (size_t)n);
    pb_tag(&p->id, in_field[k], PB_LEN);
    pb_varint(&p->id, m->n - at);
    pb_reserve(&p->id, m->n - at);
    memcpy(p->id.b + p->id.n, m->b + at, m->n - at);
    p->id.n += m->n - at;
    m->n = at;
    return e->iid;
}

/* The iid of a long string value, interned on first use while it is one
 * of the last LONG_RECENT long values. */
static uint64_t intern_long(prs_pft *p, const char *s, int n)
{
    for (int i = 0; i < LONG_RECENT; i++)
        if (p->recent[i].iid && p->recent[i].len == n && memcmp(p->recent[i].s, s, (size_t)n) == 0)
            return p->recent[i].iid;
    int i = p->recent_next;
    p->recent_next = (i + 1) % LONG_RECENT;
    if (n > p->recent[i].cap) {
        free(p->recent[i].s);
        p->recent[i].cap = n;
        p->recent[i].s = prs_xmalloc((size_t)n);
    }
    memcpy(p->recent[i].s, s, (size_t)n);
    p->recent[i].len = n;
    p->recent[i].iid = p->next_iid[IN_STR]++;
    prs_pb *m = &p->isc;
    size_t at = m->n;
    pb_uint(m, ID_IID, p->recent[i].iid);
    pb_bytes(m, ID_NAME, s, (size_t)n);
    pb_tag(&p->id, ID_STRINGS, PB_LEN);
    pb_varint(&p->id, m->n - at);
    pb_reserve(&p->id, m->n - at);
    memcpy(p->id.b + p->id.n, m->b + at, m->n - at);
    p->id.n += m->n - at;
    m->n = at;
    return p->recent[i].iid;
}

/* ------------------------------------------------------------- tracks */

static uint64_t track_hash(int kind, int pid, long long tid, const char *name)
{
    uint64_t h = 14695981039346656037ULL;
    h = hash_bytes(h, &kind, sizeof kind);
    h = hash_bytes(h, &pid, sizeof pid);
    h = hash_bytes(h, &tid, sizeof tid);
    if (name)
        h = hash_bytes(h, name, strlen(name));
    return h;
}

static void descriptor(prs_pft *p, const prs_pb *td)
{
    prs_pb head = {0};
    pb_uint(&head, TP_SEQ_ID, p->seq ? p->seq : 1);
    packet(p, &head, NULL, TP_TRACK_DESCRIPTOR, td);
    pb_free(&head);
}

static void process_descriptor(prs_pft *p, uint64_t uuid, int pid, const char *name, const char *label)
{
    prs_pb td = {0}, pd = {0};
    pb_uint(&pd, PD_PID, (uint64_t)pid);
    if (name)
        pb_str(&pd, PD_NAME, name);
    if (label && *label)
        pb_str(&pd, PD_LABELS, label);
    pb_uint(&td, TD_UUID, uuid);
    pb_msg(&td, TD_PROCESS, &pd);
    descriptor(p, &td);
    pb_free(&td);
    pb_free(&pd);
}

/* The track of (kind, pid, tid, name), described when new. */
static track *track_of(prs_pft *p, int kind, int pid, long long tid, const char *name, int *created)
{
    uint64_t h = track_hash(kind, pid, tid, name);
    unsigned i = (unsigned)h & (p->tslots - 1);
    *created = 0;
    while (p->thash[i]) {
        track *t = &p->tracks[p->thash[i] - 1];
        if (t->h == h && t->kind == kind && t->pid == pid && t->tid == tid &&
            (!name || strcmp(t->name, name) == 0))
            return t;
        i = (i + 1) & (p->tslots - 1);
    }
    if (p->ntracks == p->captracks) {
        p->captracks = p->captracks ? p->captracks * 2 : 64;
        p->tracks = prs_xrealloc(p->tracks, (size_t)p->captracks * sizeof *p->tracks);
    }
    track *t = &p->tracks[p->ntracks++];
    t->h = h;
    t->kind = kind;
    t->pid = pid;
    t->tid = tid;
    t->name = name ? prs_xstrdup(name) : NULL;
    t->uuid = p->next_uuid++;
    t->ends = NULL;
    t->nends = t->capends = 0;
    t->last_name.seq = t->last_cat.seq = 0;
    p->thash[i] = p->ntracks;
    if ((unsigned)p->ntracks * 2 > p->tslots) {
        unsigned ns = p->tslots * 2;
        int *nh = prs_xcalloc(ns, sizeof *nh);
        for (int k = 0; k < p->ntracks; k++) {
            unsigned j = (unsigned)p->tracks[k].h & (ns - 1);
            while (nh[j])
                j = (j + 1) & (ns - 1);
            nh[j] = k + 1;
        }
        free(p->thash);
        p->thash = nh;
        p->tslots = ns;
    }
    *created = 1;
    return t;
}

static uint64_t process_uuid(prs_pft *p, int pid)
{
    int created;
    track *t = track_of(p, 0, pid, -1, NULL, &created);
    uint64_t uuid = t->uuid;
    if (created)
        process_descriptor(p, uuid, pid, NULL, NULL);
    return uuid;
}

static void thread_descriptor(prs_pft *p, uint64_t uuid, int pid, long long tid, const char *name)
{
    prs_pb td = {0}, th = {0};
    pb_uint(&th, THD_PID, (uint64_t)pid);
    pb_uint(&th, THD_TID, (uint64_t)tid);
    if (name)
        pb_str(&th, THD_NAME, name);
    pb_uint(&td, TD_UUID, uuid);
    pb_msg(&td, TD_THREAD, &th);
    descriptor(p, &td);
    pb_free(&td);
    pb_free(&th);
}

/* The thread track of (pid, tid); valid until the next track is made.
 * A direct-mapped cache of (pid, tid) -> track spares the hashing of the
 * three keys on every event (a few lanes take nearly all of them). */
static track *thread_track(prs_pft *p, int pid, long long tid, const char *name)
{
    struct tcache *c = &p->tcache[((unsigned)pid * 0x9E3779B1u ^ (unsigned)tid * 0x85EBCA77u) >> 24 & (TCACHE - 1)];
    if (!name && c->idx && c->pid == pid && c->tid == tid)
        return &p->tracks[c->idx - 1];
    process_uuid(p, pid);
    int created;
    track *t = track_of(p, 1, pid, tid, NULL, &created);
    if (created || name)
        thread_descriptor(p, t->uuid, pid, tid, name);
    c->pid = pid;
    c->tid = tid;
    c->idx = (int)(t - p->tracks) + 1;
    return t;
}

/* ------------------------------------------------------------- ends */

static int pend_less(const pend *a, const pend *b)
{
    return a->end < b->end || (a->end == b->end && a->order > b->order);
}

static void heap_push(prs_pft *p, pend e)
{
    if (p->nheap == p->capheap) {
        p->capheap = p->capheap ? p->capheap * 2 : 64;
        p->heap = prs_xrealloc(p->heap, (size_t)p->capheap * sizeof *p->heap);
    }
    int i = p->nheap++;
    while (i > 0 && pend_less(&e, &p->heap[(i - 1) / 2])) {
        p->heap[i] = p->heap[(i - 1) / 2];
        i = (i - 1) / 2;
    }
    p->heap[i] = e;
}

static pend heap_pop(prs_pft *p)
{
    pend top = p->heap[0], last = p->heap[--p->nheap];
    int i = 0;
    for (;;) {
        int c = 2 * i + 1;
        if (c >= p->nheap)
            break;
        if (c + 1 < p->nheap && pend_less(&p->heap[c + 1], &p->heap[c]))
            c++;
        if (!pend_less(&p->heap[c], &last))
            break;
        p->heap[i] = p->heap[c];
        i = c;
    }
    if (p->nheap)
        p->heap[i] = last;
    return top;
}

/* Writes the ends at or before ts (all of them: INT64_MAX). */
static void flush_ends(prs_pft *p, int64_t ts)
{
    while (p->nheap && p->heap[0].end <= ts) {
        pend e = heap_pop(p);
        p->te.n = 0;
        pb_uint(&p->te, TE_TYPE, T_END);
        pb_uint(&p->te, TE_TRACK, e.uuid);
        event_packet(p, e.end, NULL);
    }
}

/* Makes ts writable on the current sequence: ends before it first; a new
 * sequence when ts is earlier than the sequence's clock. */
static void advance(prs_pft *p, int64_t ts)
{
    if (p->seq && ts < p->last)
        flush_ends(p, INT64_MAX); /* all open spans end after p->last */
    if (!p->seq || ts < p->last)
        new_sequence(p, ts);
    flush_ends(p, ts);
}

/* ------------------------------------------------------------- args */

static const char *ws(const char *s, const char *e)
{
    if (s < e && (unsigned char)*s > ' ')
        return s; /* the usual case: compact JSON */
    while (s < e && (*s == ' ' || *s == '\t' || *s == '\n' || *s == '\r'))
        s++;
    return s;
}

/* s at an opening quote: the byte after the closing one. */
static const char *skip_str(const char *s, const char *e, int *esc)
{
    for (s++; s < e; s++) {
        if (*s == '\\') {
            *esc = 1;
            s++;
        } else if (*s == '"') {
            return s + 1;
        }
    }
    return e;
}

/* s at a value: the byte after it. */
static const char *skip_value(const char *s, const char *e)
{
    int esc = 0;
    if (*s == '"')
        return skip_str(s, e, &esc);
    if (*s == '{' || *s == '[') {
        int depth = 0;
        while (s < e) {
            if (*s == '"') {
                s = skip_str(s, e, &esc);
                continue;
            }
            if (*s == '{' || *s == '[')
                depth++;
            else if (*s == '}' || *s == ']') {
                if (--depth == 0)
                    return s + 1;
            }
            s++;
        }
        return e;
    }
    while (s < e && *s != ',' && *s != '}' && *s != ']' && *s != ' ' && *s != '\n' && *s != '\t' && *s != '\r')
        s++;
    return s;
}

/* Whether s (n bytes) is printable ASCII and so already a clean protobuf
 * string (the common case: the slow path copies and checks UTF-8). */
static int plain(const char *s, int n)
{
    for (int i = 0; i < n; i++)
        if ((unsigned char)s[i] - 1u >= 0x7fu)
            return 0;
    return 1;
}

/* Text s (n bytes) as valid UTF-8 into p->txt (invalid bytes -> U+FFFD,
 * as chrome_tracing.json has them): protobuf strings must be UTF-8. */
static void utf8_clean(prs_pft *p, const char *s, int n)
{
    p->txt.n = 0;
    pb_reserve(&p->txt, (size_t)n * 3 + 1);
    for (int i = 0; i < n;) {
        unsigned char c = (unsigned char)s[i];
        int k = c < 0x80 ? (c ? 1 : 0) : prs_utf8_len(s + i, s + n);
        if (k) {
            memcpy(p->txt.b + p->txt.n, s + i, (size_t)k);
            p->txt.n += (size_t)k;
            i += k;
        } else {
            memcpy(p->txt.b + p->txt.n, "\xef\xbf\xbd", 3);
            p->txt.n += 3;
            i++;
        }
    }
}

/* The clean text of s (n bytes; esc: it has JSON escapes): s itself when
 * plain, else unescaped / cleaned into p->txt. *out valid until the next call. */
static int clean_text(prs_pft *p, const char *s, int n, int esc, const char **out)
{
    if (!esc && plain(s, n)) {
        *out = s;
        return n;
    }
    if (esc) {
        prs_str js = {s, n, 1};
        p->un.n = 0;
        pb_reserve(&p->un, (size_t)n + 1);
        n = prs_str_copy(js, (char *)p->un.b, n + 1);
        s = (const char *)p->un.b;
    }
    utf8_clean(p, s, n);
    *out = (const char *)p->txt.b;
    return (int)p->txt.n;
}

/* A string value of annotation m: interned when frequent or long. */
static void str_value(prs_pft *p, prs_pb *m, const char *s, int n)
{
    uint64_t iid = n >= LONG_STR ? intern_long(p, s, n) : intern(p, IN_STR, s, n);
    if (iid) {
        pb_uint(m, DA_STRING_IID, iid);
    } else {
        pb_bytes(m, DA_STRING, s, (size_t)n);
        p->literals++; /* this encoding is not worth keeping (annotations_cached) */
    }
}

/* A plain string value of annotation m at position key (a place in the
 * args shape and the list element's index): a rid list names the same
 * requests in the same order step after step, so the string met last at
 * this place is compared first, and when intern() still keeps it under
 * the same id, that id is written as str_value would, and its LRU clock
 * moved as intern()'s hit moves it (the output stays the same). */
static void str_value_at(prs_pft *p, prs_pb *m, const char *s, int n, uint64_t key)
{
    vslot *c = &p->vals[(key >> 40) & (VAL_SLOTS - 1)];
    if (c->seq == p->seq && c->len == n && same(c->s, s, n) && c->e->iid == c->iid && c->e->len == n) {
        c->e->used = ++p->clock_use;
        pb_uint(m, DA_STRING_IID, c->iid);
        return;
    }
    p->hit = NULL;
    str_value(p, m, s, n);
    if (p->hit && n < LONG_STR && n <= VAL_MAXLEN) { /* hit: intern() gave an id */
        c->seq = p->seq;
        c->len = n;
        c->iid = p->hit->iid;
        c->e = p->hit;
        memcpy(c->s, s, (size_t)n);
    }
}

/* The name of annotation m (n bytes, clean): interned, or as is. Returns
 * its iid (0: sent as is). */
static uint64_t annot_name(prs_pft *p, prs_pb *m, const char *key, int kn)
{
    uint64_t kid = intern(p, IN_ANNOT, key, kn);
    if (kid)
        pb_uint(m, DA_NAME_IID, kid);
    else
        pb_bytes(m, DA_NAME, key, (size_t)kn);
    return kid;
}

/* A position in an args shape: ctx (the enclosing value's position, or
 * the event's name) and the index of a key within its object. */
static uint64_t shape_at(uint64_t ctx, uint64_t i)
{
    uint64_t h = (ctx ^ (i + 1)) * 0x9E3779B97F4A7C15ULL;
    return h ^ (h >> 31);
}

/* The first byte at or after q (before e) that ends a plain string: a
 * quote, a backslash, or a byte outside printable ASCII. Eight bytes at a
 * time while they last (a byte at a time was a tenth of the writer). */
static const char *plain_end(const char *q, const char *e)
{
    const uint64_t ones = 0x0101010101010101ULL, highs = 0x8080808080808080ULL;
    while (e - q >= 8) {
        uint64_t x, qu, bs, de;
        memcpy(&x, q, 8);
        qu = x ^ (ones * '"');
        bs = x ^ (ones * '\\');
        de = x ^ (ones * 0x7f);
        /* whether a byte is below 0x20, is '"', '\\' or 0x7f, or has its
         * high bit (0x80 in that byte; exact for the lowest one) */
        uint64_t special = (((x - ones * 0x20) & ~x) | ((qu - ones) & ~qu) | ((bs - ones) & ~bs) |
                            ((de - ones) & ~de) | x) & highs;
        if (special) {
#if defined(__GNUC__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
            /* the lowest flag is exact (a borrow only runs upwards from
             * a byte that is itself flagged): the first byte in memory */
            return q + (__builtin_ctzll(special) >> 3);
#else
            break;
#endif
        }
        q += 8;
    }
    while (q < e && (unsigned char)*q - 0x20u < 0x5fu && *q != '"' && *q != '\\')
        q++;
    return q;
}

/* s at a string's opening quote: its name fields (a key) into m; returns
 * the byte after the closing quote. `at` is the key's position in its
 * args shape (shape_at).
 *
 * Records of one name carry the same keys in the same order (and the
 * dicts of one array the same keys as each other), so the key met last
 * time at this position is compared with the text first, without finding
 * its end, hashing or looking it up: a cached key is plain ASCII without
 * '"' or '\\', so its bytes followed by '"' are exactly this key. Its id
 * stays defined for the whole sequence, evicted from the interning
 * cache or not (the slot remembers the sequence). */
static const char *put_key(prs_pft *p, prs_pb *m, const char *s, const char *e, uint64_t at)
{
    kslot *c = &p->keys[(at >> 40) & (KEY_SLOTS - 1)];
    if (c->seq == p->seq && e - (s + 1) > c->len && same(s + 1, c->s, c->len) &&
        s[1 + c->len] == '"') {
        pb_uint(m, DA_NAME_IID, c->iid);
        p->st.key_hits++;
        return s + 2 + c->len;
    }
    /* the common key, plain ASCII without escapes, found and checked in one pass */
    const char *q = plain_end(s + 1, e);
    if (q < e && *q == '"') {
        int kn = (int)(q - (s + 1));
        uint64_t kid = annot_name(p, m, s + 1, kn);
        if (kid && kn < KEY_MAXLEN) {
            c->seq = p->seq;
            c->len = kn;
            c->iid = kid;
            memcpy(c->s, s + 1, (size_t)kn);
        }
        return q + 1;
    }
    int esc = 0;
    const char *k1 = skip_str(s, e, &esc), *k;
    int kn = clean_text(p, s + 1, (int)(k1 - 1 - (s + 1)), esc, &k);
    annot_name(p, m, k, kn);
    return k1;
}

static const char *put_value(prs_pft *p, prs_pb *m, const char *v, const char *e, int depth, uint64_t at);

/* The skeleton of the dicts at position pos, emptied when it held
 * another position's or another sequence's keys. */
static skel *skel_of(prs_pft *p, uint64_t pos)
{
    skel *sk = &p->skels[(pos >> 44) & (SKEL_SLOTS - 1)];
    if (sk->seq != p->seq || sk->pos != pos) {
        sk->seq = p->seq;
        sk->pos = pos;
        for (int i = 0; i < SKEL_KEYS; i++)
            sk->k[i].litlen = 0;
    }
    return sk;
}

/* Remembers key text k0..k1 (`"key":`) and the name fields it encoded to
 * (enc, n bytes) as key i of sk, when they are the common kind: an
 * interned name, compact text. */
static void skel_learn(struct skey *k, const char *k0, const char *k1, const unsigned char *enc, size_t n)
{
    size_t ln = (size_t)(k1 - k0);
    if (ln < 4 || ln > sizeof k->lit || k1[-2] != '"' || n > sizeof k->enc || enc[0] != (DA_NAME_IID << 3 | PB_VARINT))
        return;
    memcpy(k->lit, k0, ln);
    memcpy(k->enc, enc, n);
    k->litlen = (unsigned char)ln;
    k->enclen = (unsigned char)n;
}

/* The members of an object, s at its first key (v..e), as length-delimited
 * fields `field` of m (dict entries, or the event's annotations at the top),
 * their values at nesting depth vdepth; pos: the object's position in the
 * args shape. Returns the byte after its '}' (e when malformed).
 *
 * The objects at one position (the entries of a rid list, the args of one
 * event name) repeat one set of keys: the position's skeleton holds each
 * key's text and the name fields it encodes to, so a key that matches it
 * costs one comparison and one copy (the bytes put_key would write: its id
 * is the sequence's). Inlined into its two callers: a call with `field`
 * a variable cost the rid lists 4 % more instructions (callgrind). */
static inline __attribute__((always_inline)) const char *put_members(prs_pft *p, prs_pb *m, const char *s,
                                                                      const char *e, int vdepth, uint64_t pos,
                                                                      unsigned field)
{
    skel *sk = skel_of(p, pos);
    for (uint64_t i = 0; s < e && *s == '"'; i++) {
        size_t at;
        struct skey *k = i < SKEL_KEYS ? &sk->k[i] : NULL;
        if (k && k->litlen && e - s >= k->litlen && same(s, k->lit, k->litlen)) {
            pb_reserve(m, 2 + sizeof k->enc);
            unsigned char *b = m->b + m->n;
            b[0] = (unsigned char)(field << 3 | PB_LEN); /* fields < 16: one byte */
            b[1] = 0;
            memcpy(b + 2, k->enc, sizeof k->enc);
            at = m->n + 2;
            m->n = at + k->enclen;
            s += k->litlen;
            p->st.key_hits++;
        } else {
            at = pb_open(m, field);
            const char *k0 = s;
            s = ws(put_key(p, m, s, e, shape_at(pos, i)), e);
            if (s >= e || *s != ':') {
                pb_close(m, at);
                return e;
            }
            s++;
            if (k)
                skel_learn(k, k0, s, m->b + at, m->n - at);
        }
        const char *val = ws(s, e), *q = val, *lim = e - val > 18 ? val + 18 : e;
        /* The usual value, a small non-negative integer, without the call
         * (put_value writes the same for it). */
        uint64_t u = 0;
        while (q < lim && (unsigned char)(*q - '0') < 10)
            u = u * 10 + (uint64_t)(*q++ - '0');
        if (q > val && q < e && (*q == ',' || *q == '}')) {
            pb_uint(m, DA_INT, u);
            s = q;
        } else if (val < e && *val == '"' && (q = plain_end(val + 1, e)) < e && *q == '"') {
            str_value_at(p, m, val + 1, (int)(q - (val + 1)), shape_at(shape_at(pos, i), p->elem));
            s = q + 1;
        } else {
            s = put_value(p, m, val, e, vdepth, shape_at(pos, i));
        }
        if (m->n - at < 0x80)
            m->b[at - 1] = (unsigned char)(m->n - at); /* pb_close's usual case */
        else
            pb_close(m, at);
        s = ws(s, e);
        if (s < e && *s == ',')
            s = ws(s + 1, e);
    }
    return s < e ? s + 1 : e;
}

/* Object v..e (v at '{', at its position in the args shape) as
 * dict_entries of m, each an annotation written in place; returns the
 * byte after its '}'. */
static const char *put_object(prs_pft *p, prs_pb *m, const char *v, const char *e, int depth, uint64_t pos)
{
    return put_members(p, m, ws(v + 1, e), e, depth + 1, pos, DA_DICT);
}

/* Array v..e (v at '[') as array_values of m; returns the byte after ']'.
 * Its elements share one position in the args shape (a list of dicts
 * repeats one set of keys). */
static const char *put_array(prs_pft *p, prs_pb *m, const char *v, const char *e, int depth, uint64_t pos)
{
    const char *s = ws(v + 1, e);
    uint64_t el = shape_at(pos, 0xA77A), outer = p->elem;
    for (uint64_t j = 1; s < e && *s != ']'; j++) {
        size_t at = pb_open(m, DA_ARRAY);
        p->elem = j; /* str_value_at's place in the list */
        const char *v1 = put_value(p, m, s, e, depth + 1, el);
        pb_close(m, at);
        if (v1 == s) {
            p->elem = outer;
            return e; /* not a value: malformed (valid said otherwise) */
        }
        s = ws(v1, e);
        if (s < e && *s == ',')
            s = ws(s + 1, e);
    }
    p->elem = outer;
    return s < e ? s + 1 : e;
}

/* Whether the object/array at v has no member (`{}`, `[ ]`). */
static int empty(const char *v, const char *e)
{
    const char *s = ws(v + 1, e);
    return s < e && (*s == '}' || *s == ']');
}

/* Digits of a JSON integer (n < 19) as int64. */
static int64_t digits(const char *v, int n)
{
    int neg = *v == '-';
    uint64_t u = 0;
    for (int i = neg; i < n; i++)
        u = u * 10 + (uint64_t)(v[i] - '0');
    return neg ? -(int64_t)u : (int64_t)u;
}

/* The JSON value at v (within e) as the value fields of annotation m, in
 * one pass; returns the byte after it. */
static const char *put_value(prs_pft *p, prs_pb *m, const char *v, const char *e, int depth, uint64_t at)
{
    if (v >= e)
        return e;
    if (*v == '"') {
        const char *q = plain_end(v + 1, e); /* plain ASCII without escapes: found and checked in one pass */
        if (q < e && *q == '"') {
            str_value(p, m, v + 1, (int)(q - (v + 1)));
            return q + 1;
        }
        int esc = 0;
        const char *ve = skip_str(v, e, &esc), *t;
        int tn = clean_text(p, v + 1, (int)(ve - 1 - (v + 1)), esc, &t);
        str_value(p, m, t, tn); /* intern() keeps off p->txt */
        return ve;
    }
    if ((*v == '{' || *v == '[') && depth < MAX_DEPTH && !empty(v, e))
        return *v == '{' ? put_object(p, m, v, e, depth, at) : put_array(p, m, v, e, depth, at);
    if ((*v >= '0' && *v <= '9') || *v == '-') {
        /* an integer that fits int64 in one pass (19 digits cannot overflow
         * the uint64 accumulator); anything else below */
        const char *q = v + (*v == '-');
        uint64_t u = 0;
        int nd = 0;
        while (q < e && *q >= '0' && *q <= '9' && nd < 20) {
            u = u * 10 + (uint64_t)(*q++ - '0');
            nd++;
        }
        uint64_t lim = *v == '-' ? (uint64_t)INT64_MAX + 1 : (uint64_t)INT64_MAX;
        if (nd && nd < 20 && u <= lim &&
            (q == e || *q == ',' || *q == '}' || *q == ']' || *q == ' ' || *q == '\n' || *q == '\t' || *q == '\r')) {
            pb_uint(m, DA_INT, *v == '-' ? 0 - u : u); /* two's complement, as int64 is encoded */
            return q;
        }
    }
    const char *ve = skip_value(v, e);
    int vn = (int)(ve - v);
    if (*v == '{' || *v == '[') {
        const char *t;
        int tn = clean_text(p, v, vn, 0, &t);
        pb_bytes(m, DA_JSON, t, (size_t)tn);
    } else if (*v == 't' || *v == 'f') {
        pb_uint(m, DA_BOOL, *v == 't');
    } else if (*v == 'n') {
        pb_bytes(m, DA_JSON, "null", 4);
    } else {
        int integral = vn > 0 && vn < 19;
        for (int i = 0; i < vn && integral; i++)
            integral = (v[i] >= '0' && v[i] <= '9') || (i == 0 && v[i] == '-' && vn > 1);
        char num[64];
        if (integral) {
            pb_uint(m, DA_INT, (uint64_t)digits(v, vn));
        } else if (vn < (int)sizeof num) {
            memcpy(num, v, (size_t)vn);
            num[vn] = 0;
            pb_double(m, DA_DOUBLE, strtod(num, NULL));
        } else {
            const char *t;
            int tn = clean_text(p, v, vn, 0, &t);
            pb_bytes(m, DA_JSON, t, (size_t)tn);
        }
    }
    return ve;
}

/* The args text as debug annotations of the event in p->te, written in
 * place (pb_open/pb_close): one per top-level key. */
static void annotations(prs_pft *p, const char *args, int len, int valid)
{
    const char *s = args, *e = args + len;
    prs_pb *m = &p->te;
    if (!valid) {
        const char *t;
        int tn = clean_text(p, args, len, 0, &t);
        size_t at = pb_open(m, TE_ANNOT);
        annot_name(p, m, "raw", 3);
        pb_bytes(m, DA_STRING, t, (size_t)tn);
        pb_close(m, at);
        return;
    }
    s = ws(s, e);
    if (s >= e || *s != '{')
        return;
    put_members(p, m, ws(s + 1, e), e, 0, p->shape, TE_ANNOT);
}

/* The annotations of args, from the encoding of an equal long text met
 * recently on this sequence when there is one: a step's rid list comes
 * three times (schedule, execution, forward), and the ids its encoding
 * uses stay defined for the whole sequence (the trace processor keeps
 * every interned entry; only our caches forget). */
static void annotations_cached(prs_pft *p, const char *args, int len, int valid)
{
    if (!valid) {
        annotations(p, args, len, valid);
        return;
    }
    if (len < ARGS_CACHE_MIN) {
        /* Short texts recur by the thousand (a request's per-token events
         * carry the same text every token): a table by hash keeps each
         * text's encoding while its ids are defined, i.e. on this sequence.
         * Only an encoding that sent no string value as text is kept: the
         * next sight of such a string interns it, and the encoding with
         * the id is the smaller one. */
        uint64_t h = hash_bytes(0x452821E638D01377ULL, args, (size_t)len);
        struct small_enc *c = &p->small[h >> 32 & (SMALL_SLOTS - 1)];
        if (c->seq == p->seq && c->h == h && c->len == len && memcmp(c->text, args, (size_t)len) == 0) {
            pb_reserve(&p->te, (size_t)c->nenc);
            memcpy(p->te.b + p->te.n, c->enc, (size_t)c->nenc);
            p->te.n += (size_t)c->nenc;
            p->st.args_hits++;
            return;
        }
        size_t at = p->te.n;
        unsigned long long lit = p->literals;
        annotations(p, args, len, valid);
        size_t nenc = p->te.n - at;
        if (p->literals == lit && nenc <= SMALL_ENC) {
            c->h = h;
            c->seq = p->seq;
            c->len = (short)len;
            c->nenc = (short)nenc;
            memcpy(c->text, args, (size_t)len);
            memcpy(c->enc, p->te.b + at, nenc);
        }
        return;
    }
    for (int i = 0; i < ARGS_RECENT; i++) {
        struct args_enc *c = &p->enc[i];
        if (c->seq == p->seq && c->len == len && memcmp(c->text, args, (size_t)len) == 0) {
            pb_reserve(&p->te, c->nenc);
            memcpy(p->te.b + p->te.n, c->enc, c->nenc);
            p->te.n += c->nenc;
            return;
        }
    }
    size_t at = p->te.n;
    annotations(p, args, len, valid);
    struct args_enc *c = &p->enc[p->enc_next];
    p->enc_next = (p->enc_next + 1) % ARGS_RECENT;
    size_t nenc = p->te.n - at;
    if ((size_t)len > c->captext) {
        free(c->text);
        c->captext = (size_t)len;
        c->text = prs_xmalloc(c->captext);
    }
    if (nenc > c->capenc) {
        free(c->enc);
        c->capenc = nenc;
        c->enc = prs_xmalloc(c->capenc);
    }
    memcpy(c->text, args, (size_t)len);
    memcpy(c->enc, p->te.b + at, nenc);
    c->len = len;
    c->nenc = nenc;
    c->seq = p->seq;
}

/* ------------------------------------------------------------- API */

prs_pft *prs_pft_open(prs_dw_stage *stage, const char *dir)
{
    prs_pft *p = prs_xcalloc(1, sizeof *p);
    size_t len = strlen(dir) + 32;
    p->path = prs_xmalloc(len);
    snprintf(p->path, len, "%s/trace.pftrace", dir);
    p->dw = prs_dw_open(stage, p->path, PRS_DW_BUF);
    if (!p->dw) {
        int err = errno;
        free(p->path);
        free(p);
        errno = err;
        return NULL;
    }
    p->b = prs_dw_buf(p->dw);
    for (int k = 0; k < IN_KINDS; k++)
        p->in[k] = prs_xmalloc(in_slots[k] * sizeof *p->in[k]);
    reset_interning(p);
    p->keys = prs_xcalloc(KEY_SLOTS, sizeof *p->keys);
    p->skels = prs_xcalloc(SKEL_SLOTS, sizeof *p->skels);
    p->vals = prs_xcalloc(VAL_SLOTS, sizeof *p->vals);
    p->small = prs_xcalloc(SMALL_SLOTS, sizeof *p->small);
    p->tslots = 256;
    p->thash = prs_xcalloc(p->tslots, sizeof *p->thash);
    p->next_uuid = 1;
    return p;
}

void prs_pft_process(prs_pft *p, int pid, const char *name, const char *label)
{
    if (!p)
        return;
    uint64_t uuid = process_uuid(p, pid);
    process_descriptor(p, uuid, pid, name, label);
}

void prs_pft_thread(prs_pft *p, int pid, long long tid, const char *name)
{
    if (p)
        thread_track(p, pid, tid, name);
}

/* Remembers s (n bytes) and its interned id in slot c for this sequence,
 * when it was interned and fits the slot. */
static inline void kslot_keep(prs_pft *p, kslot *c, const char *s, int n, uint64_t iid)
{
    if (iid && n < KEY_MAXLEN) {
        c->seq = p->seq;
        c->len = n;
        c->iid = iid;
        memcpy(c->s, s, (size_t)n + 1);
    }
}

/* The iid of name or category s (kind k), 0: not interned (*n: its
 * length then). A run has a few dozen names: a slot chosen by the first
 * (up to) 8 bytes remembers the name's text and iid, and a match of the
 * whole text spares strlen, hashing and the set lookup. (The text's
 * address would be cheaper still, but the readers copy each record into
 * a slot of their own, so one name comes at many addresses.) */
static uint64_t intern_named(prs_pft *p, int k, const char *s, int *n)
{
    uint64_t w = (uint64_t)k;
    for (int i = 0; i < 8 && s[i]; i++)
        w ^= (uint64_t)(unsigned char)s[i] << (8 * i);
    w *= 0x9E3779B97F4A7C15ULL;
    kslot *c = &p->names[(k == IN_CAT ? NAME_SLOTS / 2 : 0) + (w >> 40 & (NAME_SLOTS / 2 - 1))];
    if (c->seq == p->seq && strcmp(s, c->s) == 0) {
        *n = c->len;
        return c->iid;
    }
    *n = (int)strlen(s);
    uint64_t iid = intern(p, k, s, *n);
    kslot_keep(p, c, s, *n, iid);
    return iid;
}

/* intern_named through a slot of the event's track first: a lane carries
 * one name or a few (a request's per-token events) and one domain, so
 * the last one is compared with the text, not hashed and looked up. */
static inline __attribute__((always_inline)) uint64_t intern_on_track(prs_pft *p, kslot *c, int k, const char *s,
                                                                     int *n)
{
    if (c->seq == p->seq && s[0] == c->s[0] && strcmp(s, c->s) == 0) {
        *n = c->len;
        return c->iid;
    }
    uint64_t iid = intern_named(p, k, s, n);
    kslot_keep(p, c, s, *n, iid);
    return iid;
}

/* Name and category of the event being built on track t, interned or literal. */
static void name_cat(prs_pft *p, track *t, const char *name, const char *cat)
{
    int n;
    uint64_t iid = intern_on_track(p, &t->last_name, IN_NAME, name, &n);
    p->shape = shape_at(0x243F6A8885A308D3ULL, iid); /* args keys are cached per event name */
    if (iid)
        pb_uint(&p->te, TE_NAME_IID, iid);
    else
        pb_bytes(&p->te, TE_NAME, name, (size_t)n);
    if (cat && *cat) {
        iid = intern_on_track(p, &t->last_cat, IN_CAT, cat, &n);
        if (iid)
            pb_uint(&p->te, TE_CATEGORY_IIDS, iid);
        else
            pb_bytes(&p->te, TE_CATEGORIES, cat, (size_t)n);
    }
}

void prs_pft_slice(prs_pft *p, int pid, long long tid, const char *name, const char *cat, int64_t ts, int64_t dur,
                   const char *args, int len, int valid, const uint64_t *flows, int nflows,
                   const uint64_t *term, int nterm)
{
    if (!p)
        return;
    advance(p, ts); /* first: a new sequence opens before the descriptors on it */
    track *t = thread_track(p, pid, tid, NULL);
    uint64_t uuid = t->uuid;
    p->te.n = 0;
    p->id.n = 0;
    pb_uint(&p->te, TE_TYPE, dur > 0 ? T_BEGIN : T_INSTANT);
    pb_uint(&p->te, TE_TRACK, uuid);
    name_cat(p, t, name ? name : "", cat);
    if (len > 0)
        annotations_cached(p, args, len, valid);
    for (int i = 0; i < nflows; i++)
        pb_fixed64(&p->te, TE_FLOWS, flows[i]);
    for (int i = 0; i < nterm; i++)
        pb_fixed64(&p->te, TE_TERM_FLOWS, term[i]);
    event_packet(p, ts, &p->id);
    if (dur > 0) {
        while (t->nends && t->ends[t->nends - 1] <= ts)
            t->nends--; /* ended (advance wrote them) */
        int64_t end = ts + dur;
        if (t->nends && end > t->ends[t->nends - 1]) {
            end = t->ends[t->nends - 1]; /* crosses its parent's end: cut there (see the header) */
            p->st.unnested++;
        }
        if (t->nends == t->capends) {
            t->capends = t->capends ? t->capends * 2 : 8;
            t->ends = prs_xrealloc(t->ends, (size_t)t->capends * sizeof *t->ends);
        }
        t->ends[t->nends++] = end;
        pend e = {end, ++p->order, uuid};
        heap_push(p, e);
        p->st.slices++;
    } else {
        p->st.instants++;
    }
}

/* The counter track of series "name series" of pid, described when new. */
static uint64_t counter_track(prs_pft *p, int pid, const char *name, const char *series)
{
    char full[512];
    /* snprintf(full, sizeof full, "%s %s", name, series), without the
     * format's cost (a counter sample names a track per series) */
    size_t cap = sizeof full - 1, k = strlen(name), sn = strlen(series);
    if (k > cap)
        k = cap;
    memcpy(full, name, k);
    if (k < cap)
        full[k++] = ' ';
    if (sn > cap - k)
        sn = cap - k;
    memcpy(full + k, series, sn);
    full[k + sn] = 0;
    int created;
    uint64_t parent = process_uuid(p, pid);
    track *t = track_of(p, 2, pid, 0, full, &created);
    uint64_t uuid = t->uuid;
    if (created) {
        prs_pb td = {0};
        pb_uint(&td, TD_UUID, uuid);
        pb_uint(&td, TD_PARENT, parent);
        pb_str(&td, TD_NAME, full);
        pb_bytes(&td, TD_COUNTER, "", 0); /* an empty CounterDescriptor: a counter track */
        descriptor(p, &td);
        pb_free(&td);
    }
    return uuid;
}

static int integral(double v) { return v == floor(v) && fabs(v) < 9e15; }

void prs_pft_counter(prs_pft *p, int pid, const char *name, int64_t ts, const char *const *series,
                     const double *vals, int n)
{
    if (!p)
        return;
    advance(p, ts);
    uint64_t uuid[16];
    int idx[16], k = 0;
    for (int i = 0; i < n && k < 16; i++)
        if (!isnan(vals[i])) {
            idx[k] = i;
            uuid[k++] = counter_track(p, pid, name, series[i]);
        }
    if (!k)
        return;
    /* The first series is the event's own value, the others ride on it as
     * extra counter values (same timestamp): one packet per sample. */
    p->te.n = 0;
    pb_uint(&p->te, TE_TYPE, T_COUNTER);
    pb_uint(&p->te, TE_TRACK, uuid[0]);
    double v0 = vals[idx[0]];
    if (integral(v0))
        pb_uint(&p->te, TE_COUNTER, (uint64_t)(int64_t)v0);
    else
        pb_double(&p->te, TE_DCOUNTER, v0);
    for (int j = 1; j < k; j++) {
        double v = vals[idx[j]];
        if (integral(v)) {
            pb_uint(&p->te, TE_EXTRA_UUIDS, uuid[j]);
            pb_uint(&p->te, TE_EXTRA_VALUES, (uint64_t)(int64_t)v);
        } else {
            pb_uint(&p->te, TE_EXTRA_DUUIDS, uuid[j]);
            pb_double(&p->te, TE_EXTRA_DVALUES, v);
        }
    }
    event_packet(p, ts, NULL);
    p->st.counters += k;
}

prs_pft_stats prs_pft_stats_of(const prs_pft *p)
{
    prs_pft_stats z = {0};
    return p ? p->st : z;
}

static void release(prs_pft *p)
{
    for (int k = 0; k < IN_KINDS; k++)
        free(p->in[k]);
    for (int i = 0; i < LONG_RECENT; i++)
        free(p->recent[i].s);
    for (int i = 0; i < p->ntracks; i++) {
        free(p->tracks[i].name);
        free(p->tracks[i].ends);
    }
    free(p->keys);
    free(p->skels);
    free(p->vals);
    free(p->small);
    free(p->tracks);
    free(p->thash);
    free(p->heap);
    pb_free(&p->te);
    pb_free(&p->id);
    pb_free(&p->isc);
    pb_free(&p->hd);
    for (int i = 0; i < ARGS_RECENT; i++) {
        free(p->enc[i].text);
        free(p->enc[i].enc);
    }
    pb_free(&p->txt);
    pb_free(&p->un);
    free(p->path);
    free(p);
}

int prs_pft_close(prs_pft *p)
{
    if (!p)
        return 0;
    if (p->seq)
        flush_ends(p, INT64_MAX);
    int err = prs_dw_close(p->dw, p->n);
    if (err)
        prs_dw_remove(p->path);
    release(p);
    return err;
}
