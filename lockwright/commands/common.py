"""What the operator commands share: package references, durations, settings, connections.

Only argparse-level code runs at import (``lockwright --help`` stays fast); the Kubernetes
client and Temporal are imported by the functions that connect.
"""

from __future__ import annotations

import argparse
import functools
import os
import re
import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from lockwright.settings import SPECS, Settings, SettingsError, from_args

if TYPE_CHECKING:
    from temporalio.client import Client

    from lockwright.k8s import Kube

# Imports inside functions: start-up time. Every command's parser is built on each run, so
# Temporal, the Kubernetes client, rich and the OCI code load only in the handler that runs.

PKG_API = "pkg.crossplane.io/v1"
LOCK_API = "pkg.crossplane.io/v1beta1"
# Workflow ids and the command line say the kind in lower case; Kubernetes in title case.
KINDS = {"provider": "Provider", "configuration": "Configuration", "function": "Function"}
# The settings an operator command needs: where Kubernetes is, and every setting of the
# Temporal connection (address, namespace, TLS, API key), whatever the worker grows.
KUBE_SETTINGS = ("kubeconfig", "system_namespace")
# The cluster's task queue: the workflow ids the commands read carry it (off the default).
QUEUE_SETTINGS = ("task_queue",)
TEMPORAL_SETTINGS_PREFIX = "temporal_"
_DURATION = re.compile(r"(?:(\d+(?:\.\d+)?)h)?(?:(\d+(?:\.\d+)?)m)?(?:(\d+(?:\.\d+)?)s)?")
_NUMBER = re.compile(r"\d+(?:\.\d+)?")
_SCALES = (3600, 60, 1)


@dataclass(frozen=True)
class PackageRef:
    """A package as the commands name it: ``provider/NAME``."""

    kind: str  # lower case, as in workflow ids
    name: str

    @property
    def title(self) -> str:
        """The Kubernetes kind: ``Provider``, ``Configuration`` or ``Function``."""
        return KINDS[self.kind]

    def __str__(self) -> str:
        return f"{self.kind}/{self.name}"


def package_ref(value: str) -> PackageRef:
    """Parse ``KIND/NAME`` as kubectl spells kinds (``provider``, ``Providers``,
    ``providers.pkg.crossplane.io``).

    Raises:
        argparse.ArgumentTypeError: not a package kind, or no name.
    """
    kind, _, name = value.partition("/")
    singular = kind.split(".", 1)[0].lower().removesuffix("s")
    if singular not in KINDS or not name or "/" in name:
        raise argparse.ArgumentTypeError(
            f"{value!r} is not KIND/NAME with KIND one of {', '.join(KINDS)}")
    return PackageRef(singular, name)


def duration(value: str) -> float:
    """Seconds from ``90``, ``90s``, ``5m``, ``1h`` or ``1m30s``.

    Raises:
        argparse.ArgumentTypeError: not a duration, or zero.
    """
    text = value.strip()
    match = _DURATION.fullmatch(text)
    if _NUMBER.fullmatch(text):
        secs = float(text)
    elif match and any(match.groups()):
        secs = sum(float(part or 0) * scale for part, scale in zip(match.groups(), _SCALES))
    else:
        raise argparse.ArgumentTypeError(f"{value!r} is not a duration like 30s or 5m")
    if secs <= 0:
        raise argparse.ArgumentTypeError(f"{value!r} is not a positive duration")
    return secs


def add_connection_arguments(parser: argparse.ArgumentParser) -> None:
    """The settings flags that say where Kubernetes and Temporal are (as the worker's)."""
    group = parser.add_argument_group("connection (flag beats environment beats default)")
    for spec in SPECS:
        if (spec.field in KUBE_SETTINGS + QUEUE_SETTINGS
                or spec.field.startswith(TEMPORAL_SETTINGS_PREFIX)):
            group.add_argument(spec.flag, dest=spec.field, default=None, metavar="VALUE",
                               help=f"{spec.help} [${spec.env}, default {spec.default or '-'}]")


