"""code.json reader: every decoded-ATT variant (v3 10/14 col, PC sampling 13 col, legacy 8 col, empty)."""

from __future__ import annotations

from enum import StrEnum
from pathlib import Path

from kerneltrace.errors import InputError
from kerneltrace.readers.jsonfile import DECODER_FIX, load_json_file
from kerneltrace.records import field, record


class CodeFormat(StrEnum):
    """The code.json formats (decided from the structure, never from `version`); members are
    the strings the documents carry ("v3", …), so they compare and serialise as those."""

    V3 = "v3"  # rocprofv3 ATT decode: header, Stall/Idle columns
    PCSAMPLING = "pcsampling"  # PC-sampling code.json: pc_issued / pc_stalled columns
    LEGACY = "legacy"  # rocprofv2: 8 columns, no header, no stall
    EMPTY = "empty"  # no executed instruction

# rocprofiler-sdk's rocprofiler_pc_sampling_instruction_not_issued_reason_t, in enum order; the
# Stall_Reasons list of a PC-sampling code.json holds one sample count per reason in this order.
# Full names are ROCPROFILER_PC_SAMPLING_INSTRUCTION_NOT_ISSUED_REASON_<name>.
PC_SAMPLING_REASONS: tuple[str, ...] = (
    "NONE",
    "NO_INSTRUCTION_AVAILABLE",
    "ALU_DEPENDENCY",
    "WAITCNT",
    "INTERNAL_INSTRUCTION",
    "BARRIER_WAIT",
    "ARBITER_NOT_WIN",
    "ARBITER_WIN_EX_STALL",
    "OTHER_WAIT",
    "SLEEP_WAIT",
)

# Legacy rocprofv2 rows have no header; this is the documented positional layout.
LEGACY_COLUMNS = ("ISA", "inst_type", "pos", "Source", "idx", "line_num", "Hit", "Latency")
LEGACY_COMMENT_TYPE = 100
LEGACY_BANNER = "Begin ATT ASM"
# The documented v3 layout, used only when a 10-column file lacks a header.
V3_COLUMNS = ("ISA", "_", "LineNumber", "Source", "Codeobj", "Vaddr", "Hit", "Latency", "Stall", "Idle")

# Header spellings differ between writers (code.cpp writes CodeObj, docs say Codeobj).
_ALIASES = {
    "isa": "ISA",
    "linenumber": "LineNumber",
    "source": "Source",
    "codeobj": "Codeobj",
    "vaddr": "Vaddr",
    "hit": "Hit",
    "hitcount": "Hit",
    "latency": "Latency",
    "stall": "Stall",
    "idle": "Idle",
    "pc_issued": "PC_Issued",
    "pc_stalled": "PC_Stalled",
    "stall_reasons": "Stall_Reasons",
}

# Columns that are sums of per-wave counts or cycles: never negative, and Stall <= Latency per row
# (docs/rocprof-outputs.md §8.9/§8.10). Codeobj/Vaddr are identifiers, not counts.
COUNT_COLUMNS = frozenset({"Hit", "Latency", "Stall", "Idle", "PC_Issued", "PC_Stalled"})
# The decoder writes 64-bit integers: counts are signed (at most 2^63 - 1), Codeobj/Vaddr
# unsigned (at most 2^64 - 1). Anything larger was not written by it (and a 400-digit count
# would overflow every float the analyses and renderers compute from it).
COUNT_MAX = (1 << 63) - 1
IDENTIFIER_MAX = (1 << 64) - 1
# A code.json lists one code object's instructions: the largest real ones are a few MiB
# (≈ 200 bytes per row). The limit refuses a runaway or sparse file before it is read whole.
CODE_JSON_LIMIT = 512 << 20
INCONSISTENT_FIX = (
    "the decoder never writes this (counts are sums over waves, latency includes stall): the file was "
    "edited or written by another tool; re-decode the .att capture with rocprofv3"
)

EMPTY_TRACE_FIX = (
    "no wave ran on the traced CU: re-capture with another att_target_cu, more waves "
    "(a bigger grid/problem size), a wider att_shader_engine_mask (e.g. 0xf), and check that "
    "kernel_include_regex matches the kernel you meant"
)


@record(frozen=True)
class KernelLabel:
    """A `; <symbol>` label row: one kernel present in the code object listing."""

    symbol: str          # text after ';' (mangled or plain symbol)
    demangled: str       # the row's Source (demangled name) or ""
    row_index: int       # position of the label row in code[]

    @property
    def name(self) -> str:
        return self.demangled or self.symbol


@record(frozen=True, slots=True)
class CodeRow:
    """One instruction row (label/comment rows are not CodeRows)."""

    index: int
    asm: str
    source: str
    codeobj: int | None
    vaddr: int | None
    hits: int
    latency: int
    stall: int | None
    idle: int | None
    pc_issued: int | None = None
    pc_stalled: int | None = None
    stall_reasons: dict[str, int] | None = None
    kernel: str | None = None    # symbol of the label row this instruction belongs to


