/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fuzz_args.c — the args decoder (tool/parse/decode/argdecode.c), the parser's hot
 * loop over text written by any process: decoded, every string it returns
 * unescaped and interned, the nested-object helpers run. Checked beyond
 * memory safety: an unescaped string is never longer than its text and
 * holds no NUL (it is used as a C string), and an escaped id and the same
 * id unescaped are one node.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "plog.h"
#include "argdecode.h"
#include "ids.h"


static void check_str(prs_ids *ids, prs_str s)
{
    if (!s.p)
        return;
    char *buf = malloc((size_t)s.n + 1);
    int n = prs_str_copy(s, buf, s.n + 1);
    if (n > s.n || (int)strlen(buf) != n)
        abort(); /* longer than its text, or a NUL inside */
    int node = prs_ids_get_str(ids, s);
    if (prs_ids_find(ids, buf, n) != node)
        abort(); /* the escaped id and its text are not one request */
    free(buf);
}

static void each_num(prs_str key, double v, void *ctx)
{
    (void)v;
    check_str(ctx, key);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static prs_args a;
    static int ready;
    if (!ready) {
        prs_args_init(&a);
        prs_log_set_level(PRS_NONE);
        ready = 1;
    }
    if (size > (1u << 20))
        return 0;
    const char *text = (const char *)data;
    prs_args_decode(&a, text, (int)size);
    prs_ids *ids = prs_ids_new();
    check_str(ids, a.rid);
    for (int i = 0; i < a.nrids; i++)
        check_str(ids, a.rids[i].rid);
    check_str(ids, a.queue_name);
    check_str(ids, a.status);
    check_str(ids, a.batch_type);
    check_str(ids, a.from);
    check_str(ids, a.to);
    if (a.accepted.p) {
        prs_json_each_number(a.accepted, each_num, ids, &a.range_errors);
        (void)prs_json_object_number(a.accepted, "r", 1);
    }
    prs_str s;
    if (prs_json_object_string(text, (int)size, "name", &s))
        check_str(ids, s);
    prs_ids_free(ids);
    return 0;
}
