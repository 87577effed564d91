/* SPDX-License-Identifier: Apache-2.0 */
/*
 * errors.c — names of the error codes, generated from SERVPROF_ERRNO_MAP so
 * codes and texts cannot drift apart.
 */
#include "internal.h"

SERVPROF_API const char *servprof_strerror(int err)
{
    switch (err) {
#define SP_ERR_CASE(name, code, text) case (code): return text;
        SERVPROF_ERRNO_MAP(SP_ERR_CASE)
#undef SP_ERR_CASE
    }
    return "unknown error";
}
