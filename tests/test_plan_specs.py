"""Plan rules describe themselves (kerneltrace/plan/spec.py); the tables and docs are built from them."""

from __future__ import annotations

import ast
import dataclasses
from pathlib import Path

import pytest
from plan_synthetic import Ins, hotspot_doc

from kerneltrace.errors import InputError
from kerneltrace.plan import catalogue
from kerneltrace.plan.context import PlanContext
from kerneltrace.plan.findings import Finding
from kerneltrace.plan.gains import CONTRADICTS
from kerneltrace.plan.pipeline import POST_PASSES, run_all
from kerneltrace.plan.rules import (
    ALL_RULES,
    CALIBRATED_RULES,
    CONCERNS,
    DEFAULT_TABLE,
    KINDS,
    LEVERS,
    RULES,
    VERDICT_RULES,
    spec_for,
)
from kerneltrace.plan.spec import INPUTS, STAGES, VERDICT_KINDS, PlanRule
from kerneltrace.plan.spec import LEVERS as LEVER_NAMES
from kerneltrace.plan.summary import build_summary
from kerneltrace.thresholds import COMPARE_CONCERNS, TAGS, Table

ROOT = Path(__file__).resolve().parents[1]
TEXT_FIELDS = ("id", "title", "family", "trigger", "evidence", "gain_basis", "advice")


@pytest.mark.parametrize("rule", ALL_RULES, ids=lambda rule: rule.id)
def test_every_rule_spec_is_complete(rule: PlanRule):
    for name in TEXT_FIELDS:
        assert isinstance(getattr(rule, name), str) and getattr(rule, name).strip(), name
    assert rule.family == rule.apply.__module__.rsplit(".", 1)[1], "a rule lives in its family module"
    assert "hotspots" in rule.requires and rule.requires <= INPUTS and rule.optional <= INPUTS
    assert not rule.requires & rule.optional
    assert rule.thresholds and all(dataclasses.is_dataclass(kind) and kind.CONCERN in CONCERNS
                                   for kind in rule.thresholds)
    assert rule.stage in STAGES and callable(rule.apply)
    for kind in rule.kinds:
        assert kind.lever in LEVER_NAMES, f"{kind.id}: unknown lever {kind.lever!r}"
        assert set(kind.serves) <= VERDICT_KINDS, kind.id


def test_a_spec_without_a_field_cannot_be_built():
    fields = {f.name for f in dataclasses.fields(PlanRule) if f.default is dataclasses.MISSING}
    assert {"lever", "serves", "calibrated", "requires", "optional", "thresholds", "advice",
            "apply"} <= fields
    with pytest.raises(TypeError):
        PlanRule(id="X-rule", title="t", family="f", lever="none", serves=(), calibrated=False,
                 requires=frozenset({"hotspots"}), optional=frozenset(), thresholds=(),
                 trigger="t", evidence="e", gain_basis="g", apply=lambda ctx: [], order=1)


def test_ids_and_run_order_are_unique():
    ids = [kind.id for rule in ALL_RULES for kind in rule.kinds]
    assert len(ids) == len(set(ids))
    orders = [rule.order for rule in ALL_RULES]
    assert len(orders) == len(set(orders))
    assert [r.order for r in RULES] == sorted(r.order for r in RULES)


def test_tables_are_built_from_the_specs():
    assert set(LEVERS) == set(KINDS)
    assert LEVERS["S2-private-array-in-scratch"] == "register-pressure"  # was missing (silent "none")
    assert VERDICT_RULES["compute-mfma"] == {"W2-hot-loop-mfma-bound", "MFMA-dependency-chain",
                                             "PERSIST-per-tile-overhead"}
    assert VERDICT_RULES["tail"] == {"W3-wave-tail"}
    assert CALIBRATED_RULES == {"LINE-hotspot", "P1-loads-in-mfma-loop",
                                "P3-lds-read-before-mfma", "W1-entry-waits-on-loads",
                                "REGION-hotspot", "GLUE-line-loads", "WAIT-staircase"}
    # every lever a verdict rules out is one a rule can pull
    assert set().union(*CONTRADICTS.values()) <= LEVER_NAMES


def test_a_finding_without_a_spec_fails_loudly():
    with pytest.raises(KeyError, match="no PlanRule spec"):
        spec_for("X-unregistered")
    rogue = dataclasses.replace(
        RULES[0], id="X-rogue", order=-1,
        apply=lambda ctx: [Finding(id="X-made-up", rule="X-made-up", title="t", priority="MED",
                                   stall_share=0.5, estimated_gain=None, root_cause="r",
                                   fix="f", location="k.py:10")])
    ctx = PlanContext(hotspot_doc([Ins("s_waitcnt vmcnt(0)", "VMEM-wait", "k.py:10", 900, 1000)]))
    with pytest.raises(KeyError, match="X-made-up"):
        run_all(ctx, [rogue])


