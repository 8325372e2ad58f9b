"""Verify what you install (issue 11), end to end: cosign signatures through ImageConfig.

Packages are signed with ``lockwright xpkg sign`` (cosign's format) and pushed to the real
registry; an ImageConfig names the public key's Secret. A package that verifies installs;
every way of not verifying refuses it before anything of it is fetched: Installed=False/
UnpackingPackage with ``cannot unpack package: signature verification failed: authority
"<name>": <reason>``, an Event, no revision, nothing in the worker's cache, no CRD.
"""

from __future__ import annotations

import base64
import json
import subprocess
import sys
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec
from kubernetes import client

from tests.e2e.test_failures import SYSTEM_NAMESPACE, crd_exists, provider_dir, unique_group
from tests.fixtures.stack import PKG_GROUP, ROOT, Stack
from tests.helpers import unique, wait_for

Obj = dict[str, Any]
INDEX = "application/vnd.oci.image.index.v1+json"


class Keys:
    """An ECDSA P-256 key pair as cosign makes them: the private key file and the public PEM."""

    def __init__(self, tmp: Path) -> None:
        key = ec.generate_private_key(ec.SECP256R1())
        self.private = tmp / f"{unique('cosign')}.key"
        self.private.write_bytes(key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption()))
        self.public = key.public_key().public_bytes(
            serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)


def xpkg(stack: Stack, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "lockwright", "xpkg", *args,
                           "--insecure-registry", stack.registry_host],
                          capture_output=True, text=True, timeout=120, cwd=ROOT,
                          env={**stack.env, "COSIGN_PASSWORD": ""})


def sign(stack: Stack, keys: Keys, ref: str) -> None:
    done = xpkg(stack, "sign", "--key", str(keys.private), ref)
    assert done.returncode == 0, done.stderr


def key_secret(stack: Stack, keys: Keys) -> str:
    name = unique("cosign-pub")
    client.CoreV1Api(stack.api).create_namespaced_secret(SYSTEM_NAMESPACE, {
        "metadata": {"name": name},
        "data": {"cosign.pub": base64.b64encode(keys.public).decode()}})
    return name


@pytest.fixture
def verifying(stack: Stack) -> Iterator[list[str]]:
    """ImageConfigs made by the test, deleted after it."""
    made: list[str] = []
    yield made
    for name in made:
        stack.custom.delete_cluster_custom_object(PKG_GROUP, "v1beta1", "imageconfigs", name)


def image_config(stack: Stack, made: list[str], prefix: str, *authorities: Obj) -> str:
    name = unique("verify")
    stack.custom.create_cluster_custom_object(PKG_GROUP, "v1beta1", "imageconfigs", {
        "apiVersion": "pkg.crossplane.io/v1beta1", "kind": "ImageConfig",
        "metadata": {"name": name},
        "spec": {"matchImages": [{"type": "Prefix", "prefix": prefix}],
                 "verification": {"provider": "Cosign",
                                  "cosign": {"authorities": list(authorities)}}}})
    made.append(name)
    return name


def key_authority(name: str, secret: str) -> Obj:
    return {"name": name, "key": {"secretRef": {"name": secret, "key": "cosign.pub"},
                                  "hashAlgorithm": "sha256"}}


def package(stack: Stack, tmp: Path, repo: str, tag: str = "v1.0.0") -> tuple[str, str]:
    """Push a one-CRD Provider; its reference and its CRD's name."""
    group = unique_group()
    ref = stack.push(provider_dir(tmp / unique("p"), group), repo=repo, tag=tag)
    return ref, f"gadgets.{group}"


