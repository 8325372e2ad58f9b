"""The real cosign as the signer (issue 30): lockwright accepts what cosign signed and
refuses what it did not.

cosign (github.com/sigstore/cosign/v2, built from its pinned module by
scripts/build-cosign.sh) makes its own key pairs and signs with ``cosign sign --key``,
offline (no transparency log), into the test registry; an ImageConfig names the public
key's Secret. A package cosign signed installs, Verified; one it did not sign, or signed
with another key, is refused before anything of it is fetched. A package index cosign
signed is read by ``search``; one signed with another key is refused. ``cosign attest
--key`` attaches SLSA provenance v1 and SPDX statements: a package with both installs under
an authority requiring both; a missing one, one of another predicate type and one signed
by another key are each refused with the reason.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace

import pytest

from tests.e2e.test_package_index import lockwright, output, publish
from tests.e2e.test_verification import (
    Keys,
    digest_of,
    image_config,
    key_authority,
    key_secret,
    not_cached,
    package,
    refused,
    verifying,  # noqa: F401 - the fixture
)
from tests.fixtures.cosign import Cosign, build
from tests.fixtures.stack import Stack
from tests.helpers import unique


@pytest.fixture(scope="session")
def cosign_binary() -> Path:
    """cosign, built once (cached across sessions by its module's go.mod and go.sum)."""
    return build()


@pytest.fixture
def cosign(cosign_binary: Path, tmp_path: Path) -> Iterator[Cosign]:
    home = tmp_path / "cosign-home"
    home.mkdir()
    yield Cosign(cosign_binary, home)


def secret_of(stack: Stack, public: bytes) -> str:
    """A Secret of the system namespace holding ``public`` as ``cosign.pub``."""
    return key_secret(stack, SimpleNamespace(public=public))  # type: ignore[arg-type]


def by_digest(stack: Stack, ref: str) -> str:
    return f"{ref.rsplit(':', 1)[0]}@{digest_of(stack, ref)}"


def test_a_package_cosign_signed_installs_verified(
        stack: Stack, tmp_path: Path, cosign: Cosign, verifying: list[str]) -> None:  # noqa: F811
    key, public = cosign.key_pair("release")
    repo = unique("cosigned")
    ref, _ = package(stack, tmp_path, repo)
    cosign.sign(key, by_digest(stack, ref))
    image_config(stack, verifying, f"{stack.registry_host}/{repo}",
                 key_authority("release-key", secret_of(stack, public)))
    name = unique("cosigned")
    stack.apply_package("Provider", name, ref)
    stack.wait_healthy("Provider", name)
    verified = stack.conditions("Provider", name)["Verified"]
    assert (verified["status"], verified["reason"]) == ("True", "SignatureVerificationSucceeded"), verified
    assert 'authority "release-key"' in verified["message"]


@pytest.mark.parametrize("case", ["unsigned", "another key"])
def test_a_package_cosign_did_not_sign_with_the_key_is_refused(
        stack: Stack, tmp_path: Path, cosign: Cosign, verifying: list[str],  # noqa: F811
        case: str) -> None:
    key, public = cosign.key_pair("release")
    other, _ = cosign.key_pair("other")
    repo = unique("uncosigned")
    ref, _ = package(stack, tmp_path, repo)
    if case == "another key":
        cosign.sign(other, by_digest(stack, ref))
    image_config(stack, verifying, f"{stack.registry_host}/{repo}",
                 key_authority("release-key", secret_of(stack, public)))
    name = unique("uncosigned")
    stack.apply_package("Provider", name, ref)
    reason = {"unsigned": "no signatures found", "another key": "does not verify"}[case]
    message = refused(stack, name, reason)
    assert 'authority "release-key": ' in message, message
    assert not_cached(stack, ref)


PROVENANCE = {"buildDefinition": {"buildType": "https://example.org/build/v1",
                                  "externalParameters": {}},
              "runDetails": {"builder": {"id": "https://ci.example.org"}}}
SPDX = {"spdxVersion": "SPDX-2.3", "SPDXID": "SPDXRef-DOCUMENT", "name": "provider",
        "dataLicense": "CC0-1.0", "documentNamespace": "https://example.org/spdx/1"}
SLSA_V1, SPDX_TYPE = "https://slsa.dev/provenance/v1", "https://spdx.dev/Document"


@pytest.mark.parametrize("case", ["signed", "another key", "attested", "not attested"])
def test_an_index_cosign_signed_is_read_and_one_signed_with_another_key_refused(
        stack: Stack, tmp_path: Path, cosign: Cosign, verifying: list[str],  # noqa: F811
        case: str) -> None:
    """An index cosign signed (or attested: `cosign attest --key` over the index) is read;
    one signed with another key, or not attested where the authority asks, is refused."""
    key, public = cosign.key_pair("index")
    other, _ = cosign.key_pair("other")
    published = publish(stack, tmp_path, Keys(tmp_path), sign_index=False)
    target = by_digest(stack, published.index)
    if case == "attested":
        cosign.attest(key, target, "slsaprovenance1", PROVENANCE)
    else:
        cosign.sign(key if case != "another key" else other, target)
    authority = key_authority("index-key", secret_of(stack, public))
    if case in ("attested", "not attested"):
        authority["attestations"] = [{"name": "provenance",
                                      "predicateType": "slsaprovenance1"}]
    image_config(stack, verifying, published.index.rpartition(":")[0], authority)
    found = lockwright(stack, "search", "widget", indexes=published.index)
    if case in ("signed", "attested"):
        assert found.returncode == 0, output(found)
        assert published.repos["a"] in found.stdout, output(found)
        return
    assert found.returncode == 1, output(found)
    assert 'authority "index-key": ' in found.stderr and "refused" in found.stderr, \
        output(found)
    if case == "not attested":
        assert f"no attestation of predicate type {SLSA_V1}" in found.stderr, output(found)


@pytest.mark.parametrize("case", ["both", "missing", "another type", "another key"])
def test_attestations_cosign_made_are_required_as_the_authority_lists_them(
        stack: Stack, tmp_path: Path, cosign: Cosign, verifying: list[str],  # noqa: F811
        case: str) -> None:
    key, public = cosign.key_pair("attest")
    other, _ = cosign.key_pair("other")
    repo = unique("attested")
    ref, _ = package(stack, tmp_path, repo)
    target = by_digest(stack, ref)
    cosign.attest(other if case == "another key" else key, target, "slsaprovenance1",
                  PROVENANCE)
    if case in ("both", "another key"):
        cosign.attest(key, target, "spdxjson", SPDX)
    if case == "another type":
        cosign.attest(key, target, "cyclonedx", {"bomFormat": "CycloneDX"})
    authority = key_authority("release-key", secret_of(stack, public))
    authority["attestations"] = [{"name": "provenance", "predicateType": "slsaprovenance1"},
                                 {"name": "sbom", "predicateType": "spdxjson"}]
    image_config(stack, verifying, f"{stack.registry_host}/{repo}", authority)
    name = unique("attested")
    stack.apply_package("Provider", name, ref)
    if case == "both":
        stack.wait_healthy("Provider", name)
        message = stack.conditions("Provider", name)["Verified"]["message"]
        assert f"attestation {SLSA_V1}" in message and f"attestation {SPDX_TYPE}" in \
            message, message
        return
    wanted = SLSA_V1 if case == "another key" else SPDX_TYPE
    message = refused(stack, name, f"no attestation of predicate type {wanted}")
    if case == "another key":
        assert "does not verify" in message, message
    assert not_cached(stack, ref)
