"""Image references: ``[registry/]repository[:tag][@sha256:hex]``.

Parsing follows the Docker reference grammar (distribution/reference): the first path
component is a registry host when it contains ``.`` or ``:`` or is ``localhost``; without a
tag or digest the tag is ``latest``. Crossplane requires ``spec.package`` to be fully
qualified, so callers check :func:`is_fully_qualified` instead of defaulting the registry.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace

# Re-exported: callers catch it where they parse references.
from lockwright.errors import InvalidReference as InvalidReference  # noqa: PLC0414 - explicit re-export (mypy)

DEFAULT_TAG = "latest"
DOCKER_HUB = "docker.io"
_DOCKER_HUB_ALIASES = frozenset({"docker.io", "index.docker.io", "registry-1.docker.io"})

_COMPONENT = r"[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*"
_REPOSITORY = re.compile(rf"^{_COMPONENT}(?:/{_COMPONENT})*$")
_HOST = re.compile(r"^(?:[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?"
                   r"(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?)*|\[[0-9A-Fa-f:]+\])(?::\d{1,5})?$")
_TAG = re.compile(r"^[\w][\w.-]{0,127}$")
DIGEST = re.compile(r"^sha256:[0-9a-f]{64}$")


@dataclass(frozen=True)
class Reference:
    """A parsed image reference. Exactly one of ``tag``/``digest`` decides what is fetched:
    the digest when present, else the tag."""

    registry: str
    repository: str
    tag: str | None = None
    digest: str | None = None

    @property
    def source(self) -> str:
        """``registry/repository``: the package source without tag or digest."""
        return f"{self.registry}/{self.repository}"

    @property
    def identifier(self) -> str:
        """What goes after ``/manifests/``: the digest if pinned, else the tag."""
        return self.digest or self.tag or DEFAULT_TAG

    @property
    def api_host(self) -> str:
        """The host serving the v2 API (Docker Hub's API lives on another name)."""
        return "registry-1.docker.io" if self.registry in _DOCKER_HUB_ALIASES else self.registry

    def with_digest(self, digest: str) -> Reference:
        """This reference pinned to ``digest`` (the tag is kept for display)."""
        return replace(self, digest=digest)

    def with_tag(self, tag: str) -> Reference:
        """This repository at ``tag``, without any digest."""
        return replace(self, tag=tag, digest=None)

    def __str__(self) -> str:
        text = self.source
        if self.tag:
            text += f":{self.tag}"
        if self.digest:
            text += f"@{self.digest}"
        return text


def _split_registry(name: str) -> tuple[str | None, str]:
    first, sep, rest = name.partition("/")
    if sep and ("." in first or ":" in first or first == "localhost"):
        return first, rest
    return None, name


def _split_tag(remainder: str) -> tuple[str, str | None]:
    # A colon after the last slash starts the tag; earlier colons belong to a host port.
    slash = remainder.rfind("/")
    colon = remainder.rfind(":")
    if colon > slash:
        return remainder[:colon], remainder[colon + 1:]
    return remainder, None


def parse(ref: str, default_registry: str | None = None) -> Reference:
    """Parse an image reference.

    Args:
        ref: ``[registry/]repository[:tag][@sha256:<64 hex>]``.
        default_registry: registry used when ``ref`` names none; ``None`` means the
            reference must be fully qualified.

    Returns:
        The reference; ``tag`` defaults to ``latest`` when neither tag nor digest is given.

    Raises:
        InvalidReference: the text is not a valid reference, or names no registry and no
            default was given.
    """
    name, _, digest = ref.strip().partition("@")
    if digest and not DIGEST.match(digest):
        raise InvalidReference(f"cannot parse package reference {ref!r}: invalid digest")
    host, rest = _split_registry(name)
    repository, tag = _split_tag(rest)
    host = host or default_registry
    if host is None:
        raise InvalidReference(f"cannot parse package reference {ref!r}: "
                               "not fully qualified (no registry host)")
    if not _HOST.match(host):
        raise InvalidReference(f"cannot parse package reference {ref!r}: invalid registry host")
    if host in _DOCKER_HUB_ALIASES and "/" not in repository:
        repository = f"library/{repository}"
    if not _REPOSITORY.match(repository):
        raise InvalidReference(f"cannot parse package reference {ref!r}: invalid repository name")
    if tag is not None and not _TAG.match(tag):
        raise InvalidReference(f"cannot parse package reference {ref!r}: invalid tag")
    if tag is None and not digest:
        tag = DEFAULT_TAG
    return Reference(host, repository, tag, digest or None)


def is_fully_qualified(ref: str) -> bool:
    """Whether ``ref`` names its registry host explicitly (Crossplane's rule for ``spec.package``)."""
    try:
        parse(ref)
    except InvalidReference:
        return False
    return True


def is_digest(text: str) -> bool:
    """Whether ``text`` is a ``sha256:<64 hex>`` digest."""
    return bool(DIGEST.match(text))
