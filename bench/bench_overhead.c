/* SPDX-License-Identifier: Apache-2.0 */
/*
 * bench_overhead.c — what profiling costs the demo server: throughput
 * (output tokens/s) and P99 latency of tiny-llm-server under the same
 * saturating load with collection off and on (profiler_level INFO),
 * alternating off/on runs in one invocation (off-on, on-off, ... so slow
 * drift of the machine cancels), several pairs, ratios reported.
 *
 *   bench_overhead [--pairs N] [--seconds S] [--concurrency C]
 *                  [--server PATH] [--load PATH]
 *
 * Design. One server process lives through every run; collection is
 * switched by rewriting its config file (atomically, like `servprof
 * enable`), and each run starts only once /health reports the new level.
 * The load is servprof-load in closed-loop saturation (a very high arrival
 * rate capped by --concurrency client slots), so throughput measures the
 * server's capacity; its JSON summary gives the figures. Wall-clock
 * figures move with whatever else the machine runs; the server's own CPU
 * time per output token (from /proc, all its threads, the profiler's writer
 * included) is reported too, as it is far less sensitive to neighbours. Binaries default
 * to <build>/bin/ next to this program's <build>/bench/.
 */
#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static char dir[PATH_MAX], cfg[PATH_MAX + 32], server_bin[PATH_MAX + 64], load_bin[PATH_MAX + 64];

static void msleep(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

static int write_config(int enable)
{
    char tmp[PATH_MAX + 64];
    snprintf(tmp, sizeof tmp, "%s.tmp", cfg);
    FILE *f = fopen(tmp, "w");
    if (!f)
        return -1;
    fprintf(f, "{\"enable\": %d, \"prof_dir\": \"%s/prof\", \"profiler_level\": \"INFO\"}\n", enable, dir);
    if (fclose(f))
        return -1;
    return rename(tmp, cfg);
}

/* GET /health; returns profiling_level, or -1 when unreachable. */
static int health_level(int port)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    inet_pton(AF_INET, "127.0.0.1", &sa.sin_addr);
    if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof sa) < 0) {
        if (fd >= 0)
            close(fd);
        return -1;
    }
    const char *req = "GET /health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
    char buf[4096];
    size_t n = 0;
    ssize_t k;
    if (write(fd, req, strlen(req)) < 0) {
        close(fd);
        return -1;
    }
    while (n < sizeof buf - 1 && (k = read(fd, buf + n, sizeof buf - 1 - n)) > 0)
        n += (size_t)k;
    close(fd);
    buf[n] = 0;
    const char *p = strstr(buf, "\"profiling_level\":");
    return p ? atoi(p + 18) : -1;
}

