"""One dry run per switch-over (issue 33): establish trusts the preparation's dry run unless
something changed in between (lockwright.activities.trust).

The real activities against devcluster, called in the order an upgrade calls them: v1
installed; v2 prepared (fetch, parse, the Lock checked, every write dry-run as if active);
the hand-off (v2 Active, v1 Inactive, v1 keeping its runtime); then the switch's Lock and
TLS, and establish with the preparation's fingerprints. Unchanged, no object is dry-run
again; an object written by someone else, or the Lock changed, and its writes are.

On the worker that prepared, the switch writes from the preparation's checks without
reading the objects again (``from_preparation``); an object changed since is refused by
its write (a take tests the metadata it was decided on) and checked again on its own
(``rechecked``). A status written since is not such a change. Another worker reads every
object and compares fingerprints.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from lockwright import contracts as c
from lockwright.errors import KubeConflict
from lockwright.k8s import Kube
from lockwright.oci.cache import PackageCache
from lockwright.settings import Settings
from lockwright.objects import lock as lk
from tests.activity_view import Activities
from tests.helpers import unique
from tests.integration.test_activities import (  # noqa: F401 - fixtures used by name
    PKG,
    Pushed,
    acts,
    apply_package,
    crd_reads,
    install,
    kube,
    provider,
    provider_root,
    push,
    run,
)

pytestmark = pytest.mark.registry


def prepare(acts: Activities, kube: Kube, registry: Any, tmp_path: Path, provider: Pushed,
            name: str) -> tuple[c.ResolveDigestResult, str, c.EstablishObjectsResult]:
    """v1 installed, v2 applied and prepared: (v2 resolved, v2's revision, its dry run)."""
    apply_package(kube, "Provider", name, provider.ref)
    install(acts, c.PROVIDER, name)
    root = provider_root(tmp_path, provider.group)
    (root / "crossplane.yaml").write_text((root / "crossplane.yaml").read_text().replace(
        "A tiny provider for tests.", "A tiny provider for tests, version two."))
    v2 = push(registry, root, tmp_path, provider.group)
    kube.patch(PKG, "Provider", name, {"spec": {"package": v2.ref}})
    pkg = run(acts.read_package, c.ReadPackageInput(c.PROVIDER, name))
    resolved = run(acts.resolve_digest, c.ResolveDigestInput(c.PROVIDER, name, pkg.source))
    rev = run(acts.ensure_revision, c.EnsureRevisionInput(
        c.PROVIDER, name, pkg.source, resolved.digest, pkg.generation)).revision
    source, digest = resolved.resolved_source, resolved.digest
    run(acts.fetch_package, c.FetchPackageInput(c.PROVIDER, name, rev, source, digest))
    run(acts.parse_package, c.ParsePackageInput(c.PROVIDER, rev, digest))
    run(acts.take_lock, c.TakeLockInput(c.PROVIDER, name, rev, source, digest,
                                        check_only=True))
    prepared = run(acts.establish_objects, c.EstablishObjectsInput(
        c.PROVIDER, name, rev, digest, control=True, dry_run=True))
    return resolved, rev, prepared


def switch(acts: Activities, name: str, rev: str, resolved: c.ResolveDigestResult,
           trust: list[str]) -> c.EstablishObjectsResult:
    """The hand-off, then the switch's steps up to establish, given ``trust``."""
    run(acts.set_active_revision, c.SetActiveRevisionInput(c.PROVIDER, name, rev,
                                                           keep_runtime=True))
    run(acts.take_lock, c.TakeLockInput(c.PROVIDER, name, rev, resolved.resolved_source,
                                        resolved.digest))
    run(acts.ensure_tls, c.EnsureTlsInput(c.PROVIDER, name, rev))
    result: c.EstablishObjectsResult = run(acts.establish_objects, c.EstablishObjectsInput(
        c.PROVIDER, name, rev, resolved.digest, control=True, trust=trust))
    return result


def lock(kube: Kube) -> dict[str, Any]:
    """The Lock as it is."""
    return kube.get("pkg.crossplane.io/v1beta1", "Lock", lk.LOCK_NAME) or lk.new_lock()


def controller(kube: Kube, group: str) -> str:
    """The name of the revision controlling the package's widgets CRD."""
    crd = kube.get("apiextensions.k8s.io/v1", "CustomResourceDefinition",
                   f"widgets.{group}") or {}
    return next(r["name"] for r in crd["metadata"]["ownerReferences"] if r.get("controller"))


def test_a_switch_right_after_its_preparation_dry_runs_nothing_again(
        acts: Activities, kube: Kube, registry: Any, tmp_path: Path, provider: Pushed,
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Nothing changed since the preparation: every write is made, none dry-run again,
    and no object is read (not even the first, which a first install looks for)."""
    name = unique("trust")
    resolved, rev, prepared = prepare(acts, kube, registry, tmp_path, provider, name)
    assert prepared.checked and prepared.trusted == 0
    reads = crd_reads(kube, monkeypatch)
    done = switch(acts, name, rev, resolved, prepared.checked)

    assert (done.trusted, done.objects) == (prepared.objects, prepared.objects)
    assert (done.from_preparation, done.rechecked) == (True, 0)
    assert reads == []
    assert controller(kube, provider.group) == rev  # and the writes were made


def test_a_switch_on_another_worker_reads_every_object_and_trusts_the_fingerprints(
        acts: Activities, kube: Kube, registry: Any, tmp_path: Path, provider: Pushed) -> None:
    """The preparation's checks live in the worker that ran it: a switch elsewhere (or
    after a restart) reads and fingerprints every object, and dry-runs none again."""
    name = unique("trust")
    resolved, rev, prepared = prepare(acts, kube, registry, tmp_path, provider, name)
    settings = Settings(cache_dir=str(tmp_path / "other"), insecure_registries=(registry.host,))
    other = Activities(settings, kube, PackageCache(settings.cache_dir))
    run(other.fetch_package, c.FetchPackageInput(c.PROVIDER, name, rev,
                                                 resolved.resolved_source, resolved.digest))
    run(other.parse_package, c.ParsePackageInput(c.PROVIDER, rev, resolved.digest))

    done = switch(other, name, rev, resolved, prepared.checked)

    assert (done.trusted, done.objects) == (prepared.objects, prepared.objects)
    assert (done.from_preparation, done.rechecked) == (False, 0)
    assert controller(kube, provider.group) == rev


@pytest.mark.parametrize("change", ["object", "lock"])
def test_a_change_since_the_preparation_dry_runs_again(
        acts: Activities, kube: Kube, registry: Any, tmp_path: Path, provider: Pushed,
        change: str) -> None:
    """An object written since (its resourceVersion moved), or the Lock changed: the
    switch's establish dry-runs the writes again, then makes them."""
    name = unique("trust")
    resolved, rev, prepared = prepare(acts, kube, registry, tmp_path, provider, name)
    if change == "object":
        kube.patch("apiextensions.k8s.io/v1", "CustomResourceDefinition",
                   f"widgets.{provider.group}", {"metadata": {"labels": {"touched": "yes"}}})
    else:  # another package's entry, as if it had been installed meanwhile
        other = lk.lock_entry(unique("other"), "Provider", "example.org/other:v1", [])
        kube.update(lk.upsert_entry(lock(kube), other) or {})

    done = switch(acts, name, rev, resolved, prepared.checked)
    if change == "lock":
        kube.update(lk.remove_entry(lock(kube), other["name"]) or {})

    assert done.objects == prepared.objects
    if change == "object":  # the kept checks are written; the changed object's is refused
        assert (done.from_preparation, done.rechecked) == (True, 1)
    else:  # another basis: every object read and dry-run again
        assert (done.from_preparation, done.trusted) == (False, 0)
    assert controller(kube, provider.group) == rev


def test_a_crds_status_written_since_the_preparation_is_still_trusted(
        acts: Activities, kube: Kube, registry: Any, tmp_path: Path, provider: Pushed) -> None:
    """The API server's controllers write a new CRD's status (its conditions) for minutes
    on a busy server; a status write changes nothing a write is checked against, so the
    switch still trusts the preparation's dry run (its resourceVersion moved), and its
    take, which tests the metadata it was decided on, is not refused either."""
    name = unique("trust")
    resolved, rev, prepared = prepare(acts, kube, registry, tmp_path, provider, name)
    crd_name = f"widgets.{provider.group}"
    crd = kube.get("apiextensions.k8s.io/v1", "CustomResourceDefinition", crd_name) or {}
    before = crd["metadata"]["resourceVersion"]
    crd["status"]["conditions"] = [*(crd["status"].get("conditions") or []), {
        "type": "Busy", "status": "True", "reason": "Test", "message": "a controller wrote",
        "lastTransitionTime": "2026-01-01T00:00:00Z"}]
    written = kube.update_status(crd)
    assert written["metadata"]["resourceVersion"] != before

    done = switch(acts, name, rev, resolved, prepared.checked)

    assert (done.trusted, done.objects) == (prepared.objects, prepared.objects)
    assert (done.from_preparation, done.rechecked) == (True, 0)
    assert controller(kube, provider.group) == rev


CRD_API = "apiextensions.k8s.io/v1"


def _guarded(kube: Kube, group: str) -> tuple[str, dict[str, Any], list[dict[str, Any]]]:
    """The widgets CRD's name, the guard of a take of it, and owners to write."""
    from lockwright.objects import establish as est

    name = f"widgets.{group}"
    live = kube.get(CRD_API, "CustomResourceDefinition", name) or {}
    owners = [{**r, "controller": False} for r in live["metadata"]["ownerReferences"]]
    return name, est.guard(est.Op.TAKE, live), owners


def test_an_owners_only_write_is_refused_for_a_change_it_tests_and_not_for_a_status(
        acts: Activities, kube: Kube, provider: Pushed) -> None:
    """``Kube.set_owners_if``: a status written since the read leaves the write to go
    through; a label changed since refuses it as a conflict, naming the field."""
    name = unique("guard")
    apply_package(kube, "Provider", name, provider.ref)
    install(acts, c.PROVIDER, name)
    crd_name, expect, owners = _guarded(kube, provider.group)
    crd = kube.get(CRD_API, "CustomResourceDefinition", crd_name) or {}
    crd["status"]["conditions"] = [*(crd["status"].get("conditions") or []), {
        "type": "Busy", "status": "True", "reason": "Test", "message": "a controller wrote",
        "lastTransitionTime": "2026-01-01T00:00:00Z"}]
    kube.update_status(crd)

    written = kube.set_owners_if(CRD_API, "CustomResourceDefinition", crd_name, owners, expect)
    assert written["metadata"]["ownerReferences"] == owners

    _, expect, _ = _guarded(kube, provider.group)
    kube.patch(CRD_API, "CustomResourceDefinition", crd_name,
               {"metadata": {"labels": {"touched": "yes"}}})
    with pytest.raises(KubeConflict, match=r"changed since it was read \(labels\)"):
        kube.set_owners_if(CRD_API, "CustomResourceDefinition", crd_name, [], expect)


def test_a_preparation_dry_runs_one_take_of_each_kind_over_all_its_batches(
        acts: Activities, kube: Kube, registry: Any, tmp_path: Path, provider: Pushed,
        monkeypatch: pytest.MonkeyPatch) -> None:
    """What can refuse a take is the same for every object of its kind (docs/design.md,
    "One dry run per switch-over"), so one dry run of each kind covers the whole check,
    not one a batch: a 2,000-CRD preparation dry-ran two takes in each of its 40 batches,
    each a few hundred milliseconds on a busy kube-apiserver. Batches of one object here,
    so each take is in a batch of its own."""
    from collections import Counter

    from lockwright.activities import objects
    from lockwright.objects import establish as est

    dry_run: list[est.Action] = []
    real = objects.Establisher._dry_write

    def counting(self: objects.Establisher, action: est.Action, dry: Kube) -> bool:
        dry_run.append(action)
        return real(self, action, dry)

    real_batches = objects.batches
    monkeypatch.setattr(objects, "batches", lambda rev, docs, size=1: real_batches(rev, docs, 1))
    monkeypatch.setattr(objects.Establisher, "_dry_write", counting)
    name = unique("trust")
    _, _, prepared = prepare(acts, kube, registry, tmp_path, provider, name)

    takes = Counter(a.key.kind for a in dry_run if a.op is est.Op.TAKE)
    assert len(prepared.checked) == prepared.objects > len(takes)  # a batch an object
    assert set(takes.values()) == {1}, takes
    assert len(dry_run) == len(takes)  # v2 ships v1's objects: every write is a take
