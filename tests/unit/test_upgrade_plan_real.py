"""Upgrade plans on real data: provider-kubernetes from one release to the next.

The CRDs are ``package/crds`` of crossplane-contrib/provider-kubernetes at each tag, as
``tests/fixtures/provider-crds`` holds them (its README names the commits). Each side is
built as ``plan_revision`` builds it (a fingerprint per object by key, no meta document:
the fixtures hold the CRDs only), the changed CRDs compared with the old packaged CRD as
``old`` and its storage version as the stored versions (what a cluster that ran only that
release records), and the plan assembled; every count and verdict below was read off
``git diff <tag> <tag> -- package/crds`` by hand.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import yaml

from lockwright import crdcompat, crvalidate
from lockwright.crdcompat import Kind
from lockwright.objects.lock import ObjectKey
from lockwright.upgrade import plan as pl

FIXTURES = Path(__file__).parent.parent / "fixtures" / "provider-crds"
SOURCE = "xpkg.upbound.io/crossplane-contrib/provider-kubernetes"
GROUP, NAMESPACED = "kubernetes.crossplane.io", "kubernetes.m.crossplane.io"
Obj = dict[str, Any]
Loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def crds(tag: str) -> dict[ObjectKey, Obj]:
    """The release's CRDs by key."""
    out: dict[ObjectKey, Obj] = {}
    for path in sorted((FIXTURES / f"provider-kubernetes-{tag}").glob("*.yaml")):
        with path.open(encoding="utf-8") as fh:
            out.update((ObjectKey.of(d), d) for d in yaml.load_all(fh, Loader=Loader) if d)
    return out


def storage_version(crd: Obj) -> str:
    return next(str(v["name"]) for v in crd["spec"]["versions"] if v.get("storage"))


def verdicts(old: dict[ObjectKey, Obj], new: dict[ObjectKey, Obj]
             ) -> list[crdcompat.Verdict]:
    """A verdict per changed CRD with something to report, as ``plan_revision`` keeps."""
    _, changed, _ = pl.object_changes({k: pl.fingerprint(v) for k, v in old.items()},
                                      {k: pl.fingerprint(v) for k, v in new.items()})
    found = [crdcompat.compare(old[k], new[k], stored=[storage_version(old[k])])
             for k in changed if pl.is_crd(k)]
    return [v for v in found if v.changes or v.fields]


def plan(old_tag: str, new_tag: str, rejected: list[pl.Rejected] | None = None) -> pl.Plan:
    old, new = crds(old_tag), crds(new_tag)
    sides = (pl.Side({k: pl.fingerprint(v) for k, v in old.items()}),
             pl.Side({k: pl.fingerprint(v) for k, v in new.items()}))
    return pl.assemble(f"provider-kubernetes-{new_tag}", f"provider-kubernetes-{old_tag}",
                       sides, (f"{SOURCE}:{old_tag}", f"{SOURCE}:{new_tag}"),
                       verdicts(old, new), rejected or [], {})


def payload(p: pl.Plan) -> int:
    return len(json.dumps(dataclasses.asdict(p)))


def crd_label(plural: str, group: str) -> str:
    return f"CustomResourceDefinition {plural}.{group}"


NAMESPACED_PLURALS = ("clusterproviderconfigs", "objects", "observedobjectcollections",
                      "providerconfigs", "providerconfigusages")
CLUSTER_PLURALS = ("objects", "observedobjectcollections", "providerconfigs",
                   "providerconfigusages")


def test_v0_18_0_to_v1_0_0_adds_the_namespaced_group_and_breaks_on_the_removed_field() -> None:
    """Added: the five CRDs of the new namespaced group ``kubernetes.m.crossplane.io``
    (crossplane-runtime v2's namespaced managed resources), so the runtime's ClusterRole
    gains their five resources. Changed: all four existing CRDs, since controller-gen's
    version annotation moved v0.16.0 -> v0.18.0 in each, so their fingerprints differ;
    only Object's verdict is kept, because for the other three nothing but that annotation
    changed and compare has nothing to report. Removed: none.

    Breaking, twice: Object lost ``spec.publishConnectionDetailsTo`` (external secret
    stores left crossplane-runtime v2) in v1alpha1 and v1alpha2. Both are served, so an
    Object written with that field under either version would have it pruned: no error,
    the value silently gone. That is a removed property, which blocks; nothing else in
    the schema moved, and Object converts through a webhook, so its two served versions
    are not compared to each other. v1alpha2 is the stored version and is kept, so no
    stored-version change.
    """
    p = plan("v0.18.0", "v1.0.0")
    assert (p.added, p.changed, p.removed) == (5, 4, 0)
    assert p.first_added == [crd_label(n, NAMESPACED) for n in NAMESPACED_PLURALS]
    assert p.first_changed == [crd_label(n, GROUP) for n in CLUSTER_PLURALS]
    assert p.first_removed == []
    [objects] = p.crds
    assert objects.crd == f"objects.{GROUP}" and objects.blocking
    assert [(c.kind, c.version, c.path, c.blocking) for c in objects.changes] == [
        (Kind.PROPERTY_REMOVED, v, ".spec.publishConnectionDetailsTo", True)
        for v in ("v1alpha1", "v1alpha2")]
    assert [(f.version, f.removed, f.added, f.changed) for f in objects.fields] == [
        ("v1alpha1", 1, 0, 0), ("v1alpha2", 1, 0, 0)]
    assert p.breaking_count == 2 and not p.compatible
    assert all(".spec.publishConnectionDetailsTo: field removed; keep" in b
               for b in p.breaking)
    assert p.rbac_added == [f"{n}.{NAMESPACED}: *" for n in NAMESPACED_PLURALS]
    assert (p.rbac_removed, p.dependencies, p.rejected) == ([], [], [])
    assert p.runtime == [f"image {SOURCE}:v0.18.0 → {SOURCE}:v1.0.0"]
    assert pl.blocks(p, "") and not pl.blocks(p, "provider-kubernetes-v1.0.0")
    assert p.summary().startswith("2 breaking change(s) against provider-kubernetes-v0.18.0")


