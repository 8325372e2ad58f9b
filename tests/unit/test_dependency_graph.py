"""The package graph from the Lock and the package objects, and the revision-side report
(docs/crossplane.md §5, §11): Crossplane's messages, word for word."""

from __future__ import annotations

import json
from typing import Any

import pytest

from lockwright.dependencies.graph import (
    UNRESOLVED_ANNOTATION,
    Graph,
    Node,
    Report,
    Requirement,
    explanations,
    find_cycles,
    graph_of,
    incompatibility,
    report,
    satisfies,
    trace,
)

Obj = dict[str, Any]
ORG = "xpkg.example/org"
P, Q, R, S, T = (f"{ORG}/provider-{c}" for c in "pqrst")
C = f"{ORG}/configuration-c"
DIGEST = "sha256:" + "ab" * 32
OTHER = "sha256:" + "cd" * 32


def dep(package: str, constraints: str, kind: str = "Provider") -> Obj:
    return {"apiVersion": "pkg.crossplane.io/v1", "kind": kind, "package": package,
            "constraints": constraints}


def entry(name: str, source: str, version: str, *deps: Obj, kind: str = "Provider") -> Obj:
    return {"name": name, "kind": kind, "apiVersion": "pkg.crossplane.io/v1",
            "source": source, "version": version, "dependencies": list(deps)}


def lock(*entries: Obj, why: dict[str, str] | None = None) -> Obj:
    meta: Obj = {"name": "lock"}
    if why is not None:
        meta["annotations"] = {UNRESOLVED_ANNOTATION: json.dumps(why)}
    return {"apiVersion": "pkg.crossplane.io/v1beta1", "kind": "Lock", "metadata": meta,
            "packages": list(entries)}


def package(kind: str, name: str, ref: str, deleting: bool = False) -> Obj:
    meta: Obj = {"name": name}
    if deleting:
        meta["deletionTimestamp"] = "2024-01-01T00:00:00Z"
    return {"apiVersion": "pkg.crossplane.io/v1", "kind": kind, "metadata": meta,
            "spec": {"package": ref}}


CONFIG = "c-1234"  # the revision every case reports on


def config(*deps: Obj) -> Obj:
    return entry(CONFIG, C, "v1.0.0", *deps, kind="Configuration")


REPORTS = [
    ("no dependencies", lock(config()), Report()),
    ("every dependency installed at an accepted version",
     lock(config(dep(P, ">=v1.0.0"), dep(Q, "^1")), entry("p-1", P, "v1.2.0"),
          entry("q-1", Q, "v1.0.0")),
     Report(2, 2, 0, "")),
    ("a direct dependency missing",
     lock(config(dep(P, ">=v1.0.0"), dep(Q, "^1")), entry("q-1", Q, "v1.0.0")),
     Report(2, 1, 0, f'missing dependencies: "{P}" (>=v1.0.0)')),
    ("more than three missing: three, sorted, then how many more",
     lock(config(dep(T, "v1"), dep(S, "v1"), dep(R, "v1"), dep(Q, "v1"), dep(P, "v1"))),
     Report(5, 0, 0, f'missing dependencies: "{P}" (v1), "{Q}" (v1), "{R}" (v1), and 2 more')),
    ("a transitive dependency missing: the whole tree counts",
     lock(config(dep(P, ">=v1.0.0")), entry("p-1", P, "v1.0.0", dep(Q, ">=v2.0.0"))),
     Report(2, 1, 0, f'missing dependencies: "{Q}" (>=v2.0.0)')),
    ("an installed version the constraint refuses",
     lock(config(dep(P, ">=v2.0.0")), entry("p-1", P, "v1.5.0")),
     Report(1, 1, 1, "incompatible dependencies: existing package "
                     f"{P}@v1.5.0 is incompatible with constraint >=v2.0.0")),
    ("two refused, joined in dependency order",
     lock(config(dep(Q, "<v1.0.0"), dep(P, ">=v2.0.0")), entry("p-1", P, "v1.5.0"),
          entry("q-1", Q, "v1.0.0")),
     Report(2, 2, 2, "incompatible dependencies: existing package "
                     f"{Q}@v1.0.0 is incompatible with constraint <v1.0.0; existing package "
                     f"{P}@v1.5.0 is incompatible with constraint >=v2.0.0")),
    ("a digest constraint met by that digest",
     lock(config(dep(P, DIGEST)), entry("p-1", P, DIGEST)), Report(1, 1, 0, "")),
    ("a digest constraint refuses another digest",
     lock(config(dep(P, DIGEST)), entry("p-1", P, OTHER)),
     Report(1, 1, 1, f"incompatible dependencies: existing package {P}@{OTHER} is "
                     f"incompatible with constraint {DIGEST}")),
    ("a digest constraint refuses a tag",
     lock(config(dep(P, DIGEST)), entry("p-1", P, "v1.0.0")),
     Report(1, 1, 1, f"incompatible dependencies: existing package {P}@v1.0.0 is "
                     f"incompatible with constraint {DIGEST}")),
    ("the resolver's explanation follows the message",
     lock(config(dep(P, ">=v1.0.0")), why={CONFIG: "no version of p satisfies it"}),
     Report(1, 0, 0, f'missing dependencies: "{P}" (>=v1.0.0); no version of p satisfies it')),
    ("another revision's explanation is not ours",
     lock(config(dep(P, ">=v1.0.0")), why={"other-1": "not about us"}),
     Report(1, 0, 0, f'missing dependencies: "{P}" (>=v1.0.0)')),
    ("no problem: an explanation alone says nothing",
     lock(config(), why={CONFIG: "stale"}), Report()),
    ("a revision not in the Lock", lock(entry("p-1", P, "v1.0.0")), Report()),
]


