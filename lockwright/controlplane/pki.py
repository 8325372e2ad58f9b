"""The control plane's certificates: a CA, the apiserver's serving certificate, an admin
client certificate in ``system:masters`` and the service-account signing key pair."""

from __future__ import annotations

import datetime as dt
import ipaddress
import os
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

VALID = dt.timedelta(days=365)
# What in-cluster clients call the apiserver: its Service's names and first ClusterIP.
SERVICE_NAMES = ("kubernetes", "kubernetes.default", "kubernetes.default.svc",
                 "kubernetes.default.svc.cluster.local", "localhost")
SERVICE_IPS = ("127.0.0.1", "10.96.0.1")


@dataclass(frozen=True)
class Pki:
    """Paths of the files :func:`issue` wrote."""

    dir: Path

    def file(self, name: str) -> str:
        """The path of ``name`` (``ca.crt``, ``admin.key``, ``sa.pub``, ...)."""
        return str(self.dir / name)


def _name(common_name: str, organization: str | None = None) -> x509.Name:
    attrs = [x509.NameAttribute(NameOID.COMMON_NAME, common_name)]
    if organization:
        attrs.insert(0, x509.NameAttribute(NameOID.ORGANIZATION_NAME, organization))
    return x509.Name(attrs)


def _builder(subject: x509.Name, issuer: x509.Name, key: ec.EllipticCurvePrivateKey,
             ca: bool) -> x509.CertificateBuilder:
    now = dt.datetime.now(dt.UTC)
    return (x509.CertificateBuilder().subject_name(subject).issuer_name(issuer)
            .public_key(key.public_key()).serial_number(x509.random_serial_number())
            .not_valid_before(now - dt.timedelta(minutes=5)).not_valid_after(now + VALID)
            .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True))


def _write(path: Path, data: bytes) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as fh:
        fh.write(data)


def _key_pem(key: ec.EllipticCurvePrivateKey | rsa.RSAPrivateKey) -> bytes:
    return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                             serialization.NoEncryption())


def _leaf(path: Path, subject: x509.Name, ca: tuple[x509.Name, ec.EllipticCurvePrivateKey],
          *extensions: x509.ExtensionType) -> None:
    key = ec.generate_private_key(ec.SECP256R1())
    builder = _builder(subject, ca[0], key, ca=False)
    for ext in extensions:
        builder = builder.add_extension(ext, critical=False)
    cert = builder.sign(ca[1], hashes.SHA256())
    _write(path.with_suffix(".key"), _key_pem(key))
    _write(path.with_suffix(".crt"), cert.public_bytes(serialization.Encoding.PEM))


def issue(directory: Path) -> Pki:
    """Write ``ca``, ``apiserver`` and ``admin`` (``.crt``/``.key``) and ``sa.key``/``sa.pub``."""
    directory.mkdir(parents=True, exist_ok=True)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = _name("lockwright-control-plane-ca")
    ca_cert = _builder(ca_name, ca_name, ca_key, ca=True).sign(ca_key, hashes.SHA256())
    _write(directory / "ca.crt", ca_cert.public_bytes(serialization.Encoding.PEM))
    _write(directory / "ca.key", _key_pem(ca_key))  # the controller manager signs CSRs
    alt = x509.SubjectAlternativeName(
        [x509.DNSName(n) for n in SERVICE_NAMES]
        + [x509.IPAddress(ipaddress.ip_address(ip)) for ip in SERVICE_IPS])
    _leaf(directory / "apiserver", _name("kube-apiserver"), (ca_name, ca_key), alt,
          x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]))
    _leaf(directory / "admin", _name("admin", "system:masters"), (ca_name, ca_key),
          x509.ExtendedKeyUsage([ExtendedKeyUsageOID.CLIENT_AUTH]))
    sa = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    _write(directory / "sa.key", _key_pem(sa))
    _write(directory / "sa.pub", sa.public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo))
    return Pki(directory)
