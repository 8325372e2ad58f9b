"""xpkg build: package.yaml assembly, docker-load layout, labels, determinism, runtime images."""

from __future__ import annotations

import gzip
import hashlib
import io
import json
import re
import shutil
import tarfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from lockwright.errors import InvalidPackage, LintError
from lockwright.xpkg.build import BuiltPackage, build_package
from lockwright.xpkg.parse import parse_package
from lockwright.xpkg.tarball import (
    DOCKER_LAYER,
    DOCKER_MANIFEST,
    OCI_LAYER,
    OCI_MANIFEST,
    label_key,
    read_image_tarball,
    write_image_tarball,
)

DATA = Path(__file__).parent.parent / "data"
PACKAGES = DATA / "packages"
EXAMPLES = DATA / "examples" / "provider"


def sha256(data: bytes) -> str:
    return "sha256:" + hashlib.sha256(data).hexdigest()


@pytest.fixture
def provider() -> Iterator[BuiltPackage]:
    with build_package(PACKAGES / "provider", examples_root=EXAMPLES) as built:
        yield built


def members(path: Path) -> dict[str, bytes]:
    with tarfile.open(path) as tar:
        return {m.name: tar.extractfile(m).read() for m in tar.getmembers()}  # type: ignore[union-attr]


def layer_files(blob: bytes) -> dict[str, tarfile.TarInfo]:
    with tarfile.open(fileobj=io.BytesIO(gzip.decompress(blob))) as tar:
        return {m.name: m for m in tar.getmembers()}


def layer_text(blob: bytes, name: str) -> str:
    with tarfile.open(fileobj=io.BytesIO(gzip.decompress(blob))) as tar:
        return tar.extractfile(name).read().decode()  # type: ignore[union-attr]


@pytest.mark.parametrize("name", ["provider", "configuration", "function"])
def test_example_packages_build(name: str) -> None:
    with build_package(PACKAGES / name) as built:
        assert built.meta.kind == name.capitalize()
        assert built.warnings == ()
        assert [lay.annotation for lay in built.image.layers] == ["base"]


def test_same_inputs_same_digest_and_bytes(tmp_path: Path) -> None:
    outputs = []
    for i in range(2):
        with build_package(PACKAGES / "provider", examples_root=EXAMPLES) as built:
            built.write(tmp_path / f"{i}.xpkg")
            outputs.append(built.digest)
    assert outputs[0] == outputs[1]
    assert (tmp_path / "0.xpkg").read_bytes() == (tmp_path / "1.xpkg").read_bytes()


def test_docker_load_layout(provider: BuiltPackage, tmp_path: Path) -> None:
    provider.write(tmp_path / "p.xpkg")
    files = members(tmp_path / "p.xpkg")
    manifest = json.loads(files["manifest.json"])
    assert list(files)[-1] == "manifest.json"
    assert manifest == [{"Config": provider.image.config_digest, "RepoTags": None,
                         "Layers": [lay.digest[7:] + ".tar.gz" for lay in provider.image.layers]}]
    config = files[manifest[0]["Config"]]
    assert sha256(config) == manifest[0]["Config"]
    diff_ids = json.loads(config)["rootfs"]["diff_ids"]
    for name, diff_id in zip(manifest[0]["Layers"], diff_ids, strict=True):
        assert sha256(files[name]) == "sha256:" + name.removesuffix(".tar.gz")
        assert sha256(gzip.decompress(files[name])) == diff_id
    with tarfile.open(tmp_path / "p.xpkg") as tar:
        assert {(m.mtime, m.uid, m.gid, m.mode) for m in tar.getmembers()} == {(0, 0, 0, 0o644)}


def test_base_layer_holds_package_yaml_meta_first(provider: BuiltPackage) -> None:
    base = provider.image.layer("base")
    assert base is not None
    with base.open() as f:
        blob = f.read()
    info = layer_files(blob)["package.yaml"]
    assert (info.mode, info.uid, info.gid, info.mtime) == (0o644, 0, 0, 0)
    parsed = parse_package(io.StringIO(layer_text(blob, "package.yaml")))
    assert parsed.meta_index == 0 and parsed.meta.name == "provider-widgets"
    assert [o["metadata"]["name"] for o in parsed.objects] == [
        "providerconfigs.widgets.example.org", "widgets.widgets.example.org"]