@pytest.mark.parametrize(("the_lock", "want"), [c[1:] for c in REPORTS],
                         ids=[c[0] for c in REPORTS])
def test_report(the_lock: Obj, want: Report) -> None:
    assert report(the_lock, CONFIG) == want


@pytest.mark.parametrize(("raw", "want"), [
    (None, {}),
    ('{"a-1": "why"}', {"a-1": "why"}),
    ("not json", {}),
    ('["a list"]', {}),
])
def test_explanations(raw: str | None, want: dict[str, str]) -> None:
    the_lock = lock()
    if raw is not None:
        the_lock["metadata"]["annotations"] = {UNRESOLVED_ANNOTATION: raw}
    assert explanations(the_lock) == want


# --- graph_of ---------------------------------------------------------------------------
def test_graph_matches_package_objects_by_repository_whatever_their_name() -> None:
    graph = graph_of(lock(entry("p-1", P, "v1.0.0")),
                     [package("Provider", "my-own-name", f"{P}:v1.0.0")])
    assert graph.nodes == (Node(P, "Provider", "v1.0.0", "my-own-name", "p-1", ()),)


def test_graph_lock_entry_wins_over_the_package_object() -> None:
    """The package asks for v2 but the Lock still records v1: the Lock's version and
    recorded dependencies are what is installed."""
    the_lock = lock(entry("p-1", P, "v1.0.0", dep(Q, ">=v1.0.0")))
    graph = graph_of(the_lock, [package("Provider", "p", f"{P}:v2.0.0")])
    [node] = graph.nodes
    assert (node.version, node.package, node.revision) == ("v1.0.0", "p", "p-1")
    assert node.dependencies == (Requirement(Q, "Provider", ">=v1.0.0", parent="p-1"),)


def test_graph_package_objects_not_in_the_lock_follow_it() -> None:
    graph = graph_of(lock(entry("c-1", C, "v1.0.0", kind="Configuration")),
                     [package("Provider", "p", f"{P}@{DIGEST}"),
                      package("Configuration", "c", f"{C}:v1.0.0")])
    assert graph.nodes == (Node(C, "Configuration", "v1.0.0", "c", "c-1", ()),
                           Node(P, "Provider", DIGEST, "p"))
    assert graph.node(P) is not None and graph.node(P).dependencies is None  # type: ignore[union-attr]


def test_graph_ignores_deleting_packages() -> None:
    graph = graph_of(lock(), [package("Provider", "p", f"{P}:v1.0.0", deleting=True),
                              package("Provider", "q", f"{Q}:v1.0.0")])
    assert [n.source for n in graph.nodes] == [Q]


