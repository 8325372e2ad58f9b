"""A full list's signals are paced (docs/design.md, "Resync, paced"); changes never wait,
nor do packages whose spec no pass has read yet."""

from __future__ import annotations

import asyncio
from dataclasses import replace
from typing import Any

import pytest

from lockwright.settings import Settings
from lockwright.worker.targets import ACTIVATION, PROTECTION, RESOURCES, Index, Target
from lockwright.worker.watcher import Watcher


def make(rate: float = 10.0) -> Watcher:
    return Watcher(Settings(resync_rate=rate), client=None, resources=())  # never connects


def provider(name: str, reason: str = "resync") -> Target:
    return Target("Provider", name, reason)


def fast(w: Watcher) -> list[str]:
    return list(w._pending)


def test_a_full_list_is_held_and_a_change_is_not() -> None:
    w = make()
    a, b, c = provider("a"), provider("b"), provider("c", "spec changed")
    w._queue_targets([a, b], paced=True)
    w._queue_targets([c])
    assert (list(w._held), fast(w)) == ([a.workflow_id, b.workflow_id], [c.workflow_id])


def test_a_change_to_a_held_package_signals_it_at_once_and_only_once() -> None:
    w = make()
    a = provider("a")
    w._queue_targets([a], paced=True)
    w._queue_targets([provider("a", "spec changed")])
    assert (list(w._held), fast(w)) == ([], [a.workflow_id])
    assert w._pending[a.workflow_id].reason == "spec changed"
    assert w._held_queue.qsize() == 1  # left behind: the pacer skips it


def test_a_list_naming_a_package_already_queued_joins_it() -> None:
    w = make()
    a = provider("a", "spec changed")
    w._queue_targets([a])
    w._queue_targets([provider("a", "resync")], paced=True)
    assert (list(w._held), fast(w), w._queue.qsize()) == ([], [a.workflow_id], 1)


@pytest.mark.parametrize(("first", "then", "deferrable"), [
    (False, True, False),  # a signal not to defer, queued: a deferrable one does not defer it
    (True, False, False),
    (True, True, True),
])
def test_a_queued_activation_signal_is_deferrable_only_if_every_one_merged_into_it_is(
        first: bool, then: bool, deferrable: bool) -> None:
    """Queued signals to one workflow are one signal; a policy's change followed by a CRD's
    write must still start a pass at once (docs/design.md, "Activation passes deferred
    while a policy waits")."""
    w = make()
    w._queue_targets([Target(ACTIVATION, "q", "one", deferrable=first)])
    w._queue_targets([Target(ACTIVATION, "q", "two", deferrable=then)])
    assert [(t.reason, t.deferrable) for t in w._pending.values()] == [("two", deferrable)]


@pytest.mark.parametrize(("rate", "target"), [
    (0.0, provider("a")),                             # no limit: nothing is held
    (10.0, Target(PROTECTION, "lockwright", "listed")),  # one workflow: nothing to spread
])
def test_nothing_is_held_without_a_rate_or_for_a_singleton(rate: float, target: Target) -> None:
    w = make(rate)
    w._queue_targets([target], paced=True)
    assert (list(w._held), fast(w)) == ([], [target.workflow_id])


async def test_the_pacer_lets_one_out_per_tick_in_order_skipping_what_went_at_once(
        monkeypatch: pytest.MonkeyPatch) -> None:
    w = make(rate=4.0)
    ticks: list[float] = []
    released: list[list[str]] = []

    async def tick(seconds: float, *_: Any) -> None:
        ticks.append(seconds)
        released.append(fast(w))
        if len(ticks) == 2:
            raise asyncio.CancelledError

    monkeypatch.setattr(asyncio, "sleep", tick)  # the pacer's ticks, counted not waited
    a, b, c = provider("a"), provider("b"), provider("c")
    w._queue_targets([a, b, c], paced=True)
    w._queue_targets([provider("b", "spec changed")])  # b goes now, not in its turn
    with pytest.raises(asyncio.CancelledError):
        await w._pacer()
    assert ticks == [0.25, 0.25]
    assert released == [[b.workflow_id, a.workflow_id],
                        [b.workflow_id, a.workflow_id, c.workflow_id]]
    assert w.stats["paced"] == 2


def package(generation: int, *observed: int) -> dict[str, Any]:
    """A Provider at ``generation`` whose status conditions were stamped with ``observed``."""
    return {"metadata": {"name": "p", "generation": generation},
            "spec": {"package": "registry.example.org/p:v1"},
            "status": {"conditions": [{"type": t, "status": "True", "observedGeneration": g}
                                      for t, g in zip(("Installed", "Healthy"), observed)]}}


@pytest.mark.parametrize(("obj", "unanswered"), [
    ({"metadata": {"name": "p", "generation": 1}, "spec": {}}, True),  # new: no status yet
    (package(3, 2, 2), True),    # edited while no watcher ran: no pass has read generation 3
    (package(3, 2, 3), False),   # a pass stamped generation 3 (installing)
    (package(3, 3, 3), False),   # settled, or failing at generation 3: the resync may wait
])
def test_a_package_is_unanswered_until_a_status_condition_carries_its_generation(
        obj: dict[str, Any], unanswered: bool) -> None:
    res = next(r for r in RESOURCES if r.kind == "Provider")
    [target, *_] = Index().on_sync(res, [obj], signal_all=True, why="start")
    assert target.unanswered is unanswered


def test_a_full_list_signals_unanswered_packages_at_once_and_paces_the_rest() -> None:
    """A watcher started after a gap: what changed meanwhile does not wait behind every
    settled package's resync signal."""
    w = make()
    settled, edited = provider("settled"), replace(provider("edited"), unanswered=True)
    w._queue_targets([settled, edited], paced=True)
    assert (list(w._held), fast(w)) == ([settled.workflow_id], [edited.workflow_id])
