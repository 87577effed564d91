/* SPDX-License-Identifier: Apache-2.0 */
/*
 * bigendian.h — the big-endian integers of SQLite's file formats (page
 * headers, cell pointers, WAL frame headers), read from bytes. One
 * definition for the readers that look at pages themselves: rawscan.c,
 * walcheck.c, storeread.c.
 */
#ifndef SERVPROF_BIGENDIAN_H
#define SERVPROF_BIGENDIAN_H

#include <stdint.h>

static inline uint32_t be16(const unsigned char *p)
{
    return (uint32_t)p[0] << 8 | p[1];
}

static inline uint32_t be32(const unsigned char *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

#endif /* SERVPROF_BIGENDIAN_H */
