"""Track layout of a wave timeline: one process per SE/CU, thread tracks per SIMD slot, counters.

Per traced SE/CU (process "SE<s> CU<c>"): for each SIMD slot that ran a wave, three threads
"SIMD<d> slot<l> waves" (wave slices with their state slices nested), "… instructions" (the
shown instruction executions) and "… loop" (hot-loop iterations); one "barrier arrivals"
thread; counter tracks "waves resident" and "<pipe> busy". Thread ids are unique in the trace
(pid * 4096 + local number), so viewers never merge two slots. Track uuids count from 1.
"""

from __future__ import annotations

from kerneltrace.render.timeline.events import Track

THREAD_KINDS = ("waves", "instructions", "loop")
BARRIER_THREAD = 1023  # local number of the barrier-arrivals thread
METADATA_PID = 1  # the process of the trace-metadata track


class TrackRegistry:
    """Hands out track uuids, pids and tids; remembers the tracks not yet written."""

    def __init__(self) -> None:
        self.by_key: dict[tuple, Track] = {}
        self.new: list[Track] = []

    def _add(self, key: tuple, kind: str, name: str, pid: int, tid: int = 0,
             parent: int = 0) -> Track:
        track = Track(len(self.by_key) + 1, kind, name, pid, tid, parent)
        self.by_key[key] = track
        self.new.append(track)
        return track

    def process(self, se: int | None, cu: int | None) -> Track:
        key = ("process", se, cu)
        found = self.by_key.get(key)
        if found is None:
            pid = 2 + sum(1 for k in self.by_key if k[0] == "process")
            found = self._add(key, "process", f"SE{se if se is not None else '?'} "
                                              f"CU{cu if cu is not None else '?'}", pid)
        return found

    def thread(self, se: int | None, cu: int | None, simd: int, slot: int, kind: int) -> int:
        key = ("thread", se, cu, simd, slot, kind)
        found = self.by_key.get(key)
        if found is None:
            process = self.process(se, cu)
            local = ((simd % 16) * 64 + slot % 64) * len(THREAD_KINDS) + kind
            found = self._add(key, "thread", f"SIMD{simd} slot{slot} {THREAD_KINDS[kind]}",
                              process.pid, process.pid * 4096 + local, process.uuid)
        return found.uuid

    def barrier(self, se: int | None, cu: int | None) -> int:
        key = ("barrier", se, cu)
        found = self.by_key.get(key)
        if found is None:
            process = self.process(se, cu)
            found = self._add(key, "thread", "barrier arrivals", process.pid,
                              process.pid * 4096 + 4095, process.uuid)
        return found.uuid

    def counter(self, se: int | None, cu: int | None, name: str) -> int:
        key = ("counter", se, cu, name)
        found = self.by_key.get(key)
        if found is None:
            process = self.process(se, cu)
            found = self._add(key, "counter", name, process.pid, 0, process.uuid)
        return found.uuid

    def metadata(self) -> int:
        key = ("metadata",)
        found = self.by_key.get(key)
        if found is None:
            process = self._add(("process-metadata",), "process", "kerneltrace", METADATA_PID)
            found = self._add(key, "thread", "trace metadata", METADATA_PID, METADATA_PID * 4096,
                              process.uuid)
        return found.uuid

    def take_new(self) -> list[Track]:
        """The tracks created since the last call (a writer emits them before their events)."""
        new, self.new = self.new, []
        return new
