"""Image reference parsing, auth challenge parsing and Docker config credentials."""

from __future__ import annotations

import base64
import json

import pytest

from lockwright.oci.auth import DockerAuths, parse_challenge, scope_for
from lockwright.oci.reference import InvalidReference, is_fully_qualified, parse

D = "sha256:" + "ab" * 32


@pytest.mark.parametrize(("text", "registry", "repository", "tag", "digest"), [
    ("xpkg.upbound.io/crossplane-contrib/provider-nop:v0.2.1",
     "xpkg.upbound.io", "crossplane-contrib/provider-nop", "v0.2.1", None),
    ("xpkg.upbound.io/crossplane-contrib/provider-nop",
     "xpkg.upbound.io", "crossplane-contrib/provider-nop", "latest", None),
    (f"127.0.0.1:5000/a/b@{D}", "127.0.0.1:5000", "a/b", None, D),
    (f"localhost/a:v1@{D}", "localhost", "a", "v1", D),
    ("localhost:5000/a", "localhost:5000", "a", "latest", None),
    ("docker.io/nginx:1.25", "docker.io", "library/nginx", "1.25", None),
    ("ghcr.io/org/sub/repo.name_x-y:1.0.0-rc.1", "ghcr.io", "org/sub/repo.name_x-y",
     "1.0.0-rc.1", None),
])
def test_parse(text, registry, repository, tag, digest):
    ref = parse(text)
    assert (ref.registry, ref.repository, ref.tag, ref.digest) == (registry, repository, tag,
                                                                  digest)
    assert ref.identifier == (digest or tag)


@pytest.mark.parametrize("text", [
    "crossplane-contrib/provider-nop:v1",     # no registry
    "provider-nop",                           # no registry
    "xpkg.upbound.io/Upper/Case:v1",          # upper case repository
    "xpkg.upbound.io/a:b:c",                  # two tags
    "xpkg.upbound.io/a@sha256:abc",           # short digest
    "xpkg.upbound.io/a@md5:" + "0" * 32,      # other algorithm
    "xpkg.upbound.io/a:" + "t" * 129,         # tag too long
    "xpkg.upbound.io/a//b",                   # empty component
    "xpkg.upbound.io/a:-bad",                 # tag may not start with '-'
])
def test_parse_rejects(text):
    with pytest.raises(InvalidReference, match="cannot parse package reference"):
        parse(text)
    assert not is_fully_qualified(text)


def test_default_registry_and_rendering():
    ref = parse("acme/pkg", default_registry="xpkg.example.io")
    assert str(ref) == "xpkg.example.io/acme/pkg:latest"
    assert str(ref.with_digest(D)) == f"xpkg.example.io/acme/pkg:latest@{D}"
    assert ref.with_digest(D).with_tag("v2").identifier == "v2"
    assert parse("docker.io/x/y").api_host == "registry-1.docker.io"


@pytest.mark.parametrize(("header", "scheme", "params"), [
    ('Bearer realm="https://auth.example.io/token",service="registry.example.io",'
     + 'scope="repository:a/b:pull"', "bearer",
     {"realm": "https://auth.example.io/token", "service": "registry.example.io",
      "scope": "repository:a/b:pull"}),
    ('Basic realm="Registry Realm"', "basic", {"realm": "Registry Realm"}),
    ('Bearer realm=https://x/t, scope="repository:a:pull,push"', "bearer",
     {"realm": "https://x/t", "scope": "repository:a:pull,push"}),
])
def test_parse_challenge(header, scheme, params):
    challenge = parse_challenge(header)
    assert challenge.scheme == scheme and challenge.params == params


def test_scope():
    assert scope_for("a/b", push=False) == "repository:a/b:pull"
    assert scope_for("a/b", push=True) == "repository:a/b:pull,push"


def test_docker_config_forms_and_secret_hiding():
    encoded = base64.b64encode(b"bob:pa:ss").decode()
    config = {"auths": {
        "https://index.docker.io/v1/": {"auth": encoded},
        "registry.example.io": {"username": "u", "password": "p"},
        "http://127.0.0.1:5000/v2/": {"auth": encoded},
        "broken.example.io": {"auth": "!!!not base64"},
    }}
    auths = DockerAuths.from_json(json.dumps(config))
    hub = auths.for_host("registry-1.docker.io")
    assert hub is not None and (hub.username, hub.password) == ("bob", "pa:ss")
    assert auths.for_host("registry.example.io").password == "p"  # type: ignore[union-attr]
    assert auths.for_host("127.0.0.1:5000") is not None
    assert auths.for_host("broken.example.io") is None
    assert auths.for_host("other.example.io") is None
    assert "pa:ss" not in repr(hub) and "pa:ss" not in repr(auths)


def test_dockerconfigjson_secret_content_is_accepted():
    secret_value = json.dumps({"auths": {"r.example.io": {"username": "u", "password": "p"}}})
    assert DockerAuths.from_json(secret_value.encode()).for_host("r.example.io") is not None


def test_docker_config_environment(tmp_path, monkeypatch):
    (tmp_path / "config.json").write_text(json.dumps(
        {"auths": {"r.example.io": {"username": "u", "password": "p"}}}))
    monkeypatch.setenv("DOCKER_CONFIG", str(tmp_path))
    assert DockerAuths.from_environment().for_host("r.example.io") is not None
    monkeypatch.setenv("DOCKER_CONFIG", str(tmp_path / "missing"))
    assert DockerAuths.from_environment().for_host("r.example.io") is None


@pytest.mark.parametrize(("body", "message"), [
    (b"not json", "not valid JSON"),
    (b'{"schemaVersion": 2, "mediaType": "application/vnd.oci.image.manifest.v1+json",'
     + b' "config": {}, "layers": [{"digest": "md5:00", "size": 1}]}', "not sha256"),
    (b'{"schemaVersion": 2, "mediaType": "application/vnd.oci.image.manifest.v1+json",'
     + b' "config": {}, "layers": [{"digest": "sha256:' + b"a" * 64 + b'", "size": -1}]}',
     "non-negative"),
])
def test_manifest_validation(body, message):
    from lockwright.errors import InvalidPackage
    from lockwright.oci.types import Manifest

    with pytest.raises(InvalidPackage, match=message):
        Manifest.from_bytes(body).layers()


def test_manifest_media_type_from_shape_and_header():
    from lockwright.oci.types import DOCKER_MANIFEST, OCI_INDEX, Manifest

    assert Manifest.from_bytes(b'{"schemaVersion": 2, "manifests": [{"digest": "sha256:'
                               + b"b" * 64 + b'", "size": 3}]}').is_index
    docker = Manifest.from_bytes(b'{"schemaVersion": 2, "config": {}, "layers": []}',
                                 DOCKER_MANIFEST + "; charset=utf-8")
    assert docker.media_type == DOCKER_MANIFEST and not docker.is_index
    assert OCI_INDEX != docker.media_type


def test_missing_auth_file_is_a_clear_error(tmp_path):
    from lockwright.errors import Unauthorized

    with pytest.raises(Unauthorized, match="cannot read registry auth file"):
        DockerAuths.from_file(tmp_path / "missing.json")
