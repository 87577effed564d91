# SPDX-License-Identifier: Apache-2.0
"""pftrace_check.py — decodes trace.pftrace with Perfetto's official
perfetto_trace.proto (perfetto/, compiled by protoc at test time) and checks
it the way Perfetto's trace processor reads it.

load_proto() compiles the pinned .proto into a temporary folder and imports
it (None when protoc or python3-protobuf is missing: the test skips).
decode(path, P) walks the file packet by packet (a `Trace` is a sequence of
field-1 `TracePacket`s, so each is parsed on its own and memory stays small)
and raises Invalid for anything a reader would reject or misread:
  - a packet cut short (a truncated file), a field other than `packet`;
  - an interned id used on a sequence before it is defined there (names,
    categories, debug-annotation names, string values), an id defined twice
    in one incremental-state interval;
  - a packet needing incremental state (SEQ_NEEDS_INCREMENTAL_STATE) on a
    sequence whose state was never cleared, a track event without that flag
    or without a sequence id;
  - a timestamp on a sequence without the incremental clock set up;
  - a track used without a descriptor, an end without a begin on its track,
    a begin never ended.
It returns a Decoded with slices (begin/end pairs), instants, counter
samples and flow steps in absolute nanoseconds, for comparison with
profiler.db.
"""
import importlib
import os
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
PROTO_DIR = os.path.join(HERE, "perfetto")

SEQ_CLEARED, SEQ_NEEDS = 1, 2
T_BEGIN, T_END, T_INSTANT, T_COUNTER = 1, 2, 3, 4


class Invalid(Exception):
    pass


_tmp = None


def load_proto():
    """The compiled perfetto_trace_pb2 module, or None (with the reason) when
    protoc or python's protobuf is missing."""
    global _tmp
    try:
        import google.protobuf  # noqa: F401
    except ImportError:
        return None, "python3-protobuf is not installed"
    protoc = shutil.which("protoc")
    if not protoc:
        return None, "protoc (protobuf-compiler) is not installed"
    _tmp = tempfile.TemporaryDirectory()
    subprocess.run([protoc, "--proto_path=" + PROTO_DIR, "--python_out=" + _tmp.name, "perfetto_trace.proto"],
                   check=True)
    sys.path.insert(0, _tmp.name)
    return importlib.import_module("perfetto_trace_pb2"), None


def _varint(b, i):
    shift = v = 0
    while True:
        if i >= len(b):
            raise Invalid("varint cut short at byte %d" % i)
        c = b[i]
        i += 1
        v |= (c & 0x7F) << shift
        if c < 0x80:
            return v, i
        shift += 7
        if shift > 63:
            raise Invalid("varint too long at byte %d" % i)


def packets(data, P):
    """Yields each TracePacket of a Trace's bytes, in file order."""
    i = 0
    while i < len(data):
        at = i
        tag, i = _varint(data, i)
        if tag != (1 << 3 | 2):
            raise Invalid("byte %d: field %d wire type %d, not Trace.packet" % (at, tag >> 3, tag & 7))
        n, i = _varint(data, i)
        if i + n > len(data):
            raise Invalid("byte %d: a packet of %d bytes, %d left: the file is truncated" % (at, n, len(data) - i))
        p = P.TracePacket()
        try:
            p.ParseFromString(data[i:i + n])
        except Exception as e:  # DecodeError
            raise Invalid("byte %d: packet does not decode: %s" % (at, e))
        i += n
        yield p


class Decoded:
    def __init__(self):
        self.slices = []      # (uuid, name, cat, ts, dur, args)
        self.instants = []    # (uuid, name, cat, ts, args)
        self.counters = []    # (counter track name, pid, ts, value)
        self.flows = {}       # flow id -> number of events carrying it
        self.tracks = {}      # uuid -> descriptor
        self.sequences = set()
        self.interned = 0


def _value(a, strs):
    """A DebugAnnotation's value as Python: dicts and lists for nested ones,
    legacy JSON parsed, interned strings looked up."""
    import json
    if len(a.dict_entries):
        return {_name(e, _value.names): _value(e, strs) for e in a.dict_entries}
    if len(a.array_values):
        return [_value(e, strs) for e in a.array_values]
    kind = a.WhichOneof("value")
    if kind == "string_value_iid":
        return strs[a.string_value_iid]
    if kind == "legacy_json_value":
        return json.loads(a.legacy_json_value)
    return getattr(a, kind) if kind else None


def _name(a, names):
    return names[a.name_iid] if a.HasField("name_iid") else a.name


def _annotations(te, strs, names):
    _value.names = names
    return {_name(a, names): _value(a, strs) for a in te.debug_annotations}


def _walk(annots):
    for a in annots:
        yield a
        yield from _walk(a.dict_entries)
        yield from _walk(a.array_values)


