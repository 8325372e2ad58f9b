"""Which revision runs, the switch deadline and who approved: lockwright.upgrade.switch."""

from __future__ import annotations

from typing import Any

import pytest

from lockwright.upgrade.switch import (
    AUTOMATIC,
    MANUAL,
    Situation,
    Step,
    Writer,
    annotation_writer,
    desired_state_writer,
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


ACCEPT = "lockwright.io/accept-plan"


def _managed(manager: str, time: str, **fields: Any) -> dict[str, Any]:
    """One managedFields entry of ``manager`` holding ``fields`` (as fieldsV1)."""
    return {"manager": manager, "operation": "Update", "time": time, "fieldsV1": fields}


def _with(*entries: dict[str, Any]) -> dict[str, Any]:
    return {"metadata": {"name": "x", "managedFields": list(entries)}}


STATE = {"f:spec": {"f:desiredState": {}}}
PLAN = {"f:metadata": {"f:annotations": {f"f:{ACCEPT}": {}, "f:other": {}}}}
AT_1, AT_2 = "2026-01-01T10:00:00Z", "2026-01-01T11:00:00Z"


@pytest.mark.parametrize(("obj", "writer"), [
    (_with(_managed("kubectl-edit", AT_1, **STATE)), ("kubectl-edit", AT_1)),
    (_with(_managed("lockwright", AT_1, **STATE), _managed("kubectl-patch", AT_2, **STATE)),
     ("kubectl-patch", AT_2)),  # the latest writer wins, whatever the order
    (_with(_managed("kubectl-patch", AT_2, **STATE), _managed("lockwright", AT_1, **STATE)),
     ("kubectl-patch", AT_2)),
    (_with(_managed("kubectl", AT_2, **{"f:spec": {"f:revision": {}}})), ("", "")),
    (_with(_managed("kubectl", AT_2, **PLAN)), ("", "")),  # another field entirely
    (_with({"manager": "old", "time": AT_1}), ("", "")),  # no fieldsV1
    ({"metadata": {}}, ("", "")),
    ({}, ("", "")),
])
def test_desired_state_writer(obj: dict[str, Any], writer: Writer) -> None:
    assert desired_state_writer(obj) == writer


@pytest.mark.parametrize(("obj", "writer"), [
    (_with(_managed("kubectl-annotate", AT_1, **PLAN)), ("kubectl-annotate", AT_1)),
    (_with(_managed("kubectl-annotate", AT_1, **PLAN),
           _managed("argocd", AT_2, **{"f:metadata": {"f:annotations": {"f:other": {}}}})),
     ("kubectl-annotate", AT_1)),  # a later writer of another annotation does not count
    (_with(_managed("kubectl", AT_1, **STATE)), ("", "")),
    (_with(_managed("kubectl", AT_1, **{"f:metadata": {"f:labels": {f"f:{ACCEPT}": {}}}})),
     ("", "")),  # a label of the same name is not the annotation
    (_with(_managed("kubectl", AT_1, **{"f:metadata": {"f:annotations": None}})), ("", "")),
])
def test_annotation_writer(obj: dict[str, Any], writer: Writer) -> None:
    assert annotation_writer(obj, ACCEPT) == writer

