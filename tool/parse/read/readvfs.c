/* SPDX-License-Identifier: Apache-2.0 */
/*
 * readvfs.c — a read-ahead layer under SQLite for the raw stores.
 *
 * A store is read in rowid order (twice: the timestamp pass, then the rows;
 * see storeread.c), and SQLite asks the OS for one page at a time: a 2 GB store
 * with 4 KiB pages costs a million pread() calls, and on the VMs we run on a
 * system call costs microseconds (perf put a visible share of a full parse
 * in pread: docs/benchmarks.md, "Figures behind design comments"). This
 * VFS wraps the default one and, for main database files opened read-only,
 * serves reads from a 128 KiB chunk read in one call; every other file
 * (journal, WAL, -shm, and anything opened for writing) goes straight
 * through.
 *
 * Consistency: the chunk is dropped whenever the file's lock changes
 * (xLock / xUnlock). While a reader holds its SHARED lock, a rollback-mode
 * writer cannot change the file, and in WAL mode a checkpoint never copies
 * into the database file a frame newer than an active reader's snapshot —
 * so the pages this reader takes from the database file (those not in its
 * WAL snapshot) do not change while it holds its read transaction. Reads
 * that reach the end of the file go through, so SQLite's short-read
 * handling (zero fill, SQLITE_IOERR_SHORT_READ) is unchanged.
 *
 * Memory: one chunk per open store (128 KiB), allocated on first read.
 *
 * rawscan.c reads the `slice` pages itself, through the wrapped file
 * (prs_readvfs_main_file): SQLite's own descriptor, so that closing it can
 * never drop the POSIX locks SQLite holds on the file. While it does,
 * SQLite's own reads of that file go unbuffered (no chunk held per store);
 * a store handed back to SQLite turns the chunk on again.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "readvfs.h"

#define CHUNK (128 * 1024)

typedef struct ra_file {
    sqlite3_file base;     /* must be first: SQLite sees this */
    int buffered;          /* main database opened read-only */
    unsigned char *buf;    /* CHUNK bytes, or NULL */
    sqlite3_int64 off;     /* file offset of buf[0] */
    int len;               /* valid bytes in buf; 0: nothing cached */
    sqlite3_file *real;    /* the wrapped file, placed right after this struct */
} ra_file;

static sqlite3_vfs ra_vfs;

static sqlite3_vfs *base_vfs(void) { return (sqlite3_vfs *)ra_vfs.pAppData; }

static int ra_close(sqlite3_file *f)
{
    ra_file *p = (ra_file *)f;
    free(p->buf);
    p->buf = NULL;
    return p->real->pMethods ? p->real->pMethods->xClose(p->real) : SQLITE_OK;
}

static int ra_read(sqlite3_file *f, void *out, int amt, sqlite3_int64 ofs)
{
    ra_file *p = (ra_file *)f;
    if (!p->buffered || amt > CHUNK)
        return p->real->pMethods->xRead(p->real, out, amt, ofs);
    if (p->len && ofs >= p->off && ofs + amt <= p->off + p->len) {
        memcpy(out, p->buf + (ofs - p->off), (size_t)amt);
        return SQLITE_OK;
    }
    sqlite3_int64 size;
    if (p->real->pMethods->xFileSize(p->real, &size) != SQLITE_OK || ofs + amt > size)
        return p->real->pMethods->xRead(p->real, out, amt, ofs); /* short read: SQLite's own handling */
    if (!p->buf && !(p->buf = malloc(CHUNK)))
        return p->real->pMethods->xRead(p->real, out, amt, ofs);
    sqlite3_int64 start = ofs - ofs % CHUNK;
    if (ofs + amt > start + CHUNK)
        start = ofs; /* straddles a chunk boundary: start the chunk here */
    int n = size - start < CHUNK ? (int)(size - start) : CHUNK;
    p->len = 0;
    int rc = p->real->pMethods->xRead(p->real, p->buf, n, start);
    if (rc != SQLITE_OK)
        return p->real->pMethods->xRead(p->real, out, amt, ofs);
    p->off = start;
    p->len = n;
    memcpy(out, p->buf + (ofs - start), (size_t)amt);
    return SQLITE_OK;
}

