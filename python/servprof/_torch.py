# SPDX-License-Identifier: Apache-2.0
"""acl_task_time 3: torch.profiler alongside the service records.

What it does. While a session runs whose config says "acl_task_time": 3,
this module runs torch.profiler in the process: activities CPU (plus CUDA
when torch sees a GPU), record_shapes on, with_stack = torch_prof_stack,
with_modules = torch_prof_modules. With torch_prof_step_num N > 0 it
profiles N steps and stops by itself; with 0 it runs until collection
stops. Each profiled step is also recorded as a `torch_profiler` span
(domain "torch") so the service timeline shows where the profiler ran, and
carries a "ProfilerStep#k" range inside the torch trace. When it stops, the
trace is written to <session>/torch_prof_<host>-<pid>.json, the same stem
as this process's raw store (ms_service_<host>-<pid>.db), so that
`servprof parse` knows whose lanes the ops are.

How it is driven. There is no thread of its own: torch's profiler is
started and stopped on the thread that runs the serving loop, at the
binding's step() (one scheduler iteration) and poll() (an idle loop's
tick), and after servprof.start()/stop()/shutdown(). Each call compares the
C library's level (one attribute read); only while collecting does it ask
the library for the session's serial number (one ctypes call), and only at
a new session does it read the config keys and import torch. So with
acl_task_time 0 the cost is that one call per step while collecting, and
nothing when collection is off. A session that stops (file edit,
timelimit, profiler_step_num) is noticed at the next step() or poll().

What it costs the serving loop: torch's own start and stop (stop includes
torch turning its records into events). Writing the JSON file runs on a
writer thread; a file appears under its final name only when complete
(written as .tmp, then renamed). At exit a running profiler is stopped and
its file written.

Clock. torch's event times are microseconds from an origin of its own
(the legacy profiler: its start mark; kineto: the trace start). Right after
the start, sixteen tiny clock ops (torch.ones(1), aten::ones) run, each
between two time.time_ns() reads. Each op lies inside its window, which
bounds "baseTimeNanoseconds" (epoch ns, such that base + ts * 1000 is the
wall clock of every stored record) from below and above; base is the
middle of where the sixteen bounds meet (_clock). The error is half the
gap between the tightest bounds plus torch's resolution: a few µs (the
legacy profiler stamps in whole µs), even when a preemption widened some
windows. (The first version matched the tightest of five windows to the
first five aten::eye events, but torch records an eye inside some eyes
(14 events for 6 calls, measured), so windows met the wrong ops: off by
20 to 190 µs, a CI failure at 40. aten::ones is one event a call.)
A record_function range is no good as the anchor: its enter costs tens
to hundreds of µs before torch stamps it (measured). The clock ops (and
the ops inside them) are left out of the written trace.

Failures (torch missing, a profiler error, an unwritable folder) are one
RuntimeWarning per session, and the service records go on.
"""

import atexit
import json
import os
import threading
import time
import warnings
import ctypes

from ._core import state, LEVEL_UNINIT, now_ns

TRACE_PREFIX = "torch_prof_"
SPAN_DOMAIN = b"torch"
SPAN_NAME = b"torch_profiler"
ANCHORS = 16  # clock ops run right after the start (see Clock above): ~0.2 ms
CLOCK_SLACK_NS = 1000  # torch's stamps: whole µs with the legacy profiler
CLOCK_OP = "aten::ones"  # torch.ones(1): one event a call, nothing of its name inside


def _warn(msg):
    warnings.warn("servprof: " + msg, RuntimeWarning, stacklevel=4)


def _session_int(key):
    """The current session's config value of key, or None when not collecting."""
    v = ctypes.c_int64(0)
    rc = state.lib.slow.servprof_session_config_int(key, ctypes.byref(v))
    return v.value if rc == 0 else None


