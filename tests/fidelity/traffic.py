"""The differential check of recorded traffic: every shape of tests/fidelity/recorded.jsonl
replayed on devcluster and kube-apiserver, answers compared after normalising.

    python -m tests.fidelity.traffic     # starts both servers, prints the report

A protobuf answer (kube-apiserver's to a client that lists protobuf first; devcluster
answers JSON, which such clients also accept) is compared by its envelope's apiVersion and
kind against the JSON answer's.
"""

from __future__ import annotations

import json
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


from tests.fidelity.client import Answer, Client
from tests.fidelity.compare import diff
from tests.fidelity.objects import FIXTURE_GROUP, concrete, crd, replay_crds
from tests.fidelity.recorded import SNAPSHOT, Shape, key, load
from tests.fidelity.replay import NotReplayable, Target, is_watch, prepare, send, target
from tests.fidelity.shapes import Identities, namespace, normalize

#: Objects kube-controller-manager (not the API server) puts into every namespace: the
#: root CA ConfigMap and the default ServiceAccount.
CONTROLLER_MADE = {("ConfigMap", "kube-root-ca.crt"), ("ServiceAccount", "default")}


@dataclass
class Outcome:
    """One shape's result: compared (with differing paths, maybe none) or why not."""

    shape: Shape
    paths: list[str] = field(default_factory=list)
    not_compared: str = ""


