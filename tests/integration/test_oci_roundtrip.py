"""build → push → inspect → fetch against a real registry, for every package type."""

from __future__ import annotations

import contextlib
import gzip
import hashlib
import io
import json
import tarfile
from pathlib import Path

import pytest

from lockwright.errors import InvalidPackage, PackageNotFound
from lockwright.oci.auth import DockerAuths
from lockwright.oci.cache import PackageCache
from lockwright.oci.client import RegistryClient
from lockwright.oci.fetch import fetch_package
from lockwright.oci.local import load_into_cache, read_tarball
from lockwright.oci.push import push_package
from lockwright.oci.reference import parse
from lockwright.xpkg.build import build_package
from lockwright.xpkg.tarball import Image, Layer, write_image_tarball
from tests.helpers import unique
from tests.oci_images import PROVIDER_YAML

pytestmark = pytest.mark.registry

PACKAGES = {
    "Provider": {"crossplane.yaml": PROVIDER_YAML.split("---\n")[0],
                 "crds/widget.yaml": PROVIDER_YAML.split("---\n")[1]},
    "Configuration": {
        "crossplane.yaml": """\
apiVersion: meta.pkg.crossplane.io/v1
kind: Configuration
metadata: {name: config-test}
spec:
  crossplane: {version: ">=v1.14.0"}
  dependsOn:
    - apiVersion: pkg.crossplane.io/v1
      kind: Provider
      package: xpkg.example.io/acme/provider-test
      version: ">=v1.0.0"
""",
        "apis/xrd.yaml": """\
apiVersion: apiextensions.crossplane.io/v1
kind: CompositeResourceDefinition
metadata: {name: xwidgets.example.org}
spec:
  group: example.org
  names: {kind: XWidget, plural: xwidgets}
  versions: [{name: v1, served: true, referenceable: true}]
---
apiVersion: apiextensions.crossplane.io/v1
kind: Composition
metadata: {name: xwidgets}
spec:
  compositeTypeRef: {apiVersion: example.org/v1, kind: XWidget}
""",
    },
    "Function": {"crossplane.yaml": """\
apiVersion: meta.pkg.crossplane.io/v1beta1
kind: Function
metadata: {name: function-test}
"""},
}


def write_root(base: Path, kind: str, extra: str = "") -> Path:
    root = base / kind.lower()
    for name, text in PACKAGES[kind].items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text + extra)
    return root


def build(root: Path, out: Path, runtime: Path | None = None) -> tuple[Path, str, bytes]:
    with build_package(root, runtime_tarball=runtime) as built:
        built.write(out)
        digest = built.digest
    with contextlib.closing(read_tarball(out)) as tarball:
        base = next(layer for layer in tarball.layers if layer.annotation == "base")
        with base.open() as f, tarfile.open(fileobj=f, mode="r|gz") as tar:
            member = tar.next()
            assert member is not None
            yaml_bytes = tar.extractfile(member).read()  # type: ignore[union-attr]
    return out, digest, yaml_bytes


@pytest.fixture
def client(registry) -> RegistryClient:
    return RegistryClient(insecure=[registry.host], auths=DockerAuths())


@pytest.fixture
def cache(tmp_path) -> PackageCache:
    return PackageCache(tmp_path / "cache")


@pytest.mark.parametrize("kind", sorted(PACKAGES))
def test_build_push_fetch_roundtrip(registry, client, cache, tmp_path, kind):
    out, built_digest, yaml_bytes = build(write_root(tmp_path, kind), tmp_path / "p.xpkg")
    ref = f"{registry.host}/test/{unique(kind.lower())}:v1.0.0"
    with contextlib.closing(read_tarball(out)) as tarball:
        pushed = push_package(client, ref, [tarball])
    assert pushed == built_digest
    manifest = client.get_manifest(parse(ref))
    annotations = [layer.annotations for layer in manifest.layers()]
    assert {"io.crossplane.xpkg": "base"} in annotations
    fetched = fetch_package(ref, client, cache, expected_kind=kind)
    assert fetched.digest == built_digest
    assert fetched.path.read_bytes() == yaml_bytes
    assert fetched.summary is not None and fetched.summary.meta.kind == kind
    with pytest.raises(InvalidPackage, match="is not"):
        other = "Provider" if kind != "Provider" else "Function"
        fetch_package(ref, client, cache, policy="Always", expected_kind=other)