def refused(stack: Stack, name: str, reason: str) -> str:
    """Wait for the refusal; check nothing of the package was made or cached."""
    def said() -> str | None:
        conds = stack.conditions("Provider", name)
        installed = conds.get("Installed", {})
        message = str(installed.get("message", ""))
        ok = installed.get("reason") == "UnpackingPackage" and reason in message
        return message if ok else None
    message = wait_for(said, timeout=60, interval=0.2, what=f"{name} refused: {reason}")
    assert message.startswith("cannot unpack package: signature verification failed: "), message
    # Crossplane's words for it, on the package ...
    verified = stack.conditions("Provider", name)["Verified"]
    assert (verified["status"], verified["reason"]) == ("False", "SignatureVerificationFailed")
    assert verified["message"].startswith("Signature verification failed using ImageConfig "
                                          "named "), verified
    reasons = message.removeprefix("cannot unpack package: signature verification failed: ")
    assert reasons.split(" (retrying in ")[0] in verified["message"], verified
    # ... and on the digest's revision, made Inactive as Crossplane makes it, held there:
    # nothing of it established (the callers check that nothing was fetched or made).
    [rev] = stack.revisions("Provider", name)
    held = {x["type"]: x for x in rev["status"]["conditions"]}
    assert rev["spec"]["desiredState"] == "Inactive"
    assert (held["Verified"]["status"], held["Verified"]["reason"]) == (
        "False", "SignatureVerificationFailed"), held
    assert held["Verified"]["message"] == verified["message"]
    assert (held["RevisionHealthy"]["status"], held["RevisionHealthy"]["reason"]) == (
        "False", "AwaitingSignatureVerification"), held
    assert "objectRefs" not in rev["status"], rev["status"]
    events = client.CoreV1Api(stack.api).list_event_for_all_namespaces(
        field_selector=f"involvedObject.name={name}").items
    assert any(e.reason == "UnpackPackage" and "signature verification failed" in e.message
               for e in events)
    return message


def not_cached(stack: Stack, ref: str) -> bool:
    from lockwright.oci.client import RegistryClient
    from lockwright.oci.reference import parse

    digest = RegistryClient(insecure=[stack.registry_host]).resolve(parse(ref))
    return not (stack.state / "cache" / digest.removeprefix("sha256:")).exists()


# --- the tests -------------------------------------------------------------------------
def test_signed_package_installs_with_the_matching_key(stack: Stack, tmp_path: Path,
                                                       verifying: list[str]) -> None:
    keys, repo = Keys(tmp_path), unique("signed")
    ref, crd = package(stack, tmp_path, repo)
    sign(stack, keys, ref)
    config = image_config(stack, verifying, f"{stack.registry_host}/{repo}",
                          key_authority("release-key", key_secret(stack, keys)))
    name = unique("signed")
    stack.apply_package("Provider", name, ref)
    stack.wait_healthy("Provider", name)
    pkg = stack.get_package("Provider", name) or {}
    assert {"name": config, "reason": "VerifyImage"} in pkg["status"]["appliedImageConfigRefs"]
    verified = stack.conditions("Provider", name)["Verified"]
    assert (verified["status"], verified["reason"]) == ("True", "SignatureVerificationSucceeded")
    assert 'authority "release-key"' in verified["message"]
    assert verified["message"].startswith(
        f'Signature verification succeeded using ImageConfig named "{config}": ')
    # The revision carries it too, as Crossplane's revisions do.
    [rev] = stack.revisions("Provider", name)
    on_rev = next(x for x in rev["status"]["conditions"] if x["type"] == "Verified")
    assert (on_rev["status"], on_rev["reason"], on_rev["message"]) == (
        "True", "SignatureVerificationSucceeded", verified["message"])
    assert crd_exists(stack, crd) is not None
    # The worker's cache records who verified the digest, under this policy and key.
    records = [json.loads(p.read_text())
               for p in (stack.state / "cache" / ".verified").iterdir()]
    assert any(r["digest"] == digest_of(stack, ref) and r["authority"] == "release-key"
               for r in records), records


def copy_signature(stack: Stack, repo: str, signed: str, onto: str,
                   tamper: bool = False) -> None:
    """Put the ``.sig`` manifest of digest ``signed`` under digest ``onto``'s sig tag.

    With ``tamper`` the payload blob is altered (the signature annotation kept).
    """
    base = f"http://{stack.registry_host}/v2/{repo}"
    accept = "application/vnd.oci.image.manifest.v1+json"
    request = urllib.request.Request(f"{base}/manifests/{signed.replace(':', '-')}.sig",
                                     headers={"Accept": accept})
    with urllib.request.urlopen(request, timeout=30) as resp:
        manifest = json.loads(resp.read())
        media_type = resp.headers["Content-Type"]
    if tamper:
        layer = manifest["layers"][0]
        with urllib.request.urlopen(f"{base}/blobs/{layer['digest']}", timeout=30) as resp:
            payload = json.loads(resp.read())
        payload["optional"] = {"tampered": "yes"}
        data = json.dumps(payload).encode()
        layer["digest"], layer["size"] = push_blob(base, data), len(data)
    put = urllib.request.Request(f"{base}/manifests/{onto.replace(':', '-')}.sig",
                                 data=json.dumps(manifest).encode(), method="PUT",
                                 headers={"Content-Type": media_type})
    urllib.request.urlopen(put, timeout=30).close()