def decode(path, P):
    with open(path, "rb") as f:
        data = f.read()
    d = Decoded()
    seq = {}       # sequence id -> state
    events = []    # (ts, order, kind, uuid, payload)
    order = 0
    for p in packets(data, P):
        sid = p.trusted_packet_sequence_id
        st = seq.setdefault(sid, {"cleared": False, "clock": None, "in": None})
        if p.sequence_flags & SEQ_CLEARED:
            st["cleared"] = True
            st["in"] = {k: {} for k in ("event_names", "event_categories", "debug_annotation_names",
                                        "debug_annotation_string_values")}
            d.sequences.add(sid)
        if p.HasField("trace_packet_defaults"):
            if p.trace_packet_defaults.timestamp_clock_id != 64:
                raise Invalid("sequence %d: defaults use clock %d" % (sid, p.trace_packet_defaults.timestamp_clock_id))
            st["defaults"] = True
        if p.sequence_flags & SEQ_NEEDS and not st["cleared"]:
            raise Invalid("sequence %d: a packet needs incremental state before it was cleared" % sid)
        if p.HasField("interned_data"):
            if not st["cleared"]:
                raise Invalid("sequence %d: interned data before the state was cleared" % sid)
            for field in st["in"]:
                for e in getattr(p.interned_data, field):
                    if e.iid in st["in"][field]:
                        raise Invalid("sequence %d: %s iid %d defined twice" % (sid, field, e.iid))
                    st["in"][field][e.iid] = e.str.decode() if field.endswith("string_values") else e.name
                    d.interned += 1
        if p.HasField("clock_snapshot"):
            clocks = {c.clock_id: c for c in p.clock_snapshot.clocks}
            if 64 not in clocks or not clocks[64].is_incremental or 6 not in clocks:
                raise Invalid("sequence %d: the clock snapshot lacks incremental clock 64 or BOOTTIME" % sid)
            if clocks[64].timestamp != clocks[6].timestamp:
                raise Invalid("sequence %d: clock 64 is not BOOTTIME at the snapshot" % sid)
            st["clock"] = clocks[64].timestamp
            continue
        if p.HasField("track_descriptor"):
            td = p.track_descriptor
            if td.uuid in d.tracks and td.HasField("thread") != d.tracks[td.uuid].HasField("thread"):
                raise Invalid("track %d described as two kinds" % td.uuid)
            d.tracks[td.uuid] = td
            continue
        if not p.HasField("track_event"):
            raise Invalid("a packet with neither event, descriptor nor clock: %s" % p)
        if not sid:
            raise Invalid("a track event without a sequence id")
        if not p.sequence_flags & SEQ_NEEDS:
            raise Invalid("sequence %d: a track event without SEQ_NEEDS_INCREMENTAL_STATE" % sid)
        if st["clock"] is None or not p.HasField("timestamp"):
            raise Invalid("sequence %d: an event timestamp without the incremental clock" % sid)
        st["clock"] += p.timestamp
        ts = st["clock"]
        te = p.track_event
        tables = st["in"]

        def look(table, iid, what):
            if iid not in tables[table]:
                raise Invalid("sequence %d: %s iid %d used but not defined there" % (sid, what, iid))
            return tables[table][iid]
        name = look("event_names", te.name_iid, "event name") if te.HasField("name_iid") else te.name
        cats = [look("event_categories", c, "category") for c in te.category_iids] + list(te.categories)
        for a in _walk(te.debug_annotations):
            if a.HasField("name_iid"):
                look("debug_annotation_names", a.name_iid, "annotation name")
            if a.HasField("string_value_iid"):
                look("debug_annotation_string_values", a.string_value_iid, "string value")
        for f in list(te.flow_ids) + list(te.terminating_flow_ids):
            d.flows[f] = d.flows.get(f, 0) + 1
        args = _annotations(te, tables["debug_annotation_string_values"], tables["debug_annotation_names"])
        value = None
        if te.type == T_COUNTER:
            value = float(te.double_counter_value if te.HasField("double_counter_value") else te.counter_value)
        if len(te.extra_counter_track_uuids) < len(te.extra_counter_values) or \
                len(te.extra_double_counter_track_uuids) < len(te.extra_double_counter_values):
            raise Invalid("more extra counter values than tracks")
        extras = list(zip(te.extra_counter_track_uuids, map(float, te.extra_counter_values))) + \
            list(zip(te.extra_double_counter_track_uuids, te.extra_double_counter_values))
        order += 1
        events.append((ts, order, te.type, te.track_uuid, (name, ",".join(cats), args, (value, extras))))
    # Events in time order as the trace processor sorts them (stable: file
    # order within a timestamp), each track a stack of open slices.
    events.sort(key=lambda e: (e[0], e[1]))
    stacks = {}
    for ts, _, kind, uuid, (name, cat, args, (value, extras)) in events:
        if uuid not in d.tracks:
            raise Invalid("track %d used without a descriptor" % uuid)
        if kind == T_BEGIN:
            stacks.setdefault(uuid, []).append((ts, name, cat, args))
        elif kind == T_END:
            if not stacks.get(uuid):
                raise Invalid("track %d: an end at %d without a begin" % (uuid, ts))
            t0, n, c, a = stacks[uuid].pop()
            d.slices.append((uuid, n, c, t0, ts - t0, a))
        elif kind == T_INSTANT:
            d.instants.append((uuid, name, cat, ts, args))
        elif kind == T_COUNTER:
            td = d.tracks[uuid]
            if not td.HasField("counter"):
                raise Invalid("track %d: a counter value on a track that is no counter" % uuid)
            parent = d.tracks.get(td.parent_uuid)
            if parent is None or not parent.HasField("process"):
                raise Invalid("counter track %d has no process parent" % uuid)
            d.counters.append((td.name, parent.process.pid, ts, value))
            for u, v in extras:
                if u not in d.tracks or not d.tracks[u].HasField("counter"):
                    raise Invalid("extra counter value on track %d, no counter track" % u)
                d.counters.append((d.tracks[u].name, d.tracks[d.tracks[u].parent_uuid].process.pid, ts, v))
        else:
            raise Invalid("event type %d" % kind)
    for uuid, s in stacks.items():
        if s:
            raise Invalid("track %d: %d slice(s) never ended" % (uuid, len(s)))
    return d
