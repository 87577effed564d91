/* SPDX-License-Identifier: Apache-2.0 */
/*
 * sampler_host.c — host CPU and memory, and this process's own CPU and RSS,
 * from /proc.
 *
 * Design. A host pass reads three small files: /proc/uptime (idle time of
 * all CPUs) or, at DETAILED where per-core figures are wanted, /proc/stat
 * (jiffies per CPU); /proc/meminfo; /proc/self/statm (this process's RSS); plus
 * CLOCK_PROCESS_CPUTIME_ID for this process's CPU time (nanoseconds, where
 * /proc/self/stat only has 10 ms ticks, and cheaper: at 50 Hz every /proc
 * file costs ~20-30 µs of kernel time when caches are cold). The files are
 * opened once and re-read with pread(fd, 0), which makes the kernel
 * regenerate them: no open/close per sample. What a pass costs is almost all
 * the kernel formatting those files (one syscall alone is cheap), and
 * /proc/stat costs the most of them (figures: docs/benchmarks.md,
 * "Figures behind design comments"), so /proc/stat is read only when
 * per-core rows need it. Both sources give the same figure: busy = not idle (iowait
 * counts as busy, as in node_exporter's "CPU busy"), in 10 ms units.
 * CPU figures are rates, so every pass is
 * compared with the previous one (the baseline is taken in sp_host_open);
 * the first row therefore appears one period after the start. A figure that
 * cannot be computed (no time passed, a file that stopped parsing) is left
 * out of the row rather than written as a made-up zero.
 *
 * The parsers take text, not files, so the tests feed them crafted content.
 * Runs on the sampler thread only.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "sampler.h"

#define STAT_BUF_MIN 8192

/* Passes between two looks at the online CPU count (/proc/uptime's idle
 * time is summed over the CPUs that are online). */
#define ONLINE_RECHECK 64

struct sp_host_sampler {
    int fd_cpu;              /* /proc/stat when per_core, else /proc/uptime */
    int fd_mem, fd_self;     /* /proc/meminfo, /proc/self/statm */
    int per_core;
    int online;              /* uptime path: online CPUs at the previous pass */
    int until_recheck;       /* uptime path: passes left before re-counting */
    int64_t up_cs, idle_cs;  /* uptime path: previous reading */
    long page_kib;
    char *buf;               /* read buffer, grows with /proc/stat */
    size_t cap;
    int ncpu;                /* from the last good /proc/stat */
    int maxcpu;              /* size of the arrays below */
    sp_cpu_times all;        /* previous reading */
    sp_cpu_times *cpus;      /* [maxcpu], previous reading */
    sp_cpu_times *cur_cpus;  /* scratch for the current reading */
    int64_t self_cpu_ns;     /* CLOCK_PROCESS_CPUTIME_ID at the previous pass */
    int64_t self_mono_ns;
    int have_prev;
    int warned;              /* one warning per kind of trouble */
};

/* ------------------------------------------------------------------ */
/* Parsers                                                              */
/* ------------------------------------------------------------------ */

/* Parses "user nice system idle iowait irq softirq steal ..." after the
 * label. Fields absent on old kernels count as zero; guest and guest_nice
 * are ignored because user/nice already include them. Only idle is
 * not busy: iowait is time a CPU had a task waiting on I/O. */
static int parse_cpu_fields(const char *p, sp_cpu_times *out)
{
    unsigned long long v[8] = {0};
    int n = 0;
    char *end;
    while (n < 8) {
        while (*p == ' ' || *p == '\t')
            p++;
        if (*p < '0' || *p > '9')
            break;
        errno = 0;
        v[n] = strtoull(p, &end, 10);
        if (errno || end == p)
            return -1;
        p = end;
        n++;
    }
    if (n < 4)
        return -1;
    uint64_t idle = v[3];
    uint64_t total = 0;
    for (int i = 0; i < 8; i++)
        total += v[i];
    out->total = total;
    out->busy = total - idle;
    return 0;
}

int sp_host_parse_stat(const char *text, sp_cpu_times *all, sp_cpu_times *cpus, int max,
                       int *ncpu)
{
    int found_all = 0, n = 0;
    for (const char *line = text; line && *line;) {
        const char *nl = strchr(line, '\n');
        if (!strncmp(line, "cpu", 3)) {
            if (line[3] == ' ') {
                if (parse_cpu_fields(line + 3, all) == 0)
                    found_all = 1;
            } else if (line[3] >= '0' && line[3] <= '9') {
                char *end;
                long idx = strtol(line + 3, &end, 10);
                sp_cpu_times t;
                if (idx >= 0 && idx < max && *end == ' ' && parse_cpu_fields(end, &t) == 0) {
                    cpus[idx] = t;
                    if (idx + 1 > n)
                        n = (int)idx + 1;
                }
            }
        }
        line = nl ? nl + 1 : NULL;
    }
    *ncpu = n;
    return found_all ? 0 : -1;
}

