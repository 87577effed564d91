/* SPDX-License-Identifier: Apache-2.0 */
/*
 * affinity.c — a declared column type to SQLite's column affinity
 * (affinity.h).
 *
 * The rules (datatype3.html 3.1), first match wins: "INT" anywhere ->
 * INTEGER; "CHAR", "CLOB" or "TEXT" -> TEXT; "BLOB" or no type -> BLOB;
 * "REAL", "FLOA" or "DOUB" -> REAL; else NUMERIC. SQLite checks them in one
 * pass with a rolling window of the last four letters (ASCII case folded),
 * a later rule not overriding an earlier one; the same is done here, so a
 * type of any length gets SQLite's answer ("FLOATING POINT" has "INT":
 * INTEGER).
 */
#include <stdint.h>

#include "affinity.h"

#define K4(a, b, c, d) (((uint32_t)(a) << 24) | ((uint32_t)(b) << 16) | ((uint32_t)(c) << 8) | (uint32_t)(d))

char prs_affinity(const char *decl)
{
    if (!decl || !*decl)
        return PRS_AFF_BLOB;
    char aff = PRS_AFF_NUMERIC;
    uint32_t h = 0;
    for (const char *p = decl; *p; p++) {
        unsigned c = (unsigned char)*p;
        if (c >= 'A' && c <= 'Z')
            c += 'a' - 'A';
        h = (h << 8) + c;
        if ((h & 0x00ffffff) == K4(0, 'i', 'n', 't'))
            return PRS_AFF_INTEGER;
        if (h == K4('c', 'h', 'a', 'r') || h == K4('c', 'l', 'o', 'b') || h == K4('t', 'e', 'x', 't'))
            aff = PRS_AFF_TEXT;
        else if (h == K4('b', 'l', 'o', 'b') && (aff == PRS_AFF_NUMERIC || aff == PRS_AFF_REAL))
            aff = PRS_AFF_BLOB;
        else if ((h == K4('r', 'e', 'a', 'l') || h == K4('f', 'l', 'o', 'a') || h == K4('d', 'o', 'u', 'b')) &&
                 aff == PRS_AFF_NUMERIC)
            aff = PRS_AFF_REAL;
    }
    return aff;
}
