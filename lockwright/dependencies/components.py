"""Roots, isolated components and trials, under :mod:`lockwright.dependencies.resolver`.

Resolution starts at the roots: Lock entries no other node depends on. Roots that reach a
common repository form a component and are resolved together; a component that has no
solution keeps its roots one at a time, in Lock order, each only if it can join the ones
kept before it. So a broken root never blocks a root that can be satisfied, and roots in
different components never affect each other. Each trial is a search plus the checks a
search cannot make: no dependency cycle, no package name taken by another repository.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from lockwright.dependencies.graph import Graph, Node, find_cycles, trace
from lockwright.dependencies.search import Solution, dependencies, satisfied, search
from lockwright.dependencies.space import Candidate, Failure, Space
from lockwright.names import package_name_from_reference


def depended(graph: Graph) -> set[str]:
    """The sources another node's recorded dependencies name."""
    return {req.package for node in graph.nodes for req in node.dependencies or ()
            if req.package != node.source}


def roots_of(graph: Graph) -> list[Node]:
    """Lock entries nobody else depends on, in Lock order: where resolution starts."""
    named = depended(graph)
    return [n for n in graph.nodes if n.revision and n.source not in named]


def reach(graph: Graph, root: Node) -> set[str]:
    """The sources ``root`` reaches through recorded dependencies, itself included."""
    return {root.source, *(req.package for req in trace(graph, root.dependencies or ()))}


@dataclass(frozen=True)
class Outcome:
    """One component resolved, or tried as a whole.

    Attributes:
        roots: the component's roots, in Lock order.
        solution: the versions the kept roots need.
        dropped: each root set aside (its revision) and why.
        touched: the repositories its searches looked at and the new package names.
        decided: False while the roots only failed together, none set aside yet.
    """

    roots: tuple[Node, ...]
    solution: Solution
    dropped: tuple[tuple[str, Failure], ...] = ()
    touched: frozenset[tuple[str, ...]] = frozenset()
    decided: bool = True


def components(graph: Graph, roots: list[Node]) -> list[tuple[Node, ...]]:
    """Roots grouped when they reach a common repository through recorded dependencies."""
    reached = [frozenset(reach(graph, root)) for root in roots]
    return [tuple(roots[i] for i in group) for group in clusters(reached)]


def clusters(keys: list[frozenset[Any]]) -> list[list[int]]:
    """Indexes of ``keys`` grouped when they share a key, transitively, in first-index order."""
    leader = list(range(len(keys)))

    def top(i: int) -> int:
        while leader[i] != i:
            i = leader[i]
        return i

    owner: dict[Any, int] = {}
    for i, found in enumerate(keys):
        for key in found:
            a, b = top(i), top(owner.setdefault(key, i))
            leader[max(a, b)] = min(a, b)
    groups: dict[int, list[int]] = {}
    for i in range(len(keys)):
        groups.setdefault(top(i), []).append(i)
    return list(groups.values())


def settle(space: Space, graph: Graph, groups: list[tuple[Node, ...]]) -> list[Outcome]:
    """Resolve each component. Components whose searches meet (new packages can join
    roots the Lock kept apart) are merged and tried again, as wholes first: only when no
    two meet any more are failing ones taken apart root by root, which may in turn meet."""
    outcomes = [together(space, graph, roots) for roots in groups]
    while True:
        merged = _merged(space, graph, outcomes)
        if merged is not None:
            outcomes = merged
        elif all(o.decided for o in outcomes):
            return outcomes
        else:
            outcomes = [o if o.decided else one_by_one(space, graph, o.roots) for o in outcomes]


def _merged(space: Space, graph: Graph, outcomes: list[Outcome]) -> list[Outcome] | None:
    groups = clusters([o.touched for o in outcomes])
    if len(groups) == len(outcomes):
        return None
    return [outcomes[g[0]] if len(g) == 1 else together(space, graph, lock_order(
        graph, tuple(n for i in g for n in outcomes[i].roots))) for g in groups]


def together(space: Space, graph: Graph, roots: tuple[Node, ...]) -> Outcome:
    """Every root of a component in one trial; a lone root that fails is set aside."""
    try:
        solution = attempt(space, graph, roots)
    except Failure as err:
        dropped = ((roots[0].revision, err),) if len(roots) == 1 else ()
        return Outcome(roots, Solution({}), dropped, _keys(space, Solution({}), err.explored),
                       decided=len(roots) == 1)
    return Outcome(roots, solution, (), _keys(space, solution, solution.explored))


