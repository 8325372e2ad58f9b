"""Replay the committed histories against today's workflow code.

One history per workflow shape, recorded from the fake-activity runs in
``tests/integration/test_workflows.py`` (``LOCKWRIGHT_RECORD_HISTORIES=1``). A change to the
order or kind of commands a workflow issues makes replay fail here; gate such a change with
``workflow.patched()`` or re-record on purpose. The last test proves the guard bites.
"""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest
from temporalio import workflow
from temporalio.client import WorkflowHistory
from temporalio.worker import Replayer

from lockwright import contracts as c
from tests.histories import (
    CHILD_STARTED,
    RUN_LOCAL,
    RUN_QUEUED,
    scheduled_locally,
    step_names,
    steps,
    steps_after_clean_up,
)
from lockwright.workflows import ALL_WORKFLOWS, InstallRevision, PackageWorkflow

HISTORIES = Path(__file__).parent / "histories"
SHAPES = {
    "package_install", "package_manual_activation", "package_permanent_error",
    "package_transient_retry", "package_continue_as_new", "package_deleted",
    "revision_install_provider", "revision_install_unhealthy", "revision_install_failed",
    # Recorded before PATCH_KEEP_LAST_OUTCOME: runs started then must still replay.
    "package_permanent_error_unpatched", "package_transient_retry_unpatched",
}
# Recorded before PATCH_LOCAL_STEPS, every step on the task queue: they must still replay.
QUEUED = {f"{shape}_queued" for shape in SHAPES if not shape.endswith("_unpatched")}
SHAPES |= QUEUED
# Deletion (docs/design.md invariant 8): a package being deleted is only cleaned up; an install
# when the deletion begins is cancelled (PATCH_DELETION_STOPS_INSTALL).
SHAPES |= {"package_deleting", "package_deleted_during_install"}
# Upgrades prepare first and switch after (PATCH_PREPARE_THEN_SWITCH): finished, reverted
# by the health gate, and refused while preparing.
SHAPES |= {"package_upgrade", "package_upgrade_reverted", "package_upgrade_prepare_failed",
           "package_manual_upgrade"}
# Dependencies (tests/integration/test_dependency_workflows.py): a revision stopping after
# the Lock until its dependencies are met (PATCH_DEPENDENCY_GATE), and the resolver.
SHAPES |= {"revision_dependencies_unmet", "revision_switch_awaits_dependencies",
           "resolve_create_and_nudge", "resolve_unresolved_retry"}
# Upgrade plans (tests/integration/test_plan_workflows.py): a prepared revision planned
# (PATCH_UPGRADE_PLAN), a breaking plan refused, then accepted by annotation.
SHAPES |= {"package_upgrade_plan_accepted", "revision_planned", "plan_candidate"}
# The upgrade gate (PATCH_EVIDENCE_GATE): a breaking plan no resource is affected by
# switches with a Warning Event; one a resource is, or any under Strict, is held.
SHAPES |= {"package_upgrade_plan_unaffected", "package_upgrade_plan_strict"}
# Resuming an installed package installs it again (PATCH_RESUME_REINSTALLS).
SHAPES |= {"package_resumed"}
# A signal during the last clean-up starts another pass (PATCH_GONE_LOOKS_AGAIN).
SHAPES |= {"package_gone_looks_again"}
# Crossplane v2 (tests/integration/test_activation_workflows.py): the activation workflow's
# pass, and a safe-start revision installed at zero replicas (no health wait).
SHAPES |= {"activation_pass_and_nudge", "revision_awaiting_activation"}
# Provider deletion protection (tests/integration/test_protection_workflows.py).
SHAPES |= {"protection_pass"}
# Ids carry the task queue off the default one (workflows.ids.PATCH_TASK_QUEUE_IDS): a
# package's child on a queue of its own (tests/integration/test_task_queue_ids.py).
QUEUE_IDS = {"package_install_queue_ids"}
SHAPES |= QUEUE_IDS
# Recorded before PATCH_HEALTH_WATCH (the health wait polled): they must still replay.
SHAPES |= {"revision_install_provider_polled", "revision_install_unhealthy_polled"}
# Recorded before PATCH_ESTABLISH_TOGETHER (TLS, establish and RBAC one after another).
SHAPES |= {"revision_install_provider_in_turn"}
# Recorded before PATCH_LOCAL_HAND_OFF: a switch's hand-off (keep_runtime) was queued.
# Since, on a queue of its own, after PATCH_FIRST_REVISION_ACTIVE too.
SHAPES |= {"package_upgrade_queued_hand_off", "package_upgrade_reverted_queued_hand_off"}
QUEUE_IDS |= {"package_upgrade", "package_upgrade_reverted"}
# Recorded before PATCH_LOCAL_PLAN: a small package's plan was queued.
SHAPES |= {"revision_planned_queued_plan"}
# Since PATCH_FIRST_REVISION_ACTIVE the first revision is created Active, with no
# set_active_revision ("package_install" is from before; recorded on a queue of its own).
QUEUE_IDS |= {"package_install_first_active"}
SHAPES |= QUEUE_IDS
# Recorded before PATCH_PACKAGE_HEALTHY_BESIDE: an active install's healthy end wrote the
# revision's status only, and the parent the package's after the child had ended.
SHAPES |= {"revision_install_provider_revision_status_only",
           "revision_awaiting_activation_revision_status_only"}