def test_generated_docs_and_schema_are_current():
    stale = [str(path.relative_to(ROOT)) for path, text in catalogue.generated_files().items()
             if path.read_text() != text]
    assert not stale, f"run `python -m kerneltrace.plan.catalogue`: stale {stale}"
    summary = (ROOT / "docs" / "summary-json.md").read_text()
    for kind in KINDS:
        assert f"`{kind}`" in summary


def test_post_passes_are_one_documented_ordered_pipeline():
    doc = (Path(catalogue.__file__).parent / "pipeline.py").read_text()
    names = [step.__name__ for step in POST_PASSES]
    assert len(names) == 13
    header = doc.split('"""')[1]
    positions = [header.find(f"`{name}`") for name in
                 ("fallback_lines", "sharpen_with_waves", "demote_artifact_lines", "never_empty",
                  "merge_duplicates", "check_dependencies", "bound_findings", "kernel_time", "order_and_name",
                  "overlap_groups",
                  "defer_to_verdict", "one_high_per_line", "order_and_group")]
    assert -1 not in positions and positions == sorted(positions)


# -- the thresholds table -------------------------------------------------------------------

def test_every_threshold_is_tagged_and_explained():
    for name, kind in CONCERNS.items():
        for f in dataclasses.fields(kind):
            assert f.metadata.get("tag") in TAGS, f"{name}.{f.name}"
            assert f.metadata.get("why"), f"{name}.{f.name}"
            if f.metadata["tag"] != "heuristic":
                assert "heuristic" not in f.metadata["source"], f"{name}.{f.name}"


def test_finding_bars_sit_below_their_verdict_bars():
    verdict = DEFAULT_TABLE.concerns["verdict"]
    assert DEFAULT_TABLE.concerns["kernel_wide"].barrier_min_share <= verdict.barrier_share
    assert DEFAULT_TABLE.concerns["waves"].tail_share <= verdict.tail_share
    assert DEFAULT_TABLE.concerns["hazards"].min_share <= verdict.nop_share


def test_summary_lists_every_threshold_and_overrides_apply():
    doc = hotspot_doc([Ins("s_barrier", "barrier", "k.py:10", 250, 260),
                       Ins("v_add_f32 v0, v1, v2", "VALU", "k.py:11", 750, 800)])
    plain = build_summary([doc], [])
    rows = {(r["concern"], r["name"]): r for r in plain["thresholds"]}
    listed = {**CONCERNS, **COMPARE_CONCERNS}  # the compare's and the gate's are listed too
    assert len(rows) == len(plain["thresholds"]) == sum(len(dataclasses.fields(kind))
                                                        for kind in listed.values())
    assert rows[("kernel_wide", "barrier_min_share")]["value"] == 0.2
    assert rows[("compare", "work_ratio")]["value"] == 1.5
    assert rows[("gate", "type_stall")]["value"] is None  # off by default
    assert rows[("l2", "frac32_scattered")]["tag"] == "heuristic"
    rules = {f["rule"] for f in plain["kernels"][0]["dispatches"][0]["findings"]}
    assert "BAR-dominated" in rules  # 25 % of stall on barriers ≥ 20 %
    raised = build_summary([doc], [], thresholds={"kernel_wide": {"barrier_min_share": 0.3}})
    rules = {f["rule"] for f in raised["kernels"][0]["dispatches"][0]["findings"]}
    assert "BAR-dominated" not in rules
    used = {(r["concern"], r["name"]): r["value"] for r in raised["thresholds"]}
    assert used[("kernel_wide", "barrier_min_share")] == 0.3
    # the compare's (plan.thresholds.compare) and the gate's (regression_thresholds: "5%", off)
    listed = build_summary([doc], [], thresholds={"compare": {"work_ratio": 2},
                                                  "gate": {"total_stall": "5%", "line_stall": "off"}})
    used = {(r["concern"], r["name"]): r["value"] for r in listed["thresholds"]}
    assert used[("compare", "work_ratio")] == 2.0
    assert used[("gate", "total_stall")] == pytest.approx(0.05) and used[("gate", "line_stall")] is None
    with pytest.raises(InputError, match="regression_thresholds"):
        build_summary([doc], [], thresholds={"gate": {"total_stall": "lots"}})


