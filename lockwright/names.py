"""Names Crossplane derives from packages: revisions, TLS secrets, DNS labels, references.

Everything here is a pure function of strings. Revision names follow Crossplane's main
branch (the v2.5 line, ``packageRevisionID``): ``<package>-<first 12 hex of
sha256(digest + "|" + generation)>``, so every spec change of a package (a new
``metadata.generation``) names a new revision. Crossplane v1.x to v2.4 named them
``<package>-<first 12 hex of the digest>`` (docs/crossplane.md §3.3); that name is kept
for revisions made so (:func:`digest_revision_name`, docs/design.md, "Revision names").
"""

from __future__ import annotations

import hashlib
import re
from typing import NamedTuple

MAX_DNS_LABEL = 63
MAX_DNS_SUBDOMAIN = 253
TLS_SERVER_SUFFIX = "-tls-server"
TLS_CLIENT_SUFFIX = "-tls-client"
PKG_API_VERSION = "pkg.crossplane.io/v1"
#: The label every revision carries: the name of its package.
LABEL_PACKAGE = "pkg.crossplane.io/package"
#: The kinds of package revisions.
REVISION_KINDS = ("ProviderRevision", "ConfigurationRevision", "FunctionRevision")
#: The prefix of every annotation lockwright writes on a revision (its digests, the count
#: of Active MRDs): a package's metadata never sets them (see :func:`from_metadata`).
OWNED_ANNOTATIONS = "lockwright.dev/"
#: A revision's ``spec.desiredState``.
ACTIVE, INACTIVE = "Active", "Inactive"

# Crossplane validates spec.package with CEL; this is the same expression as a regex.
FULLY_QUALIFIED_PACKAGE = re.compile(
    r"^[^\.\/]+(\.[^\.\/]+)+(\/[^\/:@]+)+(:[^:@]+(@sha256.+)?|@sha256.+)$"
)
FULLY_QUALIFIED_MESSAGE = (
    "must be a fully qualified image name, including the registry, repository, and tag or "
    "digest. For example, 'registry.example.com/repo/package:tag' or "
    "'registry.example.com/repo/package[:tag]@sha256:1234…'."
)

_DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
_SEPARATORS = frozenset(".:/-")
_LAST_INDEX = 62


class Reference(NamedTuple):
    """An OCI reference split as the user wrote it (no normalisation)."""

    registry: str
    repository: str
    tag: str
    digest: str

    @property
    def source(self) -> str:
        """The reference without tag or digest: what the Lock records as ``source``."""
        return f"{self.registry}/{self.repository}" if self.registry else self.repository

    @property
    def version(self) -> str:
        """The digest if there is one, else the tag: the Lock's ``version``."""
        return self.digest or self.tag


def to_dns_label(text: str) -> str:
    """Crossplane's ``ToDNSLabel``: keep ``[a-z0-9]``, turn separators into ``-``.

    It walks the UTF-8 byte offsets of ``text`` and stops after offset 62; ``.``, ``/``,
    ``:`` and ``-`` become ``-`` except at offset 0, 62 and the last offset; everything
    else (uppercase included) is dropped; leading and trailing ``-`` are trimmed.
    """
    out: list[str] = []
    last = len(text.encode()) - 1
    offset = 0
    for char in text:
        if char.isascii() and (char.islower() or char.isdigit()):
            out.append(char)
        elif char in _SEPARATORS and offset not in (0, _LAST_INDEX, last):
            out.append("-")
        if offset == _LAST_INDEX:
            break
        offset += len(char.encode())
    return "".join(out).strip("-")


def friendly_id(name: str, identifier: str) -> str:
    """Crossplane's ``FriendlyID``: 50 chars of ``name``, ``-``, 12 chars of ``identifier``."""
    return to_dns_label(f"{name[:50]}-{identifier[:12]}")


def revision_id(digest: str, generation: int) -> str:
    """Crossplane's ``packageRevisionID``: hex sha256 of ``<digest hex>|<generation>``.

    Args:
        digest: the image digest, with or without the ``sha256:`` prefix (Crossplane
            hashes ``DigestHex()``, the hex alone).
        generation: the package's ``metadata.generation``.
    """
    hexes = digest.split(":", 1)[-1]
    return hashlib.sha256(f"{hexes}|{generation}".encode()).hexdigest()


