/* SPDX-License-Identifier: Apache-2.0 */
/*
 * main.c — tiny-llm-server: an OpenAI-style completion server over a tiny
 * random-weight decoder, instrumented with libservprof. Reads options,
 * builds the engine and the HTTP front end, serves until SIGINT/SIGTERM,
 * then stops in the order that lets every request end cleanly: engine
 * first (aborting what is in flight and waking every waiting response),
 * then the HTTP threads, then the profiler (draining its buffers).
 *
 * Profiling is controlled only by SERVICE_PROF_CONFIG_PATH (the library
 * watches the file); the server itself never turns it on.
 */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/scheduler.h"
#include "http.h"
#include "instrument.h"
#include "servprof.h"

typedef struct opts {
    tl_engine_cfg e;
    tl_http_cfg h;
    const char *port_file;
} opts;

static void usage(FILE *f)
{
    fprintf(f,
        "usage: tiny-llm-server [options]\n"
        "  --host ADDR               IPv4 address to bind (127.0.0.1)\n"
        "  --port N                  port, 0 = any free one (8000)\n"
        "  --port-file FILE          write the bound port into FILE once listening\n"
        "  --seed N                  weight seed (1)\n"
        "  --vocab N --d-model N --layers N --heads N --d-ff N   model sizes (2048 128 2 4 512)\n"
        "  --max-model-len N         longest sequence, prompt + output (1024)\n"
        "  --block-size N            tokens per KV block (16)\n"
        "  --num-blocks N            KV blocks in the pool (512)\n"
        "  --max-num-seqs N          most requests per step (32)\n"
        "  --max-batched-tokens N    token budget per step (256)\n"
        "  --max-inflight N          waiting + running beyond which requests get 503 (256)\n"
        "  --max-tokens-default N    max_tokens when a request gives none (16)\n"
        "  --no-chunked-prefill      schedule each prompt whole\n"
        "  --step-host-delay-us N    artificial host time after each step, model idle (0)\n"
        "  --no-prefix-caching       do not reuse cached prompt blocks\n"
        "  --model-name NAME         name reported in answers and in the profile (tiny-llm)\n"
        "  --moe E,K,R               mixture-of-experts feed-forward: E experts, top-K routing,\n"
        "                            experts over R expert-parallel ranks (threads)\n"
        "  --moe-skew E1,E2[@BIAS]   the router favours these experts (+BIAS on their logits, 3)\n"
        "  --moe-clock FILE          each rank's own dispatch/compute/combine times, a line per step and layer\n"
        "Profiling: set SERVICE_PROF_CONFIG_PATH to a servprof JSON config; edit its \"enable\".\n");
}

static int parse_int(const char *name, const char *s, int lo, int hi, int *out)
{
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || end == s || *end || v < lo || v > hi) {
        fprintf(stderr, "tiny-llm-server: --%s wants an integer in %d..%d, got '%s'\n", name, lo, hi, s);
        return -1;
    }
    *out = (int)v;
    return 0;
}