# Recorded before PATCH_PREPARE_TOGETHER: a preparation checked the Lock, then dry-ran,
# then planned.
SHAPES |= {"revision_planned_in_turn"}
# Since PATCH_SWITCH_TAKES_PARSE a switch takes its preparation's parse; the switch of
# "revision_switch_awaits_dependencies" is from before (it fetched and parsed again).
SHAPES |= {"revision_switch_takes_parse"}
# Since PATCH_SWITCH_HEALTHY_BESIDE a switch that ends healthy writes the package's Healthy
# beside its revision's status, and its parent retires the old revision straight away, as a
# local step for a small package since PATCH_LOCAL_FINISH. "revision_switch_takes_parse"
# and "package_upgrade_queued_finish" are from before (the parent wrote the package's
# Healthy, then queued the finish).
SHAPES |= {"revision_switch_healthy_beside", "package_upgrade_queued_finish"}
QUEUE_IDS |= {"package_upgrade_queued_finish"}
# Recorded before PATCH_PREPARE_BESIDE_PARSE: a preparation parsed and checked Crossplane's
# version first, then checked the Lock, dry-ran and planned side by side.
SHAPES |= {"revision_planned_parse_first"}
# CRDs written while a policy waits defer the activation workflow's pass, until a policy's
# change starts it (ActivateDefinitions._wait_for_work).
SHAPES |= {"activation_deferred"}


def load(shape: str) -> WorkflowHistory:
    """A committed history by shape name."""
    return WorkflowHistory.from_json(f"replay-{shape}", (HISTORIES / f"{shape}.json").read_text())


def test_every_shape_has_a_history() -> None:
    """Each workflow shape has a committed history, and nothing stale lies around."""
    assert {p.stem for p in HISTORIES.glob("*.json")} == SHAPES


@pytest.mark.parametrize("shape", sorted(SHAPES))
async def test_history_replays(shape: str) -> None:
    """Today's code issues the same commands the recorded run did."""
    replayer = Replayer(workflows=ALL_WORKFLOWS)
    # The Replayer's workflows run on a task queue of its own (``replay-<build id>``): a
    # history whose ids carry its task queue replays as if recorded there. The others
    # replay off the default queue too, so they show runs from before the patch still do.
    queue = f"replay-{replayer.config().get('build_id')}"
    history = on_queue(shape, queue) if shape in QUEUE_IDS else load(shape)
    await replayer.replay_workflow(history)


def local_steps(history: WorkflowHistory) -> tuple[int, int]:
    """(local activity markers, activities scheduled on the task queue) in ``history``."""
    where = [w for _, w in steps(history)]
    return where.count(RUN_LOCAL), where.count(RUN_QUEUED)


def test_quick_steps_run_locally_since_the_patch() -> None:
    """A small install queues only the fetch; before the patch every step was queued."""
    # Ten local since PATCH_PACKAGE_HEALTHY_BESIDE: the package's Healthy beside the revision's.
    assert local_steps(load("revision_install_provider")) == (10, 1)
    assert local_steps(load("revision_install_provider_revision_status_only")) == (9, 1)
    local, queued = local_steps(load("revision_install_provider_queued"))
    assert (local, queued) == (0, 10)
    assert local_steps(load("package_install")) == (6, 0)
    # Since PATCH_FIRST_REVISION_ACTIVE: no set_active_revision.
    assert local_steps(load("package_install_first_active")) == (5, 0)


