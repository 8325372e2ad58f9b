"""``ActivateDefinitions``, the cluster's activation workflow (Crossplane v2's activation
policies), and its activity."""

from __future__ import annotations

from dataclasses import dataclass, field

from lockwright.contracts.dependencies import PackageRef
from lockwright.contracts.shared import Tuning

#: At most this many names travel in a result (history stays small; counts say the rest).
MAX_NAMES = 100


@dataclass(frozen=True)
class ActivationState:
    """What ``ActivateDefinitions`` carries across continue-as-new."""

    dirty: bool = False
    passes: int = 0
    signals_seen: int = 0
    activated: int = 0  # MRDs made Active, over every pass
    retry_attempt: int = 0
    wake_after_s: float = 0.0
    last_message: str = ""
    deferred: bool = False  # a deferrable look_again came since the last pass began
    deferred_until: float = 0.0  # when (POSIX seconds) a pass for those alone may start


@dataclass(frozen=True)
class ActivationInput:
    """Input of ``ActivateDefinitions``; ``state`` after continue-as-new."""

    tuning: Tuning = field(default_factory=Tuning)
    state: ActivationState | None = None


@dataclass(frozen=True)
class ActivationResult:
    """Result of ``ActivateDefinitions`` (it runs for as long as the cluster does)."""

    passes: int = 0


@dataclass(frozen=True)
class ActivateDefinitionsInput:
    """Activity ``activate_definitions``: apply every policy to every MRD, once."""


@dataclass(frozen=True)
class Activated:
    """One MRD made Active, and the policy that did it."""

    definition: str = ""
    policy: str = ""


@dataclass(frozen=True)
class ActivateDefinitionsResult:
    """What one pass did: MRDs activated (first MAX_NAMES), failures, packages to tell."""

    policies: int = 0
    definitions: int = 0
    activated: list[Activated] = field(default_factory=list)
    activated_count: int = 0
    failed: int = 0
    statuses_written: int = 0
    # Providers whose active revision now has another count of Active MRDs: they install
    # again (the CRDs of the new ones, a safe-start runtime scaled up).
    packages: list[PackageRef] = field(default_factory=list)
    message: str = ""


@dataclass(frozen=True)
class ActivationStatusResult:
    """Query ``status`` of ``ActivateDefinitions``."""

    passes: int = 0
    signals_seen: int = 0
    idle: bool = False
    activated: int = 0
    retry_attempt: int = 0
    last_message: str = ""
