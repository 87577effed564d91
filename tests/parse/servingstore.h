/* SPDX-License-Identifier: Apache-2.0 */
/*
 * servingstore.h — real raw stores for the C tests: the raw store's schema
 * and a serving store of a known shape, written with SQLite. Header-only
 * (static inline), included after check.h, whose CHECKs it uses.
 */
#ifndef SERVPROF_TEST_SERVINGSTORE_H
#define SERVPROF_TEST_SERVINGSTORE_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sqlite3.h>

/* The raw store's tables the reader needs (docs/api.md, "The raw store"). */
#define RAW_SCHEMA                                                                                  \
    "CREATE TABLE slice(id INTEGER PRIMARY KEY AUTOINCREMENT, timestamp INTEGER, duration INTEGER,"   \
    " name TEXT, depth INTEGER, track_id INTEGER, cat TEXT, args TEXT, cname TEXT, end_time INTEGER," \
    " flag_id TEXT, pid INTEGER, tid INTEGER);"                                                       \
    "CREATE TABLE Meta(name TEXT, value TEXT, slice TEXT);"

/* A serving store (front end and engine in one): requests with their Link,
 * queueing, coordinator moments (PD instances), batch and forward spans
 * whose rid lists carry the step's requests, KV status, token outputs.
 * Rows are inserted when they end, as a recorder does: out of time order.
 * With a lifetime span (one `serverLifetime` span covering the whole run):
 * LIFETIME_LAST inserts it last, as a span written at shutdown is, later
 * than any reorder window the parse's one pass guesses from the first rows
 * (when there are more of them than it looks at: the parse restarts in
 * exact mode); LIFETIME_FIRST inserts it first, so the same rows parse in
 * one pass. */
enum { LIFETIME_NONE, LIFETIME_FIRST, LIFETIME_LAST };
typedef struct srow { int64_t ts, dur; const char *name, *cat; char args[200]; } srow;

static inline int by_end(const void *pa, const void *pb)
{
    const srow *a = pa, *b = pb;
    int64_t ea = a->ts + a->dur, eb = b->ts + b->dur;
    return ea < eb ? -1 : ea > eb;
}

