"""The real activities, called directly, against devcluster and the real registry.

Matrix:
- a Provider installed step by step (resolve → revision → activate → fetch → parse →
  version → Lock → TLS → establish → RBAC → runtime → health → status): objects checked
  field by field;
- idempotency: every step run twice, no resourceVersion moves;
- conflict: a second package sharing a CRD fails in take_lock and in establish with
  ConflictError naming the first, and writes nothing;
- a permission request no allowed ClusterRole covers: PermissionRejected naming the rule,
  no ClusterRole written;
- the Lock under 10 concurrent take_lock calls: no entry lost;
- errors cross as typed ApplicationErrors (image not found: PackageNotFound, permanent).

Every test uses its own package names and CRD groups, so tests share one devcluster.
"""

from __future__ import annotations

import base64
import contextlib
import json
import shutil
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml
from temporalio.exceptions import ApplicationError
from temporalio.testing import ActivityEnvironment

from lockwright import contracts as c
from lockwright import names as revision_names
from lockwright.identity import names as identity_names
from lockwright.activities.objects import DRY_RUN_ATTEMPTS
from lockwright.errors import KubeAlreadyExists
from lockwright.k8s import Kube
from lockwright.k8s.crds import load_crds
from lockwright.oci.auth import DockerAuths
from lockwright.oci.cache import PackageCache
from lockwright.oci.client import RegistryClient
from lockwright.oci.local import read_tarball
from lockwright.oci.push import push_package
from lockwright.settings import Settings
from lockwright.xpkg.build import build_package
from tests.activity_view import Activities
from tests.helpers import unique, wait_for
from lockwright.workflows import status as wst

pytestmark = pytest.mark.registry

DATA = Path(__file__).parent.parent / "data" / "packages"
NS = "crossplane-system"
PKG = "pkg.crossplane.io/v1"
RBAC = "rbac.authorization.k8s.io/v1"
ALLOW_SECRETS = "lockwright-test-allow-secret-reads"


def run(fn: Callable[[Any], Any], arg: Any) -> Any:
    """Run one activity in a Temporal activity context."""
    return ActivityEnvironment().run(fn, arg)


def create_quietly(kube: Kube, obj: dict[str, Any]) -> None:
    with contextlib.suppress(KubeAlreadyExists):
        kube.create(obj)


@pytest.fixture(scope="module")
def kube(devcluster: Any) -> Iterator[Kube]:
    """The seam on devcluster, with lockwright's CRDs, namespace, DRC, Lock and allow-list."""
    k = Kube.connect(devcluster.kubeconfig)
    for crd in load_crds():
        create_quietly(k, crd)
    create_quietly(k, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS}})
    create_quietly(k, {"apiVersion": "pkg.crossplane.io/v1beta1",
                       "kind": "DeploymentRuntimeConfig", "metadata": {"name": "default"},
                       "spec": {}})
    create_quietly(k, {"apiVersion": RBAC, "kind": "ClusterRole",
                       "metadata": {"name": ALLOW_SECRETS, "labels": {
                           "rbac.crossplane.io/aggregate-to-allowed-provider-permissions":
                               "true"}},
                       "rules": [{"apiGroups": [""], "resources": ["secrets"],
                                  "verbs": ["get", "list", "watch"]}]})
    yield k
    k.close()


@pytest.fixture
def acts(kube: Kube, registry: Any, tmp_path: Path) -> Activities:
    settings = Settings(cache_dir=str(tmp_path / "cache"), insecure_registries=(registry.host,))
    return Activities(settings, kube, PackageCache(settings.cache_dir))


@dataclass
class Pushed:
    ref: str
    digest: str
    group: str


def provider_root(tmp_path: Path, group: str, crds: tuple[str, ...] = ("widgets",
                  "providerconfigs"), requests: list[dict[str, Any]] | None = None) -> Path:
    """The test provider with its CRDs moved to API group ``group``."""
    root = tmp_path / f"src-{unique('p')}"
    shutil.copytree(DATA / "provider", root)
    for path in (root / "crds").iterdir():
        if path.name.split("_")[1].removesuffix(".yaml") not in crds:
            path.unlink()
            continue
        path.write_text(path.read_text().replace("widgets.example.org", group))
    if requests is not None:
        meta = yaml.safe_load((root / "crossplane.yaml").read_text())
        meta["spec"]["controller"]["permissionRequests"] = requests
        (root / "crossplane.yaml").write_text(yaml.safe_dump(meta))
    return root


def push(registry: Any, root: Path, tmp_path: Path, group: str = "") -> Pushed:
    """Build ``root`` and push it as ``<registry>/test/<unique>:v0.1.0``."""
    tarball = tmp_path / f"{unique('x')}.xpkg"
    with build_package(root) as built:
        built.write(tarball)
    ref = f"{registry.host}/test/{unique('pkg')}:v0.1.0"
    with contextlib.closing(read_tarball(tarball)) as image:
        digest = push_package(RegistryClient(insecure=[registry.host]), ref, [image])
    return Pushed(ref, digest, group)


def apply_package(kube: Kube, kind: str, name: str, ref: str) -> dict[str, Any]:
    return kube.create({"apiVersion": PKG, "kind": kind, "metadata": {"name": name},
                        "spec": {"package": ref}})


@pytest.fixture
def provider(acts: Activities, registry: Any, tmp_path: Path) -> Pushed:
    group = f"{unique('g')}.example.org"
    return push(registry, provider_root(tmp_path, group), tmp_path, group)


def install_steps(acts: Activities, kind: str, name: str, digest: str, source: str,
                  rev: str = "") -> list[tuple[Callable[[Any], Any], Any]]:
    """The install's activity calls after resolve and ensure_revision, in workflow order;
    ``rev`` by default the revision of a package applied once (generation 1)."""
    rev = rev or revision_names.revision_name(name, digest, 1)
    steps: list[tuple[Callable[[Any], Any], Any]] = [
        (acts.set_active_revision, c.SetActiveRevisionInput(kind, name, rev)),
        (acts.fetch_package, c.FetchPackageInput(kind, name, rev, source, digest)),
        (acts.parse_package, c.ParsePackageInput(kind, rev, digest)),
        (acts.check_crossplane_version, c.CheckCrossplaneVersionInput(rev, ">=v1.14.0-0")),
        (acts.take_lock, c.TakeLockInput(kind, name, rev, source, digest))]
    if kind in c.KINDS_WITH_RUNTIME:
        steps.append((acts.ensure_tls, c.EnsureTlsInput(kind, name, rev)))
    steps.append((acts.establish_objects, c.EstablishObjectsInput(kind, name, rev, digest)))
    if kind == c.PROVIDER:
        steps.append((acts.ensure_rbac, c.EnsureRbacInput(kind, name, rev, digest)))
    if kind in c.KINDS_WITH_RUNTIME:
        steps.append((acts.ensure_runtime, c.EnsureRuntimeInput(kind, name, rev, source,
                                                                digest)))
    return steps


def install(acts: Activities, kind: str, name: str,
            until: str = "") -> tuple[str, str, list[tuple[Callable[[Any], Any], Any]]]:
    """Resolve, ensure the revision and run the steps (up to the one named ``until``)."""
    pkg = run(acts.read_package, c.ReadPackageInput(kind, name))
    resolved = run(acts.resolve_digest, c.ResolveDigestInput(kind, name, pkg.source))
    ensured = run(acts.ensure_revision, c.EnsureRevisionInput(
        kind, name, pkg.source, resolved.digest, pkg.generation))
    steps = install_steps(acts, kind, name, resolved.digest, resolved.resolved_source,
                          ensured.revision)
    for fn, arg in steps:
        if fn.__name__ == until:
            break
        run(fn, arg)
    return ensured.revision, resolved.digest, steps


