"""Dependency resolution over the whole package graph (docs/crossplane.md §12), with resolvelib.

:func:`resolve` takes the installed :class:`~lockwright.dependencies.graph.Graph`, a
:class:`Catalog` (available tags and each version's dependencies) and a :class:`Policy`
(may installed dependencies move up or down), and returns a :class:`Decision`: the
packages to create or move, and what could not be resolved, explained as a chain.

Where Crossplane installs the highest tag of one missing dependency per pass, this looks
for versions that satisfy every constraint at once (a real backtracking search,
:mod:`lockwright.dependencies.search`), across every level of the graph in one decision.
Roots (Lock entries nobody depends on) are resolved in isolated components: roots that
share no repository never affect each other, and a root that cannot be satisfied is set
aside so it never blocks the roots that can; what can still be installed for it is, as
Crossplane would (:mod:`lockwright.dependencies.fallback`).
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from dataclasses import dataclass, replace
from typing import Protocol, TypeVar

from lockwright.dependencies.components import (
    Outcome,
    components,
    depended,
    reach,
    roots_of,
    settle,
)
from lockwright.dependencies.fallback import salvage
from lockwright.dependencies.graph import (
    Graph,
    Node,
    Requirement,
    find_cycles,
    incompatibility,
)
from lockwright.dependencies.search import Solution, complete_tags, fetched
from lockwright.dependencies.space import Failure, Space, Unlisted
from lockwright.names import package_name_from_reference
from lockwright.xpkg.constraints import is_digest, parse_loose_version

T = TypeVar("T")
K = TypeVar("K", bound=Hashable)


class CatalogError(Exception):
    """The catalog could not answer (registry unreachable, repository unknown, ...)."""

    def __init__(self, message: str, transient: bool = True) -> None:
        super().__init__(message)
        self.message = message
        self.transient = transient


class Catalog(Protocol):
    """What the registry offers: the resolver's only window on packages not installed."""

    def versions(self, source: str) -> list[str]:
        """Every tag of repository ``source`` (any order). Raises CatalogError."""
        ...

    def dependencies(self, source: str, version: str) -> tuple[Requirement, ...]:
        """What ``source`` at ``version`` (tag or digest) depends on. Raises CatalogError."""
        ...


@dataclass(frozen=True)
class Policy:
    """Whether installed dependencies may move (``LOCKWRIGHT_DEPENDENCY_UPGRADES``/``_DOWNGRADES``)."""

    upgrades: bool = False
    downgrades: bool = False


@dataclass(frozen=True)
class Change:
    """A package to create (``from_version`` "") or to move to ``version``."""

    kind: str
    name: str
    source: str
    version: str
    api_version: str = "pkg.crossplane.io/v1"
    from_version: str = ""

    @property
    def package(self) -> str:
        """``spec.package``: ``source:tag`` or ``source@digest``."""
        sep = "@" if is_digest(self.version) else ":"
        return f"{self.source}{sep}{self.version}"

    @property
    def creates(self) -> bool:
        """Whether the package object is new."""
        return not self.from_version


@dataclass(frozen=True)
class Unresolved:
    """Revisions (Lock entry names) whose dependencies have no solution, and why."""

    revisions: tuple[str, ...]
    message: str
    transient: bool = False  # the catalog failed: worth trying again later


@dataclass(frozen=True)
class Decision:
    """What one resolution decided."""

    changes: tuple[Change, ...] = ()
    unresolved: tuple[Unresolved, ...] = ()

    @property
    def resolved(self) -> bool:
        """Whether every revision's dependencies have a solution."""
        return not self.unresolved

    @property
    def message(self) -> str:
        """The Lock's ``Resolved=False`` message (after Crossplane's prefix)."""
        return "; ".join(u.message for u in self.unresolved)

    def explanations(self) -> dict[str, str]:
        """Revision name → why it has no solution."""
        return {rev: u.message for u in self.unresolved for rev in u.revisions}


def resolve(graph: Graph, catalog: Catalog, policy: Policy = Policy()) -> Decision:
    """Decide which packages to create or move so every constraint holds.

    Args:
        graph: what is installed (:func:`lockwright.dependencies.graph.graph_of`).
        catalog: the registry; the only I/O, each question asked at most once.
        policy: whether installed dependencies may move.

    Returns:
        The changes every satisfiable root needs (sorted by source), and one
        :class:`Unresolved` per root set aside: in a dependency cycle, without a version
        that meets every constraint, wanting a name already taken, or the catalog failed.
    """
    space = _space(graph, _Memo(catalog), policy)
    # A Lock entry outlives its package for a moment while the package is deleted (the
    # entry goes with the revision): nothing is created for a package going away.
    roots = [root for root in roots_of(graph) if root.package]
    cyclic = _cycles(graph, roots)
    free = [root for root in roots if root.revision not in cyclic]
    outcomes = settle(space, graph, components(graph, free))
    solutions = [*(o.solution for o in outcomes), salvage(space, graph, outcomes)]
    return Decision(_changes(space, solutions),
                    _unique((*_grouped(cyclic), *_dropped(graph, outcomes))))


