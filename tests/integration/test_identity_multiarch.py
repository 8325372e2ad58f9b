"""API identity is the same whichever platform of a multi-arch package is read (issue 23).

A package built for two platforms (each with its own runtime layer, one base layer) and
pushed as one image index to the test registry: read through the index (linux/amd64, as
the installer selects) or through either platform's manifest, it yields the same base
layer, the same type digests (on the definitions the establisher writes) and the same
API digest, while the platforms' manifests differ.
"""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Any

import pytest

from lockwright.activities.base import stream_objects
from lockwright.identity import names
from lockwright.identity.digest import api_digest
from lockwright.identity.record import stamped
from lockwright.oci.cache import PackageCache
from lockwright.oci.client import RegistryClient
from lockwright.oci.fetch import fetch_package
from lockwright.oci.local import read_tarball
from lockwright.oci.push import push_package
from lockwright.oci.reference import parse
from tests.helpers import unique
from tests.integration.test_oci_roundtrip import build, runtime_tarball, write_root

pytestmark = pytest.mark.registry

GADGETS = """\
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: gadgets.example.org}
spec:
  group: example.org
  names: {kind: Gadget, plural: gadgets}
  scope: Cluster
  versions: [{name: v1, served: true, storage: true}]
"""


def identity(ref: str, client: RegistryClient, cache: PackageCache) -> dict[str, Any]:
    """What an install records of ``ref``: base layer, API digest, each type digest."""
    fetched = fetch_package(ref, client, cache, policy="Always", expected_kind="Provider")
    assert fetched.summary is not None
    objects = list(stream_objects(fetched.entry.documents))
    assert len(objects) == 2
    digests = {o["metadata"]["name"]: stamped(o)["metadata"]["annotations"][names.TYPE_DIGEST]
               for o in objects}
    assert fetched.summary.api_digest == api_digest(objects)
    return {"base": fetched.entry.base_layer, "api": fetched.summary.api_digest,
            "types": digests}


def test_every_platform_of_a_package_has_one_api_identity(registry: Any, tmp_path: Path
                                                          ) -> None:
    client = RegistryClient(insecure=[registry.host])
    root = write_root(tmp_path, "Provider")
    (root / "crds" / "gadget.yaml").write_text(GADGETS)
    built = [build(root, tmp_path / f"p-{arch}.xpkg",
                   runtime_tarball(tmp_path / f"rt-{arch}.tar", arch))
             for arch in ("arm64", "amd64")]
    ref = f"{registry.host}/test/{unique('multiarch')}:v1.0.0"
    with contextlib.ExitStack() as stack:
        index = push_package(client, ref, [stack.enter_context(
            contextlib.closing(read_tarball(out))) for out, _, _ in built])
    platforms = {m.platform["architecture"]: m.digest  # type: ignore[index]
                 for m in client.get_manifest(parse(ref)).manifests()}
    assert platforms == {"arm64": built[0][1], "amd64": built[1][1]}
    assert len(set(platforms.values()) | {index}) == 3  # three different manifests
    repo = ref.rpartition(":")[0]
    seen = {name: identity(reference, client, PackageCache(tmp_path / f"cache-{name}"))
            for name, reference in [("index", ref)] + [
                (arch, f"{repo}@{digest}") for arch, digest in platforms.items()]}
    assert seen["index"] == seen["arm64"] == seen["amd64"], seen
    assert seen["index"]["base"].startswith("sha256:")
    assert sorted(seen["index"]["types"]) == ["gadgets.example.org", "widgets.example.org"]
    assert len(set(seen["index"]["types"].values())) == 2
