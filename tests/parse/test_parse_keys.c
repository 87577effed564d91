/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_parse_keys.c — the parser's two lookup tables walked entry by
 * entry: the args keys (tool/parse/decode/argdecode.c: key -> field of prs_args) and
 * the record names (tool/parse/model/model.c: name -> kind).
 *
 * Each table is checked against a list written here independently, so an
 * entry that points at the wrong field or kind, one filed in the wrong row
 * (never found), a key missing from the table or one the list does not know
 * fails. Every key must fill its own field and no other; near misses (each
 * byte changed in turn, a prefix, one byte more, the first letter's case
 * flipped, a '=' where none is accepted) must be ignored.
 */
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "check.h"
#include "model.h"
#include "parse.h"

/* Calls check(v, ctx) with each near miss v of key k: each byte changed in
 * turn, the prefix one byte shorter, one byte more, the first letter's
 * case flipped. */
static void each_near_miss(const char *k, void (*check)(const char *v, void *ctx), void *ctx)
{
    char v[64];
    int len = (int)strlen(k);
    for (int b = 0; b < len; b++) {
        snprintf(v, sizeof v, "%s", k);
        v[b] = v[b] == 'x' ? 'y' : 'x';
        check(v, ctx);
    }
    snprintf(v, sizeof v, "%.*s", len - 1, k);
    check(v, ctx);
    snprintf(v, sizeof v, "%sx", k);
    check(v, ctx);
    snprintf(v, sizeof v, "%s", k);
    v[0] = (char)(v[0] ^ 0x20);
    check(v, ctx);
}

/* --------------------------------------------------------------- args */
enum { F_NUM, F_INT, F_STR, F_RAW, F_RID };

/* Every key the reports read, the field it fills, and whether writers may
 * add a '=' to it (samplers and older writers do). */
static const struct { const char *key; int eq; int type; size_t off; } arg_keys[] = {
    {"AllocatedBlocks", 1, F_NUM, offsetof(prs_args, allocated)},
    {"FreeBlocks", 1, F_NUM, offsetof(prs_args, free)},
    {"FreeBlocksBefore", 1, F_NUM, offsetof(prs_args, free_before)},
    {"FreeBlocksAfter", 1, F_NUM, offsetof(prs_args, free_after)},
    {"QueueSize", 1, F_NUM, offsetof(prs_args, queue_size)},
    {"TotalBlocks", 1, F_NUM, offsetof(prs_args, total)},
    {"UsedBlocks", 1, F_NUM, offsetof(prs_args, used)},
    {"UsagePercent", 1, F_NUM, offsetof(prs_args, usage_pct)},
    {"available=", 0, F_NUM, offsetof(prs_args, available)},
    {"batch_type", 0, F_STR, offsetof(prs_args, batch_type)},
    {"batch_size", 1, F_NUM, offsetof(prs_args, batch_size)},
    {"cpu=", 0, F_NUM, offsetof(prs_args, cpu)},
    {"deviceBlock", 1, F_NUM, offsetof(prs_args, device_block)},
    {"from", 0, F_STR, offsetof(prs_args, from)},
    {"hitCache", 1, F_NUM, offsetof(prs_args, hit_cache)},
    {"rid", 0, F_RID, offsetof(prs_args, rid)},
    {"recvTokenSize", 1, F_NUM, offsetof(prs_args, recv_tokens)},
    {"replyTokenSize", 1, F_NUM, offsetof(prs_args, reply_tokens)},
    {"rss=", 0, F_NUM, offsetof(prs_args, rss)},
    {"scope#QueueName", 0, F_STR, offsetof(prs_args, queue_name)},
    {"status", 0, F_STR, offsetof(prs_args, status)},
    {"scope#device", 0, F_INT, offsetof(prs_args, device)},
    {"scope#cpu", 0, F_INT, offsetof(prs_args, cpu_index)},
    {"spec_decode_accepted_by_req", 0, F_RAW, offsetof(prs_args, accepted)},
    {"type", 0, F_INT, offsetof(prs_args, type)},
    {"to", 0, F_STR, offsetof(prs_args, to)},
    {"total=", 0, F_NUM, offsetof(prs_args, mtotal)},
    {"usage=", 0, F_NUM, offsetof(prs_args, usage)},
    {"util=", 0, F_NUM, offsetof(prs_args, util)},
    {"used=", 0, F_NUM, offsetof(prs_args, mused)},
};
#define N_ARG_KEYS ((int)(sizeof arg_keys / sizeof *arg_keys))

