#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""engine.py — a toy asyncio LLM engine, instrumented like a vLLM-style server.

Nothing is computed: the "model" sleeps for a time that grows with the
tokens in the batch. What matters is the shape, which is a real serving
engine's:

  front end   generate(): an HTTP-like request arrives (httpReq), is
              tokenized (span), linked to its engine id, streams tokens back
              (detokenize) and ends (httpRes with token counts);
  scheduler   a WAITING queue and a RUNNING set (Enqueue / Dequeue with
              QueueSize= and scope#QueueName), continuous batching under a
              token budget and a paged KV cache (its state in
              KVCacheStatus), preemption back to WAITING when blocks run out;
  executor    one step per loop: the batch span (batchFrameworkProcessing,
              rid = [{rid, iter, type, num_scheduled_tokens}]), modelExec
              around forward (the device step) and sample (@traced).

Run it:

    SERVPROF_LIB=build/src/libservprof.so \\
        python3 examples/python-engine/engine.py --requests 32 --prof-dir /tmp/pe
    build/bin/servprof parse --input-path /tmp/pe --output-path /tmp/pe-out

With --prof-dir the example writes a config there and starts/stops
collection itself (servprof.start()/stop()); without it, collection follows
the file named by SERVICE_PROF_CONFIG_PATH, which you may edit while it runs.
"""

import argparse
import asyncio
import collections
import json
import os
import random
import sys
import time

try:
    import servprof
except ImportError:  # running from the source tree
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                                    "python"))
    import servprof
from servprof import Level, Profiler, span, traced

PREFILL, DECODE = 0, 1


class Request:
    """One request's state, owned by the engine loop once enqueued."""

    def __init__(self, n, prompt_tokens, max_tokens):
        self.http_id = "http-%d" % n
        self.rid = "req-%d" % n
        self.prompt_tokens = prompt_tokens
        self.max_tokens = max_tokens
        self.computed = 0          # tokens whose KV is in the cache
        self.output = 0            # tokens generated
        self.blocks = 0            # KV blocks held
        self.iter = 0              # engine steps this request took part in
        self.preemptions = 0
        self.stream = asyncio.Queue()  # tokens out; None ends the stream

    def need(self):
        """Tokens to schedule next: the whole prompt (and any recompute
        after a preemption) first, then one per step."""
        return self.prompt_tokens + self.output - self.computed if self.computed == 0 else 1


class BlockPool:
    """A paged KV cache: fixed-size blocks, counted, not stored."""

    def __init__(self, total, block_size):
        self.total = total
        self.block_size = block_size
        self.free = total

    def blocks_for(self, tokens):
        return -(-tokens // self.block_size)

    def grow(self, req, tokens_after):
        """Gives req enough blocks for tokens_after tokens; False if full."""
        want = self.blocks_for(tokens_after) - req.blocks
        if want <= 0:
            return True
        if want > self.free:
            return False
        self.free -= want
        req.blocks += want
        # No per-request Allocate/Free events: the reference parser reads them
        # as its old KV format, which it cannot mix with KVCacheStatus.
        return True

    def release(self, req):
        if req.blocks:
            self.free += req.blocks
            req.blocks = 0


class Engine:
    """The scheduler and the executor, one asyncio task."""

    def __init__(self, args):
        self.args = args
        self.waiting = collections.deque()
        self.running = []
        self.kv = BlockPool(args.kv_blocks, args.block_size)
        self.wake = asyncio.Event()
        self.stopping = False
        self.steps = 0

    # -- queues --------------------------------------------------------

    def _queue_event(self, name, queue, req, size):
        p = Profiler(Level.INFO).domain("Schedule").res(req.rid).metric("QueueSize", size) \
            .metric_scope("QueueName", queue)
        if req.preemptions:
            p.attr("preemptions", req.preemptions)
        p.event(name)

    def add(self, req, front=False):
        if front:
            self.waiting.appendleft(req)
        else:
            self.waiting.append(req)
        self._queue_event("Enqueue", "WAITING", req, len(self.waiting))
        self.wake.set()

    # -- one step ------------------------------------------------------

    def schedule(self):
        """Picks this step's batch: running requests decode one token each
        (preempting the newest when blocks run out), then waiting requests
        are admitted for prefill while the token budget and blocks allow."""
        budget = self.args.max_batch_tokens
        batch = []
        kept = []
        for req in self.running:
            if self.kv.grow(req, req.computed + 1):
                kept.append(req)
                continue
            while not self.kv.grow(req, req.computed + 1) and kept:
                victim = kept.pop()  # newest first, as vLLM does
                self._preempt(victim)
            if self.kv.grow(req, req.computed + 1):
                kept.append(req)
            else:
                self._preempt(req)
        self.running = kept
        for req in self.running:
            batch.append((req, DECODE, 1))
            budget -= 1
        while self.waiting and len(batch) < self.args.max_batch_size:
            req = self.waiting[0]
            n = req.need()
            if n > budget or not self.kv.grow(req, req.computed + n):
                break
            self.waiting.popleft()
            self._queue_event("Dequeue", "WAITING", req, len(self.waiting))
            self.running.append(req)
            self._queue_event("Enqueue", "RUNNING", req, len(self.running))
            batch.append((req, PREFILL, n))
            budget -= n
        return batch

    def _preempt(self, req):
        self.kv.release(req)
        req.computed = 0
        req.preemptions += 1
        self._queue_event("Dequeue", "RUNNING", req, len(self.running))
        self.add(req, front=True)

    def kv_status(self, free_before):
        kv = self.kv
        (Profiler(Level.INFO).domain("KVCache").metric("TotalBlocks", kv.total)
         .metric("UsedBlocks", kv.total - kv.free).metric("FreeBlocks", kv.free)
         .metric("FreeBlocksBefore", free_before).metric("FreeBlocksAfter", kv.free)
         .metric("UsagePercent", (kv.total - kv.free) / kv.total).event("KVCacheStatus"))

    async def forward(self, rids, tokens):
        """The fake device step: its time grows with the batch's tokens."""
        async with span("forward", domain="ModelExecute", rid=rids):
            await asyncio.sleep((self.args.step_ms + self.args.token_us * tokens / 1000) / 1000)

    @traced(name="sample", domain="ModelExecute")
    def sample(self, batch):
        return [random.random() for _ in batch]

    async def step(self):
        free_before = self.kv.free
        with span("batchFrameworkProcessing", domain="BatchSchedule") as sched:
            batch = self.schedule()
            rids = [{"rid": r.rid, "iter": r.iter, "type": t, "num_scheduled_tokens": n,
                     "num_prompt_tokens": r.prompt_tokens, "num_computed_tokens": r.computed}
                    for r, t, n in batch]
            kinds = {t for _, t, _ in batch}
            btype = "Prefill, Decode" if len(kinds) == 2 else ("Prefill" if PREFILL in kinds
                                                              else "Decode")
            sched.res(rids).attr("batch_type", btype).attr("batch_size", len(batch))
        if not batch:
            return False
        self.kv_status(free_before)
        tokens = sum(n for _, _, n in batch)
        with span("modelExec", domain="ModelExecute", rid=rids, batch_type=btype,
                  batch_size=len(batch)):
            await self.forward(rids, tokens)
            self.sample(batch)
        for req, _, n in batch:
            req.computed += n
            req.iter += 1
            req.output += 1
            req.stream.put_nowait(req.output)
            if req.output >= req.max_tokens:
                self.running.remove(req)
                self.kv.release(req)
                req.stream.put_nowait(None)
        self.steps += 1
        servprof.step()
        return True

    async def run(self):
        servprof.set_thread_name("engine")
        while not self.stopping or self.waiting or self.running:
            if not self.waiting and not self.running:
                self.wake.clear()
                try:
                    await asyncio.wait_for(self.wake.wait(), 0.05)
                except asyncio.TimeoutError:
                    pass
                continue
            if not await self.step():
                await asyncio.sleep(0)  # nothing fit this time: let clients run


# ---------------------------------------------------------------- front end

async def generate(engine, n, prompt_tokens, max_tokens):
    """What an HTTP handler does for one request; returns its token count."""
    req = Request(n, prompt_tokens, max_tokens)
    Profiler(Level.INFO).domain("Request").res(req.http_id).attr("max_tokens", max_tokens) \
        .event("httpReq")
    with span("tokenize", domain="Request", rid=req.http_id, num_tokens=prompt_tokens):
        await asyncio.sleep(0)  # a real tokenizer would run here
    servprof.link(req.http_id, req.rid)  # front-end id first: reports name the request by it
    engine.add(req)
    out = 0
    while True:
        tok = await req.stream.get()
        if tok is None:
            break
        out = tok
        Profiler(Level.INFO).domain("Request").res(req.http_id).attr("num_output_tokens", out) \
            .event("detokenize")
    (Profiler(Level.INFO).domain("Request").res(req.http_id)
     .metric("recvTokenSize", prompt_tokens).metric("replyTokenSize", out)
     .event("httpRes"))  # no `status`: the reference reads it as a queue state
    return out


async def main_async(args):
    rng = random.Random(args.seed)
    engine = Engine(args)
    loop_task = asyncio.ensure_future(engine.run())
    clients = []
    for n in range(args.requests):
        prompt = rng.randint(args.prompt_min, args.prompt_max)
        max_tokens = rng.randint(args.out_min, args.out_max)
        clients.append(asyncio.ensure_future(generate(engine, n, prompt, max_tokens)))
        await asyncio.sleep(rng.expovariate(args.rate) if args.rate > 0 else 0)
    outs = await asyncio.gather(*clients)
    engine.stopping = True
    await loop_task
    return outs, engine.steps


def write_config(prof_dir):
    os.makedirs(prof_dir, exist_ok=True)
    path = os.path.join(prof_dir, "servprof_config.json")
    with open(path, "w") as f:
        json.dump({"enable": 0, "prof_dir": prof_dir, "profiler_level": "INFO"}, f, indent=4)
    return path


def main(argv=None):
    ap = argparse.ArgumentParser(description="A toy asyncio LLM engine, profiled by servprof.")
    ap.add_argument("--requests", type=int, default=32)
    ap.add_argument("--rate", type=float, default=200.0, help="arrivals per second (0: all at once)")
    ap.add_argument("--prompt-min", type=int, default=16)
    ap.add_argument("--prompt-max", type=int, default=200)
    ap.add_argument("--out-min", type=int, default=4)
    ap.add_argument("--out-max", type=int, default=24)
    ap.add_argument("--max-batch-size", type=int, default=8)
    ap.add_argument("--max-batch-tokens", type=int, default=512)
    ap.add_argument("--kv-blocks", type=int, default=64)
    ap.add_argument("--block-size", type=int, default=16)
    ap.add_argument("--step-ms", type=float, default=2.0, help="fixed cost of a model step")
    ap.add_argument("--token-us", type=float, default=20.0, help="cost per scheduled token")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--prof-dir", help="collect into this folder (start/stop by the program)")
    args = ap.parse_args(argv)
    if args.prompt_min < 1 or args.prompt_max < args.prompt_min or args.out_min < 1 \
            or args.out_max < args.out_min:
        ap.error("token ranges must be 1 <= min <= max")
    need = -(-(args.prompt_max + args.out_max) // args.block_size)
    if args.kv_blocks < need or args.max_batch_tokens < args.prompt_max:
        ap.error("--kv-blocks (%d) must hold one whole request (%d blocks) and "
                 "--max-batch-tokens (%d) one whole prompt (%d)"
                 % (args.kv_blocks, need, args.max_batch_tokens, args.prompt_max))

    if args.prof_dir:
        os.environ["SERVICE_PROF_CONFIG_PATH"] = write_config(os.path.abspath(args.prof_dir))
        servprof.start()
    servprof.set_process_name("python-engine")
    servprof.meta("model_name", "toy-sleep-model")
    t0 = time.perf_counter()
    outs, steps = asyncio.run(main_async(args))
    dt = time.perf_counter() - t0
    store = servprof.store_path()
    if args.prof_dir:
        servprof.stop()
    print("served %d requests, %d tokens out, %d engine steps in %.2f s" % (
        len(outs), sum(outs), steps, dt))
    if store:
        print("raw store: %s" % store)
    return 0


if __name__ == "__main__":
    sys.exit(main())