def runtime_tarball(path: Path, arch: str) -> Path:
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w") as tar:
        info = tarfile.TarInfo(f"bin/{arch}")
        info.size = len(arch)
        tar.addfile(info, io.BytesIO(arch.encode()))
    data = gzip.compress(raw.getvalue(), mtime=0)
    layer = Layer("sha256:" + hashlib.sha256(data).hexdigest(),
                  "sha256:" + hashlib.sha256(raw.getvalue()).hexdigest(), len(data),
                  opener=lambda: io.BytesIO(data))
    config = json.dumps({"os": "linux", "architecture": arch,
                         "rootfs": {"type": "layers", "diff_ids": [layer.diff_id]},
                         "config": {}}).encode()
    write_image_tarball(path, Image(config, (layer,)))
    return path


def test_index_with_two_platforms(registry, client, cache, tmp_path):
    root = write_root(tmp_path, "Provider")
    tarballs = []
    for arch in ("arm64", "amd64"):
        runtime = runtime_tarball(tmp_path / f"rt-{arch}.tar", arch)
        tarballs.append(build(root, tmp_path / f"p-{arch}.xpkg", runtime))
    ref = f"{registry.host}/test/{unique('multi')}:v1"
    opened = [read_tarball(out) for out, _, _ in tarballs]
    index_digest = push_package(client, ref, opened)
    index = client.get_manifest(parse(ref))
    assert index.is_index and index.digest == index_digest
    platforms = {m.platform["architecture"]: m.digest for m in index.manifests()}  # type: ignore[index]
    assert platforms == {"arm64": tarballs[0][1], "amd64": tarballs[1][1]}
    fetched = fetch_package(ref, client, cache)
    assert fetched.digest == index_digest
    assert fetched.path.read_bytes() == tarballs[1][2]
    for tarball in opened:
        tarball.close()


def test_index_refused_when_base_layers_differ(registry, client, tmp_path):
    first = build(write_root(tmp_path / "a", "Provider"), tmp_path / "a.xpkg",
                  runtime_tarball(tmp_path / "rt1.tar", "amd64"))
    second = build(write_root(tmp_path / "b", "Provider", extra="# differs\n"),
                   tmp_path / "b.xpkg", runtime_tarball(tmp_path / "rt2.tar", "arm64"))
    ref = f"{registry.host}/test/{unique('differ')}:v1"
    with pytest.raises(InvalidPackage, match="base layers differ"):
        push_package(client, ref, [read_tarball(first[0]), read_tarball(second[0])])
    with pytest.raises(PackageNotFound):
        client.resolve(parse(ref))


def test_cache_load_serves_never_policy_without_registry(cache, tmp_path):
    out, digest, yaml_bytes = build(write_root(tmp_path, "Provider"), tmp_path / "p.xpkg")
    ref = "xpkg.example.io/acme/provider-test:v1.0.0"
    entry = load_into_cache(cache, out, ref)
    assert entry.digest == digest
    offline = RegistryClient(auths=DockerAuths())  # would fail on any network call
    fetched = fetch_package(ref, offline, cache, policy="Never")
    assert fetched.from_cache and fetched.path.read_bytes() == yaml_bytes
    by_digest = fetch_package(f"xpkg.example.io/acme/provider-test@{digest}", offline, cache,
                              policy="Never")
    assert by_digest.digest == digest


def test_list_tags_sorted_semver(registry, client, tmp_path):
    out, _, _ = build(write_root(tmp_path, "Function"), tmp_path / "f.xpkg")
    repo = f"{registry.host}/test/{unique('tags')}"
    for tag in ("v1.10.0", "v1.2.0", "v1", "latest", "v1.2.0-rc.1", "v0.9.9"):
        with contextlib.closing(read_tarball(out)) as tarball:
            push_package(client, f"{repo}:{tag}", [tarball])
    tags = client.list_tags(parse(repo))
    assert sorted(tags) == sorted(["v1.10.0", "v1.2.0", "v1", "latest", "v1.2.0-rc.1", "v0.9.9"])
    assert client.list_versions(parse(repo)) == ["v0.9.9", "v1.2.0-rc.1", "v1.2.0", "v1.10.0"]


def test_list_tags_of_a_missing_repository_names_the_repository(registry, client):
    repo = f"{registry.host}/test/{unique('nowhere')}"
    with pytest.raises(PackageNotFound) as err:
        client.list_tags(parse(repo))
    assert err.value.message == (f"{repo} not found: registry {registry.host} answered 404 to "
                                 f"GET for {repo} (NAME_UNKNOWN)")