/* Index in arg_keys of the key k (n bytes) as a writer may spell it, or -1. */
static int listed_key(const char *k, int n)
{
    for (int i = 0; i < N_ARG_KEYS; i++) {
        int m = (int)strlen(arg_keys[i].key);
        if ((m == n || (arg_keys[i].eq && m == n - 1 && k[m] == '=')) && !memcmp(k, arg_keys[i].key, (size_t)m))
            return i;
    }
    return -1;
}

static const void *field(const prs_args *a, int i)
{
    return (const char *)a + arg_keys[i].off;
}

/* 1 if listed field i holds what {"key":"7"} puts there. */
static int holds_seven(const prs_args *a, int i)
{
    const prs_str *s = field(a, i);
    switch (arg_keys[i].type) {
    case F_NUM: return *(const double *)field(a, i) == 7;
    case F_INT: return *(const int *)field(a, i) == 7;
    case F_STR: return s->p && s->n == 1 && s->p[0] == '7';
    case F_RAW: return s->p && s->n == 3 && !memcmp(s->p, "\"7\"", 3); /* the value's text */
    default: return a->rid_kind == 1 && s->p && s->n == 1 && s->p[0] == '7' && a->nrids == 0;
    }
}

static int absent(const prs_args *a, int i)
{
    const prs_str *s = field(a, i);
    switch (arg_keys[i].type) {
    case F_NUM: return isnan(*(const double *)field(a, i));
    case F_INT: return *(const int *)field(a, i) == -1;
    case F_RID: return a->rid_kind == 0 && !s->p && a->nrids == 0;
    default: return !s->p;
    }
}

/* Decodes {"<k>":"7"} (spaced: around every token, so that no literal
 * fast path applies) and checks that listed field `want` (-1: none) holds
 * 7 and every other listed field is absent. */
static void check_decode(prs_args *a, const char *k, int want, int spaced)
{
    char text[128];
    snprintf(text, sizeof text, spaced ? " { \"%s\" : \"7\" } " : "{\"%s\":\"7\"}", k);
    prs_args_decode(a, text, (int)strlen(text));
    CHECK_INT(a->valid, 1);
    for (int i = 0; i < N_ARG_KEYS; i++) {
        int ok = i == want ? holds_seven(a, i) : absent(a, i);
        if (!ok)
            fprintf(stderr, "decoding %s: field of \"%s\" %s\n", text, arg_keys[i].key,
                    i == want ? "does not hold 7" : "is not absent");
        CHECK(ok);
    }
}

/* A near miss of a listed key is ignored, unless it happens to be another
 * listed key (then it must fill that key's field). */
static void check_variant(const char *k, void *args)
{
    prs_args *a = args;
    int n = (int)strlen(k);
    check_decode(a, k, listed_key(k, n), 0);
    check_decode(a, k, listed_key(k, n), 1);
}

static void test_args_table(void)
{
    prs_args a;
    prs_args_init(&a);
    int seen[N_ARG_KEYS] = {0};
    int n = 0, eq;
    for (const char *k; (k = prs_args_key(n, &eq)) != NULL; n++) {
        int i = listed_key(k, (int)strlen(k));
        if (i < 0 || strcmp(k, arg_keys[i].key) != 0) {
            fprintf(stderr, "args table key \"%s\" is not in the test's list\n", k);
            CHECK(0);
            continue;
        }
        CHECK(!seen[i]); /* each key once */
        seen[i] = 1;
        CHECK_INT(eq, arg_keys[i].eq);
    }
    CHECK_INT(n, N_ARG_KEYS);
    for (int i = 0; i < N_ARG_KEYS; i++) {
        if (!seen[i])
            fprintf(stderr, "\"%s\" is missing from the args table\n", arg_keys[i].key);
        CHECK(seen[i]);
    }

    char v[64];
    for (int i = 0; i < N_ARG_KEYS; i++) {
        const char *k = arg_keys[i].key;
        int len = (int)strlen(k);
        check_decode(&a, k, i, 0);
        check_decode(&a, k, i, 1);
        snprintf(v, sizeof v, "%s=", k); /* accepted only where eq says so */
        check_decode(&a, v, arg_keys[i].eq ? i : listed_key(v, len + 1), 0);
        each_near_miss(k, check_variant, &a);
    }
    /* an escaped key is not the key it spells: keys are compared raw */
    check_decode(&a, "\\u0074ype", -1, 0);
    check_decode(&a, "Queue\\u0053ize", -1, 1);
    prs_args_free(&a);
}

