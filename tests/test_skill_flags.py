"""SKILL.md gives an agent the plan the pipeline gives: its hotspot command names every flag the
pipeline's `hotspots` rule may pass (workflow/rules/analysis_inputs.smk, hotspot_args)."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_skill_names_every_pipeline_hotspot_flag():
    smk = (ROOT / "workflow/rules/analysis_inputs.smk").read_text(encoding="utf-8")
    body = smk[smk.index("def hotspot_args"):]
    body = body[: body.index("\ndef ", 1)] if "\ndef " in body[1:] else body
    flags = set(re.findall(r'"(--[a-z][a-z-]*)"', body))
    assert "--waves" in flags
    skill = (ROOT / "SKILL.md").read_text(encoding="utf-8")
    command = next(line for line in skill.splitlines() if line.startswith("python scripts/hotspot_analyzer.py"))
    assert "--waves" in command
    assert all(flag in skill for flag in flags), flags - {f for f in flags if f in skill}
