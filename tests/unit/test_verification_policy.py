"""What an ImageConfig's verification block asks, read into plain data, failing closed."""

from __future__ import annotations

from typing import Any

import pytest

from lockwright.errors import VerificationFailed
from lockwright.images.verification import MSG_KEYLESS, Authority, failed, policy

Obj = dict[str, Any]
KEY = {"secretRef": {"name": "cosign-pub", "key": "cosign.pub"}}


def image_config(name: str, prefix: str, verification: Obj | None) -> Obj:
    spec: Obj = {"matchImages": [{"type": "Prefix", "prefix": prefix}]}
    if verification is not None:
        spec["verification"] = verification
    return {"metadata": {"name": name}, "spec": spec}


def cosign(*authorities: Obj) -> Obj:
    return {"provider": "Cosign", "cosign": {"authorities": list(authorities)}}


def test_no_imageconfig_verifies_means_no_policy() -> None:
    configs = [image_config("pull-only", "xpkg.example.org/", None)]
    assert policy(configs, "xpkg.example.org/acme/p:v1") is None


def test_longest_prefix_with_verification_wins_and_authorities_keep_their_order() -> None:
    configs = [image_config("broad", "xpkg.example.org/", cosign({"name": "a", "key": KEY})),
               image_config("narrow", "xpkg.example.org/acme/",
                            cosign({"name": "first", "key": KEY},
                                   {"name": "second", "key": {**KEY, "hashAlgorithm": "SHA512"},
                                    "attestations": [{"name": "prov",
                                                      "predicateType": "slsaprovenance"}]}))]
    found = policy(configs, "xpkg.example.org/acme/p:v1")
    assert found is not None and found.image_config == "narrow"
    assert found.authorities == (
        Authority("first", "cosign-pub", "cosign.pub", "sha256"),
        Authority("second", "cosign-pub", "cosign.pub", "sha512", (("prov", "slsaprovenance"),)))


@pytest.mark.parametrize(("raw", "problem"), [
    ({"name": "k", "keyless": {"identities": [{"issuer": "x", "subject": "y"}]}}, MSG_KEYLESS),
    ({"name": "k"}, "neither key nor keyless is given"),
    ({"name": "k", "key": {"secretRef": {"name": "s"}}}, "key.secretRef needs name and key"),
    ({"name": "k", "key": {**KEY, "hashAlgorithm": "md5"}}, "hash algorithm 'md5' is not one"),
    ({"name": "k", "key": {**KEY, "kms": "gcp://x"}}, "unsupported key fields kms"),
    ({"name": "k", "key": KEY, "ctlog": {}}, "unsupported fields ctlog"),
    ({"name": "k", "key": KEY, "attestations": [{"name": "a"}]},
     "every attestation needs a predicateType"),
])
def test_what_lockwright_cannot_check_is_an_authority_that_cannot_pass(raw: Obj,
                                                                      problem: str) -> None:
    found = policy([image_config("v", "x.io/", cosign(raw))], "x.io/p:v1")
    assert found is not None
    assert found.authorities[0].problem.startswith(problem)


@pytest.mark.parametrize(("verification", "message"), [
    ({"provider": "Notation"}, "verification provider 'Notation' is not supported"),
    ({"provider": "Cosign"}, "cosign verification config is missing"),
    ({"provider": "Cosign", "cosign": {"authorities": []}}, "no authorities given"),
])
def test_a_block_that_cannot_be_used_fails_the_package(verification: Obj, message: str) -> None:
    with pytest.raises(VerificationFailed) as err:
        policy([image_config("strict", "x.io/", verification)], "x.io/p:v1")
    assert err.value.message.startswith('signature verification failed: ImageConfig "strict": ')
    assert message in err.value.message


def test_the_failure_names_every_authority_in_order() -> None:
    err = failed([("a", "no signatures found"), ("b", "signature does not verify")])
    assert err.message == ('signature verification failed: authority "a": no signatures '
                           'found; authority "b": signature does not verify')
    assert err.retryable  # a signature pushed, or a key fixed, later heals it


def test_the_fingerprint_changes_with_the_policy_and_the_key() -> None:
    configs = [image_config("v", "x.io/", cosign({"name": "a", "key": KEY}))]
    found = policy(configs, "x.io/p:v1")
    assert found is not None
    one = found.fingerprint({"a": b"key one"})
    assert one == found.fingerprint({"a": b"key one"})
    assert one != found.fingerprint({"a": b"key two"})
    other = policy([image_config("w", "x.io/", cosign({"name": "a", "key": KEY}))], "x.io/p")
    assert other is not None and other.fingerprint({"a": b"key one"}) != one