def steps_of(history: WorkflowHistory, name: str) -> tuple[int, int]:
    """(local, queued) runs of activity ``name`` in ``history``."""
    where = [w for n, w in steps(history) if n == name]
    return where.count(RUN_LOCAL), where.count(RUN_QUEUED)


@pytest.mark.parametrize(("shape", "runs"), [
    # Before: the first install's activation (local), the switch's hand-off, its finish.
    ("package_upgrade_queued_hand_off", (1, 2)),
    # Since PATCH_LOCAL_HAND_OFF and PATCH_FIRST_REVISION_ACTIVE (the first revision is
    # created Active): the hand-off local, the finish queued.
    ("package_upgrade_queued_finish", (1, 1)),
    # Since PATCH_LOCAL_FINISH: a small package's finish is local too.
    ("package_upgrade", (2, 0)),
    # And the revert's first step (v1 Active again, v2 keeping its runtime), then the
    # retirement of v2, which stays queued: a revert is no finish.
    ("package_upgrade_reverted_queued_hand_off", (1, 3)),
    ("package_upgrade_reverted", (2, 1))])
def test_a_hand_off_runs_locally_since_the_patch(shape: str, runs: tuple[int, int]) -> None:
    """A switch's hand-off, and a revert's first step, only flip desiredState: local
    steps since PATCH_LOCAL_HAND_OFF; so is a small package's finish since
    PATCH_LOCAL_FINISH; (local, queued) runs of set_active_revision."""
    assert steps_of(load(shape), c.SET_ACTIVE_REVISION) == runs


@pytest.mark.parametrize(("shape", "runs"), [("revision_planned", (1, 0)),
                                             ("revision_planned_in_turn", (1, 0)),
                                             ("revision_planned_queued_plan", (0, 1))])
def test_a_small_package_is_planned_locally_since_the_patch(shape: str,
                                                           runs: tuple[int, int]) -> None:
    """A small package's preparation plans it as a local step (PATCH_LOCAL_PLAN), as it
    parses and dry-runs it; (local, queued) runs of plan_revision."""
    assert steps_of(load(shape), c.PLAN_REVISION) == runs


@pytest.mark.parametrize(("shape", "first"), [
    ("package_upgrade", [c.SET_ACTIVE_REVISION]),
    ("package_upgrade_queued_finish", [c.WRITE_PACKAGE_STATUS, c.SET_ACTIVE_REVISION]),
    ("package_upgrade_queued_hand_off", [c.SET_ACTIVE_REVISION, c.WRITE_PACKAGE_STATUS])])
def test_the_package_is_healthy_before_its_old_revision_is_retired(shape: str,
                                                                  first: list[str]) -> None:
    """Once the switch's child is healthy the package says so, then v1 is retired
    (PATCH_HEALTHY_BEFORE_RETIRE); runs before retired it first. Since
    PATCH_SWITCH_HEALTHY_BESIDE the child says so (the test below), and the parent retires
    v1 straight away."""
    names = step_names(load(shape))
    after_switch = names[len(names) - names[::-1].index(CHILD_STARTED):]
    finish = [n for n in after_switch if n in (c.WRITE_PACKAGE_STATUS, c.SET_ACTIVE_REVISION)]
    assert finish[:2] == first, finish


@pytest.mark.parametrize(("shape", "last"), [
    ("revision_install_provider", [c.WRITE_REVISION_STATUS, c.WRITE_PACKAGE_STATUS]),
    ("revision_awaiting_activation", [c.WRITE_REVISION_STATUS, c.WRITE_PACKAGE_STATUS]),
    ("revision_install_provider_revision_status_only", [c.WRITE_REVISION_STATUS]),
    ("revision_awaiting_activation_revision_status_only", [c.WRITE_REVISION_STATUS]),
    ("revision_switch_healthy_beside", [c.WRITE_REVISION_STATUS, c.WRITE_PACKAGE_STATUS]),
    ("revision_switch_takes_parse", [c.WRITE_REVISION_STATUS])])
