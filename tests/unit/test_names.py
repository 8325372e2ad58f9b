"""Names: ToDNSLabel, FriendlyID/revision names, TLS secret names, references."""

from __future__ import annotations

import pytest

from lockwright import names

DIGEST = "sha256:552a394a8acc0123456789abcdef0123456789abcdef0123456789abcdef0123"


@pytest.mark.parametrize(("text", "want"), [
    ("provider-nop", "provider-nop"),
    ("crossplane-contrib/provider-nop", "crossplane-contrib-provider-nop"),
    ("xpkg.upbound.io/a:b", "xpkg-upbound-io-a-b"),
    ("Provider_AWS", "rovider"),  # uppercase and "_" are dropped, not lowered
    ("-leading/", "leading"),  # separators at index 0 and at the end vanish
    ("a..b", "a--b"),
    ("é-x", "x"),  # non-ASCII dropped; "-" sits at byte offset 2, not 0
    ("a" * 70, "a" * 63),  # stops after byte offset 62
    ("a" * 62 + "-b", "a" * 62),  # separator at offset 62 is dropped, then the walk stops
])
def test_to_dns_label(text: str, want: str) -> None:
    assert names.to_dns_label(text) == want


# Crossplane's packageRevisionID (internal/controller/pkg/manager/reconciler.go) run in Go
# over the hex of DIGEST and generations 1 and 2.
ID_1 = "4e58db4fd34367005989a859e658053a0d0f4d74ce8762b7e98cc5816012b6de"
ID_2 = "9ae5b388429ee22fcc4c679a068435a7325802a04ea768b6334007e09ebbcc4a"


@pytest.mark.parametrize(("digest", "generation", "want"), [
    (DIGEST, 1, ID_1), (DIGEST.removeprefix("sha256:"), 1, ID_1), (DIGEST, 2, ID_2)])
def test_revision_id_is_crossplanes(digest: str, generation: int, want: str) -> None:
    assert names.revision_id(digest, generation) == want


@pytest.mark.parametrize(("package", "digest", "generation", "want"), [
    ("provider-nop", DIGEST, 1, "provider-nop-4e58db4fd343"),
    ("provider-nop", DIGEST.removeprefix("sha256:"), 1, "provider-nop-4e58db4fd343"),
    ("provider-nop", DIGEST, 2, "provider-nop-9ae5b388429e"),  # a spec change: a new name
    ("p" * 60, DIGEST, 1, "p" * 50 + "-4e58db4fd343"),
])
def test_revision_name(package: str, digest: str, generation: int, want: str) -> None:
    assert names.revision_name(package, digest, generation) == want
    assert names.is_dns_label(want)
    assert names.is_revision_name_of(package, want)


@pytest.mark.parametrize(("package", "digest", "want"), [
    ("provider-nop", DIGEST, "provider-nop-552a394a8acc"),
    ("provider-nop", DIGEST.removeprefix("sha256:"), "provider-nop-552a394a8acc"),
    ("p" * 60, DIGEST, "p" * 50 + "-552a394a8acc"),
])
def test_digest_revision_name(package: str, digest: str, want: str) -> None:
    assert names.digest_revision_name(package, digest) == want
    assert names.is_dns_label(want)
    assert names.is_revision_name_of(package, want)
    assert not names.is_revision_name_of("other", want)


@pytest.mark.parametrize(("package", "server", "client"), [
    ("provider-nop", "provider-nop-tls-server", "provider-nop-tls-client"),
    ("x" * 253, "x" * 242 + "-tls-server", "x" * 242 + "-tls-client"),
])
def test_tls_secret_names(package: str, server: str, client: str) -> None:
    assert names.tls_server_secret_name(package) == server
    assert names.tls_client_secret_name(package) == client
    assert len(names.tls_server_secret_name(package)) <= 253


def test_webhook_configuration_name() -> None:
    assert names.webhook_configuration_name("Provider", "provider-nop") == \
        "crossplane-provider-provider-nop"


@pytest.mark.parametrize(("ref", "registry", "repo", "tag", "digest", "source", "version"), [
    ("xpkg.upbound.io/crossplane-contrib/provider-nop:v0.2.0", "xpkg.upbound.io",
     "crossplane-contrib/provider-nop", "v0.2.0", "",
     "xpkg.upbound.io/crossplane-contrib/provider-nop",
     "v0.2.0"),
    ("127.0.0.1:5000/org/p@" + DIGEST, "127.0.0.1:5000", "org/p", "", DIGEST,
     "127.0.0.1:5000/org/p", DIGEST),
    ("reg.io/p:v1@" + DIGEST, "reg.io", "p", "v1", DIGEST, "reg.io/p", DIGEST),
    ("localhost/p:v1", "localhost", "p", "v1", "", "localhost/p", "v1"),
    ("org/p:v1", "", "org/p", "v1", "", "org/p", "v1"),
])
def test_parse_reference(ref: str, registry: str, repo: str, tag: str, digest: str,
                         source: str, version: str) -> None:
    parsed = names.parse_reference(ref)
    assert parsed == (registry, repo, tag, digest)
    assert (parsed.source, parsed.version) == (source, version)


@pytest.mark.parametrize(("ref", "want"), [
    ("xpkg.upbound.io/crossplane-contrib/provider-nop:v0.2.0", "crossplane-contrib-provider-nop"),
    ("127.0.0.1:5000/Org/Provider-X:v1", "rg-rovider"),
])
def test_package_name_from_reference(ref: str, want: str) -> None:
    assert names.package_name_from_reference(ref) == want


@pytest.mark.parametrize(("ref", "ok"), [
    ("registry.example.com/repo/package:tag", True),
    ("registry.example.com/repo/package@" + DIGEST, True),
    ("registry.example.com/repo/package:tag@" + DIGEST, True),
    ("127.0.0.1:5000/repo/package:v1", True),
    ("localhost:5000/x:v1", False),  # registry host needs a dot
    ("registry.example.com/repo/package", False),  # no tag or digest
    ("registry.example.com:v1", False),  # no path segment
    ("crossplane/provider-nop:v1", False),
])
def test_is_fully_qualified(ref: str, ok: bool) -> None:
    assert names.is_fully_qualified(ref) is ok


@pytest.mark.parametrize(("text", "label", "subdomain"), [
    ("abc", True, True), ("a.b", False, True), ("A", False, False), ("-a", False, False),
    ("a" * 64, False, False), ("", False, False), ("a" * 63 + ".b", False, True),
])
def test_dns_checks(text: str, label: bool, subdomain: bool) -> None:
    assert names.is_dns_label(text) is label
    assert names.is_dns_subdomain(text) is subdomain


@pytest.mark.parametrize(("labels", "annotations", "want"), [
    ({"team": "a"}, {"docs": "x"}, ({"team": "a"}, {"docs": "x"})),
    ({"pkg.crossplane.io/package": "forged", "team": "a"}, {}, ({"team": "a"}, {})),
    ({}, {"lockwright.dev/api-digest": "sha256:forged",
          "lockwright.dev/controller-digest": "sha256:forged",
          "lockwright.dev/digest": "sha256:forged",
          "lockwright.dev/requires-apis": "things.example.org/v1",
          "meta.crossplane.io/maintainer": "me"},
     ({}, {"meta.crossplane.io/maintainer": "me"})),
])
def test_from_metadata_leaves_what_lockwright_owns(
        labels: dict[str, str], annotations: dict[str, str],
        want: tuple[dict[str, str], dict[str, str]]) -> None:
    assert names.from_metadata(labels, annotations) == want
