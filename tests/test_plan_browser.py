"""plan.html in a real headless Chromium: finding → evidence rows, wait → its loads, source line ⇄
instructions, URL fragments, search, hostile text, no console errors, no network, and the page
without JavaScript. Plans of real captures from ../shared/captures (the 19 MB moe_reduce, the
4,948-instruction mla_decode, softmax without wave files). One browser session for the module.

Screenshots and the measured render/click times go to test-output/plan-browser/ for review
(KERNELTRACE_TEST_OUTPUT overrides the folder). Times are reported, never asserted.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest
from browser_setup import chromium_missing, install_chromium, start_chromium
from conftest import CAPTURES, REPO_ROOT

pytestmark = [pytest.mark.shared, pytest.mark.browser]
selenium = pytest.importorskip("selenium")  # the test extra; the whole module drives a browser
from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.common.keys import Keys  # noqa: E402
from selenium.webdriver.support.ui import WebDriverWait  # noqa: E402

EXAMPLES = CAPTURES / "flydsl-kernel-profiling-lib" / "examples"
PLANS = {
    "moe_reduce": EXAMPLES / "moe_reduce/att_viewer/big/ui_output_agent_42768_dispatch_39",
    "mla_decode": EXAMPLES / "mla_decode/att_viewer/big/ui_output_agent_41578_dispatch_58",
    "softmax": EXAMPLES / "softmax/att_viewer/big/ui_output_agent_47920_dispatch_13",
}
HOSTILE = '</script><img src=x onerror="window.__pwned=1">&amp;<!--'
OUT = Path(os.environ.get("KERNELTRACE_TEST_OUTPUT", REPO_ROOT / "test-output")) / "plan-browser"
TIMINGS: dict[str, dict] = {}
PAGE_BUDGET_BYTES = 1_000_000  # plan.html of the 19 MB moe_reduce capture (docs/plan-html.md)
WAIT_S = 30  # how long a page may take to show a result before the test fails (hang guard)

IN_VIEW = """
const row = arguments[0], box = row.closest('.kx-box');
const r = row.getBoundingClientRect(), b = box.getBoundingClientRect();
return r.top >= b.top - 1 && r.bottom <= b.bottom + 1 && r.top >= -1 && r.bottom <= window.innerHeight + 1
    || JSON.stringify([r.top, r.bottom, b.top, b.bottom, window.innerHeight, box.scrollTop]);
"""


@pytest.fixture(scope="module")
def driver():
    """One headless Chromium for the module (apt-get installs it as root when missing)."""
    if chromium_missing():
        why = install_chromium()
        if why:
            pytest.skip(f"no headless Chromium: {why}")
    browser = start_chromium()
    OUT.mkdir(parents=True, exist_ok=True)
    try:
        yield browser
    finally:
        browser.quit()
        (OUT / "timings.json").write_text(json.dumps(TIMINGS, indent=2, sort_keys=True) + "\n")


@pytest.fixture(scope="module")
def plans(tmp_path_factory) -> dict[str, Path]:
    """plan.html of each capture (hotspot analysis with the wave files, as the pipeline runs it)."""
    from kerneltrace.document.hotspot_report import analyze_dispatch
    from kerneltrace.plan.summary import build_summary
    from kerneltrace.render.plan import plan_outputs

    if not CAPTURES.is_dir():
        pytest.skip("../shared/captures not present")
    root = tmp_path_factory.mktemp("plans")
    out = {}
    for name, dispatch_dir in PLANS.items():
        doc = analyze_dispatch(dispatch_dir, waves=any(dispatch_dir.glob("se*_sm*_sl*_wv*.json")))
        files = plan_outputs(build_summary([doc], [], run=name), [doc], [])
        path = root / name / "plan.html"
        path.parent.mkdir()
        path.write_text(files["plan.html"], encoding="utf-8")
        (root / name / "hotspots.json").write_text(json.dumps(doc))
        out[name] = path
        TIMINGS.setdefault(name, {})["plan_html_bytes"] = path.stat().st_size
    hostile = json.loads((root / "moe_reduce" / "hotspots.json").read_text())
    hostile["kernel"] = HOSTILE
    hottest = hostile["instructions"][0]
    hottest["asm"] = "s_waitcnt vmcnt(0) " + HOSTILE
    path, lines = next(iter(hostile["source_files"].items()))
    lines["lines"][0] = HOSTILE
    files = plan_outputs(build_summary([hostile], [], run=HOSTILE), [hostile], [])
    (root / "hostile").mkdir()
    (root / "hostile" / "plan.html").write_text(files["plan.html"], encoding="utf-8")
    out["hostile"] = root / "hostile" / "plan.html"
    return out


def _open(driver, path: Path, fragment: str = "") -> dict:
    """Load the page (fresh, not a same-document jump) and wait for the explorer to start."""
    driver.get("about:blank")
    started = time.perf_counter()
    driver.get(path.as_uri() + fragment)
    WebDriverWait(driver, WAIT_S).until(
        lambda d: d.execute_script("return !!(window.__ktExplorer && window.__ktExplorer.initMs !== null)"))
    wall = time.perf_counter() - started
    timing = driver.execute_script("""
        const nav = performance.getEntriesByType('navigation')[0];
        return {init_ms: window.__ktExplorer.initMs, dom_content_loaded_ms: nav.domContentLoadedEventEnd,
                load_ms: nav.loadEventEnd, errors: window.__ktExplorer.errors};""")
    assert timing.pop("errors") == []
    timing["wall_s"] = round(wall, 3)
    return timing


def _data(driver, view: str = "k0d0") -> dict:
    return driver.execute_script(f"return JSON.parse(document.getElementById('{view}-data').textContent)")


def _until(driver, script: str, *args):
    return WebDriverWait(driver, WAIT_S).until(lambda d: d.execute_script(script, *args))


def _click_timed(driver, name: str, what: str, element, done: str, *args) -> None:
    """Click `element`, wait until the `done` script is true; record click → result time."""
    started = time.perf_counter()
    element.click()
    _until(driver, done, *args)
    TIMINGS.setdefault(name, {})[what] = {
        "click_to_result_s": round(time.perf_counter() - started, 3),
        "handler_ms": driver.execute_script("return window.__ktExplorer.lastActionMs"),
    }


def _assert_quiet(driver) -> None:
    """No console error and no request other than the page's own file (no network at all)."""
    severe = [entry for entry in driver.get_log("browser") if entry["level"] == "SEVERE"]
    assert severe == []
    urls = []
    for entry in driver.get_log("performance"):
        message = json.loads(entry["message"])["message"]
        if message["method"] == "Network.requestWillBeSent":
            urls.append(message["params"]["request"]["url"])
    assert urls, "the performance log recorded no request at all (the check would be blind)"
    assert [url for url in urls if not url.startswith(("file://", "about:"))] == []


