/* SPDX-License-Identifier: Apache-2.0 */
/*
 * metrics_file.c — one process's live metrics in a memory-mapped file.
 *
 * DESIGN
 * The Prometheus client libraries' multiprocess pattern: every process
 * writes its own file under one folder, and one exporter reads them all.
 * A file is a 64-byte header and sp_mdata stored as 64-bit words. The
 * writer (the thread that aggregates, ~10 times a second) publishes a whole
 * sp_mdata under a sequence lock: seq goes odd, every word is stored, seq
 * goes even. A reader copies the words and retries (bounded) when seq was
 * odd or moved, so it never sees half a histogram. Words are stored with
 * release and loaded with acquire (plain moves on x86), the seqlock without
 * fences (Boehm, "Can seqlocks get along with programming language memory
 * models?"): readers in the same process (the tests) are race-free by the
 * C11 model too, and ThreadSanitizer, which does not model fences, agrees.
 *
 * Liveness: the process holds an exclusive flock() on its file for as long
 * as it runs; the kernel drops it when the process dies, however it dies. A
 * reader whose shared non-blocking flock succeeds knows the writer is gone
 * (pid reuse cannot fool it, unlike kill(pid, 0)). The name carries the pid
 * and the start time in ns, so two lives of one pid never share a file. A
 * fork child unmaps and closes its copy without writing: the lock belongs
 * to the open file, which the parent still holds.
 *
 * The file is created under a temporary name, sized with posix_fallocate
 * (a full disk fails here, with a message, rather than with SIGBUS on a
 * later store), locked, and renamed into place, so a reader never sees a
 * file without header.
 */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "fsutil.h"
#include "metrics.h"

#define MAGIC "SPMETRC1"
#define WORDS (sizeof(sp_mdata) / 8)
/* How long a reader waits for a publish under way to end: a writer
 * preempted with seq odd (a loaded machine, a sanitizer build) holds it
 * for milliseconds, and a count of sched_yield() tries ran out in about
 * one. Spin first (a publish is microseconds), then sleep between tries;
 * only a reader waits, never the writer. */
#define READ_SPINS 64
#define READ_NAP_NS 200000L
#define READ_WAIT_NS 500000000LL

_Static_assert(sizeof(sp_mdata) % 8 == 0, "sp_mdata is stored as 64-bit words");

typedef struct file_hdr {
    char magic[8];
    uint32_t layout; /* sizeof(sp_mdata): a reader of another build skips the file */
    uint32_t version;
    int64_t pid;
    int64_t start_ns;
    _Atomic uint64_t seq;       /* odd while a publish is under way */
    _Atomic int64_t publish_ns; /* realtime of the last publish */
    uint8_t pad[16];
} file_hdr;
_Static_assert(sizeof(file_hdr) == 64, "header size");

#define FILE_BYTES (sizeof(file_hdr) + WORDS * 8)

struct sp_mfile {
    int fd;
    file_hdr *hdr;
    _Atomic uint64_t *words;
    char path[SP_PATH_MAX];
};

static _Atomic uint64_t *words_of(file_hdr *h)
{
    return (_Atomic uint64_t *)((uint8_t *)h + sizeof *h);
}

sp_mfile *sp_mfile_create(const char *dir)
{
    int rc = sp_mkdirs(dir, SP_DIR_MODE);
    if (rc != 0) {
        sp_log(SP_LOG_ERROR, "metrics: cannot create the folder %s: %s; live metrics are off",
               dir, strerror(-rc));
        return NULL;
    }
    sp_mfile *f = calloc(1, sizeof *f);
    if (!f)
        return NULL;
    int64_t start = sp_now_realtime_ns();
    char tmp[SP_PATH_MAX];
    int n1 = snprintf(f->path, sizeof f->path, "%s/servprof-%d-%lld.metrics", dir, (int)getpid(),
                      (long long)start);
    int n2 = snprintf(tmp, sizeof tmp, "%s/.servprof-%d-%lld.tmp", dir, (int)getpid(),
                      (long long)start);
    if (n1 < 0 || n2 < 0 || (size_t)n1 >= sizeof f->path || (size_t)n2 >= sizeof tmp) {
        sp_log(SP_LOG_ERROR, "metrics: the folder path %s is too long; live metrics are off", dir);
        free(f);
        return NULL;
    }
    /* The folder may be shared (prof_dir/metrics): checked once, then the
     * file is made in it by fd, O_EXCL | O_NOFOLLOW, and renamed by fd. */
    char why[200];
    int dfd = sp_dir_open_trusted(AT_FDCWD, dir, 0, why, sizeof why);
    if (dfd < 0) {
        sp_log(SP_LOG_ERROR, "metrics: the folder '%s' %s; refusing to publish there (use a "
               "metric_dir only this user can write); live metrics are off in this process",
               dir, why);
        free(f);
        return NULL;
    }
    const char *tname = sp_path_basename(tmp), *fname = sp_path_basename(f->path);
    const char *step = "create";
    f->fd = openat(dfd, tname, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, SP_FILE_MODE);
    if (f->fd < 0)
        goto fail;
    step = "reserve space for";
    if ((errno = posix_fallocate(f->fd, 0, (off_t)FILE_BYTES)) != 0)
        goto fail_unlink;
    step = "map";
    void *m = mmap(NULL, FILE_BYTES, PROT_READ | PROT_WRITE, MAP_SHARED, f->fd, 0);
    if (m == MAP_FAILED)
        goto fail_unlink;
    f->hdr = m;
    f->words = words_of(f->hdr);
    f->hdr->layout = (uint32_t)sizeof(sp_mdata);
    f->hdr->version = 1;
    f->hdr->pid = getpid();
    f->hdr->start_ns = start;
    memcpy(f->hdr->magic, MAGIC, 8);
    step = "lock";
    if (flock(f->fd, LOCK_EX | LOCK_NB) != 0)
        goto fail_unmap;
    step = "rename";
    if (renameat(dfd, tname, dfd, fname) != 0)
        goto fail_unmap;
    close(dfd);
    return f;
fail_unmap:
    munmap(f->hdr, FILE_BYTES);
fail_unlink : {
    int e = errno;
    unlinkat(dfd, tname, 0);
    errno = e;
}
fail:
    close(dfd);
    sp_log(SP_LOG_ERROR, "metrics: cannot %s %s: %s; live metrics are off in this process", step,
           tmp, strerror(errno));
    if (f->fd >= 0)
        close(f->fd);
    free(f);
    return NULL;
}

