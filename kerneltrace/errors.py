"""The one exception type for bad input, and how command-line scripts report it and end."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Container, Iterable

from kerneltrace.records import record
from kerneltrace.safetext import one_line

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (the CLI start-up path)
if TYPE_CHECKING:
    from typing import NoReturn


@record
class InputError(Exception):
    """Bad user input: what is wrong, where, and how to fix it (printed as one line, exit 2)."""

    what: str
    where: str = ""
    fix: str = ""

    def __str__(self) -> str:
        parts = [f"{self.where}: {self.what}" if self.where else self.what]
        if self.fix:
            parts.append(f"fix: {self.fix}")
        return " -- ".join(parts)


def require_all(required: Iterable[str], present: Container[str], what: str, where: str, fix: str) -> None:
    """Raise InputError(what, where, fix) when a required name (column, view) is not present.

    ``what`` names the missing ones through a ``{missing}`` placeholder (comma-separated, in order).
    """
    missing = [name for name in required if name not in present]
    if missing:
        raise InputError(what.format(missing=", ".join(missing)), where, fix)


EXIT_BAD_INPUT = 2


def run_cli(main: Callable[[list[str] | None], int], argv: list[str] | None = None) -> int:
    """Run a CLI entry point; turn InputError into one stderr line and exit code 2."""
    try:
        return main(argv)
    except InputError as err:
        print(f"error: {one_line(err)}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except KeyboardInterrupt:
        print("error: interrupted", file=sys.stderr)
        return 130


def exit_cli(code: int) -> NoReturn:
    """``sys.exit(code)`` without the interpreter's teardown: the atexit handlers run and the
    standard streams are flushed, then the process ends (os._exit).

    After a --waves analysis the teardown (every object freed, numpy's and the heap's memory
    handed back page by page) took 40-60 ms of a ~0.6 s run; the kernel frees the whole
    address space at once. Anything unusual keeps Python's own exit: a caller below the top
    level (the script run by runpy or a test), another thread alive (its join), an interactive
    session, a flush that fails (a closed pipe: Python words it), a code that is not an int.
    """
    threading = sys.modules.get("threading")
    # only from the top level of the program itself: code that ran the script (runpy, a test)
    # may go on after its SystemExit
    if (sys._getframe(1).f_back is not None or type(code) is not int or sys.flags.inspect
            or (threading is not None and threading.active_count() > 1)):
        sys.exit(code)
    import atexit

    atexit._run_exitfuncs()  # what the teardown would run first (it clears them: no second run)
    try:
        for stream in (sys.stdout, sys.stderr):
            if stream is not None:
                stream.flush()
    except (OSError, ValueError):
        sys.exit(code)
    os._exit(code)