/* Value in kB of "<key>:   <n> kB" in meminfo text; -1 when absent. */
static double meminfo_kib(const char *text, const char *key)
{
    size_t klen = strlen(key);
    for (const char *line = text; line && *line;) {
        if (!strncmp(line, key, klen) && line[klen] == ':') {
            char *end;
            errno = 0;
            unsigned long long v = strtoull(line + klen + 1, &end, 10);
            if (errno || end == line + klen + 1)
                return -1;
            return (double)v;
        }
        const char *nl = strchr(line, '\n');
        line = nl ? nl + 1 : NULL;
    }
    return -1;
}

int sp_host_parse_meminfo(const char *text, double *total_mib, double *avail_mib)
{
    double total = meminfo_kib(text, "MemTotal");
    if (total < 0)
        return -1;
    double avail = meminfo_kib(text, "MemAvailable");
    if (avail < 0) {
        double fr = meminfo_kib(text, "MemFree"), bu = meminfo_kib(text, "Buffers"),
               ca = meminfo_kib(text, "Cached");
        if (fr < 0)
            return -1;
        avail = fr + (bu > 0 ? bu : 0) + (ca > 0 ? ca : 0);
    }
    if (avail > total)
        avail = total;
    *total_mib = total / 1024.0;
    *avail_mib = avail / 1024.0;
    return 0;
}

int sp_host_parse_statm(const char *text, int64_t *rss_pages)
{
    /* "size resident shared text lib data dt", in pages */
    char *end;
    errno = 0;
    (void)strtoull(text, &end, 10);
    if (errno || end == text || *end != ' ')
        return -1;
    const char *p = end;
    long long rss = strtoll(p, &end, 10);
    if (errno || end == p || rss < 0)
        return -1;
    *rss_pages = rss;
    return 0;
}

/* One "seconds.hundredths" number of /proc/uptime, as centiseconds. */
static int parse_centis(const char **text, int64_t *out)
{
    const char *p = *text;
    while (*p == ' ')
        p++;
    if (*p < '0' || *p > '9')
        return -1;
    int64_t v = 0;
    for (; *p >= '0' && *p <= '9'; p++) {
        if (v > (INT64_MAX - 9) / 1000)
            return -1;
        v = v * 10 + (*p - '0');
    }
    v *= 100;
    if (*p == '.') {
        int scale = 10; /* digits past the hundredths are ignored */
        for (p++; *p >= '0' && *p <= '9'; p++, scale /= 10)
            v += (*p - '0') * scale;
    }
    *out = v;
    *text = p;
    return 0;
}

int sp_host_parse_uptime(const char *text, int64_t *up_cs, int64_t *idle_cs)
{
    if (parse_centis(&text, up_cs) != 0 || *text != ' ' || parse_centis(&text, idle_cs) != 0)
        return -1;
    return 0;
}

double sp_uptime_busy_pct(int64_t d_up_cs, int64_t d_idle_cs, int ncpu)
{
    if (d_up_cs <= 0 || d_idle_cs < 0 || ncpu <= 0)
        return -1;
    double total = (double)d_up_cs * ncpu;
    double pct = 100.0 * (total - (double)d_idle_cs) / total;
    /* uptime and idle are rounded apart: a fully idle machine can read a
     * hair over 100 % idle */
    return pct < 0 ? 0 : pct > 100.0 ? 100.0 : pct;
}

double sp_cpu_busy_pct(const sp_cpu_times *prev, const sp_cpu_times *cur)
{
    /* Counters can go backwards when a CPU goes offline and back: treat
     * that as "no data", not as a huge or negative percentage. */
    if (cur->total <= prev->total || cur->busy < prev->busy)
        return -1;
    double pct = 100.0 * (double)(cur->busy - prev->busy) / (double)(cur->total - prev->total);
    return pct > 100.0 ? 100.0 : pct;
}

/* ------------------------------------------------------------------ */
/* Reading                                                              */
/* ------------------------------------------------------------------ */

/* Re-reads an open /proc file into h->buf (NUL-terminated), growing the
 * buffer when the file fills it. Returns the length or -1. */