static int parse_opts(int argc, char **argv, opts *o)
{
    enum { O_HOST = 256, O_PORT, O_PORT_FILE, O_SEED, O_VOCAB, O_DMODEL, O_LAYERS, O_HEADS, O_DFF,
           O_MAXLEN, O_BS, O_NB, O_SEQS, O_TOKENS, O_INFLIGHT, O_DEFMAX, O_NOCHUNK, O_NOPREFIX,
           O_NAME, O_DELAY, O_MOE, O_MOE_SKEW, O_MOE_CLOCK, O_HELP };
    static const struct option lo[] = {
        {"host", 1, 0, O_HOST}, {"port", 1, 0, O_PORT}, {"port-file", 1, 0, O_PORT_FILE},
        {"seed", 1, 0, O_SEED}, {"vocab", 1, 0, O_VOCAB}, {"d-model", 1, 0, O_DMODEL},
        {"layers", 1, 0, O_LAYERS}, {"heads", 1, 0, O_HEADS}, {"d-ff", 1, 0, O_DFF},
        {"max-model-len", 1, 0, O_MAXLEN}, {"block-size", 1, 0, O_BS}, {"num-blocks", 1, 0, O_NB},
        {"max-num-seqs", 1, 0, O_SEQS}, {"max-batched-tokens", 1, 0, O_TOKENS},
        {"max-inflight", 1, 0, O_INFLIGHT}, {"max-tokens-default", 1, 0, O_DEFMAX},
        {"no-chunked-prefill", 0, 0, O_NOCHUNK}, {"no-prefix-caching", 0, 0, O_NOPREFIX},
        {"model-name", 1, 0, O_NAME}, {"step-host-delay-us", 1, 0, O_DELAY},
        {"moe", 1, 0, O_MOE}, {"moe-skew", 1, 0, O_MOE_SKEW}, {"moe-clock", 1, 0, O_MOE_CLOCK}, {"help", 0, 0, O_HELP}, {0, 0, 0, 0}};
    int c, seed = 1, rc = 0;
    while ((c = getopt_long(argc, argv, "h", lo, NULL)) != -1) {
        switch (c) {
        case O_HOST: o->h.host = optarg; break;
        case O_PORT: rc |= parse_int("port", optarg, 0, 65535, &o->h.port); break;
        case O_PORT_FILE: o->port_file = optarg; break;
        case O_SEED: rc |= parse_int("seed", optarg, 0, INT_MAX, &seed); break;
        case O_VOCAB: rc |= parse_int("vocab", optarg, 2, 1 << 20, &o->e.model.vocab); break;
        case O_DMODEL: rc |= parse_int("d-model", optarg, 4, 4096, &o->e.model.d_model); break;
        case O_LAYERS: rc |= parse_int("layers", optarg, 1, 64, &o->e.model.n_layers); break;
        case O_HEADS: rc |= parse_int("heads", optarg, 1, 64, &o->e.model.n_heads); break;
        case O_DFF: rc |= parse_int("d-ff", optarg, 1, 16384, &o->e.model.d_ff); break;
        case O_MAXLEN: rc |= parse_int("max-model-len", optarg, 2, 65536, &o->e.model.max_pos); break;
        case O_BS: rc |= parse_int("block-size", optarg, 1, 1024, &o->e.model.block_size); break;
        case O_NB: rc |= parse_int("num-blocks", optarg, 1, 1 << 20, &o->e.model.num_blocks); break;
        case O_SEQS: rc |= parse_int("max-num-seqs", optarg, 1, 4096, &o->e.max_num_seqs); break;
        case O_TOKENS: rc |= parse_int("max-batched-tokens", optarg, 1, 1 << 20, &o->e.max_batched_tokens); break;
        case O_INFLIGHT: rc |= parse_int("max-inflight", optarg, 1, 1 << 20, &o->e.max_inflight); break;
        case O_DEFMAX: rc |= parse_int("max-tokens-default", optarg, 1, 1 << 20, &o->h.default_max_tokens); break;
        case O_NOCHUNK: o->e.chunked_prefill = 0; break;
        case O_NOPREFIX: o->e.prefix_caching = 0; break;
        case O_NAME: o->h.model_name = optarg; break;
        case O_MOE: rc |= tl_moe_parse(optarg, &o->e.model.moe); break;
        case O_MOE_SKEW: rc |= tl_moe_parse_skew(optarg, &o->e.model.moe); break;
        case O_MOE_CLOCK: o->e.model.moe.clock_path = optarg; break;
        case O_DELAY: rc |= parse_int("step-host-delay-us", optarg, 0, 1000000, &o->e.host_delay_us); break;
        case 'h': case O_HELP: usage(stdout); exit(0);
        default: usage(stderr); return -1;
        }
    }
    if (optind < argc) {
        fprintf(stderr, "tiny-llm-server: unexpected argument '%s'\n", argv[optind]);
        return -1;
    }
    if (o->e.model.d_model % o->e.model.n_heads) {
        fprintf(stderr, "tiny-llm-server: --d-model (%d) must be a multiple of --heads (%d)\n",
                o->e.model.d_model, o->e.model.n_heads);
        return -1;
    }
    o->e.model.seed = (uint64_t)seed;
    if (!rc && (o->e.model.moe.n_hot || o->e.model.moe.clock_path) && !o->e.model.moe.n_experts) {
        fprintf(stderr, "tiny-llm-server: --moe-skew and --moe-clock need --moe E,K,R\n");
        rc = -1;
    }
    return rc ? -1 : 0;
}

