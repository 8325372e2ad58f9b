"""The backtracking search under :mod:`lockwright.dependencies.resolver`: a resolvelib provider.

Identifiers are repositories, requirements are :class:`~lockwright.dependencies.graph.Requirement`
and candidates are ``(source, version)`` pairs. Which versions a repository may take
(docs/crossplane.md §12) is decided here: a repository not installed may take any complete semver
tag, highest first (or exactly the digest a requirement pins); an installed one keeps its
version unless it may move, and then tries the lowest valid upgrade first, then the highest
valid downgrade, or the digest its dependents pin. resolvelib does the search and the
backtracking.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

from resolvelib import AbstractProvider, BaseReporter, Resolver
from resolvelib.resolvers import ResolutionImpossible, ResolutionTooDeep

from lockwright.dependencies.explain import asking, explain
from lockwright.dependencies.graph import Requirement, satisfies
from lockwright.dependencies.space import Candidate, Failure, Space, Unlisted
from lockwright.errors import ConstraintError
from lockwright.xpkg.constraints import (
    is_digest,
    parse_constraint,
    parse_loose_version,
    parse_version,
)

if TYPE_CHECKING:  # where resolvelib keeps these moved between 1.0 and 1.1
    from resolvelib.resolvers import Result
    from resolvelib.structs import RequirementInformation

    from lockwright.dependencies.space import Cause

# Each round pins one repository; a graph of thousands of packages with some backtracking
# still fits, while a pathological catalog ends with an explanation instead of spinning.
MAX_ROUNDS = 20_000


@dataclass(frozen=True)
class Solution:
    """A version for every repository reached, how each was first asked for, and every
    repository the search looked at on the way."""

    chosen: dict[str, Candidate]
    wanted: dict[str, Requirement] = field(default_factory=dict)
    explored: frozenset[str] = frozenset()


def complete_tags(tags: Iterable[str]) -> list[str]:
    """The tags that are complete semver and round-trip (never ``v1``, ``v1.2``), ascending."""
    parsed = [(v, tag) for tag in set(tags)
              if (v := parse_version(tag)) is not None and str(v) == tag.removeprefix("v")]
    return [tag for _, tag in sorted(parsed)]


@functools.lru_cache(maxsize=1 << 16)
def satisfied(version: str, constraint: str) -> bool:
    """:func:`~lockwright.dependencies.graph.satisfies`, remembered: parsing the constraint
    dominates a search, and the same pairs come back on every backtrack."""
    return satisfies(version, constraint)


def options(space: Space, source: str) -> list[str]:
    """Every version ``source`` may take, most preferred first, before any constraint."""
    if source not in space.ordered:  # asked on every backtrack: order the tags once
        space.ordered[source] = _options(space, source)
    return space.ordered[source]


def _options(space: Space, source: str) -> list[str]:
    node = space.installed.get(source)
    if node is None:
        return list(reversed(space.versions.tags(source)))
    if not space.movable(source) or is_digest(node.version):
        return [node.version]  # a digest moves only to a pin (see matches), never by tag
    current = parse_loose_version(node.version)
    tags = [(parse_loose_version(t), t) for t in space.versions.tags(source)]
    above = [t for v, t in tags if v is not None and current is not None and v > current]
    below = [t for v, t in reversed(tags) if v is not None and current is not None
             and v < current] if space.downgrades else []
    return [node.version, *above, *below]


def matches(space: Space, source: str, reqs: Sequence[Requirement]) -> list[str]:
    """The versions of ``source`` that satisfy every requirement in ``reqs``, best first.

    A digest pin is a version of its own: a missing repository takes it without its
    tags listed, and an installed one that may move takes it after its own version (as
    Crossplane does when every dependent pins the same digest).
    """
    pin = next((r.constraint for r in reqs if is_digest(r.constraint)), None)
    if pin is not None and source not in space.installed:
        found = [pin]  # a digest pin needs no tag listing
    elif pin is not None and space.movable(source):
        found = [space.installed[source].version, pin]
    else:
        found = _listed(space, source, reqs)
    return [v for v in found if all(satisfied(v, r.constraint) for r in reqs)]


def _listed(space: Space, source: str, reqs: Sequence[Requirement]) -> list[str]:
    """:func:`options`; a listing that fails names who asks for ``source``, and how."""
    try:
        return options(space, source)
    except Unlisted as err:
        raise err.asked(asking(source, reqs)) from err


def dependencies(space: Space, candidate: Candidate) -> tuple[Requirement, ...]:
    """What ``candidate`` depends on: the Lock's record for the installed version, else
    the catalog's. Raises :class:`Failure` on an invalid constraint."""
    node = space.installed.get(candidate.source)
    if node is not None and node.version == candidate.version and node.dependencies is not None:
        found = node.dependencies
    else:
        found = space.versions.requirements(candidate.source, candidate.version)
    for req in found:
        check(req)
    return found


