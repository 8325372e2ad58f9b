"""The ``trace`` tree, as ``crossplane beta trace`` draws a package: pure functions.

From plain objects read beforehand (:class:`Snapshot`): the package, then its revisions
(the active one first) with the runtime Deployment under each revision that has one, then
the packages that provide its dependencies, each traced the same way. Dependencies come
from the Lock entry of the active revision (else the current one) and are found by
repository, as :func:`lockwright.dependencies.graph.graph_of` finds them; one the cluster does not
have yet is a row of its own saying so. A package reached twice is expanded once.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import asdict, dataclass, field, replace
from typing import Any

from lockwright.commands import text
from lockwright.dependencies.graph import Graph, Requirement, graph_of, requirements_of
from lockwright.names import parse_reference
from lockwright.runtime.manifests import deployment_health

Obj = dict[str, Any]
HEADER = ("NAME", "VERSION", "INSTALLED", "HEALTHY", "STATE", "STATUS")
WIDE_HEADER = ("NAME", "PACKAGE", "VERSION", "INSTALLED", "HEALTHY", "STATE", "STATUS")
DASH = "-"
PACKAGE_LABEL = "pkg.crossplane.io/package"


@dataclass(frozen=True)
class Snapshot:
    """Everything a trace reads, as the API returned it (objects carry ``kind``)."""

    packages: list[Obj] = field(default_factory=list)
    revisions: list[Obj] = field(default_factory=list)
    lock: Obj = field(default_factory=dict)
    deployments: list[Obj] = field(default_factory=list)


@dataclass(frozen=True)
class Node:
    """One row of the tree and the rows under it."""

    kind: str
    name: str
    namespace: str = ""
    package: str = ""
    version: str = ""
    installed: str = DASH
    healthy: str = DASH
    state: str = DASH
    status: str = ""
    message: str = ""
    children: tuple[Node, ...] = ()


def _meta(obj: Obj) -> Obj:
    found: Obj = obj.get("metadata") or {}
    return found


def _conditions(obj: Obj) -> dict[str, Obj]:
    return {str(c.get("type")): c for c in (obj.get("status") or {}).get("conditions") or []}


def _image(reference: str) -> tuple[str, str]:
    """(repository, version) of a package reference; a digest shows its first 12 hex."""
    ref = parse_reference(reference)
    version = ref.tag or (ref.digest.split(":", 1)[-1][:12] if ref.digest else "")
    return ref.source, version


# --- rows of each kind --------------------------------------------------------------------
def package_row(pkg: Obj) -> Node:
    """A package: Installed and Healthy, and (as Crossplane picks it) the condition to show:
    the healthy reason when both hold, else the first that does not, Installed first."""
    conds = _conditions(pkg)
    installed, healthy = conds.get("Installed") or {}, conds.get("Healthy") or {}
    shown = healthy
    if not (installed.get("status") == "True" and healthy.get("status") == "True"):
        shown = next((c for c in (installed, healthy) if c.get("status") != "True"
                      and (c.get("reason") or c.get("message"))), installed)
    source, version = _image(str((pkg.get("spec") or {}).get("package", "")))
    return Node(str(pkg.get("kind")), str(_meta(pkg).get("name")), package=source,
                version=version, installed=installed.get("status", DASH),
                healthy=healthy.get("status", DASH), status=str(shown.get("reason", "")),
                message=str(shown.get("message", "")))


def revision_row(rev: Obj, children: tuple[Node, ...] = ()) -> Node:
    """A revision: healthy when RevisionHealthy (and RuntimeHealthy, if it has a runtime)
    hold; its state is its desiredState."""
    conds = _conditions(rev)
    checks = [conds[t] for t in ("RevisionHealthy", "RuntimeHealthy") if t in conds]
    failing = next((c for c in checks if c.get("status") != "True"), None)
    shown = failing or (checks[0] if checks else {})
    healthy = DASH if not checks else str(failing.get("status")) if failing else "True"
    source, version = _image(str((rev.get("spec") or {}).get("image", "")))
    return Node(str(rev.get("kind")), str(_meta(rev).get("name")), package=source,
                version=version, healthy=healthy,
                state=str((rev.get("spec") or {}).get("desiredState") or DASH),
                status=str(shown.get("reason", "")), message=str(shown.get("message", "")),
                children=children)


def deployment_row(deployment: Obj, kind: str) -> Node:
    """A runtime Deployment: healthy when Available, with the Deployment's own words."""
    healthy, message = deployment_health(deployment, kind)
    return Node("Deployment", str(_meta(deployment).get("name")),
                namespace=str(_meta(deployment).get("namespace", "")),
                healthy="True" if healthy else "False",
                status="Available" if healthy else "Unavailable", message=message)


