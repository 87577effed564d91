/* SPDX-License-Identifier: Apache-2.0 */
/*
 * dwrite.c — big output files written with O_DIRECT from a background
 * thread (dwrite.h).
 *
 * Why: a buffered write() of gigabytes costs the kernel a fresh page-cache
 * page per 4 KiB, filled by a copy. On the 2-core VM of docs/benchmarks.md
 * that is 2 s of system CPU per GiB when the guest's free memory has gone
 * back to the host (it does, ~30 s after it was freed), 0.15 s when it has
 * not; O_DIRECT hands our own aligned buffers to the device: 0.12 s per
 * GiB, whatever the memory state, and the trace does not push everything
 * else out of the page cache. An O_DIRECT write waits for the device, so
 * a thread does it while the parser fills the next buffer: NBUF buffers of
 * the size the caller chose (4 MiB, in huge pages, for the trace and
 * profiler.db; 256 KiB for a CSV report); the caller waits only when all
 * of them are queued. Each hand-over that finds the thread asleep costs a
 * futex wake, tens of microseconds on a VM: big buffers, few wakes.
 *
 * Alignment: every buffer but the last is handed over full (a multiple of
 * PRS_DW_ALIGN), so all offsets stay aligned; the last one's unaligned tail is written after
 * turning O_DIRECT off. A filesystem that refuses O_DIRECT (EINVAL at
 * open or at the first write) gets ordinary writes, as does everyone with
 * SERVPROF_PARSE_DIRECT_IO=0 in the environment. No thread (creation
 * failed): the caller writes each buffer itself.
 *
 * Errors: the first failed write's errno is kept; later buffers are
 * dropped (the file is incomplete either way), so the caller never blocks
 * on a failed disk; prs_dw_close() returns that errno.
 *
 * Staging (nothing lost, nothing half-written under a final name): while a
 * parse writes its outputs (prs_dw_stage_begin() .. _commit()), every file
 * opened by prs_dw_open() or prs_dw_fopen() is written as NAME.partial; a
 * clean close queues its rename, a failed one removes it. The commit
 * renames them all at the end of the parse, so a parse killed at any point
 * leaves the previous run's reports as they were (and *.partial files),
 * never a truncated file under a report's name. The queue is the parse's
 * (prs_out's stage), under one lock (encoders' threads close files too,
 * wqueue.c). An output name that is a symlink
 * is followed (its target is replaced, the link stays); one that exists
 * and is not a regular file (a FIFO, /dev/null) is written in place,
 * unstaged: a rename would replace the node (sp_output_target).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "dwrite.h"
#include "fsutil.h"
#include "plog.h"
#include "xalloc.h"

#define NBUF 3

struct prs_dw {
    int fd;
    size_t cap;            /* bytes per buffer */
    int direct;            /* O_DIRECT is on (writer side) */
    int threaded;
    pthread_t th;
    pthread_mutex_t mu;
    pthread_cond_t work;   /* a buffer was queued, or closing */
    pthread_cond_t room;   /* a buffer came back */
    char *buf[NBUF];
    /* Guarded by mu: */
    int queue[NBUF];       /* buffers to write, oldest first (ring) */
    size_t queue_len[NBUF];
    int qhead, qn;
    int spare[NBUF];       /* buffers free to fill */
    int nspare;
    int closing;
    int err;
    /* Caller only: */
    int cur;               /* the buffer being filled */
    char *tmp, *final;     /* staged: written as tmp, renamed to final at the commit */
    prs_dw_stage *stage;   /* the queue of that rename */
    /* Writer only (the caller in unthreaded mode): */
    off_t off;
    int stream;            /* not a regular file (a FIFO, a device): write(), not pwrite() */
};

static void direct_off(prs_dw *w)
{
    int fl = fcntl(w->fd, F_GETFL);
    if (fl >= 0)
        fcntl(w->fd, F_SETFL, fl & ~O_DIRECT);
    w->direct = 0;
}

/* Writes n bytes at the file's end; the errno on failure, else 0. */
static int write_all(prs_dw *w, const char *p, size_t n)
{
    while (n) {
        size_t chunk = n;
        if (w->direct && n % PRS_DW_ALIGN) {
            if (n < PRS_DW_ALIGN)
                direct_off(w); /* the unaligned tail of the last buffer */
            else
                chunk = n - n % PRS_DW_ALIGN;
        }
        ssize_t k = w->stream ? write(w->fd, p, chunk) : pwrite(w->fd, p, chunk, w->off);
        if (k < 0 && errno == EINTR)
            continue;
        if (k < 0 && errno == EINVAL && w->direct) { /* the filesystem refuses O_DIRECT */
            direct_off(w);
            continue;
        }
        if (k <= 0)
            return k < 0 ? errno : EIO;
        p += k;
        n -= (size_t)k;
        w->off += k;
    }
    return 0;
}

