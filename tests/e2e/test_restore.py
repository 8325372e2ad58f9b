"""A control plane restored from a backup (issue 22), end to end on both clusters.

The backup is what a user makes with kubectl: every package, revision, the Lock, the
ManagedResourceDefinitions and CRDs the packages installed and their custom resources, read with ``kubectl get -o json`` from
a cluster of its own, stripped as Velero strips what it restores (the server's fields,
``status`` and ``ownerReferences``), then applied with kubectl to a fresh cluster run by a
fresh lockwright. lockwright must take it all back with no hand edit: the restored
revision, not a new one, Active and Healthy; the restored CRD and every custom resource
kept (never deleted and created again); and a live holder of another package still
refused.

Owner references name their owners' UIDs, which no restore brings back. Kept, they make
Kubernetes' garbage collector delete every restored object whose owners are all gone, a
CRD with its custom resources, within a second (0.5 s measured on kube, 0.9 s on
devcluster): that is why Velero strips them. Where no garbage collector acts on them
(kube-controller-manager's ``--enable-garbage-collector=false``), a restore may keep them:
lockwright then adopts what stale owners of the same package hold, and says so.
"""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio
import yaml
from temporalio.client import Client, WorkflowExecutionStatus
from temporalio.service import RPCError

from lockwright import contracts as c
from tests.e2e.packages import crd
from tests.fixtures.stack import Stack, running_stack
from tests.helpers import unique, wait_for

pytestmark = pytest.mark.kube_shows(
    "objects restored without owners, adopted while the garbage collector runs")

Obj = dict[str, Any]
#: What Velero's restore drops from every object's metadata (pkg/restore/restore.go).
SERVER_FIELDS = ("generateName", "selfLink", "uid", "resourceVersion", "generation",
                 "creationTimestamp", "deletionTimestamp", "deletionGracePeriodSeconds",
                 "ownerReferences", "managedFields")
PKG = "pkg.crossplane.io"
MRDS = "managedresourcedefinitions.apiextensions.crossplane.io"


def provider_dir(root: Path, group: str, spec: Obj | None = None) -> Path:
    """A Provider package with one cluster-scoped CRD, ``gadgets.<group>``."""
    root.mkdir(parents=True)
    meta = {"apiVersion": "meta.pkg.crossplane.io/v1", "kind": "Provider",
            "metadata": {"name": f"provider-{group.split('.')[0]}"}, "spec": spec or {}}
    (root / "crossplane.yaml").write_text(yaml.safe_dump(meta))
    (root / "objects.yaml").write_text(yaml.safe_dump_all([crd(group, "Gadget")]))
    return root


def get_json(stack: Stack, *what: str) -> list[Obj]:
    """``kubectl get WHAT -o json``'s objects (one named, or a list's items)."""
    doc = json.loads(stack.kubectl("get", *what, "-o", "json").stdout)
    return list(doc["items"]) if "items" in doc else [doc]


def strip(obj: Obj, owners: bool = False) -> Obj:
    """``obj`` as a Velero restore creates it: no server fields, no status, no owner
    references (kept when ``owners``)."""
    dropped = [f for f in SERVER_FIELDS if not (owners and f == "ownerReferences")]
    meta = {k: v for k, v in obj["metadata"].items() if k not in dropped}
    return {**{k: v for k, v in obj.items() if k != "status"}, "metadata": meta}


