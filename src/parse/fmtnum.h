/* SPDX-License-Identifier: Apache-2.0 */
/* fmtnum.h — number formatting without printf for the writers (fmt.c). */
#ifndef SERVPROF_PARSE_FMTNUM_H
#define SERVPROF_PARSE_FMTNUM_H

/* Writes d as printf's "%.6g" would into buf (>= 32 bytes) and returns the
 * length: the common cases (integers, ratios, values of 1e-4 .. 1e15) are
 * formatted here, the rest (near a rounding tie, NaN, huge, tiny) by
 * snprintf, so the text is always printf's. */
int spp_fmt_g6(double d, char *buf);

#endif
