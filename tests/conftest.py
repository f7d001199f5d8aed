"""Shared pytest fixtures: where the real captures live, the repository root, the slow tier."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from tiers import SLOW_TESTS

REPO_ROOT = Path(__file__).resolve().parent.parent
# ../shared next to the worktree; KERNELTRACE_SHARED points elsewhere (a copy mounted apart)
SHARED = Path(os.environ.get("KERNELTRACE_SHARED") or REPO_ROOT.parent / "shared")
CAPTURES = SHARED / "captures"
CALIBRATION = SHARED / "calibration"


def all_shared_dispatch_dirs() -> list[Path]:
    """Every decoded ATT dispatch dir (v3 `ui_output_agent_*` and legacy `*_ui`) under ../shared."""
    if not CAPTURES.is_dir():
        return []
    found = {p.parent for p in CAPTURES.rglob("code.json")}
    return sorted(found)


@pytest.fixture(scope="session", autouse=True)
def own_cache_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The per-user caches (kerneltrace.filecache: kernel_trace lookups, wave summaries) of the
    session's module- and session-scoped fixtures and every CLI they start go to a folder of the
    session's, never the user's ~/.cache."""
    folder = tmp_path_factory.mktemp("xdg-cache")
    os.environ["XDG_CACHE_HOME"] = str(folder)
    return folder


@pytest.fixture(autouse=True)
def own_test_cache_dir(own_cache_dir: Path, tmp_path_factory: pytest.TempPathFactory,
                       monkeypatch: pytest.MonkeyPatch) -> Path:
    """Each test (and every CLI or pipeline it starts) has a cache folder of its own: a result one
    test stored, perhaps with a function patched, is never what another test is served, so no
    result depends on the order tests run in."""
    folder = tmp_path_factory.mktemp("xdg-cache-test")
    monkeypatch.setenv("XDG_CACHE_HOME", str(folder))
    return folder


@pytest.fixture(scope="session")
def repo_root() -> Path:
    return REPO_ROOT


@pytest.fixture(scope="session")
def captures() -> Path:
    """Root of the real captures; skips the test when ../shared is absent."""
    if not CAPTURES.is_dir():
        pytest.skip("../shared/captures not present")
    return CAPTURES


@pytest.fixture(scope="session")
def calibration() -> Path:
    """Root of the before/after pairs with measured speed; skips when ../shared is absent."""
    if not CALIBRATION.is_dir():
        pytest.skip("../shared/calibration not present")
    return CALIBRATION


def slow_key(item: pytest.Item) -> str:
    """'file::test name' of a collected test, parameters dropped (the SLOW_TESTS key)."""
    return f"{Path(str(item.fspath)).name}::{item.originalname}"


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        if slow_key(item) in SLOW_TESTS:
            item.add_marker(pytest.mark.slow)
