"""Fetch against a real registry: resolve, index, tag moves, auth, hostile inputs."""

from __future__ import annotations

import json
import tarfile
from pathlib import Path

import pytest

from lockwright.errors import (
    InvalidPackage,
    LintError,
    PackageNotFound,
    PermanentError,
    RegistryUnavailable,
    Unauthorized,
)
from lockwright.oci.auth import DockerAuths
from lockwright.oci.cache import PackageCache
from lockwright.oci.client import RegistryClient
from lockwright.oci.fetch import Limits, fetch_package
from lockwright.oci.reference import parse
from tests.helpers import free_port, unique
from tests.oci_images import (
    PROVIDER_YAML,
    Entry,
    Layer,
    digest_of,
    image_manifest,
    package_layer,
    push_image,
    put_manifest,
    tar_bytes,
)

pytestmark = pytest.mark.registry

CONFIGURATION_YAML = """\
apiVersion: meta.pkg.crossplane.io/v1
kind: Configuration
metadata: {name: config-test}
"""


@pytest.fixture
def client(registry) -> RegistryClient:
    return RegistryClient(insecure=[registry.host], auths=DockerAuths())


@pytest.fixture
def cache(tmp_path: Path) -> PackageCache:
    return PackageCache(tmp_path / "cache")


def cached_entries(cache: PackageCache) -> list[Path]:
    return [p for p in cache.root.iterdir() if not p.name.startswith(".")]


def test_fetch_by_tag_extracts_package_yaml_and_caches_it(registry, client, cache):
    repo = f"test/{unique('prov')}"
    digest = push_image(registry.host, repo, "v1.0.0", [Layer(package_layer(PROVIDER_YAML))])
    fetched = fetch_package(f"{registry.host}/{repo}:v1.0.0", client, cache)
    assert fetched.digest == digest
    assert fetched.path.read_text() == PROVIDER_YAML
    assert fetched.summary is not None and fetched.summary.meta.kind == "Provider"
    again = fetch_package(f"{registry.host}/{repo}:v1.0.0", client, cache)
    assert again.from_cache and again.path == fetched.path


def test_head_resolution_and_get_agree(registry, client):
    repo = f"test/{unique('head')}"
    digest = push_image(registry.host, repo, "v1", [Layer(package_layer(PROVIDER_YAML))])
    ref = parse(f"{registry.host}/{repo}:v1")
    assert client.resolve(ref) == digest == client.get_manifest(ref).digest


def test_tag_moved_to_new_digest_fetches_new_content(registry, client, cache):
    repo = f"test/{unique('move')}"
    ref = f"{registry.host}/{repo}:v1"
    first = push_image(registry.host, repo, "v1", [Layer(package_layer(PROVIDER_YAML))])
    assert fetch_package(ref, client, cache).digest == first
    moved_yaml = PROVIDER_YAML.replace("provider-test", "provider-moved")
    second = push_image(registry.host, repo, "v1", [Layer(package_layer(moved_yaml))])
    fetched = fetch_package(ref, client, cache)
    assert fetched.digest == second != first
    assert not fetched.from_cache and "provider-moved" in fetched.path.read_text()


def test_uncompressed_layer_without_annotation_is_flattened_with_whiteouts(registry, client,
                                                                          cache):
    repo = f"test/{unique('flat')}"
    lower = tar_bytes([Entry("package.yaml", b"old: stale\n")], gz=False)
    hider = tar_bytes([Entry(".wh.package.yaml")], gz=False)
    top = tar_bytes([Entry("etc/other", b"x"), Entry("pkg/package.yaml",
                                                     PROVIDER_YAML.encode())], gz=False)
    push_image(registry.host, repo, "v1", [Layer(lower, {}), Layer(hider, {}), Layer(top, {})])
    fetched = fetch_package(f"{registry.host}/{repo}:v1", client, cache)
    assert fetched.path.read_text() == PROVIDER_YAML


def test_whiteout_hides_lower_package_yaml(registry, client, cache):
    repo = f"test/{unique('wh')}"
    lower = package_layer(PROVIDER_YAML)
    hider = tar_bytes([Entry(".wh.package.yaml")])
    push_image(registry.host, repo, "v1", [Layer(lower, {}), Layer(hider, {})])
    with pytest.raises(InvalidPackage, match="package.yaml not found"):
        fetch_package(f"{registry.host}/{repo}:v1", client, cache)
    assert cached_entries(cache) == []


def test_config_label_marks_base_layer(registry, client, cache):
    repo = f"test/{unique('label')}"
    decoy = package_layer("not: the package\n")
    base = package_layer(PROVIDER_YAML)
    labels = {f"io.crossplane.xpkg:{digest_of(base)}": "base"}
    push_image(registry.host, repo, "v1", [Layer(base, {}), Layer(decoy, {})], labels=labels)
    fetched = fetch_package(f"{registry.host}/{repo}:v1", client, cache)
    assert fetched.entry.base_layer == digest_of(base)
    assert fetched.path.read_text() == PROVIDER_YAML


