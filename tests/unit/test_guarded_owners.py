"""``Kube.set_owners_if``: an owners-only write that tests the metadata it was decided on
(lockwright.objects.establish.guard; docs/design.md, "One dry run per switch-over").

kube-apiserver answers a failed JSON patch ``test`` with a bare 422 that names nothing
(``details`` empty; seen on the control plane's kube-apiserver, and devcluster answers
alike), so the client reads the object again to tell a change since the read (a
conflict: checked again) from the API refusing the write itself. The writes themselves,
on devcluster: tests/integration/test_trusted_prepare.py."""

from __future__ import annotations

from typing import Any

import pytest

from lockwright.errors import KubeConflict, KubeInvalid, KubeNotFound
from lockwright.k8s import Kube

OWNERS = [{"apiVersion": "pkg.crossplane.io/v1", "kind": "ProviderRevision", "name": "nop-2",
           "uid": "rev-2", "controller": True}]
EXPECT = {"uid": "u", "generation": 3, "ownerReferences": [], "labels": None}


def _kube(answer: Exception | None, live: dict[str, Any] | None) -> tuple[Kube, list[Any]]:
    kube, sent = Kube.__new__(Kube), []

    def patch(api: str, kind: str, name: str, body: Any, **kw: Any) -> dict[str, Any]:
        sent.append((body, kw))
        if answer is not None:
            raise answer
        return {"metadata": {"ownerReferences": OWNERS}}

    kube.patch = patch  # type: ignore[method-assign]
    kube.get = lambda *a, **kw: live  # type: ignore[method-assign]
    return kube, sent


def _meta(**meta: Any) -> dict[str, Any]:
    return {"metadata": {"uid": "u", "generation": 3, "ownerReferences": [], **meta}}


def test_the_patch_tests_every_expected_field_then_writes_the_owners() -> None:
    kube, sent = _kube(None, None)
    kube.set_owners_if("apiextensions.k8s.io/v1", "CustomResourceDefinition", "a", OWNERS,
                       EXPECT)
    [(ops, kw)] = sent
    assert kw == {"patch_type": "json"}
    assert ops == [{"op": "test", "path": "/metadata/uid", "value": "u"},
                   {"op": "test", "path": "/metadata/generation", "value": 3},
                   {"op": "test", "path": "/metadata/ownerReferences", "value": []},
                   {"op": "test", "path": "/metadata/labels", "value": None},
                   {"op": "add", "path": "/metadata/ownerReferences", "value": OWNERS}]


REFUSED = KubeInvalid("PATCH x: 422 Invalid: the server rejected our request", 422, "Invalid")


@pytest.mark.parametrize(("answer", "live", "raised", "says"), [
    # a tested field moved since the read: a conflict, naming it
    (REFUSED, _meta(labels={"touched": "yes"}), KubeConflict,
     r"changed since it was read \(labels\)"),
    (REFUSED, _meta(generation=4), KubeConflict, r"\(generation\)"),
    # gone and made again under the same name
    (REFUSED, {"metadata": {"uid": "v", "generation": 1}}, KubeConflict, "uid, generation"),
    # every test holds: the API refused the write itself, and says so
    (REFUSED, _meta(), KubeInvalid, "rejected our request"),
    # not a failed test: as the API answered
    (KubeInvalid("PATCH x: 400 BadRequest", 400, "BadRequest"), _meta(labels={"a": "b"}),
     KubeInvalid, "BadRequest"),
    (KubeNotFound("PATCH x: 404", 404, "NotFound"), None, KubeNotFound, "404"),
])
def test_a_refusal_is_a_conflict_only_when_a_tested_field_changed(
        answer: Exception, live: dict[str, Any] | None, raised: type[Exception],
        says: str) -> None:
    kube, _ = _kube(answer, live)
    with pytest.raises(raised, match=says):
        kube.set_owners_if("apiextensions.k8s.io/v1", "CustomResourceDefinition", "a",
                           OWNERS, EXPECT)