def test_summary_lists_the_structure_thresholds_the_documents_record():
    """The hotspot stage applies `structure`: summary.json lists what its documents recorded, and
    each value that differs between documents per dispatch; the plan's own override refuses it."""
    doc = hotspot_doc([Ins("v_add_f32 v0, v1, v2", "VALU", "k.py:11", 750, 800)])
    plain = {r["name"]: r for r in build_summary([doc], [])["thresholds"] if r["concern"] == "structure"}
    assert plain["min_chain"]["value"] == 3 and "by_dispatch" not in plain["min_chain"]
    other = {**doc, "dispatch_dir": "/d/other", "thresholds": {"structure": {"min_chain": 5}}}
    rows = {r["name"]: r for r in build_summary([other, doc], [])["thresholds"]
            if r["concern"] == "structure"}
    assert rows["min_chain"]["value"] == 5
    assert rows["min_chain"]["by_dispatch"] == {"/d/other": 5, str(doc["dispatch_dir"]): 3}
    assert "by_dispatch" not in rows["min_iterations"]
    with pytest.raises(InputError, match="hotspot_analyzer.py --thresholds"):
        build_summary([doc], [], thresholds={"structure": {"min_chain": 5}})
    with pytest.raises(InputError, match="structure.min_chain must be a whole number"):
        build_summary([{**doc, "thresholds": {"structure": {"min_chain": 2.5}}}], [])


def test_launch_bound_thresholds_are_overridable():
    """The hotspot stage judges `structure.launch` with the defaults; the plan judges it again with
    the `launch_bound` thresholds in use (40 workgroups on 256 CUs: 84 % of the CUs idle)."""
    doc = hotspot_doc([Ins("global_load_dwordx4 v[0:3], v1, s[0:1]", "VMEM-load", "k.py:10", 500, 600),
                       Ins("v_add_f32 v0, v1, v2", "VALU", "k.py:11", 100, 400)])
    doc["metadata"] = {"kernel_trace": {"grid_size": [10240, 1, 1], "workgroup_size": [256, 1, 1],
                                        "duration_ns": 9000},
                       "agent": {"cu_count": 256, "simd_per_cu": 4}}

    def launch_of(summary):
        dispatch = summary["kernels"][0]["dispatches"][0]
        return dispatch["launch"], {f["rule"] for f in dispatch["findings"]}

    launch, rules = launch_of(build_summary([doc], []))
    assert launch["launch_bound"] and "84% of the CUs get no work" in launch["reason"]
    assert "LAUNCH-under-filled-gpu" in rules
    launch, rules = launch_of(build_summary([doc], [], thresholds={"launch_bound": {"idle_cu_share": 0.9}}))
    assert not launch["launch_bound"] and launch["reason"] == ""
    assert "LAUNCH-under-filled-gpu" not in rules


@pytest.mark.parametrize("bad", [{"nope": {}}, {"verdict": {"nope": 1}}, {"verdict": {"tail_share": "x"}},
                                 {"patterns": {"p1_hideable": [0.1]}},
                                 {"patterns": {"burst_min_loads": 2.5}}])
def test_bad_overrides_are_input_errors(bad):
    with pytest.raises(InputError):
        DEFAULT_TABLE.override(bad)


def test_defaults_table_is_the_concerns():
    assert isinstance(DEFAULT_TABLE, Table)
    assert set(DEFAULT_TABLE.concerns) == set(CONCERNS)


SCANNED = ("kerneltrace/plan", "kerneltrace/analysis", "kerneltrace/compare",
           "kerneltrace/render/l2.py")
HELPERS = {"sourced", "calibrated", "heuristic"}
UNITS = {1e3, 1e6, 1e9, 1e12}  # unit conversions (GB → bytes, ns → µs), not judgements
ALLOWED = {  # non-judgement numbers, each with its reason
    ("kerneltrace/analysis/l2/metrics.py", 2.0),  # 2**53: the largest exact float count
    ("kerneltrace/analysis/waves/peers.py", 0.5),  # bucket centre (log histogram) and p50
    ("kerneltrace/analysis/waves/peers.py", 0.9),  # the p90 percentile the document reports
    ("kerneltrace/analysis/waves/states.py", 0.5),  # where np.percentile's lerp changes formula
    ("kerneltrace/compare/values.py", 1e30),  # MAX_MAGNITUDE: a bound on plausible values
    ("kerneltrace/compare/gate.py", 100.0),  # "5%" → 0.05: a percentage conversion
    # the table's structure.dominant_line_share, written on the text CLI's start-up path (no
    # dataclasses there); test_hotspot_literals_are_the_structure_defaults checks they agree
    ("kerneltrace/analysis/hotspots.py", 0.5),
}


def _float_literals(tree: ast.AST, inside: bool = False):
    if isinstance(tree, ast.Call) and getattr(tree.func, "id", None) in HELPERS:
        inside = True
    if (isinstance(tree, ast.Constant) and isinstance(tree.value, float)
            and tree.value not in (0.0, 1.0) and not inside):
        yield tree
    for child in ast.iter_child_nodes(tree):
        yield from _float_literals(child, inside)