def test_layer_annotations_are_config_labels_keyed_by_layer_digest(
        provider: BuiltPackage) -> None:
    labels = provider.image.config["config"]["Labels"]
    base, examples = provider.image.layers
    assert labels == {f"io.crossplane.xpkg:{base.digest}": "base",
                      f"io.crossplane.xpkg:{examples.digest}": "upbound"}
    assert label_key(base.digest) == "io.crossplane.xpkg:sha256:" + base.digest[7:]


def test_examples_layer(provider: BuiltPackage) -> None:
    examples = provider.image.layer("upbound")
    assert examples is not None
    with examples.open() as f:
        text = layer_text(f.read(), ".up/examples.yaml")
    assert "kind: Widget" in text


def test_manifest_carries_annotations(provider: BuiltPackage) -> None:
    manifest = provider.image.manifest()
    assert manifest["mediaType"] == DOCKER_MANIFEST
    assert [lay["annotations"] for lay in manifest["layers"]] == [
        {"io.crossplane.xpkg": "base"}, {"io.crossplane.xpkg": "upbound"}]
    assert all(lay["mediaType"] == DOCKER_LAYER for lay in manifest["layers"])
    assert "annotations" not in provider.image.manifest(annotations=False)["layers"][0]
    oci = provider.image.manifest(oci=True)
    assert oci["mediaType"] == OCI_MANIFEST and oci["layers"][0]["mediaType"] == OCI_LAYER
    assert provider.digest == sha256(provider.image.manifest_bytes())


def test_read_image_tarball_round_trips(provider: BuiltPackage, tmp_path: Path) -> None:
    provider.write(tmp_path / "p.xpkg")
    image = read_image_tarball(tmp_path / "p.xpkg")
    try:
        assert image.config_bytes == provider.image.config_bytes
        assert image.layers == provider.image.layers
        assert image.digest == provider.digest
        assert image.platform is None
        with image.layers[0].open() as f:
            assert sha256(f.read()) == image.layers[0].digest
    finally:
        image.close()


def test_examples_root_inside_package_root_is_not_packaged(tmp_path: Path) -> None:
    root = tmp_path / "provider"
    shutil.copytree(PACKAGES / "provider", root)
    shutil.copytree(EXAMPLES, root / "examples")
    with build_package(root, examples_root=root / "examples") as built:
        assert built.image.layer("upbound") is not None
    with pytest.raises(InvalidPackage, match='no kind "Widget" is registered'):
        build_package(root)


BUILD_ERRORS: list[tuple[dict[str, str], type[Exception], str]] = [
    ({"crd.yaml": "kind: X\n"}, InvalidPackage, "crossplane.yaml not found"),
    ({"crossplane.yaml": "apiVersion: v1\nkind: ConfigMap\n"}, InvalidPackage,
     "no meta.pkg.crossplane.io object"),
    ({"crossplane.yaml": "apiVersion: meta.pkg.crossplane.io/v1\nkind: Configuration\n",
      "crd.yaml": "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\n"
                  "metadata:\n  name: a.example.org\n"},
     LintError, "document 1 (CustomResourceDefinition a.example.org): object did not pass"),
    ({"crossplane.yaml": "apiVersion: meta.pkg.crossplane.io/v1\nkind: Configuration\n",
      "other.yml": "apiVersion: meta.pkg.crossplane.io/v1\nkind: Provider\n"},
     InvalidPackage, "not exactly one package meta type: document 1 (Provider)"),
    ({"crossplane.yaml": "apiVersion: meta.pkg.crossplane.io/v1\nkind: Provider\n",
      "bad.yaml": "a: [b\n"}, InvalidPackage, "document 1: invalid YAML at line"),
]


@pytest.mark.parametrize(("files", "error", "message"), BUILD_ERRORS)
def test_build_errors(tmp_path: Path, files: dict[str, str], error: type[Exception],
                      message: str) -> None:
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    with pytest.raises(error, match=re.escape(message)):
        build_package(tmp_path)


def test_files_are_sorted_and_joined_safely(tmp_path: Path) -> None:
    (tmp_path / "crossplane.yaml").write_text(
        "apiVersion: meta.pkg.crossplane.io/v1\nkind: Provider\nmetadata:\n  name: p")
    (tmp_path / "b").mkdir()
    for name in ("b/z.yml", "a.yaml"):
        (tmp_path / name).write_text(
            f"---\napiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\n"
            f"metadata:\n  name: {name}")
    (tmp_path / "empty.yaml").write_text("")
    (tmp_path / "notes.txt").write_text("ignored")
    (tmp_path / ".github").mkdir()
    (tmp_path / ".github" / "ci.yaml").write_text("on: push\n")
    with build_package(tmp_path) as built:
        base = built.image.layer("base")
        assert base is not None
        with base.open() as f:
            parsed = parse_package(io.StringIO(layer_text(f.read(), "package.yaml")))
    assert [o["metadata"]["name"] for o in parsed.objects] == ["a.yaml", "b/z.yml"]


