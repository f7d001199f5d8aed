"""Chrome trace-event JSON writer (gzip), the alternative format: same tracks and events as proto."""

from __future__ import annotations

import json
import zlib
from typing import BinaryIO

from kerneltrace.render.timeline.events import (
    BEGIN,
    COUNTER,
    END,
    INSTANT,
    Events,
    Names,
    Track,
    Unmerged,
    merge,
)

_PHASE = {BEGIN: "B", END: "E", INSTANT: "i", COUNTER: "C"}


class JsonWriter:
    """Streams `{"traceEvents": [...], "metadata": {...}}` through gzip to `handle`."""

    suffix = ".json.gz"

    def __init__(self, handle: BinaryIO, names: Names, level: int = 1) -> None:
        self.handle = handle
        self.names = names
        self.gzip = zlib.compressobj(level, zlib.DEFLATED, 31)  # wbits 31: gzip container
        self.written = 0
        self.unflushed = 0  # text bytes given to gzip since it last returned output
        self.threads: dict[int, tuple[int, int]] = {}  # track uuid -> (pid, tid)
        self.counters: dict[int, tuple[int, str]] = {}  # counter uuid -> (pid, name)
        self.separator = ""
        self._write('{"traceEvents":[\n')

    @property
    def size(self) -> int:
        """Bytes of the file so far, counting the text gzip still holds uncompressed (a bound)."""
        return self.written + self.unflushed

    def _write(self, text: str) -> None:
        raw = text.encode("utf-8")
        data = self.gzip.compress(raw)
        self.unflushed += len(raw)
        if data:
            self.handle.write(data)
            self.written += len(data)
            self.unflushed = 0

    def _event(self, event: dict) -> None:
        self._write(self.separator + json.dumps(event, separators=(",", ":")))
        self.separator = ",\n"

    def tracks(self, tracks: list[Track]) -> None:
        for track in tracks:
            if track.kind == "process":
                self._event({"ph": "M", "name": "process_name", "pid": track.pid,
                             "args": {"name": track.name}})
            elif track.kind == "thread":
                self.threads[track.uuid] = (track.pid, track.tid)
                self._event({"ph": "M", "name": "thread_name", "pid": track.pid, "tid": track.tid,
                             "args": {"name": track.name}})
            else:
                self.counters[track.uuid] = (track.pid, track.name)

    def events(self, events: Events | Unmerged) -> None:
        if isinstance(events, Unmerged):
            events = merge(events.parts)
        names, values = self.names.events.values, self.names.values.values
        columns = [(arg.name, arg.kind, arg.values.tolist(),
                    arg.present.tolist() if arg.present is not None else None)
                   for arg in events.args]
        flow_out = events.flow_out.tolist() if events.flow_out is not None else None
        flow_in = events.flow_in.tolist() if events.flow_in is not None else None
        counter = events.counter.tolist() if events.counter is not None else None
        lines = []
        dumps = json.dumps
        for i, (ts, track, kind, name) in enumerate(zip(events.ts.tolist(), events.track.tolist(),
                                                         events.type.tolist(), events.name.tolist(),
                                                         strict=True)):
            event: dict = {"ph": _PHASE[kind], "ts": ts / 1000}
            if kind == COUNTER:
                pid, counter_name = self.counters[track]
                event.update(pid=pid, name=counter_name, args={"value": counter[i]})
            else:
                event["pid"], event["tid"] = self.threads[track]
                if kind != END:
                    event["name"] = names[name]
                    args = {}
                    for arg_name, arg_kind, column, present in columns:
                        if present is None or present[i]:
                            args[arg_name] = values[column[i]] if arg_kind == "str" else column[i]
                    if args:
                        event["args"] = args
                    if kind == INSTANT:
                        event["s"] = "t"
                if flow_out is not None and flow_out[i]:
                    event.update(bind_id=flow_out[i], flow_out=True)
                if flow_in is not None and flow_in[i]:
                    event.update(bind_id=flow_in[i], flow_in=True)
            lines.append(dumps(event, separators=(",", ":")))
        if lines:
            self._write(self.separator + ",\n".join(lines))
            self.separator = ",\n"

    def finish(self, metadata: dict | None = None) -> None:
        self._write('\n],"displayTimeUnit":"ns","metadata":' + json.dumps(metadata or {}) + "}\n")
        data = self.gzip.flush()
        self.handle.write(data)
        self.written += len(data)
