"""oras's ``Registry`` with its HTTP layer replaced by :meth:`RegistryClient.send`.

oras keeps what it does well (chunked blob upload from a file, the blob existence check,
tag pagination); our ``send`` brings auth, HTTP-only-when-insecure and error
classification, and drops oras's sleep-and-retry loop (retrying is Temporal's job).
"""

from __future__ import annotations

from typing import Any, Protocol

import oras.container
import oras.provider
import requests

from lockwright.oci.reference import Reference
from lockwright.oci.types import Call


class Sender(Protocol):
    """What the transport needs of :class:`lockwright.oci.client.RegistryClient`."""

    insecure: frozenset[str]

    def send(self, call: Call, allow: frozenset[int] = ...) -> requests.Response:
        """Send ``call``; statuses in ``allow`` come back instead of raising."""


class OrasTransport(oras.provider.Registry):  # type: ignore[misc]  # oras is untyped
    """An oras registry bound to one repository whose requests go through our client."""

    def __init__(self, client: Sender, ref: Reference, push: bool = False) -> None:
        host = ref.api_host
        super().__init__(hostname=host, insecure=host in client.insecure)
        self._client = client
        self._ref = ref
        self._push = push

    @staticmethod
    def container(ref: Reference) -> oras.container.Container:
        """An oras container for ``ref``, set field by field (oras's own parser would take
        a repository component containing a dot for a registry host)."""
        container = oras.container.Container(ref.repository.rsplit("/", 1)[-1],
                                             registry=ref.api_host)
        namespace, _, name = ref.repository.rpartition("/")
        container.namespace, container.repository = namespace or None, name
        container.tag, container.digest = ref.tag, ref.digest
        return container

    def do_request(self, url: str, method: str = "GET", data: Any = None,
                   headers: dict[str, str] | None = None, json: Any = None,
                   stream: bool = False) -> requests.Response:
        """Send through the client; a HEAD that finds nothing returns its 404 to oras."""
        if json is not None:
            raise TypeError("JSON bodies are sent by RegistryClient itself")
        call = Call(method, url, self._ref, self._push, dict(headers or {}), data, stream)
        return self._client.send(call, allow=frozenset({404}) if method == "HEAD" else frozenset())