static void *writer(void *arg)
{
    prs_dw *w = arg;
    pthread_mutex_lock(&w->mu);
    for (;;) {
        while (!w->qn && !w->closing)
            pthread_cond_wait(&w->work, &w->mu);
        if (!w->qn)
            break;
        int b = w->queue[w->qhead];
        size_t n = w->queue_len[w->qhead];
        int failed = w->err;
        pthread_mutex_unlock(&w->mu);
        int e = failed ? 0 : write_all(w, w->buf[b], n);
        pthread_mutex_lock(&w->mu);
        if (e && !w->err)
            w->err = e;
        w->qhead = (w->qhead + 1) % NBUF;
        w->qn--;
        w->spare[w->nspare++] = b;
        pthread_cond_signal(&w->room);
    }
    pthread_mutex_unlock(&w->mu);
    return NULL;
}

static int direct_wanted(void)
{
    const char *e = getenv("SERVPROF_PARSE_DIRECT_IO");
    return !(e && e[0] == '0');
}

/* A buffer of cap bytes. Whole huge pages when cap is a multiple of
 * 2 MiB: the kernel pins every page of an O_DIRECT write for the device,
 * 512 times fewer pins (and first-touch faults) with huge pages; where
 * they are not available the hint is ignored. */
static char *alloc_buf(size_t cap)
{
    const size_t huge = 2u << 20;
    if (cap % huge)
        return aligned_alloc(PRS_DW_ALIGN, cap);
    char *b = aligned_alloc(huge, cap);
#ifdef MADV_HUGEPAGE
    if (b)
        madvise(b, cap, MADV_HUGEPAGE);
#endif
    return b;
}

/* ---------------------------------------------------------- staging */
typedef struct prs_dw_staged { char *tmp, *final; } staged; /* tmp NULL: remove final */

/* The stages' lock: with --jobs, outputs are closed (and their renames
 * queued) on their encoders' threads (wqueue.c) while the parse thread
 * queues its own. One lock for every stage: taken a few times per file. */
static pthread_mutex_t stage_mu = PTHREAD_MUTEX_INITIALIZER;

static void stage_discard(prs_dw_stage *s);

void prs_dw_stage_begin(prs_dw_stage *s)
{
    pthread_mutex_lock(&stage_mu);
    stage_discard(s);
    s->on = 1;
    pthread_mutex_unlock(&stage_mu);
}

int prs_dw_remove(const char *path)
{
    struct stat st;
    if (lstat(path, &st) != 0 || !S_ISREG(st.st_mode))
        return -1; /* a FIFO, a device, a link the user made: not ours to remove */
    return unlink(path);
}

void prs_dw_stage_add(prs_dw_stage *s, const char *tmp, const char *final)
{
    if (!s || !s->on) { /* no parse is staging its outputs: done at once */
        if (!tmp)
            prs_dw_remove(final);
        else if (rename(tmp, final) != 0)
            prs_log(PRS_ERROR, "cannot rename %s to %s: %s", tmp, final, strerror(errno));
        return;
    }
    pthread_mutex_lock(&stage_mu);
    if (s->n == s->cap) {
        s->cap = s->cap ? s->cap * 2 : 32;
        s->q = prs_xrealloc(s->q, (size_t)s->cap * sizeof *s->q);
    }
    s->q[s->n].tmp = tmp ? prs_xstrdup(tmp) : NULL;
    s->q[s->n].final = prs_xstrdup(final);
    s->n++;
    pthread_mutex_unlock(&stage_mu);
}

static int has_nodes(const char *dir, int depth, char *found, size_t cap)
{
    DIR *d = opendir(dir);
    if (!d)
        return 0; /* not there yet: nothing in it */
    int hit = 0;
    struct dirent *e;
    while (!hit && (e = readdir(d))) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
            continue;
        char path[PATH_MAX], target[PATH_MAX];
        if (snprintf(path, sizeof path, "%s/%s", dir, e->d_name) >= (int)sizeof path)
            continue;
        int how = sp_output_target(path, target, sizeof target);
        if (how == SP_OUT_IN_PLACE) {
            snprintf(found, cap, "%s", path);
            hit = 1;
        } else if (how == -EISDIR && depth > 0) {
            hit = has_nodes(path, depth - 1, found, cap);
        }
    }
    closedir(d);
    return hit;
}

