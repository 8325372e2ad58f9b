"""A package's revision: its spec as created, and the patch bringing one up to date."""

from __future__ import annotations

from typing import Any

import pytest

from lockwright.upgrade import revisions as rv

Obj = dict[str, Any]
IMAGE = "xpkg.example.io/acme/provider-nop:v1"


def package(**spec: Any) -> Obj:
    return {"metadata": {"name": "nop", "uid": "u-1"}, "spec": {"package": IMAGE, **spec}}


@pytest.mark.parametrize(("kind", "pkg", "source", "deployment", "want"), [
    # Configurations have no runtime: the image and copied fields only.
    ("Configuration", package(), "", True, {"image": IMAGE}),
    # The source the digest came from wins over what the package says now.
    ("Configuration", package(), "r.io/moved:v2", True, {"image": "r.io/moved:v2"}),
    ("Configuration", package(packagePullPolicy="Always", commonLabels={"a": "b"},
                              skipDependencyResolution=None), "", False,
     {"image": IMAGE, "packagePullPolicy": "Always", "commonLabels": {"a": "b"}}),
    ("Function", package(), "", True,
     {"image": IMAGE, "runtimeConfigRef": {"name": "default"},
      "tlsServerSecretName": "nop-tls-server"}),
    ("Provider", package(runtimeConfigRef={"name": "big"}), "", True,
     {"image": IMAGE, "runtimeConfigRef": {"name": "big"},
      "tlsServerSecretName": "nop-tls-server", "tlsClientSecretName": "nop-tls-client"}),
    # An External runtime: no runtime config, no TLS Secrets.
    ("Provider", package(runtimeConfigRef={"name": "big"}), "", False, {"image": IMAGE}),
])
def test_revision_spec(kind: str, pkg: Obj, source: str, deployment: bool, want: Obj) -> None:
    assert rv.revision_spec(kind, pkg, source, deployment) == want


LABELS = {"labels": {"pkg.crossplane.io/package": "nop"},
          "annotations": {"lockwright.dev/digest": "sha256:aa"}}


def revision(number: int, metadata: Obj | None = None, **spec: Any) -> Obj:
    return {"metadata": {"name": "nop-aa", **(LABELS if metadata is None else metadata)},
            "spec": {"revision": number, "desiredState": "Inactive", **spec}}


@pytest.mark.parametrize(("rev", "wanted", "top", "body", "number"), [
    # Up to date: nothing to write.
    (revision(3, image=IMAGE), {"image": IMAGE}, 3, {}, 3),
    # Not the newest: one above the highest.
    (revision(1, image=IMAGE), {"image": IMAGE}, 3, {"spec": {"revision": 4}}, 4),
    # A changed field is set; a copied field the package dropped is removed.
    (revision(2, image=IMAGE, packagePullPolicy="Always"), {"image": "r.io/x:v2"}, 2,
     {"spec": {"image": "r.io/x:v2", "packagePullPolicy": None}}, 2),
    # Runtime fields go when the runtime does.
    (revision(2, image=IMAGE, tlsServerSecretName="nop-tls-server"), {"image": IMAGE}, 2,
     {"spec": {"tlsServerSecretName": None}}, 2),
    # A revision missing its label and digest annotation gets them.
    (revision(2, {}, image=IMAGE), {"image": IMAGE}, 2, {"metadata": LABELS}, 2),
    (revision(2, {"labels": LABELS["labels"],
                  "annotations": {"lockwright.dev/digest": "sha256:bb"}}, image=IMAGE),
     {"image": IMAGE}, 2, {"metadata": {"annotations": LABELS["annotations"]}}, 2),
])
def test_refresh(rev: Obj, wanted: Obj, top: int, body: Obj, number: int) -> None:
    assert rv.refresh(rev, wanted, top, LABELS) == (body, number)


@pytest.mark.parametrize(("kind", "number"), [("ProviderRevision", 1), ("FunctionRevision", 7)])
def test_new_revision_is_inactive_and_controlled_by_its_package(kind: str, number: int) -> None:
    owner = rv.package_owner(kind.removesuffix("Revision"), package())
    made = rv.new_revision(kind, "nop-aa", LABELS, owner, {"image": IMAGE}, number)
    assert made == {"apiVersion": "pkg.crossplane.io/v1", "kind": kind,
                    "metadata": {"name": "nop-aa", **LABELS, "ownerReferences": [owner]},
                    "spec": {"image": IMAGE, "desiredState": "Inactive", "revision": number}}
    assert owner == {"apiVersion": "pkg.crossplane.io/v1", "kind": kind.removesuffix("Revision"),
                     "name": "nop", "uid": "u-1", "controller": True, "blockOwnerDeletion": True}
