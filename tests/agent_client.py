"""A real MCP client session (the SDK's own Client over stdio) that synchronous tests can call."""

from __future__ import annotations

import asyncio
import json
import sys
import threading
from concurrent.futures import Future
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


class McpSession:
    """Starts scripts/mcp_server.py with ``roots`` and keeps one MCP session open in a thread."""

    def __init__(self, roots: list[Path], cwd: Path | None = None) -> None:
        from mcp import StdioServerParameters

        args = [str(REPO / "scripts" / "mcp_server.py")]
        for root in roots:
            args += ["--root", str(root)]
        self.params = StdioServerParameters(command=sys.executable, args=args, cwd=str(cwd or REPO))
        self._loop = asyncio.new_event_loop()
        self._ready: Future = Future()
        self._queue: asyncio.Queue | None = None
        self._thread = threading.Thread(target=self._loop.run_until_complete, args=(self._main(),), daemon=True)
        self._thread.start()
        self._ready.result(timeout=120)

    async def _main(self) -> None:
        from mcp import Client

        self._queue = asyncio.Queue()
        try:
            async with Client(self.params) as client:
                self.tools = [tool.name for tool in (await client.list_tools()).tools]
                self._ready.set_result(True)
                while True:
                    item = await self._queue.get()
                    if item is None:
                        return
                    name, arguments, future = item
                    try:
                        future.set_result(await client.call_tool(name, arguments))
                    except Exception as err:
                        future.set_exception(err)
        except Exception as err:
            if not self._ready.done():
                self._ready.set_exception(err)
            raise

    def call(self, name: str, **arguments):
        """The CallToolResult of one tool call."""
        future: Future = Future()
        self._loop.call_soon_threadsafe(self._queue.put_nowait, (name, arguments, future))
        return future.result(timeout=300)

    def answer(self, name: str, **arguments) -> tuple[str, dict | None, bool]:
        """(text the agent reads, parsed JSON or None, is_error)."""
        result = self.call(name, **arguments)
        text = "".join(block.text for block in result.content if getattr(block, "text", None) is not None)
        try:
            parsed = json.loads(text)
        except ValueError:
            parsed = None
        return text, parsed, bool(result.is_error)

    def close(self) -> None:
        self._loop.call_soon_threadsafe(self._queue.put_nowait, None)
        self._thread.join(timeout=30)
