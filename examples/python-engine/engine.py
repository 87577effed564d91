#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""engine.py — a small real PyTorch LLM server, instrumented with servprof.

What it is: a decoder-only transformer (a few layers, tiny vocabulary,
weights made at start from --seed; nothing is downloaded) served over HTTP
with aiohttp, continuous batching and a paged KV-cache budget, in the shape
vLLM and SGLang have, so that the Python binding is exercised as they would
exercise it. It speaks what servprof-load sends (the tiny-llm-server API):

    POST /v1/completions  {"prompt_tokens": [ids] | "prompt": "text",
                           "max_tokens": N, "stream": true|false}
        -> OpenAI-style completion (SSE chunks when streaming), header
           X-Request-Id, "usage" with token counts and "profiled"
    GET  /health

Threads: the aiohttp event loop (front end) and one engine thread (the
scheduler and the model: torch work must not block the event loop). They
meet in a locked WAITING queue; tokens go back through
loop.call_soon_threadsafe into each request's asyncio.Queue.

Records (the tiny-llm-server vocabulary):
  front end  httpReq, tokenize (span), Link(http id, engine id),
             detokenize (first token INFO, later ones DETAILED),
             httpRes (recvTokenSize=, replyTokenSize=, outcome)
  scheduler  Enqueue / Dequeue (QueueSize=, scope#QueueName WAITING /
             RUNNING), BatchSchedule (rid list, batch_type, batch_size),
             KVCacheStatus (block metrics) once per step
  model      modelExec around forward (the torch forward of the batch)
  steps      servprof.step() once per engine iteration; servprof.poll()
             while idle, so the torch profiler of "acl_task_time": 3
             follows collection even when no request comes.

Run it (collection follows SERVICE_PROF_CONFIG_PATH, edited while it runs):

    SERVPROF_LIB=build/lib/libservprof.so SERVICE_PROF_CONFIG_PATH=/tmp/prof.json \\
        python3 examples/python-engine/engine.py --port 8000
    build/bin/servprof-load --port 8000 --requests 64 --vocab 256 --prompt-len 8:32 \\
        --output-len 4:16 --shared-prefix 0

