"""What ``index build`` keeps of a package version, and what it skips (issue 23)."""

from __future__ import annotations

import io
import json
import re
from typing import Any

import pytest
import yaml

from lockwright.errors import InvalidPackage
from lockwright.identity.digest import api_digest, type_digest
from lockwright.index.build import _COSIGN_TAG, entry_of, not_a_package, scan
from lockwright.index.model import CONFIG_MEDIA_TYPE, PackageIndex
from lockwright.index.read import index_layer
from lockwright.oci.reference import parse
from lockwright.oci.types import Manifest
from lockwright.xpkg.parse import iter_objects
from tests.e2e.packages import crd

Obj = dict[str, Any]
META = {"apiVersion": "meta.pkg.crossplane.io/v1", "kind": "Provider",
        "metadata": {"name": "provider-s3", "annotations": {
            "lockwright.dev/requires-apis": " queues.sqs.example.org/v1 ,, Topic.sns.example.org"}},
        "spec": {"crossplane": {"version": ">=v2.0.0"},
                 "dependsOn": [{"apiVersion": "pkg.crossplane.io/v1", "kind": "Provider",
                                "package": "xpkg.example.org/family", "version": ">=v1.0.0"}]}}
BUCKET, QUEUE = crd("s3.example.org", "Bucket"), crd("s3.example.org", "Queue")
ROLE = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
        "metadata": {"name": "x"}}


def documents(*objs: Obj) -> Any:
    return iter_objects(io.BytesIO(yaml.safe_dump_all(list(objs)).encode()))


def test_scan_keeps_meta_types_and_the_api_digest_of_the_definitions() -> None:
    contents = scan(documents(BUCKET, META, ROLE, QUEUE))
    entry = entry_of(parse("registry.example.org/aws/provider-s3:v1.2.0"), "sha256:d",
                     "sha256:b", contents)
    assert (entry.repository, entry.tag, entry.kind, entry.name, entry.crossplane) == (
        "registry.example.org/aws/provider-s3", "v1.2.0", "Provider", "provider-s3",
        ">=v2.0.0")
    assert entry.requires_apis == ("queues.sqs.example.org/v1", "Topic.sns.example.org")
    assert [(d.package, d.version, d.kind) for d in entry.dependencies] == [
        ("xpkg.example.org/family", ">=v1.0.0", "Provider")]
    assert [(t.name, t.digest) for t in entry.types] == [
        ("buckets.s3.example.org", type_digest(BUCKET)),
        ("queues.s3.example.org", type_digest(QUEUE))]
    assert entry.api_digest == api_digest([BUCKET, META, ROLE, QUEUE])
    assert PackageIndex.from_bytes(PackageIndex((entry,)).to_bytes()).entries == (entry,)


@pytest.mark.parametrize(("objs", "message"), [
    ([BUCKET], "the package has no meta object"),
    ([META, BUCKET, META], "document 2 is a second meta object"),
])
def test_scan_refuses_what_is_not_one_package(objs: list[Obj], message: str) -> None:
    with pytest.raises(InvalidPackage, match=re.escape(message)):
        scan(documents(*objs))


def manifest(config_type: str, layers: list[Obj] | None = None) -> Manifest:
    return Manifest.from_bytes(json.dumps({
        "schemaVersion": 2, "mediaType": "application/vnd.oci.image.manifest.v1+json",
        "config": {"mediaType": config_type, "digest": "sha256:" + "c" * 64, "size": 2},
        "layers": layers or [{"mediaType": "application/vnd.oci.image.layer.v1.tar+gzip",
                              "digest": "sha256:" + "d" * 64, "size": 1}]}).encode())


@pytest.mark.parametrize(("config_type", "why"), [
    ("application/vnd.oci.image.config.v1+json", ""),
    ("application/vnd.docker.container.image.v1+json", ""),
    (CONFIG_MEDIA_TYPE, "a package index"),
    ("application/vnd.dev.sigstore.bundle+json",
     "an artifact of config type application/vnd.dev.sigstore.bundle+json, not a package image"),
])
def test_not_a_package_by_config_type(config_type: str, why: str) -> None:
    assert not_a_package(manifest(config_type)) == why


@pytest.mark.parametrize(("tag", "skipped"), [
    (f"sha256-{'a' * 64}.sig", True), (f"sha256-{'a' * 64}.att", True),
    (f"sha256-{'a' * 64}", True), ("v1.0.0", False), ("sha256-short.sig", False),
])
def test_cosign_tags_are_skipped_by_name(tag: str, skipped: bool) -> None:
    assert bool(_COSIGN_TAG.match(tag)) is skipped


def test_index_layer_is_the_one_document_layer() -> None:
    layer = {"mediaType": "application/vnd.lockwright.package-index.v1+json",
             "digest": "sha256:" + "e" * 64, "size": 10}
    assert index_layer(manifest(CONFIG_MEDIA_TYPE, [layer]), "r").digest == layer["digest"]
    with pytest.raises(InvalidPackage, match="r is not a package index: it has 2 layers"):
        index_layer(manifest(CONFIG_MEDIA_TYPE, [layer, layer]), "r")
