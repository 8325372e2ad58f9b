"""Replay a recorded request shape (tests/fidelity/recorded.py) with fresh objects.

A shape names a method, a path template, query parameter names (values only where they
choose behaviour), content type, accept and body kind. :func:`replay` fills it in on one
server: its own namespace, an object of the path's kind created first when the path names
one, a body of the recorded kind in the recorded content type (protobuf bodies are the
bytes kube-apiserver itself encodes for the object), and answers the steps to compare.
A shape that cannot be filled in generically raises :class:`NotReplayable` with the reason.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

import yaml

from tests.fidelity.client import Answer, Client
from tests.fidelity.objects import concrete, fresh_object
from tests.fidelity.recorded import Shape

PROTOBUF = "application/vnd.kubernetes.protobuf"


class NotReplayable(Exception):
    """The shape needs something a generic replay cannot make (the reason)."""


@dataclass(frozen=True)
class Target:
    """A shape's path filled in: where the object lives and what it is."""

    collection: str
    path: str
    name: str
    namespace: str
    api_version: str
    kind: str
    subresource: str


def target(shape: Shape, kinds: dict[str, tuple[str, str]], ns: str, name: str) -> Target:
    """The concrete paths of ``shape`` in namespace ``ns``, naming ``name``."""
    template = concrete(shape["path"])
    path = template.replace("{namespace}", ns).replace("{name}", name)
    parts = [p for p in template.split("/") if p]
    if "watch" in parts:
        parts.remove("watch")
        path = path.replace("/watch/", "/", 1)
    if "{name}" in parts:
        at = parts.index("{name}")
        collection_parts, sub = parts[:at], parts[at + 1:]
    else:
        collection_parts, sub = parts, []
    collection = "/" + "/".join(collection_parts).replace("{namespace}", ns)
    resource_key = "/".join(collection_parts).replace("namespaces/{namespace}/", "")
    if "{unique}" in template:
        raise NotReplayable("a test package's name recorded before {group}")
    if resource_key not in kinds:
        raise NotReplayable(f"no kind is served at {template}")
    api_version, kind = kinds[resource_key]
    return Target(collection, path, name if "{name}" in parts else "", ns, api_version, kind,
                  sub[0] if sub else "")


def query(shape: Shape, t: Target, rv: str) -> str:
    """The recorded parameters with values of this replay."""
    out = []
    for key, value in sorted(shape["query"].items()):
        if key in ("continue",):
            raise NotReplayable("a continue token comes from an earlier page")
        if key == "timeoutSeconds" or key == "timeout":
            continue  # the client sets its own deadline
        if key in ("labelSelector", "fieldSelector"):
            value = _selector(value, t)
        elif key == "resourceVersion":
            value = rv if value == "<set>" else value
        elif value == "<set>":
            value = {"limit": "500", "fieldManager": "fidelity"}.get(key, "x")
        out.append(f"{key}={quote(value, safe='')}")
    return "&".join(out)


def _selector(template: str, t: Target) -> str:
    values = {"metadata.name": t.name or "obj", "metadata.namespace": t.namespace}
    terms = []
    for term in template.split(","):
        if term.endswith(" in") or term.endswith(" notin"):
            terms.append(f"{term} (fidelity)")
        elif term.endswith("=") or term.endswith("!="):
            key = term.rstrip("!=")
            terms.append(term + values.get(key, "fidelity"))
        else:
            terms.append(term)
    return ",".join(terms)


