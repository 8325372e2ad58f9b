"""A plan on a busy server (issue 31): the API server's own controllers write a new CRD's
status while ``lockwright plan --package`` reads the CRD and then dry-runs its update, so
the dry run carries a stale resourceVersion and is refused with 409 Conflict.

``plan_revision`` runs in-process (the real activity, its candidate's preparation
included) against the session stack's cluster, as the worker would, through a ``Kube``
whose dry-run view writes the CRD's status from the test just before the dry-run update
is sent: the conflict happens on the real server, on demand, with no sleep. The plan
re-reads and succeeds; a CRD that changes before every dry run gives up after a bounded
number of attempts, as ``KubeConflict`` (transient: the activity is retried). The same
``_check`` makes the dry runs of an upgrade's prepare step.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from temporalio.exceptions import ApplicationError
from temporalio.testing import ActivityEnvironment

from lockwright import contracts as c
from lockwright.activities.objects import DRY_RUN_ATTEMPTS
from lockwright.k8s import Kube
from lockwright.oci.cache import PackageCache
from lockwright.settings import Settings
from tests.activity_view import Activities
from tests.e2e.test_plans import COLOR, SIZE, group, push, widget_crd
from tests.fixtures.stack import Stack
from tests.helpers import unique

pytestmark = pytest.mark.kube_shows(
    "the server's own controllers writing a CRD's status between the plan's read and its dry run")

Obj = dict[str, Any]
CRD_KIND = "CustomResourceDefinition"


class BusyKube(Kube):
    """A ``Kube`` whose dry-run updates of CRD ``crd`` are each preceded, while
    ``busy()`` says so, by a status write to that CRD from another connection: the
    object the update was planned from is stale by the time it arrives."""

    crd: str
    busy: Callable[[], bool]
    busy_write: Callable[[], bool]
    admin: Kube
    dry_updates: list[str]
    updates: list[str]
    status_writes: int

    def dry_runs(self) -> Kube:
        view = super().dry_runs()
        send = view.update

        def update(obj: Obj, *, dry_run: bool = False) -> Obj:
            if obj.get("kind") == CRD_KIND and obj["metadata"]["name"] == self.crd:
                self.dry_updates.append(str(obj["metadata"].get("resourceVersion")))
                if self.busy():
                    self.bump()
            return send(obj, dry_run=dry_run)

        view.update = update  # type: ignore[method-assign]
        return view

    def update(self, obj: Obj, *, dry_run: bool = False) -> Obj:
        """A real update of CRD ``crd``, preceded by a status write while
        ``busy_write()`` says so."""
        if not dry_run and obj.get("kind") == CRD_KIND and obj["metadata"]["name"] == self.crd:
            self.updates.append(str(obj["metadata"].get("resourceVersion")))
            if self.busy_write():
                self.bump()
        return super().update(obj, dry_run=dry_run)

    def bump(self) -> None:
        """Write the CRD's status, as the API server's controllers do after a create: its
        conditions kept (Established among them), one of the test's own set."""
        self.status_writes += 1
        crd = self.admin.get("apiextensions.k8s.io/v1", CRD_KIND, self.crd) or {}
        status = crd.setdefault("status", {})
        status["conditions"] = [x for x in status.get("conditions") or []
                                if x["type"] != "Busy"] + [{
            "type": "Busy", "status": "True", "reason": "Test",
            "message": f"write {self.status_writes}",
            "lastTransitionTime": "2026-01-01T00:00:00Z"}]
        self.admin.update_status(crd)


def installed(stack: Stack, tmp_path: Path) -> tuple[str, str, str]:
    """A healthy Provider of one CRD, and a next release adding a field; (package, CRD,
    the next release's reference)."""
    g, repo, name = group(), unique("prov"), unique("busy")
    stack.apply_package("Provider", name, push(stack, tmp_path, repo, "v1.0.0",
                                               [widget_crd(g, SIZE)]))
    stack.wait_healthy("Provider", name)
    return name, f"widgets.{g}", push(stack, tmp_path, repo, "v2.0.0",
                                      [widget_crd(g, {**SIZE, **COLOR})])


def activities(stack: Stack, tmp_path: Path, kube: BusyKube) -> Activities:
    """The worker's activities, in-process, through ``kube``."""
    settings = Settings(cache_dir=str(tmp_path / "cache"),
                        insecure_registries=(stack.registry_host,),
                        crossplane_version=stack.crossplane_version)
    return Activities(settings, kube, PackageCache(settings.cache_dir))


