/*
 * dwrite.c — output files written around the page cache (O_DIRECT).
 *
 * A full parse writes gigabytes (chrome_tracing.json alone is about as big
 * as the input). Through the page cache, every byte is copied by the kernel
 * into freshly allocated cache pages, and on the VMs we measured that copy
 * was the largest single cost of a parse (perf: a third of the CPU time at
 * 5 M records; `dd` of 1 GiB: 2.2 s of CPU buffered, 0.2 s with O_DIRECT,
 * and faster on the wall too). Nothing reads these files back during the
 * run, so caching them buys nothing.
 *
 * spp_fopen_direct() returns an ordinary FILE* (fopencookie) so callers keep
 * using stdio. Bytes are gathered in a 1 MiB block-aligned buffer and each
 * full buffer is one aligned write at an aligned offset, as O_DIRECT
 * requires; the tail (not a whole block) is written after O_DIRECT is
 * turned off on the descriptor. Where O_DIRECT is refused (tmpfs, some
 * network file systems: EINVAL at open or at the first write) the file is
 * written through the page cache as usual: same bytes, same errors.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* O_DIRECT, fopencookie */
#endif
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "parse.h"

#define DW_ALIGN 4096
#define DW_BUF (1 << 20) /* a multiple of DW_ALIGN */

typedef struct dw {
    int fd;
    int direct;       /* O_DIRECT is on */
    char *buf;        /* DW_BUF bytes, DW_ALIGN-aligned */
    size_t n;         /* bytes in buf */
} dw;

static int write_all(int fd, const char *p, size_t n)
{
    while (n) {
        ssize_t w = write(fd, p, n);
        if (w < 0) {
            if (errno == EINTR)
                continue;
            return -1;
        }
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

static void direct_off(dw *d)
{
    int fl = fcntl(d->fd, F_GETFL);
    if (fl != -1)
        fcntl(d->fd, F_SETFL, fl & ~O_DIRECT);
    d->direct = 0;
}

/* Writes the n bytes of buf; 0 ok, -1 with errno. */
static int flush_buf(dw *d)
{
    if (!d->n)
        return 0;
    if (d->direct && d->n % DW_ALIGN != 0)
        direct_off(d); /* the tail: not a whole block */
    ssize_t w = d->direct ? write(d->fd, d->buf, d->n) : -2;
    if (w == (ssize_t)d->n) {
        d->n = 0;
        return 0;
    }
    if (w == -1 && errno != EINVAL && errno != EINTR)
        return -1;
    /* Refused (EINVAL), interrupted or short: finish through the page
     * cache. A short direct write leaves the offset where it stopped. */
    size_t done = w > 0 ? (size_t)w : 0;
    if (d->direct)
        direct_off(d);
    if (write_all(d->fd, d->buf + done, d->n - done) != 0)
        return -1;
    d->n = 0;
    return 0;
}

static ssize_t dw_write(void *c, const char *p, size_t n)
{
    dw *d = c;
    size_t left = n;
    while (left) {
        size_t k = DW_BUF - d->n < left ? DW_BUF - d->n : left;
        memcpy(d->buf + d->n, p, k);
        d->n += k;
        p += k;
        left -= k;
        if (d->n == DW_BUF && flush_buf(d) != 0)
            return -1; /* stdio marks the stream in error; fclose reports it */
    }
    return (ssize_t)n;
}

static int dw_close(void *c)
{
    dw *d = c;
    int rc = flush_buf(d);
    int e = errno;
    if (close(d->fd) != 0 && rc == 0) {
        rc = -1;
        e = errno;
    }
    free(d->buf);
    free(d);
    errno = e;
    return rc;
}

FILE *spp_fopen_direct(const char *path)
{
    dw *d = calloc(1, sizeof *d);
    if (!d)
        return NULL;
    if (posix_memalign((void **)&d->buf, DW_ALIGN, DW_BUF) != 0) {
        free(d);
        return fopen(path, "w");
    }
    d->direct = 1;
    d->fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_DIRECT, 0666);
    if (d->fd < 0 && errno == EINVAL) {
        d->direct = 0;
        d->fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
    }
    if (d->fd < 0) {
        int e = errno;
        free(d->buf);
        free(d);
        errno = e;
        return NULL;
    }
    cookie_io_functions_t io = {.read = NULL, .write = dw_write, .seek = NULL, .close = dw_close};
    FILE *f = fopencookie(d, "w", io);
    if (!f) {
        int e = errno;
        close(d->fd);
        free(d->buf);
        free(d);
        errno = e;
    }
    return f;
}
