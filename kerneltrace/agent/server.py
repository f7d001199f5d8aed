"""The MCP server (official `mcp` SDK 2.x, MCPServer over stdio): each tool a Session method, errors one sentence plus the fix."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from kerneltrace.agent.session import Session
from kerneltrace.errors import InputError

INSTRUCTIONS = (
    "kernel-trace-analysis: why an AMD GPU kernel is slow, from rocprofv3 ATT captures. Start with "
    "list_dispatches(), then summary(dir) (verdict, capture quality, top 5 findings with ids); drill "
    "down with explain(dir, id) and hotspots(dir, by); next_capture(dir) says what to capture next; "
    "compare(before, after) judges a change. Every answer names the calls that may follow ('next'). "
    "Analyses are loaded once per dispatch dir and kept for the session."
)


def _answer(call: Callable[[], dict]) -> dict:
    """Run one tool; bad input (and any failure) becomes one line with the fix, never a traceback."""
    from mcp.server.mcpserver.exceptions import ToolError

    try:
        return call()
    except InputError as err:
        raise ToolError(str(err)) from None
    except Exception as err:  # an analysis bug must still answer in one line
        raise ToolError(f"internal failure ({type(err).__name__}: {' '.join(str(err).split())[:200]}) "
                        "-- fix: report it; the CLI scripts/hotspot_analyzer.py DIR gives the same analysis") from None


def build_server(session: Session) -> Any:
    """An MCPServer whose tools answer from ``session``."""
    from mcp.server.mcpserver import MCPServer

    server = MCPServer("kerneltrace", instructions=INSTRUCTIONS)

    @server.tool()
    def list_dispatches(dir: str | None = None) -> dict:
        """The decoded ATT dispatch dirs under the server's roots (or under `dir`): kernel, format, wave files."""
        return _answer(lambda: session.list_dispatches(dir))

    @server.tool()
    def summary(dir: str) -> dict:
        """Bottleneck verdict, capture-quality notes and the top 5 findings (ids, gains, one-line evidence); ≤ 4,000 characters."""
        return _answer(lambda: session.summary(dir))

    @server.tool()
    def hotspots(dir: str, by: str = "line", top: int = 10) -> dict:
        """The top source lines, instructions or instruction regions (by='line'|'instruction'|'region') by stall."""
        return _answer(lambda: session.hotspots(dir, by, top))

    @server.tool()
    def explain(dir: str, id: str) -> dict:
        """One finding (its id from summary), instruction ('#N') or source line ('file.py:LINE'): evidence rows, the waits and loads around it, the source snippet."""
        return _answer(lambda: session.explain(dir, id))

    @server.tool()
    def compare(before: str, after: str) -> dict:
        """Before/after verdict and estimated kernel-time change of two dispatch dirs (or two runs' reports)."""
        return _answer(lambda: session.compare(before, after))

    @server.tool()
    def next_capture(dir: str) -> dict:
        """What this capture lacks (wave files, line tables, counters, arch, another CU) and the exact rocprofv3 settings or config keys that get it."""
        return _answer(lambda: session.next_capture(dir))

    return server