def test_no_threshold_literal_outside_the_table():
    found = []
    for root in SCANNED:
        paths = [ROOT / root] if root.endswith(".py") else sorted((ROOT / root).rglob("*.py"))
        for path in paths:
            rel = str(path.relative_to(ROOT))
            for node in _float_literals(ast.parse(path.read_text())):
                if (rel, node.value) not in ALLOWED and node.value not in UNITS:
                    found.append(f"{rel}:{node.lineno}: {node.value}")
    assert not found, "threshold literals outside kerneltrace/thresholds.py concerns:\n" + "\n".join(found)


def test_hotspot_literals_are_the_structure_defaults():
    """hotspots.py writes two structure defaults as literals (the text CLI's start-up path imports
    no dataclasses); the compare's band default is the gate's time_noise."""
    from kerneltrace.analysis.hotspots import DOMINANT_LINE_SHARE, KERNEL_ENTRY_MIN_TYPES
    from kerneltrace.compare.estimate import NOISE_FLOOR
    from kerneltrace.compare.gate import DEFAULT_THRESHOLDS
    from kerneltrace.thresholds import DEFAULT_STRUCTURE

    rows = [row for row in DEFAULT_TABLE.describe() if row["concern"] == "structure"]
    assert rows and {row["name"] for row in rows} >= {"min_iterations", "untraced_factor"}
    with pytest.raises(InputError, match="hotspot_analyzer.py --thresholds"):
        DEFAULT_TABLE.override({"structure": {"min_iterations": 2.0}})
    assert DOMINANT_LINE_SHARE == DEFAULT_STRUCTURE.dominant_line_share
    assert KERNEL_ENTRY_MIN_TYPES == DEFAULT_STRUCTURE.kernel_entry_min_types
    assert NOISE_FLOOR == DEFAULT_THRESHOLDS.time_noise


def test_config_schema_validates_plan_thresholds():
    import jsonschema
    import yaml

    schema = yaml.safe_load((ROOT / "workflow" / "schemas" / "config.schema.yaml").read_text())
    plan = schema["properties"]["plan"]
    jsonschema.validate({"thresholds": {"verdict": {"tail_share": 0.5},
                                        "patterns": {"p1_hideable": [0.4, 0.8]},
                                        "structure": {"min_chain": 4},
                                        "compare": {"work_ratio": 2}}}, plan)
    for bad in ({"thresholds": {"verdict": {"tial_share": 0.5}}},
                {"thresholds": {"nope": {}}},
                {"thresholds": {"structure": {"min_chain": 2.5}}},
                {"thresholds": {"compare": {"noise_floor": 0.1}}},
                {"thresholds": {"gate": {"total_stall": 0.1}}},  # config regression_thresholds
                {"thresholds": {"patterns": {"p1_hideable": [0.4]}}},
                {"thresholds": {"verdict": {"tail_share": "half"}}}):
        with pytest.raises(jsonschema.ValidationError):
            jsonschema.validate(bad, plan)


def test_render_plan_takes_threshold_overrides(tmp_path):
    import json
    import subprocess
    import sys

    doc = hotspot_doc([Ins("s_barrier", "barrier", "k.py:10", 250, 260),
                       Ins("v_add_f32 v0, v1, v2", "VALU", "k.py:11", 750, 800)])
    doc["schema"] = "kerneltrace.hotspots/1"
    hot = tmp_path / "h.json"
    hot.write_text(json.dumps(doc))
    script = str(ROOT / "scripts" / "render_plan.py")
    run = subprocess.run([sys.executable, script, "--hotspots", str(hot), "--out-dir",
                          str(tmp_path / "out"), "--thresholds", "{not json"],
                         capture_output=True, text=True)
    assert run.returncode == 2 and "--thresholds is not JSON" in run.stderr
    assert "Traceback" not in run.stderr
    run = subprocess.run([sys.executable, script, "--hotspots", str(hot), "--out-dir",
                          str(tmp_path / "out"), "--thresholds", '{"verdict": {"nope": 1}}'],
                         capture_output=True, text=True)
    assert run.returncode == 2 and "plan.thresholds.verdict.nope" in run.stderr


def test_a_rule_without_its_documentation_does_not_import():
    from kerneltrace.plan.spec import plan_rule
    from kerneltrace.thresholds import GainThresholds

    def undocumented(ctx):
        """Finds something.

        Trigger: always
        Evidence: none
        Gain: none"""  # no Fix: section
        return []

    with pytest.raises(ValueError, match="Fix"):
        plan_rule(id="X-undocumented", lever="none", order=1, thresholds=(GainThresholds,))(undocumented)
