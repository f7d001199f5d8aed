"""Perfetto protobuf trace writer: every packet encoded here (protowire), nothing built as a message.

Everything is written inside zlib `compressed_packets` chunks (as Perfetto's tracing service
writes them), one sequence, interned strings emitted before their first use. The field numbers
and wire types are the constants below, checked against the perfetto package's own descriptors
by tests/test_timeline_protowire.py, so the export never imports the package (its protobuf
runtime and the 1.5 MB generated module cost ~50 ms of a CLI run); only `read_packets`
(tests, tools) does. The small packets (track descriptors, interned strings) are encoded in
field-number order with every set field present, as the package serializes them: the bytes are
the same.
"""

from __future__ import annotations

import zlib
from dataclasses import replace
from typing import BinaryIO

from kerneltrace.render.timeline import protowire as wire
from kerneltrace.render.timeline.events import COUNTER, Events, Names, Track, Unmerged, sorted_args

SEQUENCE = 1  # trusted_packet_sequence_id of every packet (one writer: one sequence)
CHUNK_BYTES = 1 << 20  # uncompressed packets per compressed_packets packet

# (message, field) -> (field number, wire type: 0 varint, 1 fixed64, 2 length-delimited),
# from perfetto/protos/perfetto/trace/**.proto (checked against the descriptors in a test)
FIELDS = {
    ("Trace", "packet"): (1, 2),
    ("TracePacket", "timestamp"): (8, 0),
    ("TracePacket", "trusted_packet_sequence_id"): (10, 0),
    ("TracePacket", "track_event"): (11, 2),
    ("TracePacket", "interned_data"): (12, 2),
    ("TracePacket", "sequence_flags"): (13, 0),
    ("TracePacket", "compressed_packets"): (50, 2),
    ("TracePacket", "track_descriptor"): (60, 2),
    ("TrackEvent", "debug_annotations"): (4, 2),
    ("TrackEvent", "type"): (9, 0),
    ("TrackEvent", "name_iid"): (10, 0),
    ("TrackEvent", "track_uuid"): (11, 0),
    ("TrackEvent", "double_counter_value"): (44, 1),
    ("TrackEvent", "flow_ids"): (47, 1),
    ("TrackEvent", "terminating_flow_ids"): (48, 1),
    ("DebugAnnotation", "name_iid"): (1, 0),
    ("DebugAnnotation", "int_value"): (4, 0),
    ("DebugAnnotation", "double_value"): (5, 1),
    ("DebugAnnotation", "string_value_iid"): (17, 0),
    ("TrackDescriptor", "uuid"): (1, 0),
    ("TrackDescriptor", "name"): (2, 2),
    ("TrackDescriptor", "process"): (3, 2),
    ("TrackDescriptor", "thread"): (4, 2),
    ("TrackDescriptor", "parent_uuid"): (5, 0),
    ("TrackDescriptor", "counter"): (8, 2),
    ("ProcessDescriptor", "pid"): (1, 0),
    ("ProcessDescriptor", "process_name"): (6, 2),
    ("ThreadDescriptor", "pid"): (1, 0),
    ("ThreadDescriptor", "tid"): (2, 0),
    ("ThreadDescriptor", "thread_name"): (5, 2),
    ("InternedData", "event_names"): (2, 2),
    ("InternedData", "debug_annotation_names"): (3, 2),
    ("InternedData", "debug_annotation_string_values"): (29, 2),
    ("EventName", "iid"): (1, 0),
    ("EventName", "name"): (2, 2),
    ("DebugAnnotationName", "iid"): (1, 0),
    ("DebugAnnotationName", "name"): (2, 2),
    ("InternedString", "iid"): (1, 0),
    ("InternedString", "str"): (2, 2),
}
# TracePacket.SequenceFlags
SEQ_INCREMENTAL_STATE_CLEARED = 1
SEQ_NEEDS_INCREMENTAL_STATE = 2


def key(message: str, name: str) -> bytes:
    """The encoded key (field number and wire type) of a field."""
    return _KEYS[(message, name)]


def _varint(value: int) -> bytes:
    """A varint of an integer field's value (negative int32/int64: ten bytes, as protobuf)."""
    return bytes(wire.varint_bytes(value & 0xFFFF_FFFF_FFFF_FFFF))


_KEYS = {field: bytes(wire.varint_bytes((number << 3) | kind))
         for field, (number, kind) in FIELDS.items()}


def _scalar(message: str, name: str, value: int) -> bytes:
    return key(message, name) + _varint(value)


def _bytes(message: str, name: str, data: bytes) -> bytes:
    return key(message, name) + _varint(len(data)) + data


def _text(message: str, name: str, text: str) -> bytes:
    return _bytes(message, name, text.encode("utf-8"))


def _protos():
    """The perfetto package's trace messages (imported on first use: a heavy import)."""
    from perfetto.protos.perfetto.trace import perfetto_trace_pb2 as pb

    return pb


