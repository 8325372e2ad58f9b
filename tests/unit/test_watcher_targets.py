"""Watcher routing: which package workflows each list or watch event signals."""

from __future__ import annotations

from typing import Any

import pytest

from worker.targets import RESOURCES, Index, Resource, Target, dedupe

RES = {r.kind: r for r in RESOURCES}


def obj(name: str, generation: int = 1, spec: dict[str, Any] | None = None,
        deleting: bool = False, labels: dict[str, str] | None = None,
        owners: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "generation": generation, "resourceVersion": "1"}
    if deleting:
        meta["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    if labels:
        meta["labels"] = labels
    if owners:
        meta["ownerReferences"] = owners
    return {"metadata": meta, "spec": spec or {}}


def provider(name: str, generation: int = 1, drc: str | None = None,
             image: str = "xpkg.example.org/acme/p:v1", **kw: Any) -> dict[str, Any]:
    spec: dict[str, Any] = {"package": image}
    if drc:
        spec["runtimeConfigRef"] = {"name": drc}
    return obj(name, generation, spec, **kw)


def ids(targets: list[Target]) -> list[str]:
    return [t.workflow_id for t in targets]


def seeded() -> Index:
    index = Index()
    index.on_sync(RES["Provider"], [provider("a"), provider("b", drc="custom"),
                                     provider("c", image="reg.example.org/other/c:v1")], True)
    index.on_sync(RES["Configuration"], [obj("cfg", spec={"package": "xpkg.example.org/acme/cfg:v1"})],
                  True)
    index.on_sync(RES["Function"], [obj("fn", spec={"package": "fn.example.org/f/fn:v1"})], True)
    return index


@pytest.mark.parametrize(("kind", "event", "before", "after", "expected"), [
    # packages: add, delete, spec change signal; status / metadata-only writes do not
    ("Provider", "ADDED", None, provider("p"), ["package:provider:p"]),
    ("Provider", "MODIFIED", provider("p"), provider("p", generation=2), ["package:provider:p"]),
    ("Provider", "MODIFIED", provider("p"), provider("p"), []),
    ("Provider", "MODIFIED", provider("p"), provider("p", deleting=True), ["package:provider:p"]),
    ("Provider", "MODIFIED", None, provider("p"), ["package:provider:p"]),
    ("Provider", "DELETED", provider("p"), provider("p"), ["package:provider:p"]),
    ("Configuration", "ADDED", None, obj("c"), ["package:configuration:c"]),
    ("Function", "DELETED", None, obj("f"), ["package:function:f"]),
    ("Provider", "BOOKMARK", None, provider("p"), []),
    # revisions route to their package: controller ownerReference first, then the label
    ("ProviderRevision", "ADDED", None,
     obj("p-abc", owners=[{"kind": "Provider", "name": "p", "controller": True}]),
     ["package:provider:p"]),
    ("ProviderRevision", "ADDED", None, obj("p-abc", labels={"pkg.crossplane.io/package": "q"}),
     ["package:provider:q"]),
    ("FunctionRevision", "MODIFIED", obj("f-1", labels={"pkg.crossplane.io/package": "f"}),
     obj("f-1", generation=2, labels={"pkg.crossplane.io/package": "f"}), ["package:function:f"]),
    ("ConfigurationRevision", "MODIFIED", obj("c-1", labels={"pkg.crossplane.io/package": "c"}),
     obj("c-1", labels={"pkg.crossplane.io/package": "c"}), []),
    ("ProviderRevision", "ADDED", None,
     obj("x-1", owners=[{"kind": "Function", "name": "f", "controller": True}]), []),
    ("ProviderRevision", "DELETED", None, obj("orphan"), []),
])
def test_single_events(kind: str, event: str, before: dict[str, Any] | None,
                       after: dict[str, Any], expected: list[str]) -> None:
    index = Index()
    res: Resource = RES[kind]
    if before is not None:
        index.on_sync(res, [before], signal_all=False)
    assert ids(index.on_event(res, event, after)) == expected


@pytest.mark.parametrize(("kind", "event", "item", "expected"), [
    # DRCs: Providers and Functions naming them; ``default`` when no runtimeConfigRef
    ("DeploymentRuntimeConfig", "MODIFIED", obj("default", generation=3),
     ["package:provider:a", "package:provider:c", "package:function:fn"]),
    ("DeploymentRuntimeConfig", "ADDED", obj("custom"), ["package:provider:b"]),
    ("DeploymentRuntimeConfig", "DELETED", obj("unused"), []),
    # ImageConfigs: every package kind whose spec.package starts with a prefix
    ("ImageConfig", "ADDED", obj("ic", spec={"matchImages": [{"prefix": "xpkg.example.org/acme"}]}),
     ["package:provider:a", "package:provider:b", "package:configuration:cfg"]),
    ("ImageConfig", "DELETED", obj("ic", spec={"matchImages": [{"prefix": "fn.example.org"}]}),
     ["package:function:fn"]),
    ("ImageConfig", "ADDED", obj("ic", spec={"matchImages": [{"prefix": "nothing.example"}]}), []),
])
def test_runtime_and_image_configs(kind: str, event: str, item: dict[str, Any],
                                   expected: list[str]) -> None:
    assert ids(seeded().on_event(RES[kind], event, item)) == expected


def test_image_config_change_signals_old_and_new_matches() -> None:
    index = seeded()
    old = obj("ic", spec={"matchImages": [{"prefix": "reg.example.org"}]})
    index.on_event(RES["ImageConfig"], "ADDED", old)
    new = obj("ic", generation=2, spec={"matchImages": [{"prefix": "fn.example.org"}]})
    assert ids(index.on_event(RES["ImageConfig"], "MODIFIED", new)) == [
        "package:provider:c", "package:function:fn"]


def test_drc_reaches_packages_through_an_image_config_runtime_ref() -> None:
    index = seeded()
    index.on_event(RES["ImageConfig"], "ADDED", obj("ic", spec={
        "matchImages": [{"prefix": "reg.example.org"}], "runtime": {"configRef": {"name": "rt"}}}))
    assert ids(index.on_event(RES["DeploymentRuntimeConfig"], "ADDED", obj("rt"))) == [
        "package:provider:c"]


def test_start_and_resync_signal_everything() -> None:
    index = Index()
    items = [provider("a"), provider("b")]
    assert ids(index.on_sync(RES["Provider"], items, True, "start")) == [
        "package:provider:a", "package:provider:b"]
    assert ids(index.on_sync(RES["Provider"], items, True, "resync")) == [
        "package:provider:a", "package:provider:b"]


def test_config_lists_at_start_signal_nothing_but_relists_signal_changes() -> None:
    index = seeded()
    assert index.on_sync(RES["DeploymentRuntimeConfig"], [obj("default")], True, "start") == []
    changed = index.on_sync(RES["DeploymentRuntimeConfig"], [obj("default", generation=2)],
                            False, "relist after 410")
    assert ids(changed) == ["package:provider:a", "package:provider:c", "package:function:fn"]


def test_relist_after_gone_signals_only_differences() -> None:
    index = Index()
    index.on_sync(RES["Provider"], [provider("same"), provider("changed"), provider("vanished")],
                  True)
    relisted = [provider("same"), provider("changed", generation=2), provider("new")]
    targets = index.on_sync(RES["Provider"], relisted, False, "relist after 410")
    assert ids(targets) == ["package:provider:changed", "package:provider:new",
                            "package:provider:vanished"]
    assert "gone at relist" in targets[-1].reason
    assert set(index.of("Provider")) == {"same", "changed", "new"}


def test_revisions_listed_dedupe_to_one_signal_per_package() -> None:
    revs = [obj(f"p-{i}", labels={"pkg.crossplane.io/package": "p"}) for i in range(3)]
    assert ids(Index().on_sync(RES["ProviderRevision"], revs, True)) == ["package:provider:p"]


def test_target_carries_inputs_for_signal_with_start() -> None:
    index = Index()
    [target] = index.on_event(RES["Provider"], "ADDED", provider("p", generation=4))
    assert target.package_input().kind == "provider" and target.package_input().name == "p"
    assert target.signal_input().generation == 4
    assert target.source == "xpkg.example.org/acme/p:v1"
    [via_rev] = index.on_event(RES["ProviderRevision"], "ADDED",
                               obj("p-1", labels={"pkg.crossplane.io/package": "p"}))
    assert via_rev.source == target.source and via_rev.generation == 4


def test_dedupe_keeps_first() -> None:
    a, b = Target("provider", "x", "one"), Target("provider", "x", "two")
    assert dedupe([a, b, Target("function", "x", "three")])[0].reason == "one"
    assert len(dedupe([a, b])) == 1
