"""Which reads of the ImageConfigs the API server's watch cache may answer
(docs/design.md, "Configuration read from the watch cache"): a runtime's configuration,
the pull of a digest already chosen and the controller image's identity, yes; the
resolution of a tag and a verification, never (verification fails closed, so an
ImageConfig requiring a signature must not be missed by a package applied after it)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from lockwright.activities import contents as contents_module
from lockwright.activities.contents import Contents
from lockwright.activities.identity import Identity
from lockwright.activities.reads import PackageReader, Registries, RuntimeConfigs
from lockwright.oci.cache import PackageCache

CONFIG = {"apiVersion": "pkg.crossplane.io/v1beta1", "kind": "ImageConfig",
          "metadata": {"name": "runtime"},
          "spec": {"matchImages": [{"prefix": "xpkg.example.org/"}],
                   "runtime": {"configRef": {"name": "fast"}}}}


class _Kube:
    """Records how the ImageConfigs were listed; answers one config and any DRC."""

    def __init__(self) -> None:
        self.lists: list[bool] = []

    def list(self, api: str, kind: str, *, cached: bool = False) -> list[Any]:
        assert kind == "ImageConfig"
        self.lists.append(cached)
        return [CONFIG]

    def get(self, api: str, kind: str, name: str) -> dict[str, Any]:
        return {"metadata": {"name": name}}


def test_a_runtime_config_is_found_from_the_watch_cache() -> None:
    kube = _Kube()
    configs = RuntimeConfigs(kube, Registries(kube, "crossplane-system", ()))  # type: ignore[arg-type]
    drc, chosen = configs.for_image("xpkg.example.org/provider-nop:v1", None)
    assert drc == {"metadata": {"name": "fast"}} and chosen is not None
    assert kube.lists == [True]


def test_a_tag_resolution_or_a_verification_reads_them_consistently() -> None:
    kube = _Kube()
    registries = Registries(kube, "crossplane-system", ())  # type: ignore[arg-type]
    registries.resolution("xpkg.example.org/provider-nop:v1")
    registries.image_configs()
    assert kube.lists == [False, False]


DIGEST = "sha256:" + "a" * 64
REVISION = {"metadata": {"name": "provider-nop-1"},
            "spec": {"image": "xpkg.example.org/provider-nop:v1"}}


class _Registry:
    """A registry client that names one digest for any tag."""

    def resolve(self, ref: object) -> str:
        return DIGEST


class _Registries(Registries):
    """Registries whose client is :class:`_Registry`: no Secret is read."""

    def registry(self, pull_secrets: list[str]) -> Any:
        return _Registry()


def test_a_digest_chosen_already_is_pulled_as_the_watch_cache_says(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    kube = _Kube()
    pulled: list[str] = []

    def fetch(ref: str, client: object, cache: object, expected_kind: str) -> Any:
        pulled.append(ref)
        raise _Pulled

    monkeypatch.setattr(contents_module, "fetch_package", fetch)
    registries = _Registries(kube, "crossplane-system", ())  # type: ignore[arg-type]
    contents = Contents(PackageCache(tmp_path), registries)
    with pytest.raises(_Pulled):
        contents.cached("Provider", REVISION, DIGEST)
    assert pulled == [f"xpkg.example.org/provider-nop:v1@{DIGEST}"]
    assert kube.lists == [True]


def test_the_controller_image_is_resolved_as_the_watch_cache_says(tmp_path: Path) -> None:
    kube = _Kube()
    registries = _Registries(kube, "crossplane-system", ())  # type: ignore[arg-type]
    reader = PackageReader(kube)  # type: ignore[arg-type]
    contents = Contents(PackageCache(tmp_path), registries)
    identity = Identity(kube, reader, contents, registries,  # type: ignore[arg-type]
                        RuntimeConfigs(kube, registries))  # type: ignore[arg-type]
    assert identity.resolve(REVISION, "xpkg.example.org/provider-nop-controller:v1") == DIGEST
    assert kube.lists == [True]


class _Pulled(Exception):
    """The fake pull was asked for: the test has what it needs."""