class ProtoWriter:
    """Streams a Perfetto trace (`Trace` = repeated TracePacket) to `handle`."""

    suffix = ".pftrace"

    def __init__(self, handle: BinaryIO, names: Names, compress: bool = True) -> None:
        self.handle = handle
        self.names = names
        self.compress = compress
        self.pending: list[bytes] = []
        self.pending_bytes = 0
        self.written = 0  # bytes written to the handle so far
        self.first = True
        self.keys = {
            "packet": key("Trace", "packet"),
            "timestamp": key("TracePacket", "timestamp"),
            "track_event": key("TracePacket", "track_event"),
            "sequence": _scalar("TracePacket", "trusted_packet_sequence_id", SEQUENCE),
            "flags": _scalar("TracePacket", "sequence_flags", SEQ_NEEDS_INCREMENTAL_STATE),
            "type": key("TrackEvent", "type"),
            "track_uuid": key("TrackEvent", "track_uuid"),
            "name_iid": key("TrackEvent", "name_iid"),
            "debug": key("TrackEvent", "debug_annotations"),
            "flow_ids": key("TrackEvent", "flow_ids"),
            "terminating_flow_ids": key("TrackEvent", "terminating_flow_ids"),
            "counter": key("TrackEvent", "double_counter_value"),
            "arg_name": key("DebugAnnotation", "name_iid"),
            "int": key("DebugAnnotation", "int_value"),
            "str": key("DebugAnnotation", "string_value_iid"),
            "double": key("DebugAnnotation", "double_value"),
            "compressed": key("TracePacket", "compressed_packets"),
        }

    # -- fixed packets, encoded field by field ----------------------------------------------------
    def _packet(self, data: bytes) -> None:
        self._append(self.keys["packet"] + _varint(len(data)) + data)

    def tracks(self, tracks: list[Track]) -> None:
        for track in tracks:
            fields = [_scalar("TrackDescriptor", "uuid", track.uuid)]
            if track.kind == "process":
                fields.append(_bytes("TrackDescriptor", "process",
                                     _scalar("ProcessDescriptor", "pid", track.pid)
                                     + _text("ProcessDescriptor", "process_name", track.name)))
            elif track.kind == "thread":
                fields.append(_bytes("TrackDescriptor", "thread",
                                     _scalar("ThreadDescriptor", "pid", track.pid)
                                     + _scalar("ThreadDescriptor", "tid", track.tid)
                                     + _text("ThreadDescriptor", "thread_name", track.name)))
                fields.append(_scalar("TrackDescriptor", "parent_uuid", track.parent))
            else:  # counter: name (2), parent (5), an empty CounterDescriptor (8)
                fields = [fields[0], _text("TrackDescriptor", "name", track.name),
                          _scalar("TrackDescriptor", "parent_uuid", track.parent),
                          _bytes("TrackDescriptor", "counter", b"")]
            self._packet(_bytes("TracePacket", "track_descriptor", b"".join(fields)))

    def _interned(self) -> None:
        """One InternedData packet with the strings not yet emitted (the first clears state)."""
        events, args, values = (table.pending() for table in
                                (self.names.events, self.names.args, self.names.values))
        if not (events or args or values or self.first):
            return
        flags = SEQ_NEEDS_INCREMENTAL_STATE
        if self.first:
            flags |= SEQ_INCREMENTAL_STATE_CLEARED
            self.first = False
        data = [_bytes("InternedData", "event_names",
                       _scalar("EventName", "iid", iid) + _text("EventName", "name", text))
                for iid, text in events]
        data += [_bytes("InternedData", "debug_annotation_names",
                        _scalar("DebugAnnotationName", "iid", iid)
                        + _text("DebugAnnotationName", "name", text)) for iid, text in args]
        data += [_bytes("InternedData", "debug_annotation_string_values",
                        _scalar("InternedString", "iid", iid)
                        + _bytes("InternedString", "str", text.encode("utf-8", "replace")))
                 for iid, text in values]
        self._packet(_scalar("TracePacket", "trusted_packet_sequence_id", SEQUENCE)
                     + _bytes("TracePacket", "interned_data", b"".join(data))
                     + _scalar("TracePacket", "sequence_flags", flags))

    # -- event batches, encoded column-wise -----------------------------------------------------
    def events(self, events: Events | Unmerged) -> None:
        """Encode a batch: rows with the same fields (END rows carry none of the args) are
        encoded together with only their fields, then put back in the batch's order. The parts
        of an Unmerged batch are encoded one by one and their packets put in key order: the
        bytes of `merge`d events, without building them."""
        import numpy as np

        if isinstance(events, Unmerged):
            parts = [(replace(part, args=sorted_args(part.args)), keys) for part, keys in events.parts]
            arg_names = sorted({(arg.name, arg.kind) for part, _ in parts for arg in part.args})
        else:
            parts = [(events, None)]
            arg_names = [(arg.name, arg.kind) for arg in events.args]
        for name, _ in arg_names:  # every string the batch uses is emitted before it
            self.names.args.id(name)
        self._interned()
        n = sum(len(part) for part, _ in parts)
        if not n:
            return
        encoded = []  # (rows in the parts end to end, data, mask) per shape
        offset = 0
        for part, _ in parts:
            for rows, has in _shapes(part):
                encoded.append((rows + offset, *wire.to_matrix(self._encode(part, rows, has))))
            offset += len(part)
        if parts[0][1] is not None:  # each row's place in key order (merge's stable sort)
            order = np.argsort(np.concatenate([keys for _, keys in parts]), kind="stable")
            place = np.empty(n, np.int64)
            place[order] = np.arange(n)
            encoded = [(place[rows], data, mask) for rows, data, mask in encoded]
        if len(encoded) == 1 and bool((encoded[0][0] == np.arange(n)).all()):
            _, data, mask = encoded[0]
        else:  # each shape's rows back in their place, padded to the widest shape
            width = max(data.shape[1] for _, data, _ in encoded)
            data = np.empty((n, width), np.uint8)  # only the masked bytes are read
            mask = np.zeros((n, width), bool)
            for rows, shape_data, shape_mask in encoded:
                data[rows, :shape_data.shape[1]] = shape_data
                mask[rows, :shape_mask.shape[1]] = shape_mask
        self._append(data[mask].tobytes())

    def _encode(self, events: Events, rows, has: list[bool]) -> wire.Part:
        """TracePacket bytes of `rows`, all of which have the fields flagged in `has`."""
        k = self.keys
        n = len(rows)
        parts = [wire.field(k["type"], wire.varint(events.type[rows])),
                 wire.field(k["track_uuid"], wire.varint(events.track[rows]))]
        if has[len(events.args)]:
            parts.append(wire.field(k["name_iid"], wire.varint(events.name[rows])))
        for index, arg in enumerate(events.args):
            if not has[index]:
                continue
            values = arg.values[rows]
            value = (wire.fixed64(values, double=True) if arg.kind == "double"
                     else wire.varint(values))
            parts.append(wire.message(k["debug"], [
                wire.const(k["arg_name"] + bytes(wire.varint_bytes(self.names.args.id(arg.name))), n),
                wire.field(k[arg.kind], value),
            ]))
        flow_out, flow_in, counter = has[len(events.args) + 1:]
        if flow_out:
            parts.append(wire.field(k["flow_ids"], wire.fixed64(events.flow_out[rows])))
        if flow_in:
            parts.append(wire.field(k["terminating_flow_ids"], wire.fixed64(events.flow_in[rows])))
        if counter:
            parts.append(wire.field(k["counter"], wire.fixed64(events.counter[rows], double=True)))
        return wire.message(k["packet"], [
            wire.field(k["timestamp"], wire.varint(events.ts[rows])),
            wire.message(k["track_event"], parts),
            wire.const(k["sequence"], n),
            wire.const(k["flags"], n),
        ])

    # -- output ---------------------------------------------------------------------------------
    @property
    def size(self) -> int:
        """Bytes of the file so far, counting the pending chunk uncompressed (an upper bound)."""
        return self.written + self.pending_bytes

    def _append(self, data: bytes) -> None:
        self.pending.append(data)
        self.pending_bytes += len(data)
        if self.pending_bytes >= CHUNK_BYTES:
            self._flush()

    def _flush(self) -> None:
        if not self.pending:
            return
        data = b"".join(self.pending)
        self.pending, self.pending_bytes = [], 0
        if self.compress:
            packed = zlib.compress(data, 1)
            packet = self.keys["compressed"] + _varint(len(packed)) + packed
            data = self.keys["packet"] + _varint(len(packet)) + packet
        self.handle.write(data)
        self.written += len(data)

    def finish(self, metadata: dict | None = None) -> None:
        """Flush everything (`metadata` is already in the trace as the metadata event)."""
        self._interned()
        self._flush()


