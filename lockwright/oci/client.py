"""A small OCI distribution client: resolve, manifests, blobs, tags, push.

oras is used where it fits: ``oras.provider.Registry`` does the chunked blob upload
(POST, PATCH per 16 MiB chunk read from disk, PUT), the blob existence check and the
paginated tag listing, all routed through :meth:`RegistryClient.send` by overriding its
``do_request``. It does not fit elsewhere, so those parts are ours:

- ``Registry.do_request`` retries any failure five times with sleeps adding up to over two
  minutes, which turns "connection refused" into a long wait instead of one classified
  :class:`RegistryUnavailable`; its auth handling is replaced too (see ``auth.py``).
- ``get_manifest`` neither bounds the size nor verifies the digest, and returns parsed JSON
  without the bytes the digest is computed over; ``upload_manifest`` re-serialises the JSON
  (changing the digest) and only knows the OCI manifest type, so no index.
- There is no tag → digest resolution (HEAD falling back to GET), and ``download_blob``
  neither verifies the digest nor bounds the size.

Plain HTTP is used only for hosts named insecure (``insecure`` or
``LOCKWRIGHT_INSECURE_REGISTRIES``); everything else is HTTPS.
"""

from __future__ import annotations

import dataclasses
import hashlib
import os
from collections.abc import Iterable
from pathlib import Path
from typing import IO

import requests
import structlog

from lockwright.errors import InvalidPackage, RegistryUnavailable
from lockwright.oci import errors as oci_errors
from lockwright.oci.auth import (
    Credentials,
    DockerAuths,
    answer_challenge,
    parse_challenge,
    scope_for,
)
from lockwright.oci.reference import Reference, is_digest
from lockwright.oci.transport import OrasTransport
from lockwright.oci.types import MANIFEST_TYPES, Call, Manifest
from lockwright.xpkg.constraints import parse_version, sort_semver_tags

log = structlog.get_logger(__name__)

MAX_MANIFEST_BYTES = 4 * 1024 * 1024
CHUNK = 1024 * 1024
ENV_INSECURE = "LOCKWRIGHT_INSECURE_REGISTRIES"


def insecure_from_environment() -> frozenset[str]:
    """Hosts named in ``LOCKWRIGHT_INSECURE_REGISTRIES`` (comma-separated ``host:port``)."""
    raw = os.environ.get(ENV_INSECURE, "")
    return frozenset(h.strip() for h in raw.split(",") if h.strip())


