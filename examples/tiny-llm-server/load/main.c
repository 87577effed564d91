/* SPDX-License-Identifier: Apache-2.0 */
/*
 * main.c — servprof-load: an open-loop load generator for the completion
 * server. Requests arrive as a Poisson process at --rate per second for
 * --duration seconds (or --requests arrivals), with prompt and output
 * lengths drawn uniformly from ranges, a share of prompts beginning with a
 * common prefix (so the server's prefix cache has something to find), and
 * at most --concurrency requests in flight: an arrival that finds every
 * client slot busy waits for one (counted as client queue time), so the
 * offered load stays open-loop up to that limit.
 *
 * Design. The main thread draws the arrival schedule from a seeded
 * generator and releases jobs at their times (absolute monotonic sleeps, so
 * delays do not accumulate); a pool of --concurrency worker threads sends
 * them (client.c). With --duration, arrivals still waiting for a slot when
 * the window closes are not sent (and counted), so a run lasts the
 * duration plus the time to finish what is in flight. Results are summarized at the end (stats.c), optionally
 * written per request to --out (keyed by the id the server returned).
 */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "client.h"
#include "stats.h"

typedef struct job {
    int64_t arrival;   /* monotonic ns */
    int n_prompt, n_out, shared;
} job;

typedef struct opts {
    const char *host, *out, *summary_json;
    int port, concurrency, prompt_min, prompt_max, out_min, out_max, shared_prefix, vocab, stream;
    int max_requests, timeout_s, quiet;
    double rate, duration, prefix_fraction;
    unsigned long long seed;
} opts;

static struct {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    job *jobs;          /* released jobs, a queue */
    size_t head, tail, cap;
    int closed;
    int64_t end;        /* with --duration: jobs not started by then are not sent */
    size_t unsent;
    lg_result *res;
    size_t nres, rescap;
    const opts *o;
    int32_t *prefix;
} g = {.mu = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER};

