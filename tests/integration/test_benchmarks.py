"""Every script in benchmarks/ runs: a smoke run at its smallest sizes (issue 33).

A benchmark that nothing runs rots (``upgrade.py --quick`` died on an argument
``install.py``'s shared ``on_stack`` had started to read, and nobody noticed). Each script
runs here as a user runs it, as a process, with its smallest sizes, on devcluster where it
starts a stack. No target is asserted (the machine is shared and the sizes are not the
benchmark's): the run must end without a traceback, with exit 0 (targets met) or 1 (a
target missed), and print its table, its numbers beside a floor where it has one.

Cost, measured on the shared 2-core machine (load average 12-20, so an idle CI machine
should do better): the stackless scripts 12-48 s each (devcluster, index_build, resolve,
xpkg, plan); upgrade 40 s, install 33 s, api_sum 55 s, health 58 s (two stacks),
activation 69 s (four stacks), faults 120 s (the Temporal cluster, baseline only): about
9 minutes of test time. ``faults``, and ``install --temporal dev,cluster`` (52 s, both
Temporals in one run), run where the Temporal cluster tier is selected
(``LOCKWRIGHT_TEST_TEMPORAL``), as tests/e2e/test_faults.py does: elsewhere they would
build Temporal Server and PostgreSQL's cluster for a smoke run.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.fixtures.temporal import temporal_kinds

ROOT = Path(__file__).resolve().parents[2]
BENCHMARKS = ROOT / "benchmarks"
#: Modules of benchmarks/ that are not scripts.
LIBRARIES = {"__init__", "common", "crdgen"}
TABLE = re.compile(r"^(measure|step)\s.*\bfloor\b", re.MULTILINE)
SMALL = "--crds", "20", "--mb", "1"
RUNS: dict[str, tuple[tuple[str, ...], re.Pattern[str]]] = {
    "activation": ((*SMALL, "--activate", "2", "--control-plane", "devcluster"), TABLE),
    "api_sum": ((*SMALL, "--rounds", "1", "--control-plane", "devcluster"), TABLE),
    "devcluster": (("--objects", "50", "--crds", "20"), TABLE),
    # The baseline only (no kill): one kill of the worker made it 330 s.
    "faults": (("--kills", "0", "--control-plane", "devcluster"),
               re.compile(r"^\| component \| kills \|", re.MULTILINE)),
    "health": (("--installs", "1"), TABLE),
    "index_build": (("--providers", "1", "--versions", "2", *SMALL),
                    re.compile(r"^ratio: .*x the floor", re.MULTILINE)),
    "install": (("--installs", "1", "--big-crds", "20", "--big-mb", "1", "--big-runs", "1",
                 "--concurrent", "2"), TABLE),
    "plan": (("--crds", "20", "--total-mb", "1", "--resources", "50", "--repeat", "1"),
             re.compile(r"^measure\s.*\bfloor\b", re.MULTILINE)),
    "resolve": (("--runs", "1", "--packages", "10", "--versions", "20"), TABLE),
    "upgrade": (("--rounds", "1", "--big-crds", "20", "--big-mb", "1", "--big-runs", "1"),
                TABLE),
    "xpkg": (("--crds", "20", "--total-mb", "1", "--repeat", "1"), TABLE),
}


def test_every_benchmark_script_has_a_smoke_run() -> None:
    """A new script in benchmarks/ gets a smoke run here, or the suite says so."""
    scripts = {p.stem for p in BENCHMARKS.glob("*.py")} - LIBRARIES
    assert scripts == set(RUNS)


NEEDS_TEMPORAL_CLUSTER = {"faults"}


@pytest.mark.parametrize("script", sorted(RUNS))
def test_benchmark_runs_and_prints_its_table(script: str) -> None:
    """The script ends cleanly (0, or 1 for a missed target) and prints its table."""
    if script in NEEDS_TEMPORAL_CLUSTER and "cluster" not in temporal_kinds():
        pytest.skip("the Temporal cluster is not selected (LOCKWRIGHT_TEST_TEMPORAL)")
    args, table = RUNS[script]
    done = subprocess.run([sys.executable, str(BENCHMARKS / f"{script}.py"), *args],
                          cwd=ROOT, capture_output=True, text=True, timeout=900, check=False)
    output = done.stdout + done.stderr
    assert "Traceback" not in output, output[-4000:]
    assert done.returncode in (0, 1), output[-4000:]
    assert table.search(done.stdout), done.stdout[-4000:]


def test_the_install_benchmark_runs_on_the_temporal_cluster_too() -> None:
    """``install.py --temporal dev,cluster``: a table for each Temporal, from one run."""
    if "cluster" not in temporal_kinds():
        pytest.skip("the Temporal cluster is not selected (LOCKWRIGHT_TEST_TEMPORAL)")
    args, table = RUNS["install"]
    done = subprocess.run([sys.executable, str(BENCHMARKS / "install.py"), *args,
                           "--temporal", "dev,cluster"],
                          cwd=ROOT, capture_output=True, text=True, timeout=900, check=False)
    output = done.stdout + done.stderr
    assert "Traceback" not in output and done.returncode in (0, 1), output[-4000:]
    assert len(table.findall(done.stdout)) == 2, done.stdout[-4000:]
    assert "on devcluster, Temporal dev server" in done.stdout
    assert "on devcluster, Temporal cluster (PostgreSQL, temporal-server)" in done.stdout
