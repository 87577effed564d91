# SPDX-License-Identifier: Apache-2.0
"""test_hooks_toggle.py — collection switched on and off a hundred times
while threads call hooked functions.

A child process (hooked through servprof.hooks.install, the way the
bootstrap does it) runs four threads calling a hooked plain function and
a hooked coroutine function with unique arguments — even ones return,
odd ones raise — while its main thread calls servprof.start() and
servprof.stop() 100 times. The toggler publishes a phase (0 off, 1
starting, 2 on, 3 stopping, plus 4 x the cycle number) and every call
notes the phase before and after it, so a call made wholly in one cycle's
phase 0 is known to be off and one made wholly in one cycle's phase 2
known to be on. (The cycle is in the phase because a call may outlast a
whole cycle: a thread waiting for the GIL while the others, whose hooked
calls take a microsecond, make the 16 calls a cycle waits for.)
Checked: no call lost its result or exception; no call made while off is
in any store; every call made while on is.
"""

import json
import os
import unittest

import hooklib as H
from hooklib import T

H.need("yaml")

WORK = '''
import asyncio

def work(i):
    if i % 2:
        raise ValueError(i)
    return i * 2

async def awork(i):
    if i % 2:
        raise ValueError(i)
    return i * 3
'''

HOOKS = '''
- symbol: work_mod:work
  name: work
  attributes: {i: i}
- symbol: work_mod:awork
  name: awork
  attributes: {i: i}
'''

DRIVER = '''
import asyncio, json, sys, threading
import servprof, servprof.hooks
servprof.hooks.install([sys.argv[1]])
import work_mod

phase = [0]
stop = threading.Event()
calls = threading.Condition()
ncalls = [0]
results = []   # (fn, i, phase before, phase after, outcome)
lock = threading.Lock()

def worker(k):
    i = k
    loop = asyncio.new_event_loop()
    while not stop.is_set():
        for fn in ("work", "awork"):
            before = phase[0]
            try:
                if fn == "work":
                    out = ("ok", work_mod.work(i))
                else:
                    out = ("ok", loop.run_until_complete(work_mod.awork(i)))
            except ValueError as e:
                out = ("ValueError", e.args[0])
            after = phase[0]
            with lock:
                results.append((fn, i, before, after, out))
            with calls:
                ncalls[0] += 1
                calls.notify_all()
            i += 4
    loop.close()

threads = [threading.Thread(target=worker, args=(k,)) for k in range(4)]
for t in threads:
    t.start()

def wait_calls(n):
    with calls:
        target = ncalls[0] + n
        calls.wait_for(lambda: ncalls[0] >= target, timeout=60)

for cycle in range(100):
    wait_calls(8)           # some calls while off
    phase[0] = 4 * cycle + 1
    servprof.start()
    phase[0] = 4 * cycle + 2
    wait_calls(8)           # some calls while on
    phase[0] = 4 * cycle + 3
    servprof.stop()
    phase[0] = 4 * (cycle + 1)
wait_calls(8)
stop.set()
for t in threads:
    t.join()
json.dump(results, open(sys.argv[2], "w"))
print(len(results))
'''


class Toggle(unittest.TestCase):

    def test_hundred_toggles_while_threads_call(self):
        d = T.tmpdir(self)
        H.write(d, "work_mod.py", WORK)
        hooks = H.write(d, "hooks.yaml", HOOKS)
        drv = H.write(d, "driver.py", DRIVER)
        cfg = T.make_config(d, enable=0)
        out = os.path.join(d, "results.json")
        p = T.run([H.PY, drv, hooks, out], env=H.env(d, cfg), cwd=d, timeout=540)
        with open(out) as f:
            results = json.load(f)
        self.assertGreaterEqual(len(results), 100 * 16)
        seen = set()
        for fn, i, before, after, outcome in results:
            want = ["ValueError", i] if i % 2 else ["ok", i * (2 if fn == "work" else 3)]
            self.assertEqual(outcome, want, (fn, i))
            seen.add((fn, i))
        self.assertEqual(len(seen), len(results), "every call made once")

        recorded = {}
        for r in H.records(os.path.join(d, "prof")):
            key = (r["name"], r["a"]["i"])
            recorded[key] = r
        off = [(fn, i) for fn, i, b, a, _ in results if b == a and b % 4 == 0]
        on = [(fn, i) for fn, i, b, a, _ in results if b == a and b % 4 == 2]
        self.assertGreater(len(off), 100, "calls made while off")
        self.assertGreater(len(on), 100, "calls made while on")
        self.assertEqual([k for k in off if k in recorded], [], "recorded while off")
        self.assertEqual([k for k in on if k not in recorded], [], "lost while on")
        for k in on:  # odd arguments raised: their spans say so
            self.assertEqual(recorded[k]["a"].get("exception"), "ValueError" if k[1] % 2 else None)
        self.assertEqual(len(T.stores(os.path.join(d, "prof"))), 100, p.stderr[-2000:])


if __name__ == "__main__":
    H.main()