static ssize_t reread(sp_host_sampler *h, int fd)
{
    for (;;) {
        ssize_t got = 0;
        for (;;) {
            ssize_t r = pread(fd, h->buf + got, h->cap - 1 - (size_t)got, got);
            if (r < 0 && errno == EINTR)
                continue;
            if (r < 0)
                return -1;
            if (r == 0)
                break;
            got += r;
            /* These /proc files are generated whole on the first read: a
             * short read is the end, no need for a syscall to see EOF. */
            if ((size_t)got == h->cap - 1 || (size_t)r < h->cap - 1 - (size_t)(got - r))
                break;
        }
        if ((size_t)got < h->cap - 1 || h->cap >= (1u << 22)) {
            h->buf[got] = '\0';
            return got;
        }
        char *nb = realloc(h->buf, h->cap * 2);
        if (!nb)
            return -1;
        h->buf = nb;
        h->cap *= 2;
    }
}

static void warn_once(sp_host_sampler *h, int bit, const char *what)
{
    if (h->warned & bit)
        return;
    h->warned |= bit;
    sp_log(SP_LOG_WARNING, "host sampler: %s could not be read or parsed; that figure is left "
           "out of the samples", what);
}

static void emit_busy(double pct)
{
    sp_sample_row row = {SERVPROF_LEVEL_INFO, "host", "CpuUsage", 1, {"usage"}, {pct}, NULL, 0};
    sp_sample_emit(&row);
}

static int online_cpus(void)
{
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n > 0 ? (int)n : 1;
}

/* Whole machine from /proc/uptime: busy = elapsed × online CPUs − idle. */
static void emit_cpu_uptime(sp_host_sampler *h)
{
    int64_t up, idle;
    if (reread(h, h->fd_cpu) < 0 || sp_host_parse_uptime(h->buf, &up, &idle) < 0) {
        warn_once(h, 1, "/proc/uptime");
        h->have_prev = 0;
        return;
    }
    if (--h->until_recheck <= 0) {
        h->until_recheck = ONLINE_RECHECK;
        int n = online_cpus();
        if (n != h->online) { /* a CPU came or went: no figure across it */
            h->online = n;
            h->have_prev = 0;
        }
    }
    if (h->have_prev) {
        double pct = sp_uptime_busy_pct(up - h->up_cs, idle - h->idle_cs, h->online);
        if (pct >= 0)
            emit_busy(pct);
    }
    h->up_cs = up;
    h->idle_cs = idle;
    h->have_prev = 1;
}

/* Whole machine and every core from /proc/stat (DETAILED). */
static void emit_cpu_stat(sp_host_sampler *h)
{
    sp_cpu_times all;
    int ncpu = 0;
    memset(h->cur_cpus, 0, sizeof(sp_cpu_times) * (size_t)h->maxcpu);
    if (reread(h, h->fd_cpu) < 0 ||
        sp_host_parse_stat(h->buf, &all, h->cur_cpus, h->maxcpu, &ncpu) < 0) {
        warn_once(h, 1, "/proc/stat");
        h->have_prev = 0;
        return;
    }
    if (h->have_prev) {
        double pct = sp_cpu_busy_pct(&h->all, &all);
        if (pct >= 0)
            emit_busy(pct);
        for (int i = 0; i < ncpu && i < h->ncpu; i++) {
            /* a core absent last time (hot-plugged, numbering gap) has no
             * baseline: its first figure would be an average since boot */
            if (h->cpus[i].total == 0)
                continue;
            double c = sp_cpu_busy_pct(&h->cpus[i], &h->cur_cpus[i]);
            if (c < 0)
                continue;
            sp_sample_row row = {SERVPROF_LEVEL_DETAILED, "host", "CpuUsage", 1, {"usage"},
                                 {c}, "cpu", i};
            sp_sample_emit(&row);
        }
    }
    h->all = all;
    h->ncpu = ncpu;
    /* swap, so the current reading becomes the previous one */
    sp_cpu_times *t = h->cpus;
    h->cpus = h->cur_cpus;
    h->cur_cpus = t;
    h->have_prev = 1;
}

static void emit_mem(sp_host_sampler *h)
{
    double total, avail;
    if (reread(h, h->fd_mem) < 0 || sp_host_parse_meminfo(h->buf, &total, &avail) < 0) {
        warn_once(h, 2, "/proc/meminfo");
        return;
    }
    sp_sample_row row = {SERVPROF_LEVEL_INFO, "host", "MemUsage", 3,
                         {"used", "available", "total"}, {total - avail, avail, total}, NULL, 0};
    sp_sample_emit(&row);
}