def test_missing_examples_root_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(InvalidPackage, match="examples root is not a directory"):
        build_package(PACKAGES / "function", examples_root=tmp_path / "nope")


def docker_save_tarball(path: Path, config: dict[str, Any], layer_tar: bytes) -> None:
    """A ``docker save``-style tarball: an uncompressed layer under <id>/layer.tar."""
    config["rootfs"] = {"type": "layers", "diff_ids": [sha256(layer_tar)]}
    config_bytes = json.dumps(config).encode()
    manifest = [{"Config": "cfg.json", "RepoTags": ["example/runtime:v1"],
                 "Layers": ["abc/layer.tar"]}]
    with tarfile.open(path, "w") as tar:
        for name, data in (("cfg.json", config_bytes), ("abc/layer.tar", layer_tar),
                           ("manifest.json", json.dumps(manifest).encode())):
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))


def runtime_layer() -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        info = tarfile.TarInfo("usr/local/bin/provider")
        info.size = 4
        tar.addfile(info, io.BytesIO(b"\x7fELF"))
    return buf.getvalue()


def test_embedded_runtime_layers_come_first(tmp_path: Path) -> None:
    runtime = tmp_path / "runtime.tar"
    config = {"architecture": "arm64", "os": "linux", "config": {
        "Entrypoint": ["/usr/local/bin/provider"], "Labels": {"org.example": "dropped"}},
        "history": [{"created_by": "COPY provider"}]}
    docker_save_tarball(runtime, config, runtime_layer())
    with build_package(PACKAGES / "provider", runtime_tarball=runtime) as built:
        image = built.image
        cfg = image.config
        assert [lay.annotation for lay in image.layers] == [None, "base"]
        assert image.platform is not None
        assert (image.platform.os, image.platform.architecture) == ("linux", "arm64")
        assert cfg["config"]["Entrypoint"] == ["/usr/local/bin/provider"]
        assert cfg["config"]["Labels"] == {label_key(image.layers[1].digest): "base"}
        assert cfg["rootfs"]["diff_ids"] == [sha256(runtime_layer()), image.layers[1].diff_id]
        assert len(cfg["history"]) == 2
        built.write(tmp_path / "p.xpkg")
    again = read_image_tarball(tmp_path / "p.xpkg")
    try:
        assert [lay.annotation for lay in again.layers] == [None, "base"]
        assert again.platform is not None and again.platform.architecture == "arm64"
    finally:
        again.close()


@pytest.mark.parametrize(
    ("entries", "message"),
    [({}, "manifest.json is missing"),
     ({"manifest.json": b"[]"}, "exactly one image"),
     ({"manifest.json": b'[{"Config": "c", "Layers": []}]'}, "c is missing"),
     ({"manifest.json": b'[{"Config": "c", "Layers": ["l.tar.gz"]}]', "c": b"{}"},
      "layer l.tar.gz is missing"),
     ({"manifest.json": b'[{"Config": "c", "Layers": ["l.tar.gz"]}]', "c": b"{}",
       "l.tar.gz": b"\x1f\x8bnot really gzip"}, "cannot read image tarball")],
)
def test_read_image_tarball_errors(tmp_path: Path, entries: dict[str, bytes],
                                   message: str) -> None:
    path = tmp_path / "bad.tar"
    with tarfile.open(path, "w") as tar:
        for name, data in entries.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    with pytest.raises(InvalidPackage, match=message):
        read_image_tarball(path)


def test_not_a_tarball(tmp_path: Path) -> None:
    (tmp_path / "x.xpkg").write_bytes(b"not a tar")
    with pytest.raises(InvalidPackage, match="cannot read image tarball"):
        read_image_tarball(tmp_path / "x.xpkg")


def test_write_image_tarball_with_repo_tags(provider: BuiltPackage, tmp_path: Path) -> None:
    write_image_tarball(tmp_path / "t.xpkg", provider.image, repo_tags=("example/p:v1",))
    manifest = json.loads(members(tmp_path / "t.xpkg")["manifest.json"])
    assert manifest[0]["RepoTags"] == ["example/p:v1"]