def revision_name(package_name: str, digest: str, generation: int) -> str:
    """Return the revision name ``<package>-<first 12 hex of revision_id>`` (Crossplane's
    main branch): one revision per digest and per spec of the package.

    Args:
        package_name: ``metadata.name`` of the Provider, Configuration or Function.
        digest: the image digest, with or without the ``sha256:`` prefix.
        generation: the package's ``metadata.generation``.
    """
    return friendly_id(package_name, revision_id(digest, generation))


def digest_revision_name(package_name: str, digest: str) -> str:
    """Return the revision name of Crossplane v1.x to v2.4 (and lockwright before it named
    by generation): ``<package>-<first 12 hex of the digest>``.

    Args:
        package_name: ``metadata.name`` of the Provider, Configuration or Function.
        digest: the image digest, with or without the ``sha256:`` prefix.
    """
    return friendly_id(package_name, digest.split(":", 1)[-1])


def is_revision_name_of(package_name: str, name: str) -> bool:
    """True when ``name`` is ``<package>-<12 hex>`` as either naming forms it."""
    return name == friendly_id(package_name, name[-12:])


def tls_server_secret_name(package_name: str) -> str:
    """``<package>-tls-server``, the package name cut so the whole is at most 253 chars."""
    return package_name[: MAX_DNS_SUBDOMAIN - len(TLS_SERVER_SUFFIX)] + TLS_SERVER_SUFFIX


def tls_client_secret_name(package_name: str) -> str:
    """``<package>-tls-client``, the package name cut so the whole is at most 253 chars."""
    return package_name[: MAX_DNS_SUBDOMAIN - len(TLS_CLIENT_SUFFIX)] + TLS_CLIENT_SUFFIX


def webhook_configuration_name(package_kind: str, package_name: str) -> str:
    """Name a package's webhook configuration: ``crossplane-<kind>-<name>``."""
    return f"crossplane-{package_kind.lower()}-{package_name}"


def is_dns_label(text: str) -> bool:
    """True when ``text`` is an RFC 1123 label (what Kubernetes accepts as a name part)."""
    return len(text) <= MAX_DNS_LABEL and bool(_DNS_LABEL.match(text))


def is_dns_subdomain(text: str) -> bool:
    """True when ``text`` is an RFC 1123 subdomain (most Kubernetes object names)."""
    return 0 < len(text) <= MAX_DNS_SUBDOMAIN and all(
        is_dns_label(part) for part in text.split(".")
    )


def is_fully_qualified(package: str) -> bool:
    """True when ``package`` passes the ``spec.package`` rule (registry, path, tag/digest)."""
    return bool(FULLY_QUALIFIED_PACKAGE.match(package))


def parse_reference(ref: str) -> Reference:
    """Split ``registry/repo[:tag][@digest]`` without defaulting anything.

    The first path segment is the registry when it looks like a host (has ``.`` or
    ``:``, or is ``localhost``) and more segments follow.
    """
    rest, _, digest = ref.partition("@")
    name, tag = rest, ""
    slash, colon = rest.rfind("/"), rest.rfind(":")
    if colon > slash:
        name, tag = rest[:colon], rest[colon + 1:]
    first, sep, remainder = name.partition("/")
    if sep and ("." in first or ":" in first or first == "localhost"):
        return Reference(first, remainder, tag, digest)
    return Reference("", name, tag, digest)


def package_name_from_reference(ref: str) -> str:
    """Name a package created for ``ref``: ``ToDNSLabel`` of the repository path.

    ``xpkg.upbound.io/crossplane-contrib/provider-nop:v0.2.0`` gives
    ``crossplane-contrib-provider-nop``.
    """
    return to_dns_label(parse_reference(ref).repository)


def from_metadata(labels: dict[str, str], annotations: dict[str, str]
                  ) -> tuple[dict[str, str], dict[str, str]]:
    """The labels and annotations of a package's metadata as its revision takes them:
    without the package label and lockwright's own annotations, which a package (or
    metadata copied from a live revision) would otherwise forge or flip on every pass."""
    return ({k: v for k, v in labels.items() if k != LABEL_PACKAGE},
            {k: v for k, v in annotations.items() if not k.startswith(OWNED_ANNOTATIONS)})