def test_graph_old_type_field_and_names() -> None:
    old = entry("p-1", P, "v1.0.0")
    del old["kind"]
    old["type"] = "Provider"
    graph = graph_of(lock(old), [package("Provider", "p", f"{P}:v1.0.0")])
    assert graph.nodes[0].kind == "Provider"
    assert graph.names() == {("Provider", "p"): P}
    assert graph.parents(P) == []


# --- find_cycles, trace, satisfies ------------------------------------------------------
def node(source: str, *deps: str) -> Node:
    return Node(source, "Provider", "v1.0.0", "", source + "-1",
                tuple(Requirement(d, "Provider", ">=v0.0.0") for d in deps))


@pytest.mark.parametrize(("nodes", "want"), [
    ([node("a", "b"), node("b", "c"), node("c")], []),
    ([node("a", "b"), node("b", "a")], [["a", "b", "a"]]),
    ([node("a", "a")], [["a", "a"]]),
    ([node("r", "a"), node("a", "b"), node("b", "c"), node("c", "a")],
     [["a", "b", "c", "a"]]),
    ([node("a", "b", "c"), node("b", "a"), node("c", "a")], [["a", "b", "a"], ["a", "c", "a"]]),
    ([node("a", "missing")], []),  # not installed: the resolver's business, not a cycle
    ([node("a", "b"), node("b", "c"), node("c", "b"), node("d", "b")], [["b", "c", "b"]]),
], ids=["dag", "two", "self", "behind a root", "two through one node", "to nothing",
        "reached twice"])
def test_find_cycles(nodes: list[Node], want: list[list[str]]) -> None:
    assert find_cycles(Graph(tuple(nodes))) == want


def test_trace_each_repository_once_depth_first() -> None:
    graph = Graph((node("a", "b", "c"), node("b", "c", "d"), node("c")))
    assert [r.package for r in trace(graph, graph.nodes[0].dependencies or ())] == \
        ["b", "c", "d"]


@pytest.mark.parametrize(("version", "constraint", "want"), [
    ("v1.2.0", ">=v1.0.0", True),
    ("v1.2", ">=v1.0.0", True),  # installed versions parse loosely, as NewVersion does
    ("v0.9.0", ">=v1.0.0", False),
    ("v2.0.0-rc.1", ">=v1.0.0", False),
    (DIGEST, DIGEST, True),
    (OTHER, DIGEST, False),
    (DIGEST, ">=v1.0.0", False),
    ("latest", ">=v1.0.0", False),
    ("v1.0.0", ">>v1", False),
])
def test_satisfies(version: str, constraint: str, want: bool) -> None:
    assert satisfies(version, constraint) is want


def test_incompatibility_of_a_missing_package_is_not_ours() -> None:
    assert incompatibility(Graph(), Requirement(P, "Provider", ">=v1.0.0")) == ""


def test_find_cycles_on_a_chain_deeper_than_the_recursion_limit() -> None:
    chain = [node(f"n{i}", f"n{i + 1}") for i in range(5000)] + [node("n5000", "n0")]
    [cycle] = find_cycles(Graph(tuple(chain)))
    assert (len(cycle), cycle[0], cycle[-1]) == (5002, "n0", "n0")


@pytest.mark.parametrize(("packages", "revision"), [
    ([package("Configuration", "c", f"{C}:v2.0.0")], "c-2"),
    ([package("Configuration", "c", f"{C}:v1.0.0")], "c-1"),  # rolled back: v1 asked again
    ([], "c-2"),  # no package object: the entry appended last
], ids=["the package's version", "the package's version, first", "the last"])
def test_graph_two_revisions_of_one_source_during_an_upgrade(packages: list[Obj],
                                                              revision: str) -> None:
    the_lock = lock(entry("c-1", C, "v1.0.0", kind="Configuration"),
                    entry("p-1", P, "v1.0.0"),
                    entry("c-2", C, "v2.0.0", dep(Q, ">=v1.0.0"), kind="Configuration"))
    graph = graph_of(the_lock, packages)
    assert [n.source for n in graph.nodes] == [C, P]
    assert graph.nodes[0].revision == revision
    assert graph.nodes[0].dependencies == (
        (Requirement(Q, "Provider", ">=v1.0.0", parent="c-2"),) if revision == "c-2" else ())