int prs_dw_dir_has_nodes(const char *dir, char *found, size_t cap)
{
    return dir && has_nodes(dir, 1, found, cap);
}

static void stage_end(prs_dw_stage *s)
{
    for (int i = 0; i < s->n; i++) {
        free(s->q[i].tmp);
        free(s->q[i].final);
    }
    free(s->q);
    s->q = NULL;
    s->n = s->cap = 0;
    s->on = 0;
}

int prs_dw_stage_commit(prs_dw_stage *s)
{
    int failed = 0;
    pthread_mutex_lock(&stage_mu);
    for (int i = 0; i < s->n; i++) {
        staged *q = &s->q[i];
        if (!q->tmp) {
            if (prs_dw_remove(q->final) == 0)
                prs_log(PRS_INFO, "removed %s of an earlier run", q->final);
        } else if (rename(q->tmp, q->final) != 0) {
            prs_log(PRS_ERROR, "cannot rename %s to %s: %s; that output is left under the first name", q->tmp,
                    q->final, strerror(errno));
            failed = 1;
        }
    }
    stage_end(s);
    pthread_mutex_unlock(&stage_mu);
    return failed ? -1 : 0;
}

static void stage_discard(prs_dw_stage *s)
{
    for (int i = 0; i < s->n; i++)
        if (s->q[i].tmp)
            unlink(s->q[i].tmp);
    stage_end(s);
}

void prs_dw_stage_discard(prs_dw_stage *s)
{
    pthread_mutex_lock(&stage_mu);
    stage_discard(s);
    pthread_mutex_unlock(&stage_mu);
}

static prs_dw *open_file(const char *path, size_t cap, int fresh);

prs_dw *prs_dw_open(prs_dw_stage *stage, const char *path, size_t cap)
{
    if (!stage || !stage->on)
        return open_file(path, cap, 0);
    char target[PATH_MAX];
    int how = sp_output_target(path, target, sizeof target);
    if (how < 0) {
        errno = -how;
        return NULL;
    }
    if (how == SP_OUT_IN_PLACE) /* a FIFO, a device: written as it is */
        return open_file(target, cap, 0);
    size_t n = strlen(target) + sizeof PRS_DW_PARTIAL;
    char *tmp = malloc(n);
    if (!tmp) {
        errno = ENOMEM;
        return NULL;
    }
    snprintf(tmp, n, "%s" PRS_DW_PARTIAL, target);
    prs_dw *w = open_file(tmp, cap, 1);
    if (!w) {
        int e = errno;
        free(tmp);
        errno = e;
        return NULL;
    }
    w->tmp = tmp;
    w->final = prs_xstrdup(target);
    w->stage = stage;
    return w;
}

prs_dw *prs_dw_open_unstaged(const char *path, size_t cap) { return open_file(path, cap, 0); }

/* fresh: path is our own temp name (NAME.partial). In a folder that others
 * can write (sp_output_name_trusted) it is made anew: a stale one removed,
 * the new one created with O_EXCL | O_NOFOLLOW, so a link or a file
 * planted under that known name is never written through. In the user's
 * own folder, and for a path of the user's (a FIFO, a device), the name is
 * opened as it is. */
static prs_dw *open_file(const char *path, size_t cap, int fresh)
{
    struct stat st; /* O_DIRECT on a FIFO is a "packet" pipe: files only */
    fresh = fresh && !sp_output_name_trusted(path);
    int direct = direct_wanted() && !(stat(path, &st) == 0 && !S_ISREG(st.st_mode));
    int how = fresh ? O_EXCL | O_NOFOLLOW : O_TRUNC;
    if (fresh && unlink(path) != 0 && errno != ENOENT)
        return NULL;
    int fd = open(path, O_WRONLY | O_CREAT | how | O_CLOEXEC | (direct ? O_DIRECT : 0), 0644);
    if (fd < 0 && direct && errno == EINVAL) {
        direct = 0;
        fd = open(path, O_WRONLY | O_CREAT | how | O_CLOEXEC, 0644);
    }
    if (fd < 0)
        return NULL;
    prs_dw *w = calloc(1, sizeof *w);
    if (!w) {
        close(fd);
        errno = ENOMEM;
        return NULL;
    }
    w->fd = fd;
    w->cap = cap;
    w->direct = direct;
    w->stream = fstat(fd, &st) == 0 && !S_ISREG(st.st_mode);
    for (int i = 0; i < NBUF; i++) {
        w->buf[i] = alloc_buf(cap);
        if (!w->buf[i]) {
            for (int j = 0; j < i; j++)
                free(w->buf[j]);
            close(fd);
            free(w);
            errno = ENOMEM;
            return NULL;
        }
    }
    w->cur = 0;
    for (int i = 1; i < NBUF; i++)
        w->spare[w->nspare++] = i;
    pthread_mutex_init(&w->mu, NULL);
    pthread_cond_init(&w->work, NULL);
    pthread_cond_init(&w->room, NULL);
    w->threaded = pthread_create(&w->th, NULL, writer, w) == 0;
    return w;
}

