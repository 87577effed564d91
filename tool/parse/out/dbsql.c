/* SPDX-License-Identifier: Apache-2.0 */
/*
 * dbsql.c — profiler.db through SQLite's own INSERT, on a thread of its
 * own (dbsql.h), so that the database work overlaps the reports' and the
 * trace's instead of adding to them.
 *
 * Design. The caller serialises each request into 1 MiB blocks (a CREATE
 * TABLE, a row: its values copied, texts included); a full block goes on a
 * queue of at most QUEUE_MAX blocks (the caller waits when the thread is
 * that far behind, so memory stays bounded) and the thread runs the blocks
 * in order through one prepared INSERT per table, all in one transaction
 * with the journal off and 64 KiB pages; the views and indexes come last,
 * then COMMIT. SQLite applies every affinity and storage rule itself, so
 * the file is what SQLite makes of the rows — the reference the page
 * writer (btwrite.c) is tested against.
 *
 * Failure: the thread's first error is kept (msg, then `failed`); it then
 * drops the blocks still coming, so the caller never waits on a writer
 * that stopped, and prs_dbsql_finish reports it.
 *
 * Ownership: mu guards the queue (head, tail, nq, done); cur belongs to the
 * caller; db, ins and ntab to the thread until it is joined.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dbsql.h"

#define BLOCK_BYTES (1u << 20)
#define QUEUE_MAX 8

typedef struct block {
    struct block *next;
    size_t n, cap;
    uint8_t data[];
} block;

enum { MSG_TABLE = 'T', MSG_ROW = 'R', MSG_SQL = 'S' };

struct prs_dbsql {
    pthread_t th;
    int started;
    pthread_mutex_t mu;
    pthread_cond_t can_put, can_get;
    block *head, *tail;   /* full blocks, oldest first (mu) */
    int nq;               /* how many (mu) */
    int done;             /* nothing more will come (mu) */
    block *cur;           /* the block being filled (caller) */
    int ntables;          /* tables queued (caller) */
    sqlite3 *db;          /* the thread's until joined */
    sqlite3_stmt **ins;   /* INSERT per table (thread) */
    int ntab;
    _Atomic int failed;
    char msg[256];        /* written before failed is set */
};

static void thread_fail(prs_dbsql *q, const char *what)
{
    if (atomic_load(&q->failed))
        return;
    snprintf(q->msg, sizeof q->msg, "%s: %s", what, q->db ? sqlite3_errmsg(q->db) : "?");
    atomic_store(&q->failed, 1);
}

/* ------------------------------------------------------------ thread */

static uint32_t get_u32(const uint8_t **p)
{
    uint32_t v;
    memcpy(&v, *p, 4);
    *p += 4;
    return v;
}

static void run_table(prs_dbsql *q, const uint8_t **p)
{
    uint32_t ls = get_u32(p);
    const char *sql = (const char *)*p;
    *p += ls + 1;
    uint32_t ln = get_u32(p);
    const char *name = (const char *)*p;
    *p += ln + 1;
    uint32_t ncols = get_u32(p);
    sqlite3_stmt **ni = realloc(q->ins, (size_t)(q->ntab + 1) * sizeof *ni);
    if (!ni) {
        thread_fail(q, "out of memory");
        return;
    }
    q->ins = ni;
    q->ins[q->ntab] = NULL;
    if (sqlite3_exec(q->db, sql, NULL, NULL, NULL) != SQLITE_OK) {
        thread_fail(q, "creating a table");
        return;
    }
    size_t cap = 64 + 2 * ln + 3 * (size_t)ncols;
    char *ins = malloc(cap);
    if (!ins) {
        thread_fail(q, "out of memory");
        return;
    }
    char *qn = sqlite3_mprintf("INSERT INTO \"%w\" VALUES (", name);
    size_t at = (size_t)snprintf(ins, cap, "%s", qn ? qn : "");
    sqlite3_free(qn);
    for (uint32_t i = 0; i < ncols; i++)
        at += (size_t)snprintf(ins + at, cap - at, i ? ",?" : "?");
    snprintf(ins + at, cap - at, ")");
    if (sqlite3_prepare_v3(q->db, ins, -1, SQLITE_PREPARE_PERSISTENT, &q->ins[q->ntab], NULL) != SQLITE_OK)
        thread_fail(q, "preparing an insert");
    free(ins);
    q->ntab++;
}

