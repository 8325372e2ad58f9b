"""Provider deletion protection's pure decisions (issue 31): the usages Crossplane's controller
makes, which to apply and delete, when the watcher signals, and the admission policy as
devcluster enforces it (docs/design.md, "Provider deletion protection")."""

from __future__ import annotations

import hashlib
from typing import Any

import pytest

from lockwright.devcluster.admission import WriteOptions
from lockwright.devcluster.cluster import Cluster
from lockwright.devcluster.errors import ApiError
from lockwright.k8s.crds import load_crds
from lockwright.managed import protection as p
from lockwright.worker.protection import ProtectionIndex, Streams

Obj = dict[str, Any]
W = p.ManagedType("widgets.w.example.org", "Widget", "w.example.org", "provider-w")
G = p.ManagedType("gadgets.w.example.org", "Gadget", "w.example.org", "provider-w")


def test_usage_is_named_labelled_and_worded_as_crossplanes_controller_makes_it() -> None:
    u = p.usage(W)
    # ClusterUsageName: "provider-protection-%x" of the first 26 bytes of sha256(MRD name).
    assert u["metadata"]["name"] == "provider-protection-" + hashlib.sha256(
        b"widgets.w.example.org").hexdigest()[:52]
    assert u["metadata"]["labels"] == {"crossplane.io/provider-protection": "true",
                                       "pkg.crossplane.io/package": "provider-w",
                                       "apiextensions.crossplane.io/mrd": W.crd}
    assert u["spec"] == {"of": {"apiVersion": "pkg.crossplane.io/v1", "kind": "Provider",
                                "resourceRef": {"name": "provider-w"}},
                         "reason": "Provider has active managed resources of type "
                                   "Widget.w.example.org"}
    assert (u["apiVersion"], u["kind"]) == ("protection.crossplane.io/v1beta1", "ClusterUsage")


@pytest.mark.parametrize(("in_use", "existing", "apply", "delete"), [
    ([], [], [], []),
    ([W], [], [W], []),
    ([W], [p.usage_name(W.crd)], [W], []),  # applied again: server-side apply converges
    ([], [p.usage_name(W.crd)], [], [p.usage_name(W.crd)]),
    ([G], [p.usage_name(W.crd), "provider-protection-gone"], [G],
     sorted([p.usage_name(W.crd), "provider-protection-gone"])),
])
def test_reconcile_applies_types_in_use_and_deletes_the_rest(
        in_use: list[p.ManagedType], existing: list[str], apply: list[p.ManagedType],
        delete: list[str]) -> None:
    changes = p.reconcile(in_use, existing)
    assert [o["metadata"]["name"] for o in changes.apply] == [p.usage_name(t.crd) for t in apply]
    assert list(changes.delete) == delete


@pytest.mark.parametrize(("refs", "provider"), [
    ([], ""),
    ([{"apiVersion": "pkg.crossplane.io/v1", "kind": "ProviderRevision", "name": "r",
       "controller": True}], ""),
    ([{"apiVersion": "pkg.crossplane.io/v1", "kind": "ProviderRevision", "name": "r",
       "controller": True}, {"apiVersion": "pkg.crossplane.io/v1", "kind": "Provider",
                             "name": "provider-w"}], "provider-w"),
    ([{"apiVersion": "example.org/v1", "kind": "Provider", "name": "not-a-package"}], ""),
])
def test_a_crd_belongs_to_the_provider_it_names_as_owner(refs: list[Obj], provider: str
                                                         ) -> None:
    assert p.provider_of({"ownerReferences": refs}) == provider


@pytest.mark.parametrize(("kind", "protects"), [
    ("Widget", True), ("ProviderConfig", False), ("ClusterProviderConfig", False),
    ("ProviderConfigUsage", False)])
def test_provider_configs_do_not_protect(kind: str, protects: bool) -> None:
    assert p.protects(kind) is protects


def crd(name: str, provider: str = "provider-w") -> Obj:
    refs = [{"apiVersion": "pkg.crossplane.io/v1", "kind": "Provider", "name": provider}]
    return {"metadata": {"name": name, "ownerReferences": refs if provider else []}}


