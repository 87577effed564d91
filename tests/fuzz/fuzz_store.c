/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fuzz_store.c — the store reader (tool/parse/read/storeread.c, rawscan.c,
 * readvfs.c): the input is a whole store file, read three ways as the
 * parser may read it — one pass through the raw b-tree scan, exact mode
 * (a first pass over the timestamps), and SQLite alone
 * (SERVPROF_RAWSCAN=0) — and every record's args decoded. The seeds are
 * stores with 512-byte pages (many pages, overflow chains, interior pages
 * in a few kilobytes), a legacy Mstx store, and the crash inputs.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "plog.h"
#include "storeread.h"
#include "argdecode.h"


/* the parse context the stores under test belong to */
static prs_parse_ctx test_ctx;

static char path[96];

static void remove_all(void)
{
    static const char *const ext[] = {"", "-wal", "-shm", "-journal"};
    char p[128];
    for (int i = 0; i < 4; i++) {
        snprintf(p, sizeof p, "%s%s", path, ext[i]);
        unlink(p);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!path[0]) {
        const char *dir = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";
        snprintf(path, sizeof path, "%s/spp-fuzz-store-%d.db", dir, (int)getpid());
        prs_log_set_level(PRS_NONE);
    }
    if (size > (4u << 20))
        return 0;
    remove_all();
    FILE *f = fopen(path, "wb");
    if (!f)
        return 0;
    fwrite(data, 1, size, f);
    fclose(f);
    prs_args a;
    prs_args_init(&a);
    for (int run = 0; run < 3; run++) {
        if (run == 2)
            setenv("SERVPROF_RAWSCAN", "0", 1);
        prs_store_exact(&test_ctx, run == 1);
        prs_store *s = prs_store_open(&test_ctx, path, 0);
        prs_rec r;
        int64_t last = INT64_MIN;
        for (long n = 0; s && n < 200000 && prs_store_peek(s, &r); n++) {
            if (r.ts < last || r.dur < 0 || r.dur > PRS_MAX_DUR_NS || r.ts > INT64_MAX - r.dur) {
                /* out of time order, or a duration the reports cannot add */
                fprintf(stderr, "run %d record %ld: ts %lld after %lld, dur %lld (mode %d, raw path %d)\n", run, n,
                        (long long)r.ts, (long long)last, (long long)r.dur, s->mode, s->raw_path);
                abort();
            }
            if (!s->violated)
                last = r.ts;
            prs_args_decode(&a, r.args, r.args_len);
            prs_store_next(s);
        }
        prs_store_close(s);
        unsetenv("SERVPROF_RAWSCAN");
    }
    prs_store_exact(&test_ctx, 0);
    prs_args_free(&a);
    remove_all();
    return 0;
}
