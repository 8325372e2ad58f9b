"""Webhook TLS (docs/crossplane.md §10, §13.1): a root CA, per-package server/client certificates.

All functions map ``(existing Secret data | None, now)`` to the Secret data to write, in
the Kubernetes ``data`` form (base64 strings). They are idempotent: an existing
certificate that is still valid, signed by the current CA and for the same names is
returned unchanged. Keys are ECDSA P-256: as secure as RSA-3072 and far faster to make,
which matters when many packages install at once.
"""

from __future__ import annotations

import base64
import binascii
import datetime as dt
from typing import Any

from cryptography import x509
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

SecretData = dict[str, str]

ROOT_CA_SECRET = "crossplane-root-ca"
TLS_CERT, TLS_KEY, CA_CERT = "tls.crt", "tls.key", "ca.crt"
SECRET_TYPE = "kubernetes.io/tls"
CA_COMMON_NAME = "Crossplane Root CA"
CA_VALIDITY = dt.timedelta(days=3650)
LEAF_VALIDITY = dt.timedelta(days=365)
RENEW_BEFORE = dt.timedelta(days=30)
MSG_EMPTY_TLS_CRT = "the value for the key tls.crt cannot be empty"


def encode(pem: bytes) -> str:
    """Base64 for a Secret's ``data``."""
    return base64.b64encode(pem).decode()


def decode(value: str | None) -> bytes:
    """Bytes from a Secret's ``data`` value; empty on absence or bad base64."""
    try:
        return base64.b64decode(value or "", validate=True)
    except (binascii.Error, ValueError):
        return b""


def server_dns_names(service: str, namespace: str) -> list[str]:
    """The SANs of a package's server certificate."""
    return [service, f"{service}.{namespace}", f"{service}.{namespace}.svc",
            f"{service}.{namespace}.svc.cluster.local"]


def _key_pem(key: ec.EllipticCurvePrivateKey) -> bytes:
    return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                             serialization.NoEncryption())


def _load(data: SecretData | None) -> tuple[x509.Certificate, Any] | None:
    try:
        cert = x509.load_pem_x509_certificate(decode((data or {}).get(TLS_CERT)))
        key = serialization.load_pem_private_key(decode((data or {}).get(TLS_KEY)), None)
    except ValueError:
        return None
    return cert, key


def _fresh(cert: x509.Certificate, key: Any, now: dt.datetime) -> bool:
    matches = cert.public_key().public_bytes(
        serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo
    ) == key.public_key().public_bytes(
        serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo)
    return matches and cert.not_valid_before_utc <= now < cert.not_valid_after_utc - RENEW_BEFORE


def _builder(subject: str, issuer: x509.Name | None, key: ec.EllipticCurvePrivateKey,
             now: dt.datetime, validity: dt.timedelta) -> x509.CertificateBuilder:
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, subject)])
    return (x509.CertificateBuilder().subject_name(name).issuer_name(issuer or name)
            .public_key(key.public_key()).serial_number(x509.random_serial_number())
            .not_valid_before(now - dt.timedelta(minutes=5)).not_valid_after(now + validity))


def ensure_ca(existing: SecretData | None, now: dt.datetime) -> SecretData:
    """Return the root CA's Secret data (``tls.crt``, ``tls.key``), keeping a valid one.

    Args:
        existing: ``data`` of the Secret ``crossplane-root-ca``, or None if missing.
        now: the current time (timezone-aware).
    """
    loaded = _load(existing)
    if loaded and existing and _fresh(*loaded, now) and _is_ca(loaded[0]):
        return dict(existing)
    key = ec.generate_private_key(ec.SECP256R1())
    cert = (_builder(CA_COMMON_NAME, None, key, now, CA_VALIDITY)
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .add_extension(_usage(cert_sign=True), critical=True)
            .sign(key, hashes.SHA256()))
    return {TLS_CERT: encode(cert.public_bytes(serialization.Encoding.PEM)),
            TLS_KEY: encode(_key_pem(key))}


def _is_ca(cert: x509.Certificate) -> bool:
    try:
        return bool(cert.extensions.get_extension_for_class(x509.BasicConstraints).value.ca)
    except x509.ExtensionNotFound:
        return False


def _usage(cert_sign: bool = False) -> x509.KeyUsage:
    return x509.KeyUsage(digital_signature=True, content_commitment=False,
                         key_encipherment=not cert_sign, data_encipherment=False,
                         key_agreement=False, key_cert_sign=cert_sign, crl_sign=cert_sign,
                         encipher_only=False, decipher_only=False)


