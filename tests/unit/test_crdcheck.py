"""CRD preflight: what a new package's CRD may not change in the live one.

Matrix: {same, version added, storage moved} pass; {stored version dropped, served version
dropped, served set false, scope changed} fail with the fix; versions neither stored nor
served may go; non-CRDs and CRDs not live are ignored; findings sorted, messages exact.
"""

from __future__ import annotations

from typing import Any

import pytest

from lockwright.objects.crdcheck import Finding, check_crd, is_crd, ordered, preflight
from lockwright.objects.lock import ObjectKey

NAME = "widgets.example.org"
PREFIX = f"CustomResourceDefinition {NAME}: "
STORED_V1ALPHA1 = (
    PREFIX + "version v1alpha1 is still in status.storedVersions but the new package drops "
    "it; run a storage migration to the new storage version and remove v1alpha1 from "
    "status.storedVersions, or keep v1alpha1 in spec.versions")


def v(name: str, served: bool = True, storage: bool = False) -> dict[str, Any]:
    return {"name": name, "served": served, "storage": storage}


def crd(*versions: dict[str, Any], scope: str = "Cluster", stored: tuple[str, ...] = (),
        name: str = NAME) -> dict[str, Any]:
    obj: dict[str, Any] = {
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": name},
        "spec": {"group": "example.org", "scope": scope, "versions": list(versions)}}
    if stored:
        obj["status"] = {"storedVersions": list(stored)}
    return obj


LIVE = crd(v("v1alpha1", storage=True), v("v1beta1"), stored=("v1alpha1",))


@pytest.mark.parametrize(("desired", "live"), [
    (crd(v("v1alpha1", storage=True), v("v1beta1")), LIVE),
    (crd(v("v1alpha1", storage=True), v("v1beta1"), v("v1")), LIVE),
    (crd(v("v1alpha1"), v("v1beta1", storage=True)), LIVE),
    # a version neither stored nor served may go
    (crd(v("v1beta1", storage=True)),
     crd(v("v1alpha1", served=False), v("v1beta1", storage=True), stored=("v1beta1",))),
    # a version stored but no longer served may stay unserved
    (crd(v("v1alpha1", served=False), v("v1beta1", storage=True)),
     crd(v("v1alpha1", served=False), v("v1beta1", storage=True),
         stored=("v1alpha1", "v1beta1"))),
    # a live CRD without status (never stored anything) and a desired one without scope
    (crd(v("v1", storage=True), scope=""), crd(v("v1", storage=True))),
], ids=["same", "version-added", "storage-moved", "unserved-dropped", "stays-unserved",
        "no-status"])
def test_safe_changes_pass(desired: dict[str, Any], live: dict[str, Any]) -> None:
    assert check_crd(desired, live) == []


@pytest.mark.parametrize(("desired", "live", "messages"), [
    (crd(v("v1beta1", storage=True)),
     crd(v("v1alpha1", served=False), v("v1beta1", storage=True),
         stored=("v1alpha1", "v1beta1")),
     [STORED_V1ALPHA1]),
    (crd(v("v1beta1", storage=True)), LIVE,
     [STORED_V1ALPHA1,
      PREFIX + "version v1alpha1 is served but the new package drops it; keep v1alpha1 served"]),
    (crd(v("v1alpha1", storage=True)),
     crd(v("v1alpha1", storage=True), v("v1beta1"), stored=("v1alpha1",)),
     [PREFIX + "version v1beta1 is served but the new package drops it; keep v1beta1 served"]),
    (crd(v("v1alpha1", storage=True), v("v1beta1", served=False)), LIVE,
     [PREFIX + "version v1beta1 is served but the new package sets served: false; "
      "keep v1beta1 served"]),
    (crd(v("v1alpha1", storage=True), v("v1beta1"), scope="Namespaced"),
     crd(v("v1alpha1", storage=True), v("v1beta1"), scope="Cluster"),
     [PREFIX + "scope cannot change from Cluster to Namespaced; delete the CRD (and its "
      "resources) first or keep the scope"]),
    (crd(v("v2", storage=True), scope="Cluster"),
     crd(v("v1", storage=True), scope="Namespaced", stored=("v1",)),
     [PREFIX + "scope cannot change from Namespaced to Cluster; delete the CRD (and its "
      "resources) first or keep the scope",
      PREFIX + "version v1 is still in status.storedVersions but the new package drops it; "
      "run a storage migration to the new storage version and remove v1 from "
      "status.storedVersions, or keep v1 in spec.versions",
      PREFIX + "version v1 is served but the new package drops it; keep v1 served"]),
], ids=["stored-dropped", "stored-and-served-dropped", "served-dropped", "served-false",
        "scope", "everything"])
def test_breaking_changes_are_found_with_the_fix(desired: dict[str, Any], live: dict[str, Any],
                                                 messages: list[str]) -> None:
    assert [f.message for f in check_crd(desired, live)] == messages


def test_finding_names_the_crd_and_the_version() -> None:
    assert check_crd(crd(v("v1", storage=True)), LIVE)[0] == Finding(
        NAME, "v1alpha1", "version v1alpha1 is still in status.storedVersions but the new "
        "package drops it", "run a storage migration to the new storage version and remove "
        "v1alpha1 from status.storedVersions, or keep v1alpha1 in spec.versions")


def test_preflight_checks_only_live_crds_and_sorts() -> None:
    webhook = {"apiVersion": "admissionregistration.k8s.io/v1",
               "kind": "ValidatingWebhookConfiguration", "metadata": {"name": NAME}}
    other_group = {**crd(v("v2")), "apiVersion": "example.org/v1"}
    b, a, new = (crd(v("v2", storage=True), name=n) for n in ("b.example.org",
                                                              "a.example.org", "new.example.org"))
    live = {ObjectKey.of(o): crd(v("v1", storage=True), name=o["metadata"]["name"],
                                 stored=("v1",)) for o in (a, b, webhook, other_group)}
    found = preflight([b, webhook, other_group, a, new], live)
    assert [(f.crd, f.version, f.problem.split()[3]) for f in found] == [
        ("a.example.org", "v1", "still"), ("a.example.org", "v1", "served"),
        ("b.example.org", "v1", "still"), ("b.example.org", "v1", "served")]
    assert ordered(found) == found
    assert [is_crd(o) for o in (a, webhook, other_group)] == [True, False, False]
    assert preflight([a, b], {}) == []