def _rows(driver, marked: str = "") -> set[str]:
    """data-index of the ISA rows drawn now (with class `marked`, when given)."""
    return {row.get_attribute("data-index")
            for row in driver.find_elements(By.CSS_SELECTOR, ".kx-isa .kx-row" + (f".{marked}" if marked else ""))}


def _shot(driver, name: str, selector: str = ".kx") -> None:
    element = driver.find_element(By.CSS_SELECTOR, selector)
    driver.execute_script("arguments[0].scrollIntoView({block: 'start'})", element)  # not clipped
    element.screenshot(str(OUT / f"{name}.png"))


def _finish(driver, shot: str) -> None:
    """Screenshot of the explorer for review, then the page must have stayed quiet and offline."""
    _shot(driver, shot)
    _assert_quiet(driver)


def _scroll_isa_to(driver, position: int) -> None:
    driver.execute_script("""
        const box = document.querySelector('.kx-isa');
        box.scrollTop = Math.max(0, arguments[0] * 18 - 100);
        box.dispatchEvent(new Event('scroll'));""", position)
    _until(driver, "return !!document.querySelector('.kx-isa .kx-row[data-pos=\"' + arguments[0] + '\"]')", position)


@pytest.mark.parametrize("name", ["moe_reduce", "mla_decode", "softmax"])
def test_first_render_is_virtualised_quiet_and_offline(driver, plans, name):
    timing = _open(driver, plans[name])
    TIMINGS.setdefault(name, {}).update(first_render=timing)
    data = _data(driver)
    rendered = driver.execute_script("return document.querySelectorAll('.kx-isa .kx-row').length")
    assert 0 < rendered <= min(len(data["isa"]["index"]), 200)  # only the rows near the viewport
    assert driver.execute_script("return document.querySelectorAll('.kx-src .kx-row').length") > 0
    driver.save_screenshot(str(OUT / f"{name}-summary.png"))
    _finish(driver, f"{name}-views")


@pytest.mark.parametrize("name", ["moe_reduce", "mla_decode"])
def test_first_finding_scrolls_to_and_highlights_its_evidence_rows(driver, plans, name):
    _open(driver, plans[name])
    data = _data(driver)
    first = driver.find_element(By.CSS_SELECTOR, ".finding[data-finding]")
    finding = next(f for f in data["findings"] if f["id"] == first.get_attribute("data-finding"))
    assert finding["rows"], "the first finding of these captures names instructions"
    evidence = {str(row) for row in finding["rows"]}
    _click_timed(driver, name, "finding", first.find_element(By.CSS_SELECTOR, ".kx-show"),
                 "return document.querySelectorAll('.kx-isa .kx-row.kx-ev').length > 0")
    assert _rows(driver, "kx-ev") == evidence & _rows(driver)
    first_row = driver.find_element(By.CSS_SELECTOR, f".kx-isa .kx-row[data-index='{min(finding['rows'])}']")
    assert "kx-ev" in first_row.get_attribute("class")
    assert driver.execute_script(IN_VIEW, first_row)
    assert finding["id"] in driver.find_element(By.CSS_SELECTOR, ".kx-details .kx-title").text
    _finish(driver, f"{name}-finding")