static uint64_t rng_next(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static double rng_unit(uint64_t *s) { return (double)(rng_next(s) >> 11) * 0x1.0p-53; }

static int rng_range(uint64_t *s, int lo, int hi)
{
    return lo + (int)(rng_next(s) % (uint64_t)(hi - lo + 1));
}

static int64_t mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void sleep_until(int64_t t)
{
    struct timespec ts = {.tv_sec = t / 1000000000, .tv_nsec = t % 1000000000};
    while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
        ;
}

/* The JSON body of a job; the caller frees it. */
static char *make_body(const job *j, uint64_t *rng, size_t *len)
{
    const opts *o = g.o;
    size_t cap = (size_t)j->n_prompt * 12 + 128;
    char *b = malloc(cap);
    if (!b)
        return NULL;
    size_t n = (size_t)snprintf(b, cap, "{\"prompt_tokens\":[");
    for (int i = 0; i < j->n_prompt; i++) {
        int t = j->shared && i < o->shared_prefix ? g.prefix[i] : rng_range(rng, 0, o->vocab - 1);
        n += (size_t)snprintf(b + n, cap - n, i ? ",%d" : "%d", t);
    }
    n += (size_t)snprintf(b + n, cap - n, "],\"max_tokens\":%d,\"stream\":%s}", j->n_out,
                          o->stream ? "true" : "false");
    *len = n;
    return b;
}

static void *worker(void *arg)
{
    uint64_t rng = g.o->seed * 7919 + (uint64_t)(uintptr_t)arg;
    for (;;) {
        pthread_mutex_lock(&g.mu);
        while (g.head == g.tail && !g.closed)
            pthread_cond_wait(&g.cv, &g.mu);
        if (g.head == g.tail) {
            pthread_mutex_unlock(&g.mu);
            return NULL;
        }
        job j = g.jobs[g.head++ % g.cap];
        if (g.end && mono_ns() > g.end) {
            /* Its arrival found every slot busy until the window closed:
             * sending it now would stretch the run past --duration. */
            g.unsent++;
            pthread_mutex_unlock(&g.mu);
            continue;
        }
        pthread_mutex_unlock(&g.mu);

        lg_result r;
        memset(&r, 0, sizeof r);
        r.n_prompt = j.n_prompt;
        r.queue_ms = (double)(mono_ns() - j.arrival) / 1e6;
        size_t len;
        char *body = make_body(&j, &rng, &len);
        if (!body) {
            snprintf(r.err, sizeof r.err, "out of memory");
        } else {
            lg_post(g.o->host, g.o->port, body, len, g.o->stream, g.o->timeout_s * 1000, &r);
            r.queue_ms = r.queue_ms < 0 ? 0 : r.queue_ms;
            free(body);
        }
        pthread_mutex_lock(&g.mu);
        if (g.nres == g.rescap) {
            size_t cap = g.rescap ? 2 * g.rescap : 1024;
            lg_result *p = realloc(g.res, cap * sizeof *p);
            if (p) {
                g.res = p;
                g.rescap = cap;
            }
        }
        if (g.nres < g.rescap)
            g.res[g.nres++] = r;
        pthread_mutex_unlock(&g.mu);
    }
}

static int push_job(const job *j)
{
    pthread_mutex_lock(&g.mu);
    if (g.tail - g.head == g.cap) {
        size_t cap = g.cap ? 2 * g.cap : 1024;
        job *p = malloc(cap * sizeof *p);
        if (!p) {
            pthread_mutex_unlock(&g.mu);
            return -1;
        }
        for (size_t i = g.head; i < g.tail; i++)
            p[i - g.head] = g.jobs[i % g.cap];
        g.tail -= g.head;
        g.head = 0;
        free(g.jobs);
        g.jobs = p;
        g.cap = cap;
    }
    g.jobs[g.tail++ % g.cap] = *j;
    pthread_cond_signal(&g.cv);
    pthread_mutex_unlock(&g.mu);
    return 0;
}

static void usage(FILE *f)
{
    fprintf(f,
        "usage: servprof-load [options]\n"
        "  --host ADDR            server address (127.0.0.1)\n"
        "  --port N               server port (8000)\n"
        "  --rate R               mean arrivals per second, Poisson (10)\n"
        "  --duration S           seconds of arrivals (10)\n"
        "  --requests N           stop after N arrivals instead (0 = use --duration)\n"
        "  --concurrency N        most requests in flight (64)\n"
        "  --prompt-len MIN:MAX   prompt tokens, uniform (64:256)\n"
        "  --output-len MIN:MAX   output tokens, uniform (16:64)\n"
        "  --shared-prefix N      tokens of a common prompt prefix (64); prompts that use it\n"
        "                         are at least N+1 tokens long\n"
        "  --prefix-fraction F    share of requests that use it, 0..1 (0.5)\n"
        "  --vocab N              token ids are drawn below N (2048)\n"
        "  --no-stream            ask for whole answers (no TTFT then)\n"
        "  --seed N               random seed (1)\n"
        "  --timeout S            per-request timeout (60)\n"
        "  --out FILE             per-request results as CSV\n"
        "  --summary-json FILE    the summary as one JSON line ('-' = stdout)\n"
        "  --quiet                no table on stdout\n");
}

static int parse_range(const char *name, const char *s, int *lo, int *hi)
{
    if (sscanf(s, "%d:%d", lo, hi) == 2 || (sscanf(s, "%d", lo) == 1 && (*hi = *lo, 1)))
        if (*lo >= 1 && *hi >= *lo && *hi <= 1000000)
            return 0;
    fprintf(stderr, "servprof-load: --%s wants MIN:MAX with 1 <= MIN <= MAX, got '%s'\n", name, s);
    return -1;
}

static int parse_num(const char *name, const char *s, double lo, double hi, double *out)
{
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (errno || end == s || *end || !(v >= lo && v <= hi)) {
        fprintf(stderr, "servprof-load: --%s wants a number in %g..%g, got '%s'\n", name, lo, hi, s);
        return -1;
    }
    *out = v;
    return 0;
}

static int parse_opts(int argc, char **argv, opts *o)
{
    static const struct option lo[] = {
        {"host", 1, 0, 'H'}, {"port", 1, 0, 'p'}, {"rate", 1, 0, 'r'}, {"duration", 1, 0, 'd'},
        {"requests", 1, 0, 'n'}, {"concurrency", 1, 0, 'c'}, {"prompt-len", 1, 0, 'P'},
        {"output-len", 1, 0, 'O'}, {"shared-prefix", 1, 0, 's'}, {"prefix-fraction", 1, 0, 'f'},
        {"vocab", 1, 0, 'v'}, {"no-stream", 0, 0, 'S'}, {"seed", 1, 0, 'e'}, {"timeout", 1, 0, 't'},
        {"out", 1, 0, 'o'}, {"summary-json", 1, 0, 'j'}, {"quiet", 0, 0, 'q'}, {"help", 0, 0, 'h'},
        {0, 0, 0, 0}};
    int c, rc = 0;
    double v;
    while ((c = getopt_long(argc, argv, "h", lo, NULL)) != -1) {
        switch (c) {
        case 'H': o->host = optarg; break;
        case 'p': rc |= parse_num("port", optarg, 1, 65535, &v); o->port = (int)v; break;
        case 'r': rc |= parse_num("rate", optarg, 0.001, 1e6, &o->rate); break;
        case 'd': rc |= parse_num("duration", optarg, 0.001, 86400, &o->duration); break;
        case 'n': rc |= parse_num("requests", optarg, 0, 1e9, &v); o->max_requests = (int)v; break;
        case 'c': rc |= parse_num("concurrency", optarg, 1, 4096, &v); o->concurrency = (int)v; break;
        case 'P': rc |= parse_range("prompt-len", optarg, &o->prompt_min, &o->prompt_max); break;
        case 'O': rc |= parse_range("output-len", optarg, &o->out_min, &o->out_max); break;
        case 's': rc |= parse_num("shared-prefix", optarg, 0, 1e6, &v); o->shared_prefix = (int)v; break;
        case 'f': rc |= parse_num("prefix-fraction", optarg, 0, 1, &o->prefix_fraction); break;
        case 'v': rc |= parse_num("vocab", optarg, 1, 1e9, &v); o->vocab = (int)v; break;
        case 'S': o->stream = 0; break;
        case 'e': rc |= parse_num("seed", optarg, 0, 1e18, &v); o->seed = (unsigned long long)v; break;
        case 't': rc |= parse_num("timeout", optarg, 1, 86400, &v); o->timeout_s = (int)v; break;
        case 'o': o->out = optarg; break;
        case 'j': o->summary_json = optarg; break;
        case 'q': o->quiet = 1; break;
        case 'h': usage(stdout); exit(0);
        default: usage(stderr); return -1;
        }
    }
    if (optind < argc) {
        fprintf(stderr, "servprof-load: unexpected argument '%s'\n", argv[optind]);
        return -1;
    }
    return rc ? -1 : 0;
}

int main(int argc, char **argv)
{
    opts o = {.host = "127.0.0.1", .port = 8000, .concurrency = 64, .prompt_min = 64,
              .prompt_max = 256, .out_min = 16, .out_max = 64, .shared_prefix = 64, .vocab = 2048,
              .stream = 1, .timeout_s = 60, .rate = 10, .duration = 10, .prefix_fraction = 0.5,
              .seed = 1};
    if (parse_opts(argc, argv, &o))
        return 2;
    g.o = &o;
    uint64_t rng = o.seed;
    g.prefix = malloc(((size_t)o.shared_prefix + 1) * sizeof *g.prefix);
    pthread_t *th = malloc((size_t)o.concurrency * sizeof *th);
    if (!g.prefix || !th) {
        fprintf(stderr, "servprof-load: out of memory\n");
        return 1;
    }
    for (int i = 0; i < o.shared_prefix; i++)
        g.prefix[i] = rng_range(&rng, 0, o.vocab - 1);
    int nth = 0;
    for (; nth < o.concurrency; nth++)
        if (pthread_create(&th[nth], NULL, worker, (void *)(uintptr_t)nth))
            break;
    if (nth == 0) {
        fprintf(stderr, "servprof-load: cannot start worker threads\n");
        return 1;
    }
    if (!o.quiet)
        fprintf(stderr, "servprof-load: %.2f req/s Poisson for %s, %d client slots, prompts %d..%d, "
                "outputs %d..%d tokens, against %s:%d\n", o.rate,
                o.max_requests ? "a request count" : "a duration", nth, o.prompt_min, o.prompt_max,
                o.out_min, o.out_max, o.host, o.port);

    int64_t t0 = mono_ns(), t = t0, end = t0 + (int64_t)(o.duration * 1e9);
    g.end = o.max_requests ? 0 : end;
    for (int k = 0; o.max_requests ? k < o.max_requests : 1; k++) {
        t += (int64_t)(-log(1.0 - rng_unit(&rng)) / o.rate * 1e9);
        if (!o.max_requests && t > end)
            break;
        job j = {.arrival = t, .n_prompt = rng_range(&rng, o.prompt_min, o.prompt_max),
                 .n_out = rng_range(&rng, o.out_min, o.out_max)};
        j.shared = o.shared_prefix > 0 && rng_unit(&rng) < o.prefix_fraction;
        if (j.shared && j.n_prompt < o.shared_prefix + 1)
            j.n_prompt = o.shared_prefix + 1;
        sleep_until(t);
        if (push_job(&j)) {
            fprintf(stderr, "servprof-load: out of memory for the job queue; stopping arrivals\n");
            break;
        }
    }
    pthread_mutex_lock(&g.mu);
    g.closed = 1;
    pthread_cond_broadcast(&g.cv);
    pthread_mutex_unlock(&g.mu);
    for (int i = 0; i < nth; i++)
        pthread_join(th[i], NULL);
    double wall = (double)(mono_ns() - t0) / 1e9;

    if (!o.quiet) {
        lg_summary(stdout, g.res, g.nres, g.unsent, wall, 0);
    }
    if (o.summary_json) {
        FILE *f = strcmp(o.summary_json, "-") ? fopen(o.summary_json, "w") : stdout;
        if (!f) {
            fprintf(stderr, "servprof-load: cannot write %s: %s\n", o.summary_json, strerror(errno));
        } else {
            lg_summary(f, g.res, g.nres, g.unsent, wall, 1);
            if (f != stdout)
                fclose(f);
        }
    }
    if (o.out && lg_write_csv(o.out, g.res, g.nres))
        fprintf(stderr, "servprof-load: cannot write %s: %s\n", o.out, strerror(errno));
    size_t ok = 0;
    for (size_t i = 0; i < g.nres; i++)
        ok += !g.res[i].err[0];
    free(g.res);
    free(g.jobs);
    free(g.prefix);
    free(th);
    return g.nres && ok == 0 ? 1 : 0;
}
