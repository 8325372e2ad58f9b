"""Dependencies on APIs at ``take_lock``, the real activities against devcluster and the registry.

A Configuration's ``lockwright.dev/requires-apis`` becomes Lock dependencies: on the
provider an index lists (then created by the resolver), on the package in the Lock serving
it (and a message to activate it when an Inactive MRD defines it); nothing for a hand-made
CRD; a message when no index is configured; a lint error
naming the annotation for text that is not an API. The index reader is injected, as the
worker's is (``activities.wire``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from temporalio.exceptions import ApplicationError

from lockwright import contracts as c
from lockwright.identity.apis import ServedType
from lockwright.identity.names import REQUIRES_APIS
from lockwright.index.model import Entry, PackageIndex
from lockwright.k8s import Kube
from lockwright.oci.cache import PackageCache
from lockwright.settings import Settings
from lockwright.xpkg import parse as parse_module
from lockwright.xpkg.lint import LintResult
from tests.activity_view import Activities
from tests.helpers import unique, wait_for
from tests.integration.test_activities import (  # noqa: F401  (kube: a fixture)
    PKG,
    Pushed,
    apply_package,
    install,
    kube,
    provider_root,
    push,
    run,
)

pytestmark = pytest.mark.registry
INDEX_REF = "registry.example/test/index:v1"


@pytest.fixture
def cluster(request: pytest.FixtureRequest) -> Kube:
    """The seam on devcluster, prepared by test_activities' ``kube`` fixture."""
    found: Kube = request.getfixturevalue("kube")
    return found


def activities(cluster: Kube, registry: Any, tmp_path: Path, indexes: Any = None,
               mrds: bool = False) -> Activities:
    # Plain CRDs by default: served as soon as established, no activation policy in the way.
    settings = Settings(cache_dir=str(tmp_path / unique("cache")),
                        insecure_registries=(registry.host,),
                        managed_resource_definitions=mrds)
    cache = PackageCache(settings.cache_dir)
    return Activities(settings, cluster, cache, indexes) if indexes else Activities(
        settings, cluster, cache)


def configuration(registry: Any, tmp_path: Path, requires: str) -> Pushed:
    root = tmp_path / unique("cfg-src")
    root.mkdir()
    meta = {"apiVersion": "meta.pkg.crossplane.io/v1", "kind": "Configuration",
            "metadata": {"name": "needs-apis", "annotations": {REQUIRES_APIS: requires}}}
    (root / "crossplane.yaml").write_text(yaml.safe_dump(meta))
    return push(registry, root, tmp_path)


def provider(registry: Any, tmp_path: Path, safe_start: bool = False) -> tuple[Pushed, str]:
    """The test provider in a group of its own; ``safe_start``: its MRDs start Inactive."""
    group = f"{unique('g')}.example.org"
    root = provider_root(tmp_path, group)
    if safe_start:
        meta = yaml.safe_load((root / "crossplane.yaml").read_text())
        meta["spec"]["capabilities"] = ["safe-start"]
        (root / "crossplane.yaml").write_text(yaml.safe_dump(meta))
    return push(registry, root, tmp_path, group), group


def take(acts: Activities, cluster: Kube, pushed: Pushed) -> tuple[c.TakeLockResult, list[Any]]:
    """Install the Configuration up to the Lock, then take it (again: it is idempotent) to
    read what it says; returns the result and the dependencies its Lock entry records."""
    name = unique("cfg")
    apply_package(cluster, "Configuration", name, pushed.ref)
    rev, _, steps = install(acts, c.CONFIGURATION, name, until="establish_objects")
    took: c.TakeLockResult = next(run(fn, arg) for fn, arg in steps
                                  if fn.__name__ == "take_lock")
    lock = cluster.get("pkg.crossplane.io/v1beta1", "Lock", "lock") or {}
    [entry] = [e for e in lock.get("packages") or [] if e["name"] == rev]
    return took, entry["dependencies"]


def refuse_reading() -> list[PackageIndex]:
    raise AssertionError("the indexes were read for an API the cluster serves")


def test_a_missing_api_depends_on_the_provider_an_index_lists(
        cluster: Kube, registry: Any, tmp_path: Path) -> None:
    prov, group = provider(registry, tmp_path)
    repo = prov.ref.rsplit(":", 1)[0]
    widget = ServedType(group, "Widget", "widgets", ("v1alpha1",))
    index = PackageIndex((Entry(repo, "v0.1.0", prov.digest, "Provider", types=(widget,)),),
                         INDEX_REF)
    acts = activities(cluster, registry, tmp_path, lambda: [index])
    took, deps = take(acts, cluster, configuration(registry, tmp_path,
                                                f"Widget.{group}/v1alpha1"))
    # Pinned to the digest the index lists: the signed index vouches for it, not its tag.
    assert deps == [{"apiVersion": PKG, "kind": "Provider", "package": repo,
                     "constraints": prov.digest}]
    assert took.dependency_message == f'missing dependencies: "{repo}" ({prov.digest})'
    decided = run(acts.resolve_dependencies, c.ResolveDependenciesInput())
    assert [(ch.kind, ch.package, ch.from_version) for ch in decided.changes
            if ch.package.startswith(repo)] == [("Provider", f"{repo}@{prov.digest}", "")]


