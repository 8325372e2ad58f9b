"""Which reads of the ImageConfigs the API server's watch cache may answer
(docs/design.md, "Configuration read from the watch cache"): a runtime's configuration,
yes; a pull's or a verification's, never (verification fails closed, so an ImageConfig
requiring a signature must not be missed by a package applied after it)."""

from __future__ import annotations

from typing import Any

from lockwright.activities.reads import Registries, RuntimeConfigs

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


def test_a_pull_or_a_verification_reads_them_consistently() -> None:
    kube = _Kube()
    registries = Registries(kube, "crossplane-system", ())  # type: ignore[arg-type]
    registries.resolution("xpkg.example.org/provider-nop:v1")
    registries.image_configs()
    assert kube.lists == [False, False]
