# SPDX-License-Identifier: Apache-2.0
"""dropin_py_scenario.py — dropin_native.c's scenario driven the way the
reference's Python package drives its library: ctypes.cdll.LoadLibrary of
"libms_service_profiler.so" by bare name (found by the dynamic loader),
the same argtypes, and a Profiler builder that sends json.dumps of its
attribute dict to MarkEventEx / SpanEndEx. Our own code; it imports
nothing of the reference's.

Run as a program (by test_dropin_py.py) with SERVICE_PROF_CONFIG_PATH
naming a config with collection on.
"""

import ctypes
import json

L0, L1, L2, VERBOSE = 10, 20, 30, 40
EVENT, SPAN, LINK = 0, 2, 3


class Lib:
    """The functions the reference's package binds, bound the same way."""

    def __init__(self):
        lib = ctypes.cdll.LoadLibrary("libms_service_profiler.so")
        self.start_span = lib.StartSpanWithName
        self.start_span.argtypes = (ctypes.c_char_p,)
        self.start_span.restype = ctypes.c_ulonglong
        self.span_end_ex = lib.SpanEndEx
        self.span_end_ex.argtypes = (ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p,
                                     ctypes.c_ulonglong)
        self.mark_event_ex = lib.MarkEventEx
        self.mark_event_ex.argtypes = (ctypes.c_char_p,) * 3
        self.mark_event = lib.MarkEvent
        self.mark_event.argtypes = (ctypes.c_char_p,)
        self.mark_span_attr = lib.MarkSpanAttr
        self.mark_span_attr.argtypes = (ctypes.c_char_p, ctypes.c_ulonglong)
        self.end_span = lib.EndSpan
        self.end_span.argtypes = (ctypes.c_ulonglong,)
        self.is_enable = lib.IsEnable
        self.is_enable.argtypes = (ctypes.c_ulong,)
        self.is_enable.restype = ctypes.c_bool
        self.is_valid_domain = lib.IsValidDomain
        self.is_valid_domain.argtypes = (ctypes.c_char_p,)
        self.is_valid_domain.restype = ctypes.c_bool
        self.add_meta_info = lib.AddMetaInfo
        self.add_meta_info.argtypes = (ctypes.c_char_p, ctypes.c_char_p)
        self.set_step = lib.SetProfilerCurrentStep
        self.set_step.argtypes = (ctypes.c_int,)
        self.set_step.restype = None
        self.stop = lib.StopServerProfiler


LIB = Lib()


class Profiler:
    """The reference package's builder pattern: enabled from the level and
    the domain, attributes in a dict, sent as JSON text."""

    def __init__(self, level):
        self._enable = LIB.is_enable(level)
        self._attr = {}
        self._name = None
        self._domain = None
        self._span = None

    def domain(self, d):
        self._enable = self._enable and LIB.is_valid_domain(d.encode())
        self._domain = d
        return self

    def attr(self, k, v):
        self._attr[k] = v
        return self

    def res(self, rid):
        return self.attr("rid", rid)

    def metric(self, k, v):
        return self.attr(k + "=", v)

    def metric_inc(self, k, v):
        return self.attr(k + "+", v)

    def metric_scope(self, k, v=0):
        return self.attr("scope#" + k, v)

    def metric_scope_as_req_id(self):
        return self.attr("scope#", "req")

    def _msg(self):
        return json.dumps(self._attr) if self._attr else ""

    def event(self, name):
        if self._enable:
            self._attr["type"] = EVENT
            LIB.mark_event_ex(name.encode(), (self._domain or "").encode(), self._msg().encode())

    def link(self, a, b):
        if self._enable:
            self._attr = {"type": LINK, "from": a, "to": b}
            LIB.mark_event_ex(b"Link", (self._domain or "").encode(), self._msg().encode())

    def span_start(self, name):
        if self._enable:
            self._name = name
            self._attr["type"] = SPAN
            self._span = LIB.start_span(name.encode())
        return self

    def span_end(self):
        if self._enable and self._span is not None:
            LIB.span_end_ex(self._name.encode(), (self._domain or "").encode(),
                            self._msg().encode(), self._span)
            self._span = None


BATCH = [{"rid": "req-1", "iter": 0}, {"rid": "req-2", "iter": 3}]


def main():
    LIB.add_meta_info(b"model", b"toy-7b")
    # 1. attributes of each kind
    Profiler(L1).domain("Request").res("req-1").attr("s", "text").attr("i", 42) \
        .attr("d", 0.5).event("httpReq")
    Profiler(L1).domain("Request").res(7).event("tokenize")
    # 2. metrics (3.0: a float, as a Python server often passes)
    Profiler(L1).domain("Schedule").res("req-1").metric("QueueSize", 3.0) \
        .metric_inc("WAITING", 1).metric_scope("QueueName", "WAITING").event("Enqueue")
    Profiler(L1).domain("KVCache").metric("UsagePercent", 0.25).metric_scope_as_req_id() \
        .event("KVCacheStatus")
    # 3. spans
    p = Profiler(L1).domain("BatchSchedule").res(BATCH).attr("batch_type", "Prefill,Decode")
    p.span_start("batchFrameworkProcessing")
    p.attr("batch_size", 2).span_end()
    Profiler(L1).domain("Execute").res(BATCH).span_start("forward").span_end()
    # 4. a link, an event above the configured level
    Profiler(L1).link("req-1", "http-1")
    Profiler(VERBOSE).domain("Request").event("hidden")
    # 5. the legacy entry points
    if LIB.is_enable(L1):
        LIB.mark_event(b"^name^:^legacyEvent^,^domain^:^Request^,^rid^:^req-2^,^type^:0,")
        h = LIB.start_span(b"legacySpan")
        LIB.mark_span_attr(b"^name^:^legacySpan^,^domain^:^Execute^,^n^:5,^type^:2,", h)
        LIB.end_span(h)
    # 6. steps (the package's prof_step()), a detailed event
    for step in (1, 2, 3):
        LIB.set_step(step)
    Profiler(L2).domain("Execute").attr("step", 3).event("stepDone")
    Profiler(L1).domain("Request").res("req-1").event("httpRes")
    LIB.stop()


if __name__ == "__main__":
    main()
