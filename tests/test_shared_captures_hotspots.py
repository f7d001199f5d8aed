"""Every real dispatch dir in ../shared/captures: totals, arch certainty, empty/legacy/PC-sampling handling."""

from __future__ import annotations

import json

import pytest
from conftest import all_shared_dispatch_dirs

from kerneltrace.document.hotspot_report import analyze_dispatch
from kerneltrace.errors import InputError

pytestmark = pytest.mark.shared
DIRS = all_shared_dispatch_dirs()
EMPTY_LEGACY = "flash_fwd_splitkv_mla_kernel_v0_ui"
# Opcodes only gfx950 has (docs/rocprof-outputs.md §11); independent of the program's own tables.
GFX950_ONLY_PREFIXES = ("v_mfma_scale_f32", "v_mfma_f32_16x16x128", "v_mfma_f32_32x32x64",
                        "v_permlane16_swap", "v_permlane32_swap", "ds_read_b64_tr_b", "v_cvt_pk_bf16_f32",
                        "v_mfma_f32_32x32x16_bf16", "v_mfma_f32_16x16x32_bf16")


def _independent_totals(directory):
    """Sums straight from code.json, computed here without the package's reader."""
    document = json.loads((directory / "code.json").read_text())
    code = document["code"] or []
    if document.get("header") is None:       # legacy: [asm, type, pos, src, idx, line, hit, cycles]
        rows = [r for r in code if not r[0].startswith(";") and r[1] != 100]
        return {"instructions": len(rows), "hits": sum(r[6] for r in rows),
                "latency_cycles": sum(r[7] for r in rows), "stall_cycles": None, "idle_cycles": None}
    header = document["header"]
    names = [n.strip() for n in (header.split(",") if isinstance(header, str) else header)]
    col = {n: names.index(n) for n in ("ISA", "Hit", "Latency", "Stall", "Idle")}
    rows = [r for r in code if not r[col["ISA"]].startswith(";")]
    return {"instructions": len(rows), "hits": sum(r[col["Hit"]] for r in rows),
            "latency_cycles": sum(r[col["Latency"]] for r in rows),
            "stall_cycles": sum(r[col["Stall"]] for r in rows),
            "idle_cycles": sum(r[col["Idle"]] for r in rows)}


def _has_gfx950_only_opcode(directory):
    document = json.loads((directory / "code.json").read_text())
    return any(str(r[0]).strip().lower().startswith(GFX950_ONLY_PREFIXES) for r in document["code"] or [])


@pytest.mark.parametrize("directory", DIRS, ids=[d.name for d in DIRS])
def test_capture(captures, directory):
    if directory.name == EMPTY_LEGACY:
        with pytest.raises(InputError) as info:
            analyze_dispatch(directory)
        message = str(info.value)
        assert "empty trace" in message and "att_target_cu" in message and "kernel_include_regex" in message
        return
    doc = analyze_dispatch(directory)
    expected = _independent_totals(directory)
    for key, value in expected.items():
        assert doc["totals"][key] == value, key
    # ranking is consistent with the metric
    metric = {"stall_cycles": "stall_cycles", "pc_stalled": "pc_stalled", "latency_cycles": "latency_cycles"}[doc["ranked_by"]]
    values = [i[metric] or 0 for i in doc["instructions"]]
    assert values == sorted(values, reverse=True)
    assert len(doc["instructions"]) == expected["instructions"]
    shares = [t["share"] for t in doc["stall_by_type"] if t["share"] is not None]
    assert all(0 <= s <= 1 for s in shares) and abs(sum(shares) - 1) < 1e-9
    arch = doc["arch"]
    if _has_gfx950_only_opcode(directory):
        assert arch["name"] == "gfx950" and arch["certain"] is True
    elif arch["source"] not in ("agent_info", "--arch"):
        # no decisive opcode and no metadata: the analyzer must not claim gfx950 certainty
        assert arch["name"] != "gfx950" or not arch["certain"]
        if arch["name"] is None:
            assert arch["certain"] is False and len(arch["candidates"]) > 1
    json.dumps(doc)


def test_pcsampling_capture_ranked_by_stalled_samples(captures):
    (directory,) = [d for d in DIRS if d.name == "pcsampling"]
    doc = analyze_dispatch(directory)
    assert doc["format"] == "pcsampling" and doc["ranked_by"] == "pc_stalled"
    document = json.loads((directory / "code.json").read_text())
    best = max(r[11] for r in document["code"] if not r[0].startswith(";"))
    assert doc["instructions"][0]["pc_stalled"] == best
    total = sum(sum(r[12]) for r in document["code"])
    assert sum(r["samples"] for r in doc["pc_sampling"]["stall_reasons"]) == total


def test_unmapped_capture_warns_with_remedy(captures):
    (directory,) = [d for d in DIRS if d.name == "ui_output_agent_25171_dispatch_44"]
    doc = analyze_dispatch(directory)
    assert doc["source_mapping"]["mapped_fraction"] == 0.0
    assert "FLYDSL_DEBUG_ENABLE_DEBUG_INFO=1" in doc["source_mapping"]["hint"]
    assert doc["source_lines"][0]["artifact"] == "unmapped"


def test_flydsl_decorator_line_is_kernel_entry(captures):
    (directory,) = [d for d in DIRS if d.name == "ui_output_agent_10886_dispatch_209"]
    doc = analyze_dispatch(directory)
    top = doc["source_lines"][0]
    assert top["location"].endswith("pa_decode_fp8.py:1170") and top["artifact"] == "kernel-entry"
    source = (directory / "source_0_pa_decode_fp8.py").read_text().splitlines()
    assert source[1170 - 1].strip() == "@flyc.kernel"


def test_agent_info_gives_certain_arch(captures):
    (directory,) = [d for d in DIRS if d.name == "ui_output_agent_47920_dispatch_13"]
    agent_csv = directory.parents[2] / "compute_viewer" / "big_agent_info.csv"
    doc = analyze_dispatch(directory, agent_info_csv=agent_csv)
    assert doc["arch"] == {**doc["arch"], "name": "gfx950", "source": "agent_info", "certain": True}