def test_an_api_a_package_in_the_lock_serves_depends_on_that_package(
        cluster: Kube, registry: Any, tmp_path: Path) -> None:
    prov, group = provider(registry, tmp_path)
    acts = activities(cluster, registry, tmp_path, refuse_reading)
    name = unique("prov")
    apply_package(cluster, "Provider", name, prov.ref)
    install(acts, c.PROVIDER, name, until="ensure_runtime")
    wait_for(lambda: cluster.read_path(f"/apis/{group}/v1alpha1"), timeout=10,
             what=f"{group} in discovery")
    took, deps = take(acts, cluster, configuration(registry, tmp_path,
                                                f"widgets.{group}/v1alpha1"))
    repo = prov.ref.rsplit(":", 1)[0]
    assert deps == [{"apiVersion": PKG, "kind": "Provider", "package": repo,
                     "constraints": ">=v0.1.0"}]
    assert took.dependency_message == ""
    assert took.installed_dependencies == 1


@pytest.mark.parametrize("name_of", ["widgets.{group}/v1alpha1", "Widget.{group}/v1alpha1",
                                     "Widget.{group}"], ids=["plural", "kind", "kind-any-version"])
def test_an_api_an_inactive_mrd_defines_depends_on_its_package_and_says_to_activate_it(
        cluster: Kube, registry: Any, tmp_path: Path, name_of: str) -> None:
    """Named by its plural or by its kind (the MRD's spec.names.kind), as the same API."""
    prov, group = provider(registry, tmp_path, safe_start=True)
    acts = activities(cluster, registry, tmp_path, refuse_reading, mrds=True)
    name = unique("prov")
    apply_package(cluster, "Provider", name, prov.ref)
    install(acts, c.PROVIDER, name, until="ensure_runtime")  # safe-start, no policy
    mrd = cluster.get("apiextensions.crossplane.io/v1alpha1", "ManagedResourceDefinition",
                      f"widgets.{group}")
    assert mrd is not None and mrd["spec"]["state"] == "Inactive"
    api = name_of.format(group=group)
    took, deps = take(acts, cluster, configuration(registry, tmp_path, api))
    repo = prov.ref.rsplit(":", 1)[0]
    assert deps == [{"apiVersion": PKG, "kind": "Provider", "package": repo,
                     "constraints": ">=v0.1.0"}]
    assert took.dependency_message == (
        f"API {api} is defined by ManagedResourceDefinition "
        f"widgets.{group} of Provider {repo}, which is Inactive: activate it with a "
        "ManagedResourceActivationPolicy")


def test_an_api_a_hand_made_crd_serves_needs_nothing(
        cluster: Kube, registry: Any, tmp_path: Path) -> None:
    group = f"{unique('h')}.example.org"
    cluster.create({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
                 "metadata": {"name": f"gadgets.{group}"},
                 "spec": {"group": group, "scope": "Cluster",
                          "names": {"kind": "Gadget", "plural": "gadgets"},
                          "versions": [{"name": "v1", "served": True, "storage": True,
                                        "schema": {"openAPIV3Schema": {"type": "object"}}}]}})
    wait_for(lambda: cluster.read_path(f"/apis/{group}/v1"), timeout=10, what="discovery")
    acts = activities(cluster, registry, tmp_path, refuse_reading)
    took, deps = take(acts, cluster, configuration(registry, tmp_path, f"Gadget.{group}"))
    assert (took.dependency_message, deps) == ("", [])


def test_without_an_index_a_missing_api_says_which_setting_to_set(
        cluster: Kube, registry: Any, tmp_path: Path) -> None:
    api = f"widgets.{unique('m')}.example.org/v1"
    took, deps = take(activities(cluster, registry, tmp_path), cluster,
                      configuration(registry, tmp_path, api))
    assert deps == []
    assert took.dependency_message == (
        f"API {api} is not served, and no package index is configured to find a package "
        "serving it: set LOCKWRIGHT_PACKAGE_INDEXES")


def test_text_that_is_not_an_api_is_refused_naming_the_annotation(
        cluster: Kube, registry: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Built by a tool that does not know the annotation (Crossplane's crank): lockwright's
    # own build refuses it, so its lint is left out while this one is built.
    with monkeypatch.context() as built_elsewhere:
        built_elsewhere.setattr(parse_module, "lint", lambda meta, objects: LintResult((), ()))
        pushed = configuration(registry, tmp_path, "widgets")
    with pytest.raises(ApplicationError) as caught:
        take(activities(cluster, registry, tmp_path), cluster, pushed)
    assert caught.value.non_retryable
    assert caught.value.type == "LintError"
    assert f"metadata.annotations[{REQUIRES_APIS}]: 'widgets' is not an API" in str(
        caught.value)
