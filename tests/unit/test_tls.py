"""TLS: root CA, server and client certificates, idempotence and renewal."""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest
from cryptography import x509
from cryptography.x509.oid import ExtendedKeyUsageOID

from lockwright.runtime import tls

NOW = dt.datetime(2026, 11, 21, 12, 0, tzinfo=dt.UTC)


@pytest.fixture(scope="module")
def ca() -> tls.SecretData:
    return tls.ensure_ca(None, NOW)


def _cert(data: tls.SecretData, key: str = tls.TLS_CERT) -> x509.Certificate:
    return x509.load_pem_x509_certificate(tls.decode(data[key]))


def test_ca_is_a_ca(ca: tls.SecretData) -> None:
    cert = _cert(ca)
    assert set(ca) == {"tls.crt", "tls.key"}
    assert cert.extensions.get_extension_for_class(x509.BasicConstraints).value.ca
    assert cert.subject == cert.issuer
    assert tls.ROOT_CA_SECRET == "crossplane-root-ca"


@pytest.mark.parametrize(("when", "kept"), [
    (NOW + dt.timedelta(days=1), True),
    (NOW + tls.CA_VALIDITY - dt.timedelta(days=1), False),  # inside the renewal window
])
def test_ca_kept_while_valid(ca: tls.SecretData, when: dt.datetime, kept: bool) -> None:
    assert (tls.ensure_ca(ca, when) == ca) is kept


@pytest.mark.parametrize("broken", [{}, {"tls.crt": "!!", "tls.key": "x"}, None])
def test_ca_regenerated_when_broken(broken: tls.SecretData | None) -> None:
    fresh = tls.ensure_ca(broken, NOW)
    assert _cert(fresh).extensions.get_extension_for_class(x509.BasicConstraints).value.ca


def test_server_cert(ca: tls.SecretData) -> None:
    data = tls.ensure_server_cert(None, ca, "provider-nop", "crossplane-system", NOW)
    cert = _cert(data)
    assert set(data) == {"tls.crt", "tls.key", "ca.crt"}
    assert data["ca.crt"] == ca["tls.crt"]
    sans = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert sans.get_values_for_type(x509.DNSName) == [
        "provider-nop", "provider-nop.crossplane-system", "provider-nop.crossplane-system.svc",
        "provider-nop.crossplane-system.svc.cluster.local"]
    cert.verify_directly_issued_by(_cert(ca))  # raises if not signed by the CA
    usage = cert.extensions.get_extension_for_class(x509.ExtendedKeyUsage).value
    assert list(usage) == [ExtendedKeyUsageOID.SERVER_AUTH]


def test_client_cert(ca: tls.SecretData) -> None:
    data = tls.ensure_client_cert(None, ca, "provider-nop-552a394a8acc", NOW)
    cert = _cert(data)
    assert cert.subject.rfc4514_string() == "CN=provider-nop-552a394a8acc"
    cert.verify_directly_issued_by(_cert(ca))
    usage = cert.extensions.get_extension_for_class(x509.ExtendedKeyUsage).value
    assert list(usage) == [ExtendedKeyUsageOID.CLIENT_AUTH]


def test_server_cert_idempotent(ca: tls.SecretData) -> None:
    first = tls.ensure_server_cert(None, ca, "svc", "ns", NOW)
    assert tls.ensure_server_cert(first, ca, "svc", "ns", NOW + dt.timedelta(days=30)) == first


@pytest.mark.parametrize(("service", "namespace", "days", "new_ca"), [
    ("other", "ns", 0, False),  # names changed
    ("svc", "other-ns", 0, False),
    ("svc", "ns", 340, False),  # within 30 days of expiry
    ("svc", "ns", 0, True),  # CA rotated
])
def test_server_cert_reissued(ca: tls.SecretData, service: str, namespace: str, days: int,
                              new_ca: bool) -> None:
    first = tls.ensure_server_cert(None, ca, "svc", "ns", NOW)
    signer = tls.ensure_ca(None, NOW) if new_ca else ca
    again = tls.ensure_server_cert(first, signer, service, namespace,
                                   NOW + dt.timedelta(days=days))
    assert again["tls.crt"] != first["tls.crt"]
    _cert(again).verify_directly_issued_by(_cert(signer))


def test_ca_bundle(ca: tls.SecretData) -> None:
    data = tls.ensure_server_cert(None, ca, "svc", "ns", NOW)
    assert tls.ca_bundle(data) == tls.decode(ca["tls.crt"])
    assert tls.ca_bundle({"tls.crt": data["tls.crt"]}) == tls.decode(data["tls.crt"])
    with pytest.raises(ValueError, match="^the value for the key tls.crt cannot be empty$"):
        tls.ca_bundle({"tls.crt": ""})
    with pytest.raises(ValueError):
        tls.ca_bundle(None)


def test_leaf_needs_a_valid_ca() -> None:
    with pytest.raises(ValueError, match="root CA"):
        tls.ensure_server_cert(None, {}, "svc", "ns", NOW)


def test_secret_manifest() -> None:
    owner = [{"apiVersion": "pkg.crossplane.io/v1", "kind": "Provider", "name": "p", "uid": "u"}]
    got = tls.secret_manifest("p-tls-server", "crossplane-system", {"tls.crt": "eA=="}, owner)
    assert got == {"apiVersion": "v1", "kind": "Secret",
                   "metadata": {"name": "p-tls-server", "namespace": "crossplane-system",
                                "ownerReferences": owner},
                   "type": "kubernetes.io/tls", "data": {"tls.crt": "eA=="}}


def test_ca_bundle_verifies_server_cert(ca: tls.SecretData) -> None:
    data = tls.ensure_server_cert(None, ca, "svc", "ns", NOW)
    roots = x509.load_pem_x509_certificates(tls.ca_bundle(data))
    _cert(data).verify_directly_issued_by(roots[0])


def _ref(kind: str, name: str, uid: str, **kw: Any) -> dict[str, Any]:
    return {"apiVersion": "pkg.crossplane.io/v1", "kind": kind, "name": name, "uid": uid, **kw}


NEW = _ref("Provider", "p", "new")
OLD = _ref("Provider", "p", "old")
OTHER = _ref("Function", "f", "f-uid")


@pytest.mark.parametrize(("current", "owners", "want"), [
    ([], [NEW], [NEW]),
    ([NEW], [NEW], [NEW]),
    ([OLD], [NEW], [NEW]),  # an earlier package of the same name is stale
    ([OTHER, OLD], [NEW], [OTHER, NEW]),  # other owners keep their place
    ([{**NEW, "controller": True}], [NEW], [{**NEW, "controller": True}]),  # kept as written
    ([OTHER], [], [OTHER]),  # no owners wanted (the root CA): nothing taken away
    ([OLD, OTHER], [NEW, _ref("Provider", "q", "q-uid")],
     [OTHER, NEW, _ref("Provider", "q", "q-uid")]),
])
def test_with_owners(current: list[dict[str, Any]], owners: list[dict[str, Any]],
                     want: list[dict[str, Any]]) -> None:
    assert tls.with_owners(current, owners) == want