static int ra_write(sqlite3_file *f, const void *b, int amt, sqlite3_int64 ofs)
{
    ra_file *p = (ra_file *)f;
    p->len = 0;
    return p->real->pMethods->xWrite(p->real, b, amt, ofs);
}

static int ra_truncate(sqlite3_file *f, sqlite3_int64 size)
{
    ra_file *p = (ra_file *)f;
    p->len = 0;
    return p->real->pMethods->xTruncate(p->real, size);
}

static int ra_sync(sqlite3_file *f, int flags) { return ((ra_file *)f)->real->pMethods->xSync(((ra_file *)f)->real, flags); }
static int ra_size(sqlite3_file *f, sqlite3_int64 *s) { return ((ra_file *)f)->real->pMethods->xFileSize(((ra_file *)f)->real, s); }

/* A lock change may mean another process changed the file: drop the chunk. */
static int ra_lock(sqlite3_file *f, int l)
{
    ra_file *p = (ra_file *)f;
    p->len = 0;
    return p->real->pMethods->xLock(p->real, l);
}

static int ra_unlock(sqlite3_file *f, int l)
{
    ra_file *p = (ra_file *)f;
    p->len = 0;
    return p->real->pMethods->xUnlock(p->real, l);
}

static int ra_reserved(sqlite3_file *f, int *out) { return ((ra_file *)f)->real->pMethods->xCheckReservedLock(((ra_file *)f)->real, out); }
static int ra_fcntl(sqlite3_file *f, int op, void *arg) { return ((ra_file *)f)->real->pMethods->xFileControl(((ra_file *)f)->real, op, arg); }
static int ra_sector(sqlite3_file *f) { return ((ra_file *)f)->real->pMethods->xSectorSize(((ra_file *)f)->real); }
static int ra_devchar(sqlite3_file *f) { return ((ra_file *)f)->real->pMethods->xDeviceCharacteristics(((ra_file *)f)->real); }

static int ra_shm_map(sqlite3_file *f, int pg, int sz, int ext, void volatile **pp)
{
    sqlite3_file *r = ((ra_file *)f)->real;
    return r->pMethods->iVersion >= 2 ? r->pMethods->xShmMap(r, pg, sz, ext, pp) : SQLITE_IOERR;
}

static int ra_shm_lock(sqlite3_file *f, int ofs, int n, int flags)
{
    sqlite3_file *r = ((ra_file *)f)->real;
    return r->pMethods->iVersion >= 2 ? r->pMethods->xShmLock(r, ofs, n, flags) : SQLITE_IOERR;
}

static void ra_shm_barrier(sqlite3_file *f)
{
    sqlite3_file *r = ((ra_file *)f)->real;
    if (r->pMethods->iVersion >= 2)
        r->pMethods->xShmBarrier(r);
}

static int ra_shm_unmap(sqlite3_file *f, int del)
{
    sqlite3_file *r = ((ra_file *)f)->real;
    return r->pMethods->iVersion >= 2 ? r->pMethods->xShmUnmap(r, del) : SQLITE_OK;
}

/* No memory-mapped pages: they would bypass the chunk and count in RSS. */
static int ra_fetch(sqlite3_file *f, sqlite3_int64 ofs, int amt, void **pp)
{
    (void)f, (void)ofs, (void)amt;
    *pp = NULL;
    return SQLITE_OK;
}

static int ra_unfetch(sqlite3_file *f, sqlite3_int64 ofs, void *p)
{
    (void)f, (void)ofs, (void)p;
    return SQLITE_OK;
}

static const sqlite3_io_methods ra_methods = {
    3, ra_close, ra_read, ra_write, ra_truncate, ra_sync, ra_size, ra_lock, ra_unlock, ra_reserved,
    ra_fcntl, ra_sector, ra_devchar, ra_shm_map, ra_shm_lock, ra_shm_barrier, ra_shm_unmap, ra_fetch,
    ra_unfetch,
};

