"""One error tree for lockwright, classified once at the edge.

::

    LockwrightError
    ├── PermanentError            only a new spec can fix it: fail with a clear condition
    │   ├── InvalidPackage        bad manifest, digest mismatch, hostile tar, limits
    │   │   ├── InvalidReference  an image reference does not parse
    │   │   └── LintError         package.yaml parsed but breaks a lint rule
    │   ├── ConstraintError       a semver constraint is malformed or unsatisfiable
    │   ├── PermissionRejected    a provider asked for permissions no allow-list grants
    │   ├── PreflightError        a new package's CRD would break the live one (a stored
    │   │                         or served version dropped, the scope changed)
    │   ├── KubeInvalid           the API refused the object (400, 422)
    │   └── KubeForbidden         the API refused our identity (401, 403)
    ├── TransientError            heals on its own: retry with capped backoff, show it
    │   ├── RegistryUnavailable   connection refused, timeout, 5xx, 429
    │   ├── PackageNotFound       no such repository, tag or digest (yet: push it)
    │   ├── Unauthorized          credentials refused or missing (a pull Secret may come)
    │   ├── VerificationFailed    no authority verified the package's signature (yet)
    │   ├── ConflictError         an object belongs to another package (it may go away)
    │   ├── KubernetesUnavailable API server unreachable, 5xx or 429
    │   │   └── KubeCacheBehind   504: a list page asked for a version the watch cache
    │   │                         had not reached (a busy server): asked again
    │   ├── KubeNotFound          no such object or kind (yet: CRDs appear at runtime)
    │   ├── KubeConflict          409: a resourceVersion race, re-read and retry
    │   │   └── KubeAlreadyExists 409 on create: someone created it first
    │   └── KubeGone              410: a watch or list continue token expired
    ├── ObjectGone                the package or revision a step acts on is gone or being
    │                             deleted: the branch ends, nothing is retried or written
    └── InputError                a file a command was given cannot be read (a sum file, a
                                  manifest): the command exits 2 naming the file and line

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


class PackageNotFound(TransientError):
    """The registry has no such repository, tag or manifest (it may be pushed later)."""


class Unauthorized(TransientError):
    """The registry refused the credentials or demands some (a pull Secret may appear)."""


class InvalidPackage(PermanentError):
    """The package or its image is malformed, hostile or over a limit."""


class InvalidReference(InvalidPackage):
    """An image reference does not parse."""


class LintError(InvalidPackage):
    """package.yaml parsed, but breaks a lint rule."""


class ConstraintError(PermanentError):
    """A version constraint is malformed or cannot be satisfied."""


class ApiUnserved(PermanentError):
    """No package version of the indexes serves an API asked for, or several repositories
    do and none was named (``lockwright install --api``)."""


class VerificationFailed(TransientError):
    """No authority of the ImageConfig verifying the package passed (fails closed).

    Transient: a signature pushed later, or a key Secret created or fixed later, heals it;
    until then nothing of the package is fetched, cached or installed.
    """


class ConflictError(TransientError):
    """An object the package wants is controlled by another package (which may go away)."""


class ObjectGone(LockwrightError):
    """The package or revision a step acts on is gone or being deleted.

    Not a failure: the step's branch ends, nothing is retried by Temporal, and the
    workflow looks again (docs/design.md invariant 8).
    """


class InputError(LockwrightError):
    """A file or argument an operator command was given cannot be read (a sum file, a
    manifest). Never seen by workflows: the command exits 2 naming the file and the line."""


class RegistryUnavailable(TransientError):
    """The registry could not be reached, or answered 5xx or 429."""


class KubernetesUnavailable(TransientError):
    """The Kubernetes API could not be reached, or answered 5xx."""


class KubeCacheBehind(KubernetesUnavailable):
    """504 ``Too large resource version``: a list page (a ``continue`` token) named a
    version the API server's watch cache had not reached within the server's own wait
    (seen on kube-apiserver while thousands of objects were being created)."""


class RuntimeNotReady(TransientError):
    """The package's runtime has not yet provided what its objects need: the webhook TLS
    Secret (an External runtime's controller reports it in the revision's status)."""


class PermissionRejected(PermanentError):
    """A provider's ``permissionRequests`` ask for something no allowed ClusterRole grants."""


class PreflightError(PermanentError):
    """A CRD the package ships may not replace the live one: it drops a stored or served
    version, or changes the scope (``lockwright.objects.crdcheck``). Only a new package fixes it."""


class KubeError(LockwrightError):
    """Base of the errors mapped from a Kubernetes API answer (see ``lockwright.k8s``).

    ``status`` is the HTTP status (0 when no answer came); ``reason`` the ``Status`` body's
    reason, such as ``AlreadyExists``.
    """

    def __init__(self, message: str, status: int = 0, reason: str = "") -> None:
        super().__init__(message)
        self.status = status
        self.reason = reason


class KubeInvalid(KubeError, PermanentError):
    """The API refused the object as malformed or invalid (400, 422)."""


class KubeForbidden(KubeError, PermanentError):
    """The API refused our credentials or RBAC denied the call (401, 403)."""


class KubeNotFound(KubeError, TransientError):
    """No such object, or no such kind; the latter may appear when a CRD is established."""


class KubeConflict(KubeError, TransientError):
    """409: the object changed since we read it; re-read and retry."""


class KubeAlreadyExists(KubeConflict):
    """409 on create: the object exists already."""


class KubeGone(KubeError, TransientError):
    """410: a list continue token or watch resourceVersion is too old."""


def error_type(exc: BaseException) -> tuple[str, bool]:
    """Return the ``(type name, retryable)`` pair for an exception.

    Unknown exceptions are treated as transient: a bug retried with backoff shows on the
    workflow, while a wrongly permanent error would end an install that could finish.
    """
    if isinstance(exc, LockwrightError):
        return type(exc).__name__, exc.retryable
    return type(exc).__name__, True