void sp_mfile_publish(sp_mfile *f, const sp_mdata *d)
{
    if (!f)
        return;
    uint64_t s = atomic_load_explicit(&f->hdr->seq, memory_order_relaxed);
    atomic_store_explicit(&f->hdr->seq, s + 1, memory_order_relaxed);
    const uint8_t *src = (const uint8_t *)d;
    for (size_t i = 0; i < WORDS; i++) {
        uint64_t x;
        memcpy(&x, src + 8 * i, 8);
        /* release: a reader that acquires this word sees seq odd (or later) */
        atomic_store_explicit(&f->words[i], x, memory_order_release);
    }
    atomic_store_explicit(&f->hdr->publish_ns, sp_now_realtime_ns(), memory_order_relaxed);
    atomic_store_explicit(&f->hdr->seq, s + 2, memory_order_release);
}

const char *sp_mfile_path(const sp_mfile *f)
{
    return f ? f->path : "";
}

void sp_mfile_close(sp_mfile *f)
{
    if (!f)
        return;
    munmap(f->hdr, FILE_BYTES);
    close(f->fd);
    free(f);
}

void sp_mfile_forget(sp_mfile *f)
{
    sp_mfile_close(f); /* the parent's lock lives on in the parent's descriptor */
}

static int64_t mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* Copies the words under the sequence lock. Returns 0, or -1 when a
 * publish was under way at every try for READ_WAIT_NS. */
static int copy_words(file_hdr *h, sp_mdata *out)
{
    _Atomic uint64_t *w = words_of(h);
    uint8_t *dst = (uint8_t *)out;
    int64_t give_up = 0;
    for (int t = 0;; t++) {
        uint64_t s1 = atomic_load_explicit(&h->seq, memory_order_acquire);
        if (!(s1 & 1)) {
            for (size_t i = 0; i < WORDS; i++) {
                uint64_t x = atomic_load_explicit(&w[i], memory_order_acquire);
                memcpy(dst + 8 * i, &x, 8);
            }
            if (atomic_load_explicit(&h->seq, memory_order_relaxed) == s1)
                return 0;
        }
        if (t < READ_SPINS) {
            sched_yield();
            continue;
        }
        int64_t now = mono_ns();
        if (!give_up)
            give_up = now + READ_WAIT_NS;
        else if (now >= give_up)
            return -1;
        struct timespec nap = {0, READ_NAP_NS};
        nanosleep(&nap, NULL);
    }
}

int sp_mfile_read(const char *path, sp_mdata *out, int *alive, int64_t *pid, char *why,
                  size_t whylen)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0) {
        snprintf(why, whylen, "cannot open: %s", strerror(errno));
        return -1;
    }
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || (size_t)st.st_size < FILE_BYTES) {
        snprintf(why, whylen, "not a metrics file of this version (size %lld, want %zu)",
                 (long long)st.st_size, (size_t)FILE_BYTES);
        close(fd);
        return -1;
    }
    void *m = mmap(NULL, FILE_BYTES, PROT_READ, MAP_SHARED, fd, 0);
    if (m == MAP_FAILED) {
        snprintf(why, whylen, "cannot map: %s", strerror(errno));
        close(fd);
        return -1;
    }
    file_hdr *h = m;
    int rc = 0;
    if (memcmp(h->magic, MAGIC, 8) || h->layout != sizeof(sp_mdata)) {
        snprintf(why, whylen, "not a metrics file of this version (bad magic or layout)");
        rc = -1;
    } else {
        *alive = flock(fd, LOCK_SH | LOCK_NB) != 0 && errno == EWOULDBLOCK;
        if (!*alive)
            flock(fd, LOCK_UN);
        *pid = h->pid;
        if (copy_words(h, out) != 0) {
            if (*alive) {
                snprintf(why, whylen, "busy: a publish was under way for %lld ms",
                         READ_WAIT_NS / 1000000);
                rc = -1;
            } else {
                /* Died in the middle of a publish: the values are final, at most
                 * one publish's increments are partly there. Use them. */
                uint8_t *dst = (uint8_t *)out;
                for (size_t i = 0; i < WORDS; i++) {
                    uint64_t x = atomic_load_explicit(&words_of(h)[i], memory_order_relaxed);
                    memcpy(dst + 8 * i, &x, 8);
                }
            }
        }
        /* Strings are the writer's, NUL-terminated; a damaged file must not
         * make the reader run off their end. */
        out->role[sizeof out->role - 1] = 0;
        out->model[sizeof out->model - 1] = 0;
        out->dp_rank[sizeof out->dp_rank - 1] = 0;
        for (int i = 0; i < SP_M_OUTCOMES; i++)
            out->outcome[i][SP_M_OUTCOME_LEN - 1] = 0;
    }
    munmap(m, FILE_BYTES);
    close(fd);
    return rc;
}