static pid_t spawn(char *const argv[], const char *out_path, int with_cfg)
{
    pid_t pid = fork();
    if (pid == 0) {
        int fd = open(out_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        if (fd >= 0) {
            dup2(fd, 1);
            dup2(fd, 2);
        }
        if (with_cfg)
            setenv("SERVICE_PROF_CONFIG_PATH", cfg, 1);
        execv(argv[0], argv);
        _exit(127);
    }
    return pid;
}

static double json_num(const char *s, const char *obj, const char *key)
{
    char k[64];
    if (obj) {
        snprintf(k, sizeof k, "\"%s\":{", obj);
        s = strstr(s, k);
        if (!s)
            return -1;
    }
    snprintf(k, sizeof k, "\"%s\":", key);
    const char *p = strstr(s, k);
    return p ? strtod(p + strlen(k), NULL) : -1;
}

typedef struct run {
    double tok_s, p99_e2e, p99_ttft, p50_e2e;
    double cpu_ms_per_100tok; /* server CPU (all its threads) per 100 output tokens */
    double writer_ms_per_100tok; /* of which libservprof's writer thread (on runs) */
    double engine_ms_per_100tok; /* of which the server's engine thread */
    int ok;
} run;

static pid_t server_pid;

static double stat_cpu_ms(const char *path)
{
    char buf[1024];
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = 0;
    const char *p = strrchr(buf, ')');
    unsigned long ut = 0, st = 0;
    if (!p || sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu", &ut, &st) != 2)
        return -1;
    return (double)(ut + st) * 1000.0 / (double)sysconf(_SC_CLK_TCK);
}

/* CPU time of the server process (user + system, all threads), in ms. */
static double server_cpu_ms(void)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/stat", (int)server_pid);
    return stat_cpu_ms(path);
}

/* CPU time of the server's threads named `name`, in ms (libservprof's
 * writer, "servprof-writer", lives as long as a session: read before and
 * after a run, the difference is its cost for the run). */
static double threads_cpu_ms(const char *name)
{
    char path[512], comm[64];
    snprintf(path, sizeof path, "/proc/%d/task", (int)server_pid);
    DIR *d = opendir(path);
    double ms = 0;
    struct dirent *e;
    while (d && (e = readdir(d))) {
        if (e->d_name[0] == '.')
            continue;
        snprintf(path, sizeof path, "/proc/%d/task/%s/comm", (int)server_pid, e->d_name);
        FILE *f = fopen(path, "r");
        if (!f)
            continue;
        int match = fgets(comm, sizeof comm, f) && !strncmp(comm, name, strlen(name));
        fclose(f);
        if (match) {
            snprintf(path, sizeof path, "/proc/%d/task/%s/stat", (int)server_pid, e->d_name);
            ms += stat_cpu_ms(path);
        }
    }
    if (d)
        closedir(d);
    return ms;
}

static int one_run(int port, int seconds, int conc, run *r)
{
    char p[16], d[16], c[16], js[PATH_MAX + 32], log[PATH_MAX + 32];
    snprintf(p, sizeof p, "%d", port);
    snprintf(d, sizeof d, "%d", seconds);
    snprintf(c, sizeof c, "%d", conc);
    snprintf(js, sizeof js, "%s/summary.json", dir);
    snprintf(log, sizeof log, "%s/load.log", dir);
    char *argv[] = {load_bin, "--port", p, "--rate", "1000", "--duration", d, "--concurrency", c,
                    "--prompt-len", "64:256", "--output-len", "32:64", "--summary-json", js,
                    "--quiet", NULL};
    double cpu0 = server_cpu_ms(), w0 = threads_cpu_ms("servprof-writer");
    double e0 = threads_cpu_ms("tl-engine");
    pid_t pid = spawn(argv, log, 0);
    int st;
    if (pid < 0 || waitpid(pid, &st, 0) < 0 || !WIFEXITED(st) || WEXITSTATUS(st))
        return -1;
    double cpu = server_cpu_ms() - cpu0;
    FILE *f = fopen(js, "r");
    char buf[4096] = {0};
    if (!f || !fread(buf, 1, sizeof buf - 1, f)) {
        if (f)
            fclose(f);
        return -1;
    }
    fclose(f);
    r->tok_s = json_num(buf, NULL, "output_tokens_per_s");
    r->p99_e2e = json_num(buf, "e2e_ms", "p99");
    r->p50_e2e = json_num(buf, "e2e_ms", "p50");
    r->p99_ttft = json_num(buf, "ttft_ms", "p99");
    r->ok = (int)json_num(buf, NULL, "ok");
    double toks = json_num(buf, NULL, "output_tokens");
    r->cpu_ms_per_100tok = toks > 0 ? cpu / toks * 100 : -1;
    double w = threads_cpu_ms("servprof-writer") - w0; /* < 0: the thread ended in the run */
    r->writer_ms_per_100tok = toks > 0 ? (w > 0 ? w : 0) / toks * 100 : -1;
    r->engine_ms_per_100tok = toks > 0 ? (threads_cpu_ms("tl-engine") - e0) / toks * 100 : -1;
    return 0;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static int set_mode(int port, int on)
{
    if (write_config(on))
        return -1;
    for (int i = 0; i < 200; i++) {
        int lvl = health_level(port);
        if ((on && lvl == 20) || (!on && lvl == 0))
            return 0;
        msleep(25);
    }
    return -1;
}

int main(int argc, char **argv)
{
    int pairs = 3, seconds = 4, conc = 16;
    char self[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    self[n > 0 ? n : 0] = 0;
    char *slash = strrchr(self, '/');
    if (slash)
        *slash = 0; /* <build>/bench */
    snprintf(server_bin, sizeof server_bin, "%s/../bin/tiny-llm-server", self);
    snprintf(load_bin, sizeof load_bin, "%s/../bin/servprof-load", self);
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--pairs") && i + 1 < argc) pairs = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--seconds") && i + 1 < argc) seconds = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--concurrency") && i + 1 < argc) conc = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--server") && i + 1 < argc) snprintf(server_bin, sizeof server_bin, "%s", argv[++i]);
        else if (!strcmp(argv[i], "--load") && i + 1 < argc) snprintf(load_bin, sizeof load_bin, "%s", argv[++i]);
        else {
            fprintf(stderr, "usage: bench_overhead [--pairs N] [--seconds S] [--concurrency C] "
                            "[--server PATH] [--load PATH]\n");
            return 2;
        }
    }
    if (pairs < 1 || seconds < 1 || conc < 1 || access(server_bin, X_OK) || access(load_bin, X_OK)) {
        fprintf(stderr, "bench_overhead: need pairs, seconds, concurrency >= 1 and the programs "
                        "%s and %s (build the tiny-llm-server and servprof-load targets)\n",
                server_bin, load_bin);
        return 2;
    }
    snprintf(dir, sizeof dir, "/tmp/servprof-bench-overhead-XXXXXX");
    if (!mkdtemp(dir)) {
        perror("bench_overhead: mkdtemp");
        return 1;
    }
    snprintf(cfg, sizeof cfg, "%s/profiler.json", dir);
    write_config(0);
    char port_file[PATH_MAX + 32], log[PATH_MAX + 32];
    snprintf(port_file, sizeof port_file, "%s/port", dir);
    snprintf(log, sizeof log, "%s/server.log", dir);
    char *sargv[] = {server_bin, "--port", "0", "--port-file", port_file, NULL};
    pid_t srv = spawn(sargv, log, 1);
    server_pid = srv;
    int port = 0;
    for (int i = 0; i < 400 && !port; i++) {
        FILE *f = fopen(port_file, "r");
        if (f) {
            if (fscanf(f, "%d", &port) != 1)
                port = 0;
            fclose(f);
        }
        if (!port)
            msleep(25);
    }
    if (!port) {
        fprintf(stderr, "bench_overhead: the server did not start (see %s)\n", log);
        kill(srv, SIGKILL);
        return 1;
    }
    printf("tiny-llm-server under saturating load (%d client slots, prompts 64..256, outputs 32..64),\n"
           "%d s per run, %d off/on pairs, collection at INFO when on. Work folder %s\n\n",
           conc, seconds, pairs, dir);
    run warm;
    set_mode(port, 0);
    one_run(port, 2, conc, &warm); /* warm-up: page in weights, grow buffers */

    run off[64], on[64];
    if (pairs > 64)
        pairs = 64;
    printf("%-5s %-4s %9s %10s %10s %11s %13s %13s %13s %5s\n", "pair", "mode", "tokens/s",
           "P50 e2e ms", "P99 e2e ms", "P99 TTFT ms", "CPU ms/100tok", "engine ms/100", "writer ms/100", "reqs");
    for (int i = 0; i < pairs; i++) {
        for (int k = 0; k < 2; k++) {
            int mode_on = (i % 2) ? !k : k; /* off,on then on,off ... */
            run *r = mode_on ? &on[i] : &off[i];
            if (set_mode(port, mode_on) || one_run(port, seconds, conc, r)) {
                fprintf(stderr, "bench_overhead: run failed (see %s)\n", dir);
                kill(srv, SIGKILL);
                return 1;
            }
            printf("%-5d %-4s %9.1f %10.2f %10.2f %11.2f %13.2f %13.2f %13.2f %5d\n", i + 1,
                   mode_on ? "on" : "off", r->tok_s, r->p50_e2e, r->p99_e2e, r->p99_ttft,
                   r->cpu_ms_per_100tok, r->engine_ms_per_100tok, r->writer_ms_per_100tok, r->ok);
            fflush(stdout);
        }
    }
    set_mode(port, 0);
    kill(srv, SIGINT);
    int st;
    waitpid(srv, &st, 0);

    double t_off = 0, t_on = 0, p_off = 0, p_on = 0, c_off = 0, c_on = 0;
    for (int i = 0; i < pairs; i++) {
        t_off += off[i].tok_s;
        t_on += on[i].tok_s;
        p_off += off[i].p99_e2e;
        p_on += on[i].p99_e2e;
        c_off += off[i].cpu_ms_per_100tok;
        c_on += on[i].cpu_ms_per_100tok;
    }
    t_off /= pairs; t_on /= pairs; p_off /= pairs; p_on /= pairs; c_off /= pairs; c_on /= pairs;
    printf("\nmean over %d pairs: throughput off %.1f, on %.1f tokens/s: on/off = %.4f (%+.2f%%)\n",
           pairs, t_off, t_on, t_on / t_off, (t_on / t_off - 1) * 100);
    printf("                   P99 end-to-end off %.2f, on %.2f ms: on/off = %.4f (%+.2f%%)\n",
           p_off, p_on, p_on / p_off, (p_on / p_off - 1) * 100);
    double w_on = 0, e_on = 0, e_off = 0;
    for (int i = 0; i < pairs; i++) {
        w_on += on[i].writer_ms_per_100tok;
        e_on += on[i].engine_ms_per_100tok;
        e_off += off[i].engine_ms_per_100tok;
    }
    w_on /= pairs; e_on /= pairs; e_off /= pairs;
    printf("                   server CPU per 100 output tokens off %.2f, on %.2f ms: on/off = %.4f (%+.2f%%)\n",
           c_off, c_on, c_on / c_off, (c_on / c_off - 1) * 100);
    printf("                   of which libservprof's writer thread (on): %.2f ms = %.2f%% of the off cost\n",
           w_on, w_on / c_off * 100);
    printf("                   engine thread (scheduler + model + its records) off %.2f, on %.2f ms: %+.2f%%\n",
           e_off, e_on, (e_on / e_off - 1) * 100);
    /* Medians of the per-pair ratios: one disturbed run moves them little. */
    double rt[64], rp[64], rc[64];
    for (int i = 0; i < pairs; i++) {
        rt[i] = on[i].tok_s / off[i].tok_s;
        rp[i] = on[i].p99_e2e / off[i].p99_e2e;
        rc[i] = on[i].cpu_ms_per_100tok / off[i].cpu_ms_per_100tok;
    }
    printf("median of the %d per-pair on/off ratios: throughput %.4f, P99 end-to-end %.4f, "
           "server CPU per token %.4f\n", pairs, median(rt, pairs), median(rp, pairs), median(rc, pairs));
    printf("goal: <= 1%% throughput loss, <= 2%% P99 change. Server exit status %d; data in %s\n",
           WIFEXITED(st) ? WEXITSTATUS(st) : -1, dir);
    return 0;
}