@dataclass
class _Pass:
    """The state of one root-by-root pass."""

    kept: tuple[Node, ...] = ()
    solution: Solution = field(default_factory=lambda: Solution({}))
    dropped: list[tuple[str, Failure]] = field(default_factory=list)
    explored: set[str] = field(default_factory=set)


def one_by_one(space: Space, graph: Graph, roots: tuple[Node, ...]) -> Outcome:
    """Each root in Lock order, kept when it can join the roots kept before it, so a
    broken root never blocks the others."""
    state = _Pass()
    for root in roots:
        _add(space, graph, state, root)
    return Outcome(roots, state.solution, tuple(state.dropped),
                   _keys(space, state.solution, frozenset(state.explored)))


def _add(space: Space, graph: Graph, state: _Pass, root: Node) -> None:
    grown = extend(space, state.solution, root)
    if grown is None:
        try:
            grown = attempt(space, graph, state.kept + (root,))
        except Failure as err:
            state.dropped.append((root.revision, err))
            state.explored |= err.explored
            return
    state.kept, state.solution = state.kept + (root,), grown
    state.explored |= grown.explored


def extend(space: Space, solution: Solution, root: Node) -> Solution | None:
    """``solution`` plus the installed versions ``root`` reaches, when those meet every
    constraint ``root`` brings: proof enough that ``root`` can join, with no search (which
    costs a full one per root on a large component). None when a search must decide."""
    chosen, wanted = dict(solution.chosen), dict(solution.wanted)
    todo = list(root.dependencies or ())
    try:
        while todo:
            req = todo.pop()
            pick = chosen.get(req.package)
            if pick is None and (node := space.installed.get(req.package)) is not None:
                pick = chosen[req.package] = Candidate(node.source, node.version)
                wanted[req.package] = req
                todo += dependencies(space, pick)
            if pick is None or not satisfied(pick.version, req.constraint):
                return None
        grown = Solution(chosen, wanted, solution.explored | {root.source})
        _check_cycles(space, grown)
    except Failure:
        return None
    return grown


def _keys(space: Space, solution: Solution, explored: frozenset[str]
          ) -> frozenset[tuple[str, ...]]:
    keys: set[tuple[str, ...]] = {("source", s) for s in explored | set(solution.chosen)}
    keys |= {("name", kind, name) for kind, name, _ in created(space, solution)}
    return frozenset(keys)


def attempt(space: Space, graph: Graph, roots: tuple[Node, ...]) -> Solution:
    """A solution for ``roots`` together, or :class:`Failure` saying why there is none."""
    solution = search(space, [req for root in roots for req in root.dependencies or ()])
    try:
        _check_cycles(space, solution)
        _check_names(space, graph, solution)
    except Failure as err:
        raise Failure(err.message, err.transient, solution.explored) from err
    return solution


def _check_cycles(space: Space, solution: Solution) -> None:
    """A cycle through versions not installed yet: nothing may be created for it."""
    nodes = tuple(Node(c.source, "", c.version, dependencies=dependencies(space, c))
                  for _, c in sorted(solution.chosen.items()))
    cycles = find_cycles(Graph(nodes))
    if cycles:
        raise Failure("dependency cycle: " + " -> ".join(cycles[0]))


def _check_names(space: Space, graph: Graph, solution: Solution) -> None:
    """A new package must not take the name of a package installing another repository
    (Crossplane would ignore AlreadyExists and stay stuck)."""
    taken = graph.names()
    for kind, name, source in created(space, solution):
        other = taken.setdefault((kind, name), source)
        if other != source:
            raise Failure(f'cannot create {kind} "{name}" for {source}: that name is taken by '
                          f"the {kind} of {other}; rename or delete that {kind}, or depend "
                          f"on {other} instead")


def created(space: Space, solution: Solution) -> list[tuple[str, str, str]]:
    """(kind, name, source) of every package the solution creates, by source."""
    return [(solution.wanted[source].kind, package_name_from_reference(source), source)
            for source in sorted(solution.chosen) if source not in space.installed]


def lock_order(graph: Graph, nodes: tuple[Node, ...]) -> tuple[Node, ...]:
    """``nodes`` sorted as their entries are in the Lock."""
    position = {node.revision: i for i, node in enumerate(graph.nodes)}
    return tuple(sorted(nodes, key=lambda n: position[n.revision]))