def push_blob(base: str, data: bytes) -> str:
    import hashlib

    digest = "sha256:" + hashlib.sha256(data).hexdigest()
    start = urllib.request.Request(f"{base}/blobs/uploads/", method="POST")
    with urllib.request.urlopen(start, timeout=30) as resp:
        location = resp.headers["Location"]
    sep = "&" if "?" in location else "?"
    url = location if location.startswith("http") else f"http://{base.split('/')[2]}{location}"
    put = urllib.request.Request(f"{url}{sep}digest={digest}", data=data, method="PUT",
                                 headers={"Content-Type": "application/octet-stream"})
    urllib.request.urlopen(put, timeout=30).close()
    return digest


def digest_of(stack: Stack, ref: str) -> str:
    from lockwright.oci.client import RegistryClient
    from lockwright.oci.reference import parse

    return RegistryClient(insecure=[stack.registry_host]).resolve(parse(ref))


@pytest.mark.parametrize("case", ["unsigned", "wrong key", "another digest", "tampered",
                                  "no secret", "no key in secret", "keyless", "md5"])
def test_every_way_of_not_verifying_is_refused_before_anything_is_fetched(
        stack: Stack, tmp_path: Path, verifying: list[str], case: str) -> None:
    keys, other, repo = Keys(tmp_path), Keys(tmp_path), unique("refused")
    ref, crd = package(stack, tmp_path, repo)
    secret = key_secret(stack, keys)
    authority = key_authority("release-key", secret)
    reason = {"unsigned": "no signatures found", "wrong key": "does not verify",
              "another digest": "payload is for", "tampered": "does not verify",
              "no secret": "the Secret does not exist", "no key in secret": "no such key",
              "keyless": "offline verifier", "md5": "hash algorithm 'md5'"}[case]
    if case == "wrong key":
        sign(stack, other, ref)
    elif case in ("another digest", "tampered"):
        decoy, _ = package(stack, tmp_path, repo, tag="v0.9.0")
        sign(stack, keys, decoy if case == "another digest" else ref)
        copy_signature(stack, repo, digest_of(stack, decoy if case == "another digest"
                                              else ref), digest_of(stack, ref),
                       tamper=case == "tampered")
    elif case != "unsigned":
        sign(stack, keys, ref)
    if case == "no secret":
        authority["key"]["secretRef"]["name"] = unique("missing")
    elif case == "no key in secret":
        authority["key"]["secretRef"]["key"] = "other.pub"
    elif case == "keyless":
        authority = {"name": "release-key", "keyless": {"identities": [
            {"issuer": "https://accounts.example.org", "subject": "ci@example.org"}]}}
    elif case == "md5":
        authority["key"]["hashAlgorithm"] = "md5"
    image_config(stack, verifying, f"{stack.registry_host}/{repo}", authority)
    name = unique("refused")
    stack.apply_package("Provider", name, ref)
    message = refused(stack, name, reason)
    assert 'authority "release-key": ' in message, message
    assert not_cached(stack, ref)
    assert crd_exists(stack, crd) is None


def test_the_first_authority_that_passes_wins(stack: Stack, tmp_path: Path,
                                             verifying: list[str]) -> None:
    keys, other, repo = Keys(tmp_path), Keys(tmp_path), unique("second")
    ref, _ = package(stack, tmp_path, repo)
    sign(stack, keys, ref)
    image_config(stack, verifying, f"{stack.registry_host}/{repo}",
                 key_authority("old-key", key_secret(stack, other)),
                 key_authority("new-key", key_secret(stack, keys)))
    name = unique("second")
    stack.apply_package("Provider", name, ref)
    stack.wait_healthy("Provider", name)
    assert 'authority "new-key"' in stack.conditions("Provider", name)["Verified"]["message"]


