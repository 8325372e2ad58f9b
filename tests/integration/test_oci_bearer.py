"""The bearer token flow against a real registry configured for token auth."""

from __future__ import annotations

import contextlib
import json

import pytest

from lockwright.errors import Unauthorized
from lockwright.oci.auth import DockerAuths
from lockwright.oci.cache import PackageCache
from lockwright.oci.client import RegistryClient
from lockwright.oci.fetch import fetch_package
from lockwright.oci.local import read_tarball
from lockwright.oci.push import push_package
from lockwright.xpkg.build import build_package
from tests.helpers import unique
from tests.integration.test_oci_roundtrip import write_root

pytestmark = pytest.mark.registry


def _client(server, password: str) -> RegistryClient:
    config = {"auths": {server.host: {"username": server.username, "password": password}}}
    return RegistryClient(insecure=[server.host], auths=DockerAuths.from_json(json.dumps(config)))


def test_push_and_fetch_with_bearer_tokens(token_registry, tmp_path):
    with build_package(write_root(tmp_path, "Function")) as built:
        built.write(tmp_path / "f.xpkg")
        digest = built.digest
    repo = f"test/{unique('bearer')}"
    client = _client(token_registry, token_registry.password)
    with contextlib.closing(read_tarball(tmp_path / "f.xpkg")) as tarball:
        assert push_package(client, f"{token_registry.host}/{repo}:v1", [tarball]) == digest
    fresh = _client(token_registry, token_registry.password)
    fetched = fetch_package(f"{token_registry.host}/{repo}:v1", fresh,
                            PackageCache(tmp_path / "c"))
    assert fetched.digest == digest and "function-test" in fetched.path.read_text()
    scopes = (token_registry.storage.parent / "scopes.log").read_text().split()
    # The registry writes the actions of its challenge in Go map order ("pull,push" or
    # "push,pull"); the spec gives them no order, so compare them as a set.
    asked = {(scope.rsplit(":", 1)[0], frozenset(scope.rsplit(":", 1)[1].split(",")))
             for scope in scopes}
    assert (f"repository:{repo}", frozenset({"pull", "push"})) in asked
    assert (f"repository:{repo}", frozenset({"pull"})) in asked


def test_bearer_wrong_password_is_unauthorized(token_registry, tmp_path):
    client = _client(token_registry, "not-the-password")
    with pytest.raises(Unauthorized, match="refused the credentials") as info:
        fetch_package(f"{token_registry.host}/test/x:v1", client, PackageCache(tmp_path))
    assert "not-the-password" not in str(info.value)
