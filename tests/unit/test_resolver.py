"""The resolver (docs/crossplane.md §12, and better): one backtracking search over the whole graph.

Table tests for each rule, then a property test: on small generated graphs, every answer
satisfies every constraint it reaches, and a root is set aside only when a brute-force
search over every assignment finds no solution for it beside the roots kept.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lockwright.dependencies.graph import Graph, Node, Requirement, satisfies
from lockwright.dependencies.resolver import Catalog, CatalogError, Change, Decision, Policy, resolve
from lockwright.xpkg.constraints import parse_loose_version

ORG = "xpkg.example/org"
P, Q, X, Y = f"{ORG}/provider-p", f"{ORG}/provider-q", f"{ORG}/x", f"{ORG}/y"
B, C = f"{ORG}/configuration-b", f"{ORG}/configuration-c"
DIGEST = "sha256:" + "ab" * 32
STAY, UP, DOWN = Policy(), Policy(upgrades=True), Policy(downgrades=True)
Dep = tuple[str, str]  # (package, constraint); the kind follows the package's name


# --- building blocks --------------------------------------------------------------------
def kind_of(source: str) -> str:
    return "Provider" if "provider" in source else "Configuration"


def req(package: str, constraint: str, parent: str = "") -> Requirement:
    return Requirement(package, kind_of(package), constraint, parent=parent)


def root(name: str, *deps: Dep) -> Node:
    """A Configuration in the Lock (``<name>-rev``) that nobody depends on."""
    return locked(f"{ORG}/{name}", "v1.0.0", *deps, revision=f"{name}-rev", package=name)


def locked(source: str, version: str, *deps: Dep, revision: str = "",
           package: str = "") -> Node:
    """A package in the Lock: its package object, its revision, its recorded dependencies."""
    name = package or source.rsplit("/", 1)[-1]
    revision = revision or f"{name}-rev"
    return Node(source, kind_of(source), version, name, revision,
                tuple(req(p, c, revision) for p, c in deps))


def bare(source: str, version: str, package: str = "") -> Node:
    """A package object whose revision is not in the Lock yet."""
    return Node(source, kind_of(source), version, package or source.rsplit("/", 1)[-1])


@dataclass
class FakeCatalog:
    """Tags and dependencies from dicts; failures on demand; every call counted."""

    tags: Mapping[str, Sequence[str]] = field(default_factory=dict)
    deps: Mapping[tuple[str, str], Sequence[Dep]] = field(default_factory=dict)
    failing: Mapping[str, CatalogError] = field(default_factory=dict)
    calls: list[tuple[str, ...]] = field(default_factory=list)

    def versions(self, source: str) -> list[str]:
        self.calls.append(("versions", source))
        if source in self.failing:
            raise self.failing[source]
        if source not in self.tags:
            raise CatalogError(f"repository {source} not found", transient=False)
        return list(self.tags[source])

    def dependencies(self, source: str, version: str) -> tuple[Requirement, ...]:
        self.calls.append(("dependencies", source, version))
        if f"{source}@{version}" in self.failing:
            raise self.failing[f"{source}@{version}"]
        return tuple(req(p, c) for p, c in self.deps.get((source, version), ()))


def created(source: str, version: str) -> Change:
    return Change(kind_of(source), name_of(source), source, version)


def moved(source: str, version: str, old: str) -> Change:
    return Change(kind_of(source), source.rsplit("/", 1)[-1], source, version,
                  from_version=old)


def name_of(source: str) -> str:
    return source.split("/", 1)[1].replace("/", "-")


def run(nodes: Sequence[Node], catalog: Catalog, policy: Policy = STAY) -> Decision:
    return resolve(Graph(tuple(nodes)), catalog, policy)


# --- which version ----------------------------------------------------------------------
PTAGS = ["v1.0.0", "v1.5.0", "v1.6.0", "v2.0.0", "v3.0.0"]
CHAIN = {(B, "v1.0.0"): [(C, ">=v1")]}
LATE = {(X, v): [(P, "<v2.0.0")] for v in ("v1.0.0", "v1.1.0", "v1.2.0")}
NARROWING = {(B, "v1.0.0"): [(P, ">=v1.0.0")], (B, "v2.0.0"): [(P, ">=v2.0.0")]}

CHOICES = [
    ("missing: the highest tag the constraint accepts",
     [root("a", (P, "<v3.0.0"))], {P: PTAGS}, {}, Policy(), [created(P, "v2.0.0")]),
    ("greedy picks v2.0.0 for the first and breaks the second; the search does not",
     [root("a", (P, ">=v1.0.0")), root("b", (P, "<v2.0.0"))],
     {P: ["v1.0.0", "v1.5.0", "v2.0.0"]}, {}, Policy(), [created(P, "v1.5.0")]),
    ("incomplete, non-round-tripping and floating tags are never chosen",
     [root("a", (P, ">=v1.0.0"))], {P: ["v1.0.0", "v1", "v1.9", "latest", "v01.2.0"]}, {},
     Policy(), [created(P, "v1.0.0")]),
    ("a prerelease only for a constraint that names one",
     [root("a", (P, ">=v1.0.0"))], {P: ["v1.0.0", "v2.0.0-rc.1"]}, {}, Policy(),
     [created(P, "v1.0.0")]),
    ("a prerelease when the constraint names one",
     [root("a", (P, ">=v2.0.0-0"))], {P: ["v1.0.0", "v2.0.0-rc.1"]}, {}, Policy(),
     [created(P, "v2.0.0-rc.1")]),
    ("a digest constraint pins that digest",
     [root("a", (P, DIGEST))], {}, {}, Policy(), [created(P, DIGEST)]),
    ("installed and satisfied: nothing moves, even with upgrades on",
     [root("a", (P, ">=v1.0.0")), locked(P, "v1.5.0")], {P: PTAGS}, {}, UP, []),
    ("upgrades on: the lowest version above the installed one that satisfies",
     [root("a", (P, ">=v1.6.0")), locked(P, "v1.0.0")], {P: PTAGS}, {}, UP,
     [moved(P, "v1.6.0", "v1.0.0")]),
    ("downgrades on: an upgrade still comes first",
     [root("a", (P, ">=v1.6.0")), locked(P, "v1.5.0")], {P: PTAGS}, {}, DOWN,
     [moved(P, "v1.6.0", "v1.5.0")]),
    ("downgrades on: the highest version below the installed one",
     [root("a", (P, "<v2.0.0")), locked(P, "v3.0.0")], {P: PTAGS}, {}, DOWN,
     [moved(P, "v1.6.0", "v3.0.0")]),
    ("a package object not in the Lock yet counts as installed",
     [root("a", (P, ">=v1.6.0")), bare(P, "v1.0.0")], {P: PTAGS}, {}, UP,
     [moved(P, "v1.6.0", "v1.0.0")]),
    ("transitive: a new dependency's own dependencies are created in the same decision",
     [root("a", (B, ">=v1.0.0"))], {B: ["v1.0.0"], C: ["v1.0.0", "v1.2.0"]}, CHAIN,
     Policy(), [created(B, "v1.0.0"), created(C, "v1.2.0")]),
    ("a constraint arriving after P is pinned (P has fewer tags, so goes first) moves P",
     [root("a", (P, ">=v1.0.0"), (X, ">=v1.0.0"))],
     {P: ["v1.0.0", "v2.0.0"], X: ["v1.0.0", "v1.1.0", "v1.2.0"]}, LATE, Policy(),
     [created(P, "v1.0.0"), created(X, "v1.2.0")]),
    ("a range one level down sends the search back to an older parent",
     [root("a", (B, ">=v1.0.0"), (P, "<v2.0.0"))], {B: ["v1.0.0", "v2.0.0"], P: PTAGS},
     NARROWING, Policy(), [created(B, "v1.0.0"), created(P, "v1.6.0")]),
]


@pytest.mark.parametrize(("nodes", "tags", "deps", "policy", "want"),
                         [c[1:] for c in CHOICES], ids=[c[0] for c in CHOICES])
def test_chooses(nodes: list[Node], tags: dict[str, list[str]],
                 deps: dict[tuple[str, str], list[Dep]], policy: Policy,
                 want: list[Change]) -> None:
    decision = run(nodes, FakeCatalog(tags, deps), policy)
    assert decision.unresolved == ()
    assert decision.changes == tuple(want)


def test_digest_pin_lists_no_tags() -> None:
    catalog = FakeCatalog(failing={P: CatalogError("must not be asked")})
    assert run([root("a", (P, DIGEST))], catalog).changes == (created(P, DIGEST),)
    assert ("versions", P) not in catalog.calls


def test_installed_digest_stays_pinned() -> None:
    decision = run([root("a", (P, ">=v1.0.0")), locked(P, DIGEST)], FakeCatalog({P: PTAGS}),
                   DOWN)
    assert decision.changes == ()
    assert ("installed " + DIGEST + " (pinned by digest: it moves only to a digest every "
            "dependent pins)") in decision.message


def test_change_carries_kind_api_version_and_name() -> None:
    a = Node(f"{ORG}/a", "Configuration", "v1.0.0", "a", "a-rev",
             (Requirement("xpkg.example/crossplane-contrib/function-x", "Function", "^1",
                          "pkg.crossplane.io/v1beta1", "a-rev"),))
    tags = {"xpkg.example/crossplane-contrib/function-x": ["v1.0.0"]}
    assert run([a], FakeCatalog(tags)).changes == (
        Change("Function", "crossplane-contrib-function-x",
               "xpkg.example/crossplane-contrib/function-x", "v1.0.0",
               "pkg.crossplane.io/v1beta1"),)
    assert run([a], FakeCatalog(tags)).changes[0].package == \
        "xpkg.example/crossplane-contrib/function-x:v1.0.0"


def test_recorded_dependencies_win_over_the_catalog() -> None:
    """The installed version's dependencies are the Lock's; the catalog is not asked."""
    nodes = [root("a", (B, ">=v1.0.0")), locked(B, "v1.0.0", (P, ">=v1.0.0"))]
    catalog = FakeCatalog({P: PTAGS}, {(B, "v1.0.0"): [(P, "<v1.0.0")]})
    assert run(nodes, catalog).changes == (created(P, "v3.0.0"),)
    assert ("dependencies", B, "v1.0.0") not in catalog.calls


def test_package_object_without_lock_entry_asks_the_catalog() -> None:
    nodes = [root("a", (B, ">=v1.0.0")), bare(B, "v1.0.0")]
    catalog = FakeCatalog({P: PTAGS}, {(B, "v1.0.0"): [(P, "<v1.6.0")]})
    assert run(nodes, catalog).changes == (created(P, "v1.5.0"),)


# --- no solution, explained -------------------------------------------------------------
UNSOLVABLE = [
    ("upgrades off: the hint names the setting",
     [root("configuration-a", (P, ">=v2.0.0")), locked(P, "v1.5.0")], Policy(),
     (f"no version of {P} satisfies every constraint: configuration-a-rev asks {P} >=v2.0.0;"
      " installed v1.5.0 (LOCKWRIGHT_DEPENDENCY_UPGRADES is off);"
      " tags: v1.0.0, v1.5.0, v1.6.0, v2.0.0, v3.0.0")),
    ("upgrades on, a downgrade needed: the hint names the downgrade setting",
     [root("a", (P, "<v1.5.0")), locked(P, "v2.0.0")], UP,
     (f"no version of {P} satisfies every constraint: a-rev asks {P} <v1.5.0;"
      " installed v2.0.0 (only a downgrade would do and LOCKWRIGHT_DEPENDENCY_DOWNGRADES is"
      " off); tags: v1.0.0, v1.5.0, v1.6.0, v2.0.0, v3.0.0")),
    ("two parents that exclude each other, not installed",
     [root("a", (P, ">=v2.0.0")), root("b", (P, "<v1.5.0"))], Policy(),
     (f"no version of {P} satisfies every constraint: a-rev asks {P} >=v2.0.0, b-rev asks"
      f" {P} <v1.5.0; tags: v1.0.0, v1.5.0, v1.6.0, v2.0.0, v3.0.0")),
    ("a range no tag meets",
     [root("a", (P, ">=v9.0.0"))], Policy(),
     (f"no version of {P} satisfies every constraint: a-rev asks {P} >=v9.0.0;"
      " tags: v1.0.0, v1.5.0, v1.6.0, v2.0.0, v3.0.0")),
    ("an invalid constraint",
     [root("a", (P, ">>v1"))], Policy(),
     (f"version constraint on dependency is invalid: a-rev asks {P} >>v1: improper"
      " constraint: >>v1")),
]


@pytest.mark.parametrize(("nodes", "policy", "message"), [c[1:] for c in UNSOLVABLE],
                         ids=[c[0] for c in UNSOLVABLE])
def test_explains(nodes: list[Node], policy: Policy, message: str) -> None:
    decision = run(nodes, FakeCatalog({P: PTAGS}), policy)
    assert [u.message for u in decision.unresolved][-1] == message
    assert not decision.unresolved[-1].transient


def test_explanation_names_a_dependency_of_a_new_package() -> None:
    nodes = [root("a", (B, ">=v1.0.0"), (P, ">=v2.0.0"))]
    catalog = FakeCatalog({B: ["v1.0.0"], P: PTAGS}, {(B, "v1.0.0"): [(P, "<v2.0.0")]})
    message = run(nodes, catalog).message
    assert message.startswith(f"no version of {P} satisfies every constraint: ")
    assert f"{B}@v1.0.0 asks {P} <v2.0.0" in message and f"a-rev asks {P} >=v2.0.0" in message


def test_explanation_lists_the_last_ten_tags() -> None:
    tags = [f"v1.{i}.0" for i in range(15)]
    message = run([root("a", (P, ">=v2.0.0"))], FakeCatalog({P: tags})).message
    assert message.endswith("tags: …, " + ", ".join(tags[5:]))


# --- isolation --------------------------------------------------------------------------
def test_broken_root_never_blocks_an_unrelated_root() -> None:
    nodes = [root("a", (Q, ">=v9.0.0")), root("b", (P, ">=v1.0.0"))]
    decision = run(nodes, FakeCatalog({P: PTAGS, Q: ["v1.0.0"]}))
    assert decision.changes == (created(P, "v3.0.0"),)
    assert [u.revisions for u in decision.unresolved] == [("a-rev",)]


def test_broken_root_never_blocks_a_root_sharing_its_provider() -> None:
    """In Lock order: a kept, b cannot join a (dropped), c can (kept)."""
    nodes = [root("a", (P, ">=v2.0.0")), root("b", (P, "<v1.5.0")), root("c", (P, "<v3.0.0"))]
    decision = run(nodes, FakeCatalog({P: PTAGS}))
    assert decision.changes == (created(P, "v2.0.0"),)
    assert [u.revisions for u in decision.unresolved] == [("b-rev",)]
    assert decision.explanations()["b-rev"].startswith(f"no version of {P}")


def test_components_joined_by_new_packages_resolve_together() -> None:
    """a and b share nothing in the Lock, but their new dependencies share P."""
    nodes = [root("a", (X, ">=v1.0.0")), root("b", (Y, ">=v1.0.0"))]
    catalog = FakeCatalog({X: ["v1.0.0"], Y: ["v1.0.0"], P: PTAGS},
                          {(X, "v1.0.0"): [(P, ">=v1.5.0")], (Y, "v1.0.0"): [(P, "<v1.6.0")]})
    decision = run(nodes, catalog)
    assert decision.resolved
    assert decision.changes == (created(P, "v1.5.0"), created(X, "v1.0.0"),
                                created(Y, "v1.0.0"))


# --- cycles and names -------------------------------------------------------------------
def test_cycle_among_installed_packages() -> None:
    nodes = [root("a", (B, ">=v1.0.0"), (P, ">=v1.0.0")), locked(B, "v1.0.0", (C, ">=v1")),
             locked(C, "v1.0.0", (B, ">=v1")), root("d", (Q, ">=v1.0.0"))]
    decision = run(nodes, FakeCatalog({P: PTAGS, Q: ["v1.0.0"]}))
    message = f"dependency cycle: {B} -> {C} -> {B}"
    assert [(u.revisions, u.message) for u in decision.unresolved] == [
        (("a-rev", "configuration-b-rev", "configuration-c-rev"), message)]
    assert decision.changes == (created(Q, "v1.0.0"),)  # nothing for a, d untouched


@pytest.mark.parametrize(("deps", "cycle"), [
    ({(B, "v1.0.0"): [(C, ">=v1")], (C, "v1.0.0"): [(B, ">=v1")]}, f"{B} -> {C} -> {B}"),
    ({(B, "v1.0.0"): [(f"{ORG}/a", ">=v1")]}, f"{ORG}/a -> {B} -> {ORG}/a"),
], ids=["between new packages", "back to the root"])
def test_cycle_through_new_packages_creates_nothing(deps: dict[tuple[str, str], list[Dep]],
                                                    cycle: str) -> None:
    nodes = [root("a", (B, ">=v1.0.0")), root("d", (P, ">=v1.0.0"))]
    catalog = FakeCatalog({B: ["v1.0.0"], C: ["v1.0.0"], P: PTAGS}, deps)
    decision = run(nodes, catalog)
    assert decision.changes == (created(P, "v3.0.0"),)
    assert [(u.revisions, u.message) for u in decision.unresolved] == [
        (("a-rev",), f"dependency cycle: {cycle}")]


def test_name_taken_by_another_repository() -> None:
    other = "mirror.example/org/provider-p"
    nodes = [bare(other, "v1.0.0", package="org-provider-p"), root("a", (P, ">=v1.0.0")),
             root("b", (Q, ">=v1.0.0"))]
    decision = run(nodes, FakeCatalog({P: PTAGS, Q: ["v1.0.0"]}))
    assert decision.changes == (created(Q, "v1.0.0"),)
    assert decision.explanations() == {"a-rev": (
        f'cannot create Provider "org-provider-p" for {P}: that name is taken by the'
        f" Provider of {other}; rename or delete that Provider, or depend on {other}"
        " instead")}


# --- the catalog failing ----------------------------------------------------------------
@pytest.mark.parametrize("transient", [True, False])
def test_catalog_failure_sets_the_root_aside(transient: bool) -> None:
    catalog = FakeCatalog({P: PTAGS}, failing={Q: CatalogError("connection refused",
                                                                transient)})
    decision = run([root("a", (Q, ">=v1.0.0")), root("b", (P, ">=v1.0.0"))], catalog)
    assert decision.changes == (created(P, "v3.0.0"),)
    [failed] = decision.unresolved
    assert (failed.revisions, failed.message, failed.transient) == (
        ("a-rev",), f"cannot list tags of {Q} (a-rev asks {Q} >=v1.0.0): connection refused",
        transient)


def test_catalog_failure_reading_dependencies() -> None:
    catalog = FakeCatalog({B: ["v1.0.0"]}, failing={f"{B}@v1.0.0": CatalogError("timeout")})
    [failed] = run([root("a", (B, ">=v1.0.0"))], catalog).unresolved
    assert (failed.message, failed.transient) == (
        f"cannot read the dependencies of {B}@v1.0.0: timeout", True)


def test_catalog_asked_once_per_question() -> None:
    nodes = [root("a", (P, ">=v2.0.0")), root("b", (P, "<v1.5.0")), root("c", (P, ">v1.0.0"))]
    catalog = FakeCatalog({P: PTAGS})
    run(nodes, catalog)
    assert sorted(catalog.calls) == sorted(set(catalog.calls))


def test_deterministic_whatever_the_tag_order() -> None:
    nodes = [root("a", (P, ">=v2.0.0")), root("b", (P, "<v1.5.0")), root("c", (Q, "^1"))]
    first = run(nodes, FakeCatalog({P: PTAGS, Q: ["v1.0.0", "v1.1.0"]}))
    again = run(nodes, FakeCatalog({P: PTAGS[::-1], Q: ["v1.1.0", "v1.0.0"]}))
    assert first == again
    assert first.changes == (created(P, "v3.0.0"), created(Q, "v1.1.0"))


# --- property: sound, and never gives up on a root that could be satisfied --------------
REPOS = [f"xpkg.example/h/r{i}" for i in range(4)]
POOL = ["v1.0.0", "v1.1.0", "v2.0.0", "v3.0.0"]
OPS = [">=", "<", "=", "^"]


@dataclass(frozen=True)
class World:
    nodes: tuple[Node, ...]
    catalog: FakeCatalog
    policy: Policy


@st.composite
def worlds(draw: st.DrawFn) -> World:
    """≤4 repositories (a DAG: r_i only depends on r_j, j > i), ≤4 tags each, random
    installs (in the Lock or package objects only), 1-2 more roots, a random policy."""
    # Names shuffled against the DAG's order, so the search meets constraints late too.
    repos = draw(st.permutations(REPOS))[:draw(st.integers(1, 4))]
    tags = {r: sorted(draw(st.sets(st.sampled_from(POOL), min_size=1, max_size=4)))
            for r in repos}

    def deps_to(later: list[str], least: int = 0) -> list[Dep]:
        targets = draw(st.lists(st.sampled_from(later), unique=True, min_size=least,
                                max_size=3)) if later else []
        return [(t, draw(st.sampled_from(OPS)) + draw(st.sampled_from(tags[t])))
                for t in targets]

    deps = {(r, v): deps_to(repos[i + 1:]) for i, r in enumerate(repos) for v in tags[r]}
    nodes: list[Node] = []
    for i in range(draw(st.integers(1, 2))):
        nodes.append(locked(f"xpkg.example/h/root{i}", "v1.0.0", *deps_to(repos, 1)))
    for r in repos:
        how = draw(st.sampled_from(["absent", "locked", "bare"]))
        version = draw(st.sampled_from(tags[r]))
        if how == "locked":
            nodes.append(locked(r, version, *deps[(r, version)]))
        elif how == "bare":
            nodes.append(bare(r, version))
    policy = draw(st.sampled_from([Policy(), UP, DOWN]))
    return World(tuple(nodes), FakeCatalog(tags, deps), policy)


def roots_of(world: World) -> list[Node]:
    named = {r.package for n in world.nodes for r in n.dependencies or ()
             if r.package != n.source}
    return [n for n in world.nodes if n.revision and n.source not in named]


def requirements_at(world: World, source: str, version: str) -> tuple[Requirement, ...]:
    node = next((n for n in world.nodes if n.source == source), None)
    if node is not None and node.version == version and node.dependencies is not None:
        return node.dependencies
    return world.catalog.dependencies(source, version)


def domain(world: World, source: str) -> list[str | None]:
    """What brute force may give ``source``: the same movable/fixed rules as the resolver."""
    node = next((n for n in world.nodes if n.source == source), None)
    tags = list(world.catalog.tags[source])
    if node is None:
        return [*tags, None]
    named = {r.package for n in world.nodes for r in n.dependencies or ()
             if r.package != n.source}
    if source not in named or not (world.policy.upgrades or world.policy.downgrades):
        return [node.version]
    here = parse_loose_version(node.version)
    assert here is not None
    return [node.version, *(t for t in tags if (v := parse_loose_version(t)) is not None
                            and (v > here or (v < here and world.policy.downgrades)))]


def violations(world: World, roots: Sequence[Node], versions: Mapping[str, str | None]
               ) -> Iterator[str]:
    """Every requirement reachable from ``roots`` that ``versions`` does not meet."""
    todo = [r for root_node in roots for r in root_node.dependencies or ()]
    seen: set[Requirement] = set()
    while todo:
        r = todo.pop()
        if r in seen:
            continue
        seen.add(r)
        version = versions.get(r.package)
        if version is None or not satisfies(version, r.constraint):
            yield f"{r.parent} asks {r.package} {r.constraint}, has {version}"
        else:
            todo += requirements_at(world, r.package, version)


def solvable(world: World, roots: Sequence[Node]) -> bool:
    repos = sorted(world.catalog.tags)
    for combo in itertools.product(*(domain(world, r) for r in repos)):
        if next(violations(world, roots, dict(zip(repos, combo, strict=True))), None) is None:
            return True
    return False


@settings(max_examples=200, deadline=None)
@given(worlds())
def test_answers_are_sound_and_complete(world: World) -> None:
    decision = resolve(Graph(world.nodes), world.catalog, world.policy)
    lost = {rev for u in decision.unresolved for rev in u.revisions}
    roots = roots_of(world)
    kept = [r for r in roots if r.revision not in lost]
    final: dict[str, str | None] = {n.source: n.version for n in world.nodes}
    final.update({c.source: c.version for c in decision.changes})
    assert list(violations(world, kept, final)) == []
    for change in decision.changes:
        assert change.version in domain(world, change.source)
    for r in roots:
        if r.revision in lost:
            assert not solvable(world, [*kept, r]), r.revision
    assert decision == resolve(Graph(world.nodes), world.catalog, world.policy)
