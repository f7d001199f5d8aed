"""Decode a written timeline back into slices, instants, flows and counters (tests only).

Perfetto protobuf: the perfetto package's `Trace` message (compressed_packets unpacked); Chrome
JSON: json.loads of the gzip text. Slices are matched BEGIN→END per track after a stable sort by
timestamp, as trace processors do, so a misordered END shows up as a wrong nesting.
"""

from __future__ import annotations

import gzip
import json
from dataclasses import dataclass, field
from pathlib import Path


@dataclass
class Slice:
    track: object
    ts: int
    end: int
    name: str
    args: dict
    depth: int
    flow_out: list = field(default_factory=list)
    flow_in: list = field(default_factory=list)
    parent: Slice | None = None  # the enclosing slice on the same track (None at depth 0)


@dataclass
class Decoded:
    tracks: dict  # track key -> {"kind", "name", "pid", "tid", "parent"}
    slices: list[Slice]
    instants: list[Slice]
    counters: dict  # counter name per (pid, name) -> [(ts, value)]
    metadata: dict


def _nest(events: list[tuple]) -> list[Slice]:
    """events: (ts, order, track, kind "B"/"E", name, args, flow_out, flow_in) -> slices."""
    events.sort(key=lambda e: (e[0], e[1]))
    stacks: dict = {}
    done = []
    for ts, _, track, kind, name, args, flow_out, flow_in in events:
        stack = stacks.setdefault(track, [])
        if kind == "B":
            stack.append(Slice(track, ts, -1, name, args, len(stack), flow_out, flow_in,
                               stack[-1] if stack else None))
        else:
            assert stack, f"END without BEGIN on track {track} at {ts}"
            top = stack.pop()
            top.end = ts
            done.append(top)
    open_ = [s for stack in stacks.values() for s in stack]
    assert not open_, f"{len(open_)} slices never ended"
    return done


def decode_proto(path: Path) -> Decoded:
    from kerneltrace.render.timeline.proto import read_packets

    packets = read_packets(Path(path).read_bytes())
    event_names, arg_names, values = {}, {}, {}
    tracks, events, instants, counters = {}, [], [], {}
    for order, packet in enumerate(packets):
        if packet.HasField("interned_data"):
            data = packet.interned_data
            event_names.update({e.iid: e.name for e in data.event_names})
            arg_names.update({e.iid: e.name for e in data.debug_annotation_names})
            values.update({e.iid: e.str.decode() for e in data.debug_annotation_string_values})
        if packet.HasField("track_descriptor"):
            d = packet.track_descriptor
            if d.HasField("process"):
                tracks[d.uuid] = {"kind": "process", "name": d.process.process_name,
                                  "pid": d.process.pid}
            elif d.HasField("thread"):
                tracks[d.uuid] = {"kind": "thread", "name": d.thread.thread_name,
                                  "pid": d.thread.pid, "tid": d.thread.tid, "parent": d.parent_uuid}
            else:
                tracks[d.uuid] = {"kind": "counter", "name": d.name, "parent": d.parent_uuid}
        if not packet.HasField("track_event"):
            continue
        event = packet.track_event
        assert event.track_uuid in tracks, "event before its track descriptor"
        args = {}
        for annotation in event.debug_annotations:
            key = arg_names[annotation.name_iid]
            if annotation.HasField("string_value_iid"):
                args[key] = values[annotation.string_value_iid]
            elif annotation.HasField("double_value"):
                args[key] = annotation.double_value
            else:
                args[key] = annotation.int_value
        name = event_names.get(event.name_iid, "")
        if event.type == event.TYPE_COUNTER:
            track = tracks[event.track_uuid]
            counters.setdefault(track["name"], {}).setdefault(track["parent"], []).append(
                (packet.timestamp, event.double_counter_value))
        elif event.type == event.TYPE_INSTANT:
            instants.append(Slice(event.track_uuid, packet.timestamp, packet.timestamp, name, args, 0))
        else:
            kind = "B" if event.type == event.TYPE_SLICE_BEGIN else "E"
            events.append((packet.timestamp, order, event.track_uuid, kind, name, args,
                           list(event.flow_ids), list(event.terminating_flow_ids)))
    metadata = next((s.args for s in instants if s.name == "trace metadata"), {})
    return Decoded(tracks, _nest(events), [s for s in instants if s.name != "trace metadata"],
                   counters, metadata)


def decode_json(path: Path) -> Decoded:
    document = json.loads(gzip.decompress(Path(path).read_bytes()))
    tracks, events, instants, counters = {}, [], [], {}
    for order, e in enumerate(document["traceEvents"]):
        phase = e["ph"]
        if phase == "M":
            key = (e["pid"], e.get("tid"))
            tracks[key] = {"kind": "thread" if e["name"] == "thread_name" else "process",
                           "name": e["args"]["name"], "pid": e["pid"], "tid": e.get("tid")}
        elif phase == "C":
            counters.setdefault(e["name"], {}).setdefault(e["pid"], []).append(
                (round(e["ts"] * 1000), e["args"]["value"]))
        elif phase == "i":
            instants.append(Slice((e["pid"], e["tid"]), round(e["ts"] * 1000),
                                  round(e["ts"] * 1000), e["name"], e.get("args", {}), 0))
        else:
            flow_out = [e["bind_id"]] if e.get("flow_out") else []
            flow_in = [e["bind_id"]] if e.get("flow_in") else []
            events.append((round(e["ts"] * 1000), order, (e["pid"], e["tid"]), phase,
                           e.get("name", ""), e.get("args", {}), flow_out, flow_in))
    metadata = next((s.args for s in instants if s.name == "trace metadata"), {})
    return Decoded(tracks, _nest(events), [s for s in instants if s.name != "trace metadata"],
                   counters, metadata)
