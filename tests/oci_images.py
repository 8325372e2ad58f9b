"""Test helpers: hand-made layers and images, including hostile ones.

These build tars byte by byte and push them with plain HTTP so a test can put anything
into a registry; the product's builder and pusher are exercised by the round-trip tests.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import json
import tarfile
from dataclasses import dataclass, field
from typing import Any

import requests

OCI_MANIFEST = "application/vnd.oci.image.manifest.v1+json"
OCI_LAYER_GZIP = "application/vnd.oci.image.layer.v1.tar+gzip"
OCI_CONFIG = "application/vnd.oci.image.config.v1+json"

PROVIDER_YAML = """\
apiVersion: meta.pkg.crossplane.io/v1
kind: Provider
metadata:
  name: provider-test
spec:
  crossplane:
    version: ">=v1.14.0-0"
---
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: widgets.example.org
spec:
  group: example.org
  names: {kind: Widget, plural: widgets}
  scope: Cluster
  versions: [{name: v1, served: true, storage: true}]
"""


def digest_of(data: bytes) -> str:
    return "sha256:" + hashlib.sha256(data).hexdigest()


@dataclass
class Entry:
    """One tar entry: a regular file unless ``type`` says otherwise."""

    name: str
    data: bytes = b""
    type: bytes = tarfile.REGTYPE
    linkname: str = ""
    size: int | None = None  # override the header's size (lying headers)


def tar_bytes(entries: list[Entry], gz: bool = True) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for e in entries:
            info = tarfile.TarInfo(e.name)
            info.type, info.linkname = e.type, e.linkname
            info.size = len(e.data) if e.type == tarfile.REGTYPE else 0
            tar.addfile(info, io.BytesIO(e.data) if e.type == tarfile.REGTYPE else None)
    raw = buf.getvalue()
    return gzip.compress(raw, mtime=0) if gz else raw


def package_layer(package_yaml: str | bytes, gz: bool = True) -> bytes:
    data = package_yaml.encode() if isinstance(package_yaml, str) else package_yaml
    return tar_bytes([Entry("package.yaml", data)], gz)


@dataclass
class Layer:
    data: bytes
    annotations: dict[str, str] = field(default_factory=lambda: {"io.crossplane.xpkg": "base"})
    media_type: str = OCI_LAYER_GZIP


def push_blob(host: str, repo: str, data: bytes, auth: Any = None) -> str:
    digest = digest_of(data)
    r = requests.post(f"http://{host}/v2/{repo}/blobs/uploads/", auth=auth, timeout=30)
    r.raise_for_status()
    location = r.headers["Location"]
    if location.startswith("/"):
        location = f"http://{host}{location}"
    sep = "&" if "?" in location else "?"
    r = requests.put(f"{location}{sep}digest={digest}", data=data, auth=auth, timeout=30,
                     headers={"Content-Type": "application/octet-stream"})
    r.raise_for_status()
    return digest


def image_manifest(host: str, repo: str, layers: list[Layer], labels: dict[str, str] | None = None,
                   auth: Any = None) -> bytes:
    config = json.dumps({"architecture": "amd64", "os": "linux",
                         "config": {"Labels": labels or {}},
                         "rootfs": {"type": "layers", "diff_ids": []}}).encode()
    push_blob(host, repo, config, auth)
    descriptors = []
    for layer in layers:
        push_blob(host, repo, layer.data, auth)
        d: dict[str, Any] = {"mediaType": layer.media_type, "digest": digest_of(layer.data),
                             "size": len(layer.data)}
        if layer.annotations:
            d["annotations"] = layer.annotations
        descriptors.append(d)
    return json.dumps({"schemaVersion": 2, "mediaType": OCI_MANIFEST,
                       "config": {"mediaType": OCI_CONFIG, "digest": digest_of(config),
                                  "size": len(config)},
                       "layers": descriptors}).encode()


def put_manifest(host: str, repo: str, ref: str, body: bytes, media_type: str = OCI_MANIFEST,
                 auth: Any = None) -> str:
    r = requests.put(f"http://{host}/v2/{repo}/manifests/{ref}", data=body, auth=auth,
                     headers={"Content-Type": media_type}, timeout=30)
    assert r.status_code == 201, r.text
    return digest_of(body)


def push_image(host: str, repo: str, tag: str, layers: list[Layer],
               labels: dict[str, str] | None = None, auth: Any = None) -> str:
    """Push an image built from ``layers``; return its manifest digest."""
    return put_manifest(host, repo, tag, image_manifest(host, repo, layers, labels, auth),
                        auth=auth)