def check(req: Requirement) -> None:
    """Raise :class:`Failure` when ``req``'s constraint is neither a digest nor a range."""
    if is_digest(req.constraint):
        return
    try:
        parse_constraint(req.constraint)
    except ConstraintError as err:
        raise Failure(f"version constraint on dependency is invalid: {req.parent} asks "
                      f"{req.package} {req.constraint}: {err}") from err


class Provider(AbstractProvider[Requirement, Candidate, str]):
    """resolvelib's view of a :class:`Space`."""

    def __init__(self, space: Space) -> None:
        self.space = space
        self.explored: set[str] = set()

    def identify(self, requirement_or_candidate: Requirement | Candidate) -> str:
        """The repository."""
        if isinstance(requirement_or_candidate, Requirement):
            return requirement_or_candidate.package
        return requirement_or_candidate.source

    def get_preference(self, identifier: str, resolutions: Mapping[str, Candidate],
                       candidates: Mapping[str, Iterator[Candidate]],
                       information: Mapping[str, Iterator[RequirementInformation[
                           Requirement, Candidate]]],
                       backtrack_causes: Sequence[RequirementInformation[
                           Requirement, Candidate]]) -> tuple[bool, bool, int, str]:
        """Pinned repositories first (one candidate: they fail fast); then, as pip does,
        the repositories in the last conflict, asked for or asking (without the parents,
        the search thrashes through unrelated versions for thousands of rounds); then the
        fewest candidates; then by name for a stable order."""
        fixed = identifier in self.space.installed and not self.space.movable(identifier)
        cause = any(c.requirement.package == identifier
                    or (c.parent is not None and c.parent.source == identifier)
                    for c in backtrack_causes)
        return not fixed, not cause, sum(1 for _ in candidates[identifier]), identifier

    def find_matches(self, identifier: str, requirements: Mapping[str, Iterator[Requirement]],
                     incompatibilities: Mapping[str, Iterator[Candidate]]) -> list[Candidate]:
        """The candidates of ``identifier`` every requirement accepts, best first."""
        self.explored.add(identifier)
        bad = {c.version for c in incompatibilities[identifier]}
        found = matches(self.space, identifier, list(requirements[identifier]))
        return [Candidate(identifier, v) for v in found if v not in bad]

    def is_satisfied_by(self, requirement: Requirement, candidate: Candidate) -> bool:
        """Whether ``candidate``'s version meets ``requirement``'s constraint."""
        return satisfied(candidate.version, requirement.constraint)

    def get_dependencies(self, candidate: Candidate) -> tuple[Requirement, ...]:
        """What ``candidate`` depends on."""
        return dependencies(self.space, candidate)


def search(space: Space, requirements: Sequence[Requirement]) -> Solution:
    """Find a version for every repository ``requirements`` reach.

    Raises:
        Failure: no solution (explained, see :mod:`lockwright.dependencies.explain`), an
            invalid constraint, or the catalog failing.
    """
    provider = Provider(space)
    provider.explored.update(r.package for r in requirements)
    try:
        result = _run(provider, requirements)
    except Failure as err:
        raise err.exploring(frozenset(provider.explored)) from err
    wanted = {key: next(iter(c.information)).requirement for key, c in result.criteria.items()}
    return Solution(dict(result.mapping), wanted, frozenset(provider.explored))


def _run(provider: Provider, requirements: Sequence[Requirement]
         ) -> Result[Requirement, Candidate, str]:
    for req in requirements:
        check(req)
    resolver: Resolver[Requirement, Candidate, str] = Resolver(provider, BaseReporter())
    try:
        return resolver.resolve(requirements, max_rounds=MAX_ROUNDS)
    except ResolutionImpossible as err:
        causes: Sequence[Cause] = list(err.causes)
        raise Failure(explain(provider.space, causes), partial=True) from err
    except ResolutionTooDeep as err:
        raise Failure(f"gave up after {err.round_count} rounds of backtracking") from err


def fetched(requirements: Iterable[Requirement], source: str,
            version: str) -> tuple[Requirement, ...]:
    """``requirements`` as asked by ``source@version``, for explanations."""
    return tuple(replace(r, parent=f"{source}@{version}") for r in requirements)
