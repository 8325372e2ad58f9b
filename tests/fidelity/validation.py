"""The validation differences of tests/integration/test_crvalidate_agrees.py, replayed on
both servers: each ``DEVCLUSTER_GAPS`` value sent as a dry-run create of a custom resource
whose CRD has the shared rich schema; the answers' codes compared."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from tests.fidelity.client import Client
from tests.fidelity.shapes import Identities

GROUP = "cv-fidelity.example.org"
PLURAL, KIND = "gauges", "Gauge"


@dataclass(frozen=True)
class Case:
    """One value: the codes devcluster and kube-apiserver answered, and devcluster's gap."""

    name: str
    codes: tuple[int, int]
    gap: str

    @property
    def differs(self) -> bool:
        return self.codes[0] != self.codes[1]


def _crd(schema: dict[str, Any]) -> dict[str, Any]:
    return {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": f"{PLURAL}.{GROUP}"},
            "spec": {"group": GROUP, "scope": "Cluster",
                     "names": {"plural": PLURAL, "singular": "gauge", "kind": KIND,
                               "listKind": f"{KIND}List"},
                     "versions": [{"name": "v1", "served": True, "storage": True,
                                   "schema": {"openAPIV3Schema": schema}}]}}


def _served(admin: Client) -> None:
    deadline = time.monotonic() + 30
    while admin.send("GET", f"/apis/{GROUP}/v1/{PLURAL}").code != 200:
        if time.monotonic() > deadline:
            raise AssertionError(f"{PLURAL}.{GROUP} not served within 30 s")
        time.sleep(0.1)  # poll interval of a wait with a deadline


def compare_gaps(dc: Identities, kube: Identities) -> list[Case]:
    """Each known validation gap's value on both servers."""
    from tests.integration.test_crvalidate_agrees import DEVCLUSTER_GAPS
    from tests.unit.test_crvalidate import SCHEMA

    for ids in (dc, kube):
        ids.admin.send("POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
                       _crd(SCHEMA))
        _served(ids.admin)
    cases = []
    for i, (name, spec, _verdict, gap) in enumerate(DEVCLUSTER_GAPS):
        obj = {"apiVersion": f"{GROUP}/v1", "kind": KIND, "metadata": {"name": f"g{i}"},
               "spec": spec}
        codes = tuple(ids.admin.send("POST", f"/apis/{GROUP}/v1/{PLURAL}?dryRun=All",
                                     obj).code for ids in (dc, kube))
        cases.append(Case(name, (codes[0], codes[1]), gap))
    return cases
