"""The package graph as the Lock and the package objects describe it (docs/crossplane.md §5, §11).

Pure functions over plain data:

- :func:`graph_of` builds the :class:`Graph` the resolver works on: one :class:`Node` per
  repository installed (a Lock entry, a package object, or both), with the dependencies the
  Lock recorded for it.
- :func:`report` is the revision side (Crossplane's ``Resolve``): how many dependencies a
  revision has (found), how many are in the Lock (installed) and how many at a version
  their constraint refuses (invalid), with Crossplane's messages, plus the resolver's
  explanation when it found no solution for this revision.

Nodes are identified by repository (``source``), as Crossplane's DAG does, so a dependency
is found whatever its package object is called.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from functools import cached_property
from typing import Any

from lockwright.errors import ConstraintError
from lockwright.names import parse_reference
from lockwright.xpkg.constraints import is_digest, parse_constraint, parse_loose_version

Obj = dict[str, Any]
PKG_API_VERSION = "pkg.crossplane.io/v1"
# The resolver's explanations, by Lock entry (revision) name, as JSON: read by the
# revision side so each affected revision says why (the Lock has no status field for it).
UNRESOLVED_ANNOTATION = "lockwright.dev/unresolved"
MAX_LISTED = 3


@dataclass(frozen=True)
class Requirement:
    """One dependency edge: a parent wants ``package`` (a repository) at ``constraint``.

    Attributes:
        package: the repository without tag, exactly as the dependency wrote it.
        kind: ``Provider``, ``Configuration`` or ``Function``.
        constraint: a Masterminds semver range, or a digest pin (``sha256:…``).
        api_version: the package API version of ``kind``.
        parent: who asks, for explanations: a revision name, or ``<source>@<version>``.
    """

    package: str
    kind: str
    constraint: str
    api_version: str = PKG_API_VERSION
    parent: str = ""

    def __str__(self) -> str:
        return f'"{self.package}" ({self.constraint})'


@dataclass(frozen=True)
class Node:
    """Something installed, by repository: a Lock entry, a package object, or both.

    Attributes:
        source: the repository without tag or digest.
        kind: the package kind.
        version: the tag or digest installed (the Lock's ``version``, else the package's).
        package: the package object's name; "" when only the Lock knows it.
        revision: the Lock entry's name; "" while no revision of it is in the Lock.
        dependencies: what the Lock recorded; None while it is not in the Lock.
    """

    source: str
    kind: str
    version: str
    package: str = ""
    revision: str = ""
    dependencies: tuple[Requirement, ...] | None = None

    @property
    def label(self) -> str:
        """``source@version``, how explanations name it."""
        return f"{self.source}@{self.version}"


@dataclass(frozen=True)
class Graph:
    """Every installed node, Lock order first, then package objects not yet in the Lock."""

    nodes: tuple[Node, ...] = ()

    @cached_property
    def _by_source(self) -> dict[str, Node]:
        # trace() and find_cycles() look a node up per edge: a scan made them quadratic.
        index: dict[str, Node] = {}
        for n in self.nodes:
            index.setdefault(n.source, n)
        return index

    def node(self, source: str) -> Node | None:
        """The node of ``source`` (the first, if two share it), or None: not installed."""
        return self._by_source.get(source)

    def parents(self, source: str) -> list[Node]:
        """The nodes whose recorded dependencies name ``source``."""
        return [n for n in self.nodes if any(r.package == source for r in n.dependencies or ())]

    def names(self) -> dict[tuple[str, str], str]:
        """Package object (kind, name) → its source, to spot a name already taken."""
        return {(n.kind, n.package): n.source for n in self.nodes if n.package}


def requirements_of(entry: Obj) -> tuple[Requirement, ...]:
    """The Lock entry's ``dependencies[]`` as requirements asked by the entry."""
    parent = str(entry.get("name", ""))
    return tuple(Requirement(str(d.get("package", "")), _kind(d), str(d.get("constraints", "")),
                             str(d.get("apiVersion") or PKG_API_VERSION), parent)
                 for d in entry.get("dependencies") or [])


def _kind(obj: Obj) -> str:
    return str(obj.get("kind") or obj.get("type") or "")


def graph_of(lock: Obj, packages: Iterable[Obj]) -> Graph:
    """The graph of the Lock's entries and the package objects (not being deleted).

    Args:
        lock: the Lock ``lock`` as read.
        packages: Provider, Configuration and Function objects, each with ``kind``.
    """
    living = [p for p in packages if not (p.get("metadata") or {}).get("deletionTimestamp")]
    by_source: dict[str, Obj] = {}
    for pkg in sorted(living, key=lambda p: (str(p.get("kind")), str(p["metadata"]["name"]))):
        ref = _reference(str((pkg.get("spec") or {}).get("package", "")))
        if ref is not None:
            by_source.setdefault(ref[0], {**pkg, "_version": ref[1]})
    nodes: list[Node] = []
    for source, entry in _current_entries(lock.get("packages") or [], by_source).items():
        found: Obj = by_source.pop(source, {})
        nodes.append(Node(source, _kind(entry), str(entry.get("version", "")),
                          str(found.get("metadata", {}).get("name", "")),
                          str(entry.get("name", "")), requirements_of(entry)))
    nodes += [Node(source, str(pkg.get("kind", "")), str(pkg["_version"]),
                   str(pkg["metadata"]["name"])) for source, pkg in by_source.items()]
    return Graph(tuple(nodes))


def _current_entries(entries: list[Obj], by_source: dict[str, Obj]) -> dict[str, Obj]:
    """One Lock entry per source, in the Lock's order. During an upgrade the Lock holds
    the revision moving out and the one moving in: the one at the version the package
    asks for wins, else the last (the one moving in is appended), so its dependencies are
    the ones resolved."""
    chosen: dict[str, Obj] = {}
    for entry in entries:
        source = str(entry.get("source", ""))
        wanted = (by_source.get(source) or {}).get("_version")
        if source not in chosen or chosen[source].get("version") != wanted:
            chosen[source] = entry
    return chosen


