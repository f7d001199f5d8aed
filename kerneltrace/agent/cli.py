"""The command line of the agent server (scripts/mcp_server.py and the `kerneltrace-mcp` entry point)."""

from __future__ import annotations

import argparse


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="kerneltrace-mcp",
        description="Serve kernel-trace-analysis to a coding agent over MCP (stdio): list_dispatches, "
                    "summary, hotspots, explain, compare, next_capture. Reads only under --root.")
    parser.add_argument("--root", action="append", default=[], metavar="DIR",
                        help="a folder the server may read (repeatable; default: the current directory)")
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    from kerneltrace.agent.roots import Roots
    from kerneltrace.agent.server import build_server
    from kerneltrace.agent.session import Session

    session = Session(Roots.of(args.root))  # a bad root fails here, before the stdio session starts
    build_server(session).run(transport="stdio")
    return 0


def console_main() -> int:
    """Entry point `kerneltrace-mcp`: bad input as one `error:` line, exit 2."""
    from kerneltrace.errors import run_cli

    return run_cli(main)