@pytest.mark.parametrize("name", ["moe_reduce", "softmax"])
def test_clicking_a_wait_highlights_its_producing_loads(driver, plans, name):
    _open(driver, plans[name])
    data = _data(driver)
    position = {index: pos for pos, index in enumerate(data["isa"]["index"])}
    # the wait with the most stall among those with producers: the one a reader asks about
    waits = [w for w in data["waits"] if w[1]]
    wait = max(waits, key=lambda w: (data["isa"]["stall"][position[w[0]]] or 0, -w[0]))
    assert data["isa"]["asm"][position[wait[0]]].startswith("s_waitcnt")
    assert wait[3] == ("waves" if name == "moe_reduce" else "static")
    producers = {str(p[0]) for p in wait[1]}
    _scroll_isa_to(driver, position[wait[0]])
    row = driver.find_element(By.CSS_SELECTOR, f".kx-isa .kx-row[data-index='{wait[0]}']")
    _click_timed(driver, name, "wait", row.find_element(By.CSS_SELECTOR, ".kx-asm"),
                 "return document.querySelectorAll('.kx-details .kx-prod-link').length > 0")
    row = driver.find_element(By.CSS_SELECTOR, f".kx-isa .kx-row[data-index='{wait[0]}']")
    assert "kx-sel" in row.get_attribute("class")
    assert _rows(driver, "kx-prod") == producers & _rows(driver)
    links = driver.find_elements(By.CSS_SELECTOR, ".kx-details .kx-prod-link")
    assert len(links) == len(producers)
    # the dominant producer (most cycles charged, listed first) is one click away
    _click_timed(driver, name, "wait_to_load", links[0], """
        const cur = document.querySelector('.kx-isa .kx-row.kx-cur');
        return !!cur && cur.classList.contains('kx-prod');""")
    current = driver.find_element(By.CSS_SELECTOR, ".kx-isa .kx-row.kx-cur")
    assert current.get_attribute("data-index") in producers
    assert driver.execute_script(IN_VIEW, current) is True
    _finish(driver, f"{name}-wait")


@pytest.mark.parametrize("name", ["mla_decode", "moe_reduce"])
def test_source_line_to_its_instructions_and_back(driver, plans, name):
    _open(driver, plans[name])
    data = _data(driver)
    hottest = next(n for n, line in enumerate(data["lines"])
                   if line["file"] == 0 and not line["artifact"] and (line["metric"] or 0) > 0)
    rows = {str(index) for index, line in zip(data["isa"]["index"], data["isa"]["line"], strict=True)
            if line == hottest}
    src = driver.find_element(By.CSS_SELECTOR, f".kx-src .kx-row[data-line='{hottest}']")  # opened there
    _click_timed(driver, name, "source_line", src.find_element(By.CSS_SELECTOR, ".kx-code"),
                 "return document.querySelectorAll('.kx-isa .kx-row.kx-ofline').length > 0")
    assert _rows(driver, "kx-ofline") == rows & _rows(driver)
    current = driver.find_element(By.CSS_SELECTOR, ".kx-isa .kx-row.kx-cur")
    assert current.get_attribute("data-index") in rows and driver.execute_script(IN_VIEW, current)
    _shot(driver, f"{name}-source-line")
    # instruction → its source line: another file's line opens that file
    other = next((pos for pos, line in enumerate(data["isa"]["line"])
                  if line >= 0 and data["lines"][line]["file"] > 0), None)
    if other is not None:
        _scroll_isa_to(driver, other)
        driver.find_element(By.CSS_SELECTOR, f".kx-isa .kx-row[data-pos='{other}'] .kx-asm").click()
        line = data["lines"][data["isa"]["line"][other]]
        selected = _until(driver, "return document.querySelector('.kx-src .kx-row.kx-sel')")
        assert selected.get_attribute("data-line") == str(data["isa"]["line"][other])
        assert driver.find_element(By.CSS_SELECTOR, ".kx-file").get_attribute("value") == str(line["file"])
        assert driver.execute_script(IN_VIEW, selected)
    _assert_quiet(driver)


