"""Source location helpers: every caller names the innermost frame of an inline chain."""

from __future__ import annotations

from kerneltrace.plan.findings import finding_id
from kerneltrace.sourceloc import innermost_location, short_location, split_location

CHAIN = "/src/ops/inner.py:42 -> /src/lib/helper.py:7 -> /src/kernels/kernel.py:3"


def test_short_location_names_the_innermost_frame_of_a_chain():
    assert short_location(CHAIN) == "inner.py:42"
    assert short_location(CHAIN) == short_location(innermost_location(CHAIN))
    assert split_location(CHAIN) == ("/src/ops/inner.py", 42)


def test_short_location_single_frames_and_edge_cases():
    assert short_location("/abs/path/file.py:123") == "file.py:123"
    assert short_location("C:/work/k.py:9") == "k.py:9"  # ':' inside the path
    assert short_location("/abs/file.py") == "file.py"  # no line number
    assert short_location("") == "unmapped"
    assert short_location(None) == "unmapped"


def test_finding_id_of_a_chain_matches_the_id_of_its_source_line():
    # hotspot source_lines hold the innermost frame; an id built from the raw instruction
    # source must name the same line
    assert finding_id("P1", CHAIN) == finding_id("P1", innermost_location(CHAIN)) == "P1@inner.py:42"
