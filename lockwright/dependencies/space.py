"""What a dependency search chooses from: the catalog, its candidates, and why a trial failed.

Shared by :mod:`lockwright.dependencies.search` (which searches it) and
:mod:`lockwright.dependencies.explain` (which says why no choice fits).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol

from lockwright.dependencies.graph import Node, Requirement

if TYPE_CHECKING:  # where resolvelib keeps this moved between 1.0 and 1.1
    from resolvelib.structs import RequirementInformation


class Failure(Exception):
    """A trial has no answer: no solution, a catalog failure, a cycle or a taken name.

    ``explored`` names the repositories the search looked at before it gave up.
    ``partial`` says whether installing what can be installed is still right (Crossplane
    does): yes for a conflict and for a catalog failure that will not heal; no for a
    cycle, a taken name, an invalid constraint, or a failure worth trying again, where
    a greedy choice made now could block the solution the next pass finds.
    """

    def __init__(self, message: str, transient: bool = False,
                 explored: frozenset[str] = frozenset(), partial: bool = False) -> None:
        super().__init__(message)
        self.message = message
        self.transient = transient
        self.explored = explored
        self.partial = partial

    def exploring(self, explored: frozenset[str]) -> Failure:
        """The same failure, having looked at ``explored``."""
        return Failure(self.message, self.transient, explored, self.partial)


class Unlisted(Failure):
    """The tags of ``source`` could not be listed; ``answer`` is what the registry said."""

    def __init__(self, source: str, answer: str, transient: bool, asks: str = "") -> None:
        who = f" ({asks})" if asks else ""
        super().__init__(f"cannot list tags of {source}{who}: {answer}", transient,
                         partial=not transient)
        self.source, self.answer = source, answer

    def asked(self, asks: str) -> Unlisted:
        """The same failure naming who asks for which constraint."""
        return Unlisted(self.source, self.answer, self.transient, asks)


class Versions(Protocol):
    """The catalog as the search asks it: memoised, failures raised as :class:`Failure`."""

    def tags(self, source: str) -> list[str]:
        """The complete semver tags of ``source``, ascending."""
        ...

    def requirements(self, source: str, version: str) -> tuple[Requirement, ...]:
        """What ``source`` at ``version`` depends on, each asked by ``source@version``."""
        ...


@dataclass(frozen=True)
class Candidate:
    """One repository at one version (a tag or a digest)."""

    source: str
    version: str


if TYPE_CHECKING:
    Cause = RequirementInformation[Requirement, Candidate]


@dataclass(frozen=True)
class Space:
    """What the search may choose from.

    Attributes:
        installed: the installed nodes by source.
        eligible: installed sources that could move if the policy allows (depended upon,
            a package object to patch, a semver version).
        upgrades: ``LOCKWRIGHT_DEPENDENCY_UPGRADES``.
        downgrades: ``LOCKWRIGHT_DEPENDENCY_DOWNGRADES`` (implies upgrades).
        versions: the memoised catalog.
    """

    installed: Mapping[str, Node]
    eligible: frozenset[str]
    upgrades: bool
    downgrades: bool
    versions: Versions
    ordered: dict[str, list[str]] = field(default_factory=dict, compare=False)

    def movable(self, source: str) -> bool:
        """Whether installed ``source`` may take another version."""
        return (self.upgrades or self.downgrades) and source in self.eligible

    def listing(self, source: str) -> tuple[list[str], str]:
        """The tags of ``source`` and "", or no tags and why the catalog could not say."""
        try:
            return self.versions.tags(source), ""
        except Failure as err:
            return [], err.message
