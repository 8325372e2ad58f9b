"""Deleting packages as Kubernetes does it (issue 14, docs/design.md invariant 8), end to end.

Each package kind is installed at v1, upgraded to v2 (so it has an Active and an Inactive
revision), then deleted with ``kubectl delete --cascade=foreground|background|orphan``.
Everything the package owned is listed object by object before the delete and looked up
again after it; the package workflow's history must show no step after its clean-up.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from kubernetes import client
from kubernetes.client.exceptions import ApiException
from temporalio.client import Client, WorkflowExecutionStatus

from lockwright import contracts as c
from tests.e2e.test_install import (
    PACKAGES,
    allow_secrets,
    configuration_root,
    copy_package,
    ensure_crossplane_crds,
    plain,
    provider_root,
)
from tests.e2e.test_resilience import everything, lock_entries, mentions
from tests.fixtures.stack import PKG_GROUP, PLURALS, REVISION_PLURALS, Stack
from tests.helpers import unique, wait_for, wait_for_async
from tests.histories import CHILD_STARTED, steps_after_clean_up

pytestmark = pytest.mark.kube_shows(
    "the garbage collector carrying out foreground, background and orphan deletion")

Obj = dict[str, Any]
Ref = tuple[str, str, str]  # kind, name, uid


# --- installing two revisions ------------------------------------------------------------
def package_root(stack: Stack, kind: str, tmp: Path) -> Path:
    """An example package of ``kind`` whose API group is unique to this test."""
    if kind == "Provider":
        allow_secrets(stack)
        return provider_root(tmp)[0]
    if kind == "Configuration":
        ensure_crossplane_crds(stack)
        group = f"{unique('p')}.example.org"
        return configuration_root(stack, tmp, group)
    group = f"{unique('f')}.fn.example.org"
    return copy_package(PACKAGES / "function", tmp / "function", {"shout.fn.example.org": group})


def second_version(root: Path) -> None:
    """The same objects under another digest: an annotation on the meta object."""
    meta = root / "crossplane.yaml"
    doc = yaml.safe_load(meta.read_text())
    doc["metadata"].setdefault("annotations", {})["lockwright.test/version"] = "v2"
    meta.write_text(yaml.safe_dump(doc))


def install_two_revisions(stack: Stack, kind: str, tmp: Path) -> str:
    """Install v1, upgrade to v2; returns the package name once v2 is Active and Healthy."""
    root = package_root(stack, kind, tmp)
    repo = unique("pkg")
    v1 = stack.push(root, repo=repo, tag="v1.0.0")
    second_version(root)
    v2 = stack.push(root, repo=repo, tag="v2.0.0")
    name = unique(kind.lower()[:4])
    stack.apply_package(kind, name, v1)
    stack.wait_healthy(kind, name)
    stack.custom.patch_cluster_custom_object(PKG_GROUP, "v1", PLURALS[kind], name,
                                             {"spec": {"package": v2}})

    def upgraded() -> bool:
        pkg = stack.get_package(kind, name) or {}
        revs = stack.revisions(kind, name)
        states = {r["metadata"]["name"]: r["spec"]["desiredState"] for r in revs}
        current = (pkg.get("status") or {}).get("currentRevision", "")
        healthy = stack.conditions(kind, name).get("Healthy", {}).get("status") == "True"
        # The status names v2 (not v1's, still there while v2 is prepared), and the
        # switch is over: the old revision has left the Lock too.
        return (any(r["metadata"]["name"] == current and r["spec"]["image"] == v2
                    for r in revs) and states.get(current) == "Active" and healthy
                and sorted(states.values()) == ["Active", "Inactive"]
                and locked(stack, list(states)) == [current])

    wait_for(upgraded, timeout=90, interval=0.2, what=f"{kind} {name} upgraded to v2")
    return name


# --- what a package owns ---------------------------------------------------------------
def revision_objects(stack: Stack, revisions: list[Obj]) -> list[Obj]:
    """The objects the revisions established (XRDs, Compositions, CRDs, MRDs), as they are
    now (an Inactive MRD's CRD is named but does not exist)."""
    out = []
    for ref in {(r["apiVersion"], r["kind"], r["name"]) for rev in revisions
                for r in (rev.get("status") or {}).get("objectRefs") or []}:
        group, version = ref[0].split("/")
        plural = {"CompositeResourceDefinition": "compositeresourcedefinitions",
                  "Composition": "compositions",
                  "CustomResourceDefinition": "customresourcedefinitions",
                  "ManagedResourceDefinition": "managedresourcedefinitions"}[ref[1]]
        try:
            obj = stack.custom.get_cluster_custom_object(group, version, plural, ref[2])
        except ApiException as exc:
            if exc.status != 404:
                raise
            continue
        out.append({**obj, "kind": ref[1]})
    return out


def footprint(stack: Stack, kind: str, name: str) -> list[Ref]:
    """Every object of package ``name``: itself, its revisions, and all they own."""
    pkg = stack.get_package(kind, name)
    assert pkg is not None
    revisions = [{**r, "kind": f"{kind}Revision"} for r in stack.revisions(kind, name)]
    uids = {pkg["metadata"]["uid"]} | {r["metadata"]["uid"] for r in revisions}
    candidates = everything(stack) + revision_objects(stack, revisions)
    owned = [o for o in candidates if mentions(o, name, uids)]
    return sorted({(o["kind"], o["metadata"]["name"], o["metadata"]["uid"])
                   for o in [{**pkg, "kind": kind}, *revisions, *owned]})


def present(stack: Stack, kind: str, refs: list[Ref]) -> list[Ref]:
    """Those of ``refs`` that still exist (same kind, name and UID)."""
    uids = {o["metadata"]["uid"] for o in everything(stack)}
    uids |= {r["metadata"]["uid"] for r in list_revisions(stack, kind)}
    for version, plural in (("v1", "compositeresourcedefinitions"), ("v1", "compositions"),
                            ("v1alpha1", "managedresourcedefinitions")):
        uids |= {o["metadata"]["uid"] for o in list_if_served(
            stack, "apiextensions.crossplane.io", version, plural)}
    pkgs = stack.custom.list_cluster_custom_object(PKG_GROUP, "v1", PLURALS[kind])["items"]
    uids |= {o["metadata"]["uid"] for o in pkgs}
    return [r for r in refs if r[2] in uids]


def list_if_served(stack: Stack, group: str, version: str, plural: str) -> list[Obj]:
    """Every object of a custom resource, or none when its CRD is not installed."""
    try:
        return list(stack.custom.list_cluster_custom_object(group, version, plural)["items"])
    except ApiException as exc:
        if exc.status == 404:
            return []
        raise


def list_revisions(stack: Stack, kind: str) -> list[Obj]:
    return list(stack.custom.list_cluster_custom_object(PKG_GROUP, "v1",
                                                        REVISION_PLURALS[kind])["items"])


def locked(stack: Stack, revisions: list[str]) -> list[str]:
    return [e["name"] for e in lock_entries(stack) if e["name"] in revisions]


# --- the package workflow ---------------------------------------------------------------
async def closed_after_clean_up(stack: Stack, kind: str, name: str) -> list[str]:
    """Wait until the package workflow completed; every run's steps after its clean-up."""
    tc = await Client.connect(stack.temporal_address)
    wid = c.package_workflow_id(kind.lower(), name, stack.task_queue)

    async def completed() -> bool:
        desc = await tc.get_workflow_handle(wid).describe()
        return desc.status == WorkflowExecutionStatus.COMPLETED

    await wait_for_async(completed, timeout=60, interval=0.2, what=f"{wid} completed")
    steps: list[str] = []
    async for run in tc.list_workflows(f"WorkflowId = '{wid}'"):
        history = await tc.get_workflow_handle(wid, run_id=run.run_id).fetch_history()
        steps += steps_after_clean_up(history)
    latest = await tc.get_workflow_handle(wid).fetch_history()
    return steps + steps_after_clean_up(latest)


def check_only_clean_up(steps: list[str]) -> None:
    """docs/design.md invariant 8: once the clean-up began, only reads and clean-ups ran."""
    assert c.CLEANUP_PACKAGE in steps, steps
    assert CHILD_STARTED not in steps and set(steps) <= {c.READ_PACKAGE, c.CLEANUP_PACKAGE}, \
        steps


def delete(stack: Stack, kind: str, name: str, cascade: str) -> None:
    """``kubectl delete``, which waits until the object is gone (or fails at 60 s)."""
    stack.kubectl("delete", f"{PLURALS[kind]}.{PKG_GROUP}", name, f"--cascade={cascade}",
                  "--timeout=60s")


# --- the tests -------------------------------------------------------------------------
@pytest.mark.parametrize("cascade", ["foreground", "background"])
@pytest.mark.parametrize("kind", ["Provider", "Configuration", "Function"])
async def test_delete_removes_everything_the_package_owned(
        stack: Stack, tmp_path: Path, kind: str, cascade: str) -> None:
    name = install_two_revisions(stack, kind, tmp_path)
    before = footprint(stack, kind, name)
    revisions = [r[1] for r in before if r[0] == f"{kind}Revision"]
    kinds = {r[0] for r in before}
    current = (stack.get_package(kind, name) or {})["status"]["currentRevision"]
    assert len(revisions) == 2 and locked(stack, revisions) == [current], before
    if kind != "Configuration":
        assert {"Deployment", "ServiceAccount", "Service", "Secret"} <= kinds, kinds
    if kind == "Provider":
        assert {"ClusterRole", "ClusterRoleBinding", "CustomResourceDefinition"} <= kinds

    delete(stack, kind, name, cascade)
    assert stack.get_package(kind, name) is None
    if cascade == "foreground":
        # Revisions block their package's deletion: they went first.
        assert not [r for r in present(stack, kind, before) if r[0] == f"{kind}Revision"]
    wait_for(lambda: not present(stack, kind, before), timeout=30, interval=0.2,
             what=f"every object of {kind} {name} gone: {present(stack, kind, before)}")
    wait_for(lambda: not locked(stack, revisions), timeout=30, interval=0.2,
             what="the Lock entries gone")
    check_only_clean_up(await closed_after_clean_up(stack, kind, name))


@pytest.mark.parametrize("kind", ["Provider", "Configuration", "Function"])
async def test_orphan_leaves_the_revisions_alone_until_they_are_deleted(
        stack: Stack, tmp_path: Path, kind: str) -> None:
    name = install_two_revisions(stack, kind, tmp_path)
    before = footprint(stack, kind, name)
    revisions = sorted(r[1] for r in before if r[0] == f"{kind}Revision")
    entries = locked(stack, revisions)
    assert len(entries) == 1

    delete(stack, kind, name, "orphan")
    check_only_clean_up(await closed_after_clean_up(stack, kind, name))
    # As Kubernetes specifies: the dependents stay, without a reference to the package.
    gone = set(before) - set(present(stack, kind, before))
    assert gone == {r for r in before if r[0] == kind}, gone
    orphans = [r for r in list_revisions(stack, kind) if r["metadata"]["name"] in revisions]
    for rev in orphans:
        assert not rev["metadata"].get("ownerReferences"), rev["metadata"]
    # lockwright leaves them alone: still installed, in the Lock, not rewritten.
    assert locked(stack, revisions) == entries
    versions = {r["metadata"]["name"]: r["metadata"]["resourceVersion"] for r in orphans}
    assert versions == {r["metadata"]["name"]: r["metadata"]["resourceVersion"]
                        for r in list_revisions(stack, kind)
                        if r["metadata"]["name"] in revisions}

    # Deleting the orphans by hand removes what they own and their Lock entry.
    stack.kubectl("delete", f"{REVISION_PLURALS[kind]}.{PKG_GROUP}", *revisions,
                  "--timeout=60s")
    secrets = [r for r in before if r[0] == "Secret"]  # the package's, orphaned with it
    wait_for(lambda: present(stack, kind, before) == secrets, timeout=30, interval=0.2,
             what=f"all but the orphaned Secrets gone: {present(stack, kind, before)}")
    wait_for(lambda: not locked(stack, revisions), timeout=30, interval=0.2,
             what="the orphans' Lock entry gone")
    check_only_clean_up(await closed_after_clean_up(stack, kind, name))


@pytest.mark.parametrize("cascade", ["foreground", "background"])
def test_revision_deleted_by_hand_is_recreated_once(stack: Stack, tmp_path: Path,
                                                    cascade: str) -> None:
    from kubernetes import watch

    allow_secrets(stack)
    ref = stack.push(provider_root(tmp_path)[0])
    name = unique("prov")
    stack.apply_package("Provider", name, ref)
    stack.wait_healthy("Provider", name)
    [rev] = stack.revisions("Provider", name)
    rev_name, old_uid = rev["metadata"]["name"], rev["metadata"]["uid"]
    since = rev["metadata"]["resourceVersion"]
    rbac = client.RbacAuthorizationV1Api(stack.api)
    read_role = f"lockwright:provider:{name}:read"
    read_uid = plain(stack, rbac.read_cluster_role(read_role))["metadata"]["uid"]

    # No --wait: the package re-creates the revision, and kubectl's wait can miss the
    # deletion when it lists the new object before the old one's DELETED event arrives.
    stack.kubectl("delete", f"providerrevisions.{PKG_GROUP}", rev_name, f"--cascade={cascade}",
                  "--wait=false")

    def recreated() -> Obj | None:
        revs = stack.revisions("Provider", name)
        new = [r for r in revs if r["metadata"]["uid"] != old_uid]
        return new[0] if new and healthy_revision(new[0]) else None

    new = wait_for(recreated, timeout=60, interval=0.2, what="the revision re-created")
    assert new["metadata"]["name"] == rev_name and new["spec"]["desiredState"] == "Active"
    stack.wait_healthy("Provider", name)
    # Exactly once: one creation since the deletion, no create/delete churn.
    events = [(e["type"], e["object"]["metadata"]["uid"]) for e in watch.Watch().stream(
        stack.custom.list_cluster_custom_object, PKG_GROUP, "v1", "providerrevisions",
        field_selector=f"metadata.name={rev_name}", resource_version=since, timeout_seconds=2)
        if e["type"] in ("ADDED", "DELETED")]
    assert events == [("DELETED", old_uid), ("ADDED", new["metadata"]["uid"])], events
    # lockwright's read of the types stayed throughout (docs/design.md, "Provider deletion
    # protection"), now owned by the Provider and the new revision.
    role = plain(stack, rbac.read_cluster_role(read_role))["metadata"]
    pkg = stack.get_package("Provider", name) or {}
    assert role["uid"] == read_uid
    assert {(o["kind"], o["uid"]) for o in role["ownerReferences"]} == {
        ("Provider", pkg["metadata"]["uid"]), ("ProviderRevision", new["metadata"]["uid"])}


def healthy_revision(rev: Obj) -> bool:
    conds = {x["type"]: x["status"] for x in (rev.get("status") or {}).get("conditions") or []}
    return conds.get("RevisionHealthy") == "True" and conds.get("RuntimeHealthy") == "True"