def test_a_signature_pushed_later_heals_the_package(stack: Stack, tmp_path: Path,
                                                   verifying: list[str]) -> None:
    keys, repo = Keys(tmp_path), unique("later")
    ref, _ = package(stack, tmp_path, repo)
    image_config(stack, verifying, f"{stack.registry_host}/{repo}",
                 key_authority("release-key", key_secret(stack, keys)))
    name = unique("later")
    stack.apply_package("Provider", name, ref)
    refused(stack, name, "no signatures found")
    [held] = stack.revisions("Provider", name)
    sign(stack, keys, ref)
    stack.wait_healthy("Provider", name, timeout=90)  # the retry backoff finds it
    # The revision held for the refused digest is the one that now runs, verified.
    [rev] = stack.revisions("Provider", name)
    assert rev["metadata"]["uid"] == held["metadata"]["uid"]
    assert rev["spec"]["desiredState"] == "Active"
    now = {x["type"]: x for x in rev["status"]["conditions"]}
    assert (now["Verified"]["status"], now["Verified"]["reason"]) == (
        "True", "SignatureVerificationSucceeded")
    assert (now["RevisionHealthy"]["status"], now["RevisionHealthy"]["reason"]) == (
        "True", "HealthyPackageRevision")


def attest(stack: Stack, keys: Keys, ref: str, predicate_type: str) -> None:
    """Attach an in-toto attestation signed by ``keys``, as ``cosign attest --key`` does."""
    from lockwright.images.cosign import attest_image, load_private_key
    from lockwright.oci.client import RegistryClient
    from lockwright.oci.reference import parse

    registry = RegistryClient(insecure=[stack.registry_host])
    attest_image(registry, parse(ref), digest_of(stack, ref),
                 load_private_key(keys.private.read_bytes(), None), predicate_type,
                 {"builder": {"id": "https://ci.example.org"}})


@pytest.mark.parametrize(("attested", "installs"), [("slsaprovenance", True),
                                                    ("spdxjson", False)])
def test_an_authority_with_attestations_requires_them(
        stack: Stack, tmp_path: Path, verifying: list[str], attested: str,
        installs: bool) -> None:
    keys, repo = Keys(tmp_path), unique("attested")
    ref, crd = package(stack, tmp_path, repo)
    attest(stack, keys, ref, attested)
    authority = key_authority("provenance-key", key_secret(stack, keys))
    authority["attestations"] = [{"name": "provenance", "predicateType": "slsaprovenance"}]
    image_config(stack, verifying, f"{stack.registry_host}/{repo}", authority)
    name = unique("attested")
    stack.apply_package("Provider", name, ref)
    if installs:
        stack.wait_healthy("Provider", name)
        assert "attestation https://slsa.dev/provenance" in stack.conditions(
            "Provider", name)["Verified"]["message"]
    else:
        refused(stack, name, "no attestation of predicate type https://slsa.dev/provenance")
        assert crd_exists(stack, crd) is None


def test_verification_turned_off_installs_and_says_it_was_not_verified(
        stack: Stack, tmp_path: Path, verifying: list[str]) -> None:
    keys, repo = Keys(tmp_path), unique("unverified")
    ref, _ = package(stack, tmp_path, repo)  # not signed at all
    image_config(stack, verifying, f"{stack.registry_host}/{repo}",
                 key_authority("release-key", key_secret(stack, keys)))
    stack.restart_worker(LOCKWRIGHT_SIGNATURE_VERIFICATION="false")
    try:
        name = unique("unverified")
        stack.apply_package("Provider", name, ref)
        stack.wait_healthy("Provider", name)
        verified = stack.conditions("Provider", name)["Verified"]
        assert (verified["status"], verified["reason"]) == ("False", "SignatureVerificationSkipped")
        assert "was not verified" in verified["message"]
        assert "LOCKWRIGHT_SIGNATURE_VERIFICATION=false" in verified["message"]
        events = client.CoreV1Api(stack.api).list_event_for_all_namespaces(
            field_selector=f"involvedObject.name={name}").items
        assert any(e.type == "Warning" and e.reason == "VerifyImage"
                   and "was not verified" in e.message for e in events)
    finally:
        stack.restart_worker(LOCKWRIGHT_SIGNATURE_VERIFICATION="true")
