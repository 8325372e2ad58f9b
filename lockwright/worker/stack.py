"""Child processes of ``lockwright dev up``: start in order, gate on readiness, stop in reverse.

Readiness is always a check polled against a deadline (never a fixed sleep), and it fails
at once when the child exits; either failure carries the tail of the child's log.
"""

from __future__ import annotations

import asyncio
import os
import signal
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from lockwright.controlplane.cluster import ControlPlane
    from lockwright.controlplane.temporalcluster import TemporalCluster

PROJECT_ROOT = Path(__file__).resolve().parents[2]
STOP_GRACE_S = 25.0
POLL_S = 0.1


class StackError(Exception):
    """A step of ``dev up`` failed; the message says which and what to do."""


@dataclass
class Child:
    """One process ``dev up`` started, and the file its output goes to."""

    name: str
    proc: asyncio.subprocess.Process
    log: Path

    def tail(self, lines: int = 30) -> str:
        """The last lines of the child's log."""
        try:
            text = self.log.read_text(errors="replace").splitlines()
        except OSError:
            return "(no log)"
        return "\n".join(text[-lines:])


@dataclass
class Stack:
    """The children of one ``dev up``, started in order and stopped in reverse."""

    state: Path
    children: list[Child] = field(default_factory=list)
    # The real control plane (``--control-plane kube``), stopped after the children.
    control_plane: ControlPlane | None = None
    # The Temporal cluster (``--temporal cluster``), stopped last: it started first.
    temporal_cluster: TemporalCluster | None = None

    def stop_control_plane(self) -> None:
        """Stop the control plane, then the Temporal cluster (those that were started)."""
        if self.control_plane is not None:
            self.control_plane.stop()
            print("stopped the control plane", file=sys.stderr)
        if self.temporal_cluster is not None:
            self.temporal_cluster.stop()
            print("stopped the Temporal cluster", file=sys.stderr)

    async def spawn(self, name: str, argv: list[str], env: dict[str, str] | None = None) -> Child:
        """Start ``argv`` in its own session with output to ``logs/<name>.log``."""
        log = self.state / "logs" / f"{name}.log"
        with open(log, "ab") as out:  # noqa: ASYNC230 - a local append, before the child runs
            out.write(f"--- {time.strftime('%Y-%m-%dT%H:%M:%S')} {' '.join(argv)}\n".encode())
            out.flush()
            # Own session: a Ctrl-C in the terminal reaches only us; we stop children in order.
            proc = await asyncio.create_subprocess_exec(
                *argv, stdout=out, stderr=asyncio.subprocess.STDOUT, stdin=asyncio.subprocess.DEVNULL,
                env={**os.environ, **(env or {})}, cwd=self.state, start_new_session=True)
        child = Child(name, proc, log)
        self.children.append(child)
        return child

    async def ready(self, child: Child, check: Callable[[], Awaitable[bool]], what: str,
                    timeout: float) -> None:
        """Poll ``check`` until true; fail if the child exits or the deadline passes."""
        deadline = time.monotonic() + timeout
        last = ""
        while True:
            if child.proc.returncode is not None:
                raise StackError(f"{child.name} exited with {child.proc.returncode} before {what}"
                                 f"; log {child.log}:\n{child.tail()}")
            try:
                if await check():
                    return
            except Exception as exc:  # noqa: BLE001 - "not yet"; reported on timeout
                last = f"{type(exc).__name__}: {str(exc)[:200]}"
            if time.monotonic() > deadline:
                raise StackError(f"timed out after {timeout:.0f}s waiting for {what}"
                                 f"{'; last error: ' + last if last else ''}; log {child.log}:\n"
                                 f"{child.tail()}")
            await asyncio.sleep(POLL_S)  # poll interval of a readiness check with a deadline

    async def died(self) -> Child:
        """Return the first child that exits."""
        waits = {asyncio.ensure_future(c.proc.wait()): c for c in self.children}
        done, pending = await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
        for task in pending:
            task.cancel()
        return waits[next(iter(done))]

    async def stop_all(self) -> None:
        """SIGTERM each child, newest first; SIGKILL any still running after the grace."""
        for child in reversed(self.children):
            if child.proc.returncode is not None:
                continue
            child.proc.send_signal(signal.SIGTERM)
            try:
                await asyncio.wait_for(child.proc.wait(), STOP_GRACE_S)
            except TimeoutError:
                child.proc.kill()
                await child.proc.wait()
            print(f"stopped {child.name}", file=sys.stderr)


def http_ok(url: str) -> bool:
    """True when ``url`` answers 200."""
    try:
        with urllib.request.urlopen(url, timeout=2) as resp:
            return bool(resp.status == 200)
    except (urllib.error.URLError, OSError):
        return False


def python_env() -> dict[str, str]:
    """Environment for ``python -m lockwright`` children (the checkout importable)."""
    # Children run `python -m lockwright` from the state dir: make the checkout importable
    # even when the project is not pip-installed.
    path = os.environ.get("PYTHONPATH", "")
    return {"PYTHONPATH": f"{PROJECT_ROOT}{os.pathsep}{path}" if path else str(PROJECT_ROOT)}
