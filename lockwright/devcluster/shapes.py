"""The shape of a request devcluster serves, for the differential check
(docs/testing.md, "Fidelity"): method, path template, query parameter names (values only
where they choose behaviour), content type, accept, body kind and patch type; never names
or values.

``--record-shapes FILE`` (or ``LOCKWRIGHT_DEVCLUSTER_SHAPES``) appends each shape the first
time this process serves it, one JSON object a line; readers deduplicate across processes.
"""

from __future__ import annotations

import os
import re
import threading
from typing import Any

import orjson

from lockwright.devcluster.protobuf import is_protobuf, type_meta

#: Query parameters whose value chooses behaviour; their value is kept.
KEPT_VALUES = frozenset({
    "watch", "dryRun", "fieldValidation", "force", "allowWatchBookmarks", "sendInitialEvents",
    "resourceVersionMatch", "includeObject", "propagationPolicy", "orphanDependents",
    "gracePeriodSeconds", "pretty"})
#: Selectors keep their keys and operators, not their values.
SELECTORS = frozenset({"labelSelector", "fieldSelector"})
_TERM = re.compile(r"^\s*(!?)([^=!<>\s]+)\s*(==|!=|=|in\b|notin\b)?")
#: What makes a test's names unique (tests/helpers.unique's suffix, a hex prefix of a
#: group): one test's group is the next run's too.
UNIQUE = re.compile(r"-[0-9a-f]{10}(?=[.]|$)|^[0-9a-f]{8}(?=[.])")
#: The tests' own packages' groups: names under the domains RFC 2606 keeps for examples.
#: A server answers alike whatever such a group, its resources and kinds are called, so
#: one test's ``big-1f2e.example.org/v1alpha1/big17s`` is the next one's ``{group}``.
FIXTURE_GROUP = re.compile(r"(^|[.])example[.](org|com|net)$")
_TERMS = re.compile(r",(?![^()]*\))")  # commas between terms, not inside "in (a,b)"
_KIND = re.compile(rb"^(apiVersion|kind):\s*['\"]?([^\s'\"]+)", re.MULTILINE)


def path_template(parts: list[str]) -> str:
    """``/api/v1/namespaces/{namespace}/configmaps/{name}``: groups, versions, resources and
    subresources kept; namespace and object names replaced."""
    if parts[:1] == ["api"] and len(parts) >= 2:
        head, rest = parts[:2], parts[2:]
    elif parts[:1] == ["apis"] and len(parts) >= 3:
        head, rest = parts[:3], parts[3:]
    else:
        return names_free("/" + "/".join(parts))
    out = list(head)
    if rest[:1] == ["watch"]:
        out, rest = out + ["watch"], rest[1:]
    if rest[:1] == ["namespaces"] and len(rest) >= 2:
        # namespaces/{name}/status and /finalize are the Namespace's own subresources.
        own = len(rest) == 2 or rest[2] in ("status", "finalize")
        if own:
            return "/" + "/".join(out + ["namespaces", "{name}"] + rest[2:3])
        out += ["namespaces", "{namespace}"]
        rest = rest[2:]
    if rest:
        out += [rest[0]] + (["{name}"] if len(rest) > 1 else []) + rest[2:3]
    return names_free("/" + "/".join(out))


def names_free(path: str) -> str:
    """``path`` with what names a test's own objects replaced: unique suffixes, and a test
    package's group and resource (:func:`unique_free`, :func:`fixture_free`)."""
    return fixture_free(unique_free(path))


def unique_free(path: str) -> str:
    """``path`` with test-unique suffixes (``-0e88eeecdc``) replaced by ``-{unique}``."""
    return "/".join(UNIQUE.sub(lambda m: "-{unique}" if m.group().startswith("-")
                               else "{unique}", p) for p in path.split("/"))