def crd_reads(kube: Kube, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The names of the CRDs ``kube`` reads one by one from now on, as they are read."""
    reads: list[str] = []
    real_get = kube.get

    def counting_get(api_version: str, kind: str, name_: str, *rest: Any, **kw: Any) -> Any:
        if kind == "CustomResourceDefinition":
            reads.append(name_)
        return real_get(api_version, kind, name_, *rest, **kw)

    monkeypatch.setattr(kube, "get", counting_get)
    return reads


def owner(obj: dict[str, Any] | None, kind: str) -> dict[str, Any]:
    refs = (obj or {})["metadata"].get("ownerReferences") or []
    return next(r for r in refs if r["kind"] == kind)


def finish(acts: Activities, kind: str, name: str, rev: str) -> c.CheckHealthResult:
    """Wait for the runtime, then write the revision's and the package's status."""
    health: c.CheckHealthResult = wait_for(
        lambda: (h := run(acts.check_health, c.CheckHealthInput(kind, name, rev))).healthy
        and h, timeout=20, what="the runtime Deployment to become available")
    run(acts.write_revision_status, c.WriteRevisionStatusInput(
        kind, rev, wst.revision_ok(True, True, ""), objects=2))
    run(acts.write_package_status, c.WritePackageStatusInput(
        kind, name, 1, rev, "", "", wst.package_ok(True, True, "")))
    return health


def test_the_parse_writes_the_packages_meta_and_the_identity_in_one_write(
        acts: Activities, kube: Kube, provider: Pushed, monkeypatch: pytest.MonkeyPatch) -> None:
    """A new revision's metadata (the package's annotations and its API identity) is one
    write, and the revision then holds both."""
    name = unique("meta")
    apply_package(kube, "Provider", name, provider.ref)
    rev_name, digest, _ = install(acts, c.PROVIDER, name, until="parse_package")
    writes: list[Any] = []
    real_patch = kube.patch

    def counting_patch(api_version: str, kind: str, name_: str, body: Any, *rest: Any,
                       **kw: Any) -> Any:
        if kind == "ProviderRevision" and not kw.get("subresource"):
            writes.append(body)
        return real_patch(api_version, kind, name_, body, *rest, **kw)

    monkeypatch.setattr(kube, "patch", counting_patch)
    run(acts.parse_package, c.ParsePackageInput(c.PROVIDER, rev_name, digest))

    assert len(writes) == 1, writes
    annotations = (kube.get(PKG, "ProviderRevision", rev_name) or {})["metadata"]["annotations"]
    assert annotations["meta.crossplane.io/maintainer"] == "Lockwright Tests <tests@example.org>"
    assert annotations[identity_names.API_DIGEST].startswith("sha256:")


def test_provider_installs_step_by_step(acts: Activities, kube: Kube, provider: Pushed) -> None:
    """Every object of an installed Provider, field by field."""
    name = unique("prov")
    pkg = apply_package(kube, "Provider", name, provider.ref)
    rev_name, digest, _ = install(acts, c.PROVIDER, name)
    finish(acts, c.PROVIDER, name, rev_name)

    rev = kube.get(PKG, "ProviderRevision", rev_name)
    assert rev is not None and rev_name == revision_names.revision_name(
        name, provider.digest, 1)
    assert rev["spec"]["desiredState"] == "Active" and rev["spec"]["revision"] == 1
    assert rev["spec"]["image"] == provider.ref
    assert rev["metadata"]["labels"]["pkg.crossplane.io/package"] == name
    assert owner(rev, "Provider") == {"apiVersion": PKG, "kind": "Provider", "name": name,
                                      "uid": pkg["metadata"]["uid"], "controller": True,
                                      "blockOwnerDeletion": True}
    refs = {r["name"] for r in rev["status"]["objectRefs"]}
    assert refs == {f"widgets.{provider.group}", f"providerconfigs.{provider.group}"}
    conds = {x["type"]: x for x in rev["status"]["conditions"]}
    assert conds["RevisionHealthy"]["reason"] == "HealthyPackageRevision"
    assert rev["status"]["permissionRequests"][0]["resources"] == ["secrets"]

    crd = kube.get("apiextensions.k8s.io/v1", "CustomResourceDefinition",
                   f"widgets.{provider.group}")
    ctl = owner(crd, "ProviderRevision")
    assert (ctl["name"], ctl["uid"], ctl["controller"]) == (rev_name, rev["metadata"]["uid"],
                                                            True)
    assert owner(crd, "Provider")["uid"] == pkg["metadata"]["uid"]
    assert not owner(crd, "Provider").get("controller")

    lock = kube.get("pkg.crossplane.io/v1beta1", "Lock", "lock") or {}
    entry = next(e for e in lock["packages"] if e["name"] == rev_name)
    assert entry["kind"] == "Provider" and entry["version"] == "v0.1.0"
    assert entry["source"] == provider.ref.rsplit(":", 1)[0]

    system = kube.get(RBAC, "ClusterRole", f"crossplane:provider:{rev_name}:system") or {}
    assert {"apiGroups": [""], "resources": ["secrets"],
            "verbs": ["get", "list", "watch"]} in system["rules"]
    assert system["rules"][0] == {"apiGroups": [provider.group],
                                  "resources": ["providerconfigs", "providerconfigs/status",
                                                "widgets", "widgets/status"],
                                  "verbs": ["get", "list", "watch", "update", "patch",
                                            "create"]}
    for suffix in ("aggregate-to-edit", "aggregate-to-view", "system"):
        role = kube.get(RBAC, "ClusterRole", f"crossplane:provider:{rev_name}:{suffix}")
        assert owner(role, "ProviderRevision")["uid"] == rev["metadata"]["uid"]
    # lockwright's read of the types, held by the Provider (docs/design.md, "Provider
    # deletion protection"): the view role's rules.
    read = kube.get(RBAC, "ClusterRole", f"lockwright:provider:{name}:read") or {}
    assert owner(read, "Provider")["uid"] == pkg["metadata"]["uid"]
    assert read["rules"] == kube.get(RBAC, "ClusterRole",
                                     f"crossplane:provider:{rev_name}:aggregate-to-view")["rules"]
    binding = kube.get(RBAC, "ClusterRoleBinding", f"crossplane:provider:{rev_name}:system")
    assert binding and binding["subjects"] == [{"kind": "ServiceAccount", "namespace": NS,
                                                "name": rev_name}]

    sa = kube.get("v1", "ServiceAccount", rev_name, NS)
    assert owner(sa, "ProviderRevision")["controller"] is True
    dep = kube.get("apps/v1", "Deployment", rev_name, NS) or {}
    pod = dep["spec"]["template"]["spec"]
    container = pod["containers"][0]
    assert container["name"] == "package-runtime"
    assert container["image"] == "registry.example.org/example/provider-widgets-controller:v0.1.0"
    assert pod["serviceAccountName"] == rev_name
    assert dep["spec"]["selector"]["matchLabels"] == {
        "pkg.crossplane.io/revision": rev_name, "pkg.crossplane.io/provider": name}
    assert {v["secret"]["secretName"] for v in pod["volumes"]} == {
        f"{name}-tls-server", f"{name}-tls-client"}
    svc = kube.get("v1", "Service", name, NS) or {}
    assert svc["spec"]["ports"][0]["port"] == 9443
    assert kube.get("v1", "Secret", f"{name}-tls-server", NS)["data"]["tls.crt"]

    status = (kube.get(PKG, "Provider", name) or {})["status"]
    assert {x["type"]: x["reason"] for x in status["conditions"]} == {
        "Installed": "ActivePackageRevision", "Healthy": "HealthyPackageRevision"}
    assert status["currentRevision"] == rev_name and digest == provider.digest


def snapshot(kube: Kube, name: str, rev: str, group: str) -> dict[str, str]:
    """resourceVersions of everything an install writes."""
    objects = [(PKG, "Provider", name, None), (PKG, "ProviderRevision", rev, None),
               ("pkg.crossplane.io/v1beta1", "Lock", "lock", None),
               ("apiextensions.k8s.io/v1", "CustomResourceDefinition", f"widgets.{group}",
                None),
               (RBAC, "ClusterRole", f"crossplane:provider:{rev}:system", None),
               (RBAC, "ClusterRoleBinding", f"crossplane:provider:{rev}:system", None),
               ("v1", "ServiceAccount", rev, NS), ("apps/v1", "Deployment", rev, NS),
               ("v1", "Service", name, NS), ("v1", "Secret", f"{name}-tls-server", NS),
               ("v1", "Secret", f"{name}-tls-client", NS),
               ("v1", "Secret", "crossplane-root-ca", NS)]
    return {f"{k}/{n}": (kube.get(a, k, n, ns) or {})["metadata"]["resourceVersion"]
            for a, k, n, ns in objects}


def test_every_step_twice_changes_nothing(acts: Activities, kube: Kube,
                                          provider: Pushed) -> None:
    """Run twice, every activity converges: no object's resourceVersion moves."""
    name = unique("twice")
    apply_package(kube, "Provider", name, provider.ref)
    rev, _, steps = install(acts, c.PROVIDER, name)
    finish(acts, c.PROVIDER, name, rev)
    before = snapshot(kube, name, rev, provider.group)
    install(acts, c.PROVIDER, name)
    finish(acts, c.PROVIDER, name, rev)
    assert snapshot(kube, name, rev, provider.group) == before
    # The CRD of widgets, its MRD (Crossplane v2) and the ProviderConfig CRD (stays a CRD).
    assert run(acts.establish_objects, steps[-3][1]) == c.EstablishObjectsResult(
        objects=3, definitions=1, active_definitions=1)


