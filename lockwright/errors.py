"""One error tree for lockwright, classified once at the edge.

::

    LockwrightError
    ├── PermanentError            retrying cannot help: fail fast with a clear condition
    │   ├── PackageNotFound       the registry has no such repository, tag or digest
    │   ├── Unauthorized          the registry refused the credentials (401/403)
    │   ├── InvalidPackage        bad manifest, digest mismatch, hostile tar, limits
    │   │   └── LintError         package.yaml parsed but breaks a lint rule
    │   ├── ConstraintError       a semver constraint is malformed or unsatisfiable
    │   └── ConflictError         an object belongs to another package
    └── TransientError            may succeed later: retry with backoff, show it on status
        ├── RegistryUnavailable   connection refused, timeout, 5xx, 429
        └── KubernetesUnavailable API server unreachable or 5xx

Messages are truncated and never carry credentials. The original exception is chained
(``raise X(...) from e``). ``ERROR_TYPES`` is the single table activities use to turn these
into Temporal ``ApplicationError`` types and decide retryability.
"""

from __future__ import annotations

MAX_MESSAGE = 1024


def truncate(text: str, limit: int = MAX_MESSAGE) -> str:
    """Shorten ``text`` to ``limit`` characters, marking the cut."""
    return text if len(text) <= limit else text[: limit - 15] + "… (truncated)"


class LockwrightError(Exception):
    """Base of every error lockwright raises on purpose."""

    retryable = False

    def __init__(self, message: str) -> None:
        super().__init__(truncate(message))

    @property
    def message(self) -> str:
        return str(self.args[0]) if self.args else ""


class PermanentError(LockwrightError):
    """Retrying will not help."""


class TransientError(LockwrightError):
    """The same call may succeed later."""

    retryable = True


class PackageNotFound(PermanentError):
    """The registry has no such repository, tag or manifest."""


class Unauthorized(PermanentError):
    """The registry refused the credentials or demands some."""


class InvalidPackage(PermanentError):
    """The package or its image is malformed, hostile or over a limit."""


class LintError(InvalidPackage):
    """package.yaml parsed, but breaks a lint rule."""


class ConstraintError(PermanentError):
    """A version constraint is malformed or cannot be satisfied."""


class ConflictError(PermanentError):
    """An object the package wants is controlled by another package."""


class RegistryUnavailable(TransientError):
    """The registry could not be reached, or answered 5xx or 429."""


class KubernetesUnavailable(TransientError):
    """The Kubernetes API could not be reached, or answered 5xx."""


def error_type(exc: BaseException) -> tuple[str, bool]:
    """Return the ``(type name, retryable)`` pair for an exception.

    Unknown exceptions are treated as transient: a bug retried with backoff shows on the
    workflow, while a wrongly permanent error would end an install that could finish.
    """
    if isinstance(exc, LockwrightError):
        return type(exc).__name__, exc.retryable
    return type(exc).__name__, True