static void run_row(prs_dbsql *q, const uint8_t **p)
{
    uint32_t tab = get_u32(p), ncols = get_u32(p);
    sqlite3_stmt *st = tab < (uint32_t)q->ntab ? q->ins[tab] : NULL;
    for (uint32_t i = 0; i < ncols; i++) {
        uint8_t kind = *(*p)++;
        int64_t iv;
        double d;
        switch (kind) {
        case PRS_INT:
            memcpy(&iv, *p, 8);
            *p += 8;
            if (st)
                sqlite3_bind_int64(st, (int)i + 1, iv);
            break;
        case PRS_REAL:
        case PRS_MS:
            memcpy(&d, *p, 8);
            *p += 8;
            if (st)
                sqlite3_bind_double(st, (int)i + 1, d);
            break;
        case PRS_TEXT: {
            uint32_t n = get_u32(p);
            if (st)
                sqlite3_bind_text(st, (int)i + 1, (const char *)*p, (int)n, SQLITE_STATIC);
            *p += n;
            break;
        }
        default:
            if (st)
                sqlite3_bind_null(st, (int)i + 1);
            break;
        }
    }
    if (!st)
        return;
    if (sqlite3_step(st) != SQLITE_DONE)
        thread_fail(q, "inserting a row");
    sqlite3_reset(st);
}

static void run_block(prs_dbsql *q, const block *b)
{
    const uint8_t *p = b->data, *end = b->data + b->n;
    while (p < end && !atomic_load(&q->failed)) {
        uint8_t m = *p++;
        if (m == MSG_TABLE) {
            run_table(q, &p);
        } else if (m == MSG_ROW) {
            run_row(q, &p);
        } else {
            uint32_t n = get_u32(&p);
            if (sqlite3_exec(q->db, (const char *)p, NULL, NULL, NULL) != SQLITE_OK)
                thread_fail(q, "creating a view or an index");
            p += n + 1;
        }
    }
}

static void *thread_main(void *arg)
{
    prs_dbsql *q = arg;
    for (;;) {
        pthread_mutex_lock(&q->mu);
        while (!q->head && !q->done)
            pthread_cond_wait(&q->can_get, &q->mu);
        block *b = q->head;
        if (b) {
            q->head = b->next;
            if (!q->head)
                q->tail = NULL;
            q->nq--;
            pthread_cond_signal(&q->can_put);
        }
        pthread_mutex_unlock(&q->mu);
        if (!b)
            break;
        if (!atomic_load(&q->failed))
            run_block(q, b);
        free(b);
    }
    return NULL;
}

/* ------------------------------------------------------------ caller */

static void push(prs_dbsql *q)
{
    block *b = q->cur;
    q->cur = NULL;
    if (!b)
        return;
    pthread_mutex_lock(&q->mu);
    while (q->nq >= QUEUE_MAX)
        pthread_cond_wait(&q->can_put, &q->mu);
    b->next = NULL;
    if (q->tail)
        q->tail->next = b;
    else
        q->head = b;
    q->tail = b;
    q->nq++;
    pthread_cond_signal(&q->can_get);
    pthread_mutex_unlock(&q->mu);
}

/* Room for need more bytes in the current block; NULL when out of memory
 * (the writer is then failed). */
static uint8_t *room(prs_dbsql *q, size_t need)
{
    if (q->cur && q->cur->n + need > q->cur->cap)
        push(q);
    if (!q->cur) {
        size_t cap = need > BLOCK_BYTES ? need : BLOCK_BYTES;
        q->cur = malloc(sizeof *q->cur + cap);
        if (!q->cur) {
            if (!atomic_load(&q->failed)) {
                snprintf(q->msg, sizeof q->msg, "out of memory for a row");
                atomic_store(&q->failed, 1);
            }
            return NULL;
        }
        q->cur->n = 0;
        q->cur->cap = cap;
    }
    return q->cur->data + q->cur->n;
}

static uint8_t *put_u32(uint8_t *p, uint32_t v)
{
    memcpy(p, &v, 4);
    return p + 4;
}

static uint8_t *put_str(uint8_t *p, const char *s, size_t n)
{
    p = put_u32(p, (uint32_t)n);
    memcpy(p, s, n);
    p[n] = 0;
    return p + n + 1;
}

prs_dbsql *prs_dbsql_open(const char *path, char *why, size_t cap)
{
    prs_dbsql *q = calloc(1, sizeof *q);
    if (!q) {
        snprintf(why, cap, "out of memory");
        return NULL;
    }
    pthread_mutex_init(&q->mu, NULL);
    pthread_cond_init(&q->can_put, NULL);
    pthread_cond_init(&q->can_get, NULL);
    remove(path);
    if (sqlite3_open_v2(path, &q->db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, NULL) != SQLITE_OK ||
        sqlite3_exec(q->db, "PRAGMA page_size=65536; PRAGMA journal_mode=OFF; PRAGMA synchronous=OFF; "
                            "PRAGMA locking_mode=EXCLUSIVE; PRAGMA temp_store=MEMORY; BEGIN",
                     NULL, NULL, NULL) != SQLITE_OK) {
        snprintf(why, cap, "%s", q->db ? sqlite3_errmsg(q->db) : "cannot open it");
        prs_dbsql_free(q);
        return NULL;
    }
    if (pthread_create(&q->th, NULL, thread_main, q) != 0) {
        snprintf(why, cap, "cannot start its thread");
        prs_dbsql_free(q);
        return NULL;
    }
    q->started = 1;
    return q;
}

