"""``python -m lockwright xpkg generate-key-pair | sign | verify`` as a user runs them."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers import unique
from tests.oci_images import PROVIDER_YAML, Layer, package_layer, push_image

pytestmark = pytest.mark.registry
ROOT = Path(__file__).resolve().parents[2]
VECTORS = ROOT / "tests" / "fixtures" / "cosign"


def xpkg(*args: str, cwd: Path = ROOT,
         env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    base = {k: v for k, v in os.environ.items() if k != "COSIGN_PASSWORD"}
    return subprocess.run([sys.executable, "-m", "lockwright", "xpkg", *args], cwd=cwd,
                          capture_output=True, text=True, timeout=120, check=False,
                          stdin=subprocess.DEVNULL,
                          env={**base, "DOCKER_CONFIG": "/nonexistent",
                               "PYTHONPATH": str(ROOT), **(env or {})})


@pytest.fixture
def keys(tmp_path: Path) -> Path:
    made = xpkg("generate-key-pair", cwd=tmp_path, env={"COSIGN_PASSWORD": "pw"})
    assert made.returncode == 0, made.stderr
    assert made.stdout.splitlines() == ["Private key written to cosign.key",
                                        "Public key written to cosign.pub"]
    return tmp_path


@pytest.fixture
def ref(registry) -> str:  # type: ignore[no-untyped-def]
    repo = f"cosign/{unique('cli')}"
    push_image(registry.host, repo, "v1.0.0", [Layer(package_layer(PROVIDER_YAML))])
    return f"{registry.host}/{repo}:v1.0.0"


def test_generated_key_pair_is_cosigns_format(keys: Path) -> None:
    private = (keys / "cosign.key").read_text()
    assert private.startswith("-----BEGIN ENCRYPTED SIGSTORE PRIVATE KEY-----\n")
    assert stat.S_IMODE((keys / "cosign.key").stat().st_mode) & 0o077 == 0
    assert (keys / "cosign.pub").read_text().startswith("-----BEGIN PUBLIC KEY-----\n")
    again = xpkg("generate-key-pair", cwd=keys, env={"COSIGN_PASSWORD": "pw"})
    assert again.returncode == 1 and "exists; refusing to overwrite it" in again.stderr
    nopass = xpkg("generate-key-pair", "--output-key-prefix", "other", cwd=keys)
    assert nopass.returncode == 1 and "set COSIGN_PASSWORD" in nopass.stderr


def test_sign_then_verify_by_tag_and_digest(keys: Path, ref: str, registry) -> None:  # type: ignore[no-untyped-def]
    common = ["--insecure-registry", registry.host]
    signed = xpkg("sign", "--key", str(keys / "cosign.key"), "-a", "team=platform", ref, *common,
                  env={"COSIGN_PASSWORD": "pw"})
    assert signed.returncode == 0, signed.stderr
    signature_ref = signed.stdout.strip()
    tag = signature_ref.split(":", 2)[-1].split("@")[0]
    assert tag.startswith("sha256-") and tag.endswith(".sig")
    digest = "sha256:" + tag[len("sha256-"):-len(".sig")]

    for target in (ref, ref.rsplit(":", 1)[0] + "@" + digest):
        verified = xpkg("verify", "--key", str(keys / "cosign.pub"), target, *common)
        assert verified.returncode == 0, verified.stderr
        assert verified.stdout.strip() == (
            f"verified {ref.rsplit(':', 1)[0]}@{digest}: signature tag {tag} "
            f"(key {keys / 'cosign.pub'})")


def test_verify_refusals_exit_non_zero_with_the_reason(keys: Path, ref: str, registry) -> None:  # type: ignore[no-untyped-def]
    common = ["--insecure-registry", registry.host]
    unsigned = xpkg("verify", "--key", str(keys / "cosign.pub"), ref, *common)
    assert unsigned.returncode == 1
    assert "error: SignatureError: authority" in unsigned.stderr
    assert "no signatures found (looked for tag sha256-" in unsigned.stderr

    assert xpkg("sign", "--key", str(keys / "cosign.key"), ref, *common,
                env={"COSIGN_PASSWORD": "pw"}).returncode == 0
    stranger = VECTORS / "containers-image" / "cosign.pub"
    wrong = xpkg("verify", "--key", str(stranger), ref, *common)
    assert wrong.returncode == 1
    assert wrong.stderr.strip() == (f'error: SignatureError: authority "{stranger}": signature '
                                    "does not verify with the public key")
    attested = xpkg("verify", "--key", str(keys / "cosign.pub"), "--attestation",
                    "slsaprovenance", ref, *common)
    assert attested.returncode == 1
    assert "no attestation of predicate type https://slsa.dev/provenance/v0.2" in attested.stderr
    badhash = xpkg("verify", "--key", str(keys / "cosign.pub"), "--signature-digest-algorithm",
                   "md5", ref, *common)
    assert badhash.returncode == 1 and "unsupported hash algorithm 'md5'" in badhash.stderr


def test_sign_refusals(keys: Path, ref: str, registry) -> None:  # type: ignore[no-untyped-def]
    common = ["--insecure-registry", registry.host]
    wrong = xpkg("sign", "--key", str(keys / "cosign.key"), ref, *common,
                 env={"COSIGN_PASSWORD": "nope"})
    assert wrong.returncode == 1
    assert "cannot decrypt the private key: wrong password" in wrong.stderr
    missing = xpkg("sign", "--key", str(keys / "absent.key"), ref, *common)
    assert missing.returncode == 1 and "cannot read key file" in missing.stderr
    gone = xpkg("sign", "--key", str(keys / "cosign.key"), ref.replace("v1.0.0", "v9"), *common,
                env={"COSIGN_PASSWORD": "pw"})
    assert gone.returncode == 1 and "PackageNotFound" in gone.stderr


def test_a_plain_pem_key_signs_too(ref: str, registry, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    plain = VECTORS / "cosign" / "keys_test" / "validecp256.key"
    common = ["--insecure-registry", registry.host]
    assert xpkg("sign", "--key", str(plain), ref, *common).returncode == 0
    from cryptography.hazmat.primitives import serialization

    key = serialization.load_pem_private_key(plain.read_bytes(), None)
    (tmp_path / "p.pub").write_bytes(key.public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo))
    verified = xpkg("verify", "--key", str(tmp_path / "p.pub"), ref, *common)
    assert verified.returncode == 0, verified.stderr
    assert verified.stdout.startswith("verified ")