def _signed_by(cert: x509.Certificate, ca_cert: x509.Certificate) -> bool:
    try:
        cert.verify_directly_issued_by(ca_cert)
    except (ValueError, TypeError, InvalidSignature):
        return False
    return True


def _dns_names(cert: x509.Certificate) -> list[str]:
    try:
        ext = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName)
    except x509.ExtensionNotFound:
        return []
    return list(ext.value.get_values_for_type(x509.DNSName))


def _leaf(existing: SecretData | None, ca: SecretData, common_name: str, dns_names: list[str],
          usage: x509.ObjectIdentifier, now: dt.datetime) -> SecretData:
    ca_loaded = _load(ca)
    if ca_loaded is None:
        raise ValueError("the root CA secret has no valid tls.crt and tls.key")
    ca_cert, ca_key = ca_loaded
    loaded = _load(existing)
    if (loaded and existing and _fresh(*loaded, now) and _signed_by(loaded[0], ca_cert)
            and _dns_names(loaded[0]) == dns_names
            and existing.get(CA_CERT) == ca[TLS_CERT]):
        return dict(existing)
    key = ec.generate_private_key(ec.SECP256R1())
    builder = (_builder(common_name, ca_cert.subject, key, now, LEAF_VALIDITY)
               .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
               .add_extension(_usage(), critical=True)
               .add_extension(x509.ExtendedKeyUsage([usage]), critical=False))
    if dns_names:
        builder = builder.add_extension(
            x509.SubjectAlternativeName([x509.DNSName(n) for n in dns_names]), critical=False)
    cert = builder.sign(ca_key, hashes.SHA256())
    return {TLS_CERT: encode(cert.public_bytes(serialization.Encoding.PEM)),
            TLS_KEY: encode(_key_pem(key)), CA_CERT: ca[TLS_CERT]}


def ensure_server_cert(existing: SecretData | None, ca: SecretData, service: str,
                       namespace: str, now: dt.datetime) -> SecretData:
    """Return a package's server Secret data, signed by ``ca``, keeping a valid one.

    Args:
        existing: ``data`` of ``<package>-tls-server``, or None.
        ca: data of the root CA Secret (from :func:`ensure_ca`).
        service: the package's Service name (the package name unless the DRC names it).
        namespace: the system namespace the Service lives in.
        now: the current time (timezone-aware).
    """
    return _leaf(existing, ca, service, server_dns_names(service, namespace),
                 ExtendedKeyUsageOID.SERVER_AUTH, now)


def ensure_client_cert(existing: SecretData | None, ca: SecretData, common_name: str,
                       now: dt.datetime) -> SecretData:
    """Return a provider's client Secret data (common name: the revision name)."""
    return _leaf(existing, ca, common_name, [], ExtendedKeyUsageOID.CLIENT_AUTH, now)


def ca_bundle(server_data: SecretData | None) -> bytes:
    """The PEM to inject as ``caBundle``: the CA that signed the server certificate.

    Crossplane injects the server's ``tls.crt``; we inject ``ca.crt`` when present,
    which every TLS client accepts as a trust root, and fall back to ``tls.crt``.

    Raises:
        ValueError: ``tls.crt`` is missing or empty (Crossplane's message).
    """
    data = server_data or {}
    if not decode(data.get(TLS_CERT)):
        raise ValueError(MSG_EMPTY_TLS_CRT)
    return decode(data.get(CA_CERT)) or decode(data.get(TLS_CERT))


def secret_manifest(name: str, namespace: str, data: SecretData,
                    owner_references: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """A ``kubernetes.io/tls`` Secret holding ``data``."""
    metadata: dict[str, Any] = {"name": name, "namespace": namespace}
    if owner_references:
        metadata["ownerReferences"] = owner_references
    return {"apiVersion": "v1", "kind": "Secret", "metadata": metadata, "type": SECRET_TYPE,
            "data": dict(data)}


def with_owners(current: list[dict[str, Any]],
                owners: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """A Secret's owner references: ``current`` with ``owners`` in place of any same-named
    owner of another UID.

    A reference to an earlier package of the same name is stale (it is gone or going);
    keeping it beside the new one would give the Secret two controllers.

    Args:
        current: the live Secret's ``ownerReferences``.
        owners: the references the Secret must carry (kept in place when already there).
    """
    new = {(o.get("kind"), o.get("name")): o for o in owners}
    kept = [r for r in current if (r.get("kind"), r.get("name")) not in new
            or r.get("uid") == new[(r.get("kind"), r.get("name"))].get("uid")]
    uids = {r.get("uid") for r in kept}
    return [*kept, *(o for o in owners if o.get("uid") not in uids)]