class RegistryClient:
    """Talks to OCI registries on behalf of one caller (one set of credentials).

    Args:
        insecure: ``host:port`` names reached over plain HTTP; the environment's list is
            added.
        auths: credentials by host; ``None`` reads ``$DOCKER_CONFIG/config.json``.
        timeout: seconds for connecting and for each read.
        max_manifest_bytes: manifests and indexes larger than this are refused.
    """

    def __init__(self, insecure: Iterable[str] = (), auths: DockerAuths | None = None,
                 timeout: float = 30.0, max_manifest_bytes: int = MAX_MANIFEST_BYTES) -> None:
        self.insecure = frozenset(insecure) | insecure_from_environment()
        self.auths = auths if auths is not None else DockerAuths.from_environment()
        self.timeout = timeout
        self.max_manifest_bytes = max_manifest_bytes
        self.session = requests.Session()
        self.session.trust_env = False  # no .netrc credentials slipping into requests
        self._authz: dict[tuple[str, str], str] = {}

    def base_url(self, ref: Reference) -> str:
        """``scheme://host/v2/<repository>``."""
        host = ref.api_host
        scheme = "http" if host in self.insecure else "https"
        return f"{scheme}://{host}/v2/{ref.repository}"

    def credentials(self, host: str) -> Credentials | None:
        """The configured credentials for ``host``, if any."""
        return self.auths.for_host(host)

    # -- transport ---------------------------------------------------------------------

    def send(self, call: Call, allow: frozenset[int] = frozenset()) -> requests.Response:
        """Send one request, answering an auth challenge once; classify failures.

        Statuses in ``allow`` are returned to the caller instead of raised.
        """
        host, scope = call.ref.api_host, scope_for(call.ref.repository, call.push)
        resp = self._raw(call, self._authz.get((host, scope)))
        if resp.status_code == 401 and "WWW-Authenticate" in resp.headers:
            challenge = parse_challenge(resp.headers["WWW-Authenticate"])
            resp.close()
            self._authz[(host, scope)] = answer_challenge(
                self.session, challenge, host, scope, self.credentials(host),
                secure=host not in self.insecure, timeout=self.timeout)
            resp = self._raw(call, self._authz[(host, scope)])
        if resp.status_code < 400 or resp.status_code in allow:
            return resp
        raise oci_errors.classify(resp, call.method, call.ref, bool(self.credentials(host)))

    def _raw(self, call: Call, authorization: str | None) -> requests.Response:
        headers = dict(call.headers or {})
        if authorization:
            headers["Authorization"] = authorization
        try:
            return self.session.request(call.method, call.url, headers=headers, data=call.data,
                                        stream=call.stream, timeout=self.timeout)
        except requests.RequestException as exc:
            raise RegistryUnavailable(f"registry {call.ref.api_host} unreachable: "
                                      f"{oci_errors.root_cause(exc)} ({type(exc).__name__})"
                                      ) from None

    # -- reading -----------------------------------------------------------------------

    def resolve(self, ref: Reference) -> str:
        """Resolve ``ref`` to a manifest digest: HEAD first, GET if HEAD gives no digest."""
        if ref.digest:
            return ref.digest
        call = Call("HEAD", f"{self.base_url(ref)}/manifests/{ref.identifier}", ref,
                     headers={"Accept": ", ".join(MANIFEST_TYPES)})
        resp = self.send(call, allow=frozenset(range(400, 600)) - {401, 403})
        digest = resp.headers.get("Docker-Content-Digest", "")
        resp.close()
        if resp.status_code == 200 and is_digest(digest):
            return digest
        log.debug("registry.head_fallback", ref=str(ref), status=resp.status_code)
        return self.get_manifest(ref).digest

    def get_manifest(self, ref: Reference, identifier: str | None = None) -> Manifest:
        """GET a manifest or index by tag or digest, bounded in size and verified.

        Raises:
            InvalidPackage: over the size limit, not JSON, or not matching its digest.
        """
        ident = identifier or ref.identifier
        call = Call("GET", f"{self.base_url(ref)}/manifests/{ident}", ref,
                     headers={"Accept": ", ".join(MANIFEST_TYPES)}, stream=True)
        with self.send(call) as resp:
            body = _read_bounded(resp, self.max_manifest_bytes, f"manifest {ref.source}@{ident}")
            content_type = resp.headers.get("Content-Type", "")
        manifest = Manifest.from_bytes(body, content_type)
        if is_digest(ident) and manifest.digest != ident:
            raise InvalidPackage(f"manifest {ref.source}@{ident} does not match its digest "
                                 f"(content is {manifest.digest})")
        return manifest

    def download_blob(self, ref: Reference, digest: str, out: IO[bytes], max_bytes: int) -> int:
        """Stream blob ``digest`` into ``out``, verifying its sha256; return its size.

        Raises:
            InvalidPackage: the blob exceeds ``max_bytes`` or does not match ``digest``.
        """
        call = Call("GET", f"{self.base_url(ref)}/blobs/{digest}", ref, stream=True)
        hasher, size = hashlib.sha256(), 0
        with self.send(call) as resp:
            declared = int(resp.headers.get("Content-Length") or 0)
            if declared > max_bytes:
                raise InvalidPackage(f"blob {digest} is {declared} bytes, over the limit of "
                                     f"{max_bytes}")
            for chunk in resp.raw.stream(CHUNK, decode_content=False):
                size += len(chunk)
                if size > max_bytes:
                    raise InvalidPackage(f"blob {digest} is over the limit of {max_bytes} bytes")
                hasher.update(chunk)
                out.write(chunk)
        if f"sha256:{hasher.hexdigest()}" != digest:
            raise InvalidPackage(f"blob {digest} does not match its digest "
                                 f"(content is sha256:{hasher.hexdigest()})")
        return size

    def list_tags(self, ref: Reference) -> list[str]:
        """Every tag of ``ref``'s repository, following pagination.

        The repository is asked without tag or digest, so a failure names the repository
        (``REPO not found``), not a ``REPO:latest`` nobody asked for.
        """
        repo = dataclasses.replace(ref, tag=None, digest=None)
        return [str(t) for t in OrasTransport(self, repo).get_tags(OrasTransport.container(repo))]

    def list_versions(self, ref: Reference) -> list[str]:
        """The repository's complete semver tags (``v`` prefix allowed), ascending.

        Partial tags such as ``v1`` or ``v1.2`` are skipped, so a floating tag can never
        satisfy a dependency on ``v1.0.0``.
        """
        return sort_semver_tags(t for t in self.list_tags(ref) if parse_version(t) is not None)

    # -- writing -----------------------------------------------------------------------

    def push_blob(self, ref: Reference, path: Path, digest: str, size: int) -> None:
        """Upload the file at ``path`` as blob ``digest`` unless the registry has it."""
        transport = OrasTransport(self, ref, push=True)
        container = OrasTransport.container(ref)
        resp = transport.upload_blob(str(path), container, {"digest": digest, "size": size},
                                     do_chunked=True)
        if resp.status_code not in (200, 201, 202):
            raise InvalidPackage(f"registry {ref.api_host} refused blob {digest} "
                                 f"({resp.status_code})")
        log.debug("registry.blob_pushed", ref=ref.source, digest=digest, size=size)

    def push_manifest(self, ref: Reference, body: bytes, media_type: str,
                      identifier: str | None = None) -> str:
        """PUT ``body`` byte for byte at ``identifier`` (default: ``ref``'s); return its digest."""
        digest = "sha256:" + hashlib.sha256(body).hexdigest()
        call = Call("PUT", f"{self.base_url(ref)}/manifests/{identifier or ref.identifier}",
                     ref, push=True, headers={"Content-Type": media_type}, data=body)
        with self.send(call) as resp:
            answered = resp.headers.get("Docker-Content-Digest", digest)
        if answered != digest:
            raise InvalidPackage(f"registry stored manifest as {answered}, expected {digest}")
        return digest


def _read_bounded(resp: requests.Response, limit: int, what: str) -> bytes:
    declared = int(resp.headers.get("Content-Length") or 0)
    if declared > limit:
        raise InvalidPackage(f"{what} is {declared} bytes, over the limit of {limit}")
    parts: list[bytes] = []
    total = 0
    for chunk in resp.raw.stream(CHUNK, decode_content=True):
        total += len(chunk)
        if total > limit:
            raise InvalidPackage(f"{what} is over the limit of {limit} bytes")
        parts.append(chunk)
    return b"".join(parts)

