"""``trace``'s other outputs, and when a watch may stop: pure functions over the tree.

``-o yaml`` is the tree of ``-o json`` as YAML. ``-o dot`` is a Graphviz graph as
``crossplane beta trace -o dot`` writes one: undirected, a node per row numbered in
breadth-first order, each labelled ``Field: value`` lines (Name, ApiVersion, Package,
Installed, Healthy, State, ...), ``penwidth=2``, an edge from each row to its parent's.
``--watch --exit-healthy`` stops once :func:`all_healthy`.
"""

from __future__ import annotations

from collections import deque

import yaml

from lockwright.commands.tree import DASH, Node, as_json

PACKAGE_KINDS = ("Provider", "Configuration", "Function")
PKG_API = "pkg.crossplane.io/v1"
API_VERSIONS = {"Deployment": "apps/v1"}
#: Rows named by their name alone in a DOT label; others are ``Kind/name`` (Crossplane's).
_PKG_LIKE = (*PACKAGE_KINDS, *(f"{k}Revision" for k in PACKAGE_KINDS))


def as_yaml(root: Node) -> str:
    """The tree as YAML: the JSON output's fields, in their order."""
    return str(yaml.safe_dump(as_json(root), sort_keys=False, allow_unicode=True))


def api_version(kind: str) -> str:
    """The apiVersion a row's kind is served at (packages and revisions: pkg.crossplane.io)."""
    return API_VERSIONS.get(kind, PKG_API)


def label(node: Node) -> str:
    """A node's DOT label: one ``Field: value`` line per field it has, as Crossplane's."""
    lines = [("Name", node.name if node.kind in _PKG_LIKE else f"{node.kind}/{node.name}"),
             ("ApiVersion", api_version(node.kind)), ("Namespace", node.namespace),
             ("Package", node.package), ("Version", node.version),
             ("Installed", "" if node.installed == DASH else node.installed),
             ("Healthy", "" if node.healthy == DASH else node.healthy),
             ("State", "" if node.state == DASH else node.state),
             ("Status", node.status), ("Message", " ".join(node.message.split()))]
    return "".join(f"{name}: {value}\n" for name, value in lines if value)


def quoted(text: str) -> str:
    """``text`` as a DOT double-quoted string (newlines as ``\\n`` line breaks)."""
    escaped = text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
    return f'"{escaped}"'


def as_dot(root: Node) -> str:
    """The tree as an undirected Graphviz graph (``dot -Tsvg`` draws it)."""
    nodes, edges = [], []
    queue: deque[tuple[Node, int | None]] = deque([(root, None)])
    number = 0
    while queue:
        node, parent = queue.popleft()
        number += 1
        nodes.append(f"\tn{number}[label={quoted(label(node))},penwidth=\"2\"];")
        edges += [f"\tn{parent}--n{number};"] if parent is not None else []
        queue.extend((child, number) for child in node.children)
    return "\n".join(["graph  {", "\t", *nodes, *edges, "\t", "}"]) + "\n"


def packages(root: Node) -> list[Node]:
    """Every package row of the tree (missing dependencies included)."""
    found = [root] if root.kind in PACKAGE_KINDS else []
    for child in root.children:
        found += packages(child)
    return found


def all_healthy(root: Node) -> bool:
    """Whether every package in the tree is Installed and Healthy: then a watch asked to
    (``--exit-healthy``) exits 0. Revisions and runtimes count through their package."""
    return all(p.installed == "True" and p.healthy == "True" for p in packages(root))
