"""The script elements an HTML output may hold: only plan.html's own explorer data and script."""

from __future__ import annotations

import json
import re


def page_scripts_only(text: str) -> int:
    """Assert that the only script elements of an HTML output are the page's own: JSON data blocks
    (valid JSON without a raw `<`) and the explorer script exactly as the package ships it.
    Returns how many there are."""
    from kerneltrace.render.templates import TEMPLATE_DIR

    source = (TEMPLATE_DIR / "plan_explorer.js.j2").read_text(encoding="utf-8")
    ours = source.split("{% raw %}", 1)[1].split("{% endraw %}", 1)[0].strip()
    found = re.findall(r"<script([^>]*)>(.*?)</script>", text, re.IGNORECASE | re.DOTALL)
    assert len(found) == len(re.findall(r"<script[\s>]", text, re.IGNORECASE))
    for attributes, body in found:
        if re.fullmatch(r' type="application/json" id="k\d+d\d+-data"', attributes):
            json.loads(body)
            assert "<" not in body
        else:
            assert attributes == "" and body.strip() == ours
    return len(found)
