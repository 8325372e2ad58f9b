"""Dependency resolution over the whole package graph (reference §12), with resolvelib.

:func:`resolve` takes the installed :class:`~lockwright.dependencies.Graph`, a
:class:`Catalog` (available tags and each version's dependencies) and a :class:`Policy`
(may installed dependencies move up or down), and returns a :class:`Decision`: the
packages to create or move, and what could not be resolved, explained as a chain.

STUB: the implementation is being written; the API below is fixed.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from lockwright.dependencies import Graph, Requirement
from lockwright.xpkg.constraints import is_digest


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
    """Decide which packages to create or move so every constraint holds."""
    raise NotImplementedError
