"""Watcher routing: which package workflows each list or watch event signals.

Most tables list package workflows only (``ids``); the dependency resolver's routing has
its own tests at the end.
"""

from __future__ import annotations

from typing import Any

import pytest

from lockwright.worker.targets import RESOURCES, Index, Resource, Target, dedupe, in_namespace, metadata_only

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
    return [t.workflow_id for t in targets if not t.resolver]


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


def own(name: str, package: str, uid: str) -> dict[str, Any]:
    """A revision under the controller reference of Provider ``package`` (UID ``uid``)."""
    return obj(name, owners=[{"kind": "Provider", "name": package, "uid": uid,
                              "controller": True}])


def with_uid(item: dict[str, Any], uid: str) -> dict[str, Any]:
    item["metadata"]["uid"] = uid
    return item


@pytest.mark.parametrize(("event", "revision", "expected"), [
    # made by the package's own pass: it goes on with it, no second pass
    ("ADDED", own("p-2", "p", "uid-p"), []),
    # made by anyone else: by hand under another object of the name, restored, labelled only
    ("ADDED", own("p-2", "p", "uid-old"), ["package:provider:p"]),
    ("ADDED", obj("p-2", labels={"pkg.crossplane.io/package": "p"}), ["package:provider:p"]),
    ("ADDED", own("q-2", "q", "uid-p"), ["package:provider:q"]),  # a package not seen yet
    # its later changes and its deletion still reach the package
    ("DELETED", own("p-2", "p", "uid-p"), ["package:provider:p"]),
])
def test_a_revision_its_package_made_signals_nothing_when_added(
        event: str, revision: dict[str, Any], expected: list[str]) -> None:
    index = Index()
    index.on_sync(RES["Provider"], [with_uid(provider("p"), "uid-p")], signal_all=False)
    assert ids(index.on_event(RES["ProviderRevision"], event, revision)) == expected


def test_a_revision_its_package_made_is_still_indexed_and_listed() -> None:
    index = Index()
    index.on_sync(RES["Provider"], [with_uid(provider("p"), "uid-p")], signal_all=False)
    assert index.on_event(RES["ProviderRevision"], "ADDED", own("p-2", "p", "uid-p")) == []
    assert index.of("ProviderRevision")["p-2"].package == "p"
    changed = own("p-2", "p", "uid-p")
    changed["metadata"]["generation"] = 2
    assert ids(index.on_event(RES["ProviderRevision"], "MODIFIED", changed)) == [
        "package:provider:p"]
    assert ids(index.on_sync(RES["ProviderRevision"], [changed], signal_all=True)) == [
        "package:provider:p"]


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