def test_an_active_install_says_healthy_on_the_package_beside_the_revision(
        shape: str, last: list[str]) -> None:
    """The steps after the runtime: since PATCH_PACKAGE_HEALTHY_BESIDE the child writes the
    package's Healthy beside the revision's status (healthy, or safe-start at zero), and
    a switch's since PATCH_SWITCH_HEALTHY_BESIDE; runs before wrote the revision's only and
    left the package to the parent."""
    names = step_names(load(shape))
    assert names[names.index(c.ENSURE_RUNTIME) + 1:] in (
        [c.CHECK_HEALTH, *last], last), names


@pytest.mark.parametrize(("shape", "first"), [
    ("revision_switch_takes_parse", c.TAKE_LOCK),
    ("revision_switch_awaits_dependencies", c.FETCH_PACKAGE)])
def test_a_switch_takes_its_preparations_parse(shape: str, first: str) -> None:
    """A switch handed its preparation's parse begins with the Lock: no fetch, no parse,
    no version check (PATCH_SWITCH_TAKES_PARSE); runs before began with the fetch."""
    names = step_names(load(shape))
    assert names[0] == first, names
    if first == c.TAKE_LOCK:
        assert {c.FETCH_PACKAGE, c.PARSE_PACKAGE, c.CHECK_CROSSPLANE_VERSION}.isdisjoint(names)


@pytest.mark.parametrize(("shape", "order"), [
    ("revision_planned", [c.PARSE_PACKAGE, c.ESTABLISH_OBJECTS, c.PLAN_REVISION,
                          c.CHECK_CROSSPLANE_VERSION, c.TAKE_LOCK, c.WRITE_REVISION_STATUS]),
    ("revision_planned_parse_first", [c.PARSE_PACKAGE, c.CHECK_CROSSPLANE_VERSION, c.TAKE_LOCK,
                                      c.ESTABLISH_OBJECTS, c.PLAN_REVISION,
                                      c.WRITE_REVISION_STATUS])])
def test_a_preparation_parses_beside_its_dry_run_and_plan(shape: str,
                                                          order: list[str]) -> None:
    """Since PATCH_PREPARE_BESIDE_PARSE the dry run and the plan are scheduled with the
    parse, and Crossplane's version and the Lock's check once it has ended; runs before
    scheduled the dry run and the plan after those."""
    assert scheduled_locally(load(shape)) == order


@workflow.defn(name="InstallRevision")
class ReorderedInstallRevision(InstallRevision):
    """InstallRevision with a timer slipped in before the first step."""

    @workflow.run
    async def run(self, inp: c.InstallRevisionInput) -> c.InstallRevisionResult:
        await workflow.sleep(timedelta(seconds=1))
        return await super().run(inp)


async def test_reordered_commands_fail_replay() -> None:
    """The replay test catches a change of command order."""
    replayer = Replayer(workflows=[PackageWorkflow, ReorderedInstallRevision])
    result = await replayer.replay_workflow(load("revision_install_provider"),
                                            raise_on_replay_failure=False)
    assert isinstance(result.replay_failure, workflow.NondeterminismError)



@pytest.mark.parametrize("shape", ["package_deleting", "package_deleted_during_install"])
def test_nothing_but_clean_up_once_the_deletion_is_seen(shape: str) -> None:
    """After the first clean-up only reads and clean-ups run (docs/design.md invariant 8)."""
    after = steps_after_clean_up(load(shape))
    assert after.count(c.CLEANUP_PACKAGE) >= 2, after
    assert set(after) == {c.READ_PACKAGE, c.CLEANUP_PACKAGE}, after



def on_queue(shape: str, queue: str) -> WorkflowHistory:
    """A committed history as if it had run on task queue ``queue``."""
    text = (HISTORIES / f"{shape}.json").read_text()
    started = load(shape).events[0].workflow_execution_started_event_attributes
    return WorkflowHistory.from_json(f"replay-{shape}", text.replace(started.task_queue.name,
                                                                     queue))


async def test_a_child_id_changed_without_the_guard_fails_replay() -> None:
    """Why the queue in child ids is behind a patch: replay compares child ids."""
    text = (HISTORIES / "package_install.json").read_text().replace(
        '"workflowId": "revision:provider:', '"workflowId": "revision:provider:other-')
    result = await Replayer(workflows=ALL_WORKFLOWS).replay_workflow(
        WorkflowHistory.from_json("replay-changed", text), raise_on_replay_failure=False)
    assert isinstance(result.replay_failure, workflow.NondeterminismError)
