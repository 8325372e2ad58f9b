"""How the Lock's keeper reads the claims of entries a take has not seen
(``LockKeeper.claims_of``): a few revisions read side by side, many by one list of the kind
(a list carries every revision whole, each naming the objects it holds)."""

from __future__ import annotations

import threading
from typing import Any

import pytest

from lockwright.activities.lock import LockKeeper
from lockwright.activities.lockcommit import PARALLEL


class _Kube:
    """Revisions ``r0``… (each holding one CRD), and which calls were made."""

    def __init__(self, count: int, gone: frozenset[str] = frozenset()) -> None:
        self.revs = {f"r{i}": self._rev(f"r{i}") for i in range(count) if f"r{i}" not in gone}
        self.gets: list[str] = []
        self.lists = 0
        self.lock = threading.Lock()

    @staticmethod
    def _rev(name: str) -> dict[str, Any]:
        return {"metadata": {"name": name, "labels": {"pkg.crossplane.io/package": name}},
                "spec": {"desiredState": "Active"},
                "status": {"objectRefs": [{"apiVersion": "apiextensions.k8s.io/v1",
                                           "kind": "CustomResourceDefinition",
                                           "name": f"{name}s.example.org"}]}}

    def get(self, api: str, kind: str, name: str) -> Any:
        with self.lock:
            self.gets.append(name)
        return self.revs.get(name)

    def list(self, api: str, kind: str) -> list[Any]:
        self.lists += 1
        return list(self.revs.values())


def _entries(names: list[str]) -> list[dict[str, Any]]:
    return [{"name": n, "kind": "Provider", "source": f"example.org/{n}", "version": "v1"}
            for n in names]


@pytest.mark.parametrize(("wanted", "gets", "lists"), [
    (1, 1, 0),
    (PARALLEL, PARALLEL, 0),  # a few: read side by side, not the whole kind
    (PARALLEL + 1, 0, 1),  # many: one list
])
def test_a_few_claims_are_read_and_many_listed(wanted: int, gets: int, lists: int) -> None:
    kube = _Kube(40)
    keeper = LockKeeper(kube, None)  # type: ignore[arg-type]
    names = [f"r{i}" for i in range(wanted)]
    claims = keeper.claims_of(_entries(names))
    assert sorted(claims) == sorted(names)
    assert all(claims[n][0] is not None and claims[n][1] for n in names)
    assert (len(kube.gets), kube.lists) == (gets, lists)


@pytest.mark.parametrize("wanted", [3, PARALLEL + 3])
def test_a_revision_gone_since_holds_nothing(wanted: int) -> None:
    kube = _Kube(40, gone=frozenset({"r1"}))
    keeper = LockKeeper(kube, None)  # type: ignore[arg-type]
    claims = keeper.claims_of(_entries([f"r{i}" for i in range(wanted)]))
    assert claims["r1"] == (None, frozenset())
    assert claims["r0"][1]
