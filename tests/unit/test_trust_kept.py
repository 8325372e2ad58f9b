"""What a worker keeps of a preparation for its switch (lockwright.activities.trust.Kept):
taken once, only over the same basis, the oldest dropped past the bound."""

from __future__ import annotations

import pytest

from lockwright.activities.trust import Kept

KEY = ("Provider", "nop", "nop-2", "sha256:a")


@pytest.mark.parametrize(("over", "found"), [
    (("rev", "ca", b"basis", ("p1",)), "checks"),  # the same basis: taken
    (("rev", "ca", b"basis", ("p2",)), None),  # other fingerprints (another preparation)
    (("rev", "ca", b"lock moved", ("p1",)), None),  # the Lock or the package changed
    (("rev", "new ca", b"basis", ("p1",)), None),  # the webhook target changed
])
def test_a_switch_takes_its_preparation_only_over_the_same_basis(
        over: tuple[object, ...], found: str | None) -> None:
    kept: Kept[str] = Kept()
    kept.keep(KEY, ("rev", "ca", b"basis", ("p1",)), "checks")
    assert kept.take(KEY, over) == found
    assert kept.take(KEY, ("rev", "ca", b"basis", ("p1",))) is None  # taken, or dropped


def test_another_revision_finds_nothing() -> None:
    kept: Kept[str] = Kept()
    kept.keep(KEY, "over", "checks")
    assert kept.take(("Provider", "nop", "nop-3", "sha256:b"), "over") is None
    assert kept.take(KEY, "over") == "checks"


def test_a_preparation_again_replaces_the_one_before() -> None:
    kept: Kept[str] = Kept()
    kept.keep(KEY, "first", "old")
    kept.keep(KEY, "second", "new")
    assert kept.take(KEY, "second") == "new"


def test_only_the_last_few_are_kept() -> None:
    kept: Kept[int] = Kept(size=2)
    for i in range(3):
        kept.keep(i, "over", i)
    assert [kept.take(i, "over") for i in range(3)] == [None, 1, 2]
