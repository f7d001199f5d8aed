"""Perfetto protobuf trace writer: descriptors and strings as perfetto messages, events via protowire.

Everything is written inside zlib `compressed_packets` chunks (as Perfetto's tracing service
writes them), one sequence, interned strings emitted before their first use.
"""

from __future__ import annotations

import zlib
from typing import BinaryIO

from kerneltrace.render.timeline import protowire as wire
from kerneltrace.render.timeline.events import COUNTER, Events, Names, Track

SEQUENCE = 1  # trusted_packet_sequence_id of every packet (one writer: one sequence)
CHUNK_BYTES = 1 << 20  # uncompressed packets per compressed_packets packet


def _protos():
    """The perfetto package's trace messages (imported on first use: a heavy import)."""
    from perfetto.protos.perfetto.trace import perfetto_trace_pb2 as pb

    return pb


class ProtoWriter:
    """Streams a Perfetto trace (`Trace` = repeated TracePacket) to `handle`."""

    suffix = ".pftrace"

    def __init__(self, handle: BinaryIO, names: Names, compress: bool = True) -> None:
        self.pb = _protos()
        self.handle = handle
        self.names = names
        self.compress = compress
        self.pending: list[bytes] = []
        self.pending_bytes = 0
        self.written = 0  # bytes written to the handle so far
        self.first = True
        pb = self.pb
        self.keys = {
            "packet": wire.tag(pb.Trace, "packet"),
            "timestamp": wire.tag(pb.TracePacket, "timestamp"),
            "track_event": wire.tag(pb.TracePacket, "track_event"),
            "sequence": wire.tag(pb.TracePacket, "trusted_packet_sequence_id")
            + bytes(wire.varint_bytes(SEQUENCE)),
            "flags": wire.tag(pb.TracePacket, "sequence_flags")
            + bytes(wire.varint_bytes(pb.TracePacket.SEQ_NEEDS_INCREMENTAL_STATE)),
            "type": wire.tag(pb.TrackEvent, "type"),
            "track_uuid": wire.tag(pb.TrackEvent, "track_uuid"),
            "name_iid": wire.tag(pb.TrackEvent, "name_iid"),
            "debug": wire.tag(pb.TrackEvent, "debug_annotations"),
            "flow_ids": wire.tag(pb.TrackEvent, "flow_ids"),
            "terminating_flow_ids": wire.tag(pb.TrackEvent, "terminating_flow_ids"),
            "counter": wire.tag(pb.TrackEvent, "double_counter_value"),
            "arg_name": wire.tag(pb.DebugAnnotation, "name_iid"),
            "int": wire.tag(pb.DebugAnnotation, "int_value"),
            "str": wire.tag(pb.DebugAnnotation, "string_value_iid"),
            "double": wire.tag(pb.DebugAnnotation, "double_value"),
        }

    # -- fixed packets, built as messages -------------------------------------------------------
    def _packet(self, packet) -> None:
        data = packet.SerializeToString()
        self._append(self.keys["packet"] + bytes(wire.varint_bytes(len(data))) + data)

    def tracks(self, tracks: list[Track]) -> None:
        pb = self.pb
        for track in tracks:
            packet = pb.TracePacket()
            descriptor = packet.track_descriptor
            descriptor.uuid = track.uuid
            if track.kind == "process":
                descriptor.process.pid = track.pid
                descriptor.process.process_name = track.name
            elif track.kind == "thread":
                descriptor.parent_uuid = track.parent
                descriptor.thread.pid = track.pid
                descriptor.thread.tid = track.tid
                descriptor.thread.thread_name = track.name
            else:  # counter
                descriptor.parent_uuid = track.parent
                descriptor.name = track.name
                descriptor.counter.SetInParent()
            self._packet(packet)

    def _interned(self) -> None:
        """One InternedData packet with the strings not yet emitted (the first clears state)."""
        pb = self.pb
        events, args, values = (table.pending() for table in
                                (self.names.events, self.names.args, self.names.values))
        if not (events or args or values or self.first):
            return
        packet = pb.TracePacket()
        packet.trusted_packet_sequence_id = SEQUENCE
        flags = pb.TracePacket.SEQ_NEEDS_INCREMENTAL_STATE
        if self.first:
            flags |= pb.TracePacket.SEQ_INCREMENTAL_STATE_CLEARED
            self.first = False
        packet.sequence_flags = flags
        data = packet.interned_data
        for iid, text in events:
            data.event_names.add(iid=iid, name=text)
        for iid, text in args:
            data.debug_annotation_names.add(iid=iid, name=text)
        for iid, text in values:
            data.debug_annotation_string_values.add(iid=iid, str=text.encode("utf-8", "replace"))
        self._packet(packet)

    # -- event batches, encoded column-wise -----------------------------------------------------
    def events(self, events: Events) -> None:
        """Encode a batch: rows with the same fields (END rows carry none of the args) are
        encoded together with only their fields, then put back in the batch's order."""
        import numpy as np

        for arg in events.args:  # every string the batch uses is emitted before it
            self.names.args.id(arg.name)
        self._interned()
        n = len(events)
        if not n:
            return
        columns = [arg.present if arg.present is not None else np.ones(n, bool)
                   for arg in events.args]
        columns += [events.name > 0]
        for extra in (events.flow_out, events.flow_in):
            columns.append(extra > 0 if extra is not None else np.zeros(n, bool))
        columns.append(events.type == COUNTER)
        pattern = np.zeros(n, np.int64)
        for bit, column in enumerate(columns):
            pattern |= column.astype(np.int64) << bit
        shapes, inverse = np.unique(pattern, return_inverse=True)
        encoded = []
        for shape_index, shape in enumerate(shapes.tolist()):
            rows = np.flatnonzero(inverse == shape_index)
            part = self._encode(events, rows, [(shape >> bit) & 1 == 1 for bit in range(len(columns))])
            encoded.append((rows, *wire.to_matrix(part)))
        if len(encoded) == 1:
            _, data, mask = encoded[0]
        else:  # each shape's rows back in their place, padded to the widest shape
            width = max(data.shape[1] for _, data, _ in encoded)
            data = np.zeros((n, width), np.uint8)
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
            inner = self.pb.TracePacket.DESCRIPTOR.fields_by_name["compressed_packets"]
            key = bytes(wire.varint_bytes((inner.number << 3) | 2))
            packet = key + bytes(wire.varint_bytes(len(packed))) + packed
            data = self.keys["packet"] + bytes(wire.varint_bytes(len(packet))) + packet
        self.handle.write(data)
        self.written += len(data)

    def finish(self, metadata: dict | None = None) -> None:
        """Flush everything (`metadata` is already in the trace as the metadata event)."""
        self._interned()
        self._flush()


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
