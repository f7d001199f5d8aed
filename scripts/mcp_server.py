#!/usr/bin/env python3
"""MCP server for coding agents (stdio): bounded answers over dispatch dirs under --root folders."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from kerneltrace.errors import run_cli


def main(argv: list[str] | None = None) -> int:
    """The same command line as the `kerneltrace-mcp` entry point (kerneltrace/agent/cli.py)."""
    from kerneltrace.agent.cli import main as serve

    return serve(argv)


if __name__ == "__main__":
    sys.exit(run_cli(main))