#: The settings of commands that read package indexes, beside the connection's.
INDEX_SETTINGS = ("package_indexes", "insecure_registries")


def add_index_arguments(parser: argparse.ArgumentParser) -> None:
    """The settings flags that say which package indexes to read and how."""
    group = parser.add_argument_group("package indexes (flag beats environment)")
    for spec in SPECS:
        if spec.field in INDEX_SETTINGS:
            group.add_argument(spec.flag, dest=spec.field, default=None, metavar="VALUE",
                               help=f"{spec.help} [${spec.env}]")


def settings(args: argparse.Namespace) -> Settings:
    """The settings from flags and environment; a bad one exits 2 naming the fix."""
    try:
        return from_args(args)
    except SettingsError as exc:
        print(f"error: {exc}", file=sys.stderr)
        raise SystemExit(2) from None


class TemporalUnavailable(Exception):
    """No Temporal server answered at the configured address."""


def kube(s: Settings, context: str = "") -> Kube:
    """A Kubernetes connection from the kubeconfig setting (else in-cluster or ~/.kube),
    through its ``context`` when one is given (else the kubeconfig's current context).

    Raises:
        LockwrightError: no kubeconfig could be loaded; the message says which.
    """
    from lockwright.errors import LockwrightError
    from lockwright.k8s import Kube

    try:
        return Kube.connect(s.kubeconfig or None, timeout=15.0, context=context or None)
    except Exception as exc:  # noqa: BLE001 - the client's ConfigException, a bad file
        where = (s.kubeconfig or "in-cluster or ~/.kube/config") + (
            f", context {context!r}" if context else "")
        raise LockwrightError(f"cannot load a kubeconfig ({where}): {exc}") from None


async def temporal(s: Settings) -> Client:
    """A Temporal client as the worker connects (the same settings, a short patience).

    Raises:
        TemporalUnavailable: no server answered within the patience.
    """
    from lockwright.log import configure
    from lockwright.worker.common import connect

    configure(level="warning")  # the connection's retries go to stderr, not into output
    try:
        return await connect(s, timeout=10.0)
    except RuntimeError as exc:
        raise TemporalUnavailable(str(exc)) from None


Handler = Callable[[argparse.Namespace], int]


def guarded(handler: Handler) -> Handler:
    """The handler, with Kubernetes and Temporal failures ending as one line and exit 1."""
    @functools.wraps(handler)
    def run(args: argparse.Namespace) -> int:
        from temporalio.service import RPCError

        from lockwright.errors import LockwrightError

        try:
            return handler(args)
        except LockwrightError as exc:
            return fail(exc.message)
        except RPCError as exc:
            return fail(f"Temporal: {exc.message}")
        except TemporalUnavailable as exc:
            fail(str(exc))
            # temporalio 1.35's core runtime may still be tearing the failed connections
            # down while the interpreter finalizes, which aborts the process (exit 134)
            # instead of exiting 1. Nothing is left to flush but the standard streams.
            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(1)
    return run


def fail(message: str) -> int:
    """Print ``error: message`` on stderr; the exit code of a failed command."""
    print(f"error: {message}", file=sys.stderr)
    return 1


def root_cause(exc: BaseException) -> str:
    """The innermost Temporal failure's message: a workflow's failure wraps the activity's
    ("Activity task failed"), which wraps the error that says what went wrong."""
    while (inner := getattr(exc, "cause", None)) is not None:
        exc = inner
    return str(exc)


def conditions(obj: dict[str, object] | None) -> dict[str, dict[str, str]]:
    """An object's ``status.conditions`` by type."""
    status = (obj or {}).get("status")
    found = status.get("conditions") if isinstance(status, dict) else None
    return {str(c.get("type")): {k: str(v) for k, v in c.items()}
            for c in found or [] if isinstance(c, dict)}


def is_terminal() -> bool:
    """Whether stdout is a terminal (``rich`` output) or not (plain lines)."""
    return sys.stdout.isatty()