int prs_dbsql_table(prs_dbsql *q, const char *create_sql, const char *name, int ncols)
{
    size_t ls = strlen(create_sql), ln = strlen(name);
    uint8_t *p = room(q, 1 + 4 + ls + 1 + 4 + ln + 1 + 4);
    if (!p)
        return -1;
    uint8_t *s = p;
    *p++ = MSG_TABLE;
    p = put_str(p, create_sql, ls);
    p = put_str(p, name, ln);
    p = put_u32(p, (uint32_t)ncols);
    q->cur->n += (size_t)(p - s);
    return q->ntables++;
}

void prs_dbsql_row(prs_dbsql *q, int tab, const prs_val *v, int ncols)
{
    size_t need = 1 + 8;
    for (int i = 0; i < ncols; i++)
        need += 1 + (v[i].kind == PRS_TEXT ? 4 + (size_t)v[i].n : 8);
    if (atomic_load(&q->failed))
        return;
    uint8_t *p = room(q, need);
    if (!p)
        return;
    uint8_t *s = p;
    *p++ = MSG_ROW;
    p = put_u32(p, (uint32_t)tab);
    p = put_u32(p, (uint32_t)ncols);
    for (int i = 0; i < ncols; i++) {
        *p++ = (uint8_t)v[i].kind;
        switch (v[i].kind) {
        case PRS_INT: memcpy(p, &v[i].i, 8); p += 8; break;
        case PRS_REAL:
        case PRS_MS: memcpy(p, &v[i].d, 8); p += 8; break;
        case PRS_TEXT:
            p = put_u32(p, (uint32_t)v[i].n);
            memcpy(p, v[i].s, (size_t)v[i].n);
            p += v[i].n;
            break;
        default: break;
        }
    }
    q->cur->n += (size_t)(p - s);
}

int prs_dbsql_finish(prs_dbsql *q, char **sql, int n, char *why, size_t cap)
{
    for (int i = 0; i < n; i++) {
        size_t l = strlen(sql[i]);
        uint8_t *p = room(q, 1 + 4 + l + 1);
        if (!p)
            break;
        uint8_t *s = p;
        *p++ = MSG_SQL;
        p = put_str(p, sql[i], l);
        q->cur->n += (size_t)(p - s);
    }
    push(q);
    pthread_mutex_lock(&q->mu);
    q->done = 1;
    pthread_cond_signal(&q->can_get);
    pthread_mutex_unlock(&q->mu);
    pthread_join(q->th, NULL);
    q->started = 0;
    for (int i = 0; i < q->ntab; i++)
        sqlite3_finalize(q->ins[i]);
    q->ntab = 0;
    if (!atomic_load(&q->failed) && sqlite3_exec(q->db, "COMMIT", NULL, NULL, NULL) != SQLITE_OK)
        thread_fail(q, "committing");
    if (sqlite3_close(q->db) != SQLITE_OK && !atomic_load(&q->failed))
        thread_fail(q, "closing");
    q->db = NULL;
    if (atomic_load(&q->failed)) {
        snprintf(why, cap, "%s", q->msg);
        return -1;
    }
    return 0;
}

const char *prs_dbsql_error(prs_dbsql *q) { return atomic_load(&q->failed) ? q->msg : ""; }

void prs_dbsql_free(prs_dbsql *q)
{
    if (!q)
        return;
    if (q->started) {
        free(q->cur);
        q->cur = NULL;
        atomic_store(&q->failed, 1); /* the thread drops what is queued */
        pthread_mutex_lock(&q->mu);
        q->done = 1;
        pthread_cond_signal(&q->can_get);
        pthread_mutex_unlock(&q->mu);
        pthread_join(q->th, NULL);
    }
    for (int i = 0; i < q->ntab; i++)
        sqlite3_finalize(q->ins[i]);
    free(q->ins);
    free(q->cur);
    sqlite3_close(q->db);
    pthread_mutex_destroy(&q->mu);
    pthread_cond_destroy(&q->can_put);
    pthread_cond_destroy(&q->can_get);
    free(q);
}

int prs_db_writer_is_sqlite(void)
{
    const char *e = getenv("SERVPROF_PARSE_DB_WRITER");
    return e && strcmp(e, "sqlite") == 0;
}
