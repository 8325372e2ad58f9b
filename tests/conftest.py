"""Session-wide fixtures: each real server starts once per test session (per xdist worker)."""

pytest_plugins = [
    "tests.fixtures.devcluster",
    "tests.fixtures.docker",
    "tests.fixtures.registry",
    "tests.fixtures.temporal",
    "tests.fixtures.stack",
    "tests.fixtures.helm",
]
