"""``install --api``'s first question: does the cluster serve the API already (issue 23)."""

from __future__ import annotations

from typing import Any

import pytest

from lockwright.identity.apis import parse
from lockwright.index.cluster import INACTIVE, SERVED, InCluster, definition_name, in_cluster
from tests.e2e.packages import crd

Obj = dict[str, Any]


def owned(obj: Obj, *refs: tuple[str, str, bool]) -> Obj:
    obj["metadata"]["ownerReferences"] = [
        {"apiVersion": "pkg.crossplane.io/v1", "kind": k, "name": n, "controller": c}
        for k, n, c in refs]
    return obj


def mrd(group: str, kind: str, state: str) -> Obj:
    obj = crd(group, kind)
    obj["apiVersion"], obj["kind"] = "apiextensions.crossplane.io/v1alpha1", \
        "ManagedResourceDefinition"
    obj["spec"]["state"] = state
    return obj


G = "s3.example.org"
REV = ("ProviderRevision", "provider-s3-abc", True)


@pytest.mark.parametrize(("api", "crds", "mrds", "want"), [
    ("buckets.s3.example.org/v1alpha1", [owned(crd(G, "Bucket"), REV)], [],
     InCluster(SERVED, "buckets.s3.example.org", ("ProviderRevision", "provider-s3-abc"))),
    ("Bucket.s3.example.org", [crd(G, "Bucket")], [],
     InCluster(SERVED, "buckets.s3.example.org")),
    ("buckets.s3.example.org/v1", [crd(G, "Bucket")], [], None),  # not that version
    ("buckets.s3.example.org/v1alpha1", [], [owned(mrd(G, "Bucket", "Inactive"), REV)],
     InCluster(INACTIVE, "buckets.s3.example.org", ("ProviderRevision", "provider-s3-abc"))),
    ("buckets.s3.example.org/v1alpha1", [], [mrd(G, "Bucket", "Active")],
     InCluster(SERVED, "buckets.s3.example.org")),
    ("buckets.s3.example.org/v1alpha1", [crd(G, "Bucket")], [mrd(G, "Bucket", "Inactive")],
     InCluster(SERVED, "buckets.s3.example.org")),  # a CRD there wins
    ("queues.s3.example.org/v1alpha1", [crd(G, "Bucket")], [mrd(G, "Bucket", "Active")],
     None),
    ("buckets.s3.example.org/v1alpha1",
     [owned(crd(G, "Bucket"), ("ProviderRevision", "old", False),
            ("ProviderRevision", "new", True))], [],
     InCluster(SERVED, "buckets.s3.example.org", ("ProviderRevision", "new"))),
])
def test_in_cluster(api: str, crds: list[Obj], mrds: list[Obj],
                    want: InCluster | None) -> None:
    assert in_cluster(parse(api), crds, mrds) == want


@pytest.mark.parametrize(("api", "want"), [
    ("buckets.s3.example.org/v1", "buckets.s3.example.org"),
    ("Buckets.s3.example.org/v1", ""),
    ("Bucket.s3.example.org", ""),
])
def test_definition_name_only_for_a_plural(api: str, want: str) -> None:
    assert definition_name(parse(api)) == want