static void write_port_file(const char *path, int port)
{
    char tmp[4096];
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    FILE *f = fopen(tmp, "w");
    if (!f || fprintf(f, "%d\n", port) < 0 || fclose(f) || rename(tmp, path)) {
        fprintf(stderr, "tiny-llm-server: cannot write the port file %s: %s\n", path, strerror(errno));
        return;
    }
}

int main(int argc, char **argv)
{
    opts o = {
        .e = {.model = {.vocab = 2048, .d_model = 128, .n_layers = 2, .n_heads = 4, .d_ff = 512,
                        .max_pos = 1024, .num_blocks = 512, .block_size = 16},
              .max_num_seqs = 32, .max_batched_tokens = 256, .chunked_prefill = 1,
              .prefix_caching = 1, .max_inflight = 256},
        .h = {.host = "127.0.0.1", .port = 8000, .max_connections = 512, .max_body = 1 << 20,
              .default_max_tokens = 16, .model_name = "tiny-llm"},
    };
    if (parse_opts(argc, argv, &o))
        return 2;
    if (o.h.default_max_tokens >= o.e.model.max_pos)
        o.h.default_max_tokens = o.e.model.max_pos - 1;
    o.h.max_connections = o.e.max_inflight + 64; /* room to answer 503 beyond the limit */

    /* Signals are taken by sigwait() below; every thread inherits the mask. */
    sigset_t sigs;
    sigemptyset(&sigs);
    sigaddset(&sigs, SIGINT);
    sigaddset(&sigs, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &sigs, NULL);
    signal(SIGPIPE, SIG_IGN);

    int prc = servprof_init();
    if (prc)
        fprintf(stderr, "tiny-llm-server: profiler not started (%s); serving without it\n",
                servprof_strerror(prc));
    char desc[256];
    snprintf(desc, sizeof desc, "vocab=%d d_model=%d layers=%d heads=%d d_ff=%d max_model_len=%d "
             "block_size=%d num_blocks=%d seed=%llu", o.e.model.vocab, o.e.model.d_model,
             o.e.model.n_layers, o.e.model.n_heads, o.e.model.d_ff, o.e.model.max_pos,
             o.e.model.block_size, o.e.model.num_blocks, (unsigned long long)o.e.model.seed);
    if (o.e.model.moe.n_experts) {
        size_t l = strlen(desc);
        snprintf(desc + l, sizeof desc - l, " moe_experts=%d moe_top_k=%d ep_ranks=%d", o.e.model.moe.n_experts,
                 o.e.model.moe.top_k, o.e.model.moe.ep_ranks);
    }
    ins_process(o.h.model_name, desc);

    tl_engine *e = tl_engine_new(&o.e);
    if (!e || tl_engine_start(e)) {
        tl_engine_free(e);
        servprof_shutdown();
        return 1;
    }
    tl_http *h = tl_http_start(&o.h, e);
    if (!h) {
        tl_engine_stop(e);
        tl_engine_free(e);
        servprof_shutdown();
        return 1;
    }
    fprintf(stderr, "tiny-llm-server: model %s (%s), listening on http://%s:%d\n",
            o.h.model_name, desc, o.h.host, tl_http_port(h));
    if (o.port_file)
        write_port_file(o.port_file, tl_http_port(h));

    int sig = 0;
    sigwait(&sigs, &sig);
    fprintf(stderr, "tiny-llm-server: %s, stopping\n", sig == SIGINT ? "SIGINT" : "SIGTERM");

    tl_engine_stop(e);
    tl_http_stop(h);
    tl_engine_stats s;
    tl_engine_stats_get(e, &s);
    tl_engine_free(e);
    servprof_shutdown();
    fprintf(stderr, "tiny-llm-server: stopped: %lu requests completed, %lu aborted, %lu rejected, "
            "%lu preemptions, %lu steps, %lu prompt tokens (%lu from the prefix cache), %lu output tokens\n",
            s.completed, s.aborted, s.rejected, s.preempted, s.steps, s.prompt_tokens,
            s.cached_tokens, s.output_tokens);
    return 0;
}
