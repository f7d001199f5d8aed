"""The plan's SVG bar charts: well-formed XML, escaped text, bars proportional, accent colour."""

from __future__ import annotations

import xml.etree.ElementTree as ET

from kerneltrace.render import charts

SVG = "{http://www.w3.org/2000/svg}"


def test_chart_is_well_formed_and_escapes_hostile_labels():
    labels = ["k.py:1 <script>alert(1)</script>", "nul\x00 and \ud800 surrogate & amp", "plain"]
    svg = charts.hbar_chart(labels, [0.5, 0.25, float("nan")], "T <b>", "x & y", highlight={1},
                            percent=True)
    root = ET.fromstring(svg.encode("utf-8"))  # raises on malformed XML or unencodable text
    texts = [node.text for node in root.iter(f"{SVG}text")]
    assert "k.py:1 <script>alert(1)</script>" in texts  # the label is shown, as text
    assert "<script>" not in svg and "<b>" not in svg
    assert any(t and t.startswith("nul\ufffd and \ufffd surrogate & amp") for t in texts)
    rects = list(root.iter(f"{SVG}rect"))
    widths = [float(r.get("width")) for r in rects]
    assert widths[0] == 2 * widths[1] and widths[2] == 0.0  # proportional; NaN draws nothing
    assert [r.get("fill") for r in rects] == [charts.COLOR, charts.HIGHLIGHT, charts.COLOR]
    assert "50.0%" in texts and "25.0%" in texts
    assert "href" not in svg and "http://" not in svg.replace('xmlns="http://www.w3.org/2000/svg"', "")


def test_empty_chart_is_empty_and_occupancy_marks_the_limiter():
    assert charts.hbar_chart([], [], "t", "x") == ""
    svg = charts.occupancy_chart({"limits": {"vgpr": 4, "lds": 8, "hardware": 8}, "limited_by": "VGPR"})
    fills = [r.get("fill") for r in ET.fromstring(svg).iter(f"{SVG}rect")]
    assert fills == [charts.HIGHLIGHT, charts.COLOR, charts.COLOR]
