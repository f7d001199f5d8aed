"""The track-event model both trace writers consume: tracks, interned strings, event columns."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np

# TrackEvent.Type values (perfetto protos: track_event.proto)
BEGIN, END, INSTANT, COUNTER = 1, 2, 3, 4


class Strings:
    """Interned strings of one kind (event names, argument names, argument values): id from 1.

    `pending()` returns the strings added since the last call, so a writer can emit each string
    once, before the first event that uses it.
    """

    def __init__(self) -> None:
        self.ids: dict[str, int] = {}
        self.values: list[str] = [""]  # id 0 = none
        self._flushed = 1

    def id(self, text: str) -> int:
        found = self.ids.get(text)
        if found is None:
            found = self.ids[text] = len(self.values)
            self.values.append(text)
        return found

    def pending(self) -> list[tuple[int, str]]:
        start, self._flushed = self._flushed, len(self.values)
        return [(i, self.values[i]) for i in range(start, len(self.values))]


@dataclass(frozen=True)
class Track:
    """One track: a process, a thread of it (slices) or a counter of it."""

    uuid: int
    kind: str  # "process" | "thread" | "counter"
    name: str
    pid: int
    tid: int = 0
    parent: int = 0  # uuid of the process track (threads, counters)


@dataclass
class Arg:
    """One argument column: the value of argument `name` on each event (where `present`)."""

    name: str
    kind: str  # "int" | "str" (an id of Names.values) | "double"
    values: np.ndarray
    present: np.ndarray | None = None


@dataclass
class Events:
    """A batch of track events, in emission order (per track: the order the viewer needs)."""

    ts: np.ndarray  # ns, int64
    track: np.ndarray  # track uuid
    type: np.ndarray  # BEGIN / END / INSTANT / COUNTER
    name: np.ndarray  # Names.events id, 0 on END
    args: list[Arg] = field(default_factory=list)
    flow_out: np.ndarray | None = None  # flow id started by this slice (0: none)
    flow_in: np.ndarray | None = None  # flow id this slice terminates (0: none)
    counter: np.ndarray | None = None  # value of COUNTER events

    def __len__(self) -> int:
        return len(self.ts)


@dataclass
class Names:
    """The three interned string tables of a trace."""

    events: Strings = field(default_factory=Strings)
    args: Strings = field(default_factory=Strings)
    values: Strings = field(default_factory=Strings)


def slices(begin, end, track, name, key, args: list[Arg] | None = None, flow_out=None,
           flow_in=None) -> list[tuple[Events, np.ndarray]]:
    """The BEGIN events (with the args and flows) and the END events of slices [begin, end), as
    two parts with their sort keys.

    `key` orders the slices of one track (a child's key lies between its parent's BEGIN key
    and END key, see waves.py); a slice's END key is key + 1. Merged, the two parts are the
    BEGIN rows then the END rows (END rows carry no argument).
    """
    import numpy as np

    n = len(begin)
    begins = Events(ts=begin, track=track, type=np.full(n, BEGIN, np.int64), name=name,
                    args=list(args or []), flow_out=flow_out, flow_in=flow_in)
    ends = Events(ts=end, track=track, type=np.full(n, END, np.int64), name=np.zeros(n, np.int64))
    return [(begins, key), (ends, key + 1)]


@dataclass
class Unmerged:
    """Event batches with their sort keys, left for the writer to interleave: the Perfetto
    writer encodes each part on its own and puts the packets in key order (no merged copy of
    every column); `merge` gives the one batch a writer that needs it reads."""

    parts: list[tuple[Events, np.ndarray]]

    def __len__(self) -> int:
        return sum(len(events) for events, _ in self.parts)


def sorted_args(args: list[Arg]) -> list[Arg]:
    """Arguments in the order `merge` writes them (by name, then kind)."""
    return sorted(args, key=lambda arg: (arg.name, arg.kind))


def merge(parts: list[tuple[Events, np.ndarray]]) -> Events:
    """Concatenate event batches and order them by their keys (stable); arguments by name."""
    import numpy as np

    parts = [(events, keys) for events, keys in parts if len(events)]
    if not parts:
        empty = np.zeros(0, np.int64)
        return Events(empty, empty, empty, empty)
    keys = np.concatenate([keys for _, keys in parts])
    order = np.argsort(keys, kind="stable")
    total = len(keys)
    offsets = np.cumsum([0] + [len(events) for events, _ in parts])

    def column(get, dtype) -> np.ndarray | None:
        if all(get(events) is None for events, _ in parts):
            return None
        return np.concatenate([get(events) if get(events) is not None
                               else np.zeros(len(events), dtype) for events, _ in parts])[order]

    names = {(arg.name, arg.kind) for events, _ in parts for arg in events.args}
    args = []
    for arg_name, kind in sorted(names):
        values = np.zeros(total, np.float64 if kind == "double" else np.int64)
        present = np.zeros(total, bool)
        for (events, _), offset in zip(parts, offsets[:-1].tolist(), strict=True):
            for arg in events.args:
                if (arg.name, arg.kind) == (arg_name, kind):
                    values[offset:offset + len(events)] = arg.values
                    present[offset:offset + len(events)] = (arg.present if arg.present is not None
                                                            else True)
        args.append(Arg(arg_name, kind, values[order], present[order]))
    return Events(
        ts=np.concatenate([e.ts for e, _ in parts])[order],
        track=np.concatenate([e.track for e, _ in parts])[order],
        type=np.concatenate([e.type for e, _ in parts])[order],
        name=np.concatenate([e.name for e, _ in parts])[order],
        args=args,
        flow_out=column(lambda e: e.flow_out, np.int64),
        flow_in=column(lambda e: e.flow_in, np.int64),
        counter=column(lambda e: e.counter, np.float64),
    )