def fixture_free(path: str) -> str:
    """``path`` with a test package's group as ``{group}`` and its resource as
    ``{resource}`` (``/apis/{group}/v1alpha1/namespaces/{namespace}/{resource}/{name}``);
    the OpenAPI document of its group version likewise."""
    parts = path.split("/")
    at = 2 if parts[1:2] == ["apis"] else 4 if parts[1:4] == ["openapi", "v3", "apis"] else 0
    if not at or len(parts) <= at or not FIXTURE_GROUP.search(parts[at]):
        return path
    parts[at] = "{group}"
    i = at + 2  # past the version
    if parts[i:i + 1] == ["watch"]:
        i += 1
    if parts[i:i + 2] == ["namespaces", "{namespace}"]:
        i += 2
    if at == 2 and i < len(parts):
        parts[i] = "{resource}"
    return "/".join(parts)


def fixture_kind(kind: str) -> str:
    """A body's ``apiVersion kind`` with a test package's group and kind replaced
    (``{group}/v1alpha1 {kind}``)."""
    api_version, _, name = kind.partition(" ")
    group, slash, version = api_version.rpartition("/")
    if not slash or not FIXTURE_GROUP.search(group) or not name:
        return kind
    return f"{{group}}/{version} {{kind}}"


def query_shape(query: dict[str, str]) -> dict[str, str]:
    """Each parameter's name, with its value where it chooses behaviour, a selector's keys
    and operators (sorted: every term must hold, in any order, and kubectl orders a
    describe's event selector as a Go map iterates, differently each time), ``0`` for a
    resourceVersion of 0, else ``<set>``."""
    out: dict[str, str] = {}
    for key, value in query.items():
        if key in KEPT_VALUES:
            out[key] = value
        elif key in SELECTORS:
            out[key] = ",".join(sorted(_term(t) for t in _TERMS.split(value) if t.strip()))
        elif key == "resourceVersion":
            out[key] = "0" if value == "0" else ("" if not value else "<set>")
        else:
            out[key] = "<set>"
    return out


def _term(term: str) -> str:
    match = _TERM.match(term)
    if match is None:
        return "<term>"
    neg, key, op = match.groups()
    return f"{neg}{key} {op}" if op in ("in", "notin") else f"{neg}{key}{op or ''}"


def media(header: str | None) -> str:
    """A content type or accept without spaces and charset (the media and ``as=`` kept)."""
    if not header:
        return ""
    kept = [p.strip() for p in header.replace(" ", "").split(";")
            if not p.lower().startswith(("charset=", "q="))]
    return ";".join(kept)


def body_kind(body: bytes, content_type: str) -> str:
    """``apiVersion kind`` of a JSON or YAML body; a JSON patch is ``[patch]``."""
    if not body:
        return ""
    if is_protobuf(body):
        return fixture_kind(" ".join(type_meta(body)).strip()) or "<protobuf>"
    if body.lstrip()[:1] == b"[":
        return "[patch]"
    fields: dict[str, Any] = {}
    if body.lstrip()[:1] == b"{":
        try:
            doc = orjson.loads(body)
        except orjson.JSONDecodeError:
            return "<unparsed>"
        fields = doc if isinstance(doc, dict) else {}
    else:
        fields = {k.decode(): v.decode() for k, v in _KIND.findall(body[:4096])}
    return fixture_kind(f"{fields.get('apiVersion', '')} {fields.get('kind', '')}".strip())


class Recorder:
    """Appends each new shape to ``path`` (one JSON line, written once per process)."""

    def __init__(self, path: str) -> None:
        self.path = path
        self._seen: set[bytes] = set()
        self._lock = threading.Lock()

    def record(self, shape: dict[str, Any]) -> None:
        """Write ``shape`` unless this process already wrote it."""
        line = orjson.dumps(shape, option=orjson.OPT_SORT_KEYS) + b"\n"
        with self._lock:
            if line in self._seen:
                return
            self._seen.add(line)
            # O_APPEND: one write per line, so processes sharing the file never interleave.
            try:
                fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
                try:
                    os.write(fd, line)
                finally:
                    os.close(fd)
            except OSError:
                pass  # a record lost never fails the request it describes


def shape_of(method: str, parts: list[str], query: dict[str, str],
             headers: Any, body: bytes) -> dict[str, Any]:
    """The recorded shape of one request (see the module docstring)."""
    content_type = media(headers.get("Content-Type")) if body else ""
    return {"method": method, "path": path_template(parts), "query": query_shape(query),
            "content_type": content_type, "accept": media(headers.get("Accept")),
            "body": body_kind(body, content_type)}
