"""How lockwright's processes and activities connect to Temporal (a dev server, a cluster
behind TLS, or Temporal Cloud with mTLS or an API key).

The API key and the client key are read from their files here, at connect time, so they
never sit in settings that are passed to child processes or printed.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from temporalio.client import Client
from temporalio.service import TLSConfig

from lockwright.settings import Settings


@dataclass(frozen=True)
class TemporalConnection:
    """The connection settings, as files and flags (never the secrets themselves)."""

    address: str = "127.0.0.1:7233"
    namespace: str = "default"
    tls: bool = False
    cert: str = ""
    key: str = ""
    ca: str = ""
    server_name: str = ""
    api_key_file: str = ""

    def options(self) -> dict[str, Any]:
        """``Client.connect`` keyword arguments: namespace, and TLS and API key if asked."""
        out: dict[str, Any] = {"namespace": self.namespace}
        if self.api_key_file:
            out["api_key"] = Path(self.api_key_file).read_text().strip()
        if self.tls or self.cert or self.ca or self.server_name:
            out["tls"] = TLSConfig(
                client_cert=_read(self.cert), client_private_key=_read(self.key),
                server_root_ca_cert=_read(self.ca), domain=self.server_name or None)
        return out

    async def connect(self) -> Client:
        """A Temporal client."""
        return await Client.connect(self.address, **self.options())


def _read(path: str) -> bytes | None:
    return Path(path).read_bytes() if path else None


def from_settings(settings: Settings) -> TemporalConnection:
    """The connection named by a process's ``lockwright.settings.Settings``."""
    return TemporalConnection(
        settings.temporal_address, settings.temporal_namespace, settings.temporal_tls,
        settings.temporal_tls_cert, settings.temporal_tls_key, settings.temporal_tls_ca,
        settings.temporal_tls_server_name, settings.temporal_api_key_file)