def push_index(host: str, repo: str, layers: dict[str, bytes]) -> str:
    """An image index with one image per architecture, each of one layer; its digest."""
    entries = []
    for arch, layer in layers.items():
        body = image_manifest(host, repo, [Layer(layer)], labels={"arch": arch})
        put_manifest(host, repo, digest_of(body), body)
        entries.append({"mediaType": "application/vnd.oci.image.manifest.v1+json",
                        "digest": digest_of(body), "size": len(body),
                        "platform": {"os": "linux", "architecture": arch}})
    index = json.dumps({"schemaVersion": 2, "manifests": entries,
                        "mediaType": "application/vnd.oci.image.index.v1+json"}).encode()
    return put_manifest(host, repo, "v1", index, "application/vnd.oci.image.index.v1+json")


def test_index_selects_linux_amd64(registry, client, cache):
    repo = f"test/{unique('idx')}"
    layer = package_layer(PROVIDER_YAML)
    index_digest = push_index(registry.host, repo, {"arm64": layer, "amd64": layer})
    fetched = fetch_package(f"{registry.host}/{repo}:v1", client, cache)
    assert fetched.digest == index_digest
    assert fetched.path.read_text() == PROVIDER_YAML


def test_index_whose_platforms_differ_in_base_layer_is_refused(registry, client, cache):
    """The same package.yaml on every platform (the seeds); only xpkg push checked it."""
    repo = f"test/{unique('idx')}"
    push_index(registry.host, repo, {"arm64": package_layer("arm: true\n"),
                                     "amd64": package_layer(PROVIDER_YAML)})
    with pytest.raises(InvalidPackage, match="different base layers on its platforms"):
        fetch_package(f"{registry.host}/{repo}:v1", client, cache)
    assert cached_entries(cache) == []


def test_missing_tag_is_package_not_found(registry, client, cache):
    with pytest.raises(PackageNotFound, match="404"):
        fetch_package(f"{registry.host}/test/{unique('none')}:v9", client, cache)


def test_never_policy_uses_only_cache(registry, client, cache):
    with pytest.raises(PackageNotFound, match="pull policy is Never"):
        fetch_package(f"{registry.host}/test/{unique('never')}:v1", client, cache,
                      policy="Never")


def test_unreachable_registry_is_transient(client, cache):
    port = free_port()
    client.insecure |= {f"127.0.0.1:{port}"}
    with pytest.raises(RegistryUnavailable, match="unreachable"):
        fetch_package(f"127.0.0.1:{port}/x/y:v1", client, cache)


def test_plain_http_refused_unless_named_insecure(registry, cache):
    strict = RegistryClient(auths=DockerAuths())
    with pytest.raises(RegistryUnavailable):
        fetch_package(f"{registry.host}/test/any:v1", strict, cache)


def test_basic_auth_registry(auth_registry, tmp_path, cache):
    repo = f"test/{unique('auth')}"
    creds = (auth_registry.username, auth_registry.password)
    digest = push_image(auth_registry.host, repo, "v1", [Layer(package_layer(PROVIDER_YAML))],
                        auth=creds)
    config = {"auths": {auth_registry.host: {"username": creds[0], "password": creds[1]}}}
    good = RegistryClient(insecure=[auth_registry.host],
                          auths=DockerAuths.from_json(json.dumps(config)))
    assert fetch_package(f"{auth_registry.host}/{repo}:v1", good, cache).digest == digest


def test_wrong_password_is_unauthorized_and_secret_not_in_message(auth_registry, cache):
    config = {"auths": {auth_registry.host: {"username": "alice", "password": "hunter2-wrong"}}}
    bad = RegistryClient(insecure=[auth_registry.host],
                         auths=DockerAuths.from_json(json.dumps(config)))
    with pytest.raises(Unauthorized) as info:
        fetch_package(f"{auth_registry.host}/test/x:v1", bad, cache)
    assert "hunter2" not in str(info.value) and "401" in str(info.value)
    anonymous = RegistryClient(insecure=[auth_registry.host], auths=DockerAuths())
    with pytest.raises(Unauthorized, match="none are configured"):
        fetch_package(f"{auth_registry.host}/test/x:v1", anonymous, cache)


def _blob_path(registry, digest: str) -> Path:
    hexd = digest.removeprefix("sha256:")
    return registry.storage / "docker/registry/v2/blobs/sha256" / hexd[:2] / hexd / "data"