def test_v1_0_0_to_v1_1_0_is_compatible_with_an_enum_value_added() -> None:
    """``AWSWebIdentityCredentials`` joined the enum of ``spec.identity.type`` in the three
    ProviderConfig kinds (cluster-scoped, namespaced, and the namespaced group's
    cluster-wide one). A wider enum rejects nothing that was accepted, so every stored
    ProviderConfig stays valid: shown in the plan, never blocking. The six other CRDs are
    byte for byte the same, so they are not changed at all."""
    p = plan("v1.0.0", "v1.1.0")
    names = [f"clusterproviderconfigs.{NAMESPACED}", f"providerconfigs.{GROUP}",
             f"providerconfigs.{NAMESPACED}"]
    assert (p.added, p.changed, p.removed) == (0, 3, 0)
    assert [v.crd for v in p.crds] == names
    assert [[(c.kind, c.version, c.path, c.blocking) for c in v.changes] for v in p.crds] == [
        [(Kind.ENUM_VALUE_ADDED, "v1alpha1", ".spec.identity.type", False)]] * 3
    assert [[(f.version, f.changed, f.first_changed) for f in v.fields] for v in p.crds] == [
        [("v1alpha1", 1, [".spec.identity.type"])]] * 3
    assert p.compatible and p.breaking == [] and not pl.blocks(p, "")
    assert (p.rbac_added, p.rbac_removed) == ([], [])
    assert p.summary() == ("Compatible with provider-kubernetes-v1.0.0: 0 added, 3 changed, "
                           f"0 removed; runtime: image {SOURCE}:v1.0.0 → {SOURCE}:v1.1.0")


def an_object(name: str, **spec: Any) -> Obj:
    manifest = {"apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"name": name, "namespace": "default"}, "data": {"a": "b"}}
    return {"apiVersion": f"{GROUP}/v1alpha2", "kind": "Object", "metadata": {"name": name},
            "spec": {"forProvider": {"manifest": manifest}, **spec}}


def test_an_existing_object_that_publishes_connection_details_is_named_in_the_plan() -> None:
    """What the activity does with the Objects a cluster holds, on v1.0.0's real schema:
    one that never set the removed field validates under it and passes; one that sends
    its connection details to a secret store would lose that setting, so it is counted
    and named with the field, and the plan has one more breaking change."""
    v1 = crds("v1.0.0")[ObjectKey("apiextensions.k8s.io", "CustomResourceDefinition",
                                   f"objects.{GROUP}")]
    schema = crdcompat.schema_of(crdcompat.versions_of(v1)["v1alpha2"])
    [objects] = verdicts(crds("v0.18.0"), crds("v1.0.0"))
    removed = pl.removed_paths(objects, "v1alpha2")
    tally = pl.Tally()
    for obj in (an_object("plain"), an_object("published", publishConnectionDetailsTo={
            "name": "db-conn", "configRef": {"name": "vault"}})):
        check = crvalidate.validate(obj, schema)
        assert check.ok, check
        tally.add(obj["metadata"]["name"], check,
                  [path for path in removed if pl.has_path(obj, path)])
    found = tally.rejected(objects.crd, "v1alpha2")
    assert found == pl.Rejected(objects.crd, "v1alpha2", 1, ["published"],
                                ".spec.publishConnectionDetailsTo",
                                "removed from the schema: its value would be lost")
    p = plan("v0.18.0", "v1.0.0", [found])
    assert p.breaking_count == 3 and p.breaking[-1] == found.message


def test_the_plans_payload_stays_a_summary() -> None:
    """Nine CRDs, about 115 KB of YAML in each new release: the plan (about 3 KB) carries
    names, counts and verdicts, never the schemas."""
    for old, new in (("v0.18.0", "v1.0.0"), ("v1.0.0", "v1.1.0")):
        size = sum(f.stat().st_size for f in (FIXTURES / f"provider-kubernetes-{new}").iterdir())
        p = plan(old, new)
        assert payload(p) < 4_000 and payload(p) < size / 20
        assert "openAPIV3Schema" not in json.dumps(dataclasses.asdict(p))