def body(shape: Shape, t: Target, encoder: Client, current: dict[str, Any] | None = None
         ) -> tuple[bytes | None, dict[str, str]]:
    """The request body of ``shape`` and its headers (a PUT changes ``current``)."""
    headers = {"Accept": shape["accept"]} if shape["accept"] else {"Accept": ""}
    ctype = shape["content_type"]
    kind = shape["body"]
    if not kind and shape["method"] != "PATCH":
        if shape["method"] in ("POST", "PUT") and not t.subresource:
            raise NotReplayable("recorded without its body (refused before devcluster read it)")
        return None, headers
    if ctype:
        headers["Content-Type"] = ctype
    if kind == "[patch]":
        ops = [{"op": "add", "path": "/metadata/labels", "value": {"fidelity": "patched"}}]
        return json.dumps(ops).encode(), headers
    api_version, _, kind_name = kind.partition(" ")
    if api_version.startswith("{group}/"):  # a test package's kind: the fixture's
        api_version, kind_name = t.api_version, t.kind
    obj = _body_object(shape, t, api_version, kind_name)
    if shape["method"] == "PUT" and current is not None:
        obj = {**current, "metadata": {**current.get("metadata", {}),
                                       "labels": {"fidelity": "updated"}}}
    if ctype.startswith(PROTOBUF):
        return _protobuf(encoder, t, obj), headers
    if "yaml" in ctype:
        return yaml.safe_dump(obj).encode(), headers
    return json.dumps(obj).encode(), headers


def _body_object(shape: Shape, t: Target, api_version: str, kind: str) -> dict[str, Any]:
    if shape["method"] == "PATCH" and "apply" not in shape["content_type"]:
        return {"metadata": {"labels": {"fidelity": "patched"}}}
    if kind == "TokenRequest":  # clients send no metadata; kube echoes what they send
        return {"apiVersion": api_version, "kind": kind, "spec": {"audiences": []}}
    if kind == "DeleteOptions":
        return {"apiVersion": api_version, "kind": kind, "propagationPolicy": "Background"}
    return fresh_object(api_version, kind, t.name or "obj", t.namespace)


def _protobuf(encoder: Client, t: Target, obj: dict[str, Any]) -> bytes:
    """The object as kube-apiserver encodes it (a dry-run create answered in protobuf)."""
    got = encoder.raw("POST", f"{t.collection}?dryRun=All", json.dumps(obj).encode(),
                      {"Content-Type": "application/json", "Accept": PROTOBUF})
    if got.code >= 300 or not got.data.startswith(b"k8s\x00"):
        raise NotReplayable(f"kube-apiserver did not encode a {t.kind} ({got.code})")
    return got.data


def prepare(admin: Client, shape: Shape, t: Target) -> str:
    """Create the object the path names (unless the request creates it); the collection's
    resourceVersion before it, for a watch or a list from a version."""
    listed = admin.send("GET", t.collection)
    rv = (listed.body.get("metadata") or {}).get("resourceVersion", "") \
        if isinstance(listed.body, dict) else ""
    creates = shape["method"] == "POST" or (
        shape["method"] == "PATCH" and "apply" in shape["content_type"])
    if t.name and not (creates and not t.subresource):
        made = admin.send("POST", t.collection,
                          fresh_object(t.api_version, t.kind, t.name, t.namespace))
        if made.code >= 300:
            raise NotReplayable(f"creating a {t.kind} answered {made.code}: "
                                f"{_message(made)}")
    return str(rv)


def _message(answer: Answer) -> str:
    return str(answer.body.get("message") if isinstance(answer.body, dict) else answer.body)[:120]


def is_watch(shape: Shape) -> bool:
    return shape["query"].get("watch") in ("true", "1") or "/watch/" in shape["path"]


def send(client: Client, shape: Shape, t: Target, rv: str, encoder: Client) -> Answer:
    """The shape's request on ``client``."""
    q = query(shape, t, rv)
    path = t.path + (f"?{q}" if q else "")
    current = None
    if shape["method"] == "PUT" and t.name:
        got = client.send("GET", t.path)
        current = got.body if isinstance(got.body, dict) and got.code == 200 else None
    data, headers = body(shape, t, encoder, current)
    if is_watch(shape):
        initial = shape["query"].get("sendInitialEvents") == "true"
        return client.watch(path if q else path + "?", seconds=3, stop_after=2 if initial else 1,
                            headers=headers)
    return client.send(shape["method"], path, data, headers=headers)
