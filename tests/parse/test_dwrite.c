/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_dwrite.c — dwrite.c: files written through the O_DIRECT writer
 * thread read back byte for byte, at every size around the alignment and
 * buffer boundaries, with O_DIRECT on and off, and through the stdio stream;
 * errors (a file size limit, a folder that does not exist) come back as the
 * errno of the failure.
 */
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../check.h"
#include "dwrite.h"

static char dir[] = "/tmp/sp_dwrite_XXXXXX";

static unsigned char pattern(size_t i) { return (unsigned char)(i * 2654435761u >> 13); }

/* Writes n pattern bytes as a caller does (fill, submit when full, close
 * with the rest); returns prs_dw_close's result, or -1 if open failed. */
static int write_file(const char *path, size_t n)
{
    prs_dw *w = prs_dw_open(NULL, path, PRS_DW_BUF);
    if (!w)
        return -1;
    char *b = prs_dw_buf(w);
    size_t fill = 0;
    for (size_t i = 0; i < n; i++) {
        if (fill == PRS_DW_BUF) {
            b = prs_dw_submit(w);
            fill = 0;
        }
        b[fill++] = (char)pattern(i);
    }
    return prs_dw_close(w, fill);
}

static int same_as_pattern(const char *path, size_t n)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return 0;
    static unsigned char b[1 << 16];
    size_t i = 0, got;
    int ok = 1;
    while ((got = fread(b, 1, sizeof b, f)) > 0) {
        for (size_t k = 0; k < got && ok; k++)
            ok = i + k < n && b[k] == pattern(i + k);
        i += got;
    }
    fclose(f);
    return ok && i == n;
}

static void sizes(const char *mode)
{
    const size_t cases[] = {0, 1, 4095, 4096, 4097, 65536 + 7, PRS_DW_BUF - 1, PRS_DW_BUF, PRS_DW_BUF + 1,
                            3 * (size_t)PRS_DW_BUF + 4096, 7 * (size_t)PRS_DW_BUF + 12345};
    char path[256];
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        snprintf(path, sizeof path, "%s/f%zu", dir, i);
        int rc = write_file(path, cases[i]);
        CHECK_INT(rc, 0);
        if (!same_as_pattern(path, cases[i]))
            fprintf(stderr, "content differs: %s, %zu bytes\n", mode, cases[i]);
        CHECK(same_as_pattern(path, cases[i]));
        /* a second write truncates what was there */
        CHECK_INT(write_file(path, cases[i] / 2), 0);
        CHECK(same_as_pattern(path, cases[i] / 2));
        unlink(path);
    }
}

/* The stdio stream over a dwrite file (the CSV reports' path). */
static void stream(void)
{
    char path[256];
    snprintf(path, sizeof path, "%s/csv", dir);
    FILE *f = prs_dw_fopen(NULL, path);
    CHECK(f != NULL);
    if (!f)
        return;
    size_t n = 3 * (1u << 20) + 777;
    for (size_t i = 0; i < n; i++)
        putc_unlocked((int)pattern(i), f);
    CHECK_INT(fclose(f), 0);
    CHECK(same_as_pattern(path, n));
    unlink(path);
}

static void errors(void)
{
    char path[256];
    snprintf(path, sizeof path, "%s/no/such/folder/x", dir);
    errno = 0;
    CHECK(prs_dw_open(NULL, path, PRS_DW_BUF) == NULL);
    CHECK_INT(errno, ENOENT);

    /* A file size limit: the write fails with EFBIG (SIGXFSZ ignored, as a
     * full disk gives ENOSPC); every later buffer is dropped, not waited on. */
    signal(SIGXFSZ, SIG_IGN);
    struct rlimit old, lim;
    getrlimit(RLIMIT_FSIZE, &old);
    lim = old;
    lim.rlim_cur = PRS_DW_BUF + 8192;
    CHECK_INT(setrlimit(RLIMIT_FSIZE, &lim), 0);
    snprintf(path, sizeof path, "%s/big", dir);
    CHECK_INT(write_file(path, 5 * (size_t)PRS_DW_BUF), EFBIG);
    struct stat st;
    CHECK(stat(path, &st) == 0 && st.st_size <= (off_t)lim.rlim_cur);
    /* the same through the stdio stream: fclose says so */
    FILE *f = prs_dw_fopen(NULL, path);
    CHECK(f != NULL);
    if (f) {
        for (size_t i = 0; i < 3 * (size_t)PRS_DW_BUF; i++)
            putc_unlocked('x', f);
        errno = 0;
        CHECK_INT(fclose(f), EOF);
        CHECK_INT(errno, EFBIG);
    }
    setrlimit(RLIMIT_FSIZE, &old);
    unlink(path);
}

int main(void)
{
    if (!mkdtemp(dir)) {
        perror("mkdtemp");
        return 1;
    }
    setenv("SERVPROF_PARSE_DIRECT_IO", "1", 1);
    sizes("direct");
    stream();
    setenv("SERVPROF_PARSE_DIRECT_IO", "0", 1);
    sizes("buffered");
    unsetenv("SERVPROF_PARSE_DIRECT_IO");
    errors();
    rmdir(dir);
    CHECK_DONE();
}