@record
class CodeTable:
    """A parsed code.json."""

    format: str                  # a CodeFormat
    rows: list[CodeRow]
    kernels: list[KernelLabel]
    header: list[str]
    path: Path
    warnings: list[str] = field(default_factory=list)

    def rows_of(self, symbol: str | None) -> list[CodeRow]:
        return [row for row in self.rows if row.kernel == symbol]


def _bad(path: Path, what: str, fix: str = DECODER_FIX) -> InputError:
    return InputError(what, str(path), fix)


def _column_map(path: Path, header: list[str]) -> dict[str, int]:
    positions: dict[str, int] = {}
    for position, name in enumerate(header):
        canonical = _ALIASES.get(name.strip().lower())
        if canonical and canonical not in positions:
            positions[canonical] = position
    missing = [name for name in ("ISA", "Source", "Hit", "Latency") if name not in positions]
    if missing:
        raise _bad(path, f"code.json header lacks column(s) {', '.join(missing)} (header: {', '.join(header)})")
    return positions


def _negative(path: Path, row_index: int, column: str, value: int) -> InputError:
    return _bad(path, f"row {row_index}: column {column} is {value}, a count cannot be negative", INCONSISTENT_FIX)


def _too_big(path: Path, row_index: int, column: str, value: int, limit: int) -> InputError:
    shown = str(value) if value.bit_length() <= 128 else f"a number of about 2^{value.bit_length()}"
    return _bad(path, f"row {row_index}: column {column} is {shown}, above the decoder's 64-bit "
                f"range (at most {limit})", INCONSISTENT_FIX)


