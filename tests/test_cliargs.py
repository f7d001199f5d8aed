"""cliargs.LazyWidthHelpFormatter: help and usage as argparse's own formatter writes them, shutil only when text is formatted."""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

import pytest

from kerneltrace.cliargs import LazyWidthHelpFormatter

ROOT = Path(__file__).resolve().parents[1]


def _parser(formatter: type) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="tool", description="Rank things " * 12, formatter_class=formatter)
    parser.add_argument("directory", metavar="DIR", help="the directory to read, with a long help text " * 3)
    parser.add_argument("--topk", type=int, default=15, help="rows shown (default 15)")
    parser.add_argument("--a-rather-long-option-name", metavar="SOMETHING", help="an option " * 9)
    parser.add_argument("--mode", choices=("asm", "src", "both"), default="both")
    return parser


@pytest.mark.parametrize("columns", [None, "30", "60", "100", "250", "bad"])
def test_help_and_usage_as_the_stock_formatter(monkeypatch, columns):
    if columns is None:
        monkeypatch.delenv("COLUMNS", raising=False)
    else:
        monkeypatch.setenv("COLUMNS", columns)
    for text in ("format_help", "format_usage"):
        assert getattr(_parser(LazyWidthHelpFormatter), text)() == getattr(_parser(argparse.HelpFormatter), text)()
    explicit = LazyWidthHelpFormatter("tool", width=50)
    assert (explicit._width, explicit._max_help_position) == (50, 24)


def test_building_and_parsing_import_no_shutil():
    code = ("import sys, argparse; from kerneltrace.cliargs import LazyWidthHelpFormatter as F; "
            "p = argparse.ArgumentParser(formatter_class=F); p.add_argument('--n', type=int); p.add_argument('d'); "
            "p.parse_args(['x', '--n', '3']); print('shutil' in sys.modules); p.format_help(); print('shutil' in sys.modules)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True,
                          env={key: value for key, value in os.environ.items()})
    assert done.stdout.split() == ["False", "True"]
