"""Session-wide fixtures: each real server starts once per test session (per xdist worker)."""

import os
import tempfile

import pytest

from tests.fidelity.recorded import ENV_DIR, finish_session

pytest_plugins = [
    "tests.fixtures.devcluster",
    "tests.fixtures.docker",
    "tests.fixtures.registry",
    "tests.fixtures.temporal",
    "tests.fixtures.stack",
    "tests.fixtures.helm",
]


def pytest_configure(config: "pytest.Config") -> None:
    """The controller picks where test stacks' devclusters record request shapes
    (tests/fidelity/recorded.py); xdist workers inherit it through the environment."""
    if not hasattr(config, "workerinput") and ENV_DIR not in os.environ:
        os.environ[ENV_DIR] = tempfile.mkdtemp(prefix="lockwright-shapes-")


def pytest_sessionfinish(session: "pytest.Session", exitstatus: int) -> None:
    """Fail the run when its stacks sent a request shape the committed snapshot lacks."""
    if hasattr(session.config, "workerinput"):
        return
    problems = finish_session()
    if problems:
        reporter = session.config.pluginmanager.get_plugin("terminalreporter")
        if reporter is not None:
            reporter.write_line("\n".join(problems), red=True)
        session.exitstatus = pytest.ExitCode.TESTS_FAILED