class _ModuleRanges:
    """torch_prof_modules on a profiler that cannot record module hierarchy
    itself (the legacy, non-kineto profiler of CPU-only builds such as
    Debian's): a record_function range "nn.Module: <Class>" around every
    module's forward, through torch's global module hooks, while profiling."""

    def __init__(self, torch):
        self._rf = torch.autograd.profiler.record_function
        self._local = threading.local()
        mod = torch.nn.modules.module
        self._handles = [mod.register_module_forward_pre_hook(self._pre),
                         mod.register_module_forward_hook(self._post)]

    def _stack(self):
        s = getattr(self._local, "s", None)
        if s is None:
            s = self._local.s = []
        return s

    def _pre(self, module, args):
        r = self._rf("nn.Module: " + type(module).__name__)
        r.__enter__()
        self._stack().append(r)

    def _post(self, module, args, out):
        s = self._stack()
        if s:
            s.pop().__exit__(None, None, None)

    def close(self):
        for h in self._handles:
            h.remove()
        s = self._stack()
        while s:  # a forward that raised never reached its post hook
            s.pop().__exit__(None, None, None)


class Controller:
    """The torch profiler of this process (one; see the module comment).
    Not thread-safe by itself: step()/poll() come from the serving loop;
    a lock keeps a stop from servprof.stop() on another thread apart."""

    def __init__(self):
        self.lock = threading.Lock()
        self.session = None     # serial of the session decided for
        self.prof = None        # torch.profiler.profile while running
        self.torch = None
        self.limit = 0          # torch_prof_step_num
        self.steps = 0          # steps profiled so far
        self.step_start = 0     # now_ns() when the current step began
        self.step_range = None  # the open "ProfilerStep#k" range
        self.modules = None     # _ModuleRanges, or None
        self.opts = {}
        self.path = None
        self.anchors = []       # (before, after) time_ns around each clock op
        self.writers = []
        self.exit_hook = False

    # ------------------------------------------------------------ driving

    def follow(self, is_step):
        """Brings the profiler in line with collection; is_step: a step of
        the serving loop ended here."""
        lvl = state.level.value
        if state.lib is None:
            return
        if lvl <= 0 or lvl == LEVEL_UNINIT:
            if self.prof is not None:
                with self.lock:
                    self._stop("collection stopped")
            return
        serial = _session_int(b"session")
        if serial is None:          # stopped between the two reads
            if self.prof is not None:
                with self.lock:
                    self._stop("collection stopped")
            return
        with self.lock:
            if serial != self.session:
                if self.prof is not None:
                    self._stop("collection stopped")
                self.session = serial
                if _session_int(b"acl_task_time") == 3:
                    self._start()
                return
            if self.prof is not None and is_step:
                self._end_step()

    # ------------------------------------------------------------ start

    def _start(self):
        if self.torch is None:
            try:
                import torch  # noqa: only a session with acl_task_time 3 imports it
                import torch.profiler  # noqa
            except Exception as e:  # ImportError, or a broken install
                _warn("acl_task_time is 3 but torch cannot be imported (%s: %s); the torch "
                      "profiler is off, service records go on" % (type(e).__name__, e))
                return
            self.torch = torch
        torch = self.torch
        store = self._store_path()
        if store is None:
            return
        stem = os.path.basename(store)
        if stem.startswith("ms_service_"):
            stem = stem[len("ms_service_"):]
        if stem.endswith(".db"):
            stem = stem[:-3]
        self.path = os.path.join(os.path.dirname(store), TRACE_PREFIX + stem + ".json")
        self.limit = max(0, _session_int(b"torch_prof_step_num") or 0)
        stack = bool(_session_int(b"torch_prof_stack"))
        modules = bool(_session_int(b"torch_prof_modules"))
        acts = [torch.profiler.ProfilerActivity.CPU]
        try:
            if torch.cuda.is_available():
                acts.append(torch.profiler.ProfilerActivity.CUDA)
        except Exception:
            pass
        kineto = bool(getattr(torch.autograd, "kineto_available", lambda: False)())
        self.opts = {"activities": [a.name for a in acts], "record_shapes": True,
                     "with_stack": stack, "with_modules": modules, "step_num": self.limit,
                     "kineto": kineto, "torch": str(torch.__version__)}
        try:
            prof = torch.profiler.profile(activities=acts, record_shapes=True,
                                          with_stack=stack, with_modules=modules)
            prof.start()
            self.anchors = []
            for _ in range(ANCHORS):
                a = time.time_ns()
                torch.ones(1)
                self.anchors.append((a, time.time_ns()))
            self.modules = _ModuleRanges(torch) if modules and not kineto else None
        except Exception as e:
            _warn("the torch profiler could not start (%s: %s); service records go on"
                  % (type(e).__name__, e))
            return
        self.prof = prof
        self.steps = 0
        self._begin_step()
        if not self.exit_hook:
            atexit.register(self.at_exit)
            self.exit_hook = True

    def _store_path(self):
        buf = ctypes.create_string_buffer(4096 + 1)
        if state.lib.slow.servprof_store_path(buf, len(buf)) != 0:
            return None
        return buf.value.decode("utf-8", "surrogateescape")

    # ------------------------------------------------------------ steps

    def _begin_step(self):
        self.step_start = now_ns()
        try:
            r = self.torch.autograd.profiler.record_function("ProfilerStep#%d" % self.steps)
            r.__enter__()
            self.step_range = r
        except Exception:
            self.step_range = None

    def _close_step_range(self):
        r, self.step_range = self.step_range, None
        if r is not None:
            try:
                r.__exit__(None, None, None)
            except Exception:
                pass

    def _end_step(self):
        self._close_step_range()
        self._record_step_span(self.steps, self.step_start, now_ns())
        self.steps += 1
        if self.limit and self.steps >= self.limit:
            self._stop("%d steps profiled (torch_prof_step_num)" % self.steps)
        else:
            self._begin_step()

    def _record_step_span(self, k, start, end):
        f = state.f
        r = f.servprof_rec_begin_slow(20, SPAN_DOMAIN)
        if not r:
            return
        f.servprof_attr_int(r, b"step", k)
        f.servprof_span_at(r, SPAN_NAME, start, end)

    # ------------------------------------------------------------ stop

    def _stop(self, why):
        prof, self.prof = self.prof, None
        if prof is None:
            return
        self._close_step_range()
        if self.modules is not None:
            self.modules.close()
            self.modules = None
        try:
            prof.stop()
            events = list(prof.events())
        except Exception as e:
            _warn("the torch profiler failed at stop (%s: %s); no torch trace for this session"
                  % (type(e).__name__, e))
            return
        meta = dict(self.opts, steps=self.steps, stopped=why, pid=os.getpid())
        w = threading.Thread(target=_write_trace, name="servprof-torch-writer",
                             args=(self.path, events, self.anchors, meta))
        w.start()
        self.writers = [t for t in self.writers if t.is_alive()] + [w]

    def stop_now(self, why="collection stopped"):
        """Stops a running profiler whatever collection says (servprof.stop(),
        shutdown, exit); the step under way is recorded as a profiled step."""
        with self.lock:
            if self.prof is not None:
                if self.step_range is not None:  # the step under way counts
                    self._close_step_range()
                    self._record_step_span(self.steps, self.step_start, now_ns())
                    self.steps += 1
                self._stop(why)

    def wait_written(self, timeout=60.0):
        """Joins the writer threads (bounded); True when every file is out."""
        deadline = time.monotonic() + timeout
        for t in list(self.writers):
            t.join(max(0.0, deadline - time.monotonic()))
        return not any(t.is_alive() for t in self.writers)

    def forget(self):
        """In a fork child: the parent's profiler and writers are not ours."""
        self.lock = threading.Lock()
        self.session = None
        self.prof = None
        self.step_range = None
        self.modules = None
        self.writers = []

    def at_exit(self):
        self.stop_now("process exit")
        self.wait_written()


