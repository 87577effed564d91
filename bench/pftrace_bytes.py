#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""pftrace_bytes.py — where the bytes of a trace.pftrace go, by field class:
the table of docs/parse.md ("trace.pftrace", Size).

Decodes the file packet by packet with Perfetto's official
perfetto_trace.proto (tests/parse/perfetto/, compiled by protoc as the tests
do: tests/parse/pftrace_check.py) and charges every byte of the file to one
class — a packet's tag and length, its timestamp, its sequence fields, its
interned data, each field of its TrackEvent, and inside the debug
annotations the framing, names and values of the array-valued ones (the rid
lists) apart from the rest. The classes add up to the file's size (checked).

  python3 bench/pftrace_bytes.py OUT/trace.pftrace [--records N]

N (the records parse read, its summary's "N records") adds a B/record
column.
"""
import argparse
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "parse"))
import pftrace_check  # noqa: E402

from google.protobuf.descriptor import FieldDescriptor as FD  # noqa: E402


def vlen(v):
    v &= (1 << 64) - 1
    n = 1
    while v >= 0x80:
        v >>= 7
        n += 1
    return n


def tag_len(fd):
    wt = 2 if fd.type in (FD.TYPE_MESSAGE, FD.TYPE_STRING, FD.TYPE_BYTES) else 0
    return vlen(fd.number << 3 | wt)


def one_size(fd, v):
    """Bytes of one value of field fd, its tag included (unpacked)."""
    t = tag_len(fd)
    if fd.type == FD.TYPE_MESSAGE:
        n = v.ByteSize()
        return t + vlen(n) + n
    if fd.type in (FD.TYPE_STRING, FD.TYPE_BYTES):
        n = len(v.encode() if isinstance(v, str) else v)
        return t + vlen(n) + n
    if fd.type in (FD.TYPE_FIXED64, FD.TYPE_SFIXED64, FD.TYPE_DOUBLE):
        return t + 8
    if fd.type in (FD.TYPE_FIXED32, FD.TYPE_SFIXED32, FD.TYPE_FLOAT):
        return t + 4
    if fd.type == FD.TYPE_BOOL:
        return t + 1
    if fd.type in (FD.TYPE_SINT32, FD.TYPE_SINT64):
        return t + vlen((v << 1) ^ (v >> 63))
    return t + vlen(v)


def field_size(fd, value):
    if fd.label == FD.LABEL_REPEATED:
        return sum(one_size(fd, v) for v in value)
    return one_size(fd, value)


def frame(msg):
    """Bytes of msg's own tag and length inside its parent (tag of 1 byte)."""
    return 1 + vlen(msg.ByteSize())


class Tally:
    def __init__(self):
        self.b = {}

    def add(self, cls, n):
        self.b[cls] = self.b.get(cls, 0) + n


def annotation(t, a, where):
    """Charges annotation a (its own tag and length not included)."""
    for fd, v in a.ListFields():
        if fd.name in ("name_iid", "name"):
            t.add(where + ": names", field_size(fd, v))
        elif fd.name == "dict_entries":
            for d in v:
                t.add(where + ": entry framing", tag_len(fd) + vlen(d.ByteSize()))
                annotation(t, d, where)
        elif fd.name == "array_values":
            for d in v:
                t.add(where + ": entry framing", tag_len(fd) + vlen(d.ByteSize()))
                annotation(t, d, where)
        elif fd.name in ("string_value_iid", "string_value"):
            t.add(where + ": string values", field_size(fd, v))
        else:
            t.add(where + ": other values", field_size(fd, v))


def track_event(t, te):
    for fd, v in te.ListFields():
        if fd.name == "debug_annotations":
            for a in v:
                where = "args, lists" if len(a.array_values) else "args, other"
                t.add(where + ": entry framing", tag_len(fd) + vlen(a.ByteSize()))
                annotation(t, a, where)
        elif fd.name in ("flow_ids", "terminating_flow_ids"):
            t.add("event: flow ids", field_size(fd, v))
        elif fd.name in ("type", "track_uuid", "name_iid", "category_iids"):
            t.add("event: " + fd.name, field_size(fd, v))
        else:
            t.add("event: other fields", field_size(fd, v))


def tally(path, P):
    t = Tally()
    with open(path, "rb") as f:
        data = f.read()
    i = 0
    while i < len(data):
        j = i + 1  # the packet's tag: one byte (field 1, length-delimited)
        n, shift = 0, 0
        while True:
            b = data[j]
            j += 1
            n |= (b & 0x7F) << shift
            shift += 7
            if b < 0x80:
                break
        t.add("packet: tag and length", j - i)
        pk = P.TracePacket()
        pk.ParseFromString(data[j:j + n])
        for fd, v in pk.ListFields():
            if fd.name == "track_event":
                t.add("event: tag and length", frame(v))
                track_event(t, v)
            elif fd.name == "timestamp":
                t.add("packet: timestamp delta", field_size(fd, v))
            elif fd.name in ("trusted_packet_sequence_id", "sequence_flags"):
                t.add("packet: sequence id and flags", field_size(fd, v))
            elif fd.name == "interned_data":
                t.add("interned data: tag and length", frame(v))
                for ifd, iv in v.ListFields():
                    kind = "string values" if ifd.name == "debug_annotation_string_values" else "names"
                    t.add("interned data: " + kind, field_size(ifd, iv))
            else:
                t.add("descriptors, clocks, defaults", field_size(fd, v))
        i = j + n
    if sum(t.b.values()) != len(data):
        raise SystemExit("classes add up to %d B, the file is %d B" % (sum(t.b.values()), len(data)))
    return t, len(data)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("trace")
    ap.add_argument("--records", type=int, default=0)
    a = ap.parse_args()
    P, why = pftrace_check.load_proto()
    if P is None:
        print("cannot decode: " + why, file=sys.stderr)
        return 2
    t, total = tally(a.trace, P)
    print("| class | bytes | share |" + (" B/record |" if a.records else ""))
    print("|---|---:|---:|" + ("---:|" if a.records else ""))
    for cls in sorted(t.b, key=lambda c: -t.b[c]):
        row = "| %s | %d | %.1f %% |" % (cls, t.b[cls], 100.0 * t.b[cls] / total)
        if a.records:
            row += " %.1f |" % (t.b[cls] / a.records)
        print(row)
    lists = sum(v for c, v in t.b.items() if c.startswith("args, lists"))
    row = "| **total** (lists: %d B, %.1f %%) | %d | 100 %% |" % (lists, 100.0 * lists / total, total)
    if a.records:
        row += " %.1f (lists %.1f) |" % (total / a.records, lists / a.records)
    print(row)
    return 0


if __name__ == "__main__":
    sys.exit(main())
