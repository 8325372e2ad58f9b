"""``ResolveDependencies``, the cluster's dependency resolution workflow, and its activities."""

from __future__ import annotations

from dataclasses import dataclass, field

from lockwright.contracts.shared import Tuning


@dataclass(frozen=True)
class ResolveState:
    """What the resolution workflow remembers; carried across continue-as-new."""

    dirty: bool = True
    wake_after_s: float = 0.0
    passes: int = 0
    signals_seen: int = 0
    retry_attempt: int = 0
    resolved: bool = True
    created: int = 0
    moved: int = 0
    last_message: str = ""


@dataclass(frozen=True)
class ResolveInput:
    """Input of ``ResolveDependencies``; ``state`` after continue-as-new."""

    tuning: Tuning = field(default_factory=Tuning)
    state: ResolveState | None = None


@dataclass(frozen=True)
class ResolveResult:
    """Result of ``ResolveDependencies`` (it runs for as long as the cluster does)."""

    passes: int = 0


@dataclass(frozen=True)
class PackageRef:
    """A package object: its kind in workflow ids (``provider``) and its name."""

    kind: str = ""
    name: str = ""


@dataclass(frozen=True)
class DependencyChange:
    """A package the resolver creates (``from_version`` "") or moves to ``package``."""

    kind: str = ""  # Provider, Configuration or Function
    name: str = ""
    package: str = ""  # spec.package: repository:tag or repository@digest
    api_version: str = "pkg.crossplane.io/v1"
    from_version: str = ""


@dataclass(frozen=True)
class UnresolvedDependencies:
    """Revisions whose dependencies have no solution, and the chain that explains it."""

    revisions: list[str] = field(default_factory=list)
    message: str = ""


@dataclass(frozen=True)
class ResolveDependenciesInput:
    """Activity ``resolve_dependencies``: read the graph, resolve it, decide (writes nothing)."""

    reason: str = ""


@dataclass(frozen=True)
class ResolveDependenciesResult:
    """The inputs in brief (counts, names and versions) and the decision.

    ``installed`` lists ``<source>@<version>`` of the Lock's packages (at most
    ``MAX_LISTED_PACKAGES``); never package contents.
    """

    lock_packages: int = 0
    package_objects: int = 0
    dependencies: int = 0
    repositories_listed: int = 0
    installed: list[str] = field(default_factory=list)
    changes: list[DependencyChange] = field(default_factory=list)
    unresolved: list[UnresolvedDependencies] = field(default_factory=list)
    # The Lock's status or annotation does not say this yet: apply_resolution writes it.
    lock_stale: bool = False
    # Packages whose revisions' dependency status no longer matches the Lock: look again.
    nudge: list[PackageRef] = field(default_factory=list)
    # Some of it failed on the registry: resolve again later even if nothing changes.
    retry: bool = False


MAX_LISTED_PACKAGES = 50


@dataclass(frozen=True)
class ApplyResolutionInput:
    """Activity ``apply_resolution``: create or move packages, write the Lock's status."""

    changes: list[DependencyChange] = field(default_factory=list)
    unresolved: list[UnresolvedDependencies] = field(default_factory=list)


@dataclass(frozen=True)
class ApplyResolutionResult:
    """What was written."""

    created: list[str] = field(default_factory=list)
    moved: list[str] = field(default_factory=list)
    lock_status_written: bool = False


@dataclass(frozen=True)
class ResolveStatusResult:
    """Query ``status`` of ``ResolveDependencies``."""

    passes: int = 0
    signals_seen: int = 0
    idle: bool = False
    resolved: bool = True
    created: int = 0
    moved: int = 0
    last_message: str = ""
    retry_attempt: int = 0
