"""The column-wise protobuf encoder against the perfetto package's own serializer: same bytes."""

from __future__ import annotations

import numpy as np

from kerneltrace.render.timeline import protowire as wire


def test_varints_and_nested_messages_match_the_package():
    from perfetto.protos.perfetto.trace.perfetto_trace_pb2 import Trace, TracePacket, TrackEvent

    values = np.array([0, 1, 127, 128, 300, 16383, 16384, 2**32, 2**56 - 1, 2**63 - 1], np.int64)
    present = np.array([True, False] * 5)
    n = len(values)
    packets = wire.message(wire.tag(Trace, "packet"), [
        wire.field(wire.tag(TracePacket, "timestamp"), wire.varint(values)),
        wire.message(wire.tag(TracePacket, "track_event"), [
            wire.field(wire.tag(TrackEvent, "track_uuid"), wire.varint(values[::-1].copy())),
            wire.field(wire.tag(TrackEvent, "name_iid"), wire.varint(values, present)),
        ]),
        wire.const(wire.tag(TracePacket, "trusted_packet_sequence_id") + b"\x07", n),
    ])
    expected = Trace()
    for i, value in enumerate(values.tolist()):
        packet = expected.packet.add(timestamp=value, trusted_packet_sequence_id=7)
        packet.track_event.track_uuid = int(values[::-1][i])
        if present[i]:
            packet.track_event.name_iid = value
    encoded = wire.to_bytes(packets)
    assert Trace.FromString(encoded) == expected  # field order differs, the message does not
    assert len(encoded) == len(expected.SerializeToString()) == packets.lengths.sum()


# protobuf descriptor type -> wire type (double/fixed64 1, varint types 0, string/message/bytes 2)
_WIRE = {1: 1, 6: 1, 3: 0, 4: 0, 5: 0, 8: 0, 13: 0, 14: 0, 9: 2, 11: 2, 12: 2}


def test_field_constants_are_the_package_descriptors():
    """proto.FIELDS (the writer never imports the package) against every named descriptor."""
    from perfetto.protos.perfetto.trace import perfetto_trace_pb2 as pb

    from kerneltrace.render.timeline import proto

    for (message, name), (number, kind) in proto.FIELDS.items():
        field = getattr(pb, message).DESCRIPTOR.fields_by_name[name]
        assert (field.number, _WIRE[field.type]) == (number, kind), (message, name)
    assert proto.SEQ_NEEDS_INCREMENTAL_STATE == pb.TracePacket.SEQ_NEEDS_INCREMENTAL_STATE
    assert proto.SEQ_INCREMENTAL_STATE_CLEARED == pb.TracePacket.SEQ_INCREMENTAL_STATE_CLEARED


def test_track_and_interned_packets_are_the_package_serialization():
    """The hand-encoded fixed packets are byte for byte what SerializeToString writes."""
    import io

    from perfetto.protos.perfetto.trace import perfetto_trace_pb2 as pb

    from kerneltrace.render.timeline.events import Names, Track
    from kerneltrace.render.timeline.proto import ProtoWriter

    tracks = [Track(uuid=7, kind="process", name="SE0 CU1 é", pid=3),
              Track(uuid=2**40, kind="thread", name="SIMD 0 slot 1", pid=3, tid=2**33, parent=7),
              Track(uuid=9, kind="thread", name="", pid=0, tid=0, parent=0),
              Track(uuid=11, kind="counter", name="waves resident", pid=3, parent=7)]
    names = Names()
    for text in ("instruction", "s_waitcnt vmcnt(0) ✓"):
        names.events.id(text)
    names.args.id("asm")
    names.values.id("v_mfma_f32_32x32x8f16 a[0:15]")
    out = io.BytesIO()
    writer = ProtoWriter(out, names, compress=False)
    writer.tracks(tracks)
    writer._interned()
    writer._interned()  # nothing new: no packet
    names.values.id("later")
    writer._interned()
    writer.finish()
    expected = pb.Trace()
    for track in tracks:
        descriptor = expected.packet.add().track_descriptor
        descriptor.uuid = track.uuid
        if track.kind == "process":
            descriptor.process.pid = track.pid
            descriptor.process.process_name = track.name
        elif track.kind == "thread":
            descriptor.parent_uuid = track.parent
            descriptor.thread.pid = track.pid
            descriptor.thread.tid = track.tid
            descriptor.thread.thread_name = track.name
        else:
            descriptor.parent_uuid = track.parent
            descriptor.name = track.name
            descriptor.counter.SetInParent()
    first = expected.packet.add(trusted_packet_sequence_id=1, sequence_flags=3)
    first.interned_data.event_names.add(iid=1, name="instruction")
    first.interned_data.event_names.add(iid=2, name="s_waitcnt vmcnt(0) ✓")
    first.interned_data.debug_annotation_names.add(iid=1, name="asm")
    first.interned_data.debug_annotation_string_values.add(iid=1, str=b"v_mfma_f32_32x32x8f16 a[0:15]")
    later = expected.packet.add(trusted_packet_sequence_id=1, sequence_flags=2)
    later.interned_data.debug_annotation_string_values.add(iid=2, str=b"later")
    assert out.getvalue() == expected.SerializeToString()


def test_compressed_chunks_decode_in_order():
    """Several compressed chunks are written in order (read_packets decodes them)."""
    import io

    from kerneltrace.render.timeline import proto
    from kerneltrace.render.timeline.events import Names, Track

    out = io.BytesIO()
    writer = proto.ProtoWriter(out, Names())
    count = 3 * proto.CHUNK_BYTES // 40
    writer.tracks([Track(uuid=k, kind="counter", name=f"counter {k:020d}", pid=0, parent=0)
                   for k in range(1, count)])
    assert writer.size >= writer.written
    writer.finish()
    packets = proto.read_packets(out.getvalue())
    assert [p.track_descriptor.uuid for p in packets if p.HasField("track_descriptor")] == list(
        range(1, count))
    assert writer.size == writer.written == len(out.getvalue())