def test_second_package_sharing_a_crd_names_the_first_and_writes_nothing(
        acts: Activities, kube: Kube, registry: Any, tmp_path: Path) -> None:
    """Two packages want one CRD: the second fails naming the first and touches nothing."""
    group = f"{unique('g')}.example.org"
    first = push(registry, provider_root(tmp_path, group), tmp_path, group)
    second = push(registry, provider_root(tmp_path, group, ("widgets",)), tmp_path, group)
    winner, loser = unique("first"), unique("second")
    apply_package(kube, "Provider", winner, first.ref)
    apply_package(kube, "Provider", loser, second.ref)
    winner_rev, _, _ = install(acts, c.PROVIDER, winner, until="ensure_rbac")
    crd_name = f"widgets.{group}"
    crd_before = kube.get("apiextensions.k8s.io/v1", "CustomResourceDefinition", crd_name)
    lock_before = kube.get("pkg.crossplane.io/v1beta1", "Lock", "lock")

    with pytest.raises(ApplicationError) as lost:
        install(acts, c.PROVIDER, loser, until="ensure_tls")
    expected = (f'CustomResourceDefinition.apiextensions.k8s.io "{crd_name}" is already '
                f"controlled by Provider {winner} (revision {winner_rev})")
    # Retried with backoff: the holder may go away (issue 14).
    assert (lost.value.type, lost.value.non_retryable) == ("ConflictError", False)
    assert lost.value.message == expected

    loser_rev = revision_names.revision_name(loser, second.digest, 1)
    establish = c.EstablishObjectsInput(c.PROVIDER, loser, loser_rev, second.digest)
    with pytest.raises(ApplicationError) as lost_again:
        run(acts.establish_objects, establish)
    assert lost_again.value.type == "ConflictError" and winner in lost_again.value.message
    assert kube.get("apiextensions.k8s.io/v1", "CustomResourceDefinition",
                    crd_name) == crd_before
    lock = kube.get("pkg.crossplane.io/v1beta1", "Lock", "lock") or {}
    assert not any(e["name"] == loser_rev for e in lock.get("packages") or [])
    assert lock_before and lock["metadata"]["resourceVersion"] == (
        lock_before["metadata"]["resourceVersion"])
    assert not (kube.get(PKG, "ProviderRevision", loser_rev) or {}).get(
        "status", {}).get("objectRefs")


