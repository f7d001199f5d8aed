"""A model of trace_processor's core tables in SQLite, built from a decoded timeline (tests only).

trace_processor is SQLite underneath; its `slice`, `thread_track`, `thread`, `process` and
`flow` tables and its `extract_arg` function (over the arg sets) are modelled with the columns the SQL recipes of
docs/timeline.md use, so the recipes run here when no trace_processor_shell binary is available.
Proto arguments are under `debug.`, JSON ones under `args.`, as trace_processor names them.
"""

from __future__ import annotations

import sqlite3

SCHEMA = """
CREATE TABLE process (upid INTEGER PRIMARY KEY, pid INTEGER, name TEXT);
CREATE TABLE thread (utid INTEGER PRIMARY KEY, tid INTEGER, name TEXT, upid INTEGER);
CREATE TABLE thread_track (id INTEGER PRIMARY KEY, utid INTEGER, name TEXT);
CREATE TABLE slice (id INTEGER PRIMARY KEY, ts INTEGER, dur INTEGER, track_id INTEGER,
                    name TEXT, depth INTEGER, parent_id INTEGER, arg_set_id INTEGER);
CREATE TABLE flow (id INTEGER PRIMARY KEY, slice_out INTEGER, slice_in INTEGER);
"""


def connect(decoded, arg_prefix: str = "debug.") -> sqlite3.Connection:
    """An in-memory database holding the decoded trace's slices, instants, tracks and flows."""
    db = sqlite3.connect(":memory:")
    db.executescript(SCHEMA)
    upids, utids = {}, {}
    for track in decoded.tracks.values():
        if track["kind"] == "process":
            upids[track["pid"]] = len(upids) + 1
            db.execute("INSERT INTO process VALUES (?, ?, ?)", (upids[track["pid"]], track["pid"],
                                                               track["name"]))
    for key, track in decoded.tracks.items():
        if track["kind"] == "thread":
            utids[key] = len(utids) + 1
            db.execute("INSERT INTO thread VALUES (?, ?, ?, ?)",
                       (utids[key], track["tid"], track["name"], upids.get(track["pid"])))
            db.execute("INSERT INTO thread_track VALUES (?, ?, ?)", (utids[key], utids[key],
                                                                    track["name"]))
    args: dict[tuple[int, str], object] = {}
    every = [*decoded.slices, *decoded.instants]
    ids = {id(s): number for number, s in enumerate(every, start=1)}
    rows = []
    for s in every:
        number = ids[id(s)]
        parent = ids.get(id(s.parent)) if s.parent is not None else None
        rows.append((number, s.ts, s.end - s.ts, utids.get(s.track), s.name, s.depth, parent,
                     number))
        for name, value in s.args.items():
            args[(number, arg_prefix + name)] = value
    db.executemany("INSERT INTO slice VALUES (?, ?, ?, ?, ?, ?, ?, ?)", rows)
    starts, ends = {}, {}
    for s in decoded.slices:
        for flow in s.flow_out:
            starts[flow] = ids[id(s)]
        for flow in s.flow_in:
            ends[flow] = ids[id(s)]
    db.executemany("INSERT INTO flow (slice_out, slice_in) VALUES (?, ?)",
                   [(starts[f], ends[f]) for f in starts if f in ends])

    def extract_arg(arg_set_id, key):
        value = args.get((arg_set_id, key))
        if isinstance(value, float) and value.is_integer():
            return int(value)
        return value

    db.create_function("extract_arg", 2, extract_arg, deterministic=True)
    return db