/* -------------------------------------------------------------- names */
/* Every record name the reports know (docs/vocabulary.md) and its kind. */
static const struct { const char *name; enum prs_kind kind; } names[] = {
    {"httpReq", K_HTTPREQ}, {"httpRes", K_END}, {"tokenize", K_TOKENIZE},
    {"Enqueue", K_ENQUEUE}, {"Execute", K_EXEC}, {"Dequeue", K_DEQUEUE},
    {"DecodeEnd", K_END}, {"DeviceMemory", K_DEVMEM}, {"Queue", K_QUEUE},
    {"batchFrameworkProcessing", K_BATCH}, {"BatchSchedule", K_BATCH}, {"modelExec", K_EXEC},
    {"modelRunnerExec", K_EXEC}, {"forward", K_FORWARD}, {"KVCacheStatus", K_KVSTATUS},
    {"Allocate", K_KVEVENT}, {"AppendSlot", K_KVEVENT}, {"Free", K_KVEVENT},
    {"CacheHitRate", K_CACHEHIT}, {"CpuUsage", K_CPU}, {"MemUsage", K_MEM},
    {"ProcessUsage", K_PROC}, {"PullKVCache", K_PULLKV}, {"RequestDispatch", K_COORD},
    {"ReqFinish", K_COORD}, {"GenerateToken", K_COORD}, {"detokenize", K_TOKEN_OUT},
    {"decode", K_TOKEN_OUT}, {"decodeRes", K_COMM}, {"sendResponse", K_SENDRESP},
    {"specDecoding", K_SPEC}, {"sendReqToD", K_COMM}, {"sendReqToDSucc", K_COMM},
    {"Link", K_LINK}, {"receiveReq", K_COMM}, {"prefillRes", K_COMM},
};
#define N_NAMES ((int)(sizeof names / sizeof *names))

static int listed_name(const char *s)
{
    for (int i = 0; i < N_NAMES; i++)
        if (!strcmp(s, names[i].name))
            return i;
    return -1;
}

/* s's kind: the listed one, or K_OTHER for a name the list does not have. */
static void check_kind(const char *s, void *unused)
{
    (void)unused;
    int i = listed_name(s);
    enum prs_kind want = i < 0 ? K_OTHER : names[i].kind, got = prs_kind_of(s, NULL);
    if (got != want)
        fprintf(stderr, "kind of \"%s\": %d, want %d\n", s, (int)got, (int)want);
    CHECK(got == want);
}

static void test_kind_table(void)
{
    int seen[N_NAMES] = {0};
    int n = 0;
    enum prs_kind kind;
    for (const char *s; (s = prs_kind_name(n, &kind)) != NULL; n++) {
        int i = listed_name(s);
        if (i < 0) {
            fprintf(stderr, "kind table name \"%s\" is not in the test's list\n", s);
            CHECK(0);
            continue;
        }
        CHECK(!seen[i]);
        seen[i] = 1;
        CHECK_INT(kind, names[i].kind);
    }
    CHECK_INT(n, N_NAMES);
    for (int i = 0; i < N_NAMES; i++) {
        const char *s = names[i].name;
        if (!seen[i])
            fprintf(stderr, "\"%s\" is missing from the kind table\n", s);
        CHECK(seen[i]);
        check_kind(s, NULL);
        each_near_miss(s, check_kind, NULL);
    }
    check_kind("", NULL);
    check_kind("\xc3\xa9", NULL);

    /* A link's args make any record a link; a half link does not. */
    prs_args a;
    prs_args_init(&a);
    const char *link = "{\"type\":3,\"from\":\"h-1\",\"to\":\"e-1\"}";
    prs_args_decode(&a, link, (int)strlen(link));
    CHECK_INT(prs_kind_of("anything", &a), K_LINK);
    CHECK_INT(prs_kind_of("forward", &a), K_FORWARD); /* the name decides first */
    const char *half = "{\"type\":3,\"from\":\"h-1\"}";
    prs_args_decode(&a, half, (int)strlen(half));
    CHECK_INT(prs_kind_of("anything", &a), K_OTHER);
    prs_args_free(&a);
}

int main(void)
{
    test_args_table();
    test_kind_table();
    CHECK_DONE();
}