def install_crds(admin: Client) -> None:
    """The CRDs the stacks install (objects.replay_crds); returns once each is
    Established."""
    crds = replay_crds()
    for obj in crds:
        admin.send("POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", obj)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        got = admin.send("GET", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions")
        ready = [c for item in got.body.get("items", []) for c in
                 (item.get("status") or {}).get("conditions") or []
                 if c["type"] == "Established" and c["status"] == "True"]
        if len(ready) >= len(crds):
            return
        time.sleep(0.2)  # poll interval of a wait with a deadline
    raise AssertionError("lockwright's CRDs were not Established within 30 s")


def kinds_served(admin: Client) -> dict[str, tuple[str, str]]:
    """``api/v1/configmaps`` → (``v1``, ``ConfigMap``) for every resource served."""
    out: dict[str, tuple[str, str]] = {}
    versions = ["api/v1"] + [f"apis/{v['groupVersion']}" for g in
                             admin.send("GET", "/apis").body["groups"] for v in g["versions"]]
    for prefix in versions:
        listed = admin.send("GET", "/" + prefix).body
        for r in listed.get("resources", []):
            if "/" not in r["name"]:
                out[f"{prefix}/{r['name']}"] = (listed["groupVersion"], r["kind"])
    return out


def object_name(shape: Shape, kinds: dict[str, tuple[str, str]], base: str) -> str:
    """The name the replay gives the object: a CRD's must be ``plural.group``."""
    if "customresourcedefinitions/{name}" in shape["path"]:
        return str(crd(base)["metadata"]["name"])
    return base


def _answer(path: str, a: Answer) -> dict[str, Any]:
    if isinstance(a.body, bytes):
        return {"code": a.code, "media": a.media, "kind": _envelope(a.body)}
    kind = [a.body.get("apiVersion"), a.body.get("kind")] if isinstance(a.body, dict) else []
    return {"code": a.code, "media": a.media, "kind": kind,
            "body": normalize(_without_controllers(_own_rbac(path, a.body)))}


def _own_rbac(path: str, body: Any) -> Any:
    """A cluster-wide list of RBAC objects: only the replay's own. kube-apiserver's
    bootstrap policy has ~70 ClusterRoles and bindings, devcluster the few its users read
    (lockwright/devcluster/bootstrap_policy.py); the replay compares what it wrote."""
    if "/rbac.authorization.k8s.io/" not in path or "/namespaces/" in path or not (
            isinstance(body, dict) and isinstance(body.get("items"), list)):
        return body
    return {**body, "items": [i for i in body["items"]
                              if ((i.get("metadata") or {}).get("labels") or {}).get("fidelity")]}


def _comparable(x: dict[str, Any], y: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """Protobuf against JSON: the code, media and the object's apiVersion and kind."""
    if ("body" in x) == ("body" in y):
        return x, y
    return ({k: v for k, v in x.items() if k != "body"},
            {k: v for k, v in y.items() if k != "body"})


def _envelope(data: bytes) -> list[str]:
    from lockwright.devcluster.protobuf import type_meta  # tests may read devcluster's codec

    return list(type_meta(data))


def _without_controllers(body: Any) -> Any:
    if isinstance(body, dict) and isinstance(body.get("items"), list):
        kind = str(body.get("kind", "")).removesuffix("List")
        return {**body, "items": [i for i in body["items"]
                                  if (i.get("kind", kind), _name(i)) not in CONTROLLER_MADE]}
    if isinstance(body, list):  # a watch's events
        return [e for e in body if not isinstance(e, dict) or (
            (e.get("object") or {}).get("kind"), _name(e.get("object"))) not in CONTROLLER_MADE]
    return body


def _name(obj: Any) -> str:
    return str(((obj or {}).get("metadata") or {}).get("name", "")) if isinstance(obj, dict) \
        else ""


#: Groups whose discovery documents both servers serve alike (the CRDs the replay installs).
OWN_GROUPS = ("/apis/pkg.crossplane.io/", "/apis/apiextensions.crossplane.io/",
              "/apis/ops.crossplane.io/", "/apis/protection.crossplane.io/",
              f"/apis/{FIXTURE_GROUP}/")


def plain(shape: Shape, dc: Identities, kube: Identities) -> Outcome:
    """A request outside the resource paths: discovery, /version, health, OpenAPI."""
    path = concrete(shape["path"])
    if path.startswith("/debug/"):
        return Outcome(shape, not_compared="devcluster's own debugging endpoint")
    if "{unique}" in path:
        return Outcome(shape, not_compared="a test package's name recorded before {group}")
    if shape["method"] != "GET" or "{" in path:
        return Outcome(shape, not_compared="not a resource path, nor a plain GET")
    headers = {"Accept": shape["accept"]}
    got = [_plain_answer(path, ids.admin.send("GET", path, headers=headers))
           for ids in (dc, kube)]
    return Outcome(shape, diff(got[0], got[1]))


def _plain_answer(path: str, a: Answer) -> dict[str, Any]:
    """What two servers serving different built-in APIs must still agree on."""
    out: dict[str, Any] = {"code": a.code, "media": a.media}
    body = a.body
    if path == "/version" and isinstance(body, dict):
        out["keys"] = sorted(set(body) - {"emulationMajor", "emulationMinor",
                                          "minCompatibilityMajor", "minCompatibilityMinor"})
    elif path.startswith(OWN_GROUPS) and isinstance(body, dict):
        # The order of a group's resources is the order their CRDs were registered in.
        # Nor is the order of a resource's verbs anything a client reads.
        out["body"] = normalize({**body, "resources": sorted(
            ({**r, "verbs": sorted(r.get("verbs") or [])} for r in body.get("resources") or []),
            key=lambda r: str(r.get("name")))})
    elif not isinstance(body, dict):
        out["body"] = normalize(body) if not isinstance(body, str) or len(body) < 200 else ""
    else:
        out["kind"] = body.get("kind")
    return out


def replay_one(index: int, shape: Shape, dc: Identities, kube: Identities,
               kinds: dict[str, tuple[str, str]]) -> Outcome:
    """Replay one shape on both servers (each in namespace ``rp-<index>``)."""
    ns, base = f"rp-{index}", f"rp-{index}-o"
    if not shape["path"].startswith(("/api/", "/apis/")) or shape["path"].count("/") < 3 or (
            shape["path"].startswith("/apis/") and shape["path"].count("/") < 4):
        return plain(shape, dc, kube)
    try:
        t = target(shape, kinds, ns, object_name(shape, kinds, base))
    except NotReplayable as exc:
        return Outcome(shape, not_compared=str(exc))
    try:
        answers = _answers(shape, t, (dc, kube))
    except NotReplayable as exc:
        return Outcome(shape, not_compared=str(exc))
    if is_watch(shape):
        for a in answers:  # a watch's BOOKMARK times depend on the server's clock
            if isinstance(a["body"], list):
                a["body"] = [e for e in a["body"] if (e or {}).get("type") != "BOOKMARK"]
    return Outcome(shape, diff(*_comparable(answers[0], answers[1])))


def replay_all(dc: Identities, kube: Identities, shapes: list[Shape]) -> list[Outcome]:
    """Every shape on both servers, two shapes at a time."""
    for ids in (dc, kube):
        install_crds(ids.admin)
    kinds = kinds_served(kube.admin)
    # One shape at a time: a cluster-scoped list sees what earlier shapes left, alike.
    return [replay_one(i, shape, dc, kube, kinds) for i, shape in enumerate(shapes)]


def _answers(shape: Shape, t: Target, both: tuple[Identities, Identities]
             ) -> list[dict[str, Any]]:
    """The shape on both servers, each prepared first (its namespace, its object). A watch
    runs until the server ends it (3 s when no event stops it), so the two servers' watches
    (GETs, no body to encode) run side by side: 20 watch shapes cost 60 s, not 120. Any
    other shape runs on devcluster and then on kube-apiserver, as it always has (a
    protobuf body is encoded by kube-apiserver before its namespace there exists)."""
    encoder = both[1].admin

    def ready(ids: Identities) -> str:
        namespace(ids.admin, t.namespace)
        return prepare(ids.admin, shape, t)

    def one(ids: Identities, rv: str) -> dict[str, Any]:
        return _answer(t.path, send(ids.admin, shape, t, rv, encoder))
    if not is_watch(shape):
        return [one(ids, ready(ids)) for ids in both]
    rvs = [ready(ids) for ids in both]
    with ThreadPoolExecutor(2) as pool:
        return list(pool.map(one, both, rvs))


def describe(shape: Shape) -> str:
    """A shape in one line."""
    q = "&".join(f"{k}={v}" for k, v in sorted(shape["query"].items()))
    extra = [x for x in (shape["content_type"] and f"ct={shape['content_type']}",
                         shape["accept"] and f"accept={shape['accept']}",
                         shape["body"] and f"body={shape['body']}") if x]
    return f"{shape['method']} {shape['path']}{'?' + q if q else ''} " + " ".join(extra)


def main() -> int:
    from tests.fidelity.compare import both_servers

    with both_servers() as (dc, kube):
        outcomes = replay_all(dc, kube, load(Path(sys.argv[1]) if sys.argv[1:] else SNAPSHOT))
    for o in outcomes:
        if o.not_compared or o.paths:
            print(describe(o.shape), "::", o.not_compared or "; ".join(o.paths[:8]))
    print(json.dumps({"seen": len(outcomes),
                      "compared": sum(1 for o in outcomes if not o.not_compared),
                      "identical": sum(1 for o in outcomes if not o.not_compared
                                       and not o.paths)}))
    return 0


if __name__ == "__main__":
    sys.exit(main())


__all__ = ["Outcome", "key", "replay_all"]