def _reference(package: str) -> tuple[str, str] | None:
    try:
        ref = parse_reference(package)
    except ValueError:
        return None
    return ref.source, ref.version


# --- the revision side ------------------------------------------------------------------
@dataclass(frozen=True)
class Report:
    """What a revision says about its dependencies (``status.*Dependencies``, its health).

    ``message`` is "" when every dependency, transitive ones included, is in the Lock at a
    version its constraint accepts; otherwise Crossplane's error, without the
    ``cannot resolve package dependencies: `` prefix the revision's condition adds.
    """

    found: int = 0
    installed: int = 0
    invalid: int = 0
    message: str = ""


def report(lock: Obj, revision: str) -> Report:
    """The revision-side check of ``revision``'s Lock entry (docs/crossplane.md §11 steps 8-11).

    Direct dependencies missing from the Lock come first (``missing dependencies: …``),
    then transitive ones, then direct ones at a version their constraint refuses
    (``incompatible dependencies: …``). The resolver's explanation for this revision, if
    it left one on the Lock, follows the message.
    """
    entry = next((p for p in lock.get("packages") or [] if p.get("name") == revision), None)
    if entry is None:
        return Report()
    graph = graph_of(lock, [])
    direct = requirements_of(entry)
    message, found, installed = _missing(graph, direct)
    invalid: list[str] = []
    if not message:
        invalid = [problem for req in direct if (problem := incompatibility(graph, req))]
        if invalid:
            message = "incompatible dependencies: " + "; ".join(invalid)
    why = explanations(lock).get(revision, "")
    if message and why:
        message = f"{message}; {why}"
    return Report(found, installed, len(invalid), message)


def _missing(graph: Graph, direct: tuple[Requirement, ...]) -> tuple[str, int, int]:
    """Crossplane's missing check: direct first, then the whole transitive tree."""
    absent = [r for r in direct if graph.node(r.package) is None]
    if absent:
        return _missing_message(absent), len(direct), len(direct) - len(absent)
    tree = list(trace(graph, direct))
    absent = [r for r in tree if graph.node(r.package) is None]
    if absent:
        return _missing_message(absent), len(tree), len(tree) - len(absent)
    return "", len(tree), len(tree)


def trace(graph: Graph, direct: Iterable[Requirement]) -> Iterator[Requirement]:
    """Every requirement reachable from ``direct``, once per repository, depth first."""
    seen: set[str] = set()
    stack = list(reversed(list(direct)))
    while stack:
        req = stack.pop()
        if req.package in seen:
            continue
        seen.add(req.package)
        yield req
        node = graph.node(req.package)
        stack += reversed(list(node.dependencies or ())) if node else []


def _missing_message(absent: list[Requirement]) -> str:
    listed = sorted(str(r) for r in absent)
    more = f", and {len(listed) - MAX_LISTED} more" if len(listed) > MAX_LISTED else ""
    return "missing dependencies: " + ", ".join(listed[:MAX_LISTED]) + more


def incompatibility(graph: Graph, req: Requirement) -> str:
    """Why the installed ``req.package`` does not satisfy ``req``, or "" when it does."""
    node = graph.node(req.package)
    if node is None or satisfies(node.version, req.constraint):
        return ""
    return (f"existing package {node.label} is incompatible with constraint "
            f"{req.constraint}")


def satisfies(version: str, constraint: str) -> bool:
    """Whether an installed tag or digest meets a dependency's constraint.

    A digest constraint needs that exact digest; a semver one needs a tag that parses as
    a version and is in range (a digest never meets a range, and an unparsable constraint
    is met by nothing).
    """
    if is_digest(constraint) or is_digest(version):
        return version == constraint
    parsed = parse_loose_version(version)
    if parsed is None:
        return False
    try:
        return parse_constraint(constraint).allows(parsed)
    except ConstraintError:
        return False


def explanations(lock: Obj) -> dict[str, str]:
    """The resolver's explanations on the Lock, by revision ({} when there are none)."""
    raw = ((lock.get("metadata") or {}).get("annotations") or {}).get(UNRESOLVED_ANNOTATION)
    try:
        found = json.loads(raw) if raw else {}
    except ValueError:
        return {}
    return {str(k): str(v) for k, v in found.items()} if isinstance(found, dict) else {}


def find_cycles(graph: Graph) -> list[list[str]]:
    """Each dependency cycle among installed nodes, as its sources in order, first repeated.

    Depth first from each node in graph order, so the same graph gives the same cycles;
    iterative, so a long chain cannot exhaust Python's recursion limit.
    """
    cycles: list[list[str]] = []
    state: dict[str, int] = {}  # 1 on the path, 2 done
    for node in graph.nodes:
        if node.source not in state:
            _walk(graph, node.source, state, cycles)
    return cycles


def _walk(graph: Graph, start: str, state: dict[str, int], cycles: list[list[str]]) -> None:
    path, pending = [start], [_edges(graph, start)]
    state[start] = 1
    while pending:
        req = next(pending[-1], None)
        if req is None:
            state[path.pop()] = 2
            pending.pop()
        elif state.get(req.package) == 1:
            cycles.append(path[path.index(req.package):] + [req.package])
        elif req.package not in state and graph.node(req.package):
            state[req.package] = 1
            path.append(req.package)
            pending.append(_edges(graph, req.package))


def _edges(graph: Graph, source: str) -> Iterator[Requirement]:
    node = graph.node(source)
    return iter(node.dependencies or ()) if node else iter(())