@dataclass(frozen=True)
class Backup:
    """What a user backed up of a cluster running one Provider with three Gadgets."""

    name: str
    revision: str
    revision_uid: str
    crd_name: str
    plural: str
    crds: list[Obj]
    rest: list[Obj]
    foreign_ref: str  # another package shipping the same CRD

    def workflows(self, stack: Stack) -> list[str]:
        """The ids of the package's and the revision's workflows on ``stack``'s queue."""
        return [c.package_workflow_id(c.PROVIDER, self.name, stack.task_queue),
                c.revision_workflow_id(c.PROVIDER, self.revision, stack.task_queue)]

    def restore(self, target: Stack, owners: bool = False) -> tuple[Obj, dict[str, str]]:
        """Apply the backup to ``target`` (CRDs first, as Velero orders them); the CRD as
        restored (before any package is) and the Gadgets' UIDs as restored."""
        apply(target, [strip(o, owners) for o in self.crds])
        target.kubectl("wait", "--for=condition=Established", f"crd/{self.crd_name}",
                       "--timeout=60s")
        [crd] = get_json(target, "customresourcedefinitions", self.crd_name)
        apply(target, [strip(o, owners) for o in self.rest])
        return crd, uids(get_json(target, self.plural))

    def check_taken_back(self, target: Stack, crd_uid: str, gadgets: dict[str, str]) -> Obj:
        """Healthy on the restored revision, the CRD and every Gadget as restored, owned
        by the live package and revision only; the revision."""
        target.wait_healthy("Provider", self.name, timeout=180)
        pkg = target.get_package("Provider", self.name) or {}
        [rev] = target.revisions("Provider", self.name)
        assert rev["metadata"]["name"] == self.revision  # the restored one, taken back
        assert rev["spec"]["desiredState"] == "Active"
        assert [(r["kind"], r["uid"]) for r in rev["metadata"]["ownerReferences"]] == [
            ("Provider", pkg["metadata"]["uid"])]
        [live_crd] = get_json(target, "customresourcedefinitions", self.crd_name)
        assert live_crd["metadata"]["uid"] == crd_uid  # never deleted and created again
        assert {(r["kind"], r["uid"]) for r in live_crd["metadata"]["ownerReferences"]} == {
            ("ProviderRevision", rev["metadata"]["uid"]), ("Provider", pkg["metadata"]["uid"])}
        assert [r["uid"] for r in controllers(live_crd)] == [rev["metadata"]["uid"]]
        [mrd] = get_json(target, MRDS, self.crd_name)
        assert [r["uid"] for r in controllers(mrd)] == [rev["metadata"]["uid"]]
        now = get_json(target, self.plural)
        assert uids(now) == gadgets  # every custom resource kept, none re-created
        assert sorted(o["spec"]["size"] for o in now) == [0, 1, 2]
        lock = get_json(target, f"locks.{PKG}")[0]
        assert [p["name"] for p in lock["packages"]] == [self.revision]
        return rev


def apply(stack: Stack, objects: list[Obj]) -> None:
    """``kubectl apply -f`` of ``objects``, as a user restores a backup (one YAML document
    each; apply, not create: a fresh lockwright has made its empty Lock already)."""
    done = stack.kubectl("apply", "-f", "-", check=False,
                         stdin=yaml.safe_dump_all(objects))
    assert done.returncode == 0, done.stdout + done.stderr


def uids(objects: list[Obj]) -> dict[str, str]:
    return {o["metadata"]["name"]: o["metadata"]["uid"] for o in objects}


def controllers(obj: Obj) -> list[Obj]:
    return [r for r in obj["metadata"].get("ownerReferences") or [] if r.get("controller")]


async def forget_workflows(stack: Stack, ids: list[str]) -> None:
    """The lost cluster's lockwright goes with it: end its workflows (a fresh cluster's
    lockwright starts with none; its own task queue gives it ids of its own anyway)."""
    tc = await Client.connect(stack.temporal_address)
    for workflow_id in ids:
        handle = tc.get_workflow_handle(workflow_id)
        try:
            if (await handle.describe()).status == WorkflowExecutionStatus.RUNNING:
                await handle.terminate(reason="test: the cluster was lost")
        except RPCError:
            continue  # never started (a revision with nothing left to run)


def events(stack: Stack, name: str) -> list[tuple[str, str]]:
    """The (reason, message) of every Event about objects named ``name``."""
    found = get_json(stack, "events", "-A", "--field-selector", f"involvedObject.name={name}")
    return [(str(e.get("reason")), str(e.get("message"))) for e in found]


def reasons(stack: Stack, name: str) -> set[str]:
    return {r for r, _ in events(stack, name)}