def _event_json(e):
    """One FunctionEvent as a Chrome trace "X" event, ts in torch's µs:
    epoch ns = the file's baseTimeNanoseconds + ts * 1000."""
    dev = str(getattr(e, "device_type", "CPU")).split(".")[-1]
    start = e.time_range.start
    out = {"ph": "X", "name": e.name, "ts": round(start, 3),
           "dur": round(max(0.0, e.time_range.end - e.time_range.start), 3),
           "pid": os.getpid()}
    args = {}
    if dev == "CPU":
        out["cat"] = "cpu_op"
        out["tid"] = int(e.thread)
    else:
        out["cat"] = "kernel"
        out["tid"] = int(getattr(e, "device_index", 0) or 0)
        args["device"] = out["tid"]
    shapes = getattr(e, "input_shapes", None)
    if shapes:
        args["Input Dims"] = shapes  # lists of ints, as torch keeps them
    stack = getattr(e, "stack", None)
    if stack:
        args["Call stack"] = ";".join(stack)
    if args:
        out["args"] = args
    return out


def _clock_ops(events):
    """The events of the clock ops (CLOCK_OP, one per call), in time
    order, on the thread of the first: the calls run right after the start
    on the starting thread, and another thread's op of the same name must
    not be taken for one of them."""
    ops = sorted((e for e in events if e.name == CLOCK_OP), key=lambda e: e.time_range.start)
    return [e for e in ops if e.thread == ops[0].thread] if ops else []