def _shapes(events: Events):
    """(rows, fields present) of each set of rows of `events` with the same fields (args where
    present, name, flows, counter), in ascending order of their bit patterns."""
    import numpy as np

    n = len(events)
    columns = [arg.present if arg.present is not None else np.ones(n, bool) for arg in events.args]
    columns += [events.name > 0]
    for extra in (events.flow_out, events.flow_in):
        columns.append(extra > 0 if extra is not None else np.zeros(n, bool))
    columns.append(events.type == COUNTER)
    pattern = np.zeros(n, np.int64)
    for bit, column in enumerate(columns):
        pattern |= column.astype(np.int64) << bit
    # the shapes present, ascending (np.unique's order) without sorting the rows
    top = int(pattern.max())
    shapes = (np.flatnonzero(np.bincount(pattern, minlength=top + 1)) if top < 1 << 16
              else np.unique(pattern))
    for shape in shapes.tolist():
        yield np.flatnonzero(pattern == shape), [(shape >> bit) & 1 == 1 for bit in range(len(columns))]


def read_packets(data: bytes) -> list:
    """Every TracePacket of a trace written here, compressed_packets unpacked (for tests/tools)."""
    pb = _protos()
    packets = []
    for packet in pb.Trace.FromString(data).packet:
        if packet.HasField("compressed_packets"):
            packets.extend(pb.Trace.FromString(zlib.decompress(packet.compressed_packets)).packet)
        else:
            packets.append(packet)
    return packets
