"""What an HTTP request asks, in authorization terms (kube's ``RequestInfoFactory``).

``/api/v1/...`` and ``/apis/<group>/<version>/...`` are resource requests: verb from the
method (GET is ``get``, ``list`` or ``watch``; DELETE of a collection is
``deletecollection``), namespace, resource, name and subresource from the path. Anything
else (discovery documents, ``/version``, ``/healthz``, ``/openapi``) is a non-resource
request whose verb is the lower-cased method.
"""

from __future__ import annotations

from lockwright.devcluster.rbac import Attributes, User

_VERBS = {"POST": "create", "GET": "get", "HEAD": "get", "PUT": "update", "PATCH": "patch",
          "DELETE": "delete"}
_NAMESPACE_SUBRESOURCES = ("status", "finalize")
_TRUE = ("1", "true", "True")


def _split(path: str) -> list[str]:
    return [p for p in path.split("/") if p]


def _api_parts(parts: list[str]) -> tuple[str, str, list[str]] | None:
    """(group, version, the rest) of a resource path, or None for a non-resource path."""
    if len(parts) >= 3 and parts[0] == "api":
        return "", parts[1], parts[2:]
    if len(parts) >= 4 and parts[0] == "apis":
        return parts[1], parts[2], parts[3:]
    return None


def _scope(rest: list[str]) -> tuple[str, list[str]]:
    """The namespace and the parts naming the resource, as kube reads ``namespaces/...``."""
    if rest[0] != "namespaces" or len(rest) < 2:
        return "", rest
    if len(rest) > 2 and rest[2] not in _NAMESPACE_SUBRESOURCES:
        return rest[1], rest[2:]
    return rest[1], rest


def _selected_name(query: dict[str, str]) -> str:
    """The name a ``metadata.name=<name>`` field selector pins a list or watch to."""
    for term in query.get("fieldSelector", "").split(","):
        key, sep, value = term.replace("==", "=").partition("=")
        if sep and key.strip() == "metadata.name":
            return value.strip()
    return ""


def request_attributes(user: User, method: str, path: str,
                       query: dict[str, str]) -> Attributes:
    """The attributes RBAC decides on for ``method path?query``."""
    parts = _split(path)
    api = _api_parts(parts)
    verb = _VERBS.get(method, method.lower())
    if api is None:
        return Attributes(user, method.lower(), False, path="/" + "/".join(parts))
    group, version, rest = api
    if rest[0] == "watch" and verb == "get":
        verb, rest = "watch", rest[1:]
    namespace, rest = _scope(rest) if rest else ("", rest)
    if not rest:
        return Attributes(user, method.lower(), False, path="/" + "/".join(parts))
    name = rest[1] if len(rest) > 1 else ""
    if not name and verb == "get":
        verb = "watch" if query.get("watch") in _TRUE else "list"
        name = _selected_name(query)
    if not name and verb == "delete":
        verb = "deletecollection"
    return Attributes(user, verb, True, group, version, rest[0],
                      rest[2] if len(rest) > 2 else "", namespace, name)
