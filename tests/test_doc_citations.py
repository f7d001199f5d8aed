"""Citations of documentation resolve inside the repository: no pointer to a doc it does not ship."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SCANNED = ("kerneltrace", "scripts", "workflow", "docs", "tests", "bench")
TOP_LEVEL = ("README.md", "SKILL.md", "RELIABILITY.md", "Snakefile", "Makefile")
SUFFIXES = {".py", ".md", ".smk", ".j2", ".yaml", ".yml", ".rst", ".txt", ".toml", ""}
# The project's reference notes outside the repository (../shared/docs): read while building,
# never shipped, so nothing in the repository may send a reader there.
UNSHIPPED = ("counters", "rocprof-formats", "reference-analyzers", "peers", "user-demand",
             "snakemake-style")
UNSHIPPED_RE = re.compile(r"(?<![\w-])(?:" + "|".join(map(re.escape, UNSHIPPED))
                          + r")(?:\.md)?\s*(?:§|section \d)|(?<![\w-])(?:"
                          + "|".join(map(re.escape, UNSHIPPED)) + r")\.md\b|shared/docs/")
DOCS_RE = re.compile(r"(?<![\w/.-])docs/([\w-]+\.md)")
SECTION_RE = re.compile(r"(?<![\w/.-])([\w-]+\.md) ?§")


def _texts():
    paths = [ROOT / name for name in TOP_LEVEL if (ROOT / name).is_file()]
    for folder in SCANNED:
        paths += [p for p in sorted((ROOT / folder).rglob("*"))
                  if p.is_file() and p.suffix in SUFFIXES and "__pycache__" not in p.parts
                  and p.name != Path(__file__).name]
    for path in paths:
        try:
            yield path, path.read_text()
        except UnicodeDecodeError:
            continue


def _line(text: str, offset: int) -> int:
    return text.count("\n", 0, offset) + 1


def test_no_citation_of_an_unshipped_reference_doc():
    found = [f"{path.relative_to(ROOT)}:{_line(text, m.start())}: {m.group(0)!r}"
             for path, text in _texts() for m in UNSHIPPED_RE.finditer(text)]
    assert not found, ("citations of docs the repository does not ship (bring the facts into "
                       "docs/, e.g. docs/rocprof-outputs.md, docs/pmc-counters.md):\n"
                       + "\n".join(found))


def test_every_cited_repository_doc_exists():
    docs = {p.name for p in (ROOT / "docs").glob("*.md")}
    shipped = docs | {p.name for p in ROOT.rglob("*.md") if ".venv" not in p.parts}
    missing = []
    for path, text in _texts():
        for m in DOCS_RE.finditer(text):
            if m.group(1) not in docs:
                missing.append(f"{path.relative_to(ROOT)}:{_line(text, m.start())}: docs/{m.group(1)}")
        for m in SECTION_RE.finditer(text):
            if m.group(1) not in shipped:
                missing.append(f"{path.relative_to(ROOT)}:{_line(text, m.start())}: {m.group(1)} §")
    assert not missing, "citations of docs that do not exist:\n" + "\n".join(missing)


def test_the_checks_catch_a_stray_citation():
    assert UNSHIPPED_RE.search("layout per rocprof-formats §8.9")
    assert UNSHIPPED_RE.search("see ../shared/docs/peers.md")
    assert UNSHIPPED_RE.search("(counters.md section 3)")
    assert not UNSHIPPED_RE.search("docs/pmc-counters.md §3")
    assert DOCS_RE.search("docs/nope.md").group(1) == "nope.md"
