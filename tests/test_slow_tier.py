"""The slow-tier list names tests that exist (a renamed test would silently join the fast tier)."""

from __future__ import annotations

import re
from pathlib import Path

from tiers import SLOW_TESTS

REPO_ROOT = Path(__file__).resolve().parent.parent


def test_every_slow_tier_entry_names_a_test_function():
    missing = []
    for entry in sorted(SLOW_TESTS):
        file_name, test_name = entry.split("::")
        path = REPO_ROOT / "tests" / file_name
        text = path.read_text(encoding="utf-8") if path.is_file() else ""
        if not re.search(rf"^def {re.escape(test_name)}\(", text, re.M):
            missing.append(entry)
    assert not missing, f"SLOW_TESTS entries without a test: {missing}"

