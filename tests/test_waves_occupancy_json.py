"""occupancy.json: the pysimdjson fast path gives exactly the json.loads path's summary, or defers."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kerneltrace.analysis.waves import occupancy

pytest.importorskip("simdjson")

ROWS = [[100 + 4 * i, i % 2, i % 4, 0, 1 if i % 3 else 0, 1] for i in range(40)]
DOCUMENTS = {
    "regular": json.dumps({"0": ROWS, "1": ROWS[:9]}),
    "pretty, wider rows": json.dumps({"0": [row + [7] for row in ROWS]}, indent=2),
    "empty SE": json.dumps({"0": [], "1": ROWS}),
    "negative value": json.dumps({"0": ROWS[:-1] + [[-5, 1, 0, 0, 1, 1]]}),
    "ragged rows": json.dumps({"0": ROWS[:-1] + [[1, 1, 0, 0, 1]]}),
    "short rows": json.dumps({"0": [row[:5] for row in ROWS]}),
    "packed legacy": json.dumps({"0": [1, 2, 3]}),
    "non-digit key": json.dumps({"0": ROWS, "dispatch": 3}),
    "rocprofv3 dispatches and version": json.dumps(
        {"0": ROWS, "1": ROWS[:9], "dispatches": {"0": "0 / 0x0", "1": "kernel_1"},
         "version": "3.0.0"}),
    "only other keys": json.dumps({"dispatches": {"1": "k"}, "version": "3.0.0"}),
    "SE after another key": json.dumps({"0": ROWS, "version": "3.0.0", "1": ROWS[:9]}),
    "nested under another key": json.dumps({"0": ROWS, "dispatches": {"1": [ROWS[0]]}}),
    "other key first": json.dumps({"version": "3.0.0", "0": ROWS}),
    "duplicate key": f'{{"0": {json.dumps(ROWS)}, "0": {json.dumps(ROWS[:5])}}}',
    "boolean": json.dumps({"0": ROWS[:-1] + [[1, True, 0, 0, 1, 1]]}),
    "beyond int64": json.dumps({"0": ROWS[:-1] + [[2**64, 1, 0, 0, 1, 1]]}),
    "invalid": '{"0": [[1,2,3,4,5,6]',
    "empty object": "{}",
}


@pytest.mark.parametrize("name", sorted(DOCUMENTS))
def test_fast_path_matches_json_loads(name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "occupancy.json").write_text(DOCUMENTS[name])
    traced = {0: 1, 1: 0}
    fast = occupancy.occupancy_summary(tmp_path, traced)
    with monkeypatch.context() as patch:
        patch.setattr(occupancy, "_simd_document", lambda path: None)
        slow = occupancy.occupancy_summary(tmp_path, traced)
    assert fast == slow
    certified = occupancy._simd_document(tmp_path / "occupancy.json") is not None
    assert certified == (name in ("regular", "pretty, wider rows", "empty object", "non-digit key",
                                  "rocprofv3 dispatches and version", "only other keys")), name


def test_fast_path_used_on_regular_rows(tmp_path: Path) -> None:
    (tmp_path / "occupancy.json").write_text(DOCUMENTS["regular"])
    summary = occupancy.occupancy_summary(tmp_path, {0: 1})
    assert summary["available"] is True and summary["per_se"][0]["cu"] == 1