@pytest_asyncio.fixture(scope="module", loop_scope="session")
async def backup(registry: Any, auth_registry: Any, temporal_env: Any, cluster_kind: str,
                 tmp_path_factory: pytest.TempPathFactory) -> Backup:
    """A cluster of its own with one Provider and three Gadgets, backed up with kubectl;
    then the cluster is lost, and its lockwright with it."""
    tmp = tmp_path_factory.mktemp("restore")
    group = f"{uuid.uuid4().hex[:8]}.restore.example.org"
    crd_name, name = f"gadgets.{group}", unique("restored")
    gadgets = [{"apiVersion": f"{group}/v1alpha1", "kind": "Gadget",
                "metadata": {"name": f"gadget-{i}"}, "spec": {"size": i}} for i in range(3)]
    with running_stack(registry, auth_registry, temporal_env, kind=cluster_kind) as source:
        ref = source.push(provider_dir(tmp / "p", group))
        source.apply_package("Provider", name, ref)
        source.wait_healthy("Provider", name, timeout=120)
        apply(source, gadgets)
        [revision] = get_json(source, f"providerrevisions.{PKG}")
        crds = get_json(source, "customresourcedefinitions", crd_name)
        rest = (get_json(source, f"locks.{PKG}") + get_json(source, f"providers.{PKG}")
                + [revision] + get_json(source, MRDS) + get_json(source, crd_name))
        foreign_ref = source.push(provider_dir(tmp / "q", group, spec={
            "crossplane": {"version": ">=v1.0.0"}}))  # another digest, the same CRD
    out = Backup(name, revision["metadata"]["name"], revision["metadata"]["uid"], crd_name,
                 crd_name, crds, rest, foreign_ref)
    await forget_workflows(source, out.workflows(source))
    assert {o["kind"] for o in rest} == {"Lock", "Provider", "ProviderRevision", "Gadget",
                                         "ManagedResourceDefinition"}
    return out


async def test_a_cluster_restored_from_a_backup_becomes_healthy_and_keeps_every_resource(
        backup: Backup, registry: Any, auth_registry: Any, temporal_env: Any,
        cluster_kind: str) -> None:
    with running_stack(registry, auth_registry, temporal_env, kind=cluster_kind) as target:
        try:
            crd, gadgets = backup.restore(target)
            assert sorted(gadgets) == ["gadget-0", "gadget-1", "gadget-2"]
            rev = backup.check_taken_back(target, crd["metadata"]["uid"], gadgets)
            # Velero's restore leaves no owner to be stale: nothing to say about one.
            assert "AdoptStaleOwner" not in reasons(target, backup.revision)

            # A live holder of another package is still refused, and takes nothing.
            foreign = unique("foreign")
            target.apply_package("Provider", foreign, backup.foreign_ref)
            held = (f'"{backup.crd_name}" is already controlled by Provider {backup.name} '
                    f"(revision {backup.revision})")

            def refused() -> str | None:
                healthy = target.conditions("Provider", foreign).get("Healthy") or {}
                message = str(healthy.get("message", ""))
                return message if healthy.get("status") == "False" and held in message else None

            wait_for(refused, timeout=120, interval=0.2, what=f"{foreign} refused")
            [live_crd] = get_json(target, "customresourcedefinitions", backup.crd_name)
            assert [r["uid"] for r in controllers(live_crd)] == [rev["metadata"]["uid"]]
            assert uids(get_json(target, backup.plural)) == gadgets
            target.wait_healthy("Provider", backup.name)
        finally:
            await forget_workflows(target, backup.workflows(target))


async def test_a_restore_keeping_owner_references_adopts_what_stale_owners_hold(
        backup: Backup, registry: Any, auth_registry: Any, temporal_env: Any,
        cluster_kind: str) -> None:
    with running_stack(registry, auth_registry, temporal_env, kind=cluster_kind,
                       garbage_collector=False) as target:
        try:
            crd, gadgets = backup.restore(target, owners=True)
            assert [r["uid"] for r in controllers(crd)] == [backup.revision_uid]  # stale
            assert sorted(gadgets) == ["gadget-0", "gadget-1", "gadget-2"]
            rev = backup.check_taken_back(target, crd["metadata"]["uid"], gadgets)

            def said() -> list[str]:
                return [m for r, m in events(target, backup.revision) if r == "AdoptStaleOwner"]

            [message] = wait_for(said, timeout=30, interval=0.2, what="AdoptStaleOwner")
            assert (f"ProviderRevision {backup.revision} (UID {backup.revision_uid}), which "
                    f"now has UID {rev['metadata']['uid']}") in message, message
            assert f'"{backup.crd_name}"' in message, message
        finally:
            await forget_workflows(target, backup.workflows(target))
