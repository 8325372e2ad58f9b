"""The kube tier's selection (tests/fixtures/tiers.py): what runs on the real control plane."""

from __future__ import annotations

import pytest

from tests.fixtures import tiers


@pytest.mark.parametrize(("kind", "shows", "everything", "runs"), [
    (None, None, False, True),  # not an end-to-end test on a cluster
    ("devcluster", None, False, True),  # devcluster runs everything
    ("kube", None, False, False),  # kube only what it shows
    ("kube", "the garbage collector", False, True),
    ("kube", "  ", False, False),  # a blank reason is none
    ("kube", None, True, True),  # LOCKWRIGHT_KUBE_TIER=all
])
def test_runs(kind: str | None, shows: str | None, everything: bool, runs: bool) -> None:
    assert tiers.runs(kind, shows, everything) is runs


@pytest.mark.parametrize(("value", "everything"), [(None, False), ("", False),
                                                   ("shows", False), ("all", True)])
def test_the_setting(monkeypatch: pytest.MonkeyPatch, value: str | None,
                     everything: bool) -> None:
    if value is None:
        monkeypatch.delenv(tiers.ENV, raising=False)
    else:
        monkeypatch.setenv(tiers.ENV, value)
    assert tiers.wants_everything() is everything


def test_an_unknown_setting_names_the_choices(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(tiers.ENV, "most")
    with pytest.raises(pytest.UsageError, match="LOCKWRIGHT_KUBE_TIER='most'.*'all'.*'shows'"):
        tiers.wants_everything()


class Item:
    """What the tier reads of a collected test: its node id and closest mark."""

    nodeid = "tests/e2e/test_x.py::test_y[kube]"

    def __init__(self, mark: pytest.Mark | None) -> None:
        self.mark = mark

    def get_closest_marker(self, name: str) -> pytest.Mark | None:
        return self.mark if name == tiers.MARK else None


@pytest.mark.parametrize("mark", [pytest.mark.kube_shows.mark,
                                  pytest.mark.kube_shows("").mark,
                                  pytest.mark.kube_shows("a", "b").mark])
def test_a_mark_without_one_reason_is_refused(mark: pytest.Mark) -> None:
    with pytest.raises(pytest.UsageError, match="test_x.py::test_y.*takes one reason"):
        tiers._shows(Item(mark))  # type: ignore[arg-type]


def test_the_reason_is_read() -> None:
    marked = Item(pytest.mark.kube_shows("the GC").mark)
    assert tiers._shows(marked) == "the GC"  # type: ignore[arg-type]
    assert tiers._shows(Item(None)) is None  # type: ignore[arg-type]
