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
