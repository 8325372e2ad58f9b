"""``lockwright trace --watch`` on a terminal (issue 31), against the session's stack.

``trace provider/NAME --watch --exit-healthy`` runs in a pseudo-terminal (Python's ``pty``,
160 columns) on a Provider waiting for Manual approval. The test reads the screen as a
terminal would get it: a first drawing shows the package not Installed; the operator then
switches the package to Automatic with kubectl, the watcher and the worker activate the
revision, the screen is cleared and drawn again with the package Installed and Healthy, and
the command exits 0 on its own. ``-o dot`` of the same package is drawn by ``dot -Tsvg``.
"""

from __future__ import annotations

import fcntl
import os
import re
import select
import shutil
import struct
import subprocess
import sys
import termios
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from lockwright.commands.trace import CLEAR
from tests.e2e.test_commands import lockwright, output
from tests.e2e.test_failures import provider_dir, unique_group
from tests.fixtures.stack import ROOT, Stack
from tests.helpers import unique, wait_for

ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


class Terminal:
    """A command on a pseudo-terminal, and everything it wrote to the screen so far."""

    def __init__(self, args: list[str], env: dict[str, str], columns: int = 160) -> None:
        self.master, slave = os.openpty()
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 50, columns, 0, 0))
        # COLUMNS wins over the terminal's size (pytest-xdist's workers may carry one).
        env = {**env, "TERM": "xterm", "COLUMNS": str(columns), "LINES": "50"}
        self.process = subprocess.Popen(args, env=env, cwd=ROOT,
                                        stdin=slave, stdout=slave, stderr=slave)
        os.close(slave)
        self.screen = ""

    def read(self, until: Callable[[], bool], timeout: float, what: str) -> None:
        """Read what the command writes until ``until()`` holds (or it exits)."""
        deadline = time.monotonic() + timeout
        while not until():
            left = deadline - time.monotonic()
            assert left > 0, f"timed out waiting for {what}; screen so far:\n{self.text}"
            ready, _, _ = select.select([self.master], [], [], min(left, 1.0))
            if ready:
                try:
                    chunk = os.read(self.master, 65536)
                except OSError:  # the command exited and its side of the pty closed
                    chunk = b""
                if not chunk and self.process.poll() is not None:
                    assert until(), f"exited before {what}; screen:\n{self.text}"
                    return
                self.screen += chunk.decode("utf-8", "replace")

    @property
    def text(self) -> str:
        return ANSI.sub("", self.screen)

    @property
    def frames(self) -> list[str]:
        """Each drawing: what followed each clear of the screen, colours stripped."""
        return [ANSI.sub("", f) for f in self.screen.split(CLEAR)[1:]]

    def close(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait(timeout=10)
        os.close(self.master)


def row(frame: str, name: str) -> list[str]:
    """The cells of the package's row in a drawing ([] when it has none yet)."""
    for line in frame.splitlines():
        if line.strip().startswith(f"Provider/{name}"):
            return line.split()
    return []


def test_trace_watch_redraws_as_the_provider_becomes_healthy_and_exits(
        stack: Stack, tmp_path: Path) -> None:
    name = unique("watched")
    ref = stack.push(provider_dir(tmp_path / "p", unique_group()))
    stack.apply_package("Provider", name, ref, revisionActivationPolicy="Manual")
    wait_for(lambda: stack.revisions("Provider", name), timeout=60, interval=0.2,
             what="the Manual revision")
    term = Terminal([sys.executable, "-m", "lockwright", "trace", f"provider/{name}",
                     "--watch", "--exit-healthy"], stack.env)
    try:
        term.read(lambda: any(row(f, name) for f in term.frames), 60, "the first drawing")
        first = next(row(f, name) for f in term.frames if row(f, name))
        assert first[2:4] != ["True", "True"], term.text  # INSTALLED, HEALTHY
        assert term.process.poll() is None, term.text  # still watching

        stack.kubectl("patch", f"providers.pkg.crossplane.io/{name}", "--type", "merge",
                      "-p", '{"spec":{"revisionActivationPolicy":"Automatic"}}')
        term.read(lambda: term.process.poll() is not None, 120, "the exit once healthy")
        assert term.process.wait(timeout=10) == 0, term.text
    finally:
        term.close()
    last = row(term.frames[-1], name)
    assert last[2:4] == ["True", "True"], term.frames[-1]  # INSTALLED, HEALTHY
    assert len(term.frames) >= 2 and term.frames[0] != term.frames[-1], term.text

    dot = lockwright(stack, "trace", f"provider/{name}", "-o", "dot")
    assert dot.returncode == 0 and dot.stdout.startswith("graph  {"), output(dot)
    if shutil.which("dot") is None:
        pytest.skip("graphviz (dot) is not installed: scripts/setup.sh installs it")
    drawn = subprocess.run(["dot", "-Tsvg"], input=dot.stdout, capture_output=True, text=True,
                           timeout=30, check=False)
    assert drawn.returncode == 0 and "<svg" in drawn.stdout, drawn.stderr