static int64_t process_cpu_ns(void)
{
    struct timespec ts;
    if (clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts) != 0)
        return -1;
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void emit_self(sp_host_sampler *h)
{
    int64_t rss_pages;
    int64_t now = sp_now_monotonic_ns(), cpu = process_cpu_ns();
    if (reread(h, h->fd_self) < 0 || sp_host_parse_statm(h->buf, &rss_pages) < 0 || cpu < 0) {
        warn_once(h, 4, "/proc/self/statm");
        h->self_mono_ns = 0;
        return;
    }
    double rss_mib = (double)rss_pages * (double)h->page_kib / 1024.0;
    if (h->self_mono_ns && now > h->self_mono_ns && cpu >= h->self_cpu_ns) {
        double pct = 100.0 * (double)(cpu - h->self_cpu_ns) / (double)(now - h->self_mono_ns);
        sp_sample_row row = {SERVPROF_LEVEL_INFO, "host", "ProcessUsage", 2, {"cpu", "rss"},
                             {pct, rss_mib}, NULL, 0};
        sp_sample_emit(&row);
    }
    h->self_cpu_ns = cpu;
    h->self_mono_ns = now;
}

/* ------------------------------------------------------------------ */
/* Life                                                                 */
/* ------------------------------------------------------------------ */

sp_host_sampler *sp_host_open(int per_core)
{
    sp_host_sampler *h = calloc(1, sizeof *h);
    if (!h)
        return NULL;
    h->fd_cpu = open(per_core ? "/proc/stat" : "/proc/uptime", O_RDONLY | O_CLOEXEC);
    h->fd_mem = open("/proc/meminfo", O_RDONLY | O_CLOEXEC);
    h->fd_self = open("/proc/self/statm", O_RDONLY | O_CLOEXEC);
    h->cap = STAT_BUF_MIN;
    h->buf = malloc(h->cap);
    /* Core numbers can exceed the online count (offline cores, sparse
     * numbering): size by the configured count, with room to spare. */
    long conf = sysconf(_SC_NPROCESSORS_CONF);
    h->maxcpu = conf > 0 && conf * 2 < SP_HOST_MAX_CPUS ? (int)conf * 2 : SP_HOST_MAX_CPUS;
    h->cpus = calloc((size_t)h->maxcpu, sizeof(sp_cpu_times));
    h->cur_cpus = calloc((size_t)h->maxcpu, sizeof(sp_cpu_times));
    h->per_core = per_core;
    long page = sysconf(_SC_PAGESIZE);
    h->page_kib = page > 0 ? page / 1024 : 4;
    if (h->fd_cpu < 0 || h->fd_mem < 0 || h->fd_self < 0 || !h->buf || !h->cpus ||
        !h->cur_cpus) {
        sp_log(SP_LOG_WARNING, "host sampler: cannot open /proc (%s); host CPU and memory are "
               "not sampled, everything else goes on", strerror(errno));
        sp_host_close(h);
        return NULL;
    }
    /* Baseline for the rates; rows start at the first tick. Memory has no
     * baseline, so nothing is emitted here. */
    if (per_core) {
        sp_cpu_times all;
        int ncpu;
        if (reread(h, h->fd_cpu) >= 0 &&
            sp_host_parse_stat(h->buf, &all, h->cpus, h->maxcpu, &ncpu) == 0) {
            h->all = all;
            h->ncpu = ncpu;
            h->have_prev = 1;
        }
    } else {
        h->online = online_cpus();
        h->until_recheck = ONLINE_RECHECK;
        if (reread(h, h->fd_cpu) >= 0 && sp_host_parse_uptime(h->buf, &h->up_cs, &h->idle_cs) == 0)
            h->have_prev = 1;
    }
    h->self_cpu_ns = process_cpu_ns();
    h->self_mono_ns = h->self_cpu_ns >= 0 ? sp_now_monotonic_ns() : 0;
    return h;
}

void sp_host_sample(sp_host_sampler *h)
{
    if (h->per_core)
        emit_cpu_stat(h);
    else
        emit_cpu_uptime(h);
    emit_mem(h);
    emit_self(h);
}

void sp_host_forget(sp_host_sampler *h)
{
    if (!h)
        return;
    if (h->fd_cpu >= 0)
        close(h->fd_cpu);
    if (h->fd_mem >= 0)
        close(h->fd_mem);
    if (h->fd_self >= 0)
        close(h->fd_self);
    free(h->buf);
    free(h->cpus);
    free(h->cur_cpus);
    free(h);
}

void sp_host_close(sp_host_sampler *h)
{
    sp_host_forget(h);
}
