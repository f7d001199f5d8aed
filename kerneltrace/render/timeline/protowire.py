"""Protobuf wire encoding of many TracePackets at once: numpy columns in, `Trace` bytes out.

Perfetto's protos give every field number and type (proto.FIELDS, checked against the
`perfetto` package's descriptors by a test); building one `TracePacket` object per slice costs ≈ 10 µs in Python, too slow for 10^5–10^6 slices, so the
per-slice packets are encoded here column-wise: each field becomes a (rows × bytes) matrix plus a
mask of the bytes present, matrices are stacked side by side and the masked bytes read out in
row order. The fixed packets (track descriptors, interned strings) are encoded field by field in
proto.py. Tests decode the result with the package's `Trace` message.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import numpy as np

# protobuf descriptor type -> wire type (varint 0, fixed64 1, length-delimited 2)
_WIRE_TYPES = {1: 1, 3: 0, 4: 0, 5: 0, 6: 1, 8: 0, 9: 2, 11: 2, 12: 2, 13: 0, 14: 0}


def tag(message: Any, name: str) -> bytes:
    """The encoded key (field number and wire type) of field `name` of a protobuf message class."""
    field = message.DESCRIPTOR.fields_by_name[name]
    return bytes(varint_bytes((field.number << 3) | _WIRE_TYPES[field.type]))


def varint_bytes(value: int) -> list[int]:
    out = []
    while True:
        low = value & 0x7F
        value >>= 7
        if value:
            out.append(low | 0x80)
        else:
            out.append(low)
            return out


@dataclass
class Part:
    """Encoded bytes of one field (or message) for every row, as leaves laid side by side: each
    leaf is `data` (rows × width, uint8) with the `mask` of the bytes kept, or, for bytes every
    row has, just those bytes (`rows` tells how many). Nesting only adds leaves (key, length) and
    sums lengths, so bytes are copied once, by `to_matrix`; adjacent constant leaves merge."""

    leaves: list  # (data, mask) pairs or bytes (the same on every row)
    lengths: np.ndarray  # bytes kept per row
    rows: int


def _join(parts: list[Part]) -> list:
    leaves: list = []
    for part in parts:
        for leaf in part.leaves:
            if isinstance(leaf, bytes) and leaves and isinstance(leaves[-1], bytes):
                leaves[-1] += leaf
            else:
                leaves.append(leaf)
    return leaves


def _leaf(data: np.ndarray, mask: np.ndarray, lengths: np.ndarray,
          present: np.ndarray | None) -> Part:
    if present is not None:
        mask &= present[:, None]
        lengths = lengths * present
    return Part([(data, mask)], lengths, len(data))


def const(data: bytes, rows: int, present: np.ndarray | None = None) -> Part:
    """The same bytes on every row (where `present`)."""
    import numpy as np

    if present is None:
        return Part([bytes(data)], np.full(rows, len(data)), rows)
    matrix = np.broadcast_to(np.frombuffer(data, np.uint8), (rows, len(data)))
    return _leaf(matrix, np.ones((rows, len(data)), bool), np.full(rows, len(data)), present)


def varint(values: np.ndarray, present: np.ndarray | None = None) -> Part:
    """Base-128 varints of non-negative integers (uint64 semantics)."""
    import numpy as np

    values = np.asarray(values).astype(np.uint64)
    rows = len(values)
    top = int(values.max()) if rows else 0
    width = max(1, (top.bit_length() + 6) // 7)
    nbytes = np.ones(rows, np.int64)
    # built byte k by byte k, each a contiguous row of a (width, rows) array; the caller gets its
    # transpose (to_matrix copies the leaves side by side anyway)
    data = np.empty((width, rows), np.uint8)
    for k in range(width):
        np.bitwise_and(values >> np.uint64(7 * k), np.uint64(0x7F), out=data[k], casting="unsafe")
        if k < width - 1:
            more = values >= np.uint64(1 << (7 * (k + 1)))  # a byte k + 1 follows
            nbytes += more
            data[k] |= more.view(np.uint8) << np.uint8(7)
    mask = np.arange(width)[None, :] < nbytes[:, None]
    return _leaf(data.T, mask, nbytes, present)


def fixed64(values: np.ndarray, present: np.ndarray | None = None, double: bool = False) -> Part:
    """Little-endian 8-byte values (fixed64, or double when `double`)."""
    import numpy as np

    kind = "<f8" if double else "<u8"
    data = np.ascontiguousarray(np.asarray(values).astype(kind)).view(np.uint8).reshape(-1, 8)
    return _leaf(data, np.ones(data.shape, bool), np.full(len(data), 8), present)


def field(key: bytes, value: Part) -> Part:
    """`key` followed by `value` on the rows where `value` has bytes."""
    optional = not all(isinstance(leaf, bytes) for leaf in value.leaves) and bool(
        (value.lengths == 0).any())
    head = const(key, value.rows, value.lengths > 0 if optional else None)
    return Part(_join([head, value]), head.lengths + value.lengths, value.rows)


def message(key: bytes, parts: list[Part], present: np.ndarray | None = None) -> Part:
    """A length-delimited sub-message made of `parts` (absent where `present` is False)."""
    import numpy as np

    rows = parts[0].rows
    leaves = _join(parts)
    length = sum(part.lengths for part in parts)
    if present is not None:
        leaves = [(np.broadcast_to(np.frombuffer(leaf, np.uint8), (rows, len(leaf))),
                   np.repeat(present[:, None], len(leaf), axis=1)) if isinstance(leaf, bytes)
                  else (leaf[0], leaf[1] & present[:, None]) for leaf in leaves]
        length = length * present
    head = const(key, rows, present)
    size = varint(length, present)
    return Part(_join([head, size]) + leaves, head.lengths + size.lengths + length, rows)


def to_matrix(part: Part) -> tuple[np.ndarray, np.ndarray]:
    """(rows × width bytes, mask of the kept ones): the leaves side by side."""
    import numpy as np

    data, mask = [], []
    for leaf in part.leaves:
        if isinstance(leaf, bytes):
            data.append(np.broadcast_to(np.frombuffer(leaf, np.uint8), (part.rows, len(leaf))))
            mask.append(np.ones((part.rows, len(leaf)), bool))
        else:
            data.append(leaf[0])
            mask.append(leaf[1])
    return np.hstack(data), np.hstack(mask)


def to_bytes(part: Part) -> bytes:
    """The kept bytes of every row, rows in order."""
    data, mask = to_matrix(part)
    return data[mask].tobytes()
