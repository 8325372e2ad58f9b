"""Session-wide fixtures: each real server starts once per test session (per xdist worker)."""

import compileall
import os
import tempfile
from pathlib import Path

import pytest

from tests.fidelity.recorded import ENV_DIR, finish_session
from tests.fixtures import prebuild

BUILDER = pytest.StashKey["prebuild.Builder"]()

pytest_plugins = [
    "tests.fixtures.devcluster",
    "tests.fixtures.docker",
    "tests.fixtures.registry",
    "tests.fixtures.temporal",
    "tests.fixtures.stack",
    "tests.fixtures.helm",
    "tests.fixtures.groups",
    "tests.fixtures.tiers",
    "tests.fixtures.timeline",
]


ROOT = Path(__file__).resolve().parents[1]


def pytest_configure(config: "pytest.Config") -> None:
    """The controller picks where test stacks' devclusters record request shapes
    (tests/fidelity/recorded.py); xdist workers inherit it through the environment. It
    also compiles the processes' code once (:func:`compile_bytecode`)."""
    if hasattr(config, "workerinput"):
        return
    if ENV_DIR not in os.environ:
        os.environ[ENV_DIR] = tempfile.mkdtemp(prefix="lockwright-shapes-")
    compile_bytecode()


def compile_bytecode() -> None:
    """Write the bytecode of lockwright and benchmarks/ once, for every process the run starts.

    Where ``PYTHONDONTWRITEBYTECODE`` is set (as in these machines' environment), no
    process writes a ``.pyc``, so each worker, watcher, devcluster, CLI and benchmark the
    tests start compiled lockwright's 256 modules again: 3.6 CPU-seconds to import the
    worker, the CLI and devcluster, against 2.9 from bytecode (measured 2026-11-30).
    Up-to-date files are skipped (a second run takes a tenth of a second).
    """
    for folder in ("lockwright", "benchmarks"):
        compileall.compile_dir(ROOT / folder, quiet=2)


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config: "pytest.Config", items: list["pytest.Item"]) -> None:
    """Tests needing a cold build run last, and the builds start now in the background
    (tests/fixtures/prebuild.py); after pytest's own reordering, which groups the stacks."""
    if not prebuild.enabled(config):
        return
    prebuild.reorder(items)
    from tests.fixtures.timeline import TIMELINE  # a plugin: imported once pytest loaded it
    builder = prebuild.Builder(prebuild.needed(items), TIMELINE.builds)
    config.stash[BUILDER] = builder
    builder.start()


def pytest_sessionfinish(session: "pytest.Session", exitstatus: int) -> None:
    """Stop a background build still running; add the request shapes the stacks sent and
    the committed snapshot lacks (or, with LOCKWRIGHT_FIDELITY_STRICT=1, fail the run on
    them)."""
    builder = session.config.stash.get(BUILDER, None)
    if builder is not None:
        builder.stop()
    if hasattr(session.config, "workerinput"):
        return
    fails, lines = finish_session()
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    if lines and reporter is not None:
        reporter.write_line("\n".join(lines), red=fails, yellow=not fails)
    if fails:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED
