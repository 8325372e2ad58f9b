"""Pieces every workflow family uses: a status condition as decided, and the tuning knobs."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Condition:
    """One Kubernetes status condition, as the workflow decided it."""

    type: str = ""
    status: str = "Unknown"
    reason: str = ""
    message: str = ""


@dataclass(frozen=True)
class Tuning:
    """Retry, backoff and polling knobs. Defaults are production values; tests shrink them."""

    retry_initial_s: float = 1.0
    retry_max_s: float = 30.0
    retry_attempts: int = 3
    # The workflow's own backoff between whole passes, as Crossplane requeues a failed
    # package: first retry after a second, doubling, capped at one minute.
    backoff_initial_s: float = 1.0
    backoff_max_s: float = 60.0
    health_poll_s: float = 2.0
    health_polls: int = 90
    unhealthy_recheck_s: float = 300.0
    # How often a package being deleted (or whose revision is) is looked at again if no
    # signal comes: the watcher signals each step of a deletion, this only backs it up.
    gone_recheck_s: float = 5.0
    # An upgrade's health gate: the new runtime must be healthy within this, or the
    # package goes back to the previous revision (per package: SWITCH_DEADLINE_ANNOTATION).
    switch_deadline_s: float = 300.0
    # packagePullPolicy: Always re-resolves the tag this often (an upgrade if it moved).
    pull_always_s: float = 60.0
    # The activation workflow's passes woken only by MRDs' CRDs written while a policy
    # waits start no sooner than this, or than the last pass lasted, after it ended.
    activation_defer_s: float = 1.0
    # Parse and establish run as local activities up to this package.yaml size (retry.py).
    local_max_bytes: int = 4 * 1024 * 1024
