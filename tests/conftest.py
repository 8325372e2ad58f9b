"""Session-wide fixtures: each real server starts once per test session (per xdist worker)."""

import os
import tempfile

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


def pytest_configure(config: "pytest.Config") -> None:
    """The controller picks where test stacks' devclusters record request shapes
    (tests/fidelity/recorded.py); xdist workers inherit it through the environment."""
    if not hasattr(config, "workerinput") and ENV_DIR not in os.environ:
        os.environ[ENV_DIR] = tempfile.mkdtemp(prefix="lockwright-shapes-")


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