def test_tampered_blob_is_refused(registry, client, cache):
    repo = f"test/{unique('tamper')}"
    layer = package_layer(PROVIDER_YAML + f"# {repo}\n")
    push_image(registry.host, repo, "v1", [Layer(layer)])
    tampered = package_layer(PROVIDER_YAML.replace("provider-test", "provider-evil") +
                             f"# {repo}\n")
    _blob_path(registry, digest_of(layer)).write_bytes(tampered)
    with pytest.raises(InvalidPackage, match="does not match its digest"):
        fetch_package(f"{registry.host}/{repo}:v1", client, cache)
    assert cached_entries(cache) == []


HOSTILE = {
    "traversal": ([Entry("../package.yaml", PROVIDER_YAML.encode())], "escapes"),
    "absolute": ([Entry("/package.yaml", PROVIDER_YAML.encode())], "escapes"),
    "symlink": ([Entry("package.yaml", type=tarfile.SYMTYPE, linkname="/etc/passwd")],
                "link or special"),
    "hardlink": ([Entry("x", b"a"), Entry("package.yaml", type=tarfile.LNKTYPE,
                                          linkname="x")], "link or special"),
    "device": ([Entry("package.yaml", type=tarfile.CHRTYPE)], "link or special"),
    "missing": ([Entry("README.md", b"hi")], "package.yaml not found"),
    "two-meta": ([Entry("package.yaml", (PROVIDER_YAML + "---\n" + CONFIGURATION_YAML).encode())],
                 "not exactly one package meta type"),
    "config-with-crd": ([Entry("package.yaml", (CONFIGURATION_YAML + "---\n" + PROVIDER_YAML
                                                .split("---\n")[1]).encode())],
                        "object is not an XRD"),
    "malformed": ([Entry("package.yaml", b"apiVersion: [unclosed\n")], "invalid YAML"),
    "bad-constraint": ([Entry("package.yaml", PROVIDER_YAML.replace(
        ">=v1.14.0-0", "not a constraint!").encode())], "constraint"),
    "not-tar": (None, "not a valid"),
}


@pytest.mark.parametrize("case", sorted(HOSTILE))
def test_hostile_package_is_refused_and_not_cached(registry, client, cache, case):
    entries, message = HOSTILE[case]
    repo = f"test/{unique(case)}"
    data = tar_bytes(entries) if entries is not None else b"\x1f\x8bnot gzip at all"
    push_image(registry.host, repo, "v1", [Layer(data)])
    with pytest.raises(PermanentError, match=message):
        fetch_package(f"{registry.host}/{repo}:v1", client, cache)
    assert cached_entries(cache) == []
    assert list((cache.root / ".tmp").iterdir()) == []


def test_lint_error_is_typed(registry, client, cache):
    repo = f"test/{unique('lint')}"
    yaml_text = CONFIGURATION_YAML + "---\n" + PROVIDER_YAML.split("---\n")[1]
    push_image(registry.host, repo, "v1", [Layer(package_layer(yaml_text))])
    with pytest.raises(LintError):
        fetch_package(f"{registry.host}/{repo}:v1", client, cache)


def test_package_yaml_over_limit(registry, client, cache):
    repo = f"test/{unique('big')}"
    push_image(registry.host, repo, "v1", [Layer(package_layer(PROVIDER_YAML))])
    with pytest.raises(InvalidPackage, match="over the limit of 100"):
        fetch_package(f"{registry.host}/{repo}:v1", client, cache,
                      limits=Limits(package_yaml_bytes=100))
    assert cached_entries(cache) == []


def test_gzip_bomb_stops_at_decompressed_limit(registry, client, cache):
    repo = f"test/{unique('bomb')}"
    bomb = tar_bytes([Entry("filler", b"\0" * (8 * 1024 * 1024)),
                      Entry("package.yaml", PROVIDER_YAML.encode())])
    assert len(bomb) < 64 * 1024
    push_image(registry.host, repo, "v1", [Layer(bomb)])
    with pytest.raises(InvalidPackage, match="decompresses to more than"):
        fetch_package(f"{registry.host}/{repo}:v1", client, cache,
                      limits=Limits(decompressed_bytes=1024 * 1024))
    assert cached_entries(cache) == []


def test_layer_over_limit_refused_before_download(registry, client, cache):
    repo = f"test/{unique('layer')}"
    push_image(registry.host, repo, "v1", [Layer(package_layer(PROVIDER_YAML))])
    with pytest.raises(InvalidPackage, match="layer .* over the limit"):
        fetch_package(f"{registry.host}/{repo}:v1", client, cache, limits=Limits(layer_bytes=10))


def test_manifest_over_limit(registry, cache):
    repo = f"test/{unique('bigman')}"
    push_image(registry.host, repo, "v1", [Layer(package_layer(PROVIDER_YAML))])
    small = RegistryClient(insecure=[registry.host], auths=DockerAuths(), max_manifest_bytes=64)
    with pytest.raises(InvalidPackage, match="manifest .* over the limit of 64"):
        fetch_package(f"{registry.host}/{repo}:v1", small, cache)