def missing_row(req: Requirement) -> Node:
    """A dependency no package provides yet."""
    return Node(req.kind, req.package, package=req.package, version=req.constraint,
                installed="False", status="MissingDependency",
                message=f"no {req.kind} of {req.package} is installed (wants {req.constraint})")


# --- the tree -----------------------------------------------------------------------------
def build(snapshot: Snapshot, kind: str, name: str) -> Node | None:
    """The tree of package ``kind``/``name``, or None when there is no such package."""
    graph = graph_of(snapshot.lock, snapshot.packages)
    return _package(snapshot, graph, kind, name, set())


def _package(snapshot: Snapshot, graph: Graph, kind: str, name: str,
             seen: set[tuple[str, str]]) -> Node | None:
    pkg = next((p for p in snapshot.packages if p.get("kind") == kind
                and _meta(p).get("name") == name), None)
    if pkg is None:
        return None
    seen.add((kind, name))
    revisions = revisions_of(snapshot, kind, name)
    rows = [revision_row(r, tuple(_runtime(snapshot, r, kind))) for r in revisions]
    rows += _dependencies(snapshot, graph, leading(revisions, pkg), seen)
    return replace(package_row(pkg), children=tuple(rows))


def revisions_of(snapshot: Snapshot, kind: str, name: str) -> list[Obj]:
    """The package's revisions: the active one first, then the newest first."""
    mine = [r for r in snapshot.revisions if r.get("kind") == f"{kind}Revision"
            and (_meta(r).get("labels") or {}).get(PACKAGE_LABEL) == name]
    return sorted(mine, key=lambda r: ((r.get("spec") or {}).get("desiredState") != "Active",
                                       -int((r.get("spec") or {}).get("revision") or 0)))


def leading(revisions: list[Obj], pkg: Obj) -> str:
    """The revision whose dependencies count: the active one, else the current one."""
    active = [_meta(r).get("name") for r in revisions
              if (r.get("spec") or {}).get("desiredState") == "Active"]
    return str(active[0] if active else (pkg.get("status") or {}).get("currentRevision", ""))


def _runtime(snapshot: Snapshot, rev: Obj, kind: str) -> Iterator[Node]:
    uid = _meta(rev).get("uid")
    for deployment in snapshot.deployments:
        owners = _meta(deployment).get("ownerReferences") or []
        if uid and any(o.get("uid") == uid for o in owners):
            yield deployment_row(deployment, kind)


def _dependencies(snapshot: Snapshot, graph: Graph, revision: str,
                  seen: set[tuple[str, str]]) -> list[Node]:
    entry = next((e for e in snapshot.lock.get("packages") or [] if e.get("name") == revision),
                 None)
    out: list[Node] = []
    for req in requirements_of(entry) if entry else ():
        found = graph.node(req.package)
        if found is None or not found.package:
            out.append(missing_row(req))
        elif (found.kind, found.package) in seen:
            out.append(package_row(_find(snapshot, found.kind, found.package)))
        else:
            out += [n for n in [_package(snapshot, graph, found.kind, found.package, seen)]
                    if n is not None]
    return out


def _find(snapshot: Snapshot, kind: str, name: str) -> Obj:
    return next(p for p in snapshot.packages if p.get("kind") == kind
                and _meta(p).get("name") == name)


# --- output -------------------------------------------------------------------------------
def flatten(node: Node, prefix: str = "", last: bool = True, root: bool = True
            ) -> Iterator[tuple[str, Node]]:
    """Each node with its tree-drawn name (``├─ ``, ``└─ ``), depth first, in order."""
    branch = "" if root else prefix + ("└─ " if last else "├─ ")
    where = f" ({node.namespace})" if node.namespace else ""
    yield f"{branch}{node.kind}/{node.name}{where}", node
    inner = "" if root else prefix + ("   " if last else "│  ")
    for i, child in enumerate(node.children):
        yield from flatten(child, inner, i == len(node.children) - 1, False)


def cells(name: str, node: Node, wide: bool) -> list[str]:
    """One row: the STATUS column is the reason, then the (clipped) message."""
    message = text.clip(node.message, wide)
    status = f"{node.status}: {message}" if message else node.status
    row = [name, node.version, node.installed, node.healthy, node.state, status]
    return row[:1] + [node.package] + row[1:] if wide else row


def table_rows(root: Node, wide: bool = False) -> list[list[str]]:
    """The whole tree as rows under :data:`HEADER` (or :data:`WIDE_HEADER`)."""
    return [cells(name, node, wide) for name, node in flatten(root)]


def render(root: Node, wide: bool = False) -> str:
    """The tree as plain text, columns aligned."""
    return text.table(WIDE_HEADER if wide else HEADER, table_rows(root, wide))


def as_json(root: Node) -> Obj:
    """The tree as data: each node's fields and its ``children``."""
    return asdict(root)
