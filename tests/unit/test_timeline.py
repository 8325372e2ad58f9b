"""The end-of-run timeline (tests/fixtures/timeline.py): tiers read from node ids, spans."""

from types import SimpleNamespace

import pytest

from tests.fixtures.timeline import Span, Timeline, tier


@pytest.mark.parametrize(("nodeid", "expected"), [
    ("tests/e2e/test_install.py::test_x[kube-background]", "e2e[kube]"),
    ("tests/e2e/test_install.py::test_x[devcluster]", "e2e[devcluster]"),
    ("tests/e2e/test_resilience.py::test_worker_killed", "e2e"),
    ("tests/integration/test_workflows.py::test_a[provider]", "integration"),
    ("tests/unit/test_lock.py::test_b[kubeconfig]", "unit"),
    ("conftest.py::x", "conftest.py::x"),
])
def test_tier_is_the_folder_and_an_e2e_test_s_cluster(nodeid: str, expected: str) -> None:
    assert tier(nodeid) == expected


def test_a_tier_spans_its_first_start_to_its_last_end_and_counts_calls() -> None:
    line = Timeline(started=1000.0)
    for when, start, stop in [("setup", 1060.0, 1066.0), ("call", 1066.0, 1120.0),
                              ("teardown", 1120.0, 1180.0)]:
        line.report(SimpleNamespace(nodeid="tests/unit/test_a.py::t", when=when,  # type: ignore[arg-type]
                                    start=start, stop=stop))
    line.builds.append(("build-helm.sh", 1000.0, 1600.0))
    assert line.tiers == {"unit": Span(tests=1, seconds=120.0, first=1060.0, last=1180.0)}
    rows = line.lines()[1:]
    assert rows[0].split() == ["unit", "1", "tests", "2.0", "min", "of", "test", "time,",
                               "from", "1.0", "to", "3.0"]
    assert rows[1].split() == ["build-helm.sh", "built", "from", "0.0", "to", "10.0"]


def test_the_tests_running_at_a_moment_are_those_from_setup_to_teardown_around_it() -> None:
    """What a refusal found at a stack's end names (tests/fixtures/stack.py ``explain``)."""
    line = Timeline(started=1000.0)
    for nodeid, when, start, stop in [("a", "setup", 1000.0, 1001.0),
                                      ("a", "teardown", 1010.0, 1012.0),
                                      ("b", "call", 1011.0, 1020.0)]:
        line.report(SimpleNamespace(nodeid=nodeid, when=when,  # type: ignore[arg-type]
                                    start=start, stop=stop))
    assert line.running_at(1005.0) == ["a"]
    assert line.running_at(1011.5) == ["a", "b"]
    assert line.running_at(1030.0) == []
