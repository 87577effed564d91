/* SPDX-License-Identifier: Apache-2.0 */
/*
 * rec_format.h — the byte layout of one record in a thread buffer.
 *
 * The calling thread (record.c) writes records; the writer thread
 * (writer.c, argbuild.c) reads them. Nothing else knows this layout.
 *
 * A record is a fixed header followed by a body, both copied with memcpy
 * (no alignment is assumed: the ring wraps at any byte):
 *
 *   header   sp_rec_hdr (len and kind are patched in when the record is
 *            finished, just before it is published)
 *   domain   u16 length + bytes (length 0: no domain)
 *   attrs    a stream of tagged attributes (below), ended by SP_TAG_STOP
 *   trailer  depends on kind: EVENT/SPAN_BEGIN/SPAN_AT: name (u16 + bytes);
 *            LINK: from, to (u16 + bytes each); SPAN_END: nothing
 *
 * An attribute is a tag byte, a key (u16 length + bytes; arrays' members and
 * SP_TAG_END carry no key) and a value:
 *
 *   STR, JSON        u16 length + bytes
 *   INT              i64        DOUBLE, GAUGE, INC   f64
 *   BOOL             u8         SCOPE                u16 length + bytes
 *   INT_ARR, DBL_ARR u32 count + count * 8 bytes
 *   ARR, OBJ         (nothing: a container opens)   END  (no key) closes one
 *   MSG              u16 length + bytes: a message in the reference
 *                    collector's text (JSON or `^key^:value,`), copied as
 *                    given by the drop-in library (dropin/); the writer
 *                    decodes it (msgdec.c). Its key is "" when the record
 *                    carries its own name and domain, "x" when they are to
 *                    be taken from the message (the legacy MarkEvent form).
 *
 * GAUGE, INC and SCOPE keep the bare metric name as key; the writer adds the
 * reference tool's "=", "+" and "scope#" so the caller never concatenates.
 */
#ifndef SERVPROF_REC_FORMAT_H
#define SERVPROF_REC_FORMAT_H

#include <stdint.h>

#include "clock.h"

enum sp_rec_kind {
    SP_REC_EVENT = 1,      /* instant event: args "type": 0 */
    SP_REC_SPAN_BEGIN = 2, /* first half of a span: "type": 2 */
    SP_REC_SPAN_END = 3,   /* second half: attributes to merge */
    SP_REC_SPAN_AT = 4,    /* a whole span, both ends given */
    SP_REC_LINK = 5,       /* "type": 3, from, to */
};

enum sp_attr_tag {
    SP_TAG_STOP = 0, /* end of the attribute stream */
    SP_TAG_STR = 1,
    SP_TAG_INT = 2,
    SP_TAG_DOUBLE = 3,
    SP_TAG_BOOL = 4,
    SP_TAG_INT_ARR = 5,
    SP_TAG_DBL_ARR = 6,
    SP_TAG_JSON = 7,
    SP_TAG_ARR = 8,
    SP_TAG_OBJ = 9,
    SP_TAG_END = 10,
    SP_TAG_GAUGE = 11,
    SP_TAG_INC = 12,
    SP_TAG_SCOPE = 13,
    SP_TAG_MSG = 14,
};

typedef struct sp_rec_hdr {
    uint32_t len;   /* whole record in bytes, header included */
    uint8_t kind;   /* enum sp_rec_kind */
    uint8_t flags;  /* SP_HDR_*: how ts and ts2 are to be read */
    uint8_t pad[2];
    uint32_t epoch; /* session the record was begun in (sp_rec_epoch) */
    uint32_t pad2;
    int64_t ts;     /* realtime ns (SP_HDR_TICKS: TSC ticks): event time, span begin or end */
    int64_t ts2;    /* SPAN_AT: end time (always realtime ns: the caller's); otherwise 0 */
    uint64_t span;  /* SPAN_*: span id; otherwise 0 */
} sp_rec_hdr;

/* Header flags. */
enum {
    SP_HDR_TICKS = 1, /* ts holds sp_clock_raw() ticks, not ns: see clock.h */
};

/* Writer: turns the header's times into realtime ns, in place (call it once
 * per record, before ts or ts2 is used). */
static inline void sp_rec_hdr_times(sp_rec_hdr *h)
{
    if (h->flags & SP_HDR_TICKS) {
        h->ts = sp_clock_ticks_to_ns(h->ts);
        h->flags &= (uint8_t)~SP_HDR_TICKS;
    }
}

/* Containers nested deeper than this are ignored (counted as bad input);
 * their members land in the enclosing container. */
#define SP_MAX_NESTING 32

#endif /* SERVPROF_REC_FORMAT_H */
