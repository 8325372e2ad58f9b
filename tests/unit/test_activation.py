"""Which revision runs: the pure decision behind upgrades (lockwright.upgrade.activation)."""

from __future__ import annotations

import pytest

from lockwright.upgrade.activation import (
    AUTOMATIC,
    MANUAL,
    Situation,
    Step,
    next_step,
    switch_deadline,
)


@pytest.mark.parametrize("situation, step", [
    # First install: nothing runs yet, so nothing to protect.
    (Situation(AUTOMATIC, current="p-v1"), Step.INSTALL),
    (Situation(MANUAL, current="p-v1"), Step.PREPARE_AND_WAIT),
    (Situation(MANUAL, current="p-v1", approved=True), Step.INSTALL),
    # Steady state: the current revision is the active one.
    (Situation(AUTOMATIC, current="p-v1", active="p-v1"), Step.KEEP),
    (Situation(MANUAL, current="p-v1", active="p-v1"), Step.KEEP),
    # Upgrade (or rollback to an older tag): prepare while v1 runs, then switch.
    (Situation(AUTOMATIC, current="p-v2", active="p-v1"), Step.PREPARE_AND_SWITCH),
    (Situation(MANUAL, current="p-v2", active="p-v1"), Step.PREPARE_AND_WAIT),
    (Situation(MANUAL, current="p-v2", active="p-v1", approved=True),
     Step.PREPARE_AND_SWITCH),
    # A reverted switch is held until the spec changes (a new generation) ...
    (Situation(AUTOMATIC, current="p-v2", active="p-v1", generation=2, reverted="p-v2",
               reverted_generation=2), Step.HOLD),
    (Situation(MANUAL, current="p-v2", active="p-v1", approved=True, generation=2,
               reverted="p-v2", reverted_generation=2), Step.HOLD),
    # ... then tried again.
    (Situation(AUTOMATIC, current="p-v2", active="p-v1", generation=3, reverted="p-v2",
               reverted_generation=2), Step.PREPARE_AND_SWITCH),
    # A revert of another revision does not hold this one.
    (Situation(AUTOMATIC, current="p-v3", active="p-v1", generation=3, reverted="p-v2",
               reverted_generation=3), Step.PREPARE_AND_SWITCH),
    # Once it is active again (rolled back by hand), nothing is held.
    (Situation(AUTOMATIC, current="p-v2", active="p-v2", generation=2, reverted="p-v2",
               reverted_generation=2), Step.KEEP),
])
def test_next_step(situation: Situation, step: Step) -> None:
    assert next_step(situation) is step


@pytest.mark.parametrize(("annotation", "seconds"), [
    ("90", 90.0),
    ("90s", 90.0),
    ("1.5", 1.5),
    ("", 0.0),  # unset: the worker's default
    ("-5", 0.0),
    ("5m", 0.0),  # only seconds are understood
    ("soon", 0.0),
    ("90ss", 0.0),
])
def test_switch_deadline(annotation: str, seconds: float) -> None:
    assert switch_deadline(annotation) == seconds