Without PyTorch (python3-torch) or aiohttp (python3-aiohttp) it says so and
exits with status 3.
"""

import argparse
import asyncio
import collections
import json
import os
import signal
import sys
import threading
import time

try:
    import servprof
except ImportError:  # running from the source tree
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                                    "python"))
    import servprof
from servprof import Level, Profiler

MISSING = 3  # exit status: a required package is not installed
try:
    import torch
    import torch.nn.functional as F
except ImportError as e:
    torch = None
    _why = "PyTorch is not installed (%s); on Debian: apt-get install python3-torch" % e
try:
    from aiohttp import web
except ImportError as e:
    web = None
    _why = "aiohttp is not installed (%s); on Debian: apt-get install python3-aiohttp" % e

PREFILL, DECODE = 0, 1


# ------------------------------------------------------------------ model

if torch is not None:
    class Layer(torch.nn.Module):
        """Pre-norm attention + MLP, with a per-request KV cache."""

        def __init__(self, d, heads):
            super().__init__()
            self.heads = heads
            self.norm1 = torch.nn.LayerNorm(d)
            self.qkv = torch.nn.Linear(d, 3 * d)
            self.proj = torch.nn.Linear(d, d)
            self.norm2 = torch.nn.LayerNorm(d)
            self.mlp = torch.nn.Sequential(torch.nn.Linear(d, 4 * d), torch.nn.GELU(),
                                           torch.nn.Linear(4 * d, d))

        def forward(self, x, cache):
            """x: [T, d] new tokens of one request; cache: [k, v] or None."""
            t, d = x.shape
            q, k, v = self.qkv(self.norm1(x)).split(d, dim=-1)
            if cache is not None:
                k = torch.cat([cache[0], k])
                v = torch.cat([cache[1], v])
            h = self.heads
            qh = q.view(t, h, d // h).transpose(0, 1)
            kh = k.view(-1, h, d // h).transpose(0, 1)
            vh = v.view(-1, h, d // h).transpose(0, 1)
            past = k.shape[0] - t
            mask = torch.ones(t, k.shape[0], dtype=torch.bool).tril(past)
            a = F.scaled_dot_product_attention(qh, kh, vh, attn_mask=mask) \
                if hasattr(F, "scaled_dot_product_attention") else \
                torch.softmax((qh @ kh.transpose(-1, -2)) / (d // h) ** 0.5
                              + torch.where(mask, 0.0, float("-inf")), dim=-1) @ vh
            x = x + self.proj(a.transpose(0, 1).reshape(t, d))
            x = x + self.mlp(self.norm2(x))
            return x, [k, v]

    class TinyDecoder(torch.nn.Module):
        def __init__(self, vocab, d, layers, heads, max_len):
            super().__init__()
            self.tok = torch.nn.Embedding(vocab, d)
            self.pos = torch.nn.Embedding(max_len, d)
            self.layers = torch.nn.ModuleList([Layer(d, heads) for _ in range(layers)])
            self.norm = torch.nn.LayerNorm(d)
            self.head = torch.nn.Linear(d, vocab, bias=False)

        def forward(self, tokens, start, caches):
            """Next-token logits of one request: tokens [T] at positions
            start..start+T-1; caches: one [k, v] per layer (or None)."""
            pos = torch.arange(start, start + tokens.shape[0])
            x = self.tok(tokens) + self.pos(pos)
            new = []
            for layer, c in zip(self.layers, caches):
                x, kv = layer(x, c)
                new.append(kv)
            return self.head(self.norm(x[-1])), new


# ------------------------------------------------------------------ engine

class Request:
    def __init__(self, http_id, engine_id, tokens, max_tokens, loop, out):
        self.http_id = http_id
        self.engine_id = engine_id
        self.tokens = list(tokens)   # prompt, then generated
        self.n_prompt = len(tokens)
        self.max_tokens = max_tokens
        self.caches = None           # per-layer [k, v] once prefilled
        self.blocks = 0
        self.iter = 0
        self.aborted = False         # the client went away (set by the front end)
        self.loop = loop
        self.out = out               # asyncio.Queue: token ids, None at the end

    @property
    def n_out(self):
        return len(self.tokens) - self.n_prompt


class Engine:
    """The scheduler and the model, on one thread."""

    def __init__(self, args):
        torch.manual_seed(args.seed)
        torch.set_num_threads(max(1, args.threads))
        self.model = TinyDecoder(args.vocab, args.dim, args.layers, args.heads,
                                 args.max_len).eval()
        self.args = args
        self.vocab = args.vocab
        self.block_size = args.block_size
        self.total_blocks = args.kv_blocks
        self.free_blocks = args.kv_blocks
        self.waiting = collections.deque()
        self.running = []
        self.cv = threading.Condition()
        self.stopping = False
        self.steps = 0
        self.thread = threading.Thread(target=self.run, name="engine", daemon=True)

    # called from the event loop
    def submit(self, req):
        with self.cv:
            self.waiting.append(req)
            n = len(self.waiting)
            self.cv.notify()
        (Profiler(Level.INFO).domain("Schedule").res(req.engine_id)
         .metric("QueueSize", n).metric_scope("QueueName", "WAITING").event("Enqueue"))

    def stop(self):
        with self.cv:
            self.stopping = True
            self.cv.notify()
        self.thread.join(30)

    def blocks_for(self, tokens):
        return -(-tokens // self.block_size)

    def schedule(self):
        """Continuous batching: every running request decodes one token;
        waiting ones are prefilled while the token budget and KV blocks
        last. Returns [(req, type, n_tokens)]."""
        batch, budget = [], self.args.max_batch_tokens
        for r in self.running:
            grow = self.blocks_for(len(r.tokens) + 1) - r.blocks
            if grow <= self.free_blocks:
                self.free_blocks -= grow
                r.blocks += grow
                batch.append((r, DECODE, 1))
                budget -= 1
        with self.cv:
            while self.waiting and len(self.running) < self.args.max_running:
                r = self.waiting[0]
                need = self.blocks_for(r.n_prompt + 1)
                if r.n_prompt > budget or need > self.free_blocks:
                    break
                self.waiting.popleft()
                left = len(self.waiting)
                self.free_blocks -= need
                r.blocks = need
                budget -= r.n_prompt
                self.running.append(r)
                batch.append((r, PREFILL, r.n_prompt))
                (Profiler(Level.INFO).domain("Schedule").res(r.engine_id)
                 .metric("QueueSize", left).metric_scope("QueueName", "WAITING").event("Dequeue"))
                (Profiler(Level.INFO).domain("Schedule").res(r.engine_id)
                 .metric("QueueSize", len(self.running)).metric_scope("QueueName", "RUNNING")
                 .event("Enqueue"))
        return batch

    def rid_list(self, batch):
        return [{"rid": r.engine_id, "iter": r.iter, "type": t, "num_scheduled_tokens": n}
                for r, t, n in batch]

    def run(self):
        servprof.set_thread_name("engine")
        while True:
            with self.cv:
                if not self.stopping and not self.waiting and not self.running:
                    self.cv.wait(0.05)  # bounded: the idle loop polls the profiler
                if self.stopping:
                    return
                idle = not self.waiting and not self.running
            if idle:
                servprof.poll()  # outside the lock: a torch start/stop must not block submit()
                continue
            self.step()

    def step(self):
        free_before = self.free_blocks
        with servprof.span("BatchSchedule", domain="BatchSchedule") as s:
            batch = self.schedule()
            kinds = {t for _, t, _ in batch}
            btype = "Prefill,Decode" if len(kinds) == 2 else (
                "Prefill" if PREFILL in kinds else "Decode")
            rids = self.rid_list(batch)
            s.res(rids)
            s.attr("batch_type", btype)
            s.attr("batch_size", len(batch))
            s.attr("total_scheduled_tokens", sum(n for _, _, n in batch))
        if batch:
            with servprof.span("modelExec", domain="ModelExecute", rid=rids):
                with servprof.span("forward", domain="ModelExecute", rid=rids,
                                   batch_type=btype, batch_size=len(batch)):
                    new = self.forward(batch)
            self.finish(batch, new, free_before)
            self.steps += 1
        servprof.step()
        if not batch:  # nothing fits now: wait (bounded) instead of spinning
            with self.cv:
                self.cv.wait(0.01)

    @torch.inference_mode() if torch is not None else (lambda f: f)
    def forward(self, batch):
        out = []
        for r, t, n in batch:
            toks = torch.tensor(r.tokens[-n:])
            caches = r.caches or [None] * len(self.model.layers)
            logits, r.caches = self.model(toks, len(r.tokens) - n, caches)
            out.append(int(torch.argmax(logits)))
        return out

    def finish(self, batch, new, free_before):
        done = []
        for (r, t, n), tok in zip(batch, new):
            r.iter += 1
            r.tokens.append(tok)
            finished = (r.n_out >= r.max_tokens or len(r.tokens) >= self.args.max_len
                        or r.aborted)
            r.loop.call_soon_threadsafe(r.out.put_nowait, tok)
            if finished:
                done.append(r)
        for r in done:
            self.running.remove(r)
            self.free_blocks += r.blocks
            r.blocks = 0
            r.caches = None
            (Profiler(Level.INFO).domain("Schedule").res(r.engine_id)
             .metric("QueueSize", len(self.running)).metric_scope("QueueName", "RUNNING")
             .event("Dequeue"))
            r.loop.call_soon_threadsafe(r.out.put_nowait, None)
        used = self.total_blocks - self.free_blocks
        (Profiler(Level.INFO).domain("KVCache")
         .metric("TotalBlocks", self.total_blocks).metric("UsedBlocks", used)
         .metric("FreeBlocks", self.free_blocks).metric("FreeBlocksBefore", free_before)
         .metric("FreeBlocksAfter", self.free_blocks)
         .metric("UsagePercent", used / self.total_blocks if self.total_blocks else 0.0)
         .event("KVCacheStatus"))


# ------------------------------------------------------------------ HTTP

class Frontend:
    def __init__(self, engine, args):
        self.engine = engine
        self.args = args
        self.n = 0

    def error(self, status, msg):
        return web.json_response({"error": {"message": msg, "type": "invalid_request_error",
                                            "code": status}}, status=status)

    def read_prompt(self, body):
        if "prompt_tokens" in body:
            p = body["prompt_tokens"]
            if not isinstance(p, list) or not p or not all(
                    isinstance(t, int) and not isinstance(t, bool) and 0 <= t < self.engine.vocab
                    for t in p):
                return None, "prompt_tokens: a non-empty list of ids in 0..%d" % (self.engine.vocab - 1)
            return p, None
        p = body.get("prompt")
        if not isinstance(p, str) or not p:
            return None, "give prompt (text) or prompt_tokens (ids)"
        return [b % self.engine.vocab for b in p.encode("utf-8")], None

    async def completions(self, request):
        self.n += 1
        http_id = "http-%d" % self.n
        engine_id = "req-%d" % self.n
        try:
            body = await request.json()
        except (ValueError, UnicodeDecodeError):
            return self.error(400, "the body is not JSON")
        if not isinstance(body, dict):
            return self.error(400, "the body is not a JSON object")
        max_tokens = body.get("max_tokens", 16)
        if not isinstance(max_tokens, int) or isinstance(max_tokens, bool) or not 1 <= max_tokens <= 4096:
            return self.error(400, "max_tokens: an integer in 1..4096")
        stream = body.get("stream", False) is True
        profiled = int(servprof.is_enabled())
        Profiler(Level.INFO).domain("Request").res(http_id).attr("max_tokens", max_tokens).event("httpReq")
        with servprof.span("tokenize", domain="Request", rid=http_id) as s:
            tokens, why = self.read_prompt(body)
            s.attr("num_tokens", len(tokens or []))
        if why:
            self.http_res(http_id, 0, 0, "rejected")
            return self.error(400, why)
        if len(tokens) + max_tokens > self.args.max_len:
            self.http_res(http_id, len(tokens), 0, "rejected")
            return self.error(400, "prompt + max_tokens is over the model's %d positions" % self.args.max_len)
        servprof.link(http_id, engine_id)
        loop = asyncio.get_running_loop()
        req = Request(http_id, engine_id, tokens, max_tokens, loop, asyncio.Queue())
        self.engine.submit(req)
        resp = None
        if stream:
            resp = web.StreamResponse(headers={"Content-Type": "text/event-stream",
                                               "X-Request-Id": http_id})
            await resp.prepare(request)
        n = 0
        text = []
        outcome = "ok"
        try:
            while True:
                tok = await req.out.get()
                if tok is None:
                    break
                n += 1
                Profiler(Level.INFO if n == 1 else Level.DETAILED).domain("Request").res(http_id) \
                    .attr("num_tokens", 1).attr("num_output_tokens", n).event("detokenize")
                word = "t%d " % tok
                if stream:
                    await resp.write(("data: " + json.dumps(
                        {"id": http_id, "object": "text_completion",
                         "choices": [{"index": 0, "text": word, "finish_reason": None}]}, separators=(",", ":"))
                        + "\n\n").encode())
                else:
                    text.append(word)
        except (asyncio.CancelledError, ConnectionResetError):
            outcome = "aborted"
            req.aborted = True       # the engine drops it at its next step
            raise
        finally:
            self.http_res(http_id, len(tokens), n, outcome)
        final = {"id": http_id, "object": "text_completion", "model": "tiny-torch-decoder",
                 "choices": [{"index": 0, "text": "" if stream else "".join(text),
                              "finish_reason": "length"}],
                 "usage": {"prompt_tokens": len(tokens), "completion_tokens": n,
                           "total_tokens": len(tokens) + n},
                 "profiled": profiled}
        if not stream:
            return web.json_response(final, headers={"X-Request-Id": http_id})
        await resp.write(("data: " + json.dumps(final) + "\n\ndata: [DONE]\n\n").encode())
        await resp.write_eof()
        return resp

    def http_res(self, http_id, recv, reply, outcome):
        (Profiler(Level.INFO).domain("Request").res(http_id).metric("recvTokenSize", recv)
         .metric("replyTokenSize", reply).attr("outcome", outcome).event("httpRes"))

    async def health(self, request):
        return web.json_response({"status": "ok", "steps": self.engine.steps})


def parse_args(argv):
    a = argparse.ArgumentParser(description="A small real PyTorch LLM server instrumented "
                                "with servprof (see the module comment).")
    a.add_argument("--host", default="127.0.0.1")
    a.add_argument("--port", type=int, default=8000, help="0: any free port (printed)")
    a.add_argument("--seed", type=int, default=1, help="weights are made from it")
    a.add_argument("--vocab", type=int, default=256)
    a.add_argument("--dim", type=int, default=64)
    a.add_argument("--layers", type=int, default=2)
    a.add_argument("--heads", type=int, default=4)
    a.add_argument("--max-len", type=int, default=512, help="positions (prompt + output)")
    a.add_argument("--max-batch-tokens", type=int, default=512)
    a.add_argument("--max-running", type=int, default=32)
    a.add_argument("--kv-blocks", type=int, default=512)
    a.add_argument("--block-size", type=int, default=16)
    a.add_argument("--threads", type=int, default=1, help="torch intra-op threads")
    args = a.parse_args(argv)
    if args.dim % args.heads:
        a.error("--dim must be a multiple of --heads")
    return args


def main(argv=None):
    if torch is None or web is None:
        print("engine.py: " + _why, file=sys.stderr)
        return MISSING
    args = parse_args(argv)
    servprof.set_process_name("python-engine")
    servprof.meta("model_name", "tiny-torch-decoder")
    servprof.meta("model_config", "vocab=%d dim=%d layers=%d heads=%d seed=%d" % (
        args.vocab, args.dim, args.layers, args.heads, args.seed))
    engine = Engine(args)
    engine.thread.start()
    front = Frontend(engine, args)
    app = web.Application()
    app.router.add_post("/v1/completions", front.completions)
    app.router.add_get("/health", front.health)

    async def serve():
        runner = web.AppRunner(app)
        await runner.setup()
        site = web.TCPSite(runner, args.host, args.port)
        await site.start()
        port = runner.addresses[0][1]
        print("listening on http://%s:%d" % (args.host, port), flush=True)
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, stop.set)
        await stop.wait()
        await runner.cleanup()

    asyncio.run(serve())
    engine.stop()
    print("served %d requests in %d steps" % (front.n, engine.steps), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