def test_types_are_streamed_once_their_provider_has_been_healthy() -> None:
    index = ProtectionIndex()
    assert index.on_crds([crd(W.crd)], full=True).start == []
    assert index.on_provider("provider-w", healthy=False).start == []
    assert index.on_provider("provider-w", healthy=True).start == [W.crd]
    assert index.on_provider("provider-w", healthy=True).start == []  # once
    assert index.on_provider("provider-w", healthy=False).stop == []  # never stopped so
    assert index.on_crds([crd(G.crd)], full=False).start == [G.crd]  # healthy already
    # Its deletion admitted: its types stop (their RBAC goes with its revisions) ...
    assert index.on_provider("provider-w", healthy=True, gone=True).stop == [G.crd, W.crd]
    assert index.on_crds([crd("new.w.example.org")], full=False).start == []
    assert index.on_provider("provider-w", healthy=True, gone=True) == Streams()  # once
    # ... and stream again should it come back Healthy.
    assert index.on_provider("provider-w", healthy=True).start == [
        G.crd, "new.w.example.org", W.crd]


def test_a_type_handed_to_another_provider_streams_again_once_that_one_is_healthy() -> None:
    index = ProtectionIndex(healthy={"provider-w"})
    assert index.on_crds([crd(W.crd)], full=True).start == [W.crd]
    assert index.on_crds([crd(W.crd)], full=False) == Streams()  # written, same owner
    moved = index.on_crds([crd(W.crd, "provider-w2")], full=False)
    assert (moved.stop, moved.start, moved.signal) == ([W.crd], [], True)
    assert index.on_provider("provider-w2", healthy=True).start == [W.crd]
    back = index.on_crds([crd(W.crd)], full=True)  # to one healthy already: at once
    assert (back.stop, back.start, back.signal) == ([W.crd], [W.crd], True)


def test_the_watcher_streams_provider_types_and_signals_only_on_first_and_last() -> None:
    index = ProtectionIndex(healthy={"provider-w"})
    listed = index.on_crds([crd(W.crd), crd("other.example.org", "")], full=True,
                           signal_all=True)
    assert (listed.start, listed.stop, listed.signal) == ([W.crd], [], True)
    assert index.listed(W.crd, []) is False  # no resources: nothing to protect
    widget = {"metadata": {"name": "a"}}
    assert index.changed(W.crd, "ADDED", widget) is True  # the first
    assert index.changed(W.crd, "ADDED", {"metadata": {"name": "b"}}) is False
    assert index.changed(W.crd, "MODIFIED", widget) is False
    assert index.changed(W.crd, "DELETED", widget) is False
    assert index.changed(W.crd, "DELETED", {"metadata": {"name": "b"}}) is True  # the last
    assert index.on_crds([crd(G.crd)], full=False).start == [G.crd]
    assert index.listed(G.crd, [widget]) is True
    gone = index.crd_deleted(G.crd)
    assert (gone.stop, gone.signal) == ([G.crd], True)
    assert index.crd_deleted("other.example.org").signal is False
    relisted = index.on_crds([], full=True)
    assert (relisted.stop, relisted.signal) == ([W.crd], True)


def test_with_protection_off_the_watcher_streams_nothing_but_still_signals_lists() -> None:
    index = ProtectionIndex(enabled=False, healthy={"provider-w"})
    listed = index.on_crds([crd(W.crd)], full=True, signal_all=True)
    assert (listed.start, listed.signal) == ([], True)


# --- the policy, as devcluster enforces it ---------------------------------------------
OPTS = WriteOptions(field_manager="test")
PKG = ("pkg.crossplane.io", "v1", "providers")


@pytest.fixture
def cluster(tmp_path: Any) -> Cluster:
    c = Cluster(str(tmp_path))
    crds = c.resource("apiextensions.k8s.io", "v1", "customresourcedefinitions")
    for obj in load_crds():
        c.create(crds, None, obj, OPTS)
    admission = ("admissionregistration.k8s.io", "v1")
    c.create(c.resource(*admission, "validatingadmissionpolicies"), None, p.policy(), OPTS)
    c.create(c.resource(*admission, "validatingadmissionpolicybindings"), None, p.binding(),
             OPTS)
    for name in ("provider-w", "provider-x"):
        c.create(c.resource(*PKG), None, {"metadata": {"name": name},
                                          "spec": {"package": "xpkg.example.org/w:v1"}}, OPTS)
    return c


