"""Connecting to Temporal: plain for a dev server, TLS, mTLS or an API key for a cluster or
Temporal Cloud; secrets read from their files at connect time only."""

from __future__ import annotations

from pathlib import Path

import pytest

from lockwright.activities.connection import TemporalConnection, from_settings
from lockwright.settings import SettingsError, from_args


def test_a_dev_server_is_plain() -> None:
    assert TemporalConnection("127.0.0.1:7233", "default").options() == {"namespace": "default"}


def test_mtls_and_api_key_from_files(tmp_path: Path) -> None:
    for name, body in (("c.pem", b"CERT"), ("k.pem", b"KEY"), ("ca.pem", b"CA"),
                       ("api", b"  secret-key\n")):
        (tmp_path / name).write_bytes(body)
    settings = from_args(None, {
        "LOCKWRIGHT_TEMPORAL_ADDRESS": "ns.acct.tmprl.cloud:7233",
        "LOCKWRIGHT_TEMPORAL_NAMESPACE": "ns.acct",
        "LOCKWRIGHT_TEMPORAL_TLS_CERT": str(tmp_path / "c.pem"),
        "LOCKWRIGHT_TEMPORAL_TLS_KEY": str(tmp_path / "k.pem"),
        "LOCKWRIGHT_TEMPORAL_TLS_CA": str(tmp_path / "ca.pem"),
        "LOCKWRIGHT_TEMPORAL_TLS_SERVER_NAME": "ns.acct.tmprl.cloud",
        "LOCKWRIGHT_TEMPORAL_API_KEY_FILE": str(tmp_path / "api")})
    options = from_settings(settings).options()
    tls = options["tls"]
    assert (tls.client_cert, tls.client_private_key, tls.server_root_ca_cert, tls.domain) == (
        b"CERT", b"KEY", b"CA", "ns.acct.tmprl.cloud")
    assert options["api_key"] == "secret-key"
    assert options["namespace"] == "ns.acct"
    assert "secret-key" not in repr(settings)  # only the file's path is a setting


def test_tls_alone_uses_the_system_roots() -> None:
    tls = TemporalConnection("h:7233", tls=True).options()["tls"]
    assert tls.client_cert is None and tls.server_root_ca_cert is None


def test_a_certificate_without_its_key_is_refused() -> None:
    with pytest.raises(SettingsError, match="--temporal-tls-key"):
        from_args(None, {"LOCKWRIGHT_TEMPORAL_TLS_CERT": "/tmp/c.pem"})
