"""``install --wait``: follow an install until it is healthy or has failed, and show it.

What ends the wait is decided by :func:`verdict`, a pure function of the package object
and the workflow's ``status`` query: Installed=True and Healthy=True, with the workflow
settled (its query says idle, or could not be read), is success; a
Manual package whose revision installed inactive is done too (it waits for
``lockwright approve``); a permanent failure (the workflow settled in ``Failed``) ends it
at once with the condition's message. Anything that can heal (a tag not pushed yet, a
registry down) is waited out until the timeout, as Crossplane's own ``--wait`` does.

Two views show the steps read from the workflow (:mod:`commands.follow`): plain lines,
one per finished step and per change of the conditions, when stdout is not a terminal;
a ``rich`` live table of every step, running ones included, when it is.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass
from typing import Any, Protocol

from lockwright.commands import common, rows, text
from lockwright.commands.follow import Install

# Imports inside functions: start-up time. Every command's parser is built on each run, so
# Temporal, the Kubernetes client, rich and the OCI code load only in the handler that runs.

# How often the workflow and the package are read again; each read is a few small RPCs.
POLL_S = 0.5
# A new package's workflow has few runs; reading back more each poll would cost for nothing.
FOLLOW_RUNS = 5
Obj = dict[str, Any]


@dataclass(frozen=True)
class Verdict:
    """How a wait ended: ``ok``, and what to tell the operator."""

    ok: bool
    message: str


def verdict(pkg: Obj | None, status: Any, ref: common.PackageRef) -> Verdict | None:
    """Whether the wait is over, from the package object and the ``status`` query (or None).

    Returns:
        None while it is not over.
    """
    if pkg is None:
        return Verdict(False, f"{ref} is gone (deleted while installing)")
    conds = common.conditions(pkg)
    revision = str((pkg.get("status") or {}).get("currentRevision") or "")
    phase, idle = getattr(status, "phase", ""), bool(getattr(status, "idle", False))
    # The install's child writes Healthy as its runtime turns Available; its steps reach
    # the history, and the parent's status, a workflow task later (docs/design.md,
    # "Health as it happens"): shown before then, the install's steps would be cut short.
    if all(conds.get(t, {}).get("status") == "True" for t in ("Installed", "Healthy")) and (
            status is None or idle):
        return Verdict(True, f"{ref} is installed and healthy (revision {revision})")
    if phase == "Inactive" and idle:
        return Verdict(True, f"{ref}: revision {revision} is installed inactive; approve it "
                             f"with: lockwright approve {ref} {revision}")
    if phase == "Failed" and idle:
        return Verdict(False, f"{ref} failed: {condition_message(conds)}")
    return None


def condition_message(conds: dict[str, dict[str, str]]) -> str:
    """The first of Installed and Healthy that is not True, as ``Type=Status Reason: msg``."""
    for kind in ("Installed", "Healthy"):
        found = conds.get(kind)
        if found and found.get("status") != "True":
            return (f"{kind}={found.get('status')} {found.get('reason', '')}: "
                    f"{found.get('message', '')}")
    return "no conditions yet (is the watcher running?)"


def conditions_line(pkg: Obj | None) -> str:
    """The package's Installed and Healthy, in one line, for the views."""
    conds = common.conditions(pkg)
    parts = [f"{t}={c.get('status')} {c.get('reason', '')}"
             + (f": {c['message']}" if c.get("message") else "")
             for t in ("Installed", "Healthy") if (c := conds.get(t))]
    # One line however long a message is: the views print it on a line of its own.
    return " ".join("; ".join(parts).split()) or "waiting for the package's first status"


def plain_line(row: rows.Row) -> str:
    """A finished step as one line of its own (a log can be read as it grows)."""
    at, step, took, tries, result, what = row.cells
    return f"{at:>9}  {step:<36} {took:>8}  {tries:>3}  {result:<9} {what}".rstrip()


class View(Protocol):
    """Where progress goes: plain lines or a live table."""

    def show(self, install: Install, pkg: Obj | None) -> None: ...

    def close(self) -> None: ...


class PlainView:
    """Each step once, when it has finished; each change of the conditions once."""

    def __init__(self) -> None:
        self.printed: set[str] = set()
        self.conditions = ""

    def show(self, install: Install, pkg: Obj | None) -> None:
        """Print what is new since the last call."""
        for row in rows.all_rows(install.runs, install.children):
            if row.done and row.key not in self.printed:
                self.printed.add(row.key)
                print(plain_line(row), flush=True)
        line = conditions_line(pkg)
        if line != self.conditions:
            self.conditions = line
            print(f"  {line}", flush=True)

    def close(self) -> None:
        """Nothing to tear down."""


class LiveView:
    """A ``rich`` live table of every step so far (repeats folded), and the conditions."""

    def __init__(self) -> None:
        from rich.live import Live

        self.live = Live(refresh_per_second=8, transient=False)
        self.live.start()

    def show(self, install: Install, pkg: Obj | None) -> None:
        """Redraw with what was read."""
        from rich.console import Group
        from rich.text import Text

        found = rows.all_rows(install.runs, install.children)
        table = text.rich_table(rows.HEADER, [r.cells for r in rows.collapse(found)],
                                styled=(rows.RESULT_COLUMN,))
        self.live.update(Group(table, Text(conditions_line(pkg), style="bold")))

    def close(self) -> None:
        """Leave the last table on screen."""
        self.live.stop()


async def wait(s: Any, kube: Any, ref: common.PackageRef, timeout: float,
               view: View) -> Verdict:
    """Follow the install until :func:`verdict` says it is over, or ``timeout`` seconds."""
    from temporalio.service import RPCError

    from lockwright.commands.follow import read_install

    client = await common.temporal(s)
    deadline, install = time.monotonic() + timeout, Install()
    while True:
        pkg = await asyncio.to_thread(kube.get, common.PKG_API, ref.title, ref.name)
        try:
            install = await read_install(client, ref, s.task_queue, query=True,
                                         max_runs=FOLLOW_RUNS)
        except RPCError:
            pass  # Temporal blinked: show what was read last, read again next time
        view.show(install, pkg)
        done = verdict(pkg, install.status, ref)
        if done is not None:
            return done
        if time.monotonic() > deadline:
            return Verdict(False, f"{ref} not healthy within {text.duration(timeout)}: "
                                  f"{condition_message(common.conditions(pkg))}")
        await asyncio.sleep(POLL_S)  # no push for outside readers: poll, a few RPCs each