def test_first_install_finding_a_name_taken_undoes_its_creates_and_names_the_holder(
        acts: Activities, kube: Kube, registry: Any, tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The loser's first object is free, so it creates straight away until a CRD it ships
    turns out taken: what it created is deleted, and the checking pass names the holder."""
    group = f"{unique('g')}.example.org"
    first = push(registry, provider_root(tmp_path, group, ("widgets",)), tmp_path, group)
    second = push(registry, provider_root(tmp_path, group), tmp_path, group)
    winner, loser = unique("first"), unique("second")
    apply_package(kube, "Provider", winner, first.ref)
    apply_package(kube, "Provider", loser, second.ref)
    install(acts, c.PROVIDER, winner, until="ensure_rbac")
    held = kube.get(CRD_API, "CustomResourceDefinition", f"widgets.{group}")
    created: list[str] = []
    real_create = kube.create

    def counting_create(obj: dict[str, Any], **kw: Any) -> Any:
        created.append(obj["metadata"]["name"])
        return real_create(obj, **kw)

    with pytest.raises(ApplicationError):  # the Lock refuses it first
        install(acts, c.PROVIDER, loser, until="ensure_rbac")
    monkeypatch.setattr(kube, "create", counting_create)
    establish = c.EstablishObjectsInput(c.PROVIDER, loser, revision_names.revision_name(
        loser, second.digest, 1),
                                        second.digest)
    with pytest.raises(ApplicationError) as lost:
        run(acts.establish_objects, establish)
    assert lost.value.type == "ConflictError" and winner in lost.value.message
    assert f"providerconfigs.{group}" in created  # the fast path ran, then was undone
    wait_for(lambda: kube.get(CRD_API, "CustomResourceDefinition",
                              f"providerconfigs.{group}") is None,
             timeout=30, what="the loser's own CRD to be deleted")
    assert kube.get(CRD_API, "CustomResourceDefinition", f"widgets.{group}") == held


def webhook(name: str, group: str) -> dict[str, Any]:
    return {"apiVersion": "admissionregistration.k8s.io/v1",
            "kind": "ValidatingWebhookConfiguration", "metadata": {"name": name},
            "webhooks": [{"name": f"{name}.{group}", "admissionReviewVersions": ["v1"],
                          "sideEffects": "None",
                          "clientConfig": {"service": {"name": "x", "namespace": "y",
                                                       "path": "/validate"}},
                          "rules": [{"apiGroups": [group], "apiVersions": ["v1alpha1"],
                                     "operations": ["CREATE"], "resources": ["widgets"]}]}]}


def test_first_install_whose_webhooks_share_a_name_ends_with_its_objects_in_place(
        acts: Activities, kube: Kube, registry: Any, tmp_path: Path) -> None:
    """Two webhook configurations become one name (crossplane-provider-<name>): the first
    create of the fast path finds it taken, undoes what it made and waits until that is
    gone, so the checking pass installs everything, not a CRD being deleted."""
    group = f"{unique('g')}.example.org"
    root = provider_root(tmp_path, group)
    (root / "webhooks.yaml").write_text(yaml.safe_dump_all(
        [webhook("first", group), webhook("second", group)]))
    pushed = push(registry, root, tmp_path, group)
    name = unique("hooks")
    apply_package(kube, "Provider", name, pushed.ref)
    _, _, steps = install(acts, c.PROVIDER, name, until="establish_objects")
    establish = next(arg for fn, arg in steps if fn.__name__ == "establish_objects")
    for _ in range(3):  # the retries the workflow would make
        try:
            run(acts.establish_objects, establish)
            break
        except ApplicationError as exc:
            assert exc.type == "KubeConflict", exc
    for plural in ("providerconfigs", "widgets"):
        crd = kube.get(CRD_API, "CustomResourceDefinition", f"{plural}.{group}") or {}
        assert crd and not crd["metadata"].get("deletionTimestamp"), plural
    assert kube.get("admissionregistration.k8s.io/v1", "ValidatingWebhookConfiguration",
                    f"crossplane-provider-{name}")


def test_a_claim_another_worker_wrote_after_this_one_last_looked_still_makes_it_lose(
        acts: Activities, kube: Kube, registry: Any, tmp_path: Path, provider: Pushed) -> None:
    """This worker's committer keeps the Lock as it last wrote it, and the claims it knows;
    another worker then writes a winner's claim and entry. The loser must not trust what
    its committer knew: its compare-and-swap fails, it reads the Lock and the new entry's
    claim, and loses, naming the winner, holding nothing (the claim it wrote on the Lock
    it kept is withdrawn; docs/design.md invariant 4)."""
    bystander = unique("bystander")  # this worker's last Lock write, and a claim it knows
    apply_package(kube, "Provider", bystander, provider.ref)
    install(acts, c.PROVIDER, bystander, until="ensure_tls")
    group = f"{unique('g')}.example.org"
    pushed = [push(registry, provider_root(tmp_path, group), tmp_path, group) for _ in "ab"]
    names = [unique("early"), unique("late")]
    for name, p in zip(names, pushed, strict=True):
        apply_package(kube, "Provider", name, p.ref)
    steps = [install(acts, c.PROVIDER, name, until="take_lock")[2] for name in names]
    takes = [next(arg for fn, arg in s if fn.__name__ == "take_lock") for s in steps]
    other = Activities(acts.settings, kube, PackageCache(acts.settings.cache_dir))
    run(other.take_lock, takes[1])  # another worker: its own committer
    with pytest.raises(ApplicationError) as lost:
        run(acts.take_lock, takes[0])
    assert lost.value.type == "ConflictError" and names[1] in lost.value.message
    after = kube.get(PKG, "ProviderRevision", takes[0].revision) or {}
    assert not (after.get("status") or {}).get("objectRefs"), after.get("status")


def test_a_candidate_plan_loses_to_a_claim_whose_objects_are_not_created_yet(
        acts: Activities, kube: Kube, registry: Any, tmp_path: Path, provider: Pushed) -> None:
    """``lockwright plan --package``: a CRD another package claimed in the Lock but has not
    created yet (its install stopped before establishing) fails the candidate as the
    upgrade's preparation would, naming the holder, and nothing is written."""
    group = f"{unique('g')}.example.org"
    holder, planned = unique("holder"), unique("planned")
    apply_package(kube, "Provider", holder, push(registry, provider_root(tmp_path, group),
                                                 tmp_path, group).ref)
    holder_rev, _, _ = install(acts, c.PROVIDER, holder, until="establish_objects")
    apply_package(kube, "Provider", planned, provider.ref)
    active, digest, _ = install(acts, c.PROVIDER, planned)
    candidate = push(registry, provider_root(tmp_path, group), tmp_path, group)
    lock = kube.get("pkg.crossplane.io/v1beta1", "Lock", "lock") or {}

    with pytest.raises(ApplicationError) as refused:
        run(acts.plan_revision, c.PlanRevisionInput(
            kind=c.PROVIDER, package=planned, revision=f"candidate {candidate.ref}",
            against=active, against_digest=digest, candidate=candidate.ref))
    assert refused.value.type == "ConflictError", refused.value
    assert f"widgets.{group}" in refused.value.message and holder_rev in refused.value.message
    assert kube.get("apiextensions.k8s.io/v1", "CustomResourceDefinition",
                    f"widgets.{group}") is None
    after = kube.get("pkg.crossplane.io/v1beta1", "Lock", "lock") or {}
    assert after["metadata"]["resourceVersion"] == lock["metadata"]["resourceVersion"]


def test_disallowed_permission_request_is_rejected_naming_the_rule(
        acts: Activities, kube: Kube, registry: Any, tmp_path: Path) -> None:
    """A request no allowed ClusterRole covers fails permanently; no role is written."""
    group = f"{unique('g')}.example.org"
    wanted = [{"apiGroups": ["apps"], "resources": ["deployments"], "verbs": ["delete"]}]
    pushed = push(registry, provider_root(tmp_path, group, requests=wanted), tmp_path, group)
    name = unique("greedy")
    apply_package(kube, "Provider", name, pushed.ref)
    rev, _, steps = install(acts, c.PROVIDER, name, until="ensure_rbac")
    rbac_step = next(arg for fn, arg in steps if fn.__name__ == "ensure_rbac")
    with pytest.raises(ApplicationError) as rejected:
        run(acts.ensure_rbac, rbac_step)
    assert (rejected.value.type, rejected.value.non_retryable) == ("PermissionRejected", True)
    assert rejected.value.message == (
        "refusing to apply any RBAC roles due to request for disallowed permission "
        '{apiGroup: "apps", resource: "deployments", resourceName: "*", verb: "delete"}')
    assert kube.get(RBAC, "ClusterRole", f"crossplane:provider:{rev}:system") is None
    events = kube.list("v1", "Event", "default")
    assert any(e["reason"] == "ApplyClusterRoles" and e["involvedObject"]["name"] == rev
               and e["type"] == "Warning" for e in events)


def test_only_the_active_revision_writes_lockwrights_read_of_the_types(
        acts: Activities, kube: Kube, provider: Pushed) -> None:
    """An inactive revision's RBAC leaves the Provider's read role alone: it holds the
    types of the revision that runs (docs/design.md, "Provider deletion protection")."""
    import dataclasses

    name = unique("prov")
    apply_package(kube, "Provider", name, provider.ref)
    rev, _, steps = install(acts, c.PROVIDER, name, until="ensure_rbac")
    rbac_step = next(arg for fn, arg in steps if fn.__name__ == "ensure_rbac")
    run(acts.ensure_rbac, dataclasses.replace(rbac_step, active=False))
    assert kube.get(RBAC, "ClusterRole", f"crossplane:provider:{rev}:aggregate-to-view")
    assert kube.get(RBAC, "ClusterRole", f"lockwright:provider:{name}:read") is None
    run(acts.ensure_rbac, rbac_step)
    assert kube.get(RBAC, "ClusterRole", f"lockwright:provider:{name}:read")


def test_lock_compare_and_swap_loses_no_entry_under_10_concurrent_writers(
        acts: Activities, kube: Kube, registry: Any, tmp_path: Path) -> None:
    """Ten take_lock calls at once: every entry lands; losers of a round retried."""
    pushed = push(registry, DATA / "function", tmp_path)
    names = [unique("fn") for _ in range(10)]
    for name in names:
        apply_package(kube, "Function", name, pushed.ref)
        install(acts, c.FUNCTION, name, until="take_lock")
    revs = [revision_names.revision_name(n, pushed.digest, 1) for n in names]
    inputs = [c.TakeLockInput(c.FUNCTION, n, r, pushed.ref, pushed.digest)
              for n, r in zip(names, revs, strict=True)]
    with ThreadPoolExecutor(10) as pool:
        results = list(pool.map(lambda i: run(acts.take_lock, i), inputs))
    lock = kube.get("pkg.crossplane.io/v1beta1", "Lock", "lock") or {}
    entries = {e["name"]: e for e in lock["packages"]}
    assert all(r in entries and entries[r]["kind"] == "Function" for r in revs)
    assert all(r.resource_version for r in results)
    assert sum(r.cas_attempts for r in results) >= 10


@pytest.mark.parametrize("meanwhile", ["retired", "deleted"])
def test_a_take_that_read_the_revision_before_it_went_leaves_no_entry(
        acts: Activities, kube: Kube, registry: Any, tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch, meanwhile: str) -> None:
    """take_lock read the revision Active; it is retired (marked Inactive) or deleted
    before the take reaches the Lock: the take leaves no entry, and a retired revision
    keeps no claim (the committer's write of it answered that it was Inactive)."""
    pushed = push(registry, DATA / "function", tmp_path)
    name = unique("fn")
    apply_package(kube, "Function", name, pushed.ref)
    rev, digest, _ = install(acts, c.FUNCTION, name, until="take_lock")
    real_take = acts.keeper.take

    def gone_meanwhile(*args: Any) -> Any:  # after the take's read, before its turn
        if meanwhile == "retired":
            kube.patch(PKG, "FunctionRevision", rev, {"spec": {"desiredState": "Inactive"}})
        else:
            kube.delete(PKG, "FunctionRevision", rev)
        return real_take(*args)

    monkeypatch.setattr(acts.keeper, "take", gone_meanwhile)
    inp = c.TakeLockInput(c.FUNCTION, name, rev, pushed.ref, digest)
    if meanwhile == "retired":
        assert run(acts.take_lock, inp) == c.TakeLockResult()
        left = kube.get(PKG, "FunctionRevision", rev) or {}
        assert not (left.get("status") or {}).get("objectRefs"), left.get("status")
    else:
        with pytest.raises(ApplicationError) as gone:
            run(acts.take_lock, inp)
        assert gone.value.type == "ObjectGone", gone.value
    lock = kube.get("pkg.crossplane.io/v1beta1", "Lock", "lock") or {}
    assert rev not in {e["name"] for e in lock.get("packages") or []}


def test_missing_image_is_a_permanent_package_not_found(
        acts: Activities, kube: Kube, registry: Any) -> None:
    """Errors cross the edge typed: a tag the registry lacks is PackageNotFound, final."""
    name = unique("ghost")
    apply_package(kube, "Provider", name, f"{registry.host}/test/{unique('none')}:v9.9.9")
    with pytest.raises(ApplicationError) as missing:
        install(acts, c.PROVIDER, name)
    # Retried with backoff: the tag may be pushed later (issue 14).
    assert (missing.value.type, missing.value.non_retryable) == ("PackageNotFound", False)
    events = kube.list("v1", "Event", "default")
    assert any(e["reason"] == "UnpackPackage" and e["involvedObject"]["name"] == name
               for e in events)


def test_upgrade_hands_control_over_then_collects_and_cleans_up(
        acts: Activities, kube: Kube, registry: Any, tmp_path: Path, provider: Pushed) -> None:
    """v1 → v2: v1 releases control, leaves the Lock, loses its runtime; v2 controls."""
    name = unique("upg")
    apply_package(kube, "Provider", name, provider.ref)
    old, _, _ = install(acts, c.PROVIDER, name)
    root = provider_root(tmp_path, provider.group)
    (root / "crossplane.yaml").write_text((root / "crossplane.yaml").read_text().replace(
        "A tiny provider for tests.", "A tiny provider for tests, version two."))
    v2 = push(registry, root, tmp_path, provider.group)
    kube.patch(PKG, "Provider", name, {"spec": {"package": v2.ref}})
    new, _, _ = install(acts, c.PROVIDER, name)

    old_rev = kube.get(PKG, "ProviderRevision", old) or {}
    new_rev = kube.get(PKG, "ProviderRevision", new) or {}
    assert (old_rev["spec"]["desiredState"], new_rev["spec"]["desiredState"]) == (
        "Inactive", "Active")
    assert new_rev["spec"]["revision"] == 2
    crd = kube.get("apiextensions.k8s.io/v1", "CustomResourceDefinition",
                   f"widgets.{provider.group}") or {}
    by_name = {r["name"]: r for r in crd["metadata"]["ownerReferences"]}
    assert by_name[new].get("controller") is True and not by_name[old].get("controller")
    assert kube.get("apps/v1", "Deployment", old, NS) is None
    entries = {e["name"] for e in (kube.get("pkg.crossplane.io/v1beta1", "Lock",
                                            "lock") or {})["packages"]}
    assert new in entries and old not in entries

    collected = run(acts.collect_revisions, c.CollectRevisionsInput(c.PROVIDER, name, new, 0))
    assert collected.deleted == [old]
    kube.delete(PKG, "Provider", name)
    # The revision is still there until the garbage collector gets to it: its entry stays.
    early = run(acts.cleanup_package, c.CleanupPackageInput(c.PROVIDER, name))
    if kube.get(PKG, "ProviderRevision", new) is not None:
        assert (early.removed, early.waiting) == (0, 1), early
    wait_for(lambda: kube.get(PKG, "ProviderRevision", new) is None, what="revision collected")
    done = run(acts.cleanup_package, c.CleanupPackageInput(c.PROVIDER, name))
    assert (done.removed + early.removed, done.waiting, done.orphaned) == (1, 0, 0), done
    lock = kube.get("pkg.crossplane.io/v1beta1", "Lock", "lock") or {}
    assert new not in {e["name"] for e in lock["packages"]}


def test_pull_secret_is_read_inside_the_activity(
        acts: Activities, kube: Kube, auth_registry: Any, tmp_path: Path) -> None:
    """A private image resolves and fetches with packagePullSecrets; without, Unauthorized."""
    auths = {auth_registry.host: {"username": auth_registry.username,
                                  "password": auth_registry.password}}
    tarball = tmp_path / "private.xpkg"
    with build_package(DATA / "function") as built:
        built.write(tarball)
    ref = f"{auth_registry.host}/test/{unique('private')}:v1"
    client = RegistryClient(insecure=[auth_registry.host],
                            auths=DockerAuths.from_json(json.dumps({"auths": auths})))
    with contextlib.closing(read_tarball(tarball)) as image:
        digest = push_package(client, ref, [image])
    secret = unique("regcred")
    kube.create({"apiVersion": "v1", "kind": "Secret", "type": "kubernetes.io/dockerconfigjson",
                 "metadata": {"name": secret, "namespace": NS},
                 "data": {".dockerconfigjson": base64.b64encode(
                     json.dumps({"auths": auths}).encode()).decode()}})
    settings = Settings(cache_dir=str(tmp_path / "c2"), insecure_registries=(auth_registry.host,))
    private = Activities(settings, kube, PackageCache(settings.cache_dir))
    name, bare = unique("priv"), unique("bare")
    for pkg in (name, bare):
        kube.create({"apiVersion": PKG, "kind": "Function", "metadata": {"name": pkg},
                     "spec": {"package": ref, "packagePullSecrets": (
                         [{"name": secret}] if pkg == name else [])}})
    resolved = run(private.resolve_digest, c.ResolveDigestInput(c.FUNCTION, name, ref))
    assert resolved.digest == digest
    ensured = run(private.ensure_revision, c.EnsureRevisionInput(c.FUNCTION, name, ref, digest))
    fetched = run(private.fetch_package, c.FetchPackageInput(
        c.FUNCTION, name, ensured.revision, ref, digest))
    assert fetched.object_counts == {"CustomResourceDefinition": 1} and not fetched.cached
    with pytest.raises(ApplicationError) as refused:
        run(private.resolve_digest, c.ResolveDigestInput(c.FUNCTION, bare, ref))
    # Retried with backoff: a pull Secret may appear (issue 14).
    assert (refused.value.type, refused.value.non_retryable) == ("Unauthorized", False)
    assert auth_registry.password not in refused.value.message


def test_after_fetch_no_activity_decodes_yaml_and_establish_reads_each_object_once(
        acts: Activities, kube: Kube, provider: Pushed, tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The fetch's one YAML parse wrote documents.jsonl; a worker that did not fetch (no
    summary in memory) validates, establishes and renders from it. A first install reads
    one object (to find nothing there yet) and creates the rest without reading; run
    again, it reads that one and then each object once (the check pass's GET)."""
    name = unique("once")
    apply_package(kube, "Provider", name, provider.ref)
    rev, digest, _ = install(acts, c.PROVIDER, name, until="parse_package")
    fresh = Activities(acts.settings, kube, acts.cache)

    def no_yaml(*_: Any, **__: Any) -> Any:
        raise AssertionError("package.yaml decoded again after fetch")

    monkeypatch.setattr(yaml, "load_all", no_yaml)
    reads = crd_reads(kube, monkeypatch)
    steps = install_steps(fresh, c.PROVIDER, name, digest, provider.ref)[2:]
    for fn, arg in steps:
        run(fn, arg)
    crds = [f"providerconfigs.{provider.group}", f"widgets.{provider.group}"]
    assert len(reads) == 1 and reads[0] in crds
    assert (kube.get(PKG, "ProviderRevision", rev) or {})["status"]["objectRefs"]
    reads.clear()
    establish = next(arg for fn, arg in steps if fn.__name__ == "establish_objects")
    assert run(fresh.establish_objects, establish).created == 0
    assert sorted(set(reads)) == crds and len(reads) == len(crds) + 1


def test_cache_entry_without_its_documents_is_fetched_again(
        acts: Activities, kube: Kube, provider: Pushed) -> None:
    """An entry missing documents.jsonl (an older version's, or damaged) is a miss: the
    activity that needs it fetches the package again and the entry is whole after."""
    name = unique("nodocs")
    apply_package(kube, "Provider", name, provider.ref)
    _, digest, steps = install(acts, c.PROVIDER, name, until="establish_objects")
    entry = acts.cache.get(digest)
    assert entry is not None
    entry.documents.unlink()
    establish = next(arg for fn, arg in steps if fn.__name__ == "establish_objects")
    assert run(acts.establish_objects, establish).objects == 3  # with the widgets MRD
    again = acts.cache.get(digest)
    assert again is not None and again.documents.stat().st_size == again.documents_size > 0


def racing(monkeypatch: pytest.MonkeyPatch, kube: Kube, crd: str, every: bool) -> list[str]:
    """Make each real update of CRD ``crd`` (only the first unless ``every``) follow
    another writer's label write: the update carries a stale resourceVersion. Returns the
    list the label values written go into."""
    real_update, written = kube.update, []

    def racing_update(obj: dict[str, Any]) -> Any:
        if (obj["kind"], obj["metadata"]["name"]) == ("CustomResourceDefinition", crd) and (
                every or not written):
            written.append(f"x{len(written)}")
            kube.patch("apiextensions.k8s.io/v1", "CustomResourceDefinition", crd,
                       {"metadata": {"labels": {"other-writer": written[-1]}}})
        return real_update(obj)

    monkeypatch.setattr(kube, "update", racing_update)
    return written


def test_object_changed_between_check_and_write_is_read_and_written_again(
        acts: Activities, kube: Kube, provider: Pushed, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Writes carry the resourceVersion the check pass read: a change in between makes
    the write a compare-and-swap conflict, and that object is read, planned, dry-run and
    written again on top of the change, in the same attempt."""
    name = unique("cas")
    apply_package(kube, "Provider", name, provider.ref)
    rev, _, steps = install(acts, c.PROVIDER, name)
    kube.patch(PKG, "ProviderRevision", rev, {"spec": {"commonLabels": {"team": "a"}}})
    crd = f"widgets.{provider.group}"
    written = racing(monkeypatch, kube, crd, every=False)
    establish = next(arg for fn, arg in steps if fn.__name__ == "establish_objects")
    assert run(acts.establish_objects, establish).updated >= 1
    assert written == ["x0"]
    labels = (kube.get("apiextensions.k8s.io/v1", "CustomResourceDefinition", crd)
              or {})["metadata"]["labels"]
    assert labels["team"] == "a" and labels["other-writer"] == "x0"


def test_object_changing_before_every_write_fails_the_attempt_and_retry_converges(
        acts: Activities, kube: Kube, provider: Pushed, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An object changed before each of its writes gives up after a few attempts, as a
    compare-and-swap conflict (retryable), and the retry applies on top."""
    name = unique("cas")
    apply_package(kube, "Provider", name, provider.ref)
    rev, _, steps = install(acts, c.PROVIDER, name)
    kube.patch(PKG, "ProviderRevision", rev, {"spec": {"commonLabels": {"team": "a"}}})
    crd, real_update = f"widgets.{provider.group}", kube.update
    written = racing(monkeypatch, kube, crd, every=True)
    establish = next(arg for fn, arg in steps if fn.__name__ == "establish_objects")
    with pytest.raises(ApplicationError) as raced:
        run(acts.establish_objects, establish)
    assert (raced.value.type, raced.value.non_retryable) == ("KubeConflict", False)
    assert "kept changing while it was written" in raced.value.message
    assert len(written) == 1 + DRY_RUN_ATTEMPTS  # the write, then each attempt again
    monkeypatch.setattr(kube, "update", real_update)
    # The other CRD may have been written by the failed attempt already; this one is not.
    assert run(acts.establish_objects, establish).updated >= 1
    labels = (kube.get("apiextensions.k8s.io/v1", "CustomResourceDefinition", crd)
              or {})["metadata"]["labels"]
    assert labels["team"] == "a" and labels["other-writer"] == written[-1]


def test_a_revision_keeps_the_image_its_digest_came_from_when_the_spec_moves_on(
        acts: Activities, kube: Kube, provider: Pushed) -> None:
    """A pass that resolved the old source ensures that revision after the package was
    changed: the revision keeps the old image (it once took the new one, so the old
    revision looked like the upgrade's and entered the Lock under the new version)."""
    name = unique("moved")
    apply_package(kube, "Provider", name, provider.ref)
    pkg = run(acts.read_package, c.ReadPackageInput(c.PROVIDER, name))
    resolved = run(acts.resolve_digest, c.ResolveDigestInput(c.PROVIDER, name, pkg.source))
    moved = provider.ref.rsplit(":", 1)[0] + ":v9.9.9"
    kube.patch(PKG, "Provider", name, {"spec": {"package": moved}})
    for _ in range(2):  # created, then refreshed
        ensured = run(acts.ensure_revision, c.EnsureRevisionInput(
            c.PROVIDER, name, pkg.source, resolved.digest, pkg.generation))
        rev = kube.get(PKG, "ProviderRevision", ensured.revision) or {}
        assert rev["spec"]["image"] == provider.ref, rev["spec"]


def test_only_the_first_revision_is_created_active_when_the_workflow_asks(
        acts: Activities, kube: Kube, provider: Pushed) -> None:
    """``active_if_first``: the package's first revision is created Active; a later one,
    asked the same, Inactive (the switch activates it); unasked, Inactive as before."""
    name, other = unique("first"), unique("first")
    for n in (name, other):
        apply_package(kube, "Provider", n, provider.ref)
    first = run(acts.ensure_revision, c.EnsureRevisionInput(
        c.PROVIDER, name, provider.ref, provider.digest, 1, active_if_first=True))
    later = run(acts.ensure_revision, c.EnsureRevisionInput(
        c.PROVIDER, name, provider.ref, "sha256:" + "1" * 64, 1, active_if_first=True))
    unasked = run(acts.ensure_revision, c.EnsureRevisionInput(
        c.PROVIDER, other, provider.ref, provider.digest, 1))
    states = [(e.created, e.desired_state, (kube.get(PKG, "ProviderRevision", e.revision)
                                            or {})["spec"]["desiredState"])
              for e in (first, later, unasked)]
    assert states == [(True, c.ACTIVE, c.ACTIVE), (True, c.INACTIVE, c.INACTIVE),
                      (True, c.INACTIVE, c.INACTIVE)]


def test_a_dependency_moves_only_from_the_version_the_resolver_decided_from(
        acts: Activities, kube: Kube, registry: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """apply_resolution (LOCKWRIGHT_DEPENDENCY_UPGRADES): a dependency at the version the
    resolver saw moves; one pointed elsewhere since, by hand or by an upgrade the Lock has
    not caught up with, keeps its spec; an edit racing the patch fails it with a 409."""
    repo = f"{registry.host}/{unique('dep')}"
    names = [unique("dep"), unique("dep"), unique("dep")]
    for name in names:
        apply_package(kube, "Provider", name, f"{repo}:v1.0.0")
    kube.patch(PKG, "Provider", names[1], {"spec": {"package": f"{repo}:v3.0.0"}})
    changes = [c.DependencyChange("Provider", n, f"{repo}:v2.0.0", from_version="v1.0.0")
               for n in names]
    done = run(acts.apply_resolution, c.ApplyResolutionInput(changes=changes[:2]))
    assert done.moved == [f"{repo}:v2.0.0"]
    assert [(kube.get(PKG, "Provider", n) or {})["spec"]["package"] for n in names] == [
        f"{repo}:v2.0.0", f"{repo}:v3.0.0", f"{repo}:v1.0.0"]
    real_patch = kube.patch

    def racing_patch(api: str, kind: str, name: str, body: Any, **kw: Any) -> Any:
        if name == names[2] and "resourceVersion" in body.get("metadata", {}):
            real_patch(api, kind, name, {"spec": {"package": f"{repo}:v4.0.0"}})
        return real_patch(api, kind, name, body, **kw)

    monkeypatch.setattr(kube, "patch", racing_patch)
    with pytest.raises(ApplicationError) as raced:
        run(acts.apply_resolution, c.ApplyResolutionInput(changes=changes[2:]))
    assert (raced.value.type, raced.value.non_retryable) == ("KubeConflict", False)
    assert (kube.get(PKG, "Provider", names[2]) or {})["spec"]["package"] == f"{repo}:v4.0.0"


# --- deletion (issue 14, docs/design.md invariant 8) --------------------------------------
def test_steps_on_a_package_being_deleted_end_with_object_gone(
        acts: Activities, kube: Kube, provider: Pushed) -> None:
    """A deletionTimestamp on the package or the revision stops every write for it."""
    name = unique("going")
    apply_package(kube, "Provider", name, provider.ref)
    rev, digest, steps = install(acts, c.PROVIDER, name, until="establish_objects")
    kube.patch(PKG, "ProviderRevision", rev, {"metadata": {"finalizers": ["test/hold"]}})
    kube.delete(PKG, "ProviderRevision", rev, propagation="Foreground")
    establish = next(arg for fn, arg in steps if fn.__name__ == "establish_objects")
    with pytest.raises(ApplicationError) as going:
        run(acts.establish_objects, establish)
    assert (going.value.type, going.value.non_retryable) == ("ObjectGone", True)
    assert going.value.message == f"ProviderRevision {rev} is being deleted"
    with pytest.raises(ApplicationError) as again:  # never re-created while it goes
        run(acts.ensure_revision, c.EnsureRevisionInput(c.PROVIDER, name, provider.ref, digest))
    assert again.value.type == "ObjectGone"
    assert kube.get("apiextensions.k8s.io/v1", "CustomResourceDefinition",
                    f"widgets.{provider.group}") is None  # establish wrote nothing
    kube.patch(PKG, "ProviderRevision", rev, {"metadata": {"finalizers": None}})
    kube.delete(PKG, "Provider", name)
    with pytest.raises(ApplicationError) as gone:
        run(acts.write_package_status, c.WritePackageStatusInput(c.PROVIDER, name))
    assert (gone.value.type, gone.value.message) == ("ObjectGone", f"Provider {name} is gone")


def test_orphaned_revisions_stay_until_a_new_package_adopts_them(
        acts: Activities, kube: Kube, provider: Pushed) -> None:
    """Orphan deletion: clean-up leaves them and their Lock entry; a same-named package adopts."""
    name = unique("orph")
    apply_package(kube, "Provider", name, provider.ref)
    rev, digest, _ = install(acts, c.PROVIDER, name)
    run(acts.write_revision_status, c.WriteRevisionStatusInput(
        c.PROVIDER, rev, wst.revision_ok(True, True, "")))
    kube.delete(PKG, "Provider", name, propagation="Orphan")
    wait_for(lambda: kube.get(PKG, "Provider", name) is None, what="package orphan-deleted")
    assert not (kube.get(PKG, "ProviderRevision", rev) or {})["metadata"].get("ownerReferences")
    left = run(acts.cleanup_package, c.CleanupPackageInput(c.PROVIDER, name))
    assert (left.removed, left.waiting, left.orphaned) == (0, 0, 1), left
    entries = {e["name"] for e in (kube.get("pkg.crossplane.io/v1beta1", "Lock",
                                            "lock") or {})["packages"]}
    assert rev in entries

    again = apply_package(kube, "Provider", name, provider.ref)
    ensured = run(acts.ensure_revision, c.EnsureRevisionInput(
        c.PROVIDER, name, provider.ref, digest, 1))
    assert (ensured.revision, ensured.created, ensured.fresh) == (rev, False, False)
    refs = (kube.get(PKG, "ProviderRevision", rev) or {})["metadata"]["ownerReferences"]
    assert [(r["uid"], r["controller"], r["blockOwnerDeletion"]) for r in refs] == [
        (again["metadata"]["uid"], True, True)]
    server = run(acts.ensure_tls, c.EnsureTlsInput(c.PROVIDER, name, rev)).server_secret
    secret = kube.get("v1", "Secret", server, NS) or {}
    assert [r["uid"] for r in secret["metadata"]["ownerReferences"]] == [
        again["metadata"]["uid"]]  # the orphaned TLS Secret is adopted too


def test_unauthorized_names_the_missing_pull_secret(
        acts: Activities, kube: Kube, auth_registry: Any) -> None:
    name, secret = unique("early"), unique("not-yet")
    ref = f"{auth_registry.host}/test/{unique('private')}:v1"
    kube.create({"apiVersion": PKG, "kind": "Configuration", "metadata": {"name": name},
                 "spec": {"package": ref, "packagePullSecrets": [{"name": secret}]}})
    settings = Settings(cache_dir=acts.settings.cache_dir,
                        insecure_registries=(auth_registry.host,))
    private = Activities(settings, kube, PackageCache(settings.cache_dir))
    with pytest.raises(ApplicationError) as refused:
        run(private.resolve_digest, c.ResolveDigestInput(c.CONFIGURATION, name, ref))
    assert (refused.value.type, refused.value.non_retryable) == ("Unauthorized", False)
    assert f"pull secret {NS}/{secret} not found" in refused.value.message


# --- all or nothing: CRD preflight and server-side dry runs ------------------------------
CRD_API = "apiextensions.k8s.io/v1"


def edit_crd(root: Path, plural: str, old: str, new: str) -> None:
    """Replace ``old`` by ``new`` in the package's CRD file for ``plural``."""
    path = next(p for p in (root / "crds").iterdir() if p.name.endswith(f"_{plural}.yaml"))
    assert old in path.read_text()
    path.write_text(path.read_text().replace(old, new))


def sync_warnings(kube: Kube, rev: str) -> list[str]:
    return [e["message"] for e in kube.list("v1", "Event", "default")
            if e["reason"] == "SyncPackage" and e["involvedObject"]["name"] == rev
            and e["type"] == "Warning"]


def test_kube_dry_runs_check_like_writes_and_store_nothing(kube: Kube) -> None:
    """``dry_run=True`` and the ``dry_runs()`` view answer as the write would (errors too)
    and store nothing."""
    from lockwright.errors import KubeConflict, KubeInvalid

    cm = {"apiVersion": "v1", "kind": "ConfigMap",
          "metadata": {"name": unique("dry"), "namespace": NS}, "data": {"a": "1"}}
    name = cm["metadata"]["name"]
    assert kube.create(cm, dry_run=True)["data"] == {"a": "1"}
    dry = kube.dry_runs()
    dry.create(cm)
    assert kube.get("v1", "ConfigMap", name, NS) is None
    live = kube.create(cm)
    dry.update({**live, "data": {"a": "2"}})
    kube.update({**live, "data": {"a": "3"}}, dry_run=True)
    dry.patch("v1", "ConfigMap", name, {"data": {"a": "4"}}, NS)
    kube.patch("v1", "ConfigMap", name, {"data": {"a": "5"}}, NS, dry_run=True)
    after = kube.get("v1", "ConfigMap", name, NS) or {}
    assert (after["data"], after["metadata"]["resourceVersion"]) == (
        {"a": "1"}, live["metadata"]["resourceVersion"])
    with pytest.raises(KubeAlreadyExists):
        dry.create(cm)
    with pytest.raises(KubeInvalid):
        dry.patch("v1", "ConfigMap", name, {"metadata": {"name": "other"}}, NS)
    with pytest.raises(KubeConflict):  # compare-and-swap holds for dry runs too
        dry.update({**after, "metadata": {**after["metadata"], "resourceVersion": "1"}})


def test_api_rejecting_the_second_crd_writes_nothing(
        acts: Activities, kube: Kube, registry: Any, tmp_path: Path) -> None:
    """A first install creates straight away; the API refusing one CRD (422) fails the
    attempt permanently, with a Warning Event, and the CRDs it had created are deleted
    (the API removes a deleted CRD after its clean-up finalizer: waited for)."""
    group = f"{unique('g')}.example.org"
    root = provider_root(tmp_path, group)
    edit_crd(root, "widgets", "type: integer\n          jsonPath: .spec.forProvider.size",
             "type: bogus\n          jsonPath: .spec.forProvider.size")
    pushed = push(registry, root, tmp_path, group)
    name = unique("rejected")
    apply_package(kube, "Provider", name, pushed.ref)
    rev, _, steps = install(acts, c.PROVIDER, name, until="establish_objects")
    establish = next(arg for fn, arg in steps if fn.__name__ == "establish_objects")
    with pytest.raises(ApplicationError) as rejected:
        run(acts.establish_objects, establish)
    assert (rejected.value.type, rejected.value.non_retryable) == ("KubeInvalid", True)
    assert f"widgets.{group}" in rejected.value.message
    assert "additionalPrinterColumns[2].type" in rejected.value.message
    wait_for(lambda: all(kube.get(CRD_API, "CustomResourceDefinition", f"{p}.{group}") is None
                         for p in ("providerconfigs", "widgets")),
             timeout=30, what="the refused install's CRDs to be gone")
    assert any(f"widgets.{group}" in m for m in sync_warnings(kube, rev))


def test_upgrade_dropping_a_stored_crd_version_is_refused_and_writes_nothing(
        acts: Activities, kube: Kube, registry: Any, tmp_path: Path, provider: Pushed) -> None:
    """v2 ships widgets with v1beta1 only while v1alpha1 is stored and served: the
    preflight refuses it permanently, naming both fixes; no object changes. As an
    inactive revision, which only adds owner references, it is not refused."""
    name = unique("stored")
    apply_package(kube, "Provider", name, provider.ref)
    old, _, _ = install(acts, c.PROVIDER, name)
    root = provider_root(tmp_path, provider.group)
    edit_crd(root, "widgets", "- name: v1alpha1", "- name: v1beta1")
    v2 = push(registry, root, tmp_path, provider.group)
    kube.patch(PKG, "Provider", name, {"spec": {"package": v2.ref}})
    new, _, steps = install(acts, c.PROVIDER, name, until="establish_objects")
    crds = {p: kube.get(CRD_API, "CustomResourceDefinition", f"{p}.{provider.group}")
            for p in ("providerconfigs", "widgets")}
    establish = next(arg for fn, arg in steps if fn.__name__ == "establish_objects")
    with pytest.raises(ApplicationError) as refused:
        run(acts.establish_objects, establish)

    crd = f"CustomResourceDefinition widgets.{provider.group}"
    assert (refused.value.type, refused.value.non_retryable) == ("PreflightError", True)
    assert refused.value.message == (
        f"{crd}: version v1alpha1 is still in status.storedVersions but the new package "
        "drops it; run a storage migration to the new storage version and remove v1alpha1 "
        "from status.storedVersions, or keep v1alpha1 in spec.versions; "
        f"{crd}: version v1alpha1 is served but the new package drops it; keep v1alpha1 "
        "served")
    assert {p: kube.get(CRD_API, "CustomResourceDefinition", f"{p}.{provider.group}")
            for p in crds} == crds
    assert not any(r["name"] == new for r in crds["widgets"]["metadata"]["ownerReferences"])
    assert sync_warnings(kube, new) == [
        "cannot establish control of object: " + refused.value.message]

    inactive = c.EstablishObjectsInput(c.PROVIDER, name, new, v2.digest, control=False)
    owned = run(acts.establish_objects, inactive)
    assert owned == c.EstablishObjectsResult(objects=3, updated=3, definitions=1,
                                             active_definitions=1)
    widgets = kube.get(CRD_API, "CustomResourceDefinition", f"widgets.{provider.group}") or {}
    assert [v["name"] for v in widgets["spec"]["versions"]] == ["v1alpha1"]
    refs = {r["name"]: r for r in widgets["metadata"]["ownerReferences"]}
    assert old in refs and new in refs and not refs[new].get("controller")


def test_health_looks_at_the_deployment_ensure_runtime_applied(
        acts: Activities, kube: Kube, provider: Pushed) -> None:
    """Given the Deployment ``ensure_runtime`` returned, ``check_health`` looks at that one
    rather than finding it again from the revision's runtime config (an ImageConfig list
    and a DRC read, on a server busy establishing the kinds just created)."""
    name = unique("health")
    apply_package(kube, "Provider", name, provider.ref)
    rev, _, steps = install(acts, c.PROVIDER, name, until="ensure_runtime")
    ensured = run(*steps[-1])
    assert ensured.deployment
    found = wait_for(lambda: (h := run(acts.check_health, c.CheckHealthInput(
        c.PROVIDER, name, rev, deployment=ensured.deployment))).healthy and h,
        timeout=20, what="the runtime Deployment to become available")
    assert found.healthy

    elsewhere = run(acts.check_health, c.CheckHealthInput(
        c.PROVIDER, name, rev, deployment=unique("absent")))
    assert not elsewhere.healthy
    # and without the name, found from the runtime config as before
    assert run(acts.check_health, c.CheckHealthInput(c.PROVIDER, name, rev)).healthy