def _as_int(path: Path, value: object, row_index: int, column: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise _bad(path, f"row {row_index}: column {column} is {value!r}, expected an integer")
    if isinstance(value, float):
        if value - value != 0 or value != int(value):  # NaN, ±inf (inf - inf is NaN) or a fraction
            raise _bad(path, f"row {row_index}: column {column} is {value!r}, expected an integer")
        return int(value)
    return value


def _reasons(path: Path, value: object, row_index: int) -> dict[str, int]:
    if not isinstance(value, list):
        raise _bad(path, f"row {row_index}: Stall_Reasons is {type(value).__name__}, expected a list of counts")
    reasons: dict[str, int] = {}
    for position, count in enumerate(value):
        name = PC_SAMPLING_REASONS[position] if position < len(PC_SAMPLING_REASONS) else f"REASON_{position}"
        reasons[name] = _as_int(path, count, row_index, "Stall_Reasons")
        if reasons[name] < 0:
            raise _negative(path, row_index, "Stall_Reasons", reasons[name])
        if reasons[name] > COUNT_MAX:
            raise _too_big(path, row_index, "Stall_Reasons", reasons[name], COUNT_MAX)
    return reasons


def _header(path: Path, document: dict, width: int) -> tuple[str, list[str]]:
    """Decide the format from the structure (never from `version`)."""
    header = document.get("header")
    if isinstance(header, str):
        names = [name.strip() for name in header.split(",")]
    elif isinstance(header, list) and all(isinstance(name, str) for name in header):
        names = [name.strip() for name in header]
    elif header is None:
        if width == len(LEGACY_COLUMNS):
            return CodeFormat.LEGACY, list(LEGACY_COLUMNS)
        if width == len(V3_COLUMNS):
            return CodeFormat.V3, list(V3_COLUMNS)
        raise _bad(path, f"code.json has no header and {width}-column rows (expected 8 legacy or 10 v3 columns)")
    else:
        raise _bad(path, f"code.json header is a {type(header).__name__}, expected a string or a list of names")
    lowered = {name.lower() for name in names}
    kind = CodeFormat.PCSAMPLING if {"pc_issued", "pc_stalled"} <= lowered else CodeFormat.V3
    return kind, names


def parse_code_document(document: object, path: Path) -> CodeTable:
    """Turn a loaded code.json document into a CodeTable (pure; raises InputError)."""
    path = Path(path)
    if not isinstance(document, dict) or "code" not in document:
        raise _bad(path, "not a decoded ATT code.json (no top-level \"code\" key)")
    code = document["code"]
    if code is None or code == []:
        return CodeTable(CodeFormat.EMPTY, [], [], [], path)
    if not isinstance(code, list) or not all(isinstance(row, list) for row in code):
        raise _bad(path, "\"code\" must be a list of rows (lists)")
    width = len(code[0])
    kind, header = _header(path, document, width)
    legacy = kind == CodeFormat.LEGACY
    positions = _column_map(path, header)
    if legacy:
        positions = {"ISA": 0, "Source": 3, "Hit": 6, "Latency": 7}
    isa_at, source_at = positions["ISA"], positions["Source"]
    hit_at, latency_at = positions["Hit"], positions["Latency"]
    reasons_at = positions.get("Stall_Reasons")

    # (column, position) of the optional integer columns, in CodeRow order; absent -> None
    optional_columns = [
        (column, positions.get(column)) for column in ("Codeobj", "Vaddr", "Stall", "Idle", "PC_Issued", "PC_Stalled")
    ]
    # the v3 layout (Codeobj, Vaddr, Stall, Idle present, no PC columns): one tuple read per row
    # and one all-plain-ints-in-range test; anything else takes the column-by-column checks
    v3_at = [position for _column, position in optional_columns[:4]]
    v3_fast = (None not in v3_at and reasons_at is None
               and all(position is None for _column, position in optional_columns[4:]))
    codeobj_at, vaddr_at, stall_at, idle_at = v3_at
    rows: list[CodeRow] = []
    kernels: list[KernelLabel] = []
    stall_over_latency: list[int] = []
    current: str | None = None
    expected = len(header)
    for index, row in enumerate(code):
        if len(row) != expected:
            raise _bad(path, f"row {index} has {len(row)} columns, expected {expected} like the header ({kind} format)")
        asm = row[isa_at]
        if not isinstance(asm, str):
            raise _bad(path, f"row {index}: ISA is {asm!r}, expected text")
        source = row[source_at]
        if source is None:
            source = ""
        if not isinstance(source, str):
            raise _bad(path, f"row {index}: Source is {source!r}, expected text")
        is_comment = asm.lstrip().startswith(";") or (legacy and row[1] == LEGACY_COMMENT_TYPE)
        if is_comment:
            text = asm.lstrip().lstrip(";").strip()
            if legacy and text == LEGACY_BANNER:
                continue
            current = text
            kernels.append(KernelLabel(text, source.strip(), index))
            continue
        hits, latency = row[hit_at], row[latency_at]
        # fast path: plain ints (bool is an int subclass, hence the exact type test)
        if type(hits) is not int:
            hits = _as_int(path, hits, index, "Hit")
        if type(latency) is not int:
            latency = _as_int(path, latency, index, "Latency")
        if hits < 0 or latency < 0:
            raise _negative(path, index, "Hit" if hits < 0 else "Latency", min(hits, latency))
        if hits > COUNT_MAX or latency > COUNT_MAX:
            column, value = ("Hit", hits) if hits > COUNT_MAX else ("Latency", latency)
            raise _too_big(path, index, column, value, COUNT_MAX)
        if legacy:
            rows.append(CodeRow(index, asm, source, None, None, hits, latency, None, None, kernel=current))
            continue
        if v3_fast:
            codeobj, vaddr, stall, idle = row[codeobj_at], row[vaddr_at], row[stall_at], row[idle_at]
            if (type(codeobj) is int and type(vaddr) is int and type(stall) is int and type(idle) is int
                    and 0 <= stall <= COUNT_MAX and 0 <= idle <= COUNT_MAX
                    and codeobj <= IDENTIFIER_MAX and vaddr <= IDENTIFIER_MAX):
                if stall > latency:
                    stall_over_latency.append(index)
                rows.append(CodeRow(index, asm, source, codeobj, vaddr, hits, latency, stall, idle,
                                    None, None, None, current))
                continue
        optional = []
        for column, position in optional_columns:
            if position is None:
                optional.append(None)
                continue
            value = row[position]
            if type(value) is not int:
                value = _as_int(path, value, index, column)
            if column in COUNT_COLUMNS:
                if value < 0:
                    raise _negative(path, index, column, value)
                if value > COUNT_MAX:
                    raise _too_big(path, index, column, value, COUNT_MAX)
            elif value > IDENTIFIER_MAX:
                raise _too_big(path, index, column, value, IDENTIFIER_MAX)
            optional.append(value)
        codeobj, vaddr, stall, idle, pc_issued, pc_stalled = optional
        if stall is not None and stall > latency:
            # Not refused: RDNA3/4 decoders <= 0.1.4 over-report stall by 4 cycles
            # (docs/rocprof-outputs.md §9); keep the data, warn, and let rates cap at 1.
            stall_over_latency.append(index)
        rows.append(
            CodeRow(
                index,
                asm,
                source,
                codeobj,
                vaddr,
                hits,
                latency,
                stall,
                idle,
                pc_issued,
                pc_stalled,
                _reasons(path, row[reasons_at], index) if reasons_at is not None else None,
                current,
            )
        )
    table = CodeTable(kind if rows else CodeFormat.EMPTY, rows, kernels, header, path)
    if stall_over_latency:
        table.warnings.append(
            f"{path}: {len(stall_over_latency)} row(s) have Stall > Latency (first: row {stall_over_latency[0]}); "
            "latency includes the stall, so the decoder over-reported stall (known for RDNA3/4 decoders "
            "<= 0.1.4, by 4 cycles) or the file was edited: stall rates are capped at 100%"
        )
    if header is not None and document.get("header") is None and kind == CodeFormat.V3:
        table.warnings.append(f"{path}: no header; columns taken from the documented 10-column v3 layout")
    return table


def read_code_json(path: Path) -> CodeTable:
    """Read and parse a code.json; raises InputError with file, problem and fix."""
    path = Path(path)
    return parse_code_document(load_json_file(path, "code.json", CODE_JSON_LIMIT), path)
