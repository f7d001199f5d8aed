"""rocprofv3 CSV readers on the hotspot CLI path (kernel_trace, agent_info), columns by header name, no pandas."""

from __future__ import annotations

import csv
from operator import itemgetter
from pathlib import Path

from kerneltrace.arch.dispatch_meta import DispatchMeta
from kerneltrace.errors import InputError, require_all
from kerneltrace.readers.csvlines import line_at, line_starts, lines_holding
from kerneltrace.readers.regular import CSV_LIMIT, read_regular
from kerneltrace.records import record


@record(frozen=True)
class KernelTraceRow:
    """One kernel_trace.csv row as written (None = column absent); .meta() feeds occupancy."""

    kernel_name: str
    dispatch_id: int | None
    kernel_id: int | None
    agent: str | None                # raw Agent_Id ("Agent 8" or a bare number)
    vgpr_count: int | None           # as reported (half the real value on gfx950, see docs)
    accum_vgpr_count: int | None     # 0 on gfx950 even for AGPR users
    sgpr_count: int | None
    lds_bytes: int | None            # LDS_Block_Size, or Group_Segment_Size on old headers
    scratch_bytes: int | None        # Scratch_Size, or Private_Segment_Size
    workgroup_size: tuple[int, int, int] | None
    grid_size: tuple[int, int, int] | None   # work-items, not workgroups
    start_ns: int | None
    end_ns: int | None
    source: str                      # CSV path the row came from

    @property
    def workgroup_items(self) -> int | None:
        if self.workgroup_size is None:
            return None
        x, y, z = self.workgroup_size
        return max(1, x) * max(1, y) * max(1, z)

    @property
    def duration_ns(self) -> int | None:
        if self.start_ns is None or self.end_ns is None:
            return None
        return self.end_ns - self.start_ns

    @property
    def agent_number(self) -> int | None:
        """N of "Agent N" (or the bare integer); matches agent_info Logical_Node_Id."""
        if not self.agent:
            return None
        token = self.agent.split()[-1]
        return int(token) if token.isdigit() else None

    def meta(self) -> DispatchMeta:
        """The occupancy model's view of this row (workgroup/grid as x*y*z products)."""
        grid = None
        if self.grid_size is not None:
            x, y, z = self.grid_size
            grid = max(1, x) * max(1, y) * max(1, z)
        return DispatchMeta(
            kernel_name=self.kernel_name,
            dispatch_id=self.dispatch_id,
            vgpr_count=self.vgpr_count,
            accum_vgpr_count=self.accum_vgpr_count,
            sgpr_count=self.sgpr_count,
            lds_bytes=self.lds_bytes,
            scratch_bytes=self.scratch_bytes,
            workgroup_size=self.workgroup_items,
            grid_size=grid,
            start_ns=self.start_ns,
            end_ns=self.end_ns,
        )

    def to_dict(self) -> dict:
        return {
            "kernel_name": self.kernel_name,
            "dispatch_id": self.dispatch_id,
            "kernel_id": self.kernel_id,
            "agent": self.agent,
            "vgpr_count": self.vgpr_count,
            "accum_vgpr_count": self.accum_vgpr_count,
            "sgpr_count": self.sgpr_count,
            "lds_bytes": self.lds_bytes,
            "scratch_bytes": self.scratch_bytes,
            "workgroup_size": list(self.workgroup_size) if self.workgroup_size else None,
            "grid_size": list(self.grid_size) if self.grid_size else None,
            "duration_ns": self.duration_ns,
            "source": self.source,
        }


@record(frozen=True)
class AgentInfo:
    """One agent_info.csv row (GPU or CPU)."""

    logical_node_id: int | None
    agent_type: str                  # "GPU" | "CPU"
    name: str                        # gfx target for GPUs, e.g. "gfx950"
    gfx_target_version: int | None
    product_name: str
    cu_count: int | None
    simd_per_cu: int | None
    max_waves_per_simd: int | None
    wave_front_size: int | None
    lds_size_kb: int | None
    max_engine_clock_mhz: int | None
    source: str