static inline void serving_store(const char *path, int nreq, int tokens, int lifetime)
{
    enum { BATCH = 4 };
    int cap = nreq * (8 + 2 * tokens) + 16, n = 0;
    srow *rows = calloc((size_t)cap, sizeof *rows);
    const int64_t ms = 1000000;
    int64_t t = 1700000100000000000LL;
#define ROW(ts_, dur_, name_, cat_, ...)                                                        \
    do {                                                                                        \
        rows[n] = (srow){ts_, dur_, name_, cat_, ""};                                           \
        snprintf(rows[n].args, sizeof rows[n].args, __VA_ARGS__);                               \
        n++;                                                                                    \
    } while (0)
    for (int first = 0; first < nreq; first += BATCH) {
        for (int r = first; r < first + BATCH && r < nreq; r++) {
            int64_t at = t + (r - first) * 100000;
            ROW(at, 0, "httpReq", "Request", "{\"type\":0,\"rid\":\"http-%d\"}", r);
            ROW(at + 10000, 0, "Link", "Request", "{\"type\":3,\"from\":\"http-%d\",\"to\":\"eng-%d\"}", r, r);
            ROW(at + 20000, 0, "RequestDispatch", "Coordinator",
                "{\"type\":0,\"rid\":\"eng-%d\",\"PrefillAddress\":\"10.0.0.%d:80\",\"DecodeAddress\":\"10.0.1.1:80\"}",
                r, 1 + r % 2);
            ROW(at + 30000, 0, "Enqueue", "Schedule",
                "{\"type\":0,\"rid\":\"eng-%d\",\"QueueSize=\":%d,\"scope#QueueName\":\"WAITING\"}", r, r - first + 1);
            ROW(t + ms + (r - first) * 1000, 0, "Dequeue", "Schedule",
                "{\"type\":0,\"rid\":\"eng-%d\",\"QueueSize=\":0,\"scope#QueueName\":\"WAITING\"}", r);
        }
        int nb = nreq - first < BATCH ? nreq - first : BATCH;
        int64_t s0 = t + 2 * ms;
        for (int k = 0; k < tokens; k++) {
            int64_t b = s0 + k * 15 * ms;
            char list[160] = "";
            for (int i = 0; i < nb && i < 3; i++) /* the args buffer holds three entries */
                snprintf(list + strlen(list), sizeof list - strlen(list), "%s{\"rid\":\"eng-%d\",\"iter\":%d}",
                         i ? "," : "", first + i, k);
            ROW(b, 2 * ms, "batchFrameworkProcessing", "BatchSchedule",
                "{\"type\":2,\"rid\":[%s],\"batch_type\":\"%s\",\"batch_size\":%d}", list, k ? "Decode" : "Prefill", nb);
            ROW(b + 3 * ms, 9 * ms, "forward", "ModelExecute", "{\"type\":2,\"rid\":[%s]}", list);
            ROW(b + 13 * ms, 0, "KVCacheStatus", "KVCache",
                "{\"type\":0,\"TotalBlocks=\":1000,\"FreeBlocksBefore=\":%d,\"FreeBlocksAfter=\":%d}", 900 - k, 899 - k);
            for (int r = first; r < first + nb; r++) {
                if (k == 0)
                    ROW(b + 12 * ms, 0, "GenerateToken", "Coordinator",
                        "{\"type\":0,\"rid\":\"eng-%d\",\"Phase\":\"prefill\"}", r);
                ROW(b + 13 * ms + 100000 + (r - first) * 1000, 0, "detokenize", "Request",
                    "{\"type\":0,\"rid\":\"eng-%d\"}", r);
            }
        }
        int64_t end = s0 + tokens * 15 * ms;
        for (int r = first; r < first + nb; r++) {
            ROW(end + (r - first) * 1000, 0, "ReqFinish", "Coordinator", "{\"type\":0,\"rid\":\"eng-%d\"}", r);
            ROW(end + ms + (r - first) * 1000, 0, "httpRes", "Request",
                "{\"type\":0,\"rid\":\"http-%d\",\"recvTokenSize=\":16,\"replyTokenSize=\":%d}", r, tokens);
        }
        t = end + 2 * ms;
    }
#undef ROW
    qsort(rows, (size_t)n, sizeof *rows, by_end);
    if (lifetime != LIFETIME_NONE) {
        int64_t from = 1700000100000000000LL - ms, to = rows[n - 1].ts + rows[n - 1].dur + ms;
        int at = lifetime == LIFETIME_FIRST ? 0 : n;
        memmove(&rows[at + 1], &rows[at], (size_t)(n - at) * sizeof *rows);
        rows[at] = (srow){from, to - from, "serverLifetime", "Service", "{\"type\":2}"};
        n++;
    }
    sqlite3 *db;
    CHECK(sqlite3_open(path, &db) == SQLITE_OK);
    CHECK(sqlite3_exec(db, RAW_SCHEMA "INSERT INTO Meta(name, value) VALUES('hostname', 'h2');", NULL, NULL, NULL) ==
          SQLITE_OK);
    sqlite3_stmt *ins;
    CHECK(sqlite3_prepare_v2(db, "INSERT INTO slice(timestamp, duration, name, cat, args, pid, tid)"
                                 " VALUES(?1, ?2, ?3, ?4, ?5, 7, 70)", -1, &ins, NULL) == SQLITE_OK);
    sqlite3_exec(db, "BEGIN", NULL, NULL, NULL);
    for (int i = 0; i < n; i++) {
        sqlite3_bind_int64(ins, 1, rows[i].ts);
        sqlite3_bind_int64(ins, 2, rows[i].dur);
        sqlite3_bind_text(ins, 3, rows[i].name, -1, SQLITE_STATIC);
        sqlite3_bind_text(ins, 4, rows[i].cat, -1, SQLITE_STATIC);
        sqlite3_bind_text(ins, 5, rows[i].args, -1, SQLITE_STATIC);
        CHECK(sqlite3_step(ins) == SQLITE_DONE);
        sqlite3_reset(ins);
    }
    sqlite3_exec(db, "COMMIT", NULL, NULL, NULL);
    sqlite3_finalize(ins);
    sqlite3_close(db);
    free(rows);
}

#endif
