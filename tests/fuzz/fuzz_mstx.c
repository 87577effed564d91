/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fuzz_mstx.c — the legacy `Mstx` message decoder (tool/parse/read/storeread.c,
 * prs_legacy_decode): the reference's pseudo-JSON with `^` for `"`, turned
 * into a JSON object whose name and domain members name the record, then
 * decoded as args like every record.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "storeread.h"
#include "argdecode.h"


int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > (1u << 20))
        return 0;
    prs_store s;
    memset(&s, 0, sizeof s);
    prs_rec r;
    memset(&r, 0, sizeof r);
    prs_legacy_decode(&s, (const char *)data, (int)size, &r);
    if (!r.args || r.args_len < 0 || strlen(r.name) >= sizeof s.legacy_name || strlen(r.cat) >= sizeof s.legacy_cat)
        abort();
    prs_args a;
    prs_args_init(&a);
    prs_args_decode(&a, r.args, r.args_len);
    prs_args_free(&a);
    free(s.legacy_buf);
    return 0;
}
