"""The local validator agrees with the API server, object by object.

A CRD with the rich schema of tests/unit/test_crvalidate.py is created in devcluster; every
case of that table (valid, and invalid in each way the schema can be violated) is sent as
a server-side dry-run create (``dryRun=All``) and the server's answer, accepted or 422, must
equal ``lockwright.crvalidate.validate``'s verdict. CEL rows are not compared: the local
verdict there is ``cannot-check`` by design (the caller fails closed) and devcluster does
not evaluate CEL either.

``DEVCLUSTER_GAPS`` are values on which kube-apiserver (kube-openapi's strfmt, read at
kubernetes/kube-openapi d427ff9) and devcluster disagree; the local validator follows
kube-apiserver, so these rows are expected to fail until devcluster is fixed (strict: a
fix turns them into failures that ask for the mark to go).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from kubernetes import client
from kubernetes.client.exceptions import ApiException

from lockwright.crvalidate import CANNOT_CHECK, INVALID, VALID, validate
from tests.helpers import unique
from tests.unit.test_crvalidate import CASES, OK, SCHEMA

Obj = dict[str, Any]
PLURAL, KIND = "gauges", "Gauge"


@pytest.fixture(scope="module")
def gauges(kube_client: client.ApiClient) -> Iterator[tuple[client.CustomObjectsApi, str]]:
    """A cluster-scoped CRD with the shared schema; yields the API and its group."""
    group = f"{unique('cv')}.example.org"
    ext = client.ApiextensionsV1Api(kube_client)
    name = f"{PLURAL}.{group}"
    ext.create_custom_resource_definition({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": name},
        "spec": {"group": group, "scope": "Cluster",
                 "names": {"plural": PLURAL, "singular": "gauge", "kind": KIND,
                           "listKind": f"{KIND}List"},
                 "versions": [{"name": "v1", "served": True, "storage": True,
                               "schema": {"openAPIV3Schema": SCHEMA}}]}})
    yield client.CustomObjectsApi(kube_client), group
    ext.delete_custom_resource_definition(name)


def server_accepts(api: client.CustomObjectsApi, group: str, obj: Obj) -> bool:
    """A dry-run create: True when accepted, False on 422 Invalid; anything else raises."""
    try:
        api.create_cluster_custom_object(group, "v1", PLURAL, obj, dry_run="All")
    except ApiException as exc:
        if exc.status != 422:
            raise
        return False
    return True


def gauge(group: str, spec: Obj | None) -> Obj:
    out: Obj = {"apiVersion": f"{group}/v1", "kind": KIND, "metadata": {"name": unique("g")}}
    return out if spec is None else {**out, "spec": spec}


COMPARED = [c for c in CASES if c[2] != CANNOT_CHECK]


@pytest.mark.parametrize(("spec", "verdict"), [c[1:3] for c in COMPARED],
                         ids=[c[0] for c in COMPARED])
def test_local_verdict_is_the_servers(gauges: tuple[client.CustomObjectsApi, str],
                                      spec: Obj | None, verdict: str) -> None:
    api, group = gauges
    obj = gauge(group, spec)
    local = validate(obj, SCHEMA)
    assert local.verdict == verdict
    assert server_accepts(api, group, obj) == (local.verdict == VALID), local.violations


def test_cel_is_never_called_valid(gauges: tuple[client.CustomObjectsApi, str]) -> None:
    _, group = gauges
    obj = gauge(group, {**OK, "guarded": "forbidden"})
    # the rule rejects this object on kube-apiserver; locally it cannot be evaluated
    assert validate(obj, SCHEMA).verdict == CANNOT_CHECK


# (id, spec, kube-apiserver's verdict, what devcluster does instead)
DEVCLUSTER_GAPS: list[tuple[str, Obj, str, str]] = [
    ("date-time-without-zone", {**OK, "when": "2014-12-15T08:00:00"}, INVALID,
     "devcluster's date-time accepts a missing zone (strfmt requires Z or ±hh:mm)"),
    ("date-time-with-space", {**OK, "when": "2014-12-15 08:00:00Z"}, INVALID,
     "devcluster's date-time accepts a space for T (strfmt splits on T)"),
    ("duration-in-words", {**OK, "timeout": "3 weeks"}, VALID,
     "devcluster's duration refuses strfmt's '<n> <unit>' spellings (3 weeks, 5 mins)"),
    ("ipv4-leading-zero", {**OK, "addr": "010.0.0.1"}, VALID,
     "devcluster parses ipv4 with Python's ipaddress; kube uses the sloppy Go 1.16 parser"),
    ("hostname-ip-literal", {**OK, "host": "1.2.3.4"}, INVALID,
     "devcluster's hostname accepts a numeric last label (strfmt wants 2+ letters)"),
    ("hostname-double-dash-label", {**OK, "host": "a--b"}, INVALID,
     "devcluster's hostname accepts a single label with '--' (strfmt's pattern does not)"),
]


@pytest.mark.parametrize(("spec", "verdict"), [pytest.param(
    spec, verdict, id=name, marks=pytest.mark.xfail(strict=True, reason=gap))
    for name, spec, verdict, gap in DEVCLUSTER_GAPS])
def test_devcluster_gaps(gauges: tuple[client.CustomObjectsApi, str], spec: Obj,
                         verdict: str) -> None:
    api, group = gauges
    obj = gauge(group, spec)
    assert validate(obj, SCHEMA).verdict == verdict
    assert server_accepts(api, group, obj) == (verdict == VALID)