# --- Secrets: followed through what packages and ImageConfigs reference ---------------------
def secret(name: str, rv: str = "1", deleting: bool = False) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": "crossplane-system", "resourceVersion": rv}
    if deleting:
        meta["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    return {"metadata": meta}


def image_config(name: str, prefix: str, pull_secret: str = "", generation: int = 1
                 ) -> dict[str, Any]:
    spec: dict[str, Any] = {"matchImages": [{"prefix": prefix}]}
    if pull_secret:
        spec["registry"] = {"authentication": {"pullSecretRef": {"name": pull_secret}}}
    return obj(name, generation, spec)


PRIV_SPEC = {"package": "private.example.org/p:v1",
             "packagePullSecrets": [{"name": "pull"}, {"name": "shared"}]}


def with_secrets() -> Index:
    """seeded() plus a Provider and a Configuration with pull secrets, and an ImageConfig
    whose pull secret covers ``reg.example.org`` (Provider c)."""
    index = seeded()
    index.on_event(RES["Provider"], "ADDED", obj("priv", spec=PRIV_SPEC))
    index.on_event(RES["Configuration"], "ADDED", obj("cfg-priv", spec={
        "package": "private.example.org/cfg:v1", "packagePullSecrets": [{"name": "shared"}]}))
    index.on_event(RES["ImageConfig"], "ADDED", image_config("ic", "reg.example.org", "icpull"))
    return index


@pytest.mark.parametrize(("event", "before", "after", "expected"), [
    ("ADDED", None, secret("pull"), ["package:provider:priv"]),
    ("ADDED", None, secret("shared"), ["package:provider:priv", "package:configuration:cfg-priv"]),
    ("ADDED", None, secret("icpull"), ["package:provider:c"]),
    ("DELETED", secret("pull"), secret("pull"), ["package:provider:priv"]),
    # no generation: a new resourceVersion is the change; the same one is a repeat
    ("MODIFIED", secret("pull"), secret("pull", rv="2"), ["package:provider:priv"]),
    ("MODIFIED", secret("pull"), secret("pull"), []),
    ("MODIFIED", secret("icpull"), secret("icpull", deleting=True), ["package:provider:c"]),
    # lockwright's own TLS Secrets (and anything else unreferenced) signal no one
    ("ADDED", None, secret("priv-tls-server"), []),
    ("MODIFIED", secret("priv-tls-server"), secret("priv-tls-server", rv="9"), []),
    ("DELETED", secret("priv-tls-server"), secret("priv-tls-server"), []),
])
def test_secret_events_reach_the_packages_that_use_them(
        event: str, before: dict[str, Any] | None, after: dict[str, Any],
        expected: list[str]) -> None:
    index = with_secrets()
    if before is not None:
        index.on_event(RES["Secret"], "ADDED", before)
    assert ids(index.on_event(RES["Secret"], event, after)) == expected


def test_secret_signal_reason_names_the_secret_and_nothing_else() -> None:
    [target] = with_secrets().on_event(RES["Secret"], "ADDED", secret("pull"))
    assert target.signal_input().reason == "Secret crossplane-system/pull added"
    assert target.source == "private.example.org/p:v1"


def test_index_remembers_pull_secret_names() -> None:
    index = with_secrets()
    assert index.of("Provider")["priv"].pull_secrets == ("pull", "shared")
    assert index.of("Provider")["a"].pull_secrets == ()
    assert index.of("ImageConfig")["ic"].pull_secrets == ("icpull",)


def test_image_config_pull_secret_change_signals_and_reroutes() -> None:
    index = with_secrets()
    moved = image_config("ic", "reg.example.org", "newpull", generation=2)
    assert ids(index.on_event(RES["ImageConfig"], "MODIFIED", moved)) == ["package:provider:c"]
    assert index.on_event(RES["Secret"], "ADDED", secret("icpull")) == []
    assert ids(index.on_event(RES["Secret"], "ADDED", secret("newpull"))) == [
        "package:provider:c"]


def test_new_package_naming_a_secret_is_routed_its_later_changes() -> None:
    index = with_secrets()
    index.on_event(RES["Secret"], "ADDED", secret("late"))
    assert index.on_event(RES["Secret"], "MODIFIED", secret("late", rv="2")) == []
    index.on_event(RES["Function"], "MODIFIED", obj("fn", generation=2, spec={
        "package": "fn.example.org/f/fn:v1", "packagePullSecrets": [{"name": "late"}]}))
    assert ids(index.on_event(RES["Secret"], "MODIFIED", secret("late", rv="3"))) == [
        "package:function:fn"]


def test_secret_lists_at_start_signal_nothing_but_relists_signal_changes() -> None:
    index = with_secrets()
    listed = [secret("pull"), secret("icpull"), secret("shared"), secret("x-tls")]
    assert index.on_sync(RES["Secret"], listed, True, "start") == []
    relisted = [secret("pull", rv="5"), secret("icpull"), secret("x-tls", rv="6"),
                secret("new-tls")]
    targets = index.on_sync(RES["Secret"], relisted, False, "relist after 410")
    assert ids(targets) == ["package:provider:priv", "package:configuration:cfg-priv"]
    assert [t.reason for t in targets] == [
        "Secret crossplane-system/pull relist after 410",
        "Secret crossplane-system/shared gone at relist after 410"]
    assert set(index.of("Secret")) == {"pull", "icpull", "x-tls", "new-tls"}


def test_packages_keep_the_generation_rule_despite_new_resource_versions() -> None:
    index = with_secrets()
    status_write = obj("priv", spec=PRIV_SPEC)
    status_write["metadata"]["resourceVersion"] = "77"
    assert index.on_event(RES["Provider"], "MODIFIED", status_write) == []


def test_metadata_only_keeps_no_contents() -> None:
    full = {"apiVersion": "v1", "kind": "Secret", "type": "Opaque",
            "data": {"token": "c2VjcmV0"}, "stringData": {"token": "secret"},
            "metadata": {"name": "pull", "namespace": "crossplane-system",
                         "resourceVersion": "4", "uid": "u-1",
                         "annotations": {"kubectl.kubernetes.io/last-applied-configuration":
                                         '{"data":{"token":"c2VjcmV0"}}'},
                         "managedFields": [{"fieldsV1": {"f:data": {"f:token": {}}}}]}}
    kept = metadata_only(full)
    assert kept == {"metadata": {"name": "pull", "namespace": "crossplane-system",
                                 "uid": "u-1", "resourceVersion": "4"}}  # no contents
    assert RES["Secret"].keep(full) == kept
    assert "c2VjcmV0" not in repr(kept) and "secret" not in repr(kept)
    assert RES["Provider"].keep(provider("p")) == provider("p")


def test_resource_paths_and_namespace_binding() -> None:
    assert RES["Provider"].path == "/apis/pkg.crossplane.io/v1/providers"
    assert RES["Secret"].path == "/api/v1/namespaces/crossplane-system/secrets"
    bound = {r.kind: r for r in in_namespace(RESOURCES, "lw-system")}
    assert bound["Secret"].path == "/api/v1/namespaces/lw-system/secrets"
    assert bound["Provider"] == RES["Provider"]
    assert bound["Secret"].describe("pull") == "Secret lw-system/pull"
    assert RES["ImageConfig"].describe("ic") == "ImageConfig ic"


def test_pausing_and_resuming_a_package_signals_it() -> None:
    """crossplane.io/paused changes no generation; the watcher follows it anyway."""
    from lockwright.worker.targets import RESOURCES, Index

    provider = next(r for r in RESOURCES if r.kind == "Provider")
    index = Index()
    obj = {"metadata": {"name": "p", "generation": 1}, "spec": {"package": "x.io/p:v1"}}
    assert index.on_event(provider, "ADDED", obj)
    paused = {**obj, "metadata": {**obj["metadata"],
                                  "annotations": {"crossplane.io/paused": "true"}}}
    assert [t.name for t in index.on_event(provider, "MODIFIED", paused)
            if not t.resolver] == ["p"]
    assert index.on_event(provider, "MODIFIED", {**paused, "status": {"x": 1}}) == []
    assert [t.name for t in index.on_event(provider, "MODIFIED", obj) if not t.resolver] == ["p"]


def test_accepting_a_plan_by_annotation_signals_the_package() -> None:
    """lockwright.io/accept-plan moves no generation; without a signal the acceptance
    waited for the periodic recheck of an unhealthy package (five minutes by default)."""
    from lockwright.worker.targets import RESOURCES, Index

    provider = next(r for r in RESOURCES if r.kind == "Provider")
    index = Index()
    obj = {"metadata": {"name": "p", "generation": 2}, "spec": {"package": "x.io/p:v2"}}
    index.on_event(provider, "ADDED", obj)
    accepted = {**obj, "metadata": {**obj["metadata"],
                                    "annotations": {"lockwright.io/accept-plan": "p-abc"}}}
    assert [t.name for t in index.on_event(provider, "MODIFIED", accepted)
            if not t.resolver] == ["p"]
    assert index.on_event(provider, "MODIFIED", {**accepted, "status": {"x": 1}}) == []
    again = {**accepted, "metadata": {**accepted["metadata"],
                                      "annotations": {"lockwright.io/accept-plan": "p-def"}}}
    assert [t.name for t in index.on_event(provider, "MODIFIED", again) if not t.resolver] == ["p"]



def test_changing_the_upgrade_gate_by_annotation_signals_the_package() -> None:
    """lockwright.dev/upgrade-gate moves no generation either: a held upgrade set to
    Evidence (or one to be held, set to Strict) is looked at again at once."""
    from lockwright.worker.targets import RESOURCES, Index

    provider = next(r for r in RESOURCES if r.kind == "Provider")
    index = Index()
    obj = {"metadata": {"name": "p", "generation": 2}, "spec": {"package": "x.io/p:v2"}}
    index.on_event(provider, "ADDED", obj)
    for value in ("Strict", "Evidence"):
        gated = {**obj, "metadata": {**obj["metadata"],
                                     "annotations": {"lockwright.dev/upgrade-gate": value}}}
        assert [t.name for t in index.on_event(provider, "MODIFIED", gated)
                if not t.resolver] == ["p"]
        assert index.on_event(provider, "MODIFIED", {**gated, "status": {"x": 1}}) == []


def test_pinning_an_api_by_annotation_signals_the_package() -> None:
    """lockwright.dev/pin-api-digest moves no generation: setting the pin to the refused
    revision's API (the fix a refusal names) or removing it is looked at again at once."""
    from lockwright.worker.targets import RESOURCES, Index

    provider = next(r for r in RESOURCES if r.kind == "Provider")
    index = Index()
    obj = {"metadata": {"name": "p", "generation": 2}, "spec": {"package": "x.io/p:v2"}}
    index.on_event(provider, "ADDED", obj)
    for value in ("sha256:" + "a" * 64, "sha256:" + "b" * 64):
        pinned = {**obj, "metadata": {**obj["metadata"],
                                      "annotations": {"lockwright.dev/pin-api-digest": value}}}
        assert [t.name for t in index.on_event(provider, "MODIFIED", pinned)
                if not t.resolver] == ["p"]
        assert index.on_event(provider, "MODIFIED", {**pinned, "status": {"x": 1}}) == []
    assert [t.name for t in index.on_event(provider, "MODIFIED", obj) if not t.resolver] == ["p"]


# --- the dependency resolver --------------------------------------------------------------
def resolver_signalled(targets: list[Target]) -> bool:
    return any(t.resolver and t.workflow_id == "resolve:lock" for t in targets)


def lock(entries: int = 1, dependencies: bool = False, generation: int = 1) -> dict[str, Any]:
    deps = [{"package": "x.io/p", "constraints": ">=v1"}] if dependencies else []
    return {"metadata": {"name": "lock", "generation": generation},
            "packages": [{"name": f"r{i}", "dependencies": deps if i == 0 else []}
                         for i in range(entries)]}


@pytest.mark.parametrize(("before", "after", "expected"), [
    (None, lock(), True),  # first sight: its status and finalizer get written
    (lock(), lock(2, generation=2), False),  # a package without dependencies joined
    (lock(0), lock(1, generation=2), True),  # no longer empty: Resolved, the finalizer
    (lock(1), lock(0, generation=2), True),  # empty: conditions and finalizer cleared
    (lock(1), lock(2, dependencies=True, generation=2), True),  # a dependency to resolve
    (lock(2, dependencies=True), lock(2, generation=2), True),  # the last one went
    (lock(2, dependencies=True), lock(3, dependencies=True, generation=2), True),
    (lock(2, dependencies=True), lock(2, dependencies=True), False),  # a status write
])
def test_resolver_is_signalled_when_a_lock_change_can_matter(
        before: dict[str, Any] | None, after: dict[str, Any], expected: bool) -> None:
    index = Index()
    if before is not None:
        index.on_sync(RES["Lock"], [before], signal_all=False)
    event = "ADDED" if before is None else "MODIFIED"
    assert resolver_signalled(index.on_event(RES["Lock"], event, after)) is expected


@pytest.mark.parametrize(("kind", "event", "before", "after"), [
    ("Provider", "ADDED", None, provider("p")),
    ("Configuration", "MODIFIED", obj("c"), obj("c", generation=2)),  # spec changed
    ("Function", "DELETED", obj("f"), obj("f")),
    ("ImageConfig", "ADDED", None, obj("ic", spec={"registry": {"authentication": {
        "pullSecretRef": {"name": "creds"}}}})),
])
def test_package_and_pull_secret_changes_signal_the_resolver_only_with_dependencies(
        kind: str, event: str, before: dict[str, Any] | None,
        after: dict[str, Any]) -> None:
    for dependencies in (False, True):
        index = Index()
        index.on_sync(RES["Lock"], [lock(1, dependencies)], signal_all=False)
        if before is not None:
            index.on_sync(RES[kind], [before], signal_all=False)
        found = resolver_signalled(index.on_event(RES[kind], event, after))
        assert found is dependencies, (kind, dependencies)


@pytest.mark.parametrize(("kind", "event", "before", "after"), [
    ("Configuration", "MODIFIED", obj("c"), obj("c")),  # a status write
    ("ProviderRevision", "ADDED", None,
     obj("p-abc", labels={"pkg.crossplane.io/package": "p"})),
    ("ImageConfig", "ADDED", None, obj("ic")),  # no pull secret
])
def test_what_never_signals_the_resolver(kind: str, event: str,
                                         before: dict[str, Any] | None,
                                         after: dict[str, Any]) -> None:
    index = Index()
    index.on_sync(RES["Lock"], [lock(1, dependencies=True)], signal_all=False)
    if before is not None:
        index.on_sync(RES[kind], [before], signal_all=False)
    assert not resolver_signalled(index.on_event(RES[kind], event, after))


def test_resolver_once_per_list_and_named_by_task_queue() -> None:
    index = Index(task_queue="e2e-1234")
    index.on_sync(RES["Lock"], [lock(1, dependencies=True)], signal_all=False)
    targets = index.on_sync(RES["Provider"], [provider("a"), provider("b")], signal_all=True)
    resolvers = [t for t in targets if t.resolver]
    assert [t.workflow_id for t in resolvers] == ["resolve:lock:e2e-1234"]
    assert ids(targets) == ["package:provider:a:e2e-1234", "package:provider:b:e2e-1234"]


@pytest.mark.parametrize("kind, before, event, after, expected", [
    ("Provider", None, "ADDED", provider("p"), ["package:provider:p:cluster-b"]),
    ("Configuration", obj("c"), "DELETED", obj("c"), ["package:configuration:c:cluster-b"]),
    ("ProviderRevision", None, "ADDED",
     obj("p-1", labels={"pkg.crossplane.io/package": "p"}), ["package:provider:p:cluster-b"]),
    ("DeploymentRuntimeConfig", None, "ADDED", obj("default"),
     ["package:provider:a:cluster-b"]),
])
def test_every_package_target_carries_the_task_queue(
        kind: str, before: dict[str, Any] | None, event: str, after: dict[str, Any],
        expected: list[str]) -> None:
    """Two clusters sharing a namespace: a watcher off the default queue signals only its
    own cluster's package workflows (ids ending in its queue), however the event routes."""
    index = Index(task_queue="cluster-b")
    index.on_sync(RES["Provider"], [provider("a")], signal_all=False)
    if before is not None:
        index.on_sync(RES[kind], [before], signal_all=False)
    assert ids(index.on_event(RES[kind], event, after)) == expected
    relisted = ids(index.on_sync(RES["Provider"], [provider("a")], signal_all=True))
    assert "package:provider:a:cluster-b" in relisted
    assert all(i.endswith(":cluster-b") for i in relisted), relisted


def test_the_default_queue_keeps_the_ids_it_always_had() -> None:
    targets = Index().on_event(RES["Provider"], "ADDED", provider("p"))
    assert ids(targets) == ["package:provider:p"]
    assert [t.package_input().name for t in targets] == ["p"]


# --- the activation workflow (Crossplane v2's activation policies) ---------------------
ACTIVATE = "activate:definitions"


@pytest.mark.parametrize(("kind", "event", "before", "after", "expected"), [
    ("ManagedResourceActivationPolicy", "ADDED", None, obj("p"), [ACTIVATE]),
    ("ManagedResourceActivationPolicy", "MODIFIED", obj("p"), obj("p", 2), [ACTIVATE]),
    ("ManagedResourceActivationPolicy", "MODIFIED", obj("p"), obj("p"), []),  # status only
    ("ManagedResourceActivationPolicy", "DELETED", obj("p"), obj("p"), [ACTIVATE]),
    ("ManagedResourceDefinition", "ADDED", None, obj("things.x.io"), [ACTIVATE]),
    ("ManagedResourceDefinition", "MODIFIED", obj("things.x.io"), obj("things.x.io", 2),
     [ACTIVATE]),  # its state (spec) changed
    ("ManagedResourceDefinition", "MODIFIED", obj("things.x.io"), obj("things.x.io"), []),
    ("ManagedResourceDefinition", "DELETED", obj("things.x.io"), obj("things.x.io"),
     [ACTIVATE]),
])
def test_policies_and_definitions_signal_the_activation_workflow(
        kind: str, event: str, before: dict[str, Any] | None, after: dict[str, Any],
        expected: list[str]) -> None:
    index = Index()
    if before is not None:
        index.on_event(RES[kind], "ADDED", before)
    assert [t.workflow_id for t in index.on_event(RES[kind], event, after)] == expected


def test_a_crd_signals_activation_only_when_an_mrd_has_its_name() -> None:
    index = Index(task_queue="q")
    index.on_event(RES["ManagedResourceDefinition"], "ADDED", obj("things.x.io"))
    crd = RES["CustomResourceDefinition"]
    assert [t.workflow_id for t in index.on_event(crd, "ADDED", obj("things.x.io"))] == [
        "activate:definitions:q"]
    assert index.on_event(crd, "ADDED", obj("others.x.io")) == []
    assert [t.workflow_id for t in index.on_event(crd, "DELETED", obj("things.x.io"))] == [
        "activate:definitions:q"]


def test_mrds_and_crds_are_watched_as_metadata_keeping_their_generation() -> None:
    assert RES["ManagedResourceDefinition"].metadata_only
    assert RES["CustomResourceDefinition"].metadata_only
    assert not RES["ManagedResourceActivationPolicy"].metadata_only
    assert metadata_only(obj("things.x.io", 3))["metadata"]["generation"] == 3
    assert RES["ManagedResourceDefinition"].path == (
        "/apis/apiextensions.crossplane.io/v1alpha1/managedresourcedefinitions")


def test_a_list_of_many_definitions_signals_activation_once() -> None:
    index = Index()
    mrds = [obj(f"t{i}.x.io") for i in range(2000)]
    targets = index.on_sync(RES["ManagedResourceDefinition"], mrds, True)
    assert [t.workflow_id for t in targets] == [ACTIVATE]


def test_a_revisions_recorded_activation_count_signals_activation_only() -> None:
    index = Index()
    rev = obj("p-abc", labels={"pkg.crossplane.io/package": "p"})
    index.on_event(RES["ProviderRevision"], "ADDED", rev)
    counted = obj("p-abc", labels={"pkg.crossplane.io/package": "p"})
    counted["metadata"]["annotations"] = {"lockwright.dev/active-definitions": "3"}
    assert [t.workflow_id for t in index.on_event(RES["ProviderRevision"], "MODIFIED",
                                                  counted)] == [ACTIVATE]
    moved = obj("p-abc", 2, labels={"pkg.crossplane.io/package": "p"})
    moved["metadata"]["annotations"] = {"lockwright.dev/active-definitions": "3"}
    assert [t.workflow_id for t in index.on_event(RES["ProviderRevision"], "MODIFIED",
                                                  moved)] == ["package:provider:p"]


def _controlled(name: str, revision: str) -> dict[str, Any]:
    return obj(name, owners=[{"apiVersion": "pkg.crossplane.io/v1", "kind": "ProviderRevision",
                              "name": revision, "uid": "u", "controller": True}])


def _revision(name: str, count: str | None) -> dict[str, Any]:
    rev = obj(name, labels={"pkg.crossplane.io/package": "p"})
    if count is not None:
        rev["metadata"]["annotations"] = {"lockwright.dev/active-definitions": count}
    return rev


@pytest.mark.parametrize(("count", "event", "expected"), [
    (None, "ADDED", []),  # its install is establishing it: the recording will signal
    ("0", "ADDED", [ACTIVATE]),  # recorded: an MRD added since is the activation's
    (None, "DELETED", [ACTIVATE]),  # gone: always
])
def test_an_mrd_its_install_is_still_establishing_waits_for_the_recorded_count(
        count: str | None, event: str, expected: list[str]) -> None:
    index = Index()
    index.on_event(RES["ProviderRevision"], "ADDED", _revision("p-abc", count))
    mrd = _controlled("things.x.io", "p-abc")
    if event == "DELETED":
        index.on_event(RES["ManagedResourceDefinition"], "ADDED", mrd)
    assert ids(index.on_event(RES["ManagedResourceDefinition"], event, mrd)) == expected


def test_an_install_establishing_its_mrds_signals_activation_once_when_it_records() -> None:
    """Issue 33: 2,000 MRDs and their CRDs created by one install start no pass each; the
    count recorded at its end starts one. An MRD of no revision, or of one the watcher has
    not seen, still signals at once."""
    index = Index()
    index.on_event(RES["ProviderRevision"], "ADDED", _revision("p-abc", None))
    out = []
    for i in range(50):
        out += index.on_event(RES["ManagedResourceDefinition"], "ADDED",
                              _controlled(f"t{i}.x.io", "p-abc"))
        out += index.on_event(RES["CustomResourceDefinition"], "ADDED", obj(f"t{i}.x.io"))
    assert out == []
    assert ids(index.on_event(RES["ProviderRevision"], "MODIFIED",
                              _revision("p-abc", "50"))) == [ACTIVATE]
    assert ids(index.on_event(RES["CustomResourceDefinition"], "ADDED", obj("t0.x.io"))) == [
        ACTIVATE]
    assert ids(index.on_event(RES["ManagedResourceDefinition"], "ADDED",
                              obj("byhand.x.io"))) == [ACTIVATE]
    assert ids(index.on_event(RES["ManagedResourceDefinition"], "ADDED",
                              _controlled("new.x.io", "unseen-rev"))) == [ACTIVATE]


def test_a_count_recorded_beside_another_change_reaches_activation_too() -> None:
    """A relist can merge the count's write with another: both the package and the
    activation workflow hear of it."""
    index = Index()
    index.on_sync(RES["ProviderRevision"], [_revision("p-abc", None)], signal_all=False)
    moved = _revision("p-abc", "3")
    moved["metadata"]["generation"] = 2
    assert ids(index.on_sync(RES["ProviderRevision"], [moved], signal_all=False)) == [
        "package:provider:p", ACTIVATE]


def test_a_deleted_revision_still_signals_its_package() -> None:
    """A revision deleted by hand: its package cleans up its Lock entry (the count of
    Active MRDs it recorded is unchanged, so this is not the activation's business)."""
    index = Index()
    rev = obj("p-abc", labels={"pkg.crossplane.io/package": "p"})
    rev["metadata"]["annotations"] = {"lockwright.dev/active-definitions": "3"}
    index.on_event(RES["ProviderRevision"], "ADDED", rev)
    assert [t.workflow_id for t in index.on_event(RES["ProviderRevision"], "DELETED",
                                                  rev)] == ["package:provider:p"]


# --- packages waiting on an API (lockwright.dev/requires-apis) --------------------------
UNRESOLVED = "cannot resolve package dependencies: "
NOT_SERVED = ("API {api} is not served, and no package index is configured to find a "
              "package serving it: set LOCKWRIGHT_PACKAGE_INDEXES")
INACTIVE = ("API {api} is defined by ManagedResourceDefinition things.x.io of Provider "
            "xpkg.example.org/p, which is Inactive: activate it with a "
            "ManagedResourceActivationPolicy")


def waiting_revision(message: str, status: str = "False", generation: int = 1
                     ) -> dict[str, Any]:
    """A Configuration revision of ``cfg`` whose RevisionHealthy condition says ``message``."""
    rev = obj("cfg-abc", generation, labels={"pkg.crossplane.io/package": "cfg"})
    rev["status"] = {"conditions": [{"type": "RevisionHealthy", "status": status,
                                     "message": message}]}
    return rev


def crd(name: str, rv: str = "1", generation: int = 1) -> dict[str, Any]:
    found = obj(name, generation)
    found["metadata"]["resourceVersion"] = rv
    return found


CFG = "package:configuration:cfg"


@pytest.mark.parametrize(("message", "event", "before", "after", "expected"), [
    # the CRD serving the API appears: the package looks again at once
    (UNRESOLVED + NOT_SERVED.format(api="things.x.io/v1"), "ADDED", None, crd("things.x.io"),
     [CFG]),
    # a kind names no CRD: any CRD of its group may serve it
    (UNRESOLVED + NOT_SERVED.format(api="Thing.x.io/v1"), "ADDED", None, crd("things.x.io"),
     [CFG]),
    (UNRESOLVED + NOT_SERVED.format(api="Thing.x.io"), "ADDED", None, crd("others.x.io"),
     [CFG]),
    # another plural or another group: nobody
    (UNRESOLVED + NOT_SERVED.format(api="things.x.io/v1"), "ADDED", None, crd("others.x.io"),
     []),
    (UNRESOLVED + NOT_SERVED.format(api="Thing.y.io/v1"), "ADDED", None, crd("things.x.io"),
     []),
    (UNRESOLVED + NOT_SERVED.format(api="things.x.io/v1"), "ADDED", None, crd("things.x.io.y"),
     []),
    # several APIs: any of them
    (UNRESOLVED + NOT_SERVED.format(api="a.y.io") + "; "
     + NOT_SERVED.format(api="things.x.io"), "ADDED", None, crd("things.x.io"), [CFG]),
    # a revision waiting on something else, or healthy: nobody
    (UNRESOLVED + 'missing dependencies: "xpkg.example.org/p" (>=v1.0.0)', "ADDED", None,
     crd("things.x.io"), []),
    ("cannot establish control of object: API things.x.io/v1", "ADDED", None,
     crd("things.x.io"), []),
    # established: a status write (no generation) after discovery may have missed it
    (UNRESOLVED + NOT_SERVED.format(api="things.x.io/v1"), "MODIFIED", crd("things.x.io"),
     crd("things.x.io", rv="2"), [CFG]),
    (UNRESOLVED + NOT_SERVED.format(api="things.x.io/v1"), "MODIFIED", crd("things.x.io"),
     crd("things.x.io"), []),
    (UNRESOLVED + NOT_SERVED.format(api="things.x.io/v1"), "MODIFIED", crd("others.x.io"),
     crd("others.x.io", rv="2"), []),
])
def test_a_crd_appearing_signals_the_packages_waiting_on_an_api_it_serves(
        message: str, event: str, before: dict[str, Any] | None, after: dict[str, Any],
        expected: list[str]) -> None:
    index = Index()
    index.on_event(RES["ConfigurationRevision"], "ADDED", waiting_revision(message))
    if before is not None:
        index.on_event(RES["CustomResourceDefinition"], "ADDED", before)
    assert ids(index.on_event(RES["CustomResourceDefinition"], event, after)) == expected


def test_a_healthy_revision_waits_on_nothing() -> None:
    index = Index()
    healthy = waiting_revision(UNRESOLVED + NOT_SERVED.format(api="things.x.io"), "True")
    index.on_event(RES["ConfigurationRevision"], "ADDED", healthy)
    assert ids(index.on_event(RES["CustomResourceDefinition"], "ADDED",
                              crd("things.x.io"))) == []


def test_the_waiting_status_is_learnt_from_a_status_write_that_signals_nobody() -> None:
    """The revision's own status write is not echoed, but the index keeps what it says."""
    index = Index()
    index.on_event(RES["ConfigurationRevision"], "ADDED", waiting_revision(""))
    waiting = waiting_revision(UNRESOLVED + NOT_SERVED.format(api="things.x.io"))
    assert index.on_event(RES["ConfigurationRevision"], "MODIFIED", waiting) == []
    assert ids(index.on_event(RES["CustomResourceDefinition"], "ADDED",
                              crd("things.x.io"))) == [CFG]
    index.on_event(RES["ConfigurationRevision"], "MODIFIED", waiting_revision("", "True"))
    assert ids(index.on_event(RES["CustomResourceDefinition"], "MODIFIED",
                              crd("things.x.io", rv="2"))) == []


def test_activating_an_mrd_wakes_activation_and_the_package_waiting_on_its_crd() -> None:
    index = Index(task_queue="q")
    index.on_event(RES["ManagedResourceDefinition"], "ADDED", obj("things.x.io"))
    index.on_event(RES["ConfigurationRevision"], "ADDED",
                   waiting_revision(UNRESOLVED + INACTIVE.format(api="things.x.io/v1")))
    targets = index.on_event(RES["CustomResourceDefinition"], "ADDED", crd("things.x.io"))
    assert [t.workflow_id for t in targets] == ["activate:definitions:q", f"{CFG}:q"]


def policy(name: str, established: str | None) -> dict[str, Any]:
    """An activation policy whose ``Established`` condition says ``established``."""
    found = obj(name)
    if established is not None:
        found["status"] = {"conditions": [{"type": "Established", "status": established}]}
    return found


def test_an_mrds_crd_written_signals_activation_for_the_policies_established() -> None:
    """An MRD's CRD being Established (a status write) moves its policies' ``Established``
    condition (issue 31); another CRD's write is none of the activation workflow's."""
    index = Index(task_queue="q")
    index.on_event(RES["ManagedResourceActivationPolicy"], "ADDED", policy("p", "Unknown"))
    index.on_event(RES["ManagedResourceDefinition"], "ADDED", obj("things.x.io"))
    index.on_event(RES["CustomResourceDefinition"], "ADDED", crd("things.x.io"))
    index.on_event(RES["CustomResourceDefinition"], "ADDED", crd("others.x.io"))
    assert [t.workflow_id for t in index.on_event(
        RES["CustomResourceDefinition"], "MODIFIED", crd("things.x.io", rv="2"))] == [
        "activate:definitions:q"]
    assert index.on_event(RES["CustomResourceDefinition"], "MODIFIED",
                          crd("others.x.io", rv="2")) == []
    assert index.on_event(RES["CustomResourceDefinition"], "MODIFIED",
                          crd("things.x.io", rv="2")) == []  # not written again


@pytest.mark.parametrize(("policies", "expected"), [
    ([], []),  # no policy: nothing reads a CRD's conditions
    ([policy("p", "True")], []),  # every policy Established: a pass reads no CRD
    ([policy("p", "True"), policy("q", "Unknown")], [ACTIVATE]),  # one waits
    ([policy("p", None)], [ACTIVATE]),  # a new policy: no condition yet
])
def test_an_mrds_crd_written_signals_activation_only_while_a_policy_waits(
        policies: list[dict[str, Any]], expected: list[str]) -> None:
    """A 2,000-CRD provider's switch-over writes every CRD (its controller reference) and
    sent 2,639 signals; once every policy is Established no pass reads a CRD, so a CRD's
    write changes nothing one decides."""
    index = Index()
    for found in policies:
        index.on_event(RES["ManagedResourceActivationPolicy"], "ADDED", found)
    index.on_event(RES["ManagedResourceDefinition"], "ADDED", obj("things.x.io"))
    index.on_event(RES["CustomResourceDefinition"], "ADDED", crd("things.x.io"))
    assert [t.workflow_id for t in index.on_event(
        RES["CustomResourceDefinition"], "MODIFIED", crd("things.x.io", rv="2"))] == expected


def test_only_an_mrds_crd_written_while_a_policy_waits_is_deferrable() -> None:
    """Its pass may wait (docs/design.md, "Activation passes deferred while a policy
    waits"): kube-apiserver establishes a big provider's CRDs over minutes, a write each.
    The CRD coming or going decides an MRD's own condition, and is not deferrable."""
    index = Index()
    index.on_event(RES["ManagedResourceActivationPolicy"], "ADDED", policy("p", "Unknown"))
    index.on_event(RES["ManagedResourceDefinition"], "ADDED", obj("things.x.io"))
    added = index.on_event(RES["CustomResourceDefinition"], "ADDED", crd("things.x.io"))
    written = index.on_event(RES["CustomResourceDefinition"], "MODIFIED",
                             crd("things.x.io", rv="2"))
    gone = index.on_event(RES["CustomResourceDefinition"], "DELETED", crd("things.x.io", rv="3"))
    assert [(t.workflow_id, t.signal_input().deferrable) for t in added + written + gone] == [
        (ACTIVATE, False), (ACTIVATE, True), (ACTIVATE, False)]


@pytest.mark.parametrize(("before", "after", "expected"), [
    ("True", "Unknown", [ACTIVATE]),  # waits again: a CRD may be Established already
    ("Unknown", "Unknown", []),  # still waiting (its message's count moved)
    ("Unknown", "True", []),
    (None, "Unknown", []),
])
def test_a_policy_that_waits_again_signals_activation(
        before: str | None, after: str, expected: list[str]) -> None:
    """The pass that finds new MRDs for a policy writes it waiting; a CRD Established
    before the watcher saw that write signalled nobody, so the write itself does."""
    index = Index()
    index.on_event(RES["ManagedResourceActivationPolicy"], "ADDED", policy("p", before))
    assert [t.workflow_id for t in index.on_event(
        RES["ManagedResourceActivationPolicy"], "MODIFIED", policy("p", after))] == expected


@pytest.mark.parametrize(("crds", "api", "expected"), [
    (["things.x.io"], "things.x.io/v1", [CFG]),  # it appeared while the pass decided
    (["others.x.io"], "Thing.x.io", [CFG]),  # a kind: any CRD of its group
    (["others.x.io"], "things.x.io/v1", []),
    ([], "things.x.io/v1", []),
])
def test_a_revision_starting_to_wait_on_an_api_a_crd_may_serve_already_signals_its_package(
        crds: list[str], api: str, expected: list[str]) -> None:
    """A CRD applied between the pass's discovery read and its status write."""
    index = Index()
    for name in crds:
        index.on_event(RES["CustomResourceDefinition"], "ADDED", crd(name))
    index.on_event(RES["ConfigurationRevision"], "ADDED", waiting_revision(""))
    waiting = waiting_revision(UNRESOLVED + NOT_SERVED.format(api=api))
    assert ids(index.on_event(RES["ConfigurationRevision"], "MODIFIED", waiting)) == expected
    # the same status written again (the next pass): not echoed
    assert ids(index.on_event(RES["ConfigurationRevision"], "MODIFIED", waiting)) == []
