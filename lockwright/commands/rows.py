"""Timelines as table rows, for ``lockwright history`` and ``install --wait``: pure functions.

A package workflow's steps come first; each ``InstallRevision`` child's steps follow its
own row, indented, so one table reads as the whole install. Times are offsets from the
package workflow's start.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime

from lockwright.commands import text
from lockwright.commands.timeline import CHILD, LOCAL, SIGNAL, TIMER, UPDATE, Step, Timeline, approvals

HEADER = ("AT", "STEP", "TOOK", "TRIES", "RESULT", "DETAILS")
RESULT_COLUMN = 4
EARLIER = "(earlier runs of this workflow are not shown: --runs N reads more)"
INDENT = "  "


@dataclass(frozen=True)
class Row:
    """One step, ready to print; ``key`` identifies it across reads of a running workflow."""

    key: str
    depth: int
    cells: tuple[str, str, str, str, str, str]
    done: bool


def child_key(step: Step) -> str:
    """How a child step finds its run's timeline in the ``children`` mapping."""
    return f"{step.child}/{step.child_run}"


def label(step: Step) -> str:
    """The STEP column: the activity or child type; signals, updates and timers say so."""
    if step.kind in (SIGNAL, UPDATE):
        return f"{step.kind} {step.name}"
    if step.kind == LOCAL:
        return f"{step.name} (local)"
    if step.kind == CHILD:
        return f"{step.name} (child)"
    return "timer" if step.kind == TIMER else step.name


def details(step: Step, wide: bool = False) -> str:
    """The DETAILS column: the summary, who sent it, how it failed, what was retried."""
    parts = [step.summary]
    if step.who and step.kind in (SIGNAL, UPDATE):
        parts = [f"from {step.who}: {step.summary}"]
    if step.message:
        parts.append(text.clip(step.message, wide, 120))
    if step.attempts > 1 and step.last_failure and step.last_failure != step.message:
        parts.append(f"retried after: {text.clip(step.last_failure, wide, 80)}")
    return "; ".join(p for p in parts if p)


def row(step: Step, origin: float, depth: int, key: str, wide: bool = False) -> Row:
    """One step as a row; ``origin`` is the time AT counts from."""
    tries = str(step.attempts) if step.attempts else "-"
    cells = (f"+{text.duration(max(0.0, step.start - origin))}",
             INDENT * depth + label(step), text.duration(step.duration), tries,
             step.outcome, details(step, wide))
    return Row(key, depth, cells, step.end is not None)


def rows(timeline: Timeline, children: Mapping[str, Timeline], origin: float | None = None,
         depth: int = 0, wide: bool = False) -> list[Row]:
    """Every step of ``timeline`` and, under each child step, the child run's steps."""
    start = timeline.start if origin is None else origin
    out: list[Row] = []
    for step in timeline.steps:
        key = f"{timeline.run_id}:{step.kind}:{step.name}:{step.start:.6f}"
        out.append(row(step, start, depth, key, wide))
        child = children.get(child_key(step)) if step.kind == CHILD else None
        if child is not None:
            out += rows(child, children, start, depth + 1, wide)
    return out


def collapse(found: list[Row]) -> list[Row]:
    """Consecutive rows of the same step at the same depth folded into the last of them,
    counted (``check_health (local) ×12``): a long health wait stays one line."""
    out: list[Row] = []
    count = 0
    for row in found:
        if out and (out[-1].depth, _bare(out[-1])) == (row.depth, row.cells[1]):
            count += 1
            at, step, took, tries, result, what = row.cells
            out[-1] = replace(row, cells=(at, f"{step} ×{count}", took, tries, result, what))
        else:
            count = 1
            out.append(row)
    return out


def _bare(row: Row) -> str:
    return row.cells[1].rsplit(" ×", 1)[0]


def every_step(timeline: Timeline, children: Mapping[str, Timeline]) -> list[Step]:
    """The steps of ``timeline`` and of the children it started, in the order shown."""
    out: list[Step] = []
    for step in timeline.steps:
        out.append(step)
        child = children.get(child_key(step)) if step.kind == CHILD else None
        out += every_step(child, children) if child is not None else []
    return out


def stamp(epoch: float) -> str:
    """An epoch time as ``2026-11-22T00:00:44Z``."""
    return datetime.fromtimestamp(epoch, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def heading(timeline: Timeline) -> str:
    """One line naming the run: id, type, when and by whom it started, how it stands."""
    by = f" by {timeline.started_by}" if timeline.started_by else ""
    ended = f" ({timeline.message})" if timeline.message else ""
    return (f"{timeline.workflow_id} ({timeline.workflow_type}) run {timeline.run_id}: "
            f"started {stamp(timeline.start)}{by}, {timeline.outcome}{ended}")


def footer(runs: Sequence[Timeline], children: Mapping[str, Timeline]) -> list[str]:
    """Totals over the runs (steps, retries, time) and every approval: who gave it, when."""
    steps = [s for run in runs for s in every_step(run, children)]
    retried = [s for s in steps if s.attempts > 1]
    names = f" ({', '.join(sorted({s.name for s in retried}))})" if retried else ""
    so_far = " so far" if runs and runs[-1].end is None else ""
    totals = (f"{len(steps)} steps, {sum(s.attempts - 1 for s in retried)} retries{names}, "
              f"{text.duration(elapsed(runs, steps))}{so_far}")
    return [totals, *(approval_line(s) for s in approvals(steps))]


def elapsed(runs: Sequence[Timeline], steps: list[Step]) -> float:
    """From the first run's start to the last run's end, or (while it runs) its last step."""
    if not runs:
        return 0.0
    end = runs[-1].end
    if end is None:
        end = max([s.end or s.start for s in steps] or [runs[-1].start])
    return max(0.0, end - runs[0].start)


def approval_line(step: Step) -> str:
    """``approval: update activate_revision of REV by WHO at WHEN`` (or the record of one)."""
    if step.kind in (SIGNAL, UPDATE):
        return (f"approval: {step.kind} {step.name} of {step.summary} by {step.who or '?'} "
                f"at {stamp(step.start)}")
    return f"approval on record: {step.summary}: {step.message}"


def all_rows(runs: Sequence[Timeline], children: Mapping[str, Timeline],
             wide: bool = False) -> list[Row]:
    """The rows of every run, AT counted from the first run's start."""
    origin = runs[0].start if runs else 0.0
    return [r for run in runs for r in rows(run, children, origin, wide=wide)]


def history_text(runs: Sequence[Timeline], children: Mapping[str, Timeline],
                 wide: bool = False, earlier: bool = False) -> str:
    """The runs as plain text: each run's heading and table, then totals and approvals.

    Args:
        earlier: older runs exist that were not read; say so first.
    """
    lines = [EARLIER] if earlier else []
    origin = runs[0].start if runs else 0.0
    for run in runs:
        cells = [r.cells for r in rows(run, children, origin, wide=wide)]
        lines += [heading(run), text.table(HEADER, cells)] if cells else [heading(run)]
    return "\n".join(lines + footer(runs, children))