def test_url_fragments_open_one_instruction_or_line(driver, plans):
    plan = plans["mla_decode"]
    _open(driver, plan)
    data = _data(driver)
    hottest = max(range(len(data["isa"]["index"])), key=lambda p: (data["isa"]["metric"][p] or 0, -p))
    index = data["isa"]["index"][hottest]
    _open(driver, plan, f"#k0d0-i{index}")
    row = _until(driver, "return document.querySelector('.kx-isa .kx-row.kx-sel')")
    assert row.get_attribute("data-index") == str(index)
    assert driver.execute_script(IN_VIEW, row)
    assert data["isa"]["asm"][hottest] in driver.find_element(By.CSS_SELECTOR, ".kx-details .kx-title").text
    _shot(driver, "mla_decode-fragment")
    line = next(line for line in data["lines"] if line["file"] >= 0 and line["metric"])
    _open(driver, plan, f"#k0d0-l{line['file']}-{line['line']}")
    selected = _until(driver, "return document.querySelector('.kx-src .kx-row.kx-sel')")
    assert driver.execute_script(IN_VIEW, selected)
    assert driver.find_elements(By.CSS_SELECTOR, ".kx-isa .kx-row.kx-ofline")
    # a selection writes its own fragment, so the link can be pasted in a review
    driver.find_element(By.CSS_SELECTOR, ".kx-next-ins").click()
    assert _until(driver, "return location.hash.startsWith('#k0d0-i') && location.hash")
    _assert_quiet(driver)


def test_search_over_asm_and_next_hottest(driver, plans):

    _open(driver, plans["mla_decode"])
    data = _data(driver)
    expected = sum("s_waitcnt" in asm for asm in data["isa"]["asm"])
    box = driver.find_element(By.CSS_SELECTOR, ".kx-search")
    box.send_keys("S_WAITCNT", Keys.ENTER)
    count = _until(driver, "const t = document.querySelector('.kx-count').textContent; return t.includes('/') && t")
    assert count.endswith(f"/ {expected}")
    assert driver.find_elements(By.CSS_SELECTOR, ".kx-isa .kx-row.kx-match")
    selected = driver.find_element(By.CSS_SELECTOR, ".kx-isa .kx-row.kx-sel")
    assert "s_waitcnt" in selected.find_element(By.CSS_SELECTOR, ".kx-asm").text
    ranked = sorted((p for p, m in enumerate(data["isa"]["metric"]) if m), key=lambda p: (-data["isa"]["metric"][p], p))
    _open(driver, plans["mla_decode"])  # nothing selected: "next hottest" starts at the hottest
    button = driver.find_element(By.CSS_SELECTOR, ".kx-next-ins")
    for expected_pos in ranked[:2]:
        button.click()
        row = _until(driver, "return document.querySelector('.kx-isa .kx-row.kx-sel')")
        assert row.get_attribute("data-pos") == str(expected_pos)
    _assert_quiet(driver)


def test_hostile_names_asm_and_source_stay_text(driver, plans):
    _open(driver, plans["hostile"])
    assert driver.execute_script("return window.__pwned === undefined && document.images.length === 0")
    data = _data(driver)
    assert any(HOSTILE in asm for asm in data["isa"]["asm"])
    assert HOSTILE in driver.find_element(By.TAG_NAME, "h1").text
    driver.find_element(By.CSS_SELECTOR, ".kx-next-ins").click()  # the hottest row: the hostile asm
    title = _until(driver, "return document.querySelector('.kx-details .kx-title').textContent")
    assert HOSTILE in title
    _assert_quiet(driver)


def test_summary_and_findings_work_without_javascript(driver, plans):
    driver.execute_cdp_cmd("Emulation.setScriptExecutionDisabled", {"value": True})
    try:
        driver.get("about:blank")
        driver.get(plans["moe_reduce"].as_uri())
        findings = driver.find_elements(By.CSS_SELECTOR, ".finding[data-finding]")
        assert findings and all(f.is_displayed() for f in findings)
        assert driver.find_elements(By.CSS_SELECTOR, ".finding tr[data-row]")  # evidence tables
        note = driver.find_element(By.CSS_SELECTOR, ".kx-nojs")
        assert note.is_displayed() and "JavaScript" in note.text
        assert not driver.find_elements(By.CSS_SELECTOR, ".kx-row")
        driver.save_screenshot(str(OUT / "moe_reduce-nojs.png"))
    finally:
        driver.execute_cdp_cmd("Emulation.setScriptExecutionDisabled", {"value": False})
    _assert_quiet(driver)


def test_the_19_mb_capture_gives_a_page_within_its_budget(plans):
    html = plans["moe_reduce"].read_text(encoding="utf-8")
    assert len(html.encode()) < PAGE_BUDGET_BYTES
    assert html.count('id="k0d0-data"') == 1  # the data embedded once
