"""The package index against real registries (issue 23): what ``index build`` reads and
skips, and how :class:`IndexReader` reaches an index (rewrite, pull Secret, not an index)."""

from __future__ import annotations

import base64
import io
import json
from typing import Any

import pytest

from lockwright.errors import InvalidPackage, Unauthorized
from lockwright.identity.digest import api_digest
from lockwright.index.build import build
from lockwright.index.push import push_index
from lockwright.index.read import IndexReader
from lockwright.oci.auth import Credentials, DockerAuths
from lockwright.oci.client import RegistryClient
from lockwright.settings import Settings
from lockwright.xpkg.parse import iter_objects
from tests.helpers import unique
from tests.oci_images import PROVIDER_YAML, Entry, Layer, package_layer, push_image, tar_bytes

pytestmark = pytest.mark.registry
Obj = dict[str, Any]
REQUIRING = PROVIDER_YAML.replace(
    "  name: provider-test\n",
    "  name: provider-test\n  annotations:\n"
    "    lockwright.dev/requires-apis: 'queues.sqs.example.org/v1, Topic.sns.example.org'\n")


def test_build_reads_each_version_and_notes_what_it_skips(registry: Any) -> None:
    host, repo = registry.host, unique("idx")
    client = RegistryClient(insecure=[host])
    digest = push_image(host, repo, "v1.0.0", [Layer(package_layer(REQUIRING))])
    push_image(host, repo, "v1.1.0", [Layer(package_layer(PROVIDER_YAML))])
    unmarked = push_image(host, repo, "v1.2.0", [  # no base marker: every layer is read
        Layer(tar_bytes([Entry("other", b"x")]), annotations={}),
        Layer(package_layer(PROVIDER_YAML), annotations={})])
    push_image(host, repo, "not-a-package", [Layer(tar_bytes([Entry("other", b"x")]))])
    push_image(host, repo, f"sha256-{'a' * 64}.sig", [Layer(b"payload")])
    push_index(client, f"{host}/{repo}:index", b'{"kind": "PackageIndex", "packages": []}')
    notes: list[str] = []
    index = build(client, [f"{host}/{repo}"], notes.append)
    assert [(e.tag, e.kind, e.name) for e in index.entries] == [
        ("v1.0.0", "Provider", "provider-test"), ("v1.1.0", "Provider", "provider-test"),
        ("v1.2.0", "Provider", "provider-test")]
    first = index.entries[0]
    assert (first.repository, first.digest, first.crossplane) == (
        f"{host}/{repo}", digest, ">=v1.14.0-0")
    assert first.base_layer.startswith("sha256:") and index.entries[2].base_layer == ""
    assert first.requires_apis == ("queues.sqs.example.org/v1", "Topic.sns.example.org")
    objects = [o for _, o in iter_objects(io.BytesIO(REQUIRING.encode()))]
    assert first.api_digest == api_digest(objects)
    [widget] = first.types
    assert (widget.name, widget.kind, widget.versions) == ("widgets.example.org", "Widget",
                                                           ("v1",))
    assert index.entries[2].digest == unmarked
    assert sorted(n.split(": ", 1)[1] for n in notes) == sorted([
        "no layer is marked as the base layer; read all 2 layers",
        "skipped, a package index",
        "skipped, not a package: package.yaml not found in package",
        "skipped, a signature, attestation or referrers tag"]), notes


class Counting(RegistryClient):
    """A registry client counting the blobs it downloads."""

    downloads = 0

    def download_blob(self, *args: Any, **kwargs: Any) -> int:
        self.downloads += 1
        return super().download_blob(*args, **kwargs)


def test_nothing_is_read_twice(registry: Any) -> None:
    host, repo = registry.host, unique("idx")
    for tag in ("v1.0.0", "v1.0.1"):  # a retag: the same digest
        push_image(host, repo, tag, [Layer(package_layer(PROVIDER_YAML))])
    controller_only = [Layer(package_layer(PROVIDER_YAML)), Layer(b"controller", {})]
    push_image(host, repo, "v1.1.0", controller_only)  # the same base layer
    first = Counting(insecure=[host])
    index = build(first, [f"{host}/{repo}"], print)
    assert first.downloads == 1  # one base layer: a retag and a controller-only release
    again = Counting(insecure=[host])
    push_image(host, repo, "v1.2.0", [Layer(package_layer(REQUIRING))])
    later = build(again, [f"{host}/{repo}"], print, previous=index)
    assert again.downloads == 1
    by_tag = {e.tag: e for e in later.entries}
    assert sorted(by_tag) == ["v1.0.0", "v1.0.1", "v1.1.0", "v1.2.0"]
    assert {e.tag: e for e in index.entries} == {t: by_tag[t] for t in ("v1.0.0", "v1.0.1",
                                                                        "v1.1.0")}
    assert by_tag["v1.2.0"].requires_apis == ("queues.sqs.example.org/v1", "Topic.sns.example.org")


def dockerconfig(host: str, user: str, password: str) -> Obj:
    auth = base64.b64encode(f"{user}:{password}".encode()).decode()
    raw = json.dumps({"auths": {host: {"auth": auth}}}).encode()
    return {"data": {".dockerconfigjson": base64.b64encode(raw).decode()}}


def image_configs(mirror: str, real: str) -> list[Obj]:
    return [
        {"metadata": {"name": "mirror"},
         "spec": {"matchImages": [{"prefix": mirror}], "rewriteImage": {"prefix": real}}},
        {"metadata": {"name": "creds"},
         "spec": {"matchImages": [{"prefix": real}],
                  "registry": {"authentication": {"pullSecretRef": {"name": "idx-pull"}}}}}]


def test_reader_rewrites_and_pulls_with_the_image_configs_secret(auth_registry: Any) -> None:
    host, repo = auth_registry.host, unique("idx")
    owner = RegistryClient(insecure=[host], auths=DockerAuths(
        {host: Credentials(auth_registry.username, auth_registry.password)}))
    document = (b'{"apiVersion": "index.lockwright.dev/v1alpha1", "kind": "PackageIndex", '
                b'"packages": [{"repository": "r.example.org/p", "tag": "v1.0.0", '
                b'"digest": "sha256:1", "kind": "Provider"}]}')
    push_index(owner, f"{host}/{repo}/index:v1", document)
    source = "mirror.example.org/team/index:v1"
    settings = Settings(package_indexes=(source,), insecure_registries=(host,))
    secrets = {"idx-pull": dockerconfig(host, auth_registry.username, auth_registry.password)}
    reader = IndexReader(settings, RegistryClient(insecure=[host], auths=DockerAuths()),
                         image_configs("mirror.example.org/team/", f"{host}/{repo}/"),
                         secrets.get)
    [index] = reader.read()
    assert [(e.reference, e.index) for e in index.entries] == [
        ("r.example.org/p:v1.0.0", source)]
    without = IndexReader(settings, RegistryClient(insecure=[host], auths=DockerAuths()),
                          image_configs("mirror.example.org/team/", f"{host}/{repo}/"),
                          lambda _name: None)
    with pytest.raises(Unauthorized):
        without.read()


def test_reader_refuses_what_is_not_an_index(registry: Any) -> None:
    host, repo = registry.host, unique("idx")
    push_image(host, repo, "v1.0.0", [Layer(package_layer(PROVIDER_YAML))])
    ref = f"{host}/{repo}:v1.0.0"
    reader = IndexReader(Settings(package_indexes=(ref,)), RegistryClient(insecure=[host]))
    with pytest.raises(InvalidPackage, match=f"{ref} is not a package index: its config is "
                       "'application/vnd.oci.image.config.v1\\+json'"):
        reader.read()