def _read_rows(path: Path, required: tuple[str, ...], what: str) -> list[dict[str, str]]:
    """Read a CSV into dicts keyed by header name; demand the required columns."""
    raw = read_regular(path, what, CSV_LIMIT)
    text = raw.decode("utf-8", errors="replace")
    reader = csv.DictReader(text.splitlines())
    try:
        header = reader.fieldnames or []  # reads the first row: may already be malformed
        require_all(required, header, f"not a rocprofv3 {what}: missing column(s) {{missing}}", str(path),
                    f"pass the {what} written by rocprofv3 (-f csv)")
        return list(reader)
    except csv.Error as err:
        raise InputError(f"malformed CSV: {err}", str(path), f"regenerate the {what}") from None


def _int(value: str | None) -> int | None:
    """Parse an integer cell; '' or a non-number is unknown (None), never 0."""
    if value is None:
        return None
    value = value.strip()
    if not value:
        return None
    try:
        return int(value)
    except ValueError:
        try:
            number = float(value)
        except ValueError:
            return None
        return int(number) if number - number == 0 else None  # finite (inf - inf and NaN are NaN); no math import


def _size(value: str | None) -> int | None:
    """A count or size cell (registers, bytes, CUs, workgroup extent): negative is unknown (None).

    No tool writes a negative size; reading it as unknown keeps it out of the occupancy
    arithmetic (an LDS size of -1 rounded to a granule of 0 divided by zero).
    """
    number = _int(value)
    return None if number is None or number < 0 else number


def _first(row: dict[str, str], *names: str) -> str | None:
    for name in names:
        if name in row and row[name] not in (None, ""):
            return row[name]
    return None


def _triple(row: dict[str, str], prefix: str) -> tuple[int, int, int] | None:
    values = [_size(row.get(f"{prefix}_{axis}")) for axis in "XYZ"]
    if values[0] is None:
        return None
    return (values[0], values[1] or 1, values[2] or 1)


def _kernel_trace_row(row: dict[str, str], source: str) -> KernelTraceRow:
    return KernelTraceRow(
        kernel_name=row.get("Kernel_Name") or "",
        dispatch_id=_int(row.get("Dispatch_Id")),
        kernel_id=_int(row.get("Kernel_Id")),
        agent=(row.get("Agent_Id") or None),
        vgpr_count=_size(row.get("VGPR_Count")),
        accum_vgpr_count=_size(row.get("Accum_VGPR_Count")),
        sgpr_count=_size(row.get("SGPR_Count")),
        lds_bytes=_size(_first(row, "LDS_Block_Size", "Group_Segment_Size")),
        scratch_bytes=_size(_first(row, "Scratch_Size", "Private_Segment_Size")),
        workgroup_size=_triple(row, "Workgroup_Size"),
        grid_size=_triple(row, "Grid_Size"),
        start_ns=_int(row.get("Start_Timestamp")),
        end_ns=_int(row.get("End_Timestamp")),
        source=source,
    )


# the cells KernelTraceRow's resources (vgpr, accum, sgpr, lds, workgroup items) come from
_RESOURCE_CELLS = ("VGPR_Count", "Accum_VGPR_Count", "SGPR_Count", "LDS_Block_Size", "Group_Segment_Size",
                   "Workgroup_Size_X", "Workgroup_Size_Y", "Workgroup_Size_Z")


_GRID_CELLS = ("Grid_Size_X", "Grid_Size_Y", "Grid_Size_Z")


