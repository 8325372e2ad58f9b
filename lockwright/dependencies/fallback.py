"""What to install for roots with no solution: what Crossplane would (issue 22).

Crossplane never gives up on a graph: it installs each missing dependency at the highest
tag its dependent asks for, and the package whose constraint stays unmet reports the
conflict. The search (:mod:`lockwright.dependencies.components`) sets such roots aside; for
each, in Lock order, :func:`salvage` walks its tree breadth first and picks, for every
repository nothing installs yet, the highest tag (or the digest) that every constraint
known on it accepts, else the highest one the asker it was reached through accepts.

It never moves an installed package, never takes a repository a satisfiable root needs,
never creates a name another repository's package holds, and drops a root's picks when
they would close a cycle. A repository no version of which any asker accepts (or whose
tags cannot be listed) gets nothing, nor does anything below it. Only failures marked
``partial`` (a conflict, a catalog failure that will not heal) are salvaged.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field

from lockwright.dependencies.components import Outcome, created
from lockwright.dependencies.graph import Graph, Node, Requirement, find_cycles
from lockwright.dependencies.search import Solution, dependencies, satisfied
from lockwright.dependencies.space import Candidate, Failure, Space
from lockwright.names import package_name_from_reference
from lockwright.xpkg.constraints import is_digest


@dataclass(frozen=True)
class Pick:
    """A repository to create: its version, how it was reached, what it depends on."""

    candidate: Candidate
    wanted: Requirement
    needs: tuple[Requirement, ...]


@dataclass
class Walk:
    """What is spoken for: the repositories installed or needed by a kept root, the
    package names in use, every constraint on each repository, and the picks so far."""

    taken: frozenset[str]
    names: dict[tuple[str, str], str]
    asks: dict[str, list[Requirement]]
    picks: dict[str, Pick] = field(default_factory=dict)


def salvage(space: Space, graph: Graph, outcomes: list[Outcome]) -> Solution:
    """The packages to create for every root set aside whose failure may be salvaged."""
    walk = start(space, graph, outcomes)
    position = {node.revision: i for i, node in enumerate(graph.nodes)}
    roots = {node.revision: node for node in graph.nodes if node.revision}
    dropped = sorted((d for o in outcomes for d in o.dropped), key=lambda d: position[d[0]])
    for revision, failure in dropped:
        if failure.partial:
            walk.picks = salvaged(space, graph, walk, roots[revision])
    return Solution({s: p.candidate for s, p in walk.picks.items()},
                    {s: p.wanted for s, p in walk.picks.items()})


def start(space: Space, graph: Graph, outcomes: list[Outcome]) -> Walk:
    """Nothing picked yet; what the installed graph and the kept solutions hold."""
    taken = set(space.installed)
    names = graph.names()
    for outcome in outcomes:
        taken |= set(outcome.solution.chosen)
        names |= {(kind, name): source for kind, name, source in created(space, outcome.solution)}
    asks: dict[str, list[Requirement]] = {}
    for node in graph.nodes:
        for req in node.dependencies or ():
            asks.setdefault(req.package, []).append(req)
    return Walk(frozenset(taken), names, asks)


def salvaged(space: Space, graph: Graph, walk: Walk, root: Node) -> dict[str, Pick]:
    """``walk.picks`` plus what ``root``'s tree can have; unchanged if that closes a cycle."""
    picks, skipped = dict(walk.picks), set[str]()
    queue = deque(root.dependencies or ())
    while queue:
        req = queue.popleft()
        if req.package in walk.taken or req.package in picks or req.package in skipped:
            continue
        pick = choose(space, walk, picks, req)
        if pick is None:
            skipped.add(req.package)
        else:
            picks[req.package] = pick
            queue.extend(pick.needs)
    return walk.picks if cyclic(graph, picks, set(picks) - set(walk.picks)) else picks


def choose(space: Space, walk: Walk, picks: dict[str, Pick], req: Requirement) -> Pick | None:
    """``req.package`` at the best version its askers accept, or None: no version, its
    tags unknown, its name taken, or its own dependencies unreadable."""
    asked = [req, *(r for r in askers(walk, picks, req.package) if r != req)]
    version = best(space, asked)
    name = (req.kind, package_name_from_reference(req.package))
    if version is None or walk.names.get(name, req.package) != req.package or any(
            (p.wanted.kind, package_name_from_reference(s)) == name for s, p in picks.items()):
        return None
    candidate = Candidate(req.package, version)
    try:
        return Pick(candidate, req, dependencies(space, candidate))
    except Failure:
        return None


def askers(walk: Walk, picks: dict[str, Pick], source: str) -> list[Requirement]:
    """Every constraint known on ``source``: recorded in the Lock, or of a package picked."""
    return [*walk.asks.get(source, ()),
            *(r for p in picks.values() for r in p.needs if r.package == source)]


def best(space: Space, asked: list[Requirement]) -> str | None:
    """The best version every one of ``asked`` accepts, else the first of them accepts."""
    try:
        options = candidates(space, asked)
    except Failure:
        return None
    for group in (asked, asked[:1]):
        found = next((v for v in options if all(satisfied(v, r.constraint) for r in group)),
                     None)
        if found is not None:
            return found
    return None


def candidates(space: Space, asked: list[Requirement]) -> list[str]:
    """The digests pinned, then the tags highest first (not listed when the first pins)."""
    pins = list(dict.fromkeys(r.constraint for r in asked if is_digest(r.constraint)))
    if is_digest(asked[0].constraint):
        return pins
    return [*pins, *reversed(space.versions.tags(asked[0].package))]


def cyclic(graph: Graph, picks: dict[str, Pick], new: set[str]) -> bool:
    """Whether the picks close a dependency cycle through one of the ``new`` ones."""
    nodes = graph.nodes + tuple(Node(p.candidate.source, p.wanted.kind, p.candidate.version,
                                     dependencies=p.needs) for p in picks.values())
    return any(new & set(cycle) for cycle in find_cycles(Graph(nodes)))
