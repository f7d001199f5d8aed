#!/usr/bin/env python3
"""Calibration benchmark: estimated vs measured kernel-time change on re-timed before/after pairs.

For every pair of ``tests/calibration_pairs.py PAIRS`` (../shared/calibration, speed measured by
the pair's authors) and every A/A re-capture of ``AA_PAIRS`` (../shared/captures, no change):
the estimated time change of ``compare`` (value, band, basis), the measured change, and whether
the verdict was right. Baselines measured in the same run: the change of code.json latency per
traced wave, of the time on the traced CU per wave (wave-file span / waves), and the verdict of
the stall checks alone (the verdict before the time estimate existed). Then, per pair, the
before-plan's verdict and the gain of the finding the change addressed vs the measured change.

A verdict is right when it says improved for a measured change ≤ −5 %, regressed for ≥ +5 %,
and neutral for smaller changes (below the ±7 % noise floor the traces resolve) and A/A pairs.
Usage: python bench/bench_calibration.py [--calibration DIR] [--captures DIR]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))  # the calibration pairs (tests/calibration_pairs.py)
SHARED = ROOT.parent / "shared"
SIGNIFICANT = 0.05


def expected_verdict(measured: float | None) -> str:
    if measured is None or abs(measured) < SIGNIFICANT:
        return "neutral"
    return "improved" if measured < 0 else "regressed"


def per_wave(doc: dict, what: str) -> float | None:
    waves = doc.get("waves") or {}
    count = waves.get("waves") or 0
    if not count:
        return None
    if what == "span":
        return (waves.get("timing") or {}).get("span_cycles", 0) / count
    return (doc.get("totals") or {}).get("latency_cycles", 0) / count


def change(before: float | None, after: float | None) -> float | None:
    return after / before - 1 if before and after is not None else None


def pct(value: float | None) -> str:
    return "—" if value is None else f"{value:+.1%}"


def compare_row(name: str, before: dict, after: dict, measured: float | None) -> dict:
    from kerneltrace.compare.document import compare
    from kerneltrace.compare.gate import verdict_of

    result = compare(before, after)
    estimate = result["estimated_time_change"]
    stall_verdict, _ = verdict_of(result["checks"])
    expected = expected_verdict(measured)
    return {
        "name": name, "measured": measured, "estimate": estimate, "verdict": result["verdict"],
        "expected": expected, "right": result["verdict"] == expected,
        "direction": (None if measured is None or abs(measured) < SIGNIFICANT
                      else (estimate["value"] < 0) == (measured < 0)),
        "latency": change(per_wave(before, "latency"), per_wave(after, "latency")),
        "span": change(per_wave(before, "span"), per_wave(after, "span")),
        "stall_verdict": stall_verdict, "stall_right": stall_verdict == expected,
    }


def plan_row(pair, before: dict, measured: float) -> dict:
    from kerneltrace.plan.summary import build_summary

    dispatch = build_summary([before], [])["kernels"][0]["dispatches"][0]
    findings = [f for f in dispatch["findings"] if f.get("ranked", True)]
    addressed = None
    if pair.addressed:
        addressed = next((f for f in findings if (f.get("location") or "").endswith(
            pair.addressed)), None)
    gain = (addressed or {}).get("estimated_gain")
    covered = None
    if gain:
        covered = gain["low"] - 1e-9 <= -measured <= gain["high"] + 1e-9
    return {"verdict": (dispatch.get("bottleneck") or {}).get("kind"), "top": findings[:3],
            "addressed": addressed, "gain": gain, "covered": covered}


def gain_text(gain: dict | None) -> str:
    if not gain:
        return "—"
    unit = "kernel time" if gain.get("unit") == "kernel_time" else "stall"
    return f"{gain['low']:.1%}–{gain['high']:.1%} of {unit}"


def short(finding: dict) -> str:
    where = (finding.get("location") or "").rsplit("/", 1)[-1]
    return f"{finding['rule']} {where} ({gain_text(finding.get('estimated_gain'))})"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--calibration", type=Path, default=SHARED / "calibration")
    parser.add_argument("--captures", type=Path, default=SHARED / "captures")
    args = parser.parse_args(argv)
    if not args.calibration.is_dir():
        print(f"error: {args.calibration} not found (the shared calibration captures)",
              file=sys.stderr)
        return 2
    from calibration_pairs import AA_PAIRS, PAIRS, dispatch_dir

    from kerneltrace.compare.inputs import load_side

    started = time.process_time()
    rows, plans = [], []
    for pair in PAIRS:
        before = load_side(dispatch_dir(args.calibration, pair.before)).single
        after = load_side(dispatch_dir(args.calibration, pair.after)).single
        rows.append(compare_row(pair.name, before, after, pair.measured_time_change))
        plans.append((pair, plan_row(pair, before, pair.measured_time_change)))
    if args.captures.is_dir():
        for b, a in AA_PAIRS:
            name = ("A/A " + b.rsplit("/", 2)[-2] + " " + b.split("agent_")[1].split("_")[0]
                    + "→" + a.split("agent_")[1].split("_")[0])
            rows.append(compare_row(name, load_side(args.captures / b).single,
                                    load_side(args.captures / a).single, 0.0))
    cpu = time.process_time() - started

    print("| pair | measured | estimated (band) | basis | verdict | right | latency/wave | "
          "CU time/wave | stall-check verdict |")
    print("|---|---:|---|---|---|---|---:|---:|---|")
    for r in rows:
        e = r["estimate"]
        print(f"| {r['name']} | {pct(r['measured'])} | {pct(e['value'])} ({pct(e['low'])} … "
              f"{pct(e['high'])}) | {e['basis']} | {r['verdict']} | "
              f"{'yes' if r['right'] else 'NO'} | {pct(r['latency'])} | {pct(r['span'])} | "
              f"{r['stall_verdict']} ({'yes' if r['stall_right'] else 'no'}) |")
    timed = [r for r in rows if not r["name"].startswith("A/A")]

    def mae(key):
        errors = [abs((r["estimate"]["value"] if key == "estimate" else r[key]) - r["measured"])
                  for r in timed if (r["estimate"]["value"] if key == "estimate" else r[key])
                  is not None]
        return sum(errors) / len(errors), max(errors)

    print()
    print(f"verdicts right: {sum(r['right'] for r in rows)}/{len(rows)} "
          f"(stall checks alone: {sum(r['stall_right'] for r in rows)}/{len(rows)}); "
          f"direction right for changes ≥ 5 %: "
          f"{sum(bool(r['direction']) for r in rows if r['direction'] is not None)}/"
          f"{sum(r['direction'] is not None for r in rows)}")
    for key, label in (("estimate", "estimate"), ("latency", "latency/wave"),
                       ("span", "CU time/wave")):
        mean, worst = mae(key)
        print(f"mean |error| vs measured, {label}: {mean:.1%} (worst {worst:.1%})")
    print(f"CPU time of the whole run: {cpu:.1f} s")
    print()
    print("| pair | before-plan verdict | top 3 findings (gain) | addressed finding | its gain "
          "(was: stall hypothesis) | measured | covered | residual |")
    print("|---|---|---|---|---|---:|---|---:|")
    residuals = []
    for pair, p in plans:
        gain = p["gain"]
        residual = None
        if gain:
            residual = abs((gain["low"] + gain["high"]) / 2 + pair.measured_time_change)
            residuals.append(residual)
        was = f" (was ≤ {gain['ranking']:.1%} of stall)" if gain and gain.get("ranking") else ""
        print(f"| {pair.name} | {p['verdict']} | {'; '.join(short(f) for f in p['top'])} | "
              f"{short(p['addressed']) if p['addressed'] else 'none (' + pair.change + ')'} | "
              f"{gain_text(gain)}{was} | {pct(pair.measured_time_change)} | "
              f"{'—' if p['covered'] is None else 'yes' if p['covered'] else 'NO'} | "
              f"{'—' if residual is None else f'{residual:.1%}'} |")
    if residuals:
        print()
        print(f"addressed findings covered: {sum(bool(p['covered']) for _, p in plans)}/"
              f"{len(residuals)}; residual |range midpoint − measured|: mean "
              f"{sum(residuals) / len(residuals):.1%}, worst {max(residuals):.1%}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
