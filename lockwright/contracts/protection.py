"""``ProtectProviders``, the cluster's provider deletion protection workflow, and its
activity (docs/design.md, "Provider deletion protection")."""

from __future__ import annotations

from dataclasses import dataclass, field

from lockwright.contracts.shared import Tuning


@dataclass(frozen=True)
class ProtectionState:
    """What ``ProtectProviders`` carries across continue-as-new."""

    dirty: bool = False
    passes: int = 0
    signals_seen: int = 0
    retry_attempt: int = 0
    wake_after_s: float = 0.0
    last_message: str = ""


@dataclass(frozen=True)
class ProtectionInput:
    """Input of ``ProtectProviders``; ``state`` after continue-as-new."""

    tuning: Tuning = field(default_factory=Tuning)
    state: ProtectionState | None = None


@dataclass(frozen=True)
class ProtectionResult:
    """Result of ``ProtectProviders`` (it runs for as long as the cluster does)."""

    passes: int = 0


@dataclass(frozen=True)
class ProtectProvidersInput:
    """Activity ``protect_providers``: one pass over every Provider's types."""


@dataclass(frozen=True)
class ProtectProvidersResult:
    """What one pass did: whether protection is on, the types in use, usages written."""

    enabled: bool = True
    types: int = 0  # managed resource types of Providers, looked at
    in_use: int = 0  # of them, with at least one resource: one usage each
    applied: list[str] = field(default_factory=list)  # usage names (first MAX_NAMES)
    deleted: list[str] = field(default_factory=list)  # usage names (first MAX_NAMES)


@dataclass(frozen=True)
class ProtectionStatusResult:
    """Query ``status`` of ``ProtectProviders``."""

    passes: int = 0
    signals_seen: int = 0
    idle: bool = False
    retry_attempt: int = 0
    last_message: str = ""
