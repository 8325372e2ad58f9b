"""HTTPS for devcluster in RBAC mode: a CA of its own and a serving certificate.

Clients send credentials only over TLS (kubectl drops a kubeconfig's token for an
``http://`` server), so a devcluster that authenticates serves HTTPS, as kube-apiserver
does. The CA and the certificate (ECDSA P-256, for ``localhost``, ``127.0.0.1``, ``::1``
and the listen address) are kept in the data directory, so a kubeconfig stays valid
across restarts; the kubeconfig carries the CA as ``certificate-authority-data``.
"""

from __future__ import annotations

import datetime as dt
import ipaddress
import os
import ssl
from dataclasses import dataclass

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

CA_FILE, CERT_FILE, KEY_FILE = "tls-ca.crt", "tls-serving.crt", "tls-serving.key"
VALID = dt.timedelta(days=3650)


@dataclass(frozen=True)
class Serving:
    """The files of one devcluster's TLS."""

    ca: str
    cert: str
    key: str

    def ca_pem(self) -> bytes:
        with open(self.ca, "rb") as fh:
            return fh.read()

    def context(self) -> ssl.SSLContext:
        """The server-side context serving the certificate."""
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.minimum_version = ssl.TLSVersion.TLSv1_2
        ctx.load_cert_chain(self.cert, self.key)
        return ctx


def _name(common_name: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])


def _builder(subject: str, issuer: str, key: ec.EllipticCurvePrivateKey) -> x509.CertificateBuilder:
    now = dt.datetime.now(dt.UTC)
    return (x509.CertificateBuilder().subject_name(_name(subject)).issuer_name(_name(issuer))
            .public_key(key.public_key()).serial_number(x509.random_serial_number())
            .not_valid_before(now - dt.timedelta(minutes=5)).not_valid_after(now + VALID))


def _alt_names(host: str) -> x509.SubjectAlternativeName:
    ips = {"127.0.0.1", "::1"}
    names: list[x509.GeneralName] = [x509.DNSName("localhost")]
    try:
        ips.add(str(ipaddress.ip_address(host)))
    except ValueError:
        names.append(x509.DNSName(host))
    names += [x509.IPAddress(ipaddress.ip_address(ip)) for ip in sorted(ips)]
    return x509.SubjectAlternativeName(names)


def _pem(cert: x509.Certificate) -> bytes:
    return cert.public_bytes(serialization.Encoding.PEM)


def _write(path: str, data: bytes) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as fh:
        fh.write(data)


def _issue(data_dir: str, host: str) -> None:
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca = (_builder("devcluster-ca", "devcluster-ca", ca_key)
          .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
          .sign(ca_key, hashes.SHA256()))
    key = ec.generate_private_key(ec.SECP256R1())
    cert = (_builder("devcluster", "devcluster-ca", key)
            .add_extension(_alt_names(host), critical=False)
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .sign(ca_key, hashes.SHA256()))
    _write(os.path.join(data_dir, KEY_FILE), key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption()))
    _write(os.path.join(data_dir, CERT_FILE), _pem(cert))
    _write(os.path.join(data_dir, CA_FILE), _pem(ca))


def serving(data_dir: str, host: str) -> Serving:
    """The data directory's TLS files, issued on first use (or for a new listen host)."""
    files = Serving(*(os.path.join(data_dir, f) for f in (CA_FILE, CERT_FILE, KEY_FILE)))
    if not all(os.path.exists(f) for f in (files.ca, files.cert, files.key)) or not _covers(
            files.cert, host):
        _issue(data_dir, host)
    return files


def _covers(cert_path: str, host: str) -> bool:
    with open(cert_path, "rb") as fh:
        cert = x509.load_pem_x509_certificate(fh.read())
    alt = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    try:
        return ipaddress.ip_address(host) in alt.get_values_for_type(x509.IPAddress)
    except ValueError:
        return host in alt.get_values_for_type(x509.DNSName)