class KernelTraceTable:
    """The rows of one kernel_trace CSV as csv.reader lists, each turned into a KernelTraceRow on
    first access.

    Finding a dispatch's row needs only every row's Dispatch_Id and Kernel_Name; a discovery CSV
    holds ~10^4 rows, and a dict plus a KernelTraceRow per row cost more than the rest of a
    hotspot run. `row(at)` sees the dict csv.DictReader would have made (duplicate names: the
    last column; short rows: None; extra cells under the key None).
    """

    __slots__ = ("names", "_header", "_position", "_rows", "_source", "_ids", "_converted")

    def __init__(self, header: list[str], rows: list[list[str]], source: str) -> None:
        self._header, self._rows, self._source = header, rows, source
        self._position = {name: at for at, name in enumerate(header)}  # the last of duplicates
        self.names = [value or "" for value in self._column("Kernel_Name")]  # KernelTraceRow.kernel_name
        self._ids: list[int | None] | None = None
        self._converted: dict[int, KernelTraceRow] = {}

    def _column(self, name: str) -> list[str | None]:
        at = self._position.get(name)
        if at is None:
            return [None] * len(self._rows)
        return [values[at] if at < len(values) else None for values in self._rows]

    @property
    def header(self) -> list[str]:
        return self._header

    @property
    def ids(self) -> list[int | None]:
        """KernelTraceRow.dispatch_id of every row (parsed once, when first asked)."""
        if self._ids is None:
            self._ids = [_int(value) for value in self._column("Dispatch_Id")]
        return self._ids

    def _as_dict(self, values: list[str]) -> dict:
        header = self._header
        row: dict = dict(zip(header, values, strict=False))
        if len(values) > len(header):
            row[None] = values[len(header):]
        elif len(values) < len(header):
            for name in header[len(values):]:
                row[name] = None
        return row

    def cells(self, at: int) -> list[str]:
        """Row ``at`` as csv.reader read it (``KernelTraceTable(header, [cells], source).row(0)`` is ``row(at)``)."""
        return list(self._rows[at])

    def row(self, at: int) -> KernelTraceRow:
        found = self._converted.get(at)
        if found is None:
            found = self._converted[at] = _kernel_trace_row(self._as_dict(self._rows[at]), self._source)
        return found

    def resources(self, rows: list[int]) -> set[tuple]:
        """{(vgpr, accum, sgpr, lds, workgroup items)} of the given rows: one conversion per
        distinct combination of the cells they come from."""
        positions = [self._position.get(name, -1) for name in _RESOURCE_CELLS]
        table = self._rows
        try:  # an absent column is None in every row: the present ones tell the rows apart
            cells = itemgetter(*(p for p in positions if p >= 0))
            some = {cells(table[at]): at for at in rows}
        except (IndexError, TypeError):  # a row short of a cell (or no such column): None there
            some = {}
            for at in rows:
                values = table[at]
                count = len(values)  # None when the column is absent or the row short (as _column)
                some.setdefault(tuple(values[p] if 0 <= p < count else None for p in positions), at)
        found = (self.row(at) for at in some.values())
        return {(r.vgpr_count, r.accum_vgpr_count, r.sgpr_count, r.lds_bytes, r.workgroup_items) for r in found}

    def typical(self, rows: list[int]) -> int:
        """Of `rows`, the one of median duration (End − Start) among those launched like the
        first (the same grid, workgroup and resource cells); the first when fewer than three
        are alike. Read from the cells, converting only the row chosen."""
        names = (*_RESOURCE_CELLS, *_GRID_CELLS, "Start_Timestamp", "End_Timestamp")
        positions = [self._position.get(name, -1) for name in names]
        table = self._rows
        try:  # every row holds every cell: one C-level getter per row
            get = itemgetter(*(p if p >= 0 else 0 for p in positions))
            present = [p >= 0 for p in positions]
            cells = [tuple(c if keep else None for c, keep in zip(get(table[at]), present, strict=True))
                     for at in rows] if not all(present) else [get(table[at]) for at in rows]
        except IndexError:  # a short row: None for its missing cells
            cells = [tuple(table[at][p] if 0 <= p < len(table[at]) else None for p in positions)
                     for at in rows]
        shape = cells[0][:-2]
        alike = []
        for at, values in zip(rows, cells, strict=True):
            if values[:-2] != shape:
                continue
            begun, ended = _int(values[-2]), _int(values[-1])
            if begun is not None and ended is not None:
                alike.append((ended - begun, at))
        if len(alike) < 3:  # one or two launches: no typical one to tell from a cold one
            return rows[0]
        alike.sort()
        return alike[(len(alike) - 1) // 2][1]

    def __len__(self) -> int:
        return len(self._rows)

    def __iter__(self):
        return (self.row(at) for at in range(len(self._rows)))


def _parse_table(lines: list[str], path: Path) -> KernelTraceTable:
    """Every record of a kernel_trace CSV's lines, read as _read_rows reads every CSV (same errors,
    same skipped blank lines), with csv.reader."""
    what = "kernel_trace CSV"
    reader = csv.reader(lines)
    try:
        header = next(reader, None)  # DictReader.fieldnames: the first row, None for no row
        require_all(("Kernel_Name",), header or [], f"not a rocprofv3 {what}: missing column(s) {{missing}}",
                    str(path), f"pass the {what} written by rocprofv3 (-f csv)")
        rows = [values for values in reader if values]  # DictReader skips blank rows
    except csv.Error as err:
        raise InputError(f"malformed CSV: {err}", str(path), f"regenerate the {what}") from None
    return KernelTraceTable(header or [], rows, str(path))


def _text(path: Path) -> str:
    return read_regular(path, "kernel_trace CSV", CSV_LIMIT).decode("utf-8", errors="replace")


def read_kernel_trace_table(path: Path) -> KernelTraceTable:
    """The dispatch rows of a *kernel_trace.csv, converted on access (same rows as read_kernel_trace)."""
    return _parse_table(_text(path).splitlines(), path)


class KernelTraceFile:
    """One kernel_trace CSV, read and checked as read_kernel_trace_table reads it (the same errors,
    raised by read_kernel_trace_file), its rows parsed when asked: all of them, or those of the
    lines that can name a kernel.

    A discovery run's CSV holds ~10^4 rows, of which a lookup by name needs those naming the
    kernel; parsing every line cost more than the rest of a hotspot run. Only a file that
    csv.reader reads one record per line (kerneltrace.readers.csvlines) is read in part; any
    other is parsed whole when read.
    """

    __slots__ = ("_path", "_text", "_starts", "_header", "_table")

    def __init__(self, path: Path, text: str, starts: list[int], header: list[str],
                 table: KernelTraceTable | None) -> None:
        self._path, self._text, self._starts, self._header, self._table = path, text, starts, header, table

    def table(self) -> KernelTraceTable:
        """Every row (parsed once, when first asked)."""
        if self._table is None:
            self._table = _parse_table(self._text.splitlines(), self._path)
        return self._table

    def _rows_of(self, numbers: list[int]) -> KernelTraceTable:
        """The rows of some lines, the header's aside (each holds a needle: none is blank)."""
        text, starts = self._text, self._starts
        last = len(starts) - 1  # every line before the last ends one character before the next starts
        lines = [text[starts[number]:starts[number + 1] - 1] if number < last else line_at(text, starts, number)
                 for number in numbers if number]
        return KernelTraceTable(self._header, list(csv.reader(lines)), str(self._path))

    def naming(self, names: set[str]) -> KernelTraceTable:
        """The rows whose Kernel_Name is one of ``names``, and maybe others, in file order."""
        if self._table is not None:
            return self._table
        return self._rows_of(lines_holding(self._text, names) if names else [])

    def mentioning(self, needle: str) -> KernelTraceTable:
        """The rows whose Kernel_Name.lower() holds ``needle.lower()``, and maybe others, in file order."""
        if self._table is not None or not needle.isascii():
            return self.table()
        return self._rows_of(lines_holding(self._text, {needle.lower()}, lower=True))


def read_kernel_trace_file(path: Path) -> KernelTraceFile:
    """A *kernel_trace.csv checked as read_kernel_trace_table checks it, its rows parsed on demand."""
    text = _text(path)
    starts = line_starts(text)
    if starts is None:
        return KernelTraceFile(path, "", [], [], _parse_table(text.splitlines(), path))
    first = [line_at(text, starts, 0)] if starts else []
    header = _parse_table(first, path).header  # the first line alone is the first record
    return KernelTraceFile(path, text, starts, header, None)


def read_kernel_trace(path: Path) -> list[KernelTraceRow]:
    """All dispatch rows of a *kernel_trace.csv (ROCm 6.2 … 7.x headers, rocpd-convert Guid column)."""
    return list(read_kernel_trace_table(path))


def read_agent_info(path: Path) -> list[AgentInfo]:
    """All agents of an *agent_info.csv (CPU rows included; filter on agent_type)."""
    rows = _read_rows(Path(path), ("Agent_Type", "Name"), "agent_info CSV")
    return [
        AgentInfo(
            logical_node_id=_int(row.get("Logical_Node_Id")),
            agent_type=(row.get("Agent_Type") or "").strip().upper(),
            name=(row.get("Name") or "").strip(),
            gfx_target_version=_int(row.get("Gfx_Target_Version")),
            product_name=(row.get("Product_Name") or "").strip(),
            cu_count=_size(row.get("Cu_Count")),
            simd_per_cu=_size(row.get("Simd_Per_Cu")),
            max_waves_per_simd=_size(row.get("Max_Waves_Per_Simd")),
            wave_front_size=_size(row.get("Wave_Front_Size")),
            lds_size_kb=_size(row.get("Lds_Size_In_Kb")),
            max_engine_clock_mhz=_int(row.get("Max_Engine_Clk_Fcompute")),
            source=str(path),
        )
        for row in rows
    ]


def gpu_agents(agents: list[AgentInfo]) -> list[AgentInfo]:
    return [agent for agent in agents if agent.agent_type == "GPU"]