char *prs_dw_buf(prs_dw *w) { return w->buf[w->cur]; }

/* Queues the current buffer with n bytes and takes a spare one. */
static void hand_over(prs_dw *w, size_t n)
{
    if (!w->threaded) {
        int e = w->err ? 0 : write_all(w, w->buf[w->cur], n);
        if (e && !w->err)
            w->err = e;
        return; /* the same buffer is filled again */
    }
    pthread_mutex_lock(&w->mu);
    int tail = (w->qhead + w->qn) % NBUF;
    w->queue[tail] = w->cur;
    w->queue_len[tail] = n;
    w->qn++;
    pthread_cond_signal(&w->work);
    while (!w->nspare)
        pthread_cond_wait(&w->room, &w->mu);
    w->cur = w->spare[--w->nspare];
    pthread_mutex_unlock(&w->mu);
}

char *prs_dw_submit(prs_dw *w)
{
    hand_over(w, w->cap);
    return w->buf[w->cur];
}

int prs_dw_error(prs_dw *w)
{
    if (!w->threaded)
        return w->err;
    pthread_mutex_lock(&w->mu);
    int e = w->err;
    pthread_mutex_unlock(&w->mu);
    return e;
}

int prs_dw_close(prs_dw *w, size_t n)
{
    if (n)
        hand_over(w, n);
    if (w->threaded) {
        pthread_mutex_lock(&w->mu);
        w->closing = 1;
        pthread_cond_signal(&w->work);
        pthread_mutex_unlock(&w->mu);
        pthread_join(w->th, NULL);
    }
    int e = w->err;
    if (close(w->fd) != 0 && !e)
        e = errno;
    pthread_mutex_destroy(&w->mu);
    pthread_cond_destroy(&w->work);
    pthread_cond_destroy(&w->room);
    for (int i = 0; i < NBUF; i++)
        free(w->buf[i]);
    if (w->tmp) {
        if (e)
            unlink(w->tmp); /* half a file is no output */
        else
            prs_dw_stage_add(w->stage, w->tmp, w->final);
    }
    free(w->tmp);
    free(w->final);
    free(w);
    return e;
}

/* prs_dw_fopen: the cookie is the writer and the fill of its buffer. */
#define CSV_BUF (256u << 10)
typedef struct dw_cookie { prs_dw *w; char *b; size_t n; } dw_cookie;

static ssize_t cookie_write(void *c, const char *p, size_t n)
{
    dw_cookie *k = c;
    size_t left = n;
    while (left) {
        size_t room = CSV_BUF - k->n, take = left < room ? left : room;
        memcpy(k->b + k->n, p, take);
        k->n += take;
        p += take;
        left -= take;
        if (k->n == CSV_BUF) {
            k->b = prs_dw_submit(k->w);
            k->n = 0;
        }
    }
    return (ssize_t)n;
}

static int cookie_close(void *c)
{
    dw_cookie *k = c;
    int e = prs_dw_close(k->w, k->n);
    free(k);
    if (e) {
        errno = e;
        return -1;
    }
    return 0;
}

FILE *prs_dw_fopen(prs_dw_stage *stage, const char *path)
{
    dw_cookie *k = calloc(1, sizeof *k);
    if (!k) {
        errno = ENOMEM;
        return NULL;
    }
    k->w = prs_dw_open(stage, path, CSV_BUF);
    if (!k->w) {
        int e = errno;
        free(k);
        errno = e;
        return NULL;
    }
    k->b = prs_dw_buf(k->w);
    cookie_io_functions_t io = {.read = NULL, .write = cookie_write, .seek = NULL, .close = cookie_close};
    FILE *f = fopencookie(k, "w", io);
    if (!f) {
        prs_dw_close(k->w, 0);
        free(k);
        errno = ENOMEM;
    }
    return f;
}
