/* SPDX-License-Identifier: Apache-2.0 */
/*
 * bench_pbenc.c — trace.pftrace's hand encoder (tool/parse/out/pbenc.h) vs
 * Debian's protobuf-c on the same events, for the choice pftrace.c's
 * header states.
 *
 * The events are bench_parse's two dominant shapes: a per-token instant
 * (args {"type":0,"rid":"engine-N"}: type, name, category, track, two
 * annotations) and a schedule step (a begin with a rid list of 32 entries
 * of six fields each, nested dict/array annotations). Both encoders write
 * a TracePacket per event with the same fields (te_subset.proto has
 * perfetto_trace.proto's numbers) into one buffer; the hand encoder the
 * way pftrace.c does (scalars appended, nested messages in place with
 * pb_open/pb_close), protobuf-c the way its API asks (a message tree of
 * structs, get_packed_size, pack). Prints ns per event and bytes for each;
 * interning and the string work that both would share are left out, so
 * the figure is the encoders' own cost.
 *
 * usage: bench_pbenc [EVENTS]   (default 1,000,000; one step per 25 tokens)
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "pbenc.h"
#include "te_subset.pb-c.h"

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

#define ENTRIES 32
#define FIELDS 6

/* The hand encoder: one packet into out. */
static void hand(prs_pb *out, prs_pb *te, long i, int step)
{
    te->n = 0;
    pb_uint(te, 9, step ? 1 : 3);
    pb_uint(te, 11, step ? 5 : 7);
    pb_uint(te, 10, step ? 2 : 1);
    pb_uint(te, 3, 1);
    size_t at = pb_open(te, 4);
    pb_uint(te, 1, 1);
    pb_uint(te, 4, step ? 2 : 0);
    pb_close(te, at);
    at = pb_open(te, 4);
    pb_uint(te, 1, 2);
    if (!step) {
        char rid[32];
        int n = snprintf(rid, sizeof rid, "engine-%ld", i % 5000);
        pb_bytes(te, 6, rid, (size_t)n);
    } else {
        for (int e = 0; e < ENTRIES; e++) {
            size_t ae = pb_open(te, 12);
            for (int f = 0; f < FIELDS; f++) {
                size_t d = pb_open(te, 11);
                pb_uint(te, 1, (uint64_t)(3 + f));
                if (f == 0)
                    pb_uint(te, 17, (uint64_t)(100 + e));
                else
                    pb_uint(te, 4, (uint64_t)(f * 40 + e));
                pb_close(te, d);
            }
            pb_close(te, ae);
        }
    }
    pb_close(te, at);
    size_t pk = pb_open(out, 1);
    pb_uint(out, 8, 1000);
    pb_uint(out, 10, 1);
    pb_uint(out, 13, 2);
    pb_msg(out, 11, te);
    pb_close(out, pk);
}

/* protobuf-c: the same packet as a message tree, measured, packed. */
static void pbc(prs_pb *out, long i, int step)
{
    DebugAnnotation dict[ENTRIES][FIELDS], arr[ENTRIES], a[2];
    DebugAnnotation *dictp[ENTRIES][FIELDS], *arrp[ENTRIES], *ap[2];
    char rid[32];
    uint64_t cat = 1;
    for (int k = 0; k < 2; k++) {
        debug_annotation__init(&a[k]);
        a[k].has_name_iid = 1;
        a[k].name_iid = (uint64_t)(k + 1);
        ap[k] = &a[k];
    }
    a[0].has_int_value = 1;
    a[0].int_value = step ? 2 : 0;
    if (!step) {
        snprintf(rid, sizeof rid, "engine-%ld", i % 5000);
        a[1].string_value = rid;
    } else {
        for (int e = 0; e < ENTRIES; e++) {
            debug_annotation__init(&arr[e]);
            for (int f = 0; f < FIELDS; f++) {
                DebugAnnotation *d = &dict[e][f];
                debug_annotation__init(d);
                d->has_name_iid = 1;
                d->name_iid = (uint64_t)(3 + f);
                if (f == 0) {
                    d->has_string_value_iid = 1;
                    d->string_value_iid = (uint64_t)(100 + e);
                } else {
                    d->has_int_value = 1;
                    d->int_value = f * 40 + e;
                }
                dictp[e][f] = d;
            }
            arr[e].n_dict_entries = FIELDS;
            arr[e].dict_entries = dictp[e];
            arrp[e] = &arr[e];
        }
        a[1].n_array_values = ENTRIES;
        a[1].array_values = arrp;
    }
    TrackEvent te;
    track_event__init(&te);
    te.has_type = 1;
    te.type = step ? 1 : 3;
    te.has_track_uuid = 1;
    te.track_uuid = step ? 5 : 7;
    te.has_name_iid = 1;
    te.name_iid = step ? 2 : 1;
    te.n_category_iids = 1;
    te.category_iids = &cat;
    te.n_debug_annotations = 2;
    te.debug_annotations = ap;
    TracePacket p;
    trace_packet__init(&p);
    p.has_timestamp = 1;
    p.timestamp = 1000;
    p.has_trusted_packet_sequence_id = 1;
    p.trusted_packet_sequence_id = 1;
    p.has_sequence_flags = 1;
    p.sequence_flags = 2;
    p.track_event = &te;
    size_t n = trace_packet__get_packed_size(&p);
    pb_tag(out, 1, PB_LEN);
    pb_varint(out, n);
    pb_reserve(out, n);
    out->n += trace_packet__pack(&p, out->b + out->n);
}

int main(int argc, char **argv)
{
    long n = argc > 1 ? atol(argv[1]) : 1000000;
    prs_pb a = {0}, b = {0}, te = {0};
    for (int round = 0; round < 3; round++) {
        a.n = b.n = 0;
        double t0 = now_s();
        for (long i = 0; i < n; i++) {
            hand(&a, &te, i, i % 25 == 0);
            if (a.n > (64u << 20))
                a.n = 0; /* a dwrite buffer handed over */
        }
        double t1 = now_s();
        for (long i = 0; i < n; i++) {
            pbc(&b, i, i % 25 == 0);
            if (b.n > (64u << 20))
                b.n = 0;
        }
        double t2 = now_s();
        printf("round %d: hand %.1f ns/event, protobuf-c %.1f ns/event (%.2fx)\n", round, (t1 - t0) * 1e9 / (double)n,
               (t2 - t1) * 1e9 / (double)n, (t2 - t1) / (t1 - t0));
    }
    /* the same bytes? sizes of one of each event */
    a.n = b.n = 0;
    hand(&a, &te, 7, 0);
    pbc(&b, 7, 0);
    size_t i0a = a.n, i0b = b.n;
    hand(&a, &te, 0, 1);
    pbc(&b, 0, 1);
    printf("bytes: instant %zu vs %zu, step %zu vs %zu\n", i0a, i0b, a.n - i0a, b.n - i0b);
    pb_free(&a);
    pb_free(&b);
    pb_free(&te);
    return 0;
}
