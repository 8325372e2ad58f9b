"""What an activation pass reads to decide a waiting policy's ``Established`` condition.

A 2,000-kind Provider on kube-apiserver: the API server took six minutes to establish its
kinds (2,000 CRDs in one group), and every pass meanwhile read all 2,000 CRDs whole
(100 MB) to say the policy still waits. A pass now stops at the first CRD that is not
Established and remembers, by UID, those that are.
"""

from __future__ import annotations

from typing import Any

from lockwright.activities.activation import WRITERS, ActivationActivities
from lockwright.managed.policy import Definition

NAMES = [f"kind{i:02d}s.x.example.org" for i in range(20)]
POLICY = {"apiVersion": "apiextensions.crossplane.io/v1alpha1",
          "kind": "ManagedResourceActivationPolicy", "metadata": {"name": "all"},
          "spec": {"activate": ["*"]}, "status": {"activated": NAMES}}


class _Kube:
    """CRDs by name, Established or not; counts the reads of each."""

    def __init__(self) -> None:
        self.established: set[str] = set()
        self.reads: list[str] = []
        self.status: dict[str, Any] = {}

    def get(self, api: str, kind: str, name: str, namespace: str | None = None) -> Any:
        self.reads.append(name)
        conditions = [{"type": "Established", "status": "True"}] if (
            name in self.established) else []
        return {"metadata": {"name": name, "uid": f"uid-{name}"},
                "status": {"conditions": conditions}}

    def patch(self, api: str, kind: str, name: str, body: Any,
              subresource: str | None = None) -> None:
        if kind == "ManagedResourceActivationPolicy":
            self.status = body["status"]


class _Definitions:
    def __init__(self, uids: dict[str, str]) -> None:
        self.uids = uids

    def policies(self) -> list[Any]:
        return [POLICY]

    def rows(self) -> list[Definition]:
        return [Definition(n, True, established="True") for n in NAMES]

    def crd_uids(self) -> dict[str, str]:
        return self.uids

    def provider_revisions(self) -> list[Any]:
        return []


class _Reader:
    def event(self, obj: Any, type_: str, reason: str, message: str) -> None:
        pass


def _established(kube: _Kube) -> dict[str, str]:
    return {c["type"]: c for c in kube.status["conditions"]}["Established"]


def test_a_waiting_policy_reads_until_a_crd_is_not_established_and_remembers() -> None:
    kube = _Kube()
    definitions = _Definitions({n: f"uid-{n}" for n in NAMES})
    activities = ActivationActivities(kube, _Reader(), definitions)  # type: ignore[arg-type]
    kube.established = set(NAMES[:10]) - {NAMES[3]}
    activities._pass()
    assert kube.reads == NAMES[:WRITERS]  # the first batch found kind03s waiting: stop
    assert _established(kube)["status"] == "Unknown"
    assert _established(kube)["message"].startswith("7 of 20 activated")

    kube.reads, kube.established = [], set(NAMES)
    activities._pass()
    assert kube.reads == [NAMES[3], *NAMES[WRITERS:]]  # the 7 seen Established: not again
    assert _established(kube)["status"] == "True"


def test_a_crd_made_again_is_read_again() -> None:
    kube = _Kube()
    definitions = _Definitions({n: f"uid-{n}" for n in NAMES})
    activities = ActivationActivities(kube, _Reader(), definitions)  # type: ignore[arg-type]
    kube.established = {NAMES[0]}
    activities._pass()
    assert NAMES[0] in kube.reads
    definitions.uids = {**definitions.uids, NAMES[0]: "uid-new"}  # deleted and created again
    kube.reads = []
    activities._pass()
    assert kube.reads[0] == NAMES[0]


class _Revisions:
    """A Provider revision's patch answers with the whole revision, as the API does."""

    def __init__(self, desired: str) -> None:
        self.desired = desired
        self.patched: list[str] = []

    def patch(self, api: str, kind: str, name: str, body: Any) -> Any:
        self.patched.append(name)
        return {"metadata": {"name": name, **body["metadata"]},
                "spec": {"desiredState": self.desired}}


REV_META = {"metadata": {"name": "p-1", "labels": {"pkg.crossplane.io/package": "p"},
                         "annotations": {"lockwright.dev/active-definitions": "0"}}}


def test_a_count_that_moved_is_written_and_tells_an_active_revisions_package() -> None:
    """The pass lists revisions as metadata only (their status names every object they
    hold); whether one is Active comes from its write's answer."""
    from lockwright import contracts as c

    assert REV_META["metadata"]["annotations"] == {c.ACTIVE_DEFINITIONS_ANNOTATION: "0"}
    for desired, told in (("Active", [c.PackageRef(kind=c.PROVIDER, name="p")]),
                          ("Inactive", [])):
        kube = _Revisions(desired)
        activities = ActivationActivities(kube, _Reader(), None)  # type: ignore[arg-type]
        assert activities._record_counts([REV_META], {"p-1": 3}) == told
        assert kube.patched == ["p-1"]
        kube.patched = []
        assert activities._record_counts([REV_META], {"p-1": 0}) == []  # not behind
        assert kube.patched == []