static int ra_open(sqlite3_vfs *v, sqlite3_filename name, sqlite3_file *f, int flags, int *out_flags)
{
    (void)v;
    ra_file *p = (ra_file *)f;
    memset(p, 0, sizeof *p);
    p->real = (sqlite3_file *)(p + 1);
    int rc = base_vfs()->xOpen(base_vfs(), name, p->real, flags, out_flags);
    if (rc != SQLITE_OK) {
        /* SQLite calls xClose only when pMethods is set: close the real file
         * here if it was left half open. */
        if (p->real->pMethods)
            p->real->pMethods->xClose(p->real);
        p->base.pMethods = NULL;
        return rc;
    }
    p->buffered = (flags & SQLITE_OPEN_MAIN_DB) && (flags & SQLITE_OPEN_READONLY);
    p->base.pMethods = &ra_methods;
    return SQLITE_OK;
}

static int ra_delete(sqlite3_vfs *v, const char *n, int sync) { (void)v; return base_vfs()->xDelete(base_vfs(), n, sync); }
static int ra_access(sqlite3_vfs *v, const char *n, int fl, int *out) { (void)v; return base_vfs()->xAccess(base_vfs(), n, fl, out); }
static int ra_fullpath(sqlite3_vfs *v, const char *n, int no, char *out) { (void)v; return base_vfs()->xFullPathname(base_vfs(), n, no, out); }
static void *ra_dlopen(sqlite3_vfs *v, const char *n) { (void)v; return base_vfs()->xDlOpen(base_vfs(), n); }
static void ra_dlerror(sqlite3_vfs *v, int n, char *m) { (void)v; base_vfs()->xDlError(base_vfs(), n, m); }
static void (*ra_dlsym(sqlite3_vfs *v, void *h, const char *s))(void) { (void)v; return base_vfs()->xDlSym(base_vfs(), h, s); }
static void ra_dlclose(sqlite3_vfs *v, void *h) { (void)v; base_vfs()->xDlClose(base_vfs(), h); }
static int ra_random(sqlite3_vfs *v, int n, char *out) { (void)v; return base_vfs()->xRandomness(base_vfs(), n, out); }
static int ra_sleep(sqlite3_vfs *v, int us) { (void)v; return base_vfs()->xSleep(base_vfs(), us); }
static int ra_time(sqlite3_vfs *v, double *t) { (void)v; return base_vfs()->xCurrentTime(base_vfs(), t); }
static int ra_lasterr(sqlite3_vfs *v, int n, char *m) { (void)v; return base_vfs()->xGetLastError(base_vfs(), n, m); }
static int ra_time64(sqlite3_vfs *v, sqlite3_int64 *t) { (void)v; return base_vfs()->xCurrentTimeInt64(base_vfs(), t); }

static int registered; /* written once, under `once` */
static pthread_once_t once = PTHREAD_ONCE_INIT;

static void do_register(void)
{
    sqlite3_vfs *b = sqlite3_vfs_find(NULL);
    if (!b || b->iVersion < 2)
        return;
    ra_vfs = (sqlite3_vfs){
        .iVersion = 2, .szOsFile = (int)sizeof(ra_file) + b->szOsFile, .mxPathname = b->mxPathname,
        .zName = "servprof-readahead", .pAppData = b, .xOpen = ra_open, .xDelete = ra_delete,
        .xAccess = ra_access, .xFullPathname = ra_fullpath, .xDlOpen = ra_dlopen, .xDlError = ra_dlerror,
        .xDlSym = ra_dlsym, .xDlClose = ra_dlclose, .xRandomness = ra_random, .xSleep = ra_sleep,
        .xCurrentTime = ra_time, .xGetLastError = ra_lasterr, .xCurrentTimeInt64 = ra_time64,
    };
    registered = sqlite3_vfs_register(&ra_vfs, 0) == SQLITE_OK;
}

const char *prs_readvfs_name(void)
{
    pthread_once(&once, do_register);
    return registered ? ra_vfs.zName : NULL;
}

sqlite3_file *prs_readvfs_main_file(sqlite3 *db, int buffered)
{
    sqlite3_file *f = NULL;
    if (sqlite3_file_control(db, "main", SQLITE_FCNTL_FILE_POINTER, &f) != SQLITE_OK || !f || !f->pMethods)
        return NULL;
    if (f->pMethods == &ra_methods) {
        ra_file *p = (ra_file *)f;
        p->buffered = buffered;
        if (!buffered) { /* SQLite reads a few pages at most while the scan runs: no chunk */
            free(p->buf);
            p->buf = NULL;
            p->len = 0;
        }
        return p->real->pMethods ? p->real : NULL;
    }
    return f;
}