class _Memo:
    """The catalog asked at most once per question during one resolution, failures too."""

    def __init__(self, catalog: Catalog) -> None:
        self._catalog = catalog
        self._tags: dict[str, list[str] | CatalogError] = {}
        self._deps: dict[tuple[str, str], tuple[Requirement, ...] | CatalogError] = {}

    def tags(self, source: str) -> list[str]:
        """The complete semver tags of ``source``, ascending. Raises :class:`Unlisted`."""
        found = _ask(self._tags, source, lambda: complete_tags(self._catalog.versions(source)))
        if isinstance(found, CatalogError):
            raise Unlisted(source, found.message, found.transient)
        return found

    def requirements(self, source: str, version: str) -> tuple[Requirement, ...]:
        """What ``source@version`` depends on, each asked by ``source@version``."""
        found = _ask(self._deps, (source, version), lambda: fetched(
            self._catalog.dependencies(source, version), source, version))
        if isinstance(found, CatalogError):
            raise Failure(f"cannot read the dependencies of {source}@{version}: "
                          f"{found.message}", found.transient, partial=not found.transient)
        return found


def _ask(memo: dict[K, T | CatalogError], key: K, call: Callable[[], T]) -> T | CatalogError:
    """The memoised answer, or the memoised failure."""
    if key not in memo:
        try:
            memo[key] = call()
        except CatalogError as err:
            memo[key] = err
    return memo[key]


def _space(graph: Graph, memo: _Memo, policy: Policy) -> Space:
    """Installed nodes by source; the ones that may move are depended upon, have a
    package object to patch and a semver version or a digest (which moves only to a
    digest its dependents pin)."""
    installed: dict[str, Node] = {}
    for node in graph.nodes:
        installed.setdefault(node.source, node)
    named = depended(graph)
    eligible = frozenset(s for s, n in installed.items() if s in named and n.package and (
        is_digest(n.version) or parse_loose_version(n.version)))
    return Space(installed, eligible, policy.upgrades or policy.downgrades, policy.downgrades,
                 memo)


# --- cycles among installed nodes -------------------------------------------------------
def _cycles(graph: Graph, roots: list[Node]) -> dict[str, str]:
    """Revision → message, for every root reaching a cycle and every member in the Lock."""
    found: dict[str, list[str]] = {}
    for cycle in find_cycles(graph):
        message = "dependency cycle: " + " -> ".join(cycle)
        members = set(cycle)
        hit = [r.revision for r in roots if members & reach(graph, r)]
        hit += [n.revision for n in graph.nodes if n.source in members and n.revision]
        for revision in dict.fromkeys(hit):
            found.setdefault(revision, []).append(message)
    return {revision: "; ".join(messages) for revision, messages in found.items()}


def _grouped(cyclic: dict[str, str]) -> list[Unresolved]:
    """One :class:`Unresolved` per message, its revisions in the order found."""
    by_message: dict[str, list[str]] = {}
    for revision, message in cyclic.items():
        by_message.setdefault(message, []).append(revision)
    return [Unresolved(tuple(revisions), message) for message, revisions in by_message.items()]


# --- the decision -----------------------------------------------------------------------
def _changes(space: Space, solutions: list[Solution]) -> tuple[Change, ...]:
    """A :class:`Change` per repository to create or move, sorted by source."""
    found: list[Change] = []
    for solution in solutions:
        for source, chosen in solution.chosen.items():
            req, node = solution.wanted[source], space.installed.get(source)
            if node is None:
                found.append(Change(req.kind, package_name_from_reference(source), source,
                                    chosen.version, req.api_version))
            elif chosen.version != node.version:
                found.append(Change(node.kind, node.package, source, chosen.version,
                                    req.api_version, node.version))
    return tuple(sorted(found, key=lambda c: c.source))


def _dropped(graph: Graph, outcomes: list[Outcome]) -> list[Unresolved]:
    """An :class:`Unresolved` per root set aside, in Lock order, naming the root and every
    installed package in its tree whose own constraints stay unmet: the ones that report
    the conflict once what could be installed is (see :mod:`lockwright.dependencies.fallback`)."""
    position = {node.revision: i for i, node in enumerate(graph.nodes)}
    dropped = sorted((d for o in outcomes for d in o.dropped), key=lambda d: position[d[0]])
    return [Unresolved((revision, *unmet(graph, graph.nodes[position[revision]])), err.message,
                       err.transient) for revision, err in dropped]


def unmet(graph: Graph, root: Node) -> list[str]:
    """Revisions below ``root`` with a dependency missing or at a version they refuse."""
    reached = reach(graph, root)
    return [n.revision for n in graph.nodes if n.revision and n is not root
            and n.source in reached and any(graph.node(r.package) is None
                                            or incompatibility(graph, r)
                                            for r in n.dependencies or ())]


def _unique(unresolved: tuple[Unresolved, ...]) -> tuple[Unresolved, ...]:
    """Each revision named once, by the first :class:`Unresolved` naming it, so the
    explanation a revision reads is the same however it is looked up."""
    seen: set[str] = set()
    out: list[Unresolved] = []
    for u in unresolved:
        revisions = tuple(r for r in dict.fromkeys(u.revisions) if r not in seen)
        seen |= set(revisions)
        if revisions:
            out.append(replace(u, revisions=revisions))
    return tuple(out)
