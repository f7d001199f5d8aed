"""plan.html with the source ⇄ ISA explorer: page and document sizes, render cost, first render
and clicks in headless Chromium, each against a baseline of the same run.

Run: .venv/bin/python bench/bench_plan_html.py [--repeat 5] [--browser]   (needs ../shared/captures)

Baselines: the Python render of the whole plan vs the explorer's share of it (explorer_data +
script_json); the page's first render with JavaScript vs the same page with JavaScript disabled
(plain HTML: summary and findings only); the hotspot document with vs without the fields the
explorer added (source_files, waves.wait_links, waves.peers.per_hit).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from bench.timing import median_seconds  # noqa: E402

EXAMPLES = REPO.parent / "shared" / "captures" / "flydsl-kernel-profiling-lib" / "examples"
CAPTURES = {
    "moe_reduce (19 MB, 4112 waves)": EXAMPLES / "moe_reduce/att_viewer/big/ui_output_agent_42768_dispatch_39",
    "mla_decode (4948 rows)": EXAMPLES / "mla_decode/att_viewer/big/ui_output_agent_41578_dispatch_58",
    "flash_attn (2069 rows)": EXAMPLES / "flash_attn_func/att_viewer/big/ui_output_agent_38430_dispatch_44",
    "legacy v1 (5222 rows, no source)": REPO.parent / "shared" / "captures" / "aiter-glog-fork-legacy-att"
    / "att" / "flash_fwd_splitkv_mla_kernel_v1_ui",
}



def _without_explorer_fields(doc: dict) -> dict:
    slim = json.loads(json.dumps(doc))
    slim.pop("source_files", None)
    waves = slim.get("waves") or {}
    waves.pop("wait_links", None)
    (waves.get("peers") or {}).pop("per_hit", None)
    return slim


def _browser_row(driver, page: Path) -> dict:
    from selenium.webdriver.support.ui import WebDriverWait

    driver.get("about:blank")
    driver.get(page.as_uri())
    WebDriverWait(driver, 60, poll_frequency=0.01).until(
        lambda d: d.execute_script("return !!(window.__ktExplorer && window.__ktExplorer.initMs !== null)"))
    return driver.execute_script("""
        const nav = performance.getEntriesByType('navigation')[0], S = window.__ktExplorer, v = S.views.k0d0;
        const out = {dcl: nav.domContentLoadedEventEnd, init: S.initMs};
        const t = (f) => { const t0 = performance.now(); f(); document.body.getBoundingClientRect(); return performance.now() - t0; };
        const withRows = v.d.findings.findIndex(f => f.pos.length);
        out.finding = t(() => v.selectFinding(Math.max(withRows, 0), true));
        const wait = Array.from(v.waitOf.keys())[0];
        out.wait = wait === undefined ? null : t(() => v.selectInstruction(wait));
        out.line = v.rankLines.length ? t(() => v.selectLine(v.rankLines[0])) : null;
        return out;""")


def _plain_dcl(driver, page: Path) -> float:
    driver.execute_cdp_cmd("Emulation.setScriptExecutionDisabled", {"value": True})
    try:
        driver.get("about:blank")
        driver.get(page.as_uri())
        return _nav_dcl(driver)
    finally:
        driver.execute_cdp_cmd("Emulation.setScriptExecutionDisabled", {"value": False})


def _nav_dcl(driver) -> float:
    # page scripts are disabled, CDP evaluation still runs
    result = driver.execute_cdp_cmd("Runtime.evaluate", {
        "expression": "performance.getEntriesByType('navigation')[0].domContentLoadedEventEnd",
        "returnByValue": True})
    return float(result["result"]["value"])


def main(argv: list[str] | None = None) -> int:
    from kerneltrace.document.hotspot_report import analyze_dispatch
    from kerneltrace.plan.summary import build_summary
    from kerneltrace.render.explorer import explorer_data, script_json
    from kerneltrace.render.plan import plan_outputs, render_html

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--browser", action="store_true", help="also time the page in headless Chromium")
    args = parser.parse_args(argv)
    out = Path(tempfile.mkdtemp(prefix="bench-plan-html-"))
    driver = None
    if args.browser:
        sys.path.insert(0, str(REPO / "tests"))

        from browser_setup import start_chromium

        driver = start_chromium()
    print("| capture | hotspot JSON (explorer fields) | plan.html | explorer JSON | render | explorer share |"
          + (" DCL no JS | DCL + init | finding | wait | line |" if driver else ""))
    print("|---|---|---|---|---|---|" + ("---|---|---|---|---|" if driver else ""))
    try:
        for name, dispatch_dir in CAPTURES.items():
            if not dispatch_dir.is_dir():
                continue
            doc = analyze_dispatch(dispatch_dir, waves=any(dispatch_dir.glob("se*_sm*_sl*_wv*.json")))
            full = len(json.dumps(doc))
            slim = len(json.dumps(_without_explorer_fields(doc)))
            summary = build_summary([doc], [])
            dispatch = summary["kernels"][0]["dispatches"][0]
            render = median_seconds(lambda: render_html(summary, [doc], []), args.repeat)  # noqa: B023
            explorer = median_seconds(lambda: script_json(explorer_data(dispatch, doc)), args.repeat)  # noqa: B023
            page = out / f"{len(list(out.iterdir()))}.html"
            html = plan_outputs(build_summary([doc], [], run="bench"), [doc], [])["plan.html"]
            page.write_text(html, encoding="utf-8")
            blob = len(str(script_json(explorer_data(dispatch, doc))).encode())
            row = (f"| {name} | {full / 1e6:.2f} MB (+{(full - slim) / 1e3:.0f} KB) | {len(html.encode()) / 1e3:.0f} KB"
                   f" | {blob / 1e3:.0f} KB | {render:.3f} s | {explorer / render:.0%} |")
            if driver:
                plain = statistics.median(_plain_dcl(driver, page) for _ in range(args.repeat))
                runs = [_browser_row(driver, page) for _ in range(args.repeat)]

                def med(key: str, runs: list[dict] = runs) -> str:
                    values = [r[key] for r in runs if r[key] is not None]
                    return f"{statistics.median(values):.0f} ms" if values else "n/a"

                loaded = statistics.median(r["dcl"] + r["init"] for r in runs)
                row += (f" {plain:.0f} ms | {loaded:.0f} ms ({loaded / plain:.1f}×) | {med('finding')} |"
                        f" {med('wait')} | {med('line')} |")
            print(row, flush=True)
    finally:
        if driver:
            driver.quit()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