def _clock(events, anchors):
    """(base_ns, clock events): base_ns + torch µs * 1000 = epoch ns. The
    clock ops are the first CLOCK_OP events (_clock_ops). Each ran inside
    its (before, after) window, so each bounds base on both sides: before - start * 1000
    <= base <= after - end * 1000, give or take torch's stamp resolution
    (CLOCK_SLACK_NS). base is the middle of where all the bounds meet, so
    the error is half of the tightest lower and upper bounds' gap, whichever
    ops gave them: on a loaded machine, where a window is widened by a
    preemption, one op's window is rarely loose on both sides. Bounds that
    do not meet (a stamp off by more than the slack) fall back to the
    tightest window matched to its op's midpoint."""
    ops = _clock_ops(events)[:len(anchors)]
    if not ops:
        return None, ()
    pairs = list(zip(anchors, ops))
    lo = max(a - e.time_range.start * 1000.0 for (a, _), e in pairs) - CLOCK_SLACK_NS
    hi = min(b - e.time_range.end * 1000.0 for (_, b), e in pairs) + CLOCK_SLACK_NS
    if lo <= hi:
        return int((lo + hi) // 2), ops
    (a, b), e = min(pairs, key=lambda p: p[0][1] - p[0][0])
    mid_us = (e.time_range.start + e.time_range.end) / 2.0
    return int((a + b) // 2 - mid_us * 1000.0), ops


def _write_trace(path, events, anchors, meta):
    """Writes the trace atomically (.tmp, then rename). Runs on a writer thread."""
    try:
        base, ops = _clock(events, anchors)
        if base is None:
            _warn("the torch trace %s has no clock ops; not written" % path)
            return
        # The clock ops and what they ran inside them are ours, not the model's.
        spans = [(e.thread, e.time_range.start, e.time_range.end) for e in ops]
        first, last = min(x[1] for x in spans), max(x[2] for x in spans)
        ours = set(id(e) for e in events
                   if first <= e.time_range.start and e.time_range.end <= last and
                   any(e.thread == t and s <= e.time_range.start and e.time_range.end <= x
                       for t, s, x in spans))
        trace = {"schemaVersion": 1, "displayTimeUnit": "ns", "baseTimeNanoseconds": base,
                 "servprof": meta,
                 "traceEvents": [_event_json(e) for e in events if id(e) not in ours]}
        tmp = path + ".tmp"
        # json.dumps, not json.dump: dump streams through the pure-Python
        # encoder (measured 8 s for 40k events against well under 1 s),
        # holding the GIL all along.
        text = json.dumps(trace, separators=(",", ":"))
        with open(tmp, "w", encoding="utf-8") as f:
            f.write(text)
        os.replace(tmp, path)
    except Exception as e:
        _warn("the torch trace %s could not be written (%s: %s)" % (path, type(e).__name__, e))


controller = Controller()
os.register_at_fork(after_in_child=controller.forget)