def test_a_provider_a_usage_names_is_refused_and_others_are_not(cluster: Cluster) -> None:
    usages = cluster.resource("protection.crossplane.io", "v1beta1", "clusterusages")
    cluster.create(usages, None, p.usage(W), OPTS)
    with pytest.raises(ApiError) as refused:
        cluster.delete(cluster.resource(*PKG), None, "provider-w", {}, OPTS)
    err = refused.value
    assert (err.code, err.reason) == (403, "Forbidden")
    assert err.message == (
        'providers.pkg.crossplane.io "provider-w" is forbidden: ValidatingAdmissionPolicy '
        "'nousages.protection.crossplane.io' with binding 'nousages.protection.crossplane.io'"
        " denied request: This resource is in-use by usage(s), including the "
        f'*v1beta1.ClusterUsage "{p.usage_name(W.crd)}" with reason: "Provider has active '
        'managed resources of type Widget.w.example.org". ' + p.FIX)
    assert cluster.delete(cluster.resource(*PKG), None, "provider-x", {}, OPTS)[1] is True
    cluster.delete(usages, None, p.usage_name(W.crd), {}, OPTS)
    assert cluster.delete(cluster.resource(*PKG), None, "provider-w", {}, OPTS)[1] is True


@pytest.mark.parametrize("owner", ["Configuration", "Function", "CompositeResourceDefinition"])
def test_configurations_and_functions_are_not_protected(owner: str) -> None:
    """As in Crossplane: only a Provider's types are streamed and counted, and only a
    Provider's deletion is refused (a Configuration's XRD makes CRDs; a Function has none)."""
    group = "pkg.crossplane.io/v1" if owner != "CompositeResourceDefinition" else (
        "apiextensions.crossplane.io/v1")
    owned = {"metadata": {"name": "xwidgets.example.org", "ownerReferences": [
        {"apiVersion": group, "kind": owner, "name": "platform"}]}}
    assert p.provider_of(owned["metadata"]) == ""
    index = ProtectionIndex(healthy={"platform"})
    assert index.on_crds([owned], full=True) == Streams()
    assert index.providers == {}
    [rule] = p.policy()["spec"]["matchConstraints"]["resourceRules"]
    assert (rule["apiGroups"], rule["resources"], rule["operations"]) == (
        ["pkg.crossplane.io"], ["providers"], ["DELETE"])


class _TypeStream:
    """Stands in for a Provider type's stream: counts its wakes."""

    def __init__(self) -> None:
        self.woken = 0

    def wake(self) -> None:
        self.woken += 1


def test_a_crd_written_wakes_its_types_stream_waiting_to_be_served() -> None:
    """The API server's Established status is a CRD write: a type not served yet (its
    stream waits, up to a minute, between tries) tries again as its CRD is written."""
    import threading

    from lockwright.settings import Settings
    from lockwright.worker.targets import RESOURCES
    from lockwright.worker.watcher import Changed, Watcher

    w = Watcher(Settings(), None, kube_factory=lambda: None)  # type: ignore[arg-type,return-value]
    crds = next(r for r in RESOURCES if r.kind == "CustomResourceDefinition")
    waiting, other = _TypeStream(), _TypeStream()
    w._types = {W.crd: (waiting, threading.Event()),  # type: ignore[dict-item]
                G.crd: (other, threading.Event())}
    w.protection.on_crds([crd(W.crd), crd(G.crd)], full=True)
    w._protect(Changed(crds, "MODIFIED", crd(W.crd)))
    assert (waiting.woken, other.woken) == (1, 0)


def test_provider_types_streams_are_made_off_the_event_loop() -> None:
    """Starting a provider's type streams makes no connection and starts no thread on the
    event loop: a 2,000-CRD provider's held the loop 12-18 s as it turned Healthy, and
    the Provider's own change waited behind them. The starter thread makes them; a type
    stopped before its turn is never made."""
    from lockwright.settings import Settings
    from lockwright.worker.protection import Streams
    from lockwright.worker.watcher import Watcher

    made: list[str] = []

    def factory() -> None:
        made.append("connection")

    w = Watcher(Settings(), None, kube_factory=factory)  # type: ignore[arg-type]
    names = [f"kind{i}s.w.example.org" for i in range(3)]
    w._restream(Streams(start=names))
    assert made == [] and sorted(w._types) == names  # registered, nothing made yet
    for _, own in w._types.values():
        own.set()  # their streams return at once once started
    w._restream(Streams(stop=[names[0]]))  # stopped before its turn
    w._starting.put(None)
    w._starter()  # here, in the test's thread, until the None
    assert made == ["connection", "connection"]
