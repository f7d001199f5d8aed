"""rocpd SQLite databases (read-only, un-suffixed views, counters joined to dispatches via event_id)."""

from __future__ import annotations

import math
import sqlite3
from dataclasses import dataclass
from pathlib import Path

from kerneltrace.counters.table import strip_sum
from kerneltrace.errors import InputError, require_all
from kerneltrace.readers.counter_run import CounterDispatch, CounterRun

REQUIRED_VIEWS = ("rocpd_kernel_dispatch", "rocpd_info_kernel_symbol")
COUNTER_VIEWS = ("rocpd_pmc_event", "rocpd_info_pmc")


@dataclass(frozen=True)
class KernelSummary:
    """One kernel of one database: how often and how long it ran (for discovery)."""

    name: str
    calls: int
    total_ns: int
    avg_ns: float
    guid: str


def connect_read_only(path: Path) -> sqlite3.Connection:
    """Open a rocpd database read-only (URI mode=ro; the file is never modified)."""
    path = Path(path)
    if not path.is_file():
        raise InputError("rocpd database not found", str(path), "check the path to the *_results.db file")
    try:
        conn = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True)
        names = {row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type IN ('view','table')")}
    except sqlite3.DatabaseError as err:
        raise InputError(f"not an SQLite database ({err})", str(path), "pass a rocprofv3 rocpd *_results.db") from err
    missing = [view for view in REQUIRED_VIEWS if view not in names]
    if missing:
        conn.close()
        raise InputError(
            f"not a rocpd database (no {', '.join(missing)} view)",
            str(path),
            "pass a database written by rocprofv3 --output-format rocpd",
        )
    conn.row_factory = sqlite3.Row
    return conn


def _name_expr() -> str:
    # display_name is the formatted (demangled) name, as in the CSV Kernel_Name column.
    return "COALESCE(NULLIF(S.display_name, ''), S.kernel_name)"


def kernels_summary(path: Path) -> list[KernelSummary]:
    """Kernels per run (guid) with call count and total/average duration, longest total first."""
    conn = connect_read_only(path)
    try:
        rows = conn.execute(
            f"""
            SELECT {_name_expr()} AS name, K.guid AS guid, COUNT(*) AS calls,
                   SUM(K."end" - K.start) AS total_ns
            FROM rocpd_kernel_dispatch K
            JOIN rocpd_info_kernel_symbol S ON S.id = K.kernel_id AND S.guid = K.guid
            GROUP BY K.guid, name
            ORDER BY total_ns DESC, name
            """
        ).fetchall()
    finally:
        conn.close()
    summaries = []
    for row in rows:
        total_ns = int(_finite(row["total_ns"] or 0, "total kernel time (end - start)", f"{path} kernel {row['name']!r}"))
        summaries.append(KernelSummary(str(row["name"]), int(row["calls"]), total_ns, total_ns / row["calls"], row["guid"]))
    return summaries


def read_rocpd(path: Path) -> list[CounterRun]:
    """One CounterRun per guid (run) in the database; dispatch ids are never merged across runs."""
    conn = connect_read_only(path)
    try:
        names = {row[0] for row in conn.execute("SELECT name FROM sqlite_master")}
        require_all(COUNTER_VIEWS, names, "rocpd database has no counter views ({missing})", str(path),
                    "collect counters with rocprofv3 --pmc (or a -i job with 'pmc')")
        rows = conn.execute(
            f"""
            SELECT K.guid AS guid, K.dispatch_id AS dispatch_id, {_name_expr()} AS kernel,
                   K.start AS start, K."end" AS finish, K.agent_id AS agent_id,
                   P.name AS counter, SUM(E.value) AS value
            FROM rocpd_kernel_dispatch K
            JOIN rocpd_info_kernel_symbol S ON S.id = K.kernel_id AND S.guid = K.guid
            JOIN rocpd_pmc_event E ON E.event_id = K.event_id AND E.guid = K.guid
            JOIN rocpd_info_pmc P ON P.id = E.pmc_id AND P.guid = E.guid
            GROUP BY K.guid, K.id, P.name
            ORDER BY K.guid, K.dispatch_id
            """
        ).fetchall()
        agents = _gpu_agents(conn, names)
    except sqlite3.DatabaseError as err:
        raise InputError(f"cannot query rocpd database ({err})", str(path), "pass an unmodified rocprofv3 rocpd database") from err
    finally:
        conn.close()
    runs: dict[str, dict[int, CounterDispatch]] = {}
    for row in rows:
        where = f"{path} dispatch {row['dispatch_id']!r}"
        if row["value"] is None:
            raise InputError(f"counter {row['counter']} has no value", where, "re-run the capture")
        dispatch_id = _integer(row["dispatch_id"], "dispatch_id", where)
        dispatches = runs.setdefault(row["guid"], {})
        dispatch = dispatches.get(dispatch_id)
        if dispatch is None:
            dispatch = CounterDispatch(
                dispatch_id=dispatch_id,
                kernel=str(row["kernel"] or ""),
                start_ns=_integer(row["start"], "start", where, optional=True),
                end_ns=_integer(row["finish"], "end", where, optional=True),
                agent=str(row["agent_id"]),
            )
            dispatches[dispatch.dispatch_id] = dispatch
        dispatch.counters[strip_sum(str(row["counter"]))] = _finite(row["value"], f"value of {row['counter']}", where)
    if not runs:
        raise InputError("rocpd database has no counter values joined to dispatches", str(path),
                         "check that the PMC capture matched the kernel")
    result = []
    for guid, dispatches in runs.items():
        run = CounterRun(source=f"{path}#{guid}", format="rocpd",
                         dispatches=[dispatches[k] for k in sorted(dispatches)])
        agent_ids = {d.agent for d in run.dispatches}
        for (agent_guid, agent_id), (name, product) in agents.items():
            if agent_guid == guid and str(agent_id) in agent_ids:
                run.arch, run.product = name, product
                run.arch_source = "rocpd_info_agent.name"
                break
        result.append(run)
    return result


def _integer(value: object, what: str, where: str, *, optional: bool = False) -> int | None:
    """SQLite is dynamically typed: a column declared INTEGER may still hold text, blobs or NULL."""
    if value is None and optional:
        return None
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if type(value) is not int:
        raise InputError(f"{what} is {value!r}, expected an integer", where, "pass an unmodified rocprofv3 rocpd database")
    return value


def _finite(value: object, what: str, where: str) -> float:
    if isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value):
        return float(value)
    raise InputError(f"{what} is {value!r}, expected a finite number", where, "pass an unmodified rocprofv3 rocpd database")


def _gpu_agents(conn: sqlite3.Connection, names: set[str]) -> dict[tuple[str, int], tuple[str | None, str | None]]:
    if "rocpd_info_agent" not in names:
        return {}
    rows = conn.execute("SELECT guid, id, name, product_name FROM rocpd_info_agent WHERE type = 'GPU'")
    return {(row["guid"], row["id"]): (row["name"] or None, row["product_name"] or None) for row in rows}
