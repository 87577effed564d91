/* SPDX-License-Identifier: Apache-2.0 */
/*
 * sqlfmt.h — the pieces of SQLite's file format (sqlite.org/fileformat2.html)
 * that both page writers need (btwrite.c: tables, btindex.c: indexes):
 * big-endian integers, varints, and the serial type of an integer.
 */
#ifndef SERVPROF_PARSE_SQLFMT_H
#define SERVPROF_PARSE_SQLFMT_H

#include <stdint.h>

static inline void put16(uint8_t *p, unsigned v) { p[0] = (uint8_t)(v >> 8); p[1] = (uint8_t)v; }
static inline void put32(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)(v >> 24);
    p[1] = (uint8_t)(v >> 16);
    p[2] = (uint8_t)(v >> 8);
    p[3] = (uint8_t)v;
}

/* SQLite's varint: 7 bits a byte, big-endian, the 9th byte takes 8 bits. */
static inline int varint_len(uint64_t v)
{
    if (v <= 0x7f)
        return 1;
    if (v & (0xffULL << 56))
        return 9;
    int n = 1;
    while (v > 0x7f) {
        v >>= 7;
        n++;
    }
    return n;
}

static inline int put_varint(uint8_t *p, uint64_t v)
{
    if (v <= 0x7f) {
        p[0] = (uint8_t)v;
        return 1;
    }
    if (v <= 0x3fff) {
        p[0] = (uint8_t)(0x80 | (v >> 7));
        p[1] = (uint8_t)(v & 0x7f);
        return 2;
    }
    if (v & (0xffULL << 56)) {
        p[8] = (uint8_t)v;
        v >>= 8;
        for (int i = 7; i >= 0; i--) {
            p[i] = (uint8_t)((v & 0x7f) | 0x80);
            v >>= 7;
        }
        return 9;
    }
    int n = varint_len(v);
    for (int i = n - 1; i >= 0; i--) {
        p[i] = (uint8_t)((v & 0x7f) | 0x80);
        v >>= 7;
    }
    p[n - 1] &= 0x7f;
    return n;
}

/* Serial type (and body bytes) of an integer: the smallest that holds it. */
static inline uint32_t int_type(int64_t i, uint32_t *len)
{
    uint64_t u = i < 0 ? ~(uint64_t)i : (uint64_t)i;
    if (u <= 127) {
        if ((i & 1) == i) {
            *len = 0;
            return 8 + (uint32_t)i;
        }
        *len = 1;
        return 1;
    }
    if (u <= 32767) { *len = 2; return 2; }
    if (u <= 8388607) { *len = 3; return 3; }
    if (u <= 2147483647) { *len = 4; return 4; }
    if (u <= 0x7fffffffffffULL) { *len = 6; return 5; }
    *len = 8;
    return 6;
}

#endif