def plan(stack: Stack, tmp_path: Path, kube: BusyKube, name: str, candidate: str) -> Any:
    """``plan_revision`` of ``candidate`` against ``name``'s active revision, in-process."""
    acts = activities(stack, tmp_path, kube)
    env = ActivityEnvironment()
    pkg = env.run(acts.read_package, c.ReadPackageInput(kind=c.PROVIDER, name=name))
    return env.run(acts.plan_revision, c.PlanRevisionInput(
        kind=c.PROVIDER, package=name, revision=f"candidate {candidate}",
        against=pkg.active_revision, against_digest=pkg.active_digest, candidate=candidate))


@pytest.fixture
def busy_kube(stack: Stack) -> Any:
    kube = BusyKube.connect(stack.cluster.kubeconfig)
    kube.admin, kube.dry_updates = Kube.connect(stack.cluster.kubeconfig), []
    kube.crd, kube.busy, kube.status_writes = "", lambda: False, 0
    kube.busy_write, kube.updates = lambda: False, []
    yield kube
    kube.admin.close()
    kube.close()


def test_plan_of_a_candidate_survives_a_crd_status_written_between_read_and_dry_run(
        stack: Stack, tmp_path: Path, busy_kube: BusyKube) -> None:
    name, crd, candidate = installed(stack, tmp_path)
    busy_kube.crd = crd
    busy_kube.busy = lambda: busy_kube.status_writes == 0  # once, before the first dry run

    result = plan(stack, tmp_path, busy_kube, name, candidate)

    assert busy_kube.status_writes == 1
    # The first dry run carried the resourceVersion read before the status write (409);
    # the second the one read again after it.
    assert len(busy_kube.dry_updates) == 2, busy_kube.dry_updates
    assert busy_kube.dry_updates[0] != busy_kube.dry_updates[1], busy_kube.dry_updates
    assert result.changed >= 1 and result.breaking_count == 0, result


def test_plan_gives_up_on_a_crd_that_changes_before_every_dry_run_as_a_transient_conflict(
        stack: Stack, tmp_path: Path, busy_kube: BusyKube) -> None:
    name, crd, candidate = installed(stack, tmp_path)
    busy_kube.crd, busy_kube.busy = crd, lambda: True

    with pytest.raises(ApplicationError) as failed:
        plan(stack, tmp_path, busy_kube, name, candidate)

    assert failed.value.type == "KubeConflict" and not failed.value.non_retryable
    assert f'"{crd}" kept changing while its write was dry-run' in failed.value.message
    assert len(busy_kube.dry_updates) == DRY_RUN_ATTEMPTS == busy_kube.status_writes


def test_a_write_refused_because_the_crd_changed_after_the_check_is_checked_and_sent_again(
        stack: Stack, tmp_path: Path, busy_kube: BusyKube) -> None:
    """The switch's own writes meet the same controllers: on kube-apiserver establishing a
    2,000-CRD provider's kinds took minutes, and a switch-over's establish failed on a CRD
    whose status was written between the check and the write; its retry read and dry-ran
    all 4,000 objects again. Now that one object is read, planned, dry-run and written
    again, and the attempt succeeds."""
    name, crd, _ = installed(stack, tmp_path)
    busy_kube.crd = crd
    busy_kube.busy_write = lambda: busy_kube.status_writes == 0  # once, before the write
    # Drift for the establish to undo, so it writes the CRD (else there is nothing to send).
    busy_kube.admin.patch("apiextensions.k8s.io/v1", CRD_KIND, crd, {"metadata": {
        "annotations": {"lockwright.dev/type-digest": "sha256:drifted"}}})
    acts, env = activities(stack, tmp_path, busy_kube), ActivityEnvironment()
    pkg = env.run(acts.read_package, c.ReadPackageInput(kind=c.PROVIDER, name=name))

    result = env.run(acts.establish_objects, c.EstablishObjectsInput(
        kind=c.PROVIDER, package=name, revision=pkg.active_revision,
        digest=pkg.active_digest, control=True))

    assert busy_kube.status_writes == 1
    # The first write carried the resourceVersion the check read (409), the second the one
    # read again after the status write; the CRD's dry runs were sent before each.
    assert len(busy_kube.updates) == 2, busy_kube.updates
    assert busy_kube.updates[0] != busy_kube.updates[1], busy_kube.updates
    assert len(busy_kube.dry_updates) == 2, busy_kube.dry_updates
    assert result.updated == 1, result  # the CRD (its MRD had nothing to change)
