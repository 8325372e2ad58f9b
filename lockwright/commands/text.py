"""Plain-text pieces shared by the commands: aligned columns, durations, clipped messages.

Columns are aligned like Go's ``tabwriter`` as ``crossplane beta trace`` sets it up (three
spaces between columns), so output reads the same as the commands operators already know.
When stdout is a terminal the same rows go into a ``rich`` table instead
(:func:`rich_table`); the rows themselves are built by pure functions either way.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

# Imports inside functions: start-up time. Every command's parser is built on each run, so
# Temporal, the Kubernetes client, rich and the OCI code load only in the handler that runs.

PAD = 3
CLIP = 64
STYLES = {"ok": "green", "True": "green", "failed": "red", "False": "red",
          "timed out": "red", "running": "yellow", "Unknown": "yellow"}


def table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    """Rows under a header, each column padded to its widest cell; no trailing spaces."""
    cells = [list(header), *[list(r) for r in rows]]
    widths = [max(len(r[i]) for r in cells) for i in range(len(header))]
    lines = ["".join(cell.ljust(widths[i] + PAD) for i, cell in enumerate(r[:-1])) + r[-1]
             for r in cells]
    return "\n".join(line.rstrip() for line in lines)


def duration(secs: float | None) -> str:
    """``12ms``, ``1.23s``, ``2m03s`` or ``1h02m``; ``…`` while unknown (still running)."""
    if secs is None:
        return "…"
    if secs < 1:
        return f"{secs * 1000:.0f}ms"
    if secs < 60:
        return f"{secs:.2f}s"
    minutes, rest = divmod(int(secs), 60)
    if minutes < 60:
        return f"{minutes}m{rest:02d}s"
    return f"{minutes // 60}h{minutes % 60:02d}m"


def clip(message: str, wide: bool = False, keep: int = CLIP) -> str:
    """The last ``keep`` characters of a long message (its end names the cause), unless wide."""
    message = " ".join(message.split())
    if wide or len(message) <= keep:
        return message
    return "..." + message[-keep:]


def rich_table(header: Sequence[str], rows: Sequence[Sequence[str]], title: str = "",
               styled: Sequence[int] = ()) -> Any:
    """A ``rich`` Table of the same rows; columns in ``styled`` are coloured by value."""
    from rich.table import Table
    from rich.text import Text

    out = Table(title=title or None, title_justify="left", box=None, pad_edge=False,
                header_style="bold")
    for name in header:
        out.add_column(name, overflow="fold")
    for row in rows:
        out.add_row(*[Text(cell, style=STYLES.get(cell, "")) if i in styled else Text(cell)
                      for i, cell in enumerate(row)])
    return out


def print_rich(renderable: Any) -> None:
    """Print one ``rich`` renderable to stdout."""
    from rich.console import Console

    Console().print(renderable)
