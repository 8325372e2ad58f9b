"""devcluster object semantics through the official client.

Matrix: create/get/list errors and Status bodies; resourceVersion compare-and-swap (one
stale writer, and 20 concurrent incrementers); generation; the status subresource;
finalizers; ownerReference GC with background, foreground and orphan propagation;
namespace deletion; selectors and pagination; dry-run; the Deployment simulator.
"""

from __future__ import annotations

import json
import threading

import pytest
from kubernetes import client
from kubernetes.client.exceptions import ApiException

from tests.helpers import unique, wait_for


@pytest.fixture
def apps(kube_client: client.ApiClient) -> client.AppsV1Api:
    return client.AppsV1Api(kube_client)


def _cm(name: str, **data: str) -> dict:
    return {"metadata": {"name": name}, "data": data}


def _status(exc: ApiException) -> dict:
    return json.loads(exc.body)


def _deployment(name: str, annotations: dict | None = None) -> dict:
    labels = {"app": name}
    return {"metadata": {"name": name}, "spec": {
        "selector": {"matchLabels": labels},
        "template": {"metadata": {"labels": labels, "annotations": annotations or {}},
                     "spec": {"containers": [{"name": "c", "image": "example.org/img:1"}]}}}}


def test_create_sets_server_fields(core: client.CoreV1Api, namespace: str) -> None:
    """Create fills uid, creationTimestamp and a numeric resourceVersion."""
    cm = core.create_namespaced_config_map(namespace, _cm("a", k="v"))
    assert cm.metadata.uid and cm.metadata.creation_timestamp
    assert int(cm.metadata.resource_version) > 0
    assert core.read_namespaced_config_map("a", namespace).data == {"k": "v"}


def test_create_existing_is_409_already_exists(core: client.CoreV1Api, namespace: str) -> None:
    core.create_namespaced_config_map(namespace, _cm("dup"))
    with pytest.raises(ApiException) as err:
        core.create_namespaced_config_map(namespace, _cm("dup"))
    body = _status(err.value)
    assert err.value.status == 409
    assert (body["reason"], body["message"]) == ("AlreadyExists", 'configmaps "dup" already exists')
    assert body["details"] == {"name": "dup", "kind": "configmaps"}


def test_missing_is_404_not_found(core: client.CoreV1Api, namespace: str) -> None:
    with pytest.raises(ApiException) as err:
        core.read_namespaced_config_map("nope", namespace)
    assert err.value.status == 404
    assert _status(err.value)["reason"] == "NotFound"


def test_invalid_name_is_422(core: client.CoreV1Api, namespace: str) -> None:
    with pytest.raises(ApiException) as err:
        core.create_namespaced_config_map(namespace, _cm("Not_Valid"))
    body = _status(err.value)
    assert err.value.status == 422 and body["reason"] == "Invalid"
    assert body["details"]["causes"][0]["field"] == "metadata.name"


def test_generate_name(core: client.CoreV1Api, namespace: str) -> None:
    cm = core.create_namespaced_config_map(namespace, {"metadata": {"generateName": "gen-"}})
    assert cm.metadata.name.startswith("gen-") and len(cm.metadata.name) == 9


def test_stale_update_is_409_conflict(core: client.CoreV1Api, namespace: str) -> None:
    """An update carrying an old resourceVersion is refused; nothing changes."""
    first = core.create_namespaced_config_map(namespace, _cm("cas", n="0"))
    first.data = {"n": "1"}
    core.replace_namespaced_config_map("cas", namespace, first)
    first.data = {"n": "stale"}
    with pytest.raises(ApiException) as err:
        core.replace_namespaced_config_map("cas", namespace, first)
    assert err.value.status == 409 and _status(err.value)["reason"] == "Conflict"
    assert "the object has been modified" in _status(err.value)["message"]
    assert core.read_namespaced_config_map("cas", namespace).data == {"n": "1"}


def test_concurrent_compare_and_swap_loses_no_update(kube_client: client.ApiClient,
                                                     namespace: str) -> None:
    """20 threads doing read-modify-write increments end at exactly 20 x 10."""
    core = client.CoreV1Api(kube_client)
    core.create_namespaced_config_map(namespace, _cm("counter", n="0"))

    def worker() -> None:
        api = client.CoreV1Api(client.ApiClient(kube_client.configuration))
        done = 0
        while done < 10:
            cm = api.read_namespaced_config_map("counter", namespace)
            cm.data["n"] = str(int(cm.data["n"]) + 1)
            try:
                api.replace_namespaced_config_map("counter", namespace, cm)
                done += 1
            except ApiException as exc:
                assert exc.status == 409

    threads = [threading.Thread(target=worker) for _ in range(20)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert core.read_namespaced_config_map("counter", namespace).data["n"] == "200"


def test_noop_update_keeps_resource_version(core: client.CoreV1Api, namespace: str) -> None:
    cm = core.create_namespaced_config_map(namespace, _cm("same", a="b"))
    again = core.replace_namespaced_config_map("same", namespace, cm)
    assert again.metadata.resource_version == cm.metadata.resource_version


def test_generation_bumps_on_spec_only(apps: client.AppsV1Api, namespace: str) -> None:
    d = apps.create_namespaced_deployment(namespace, _deployment("gen"))
    assert d.metadata.generation == 1
    d = apps.patch_namespaced_deployment("gen", namespace, {"metadata": {"labels": {"x": "y"}}})
    assert d.metadata.generation == 1
    d = apps.patch_namespaced_deployment("gen", namespace, {"spec": {"replicas": 3}})
    assert d.metadata.generation == 2


def test_status_subresource_separation(apps: client.AppsV1Api, namespace: str) -> None:
    """Main endpoint writes ignore status; /status writes change only status."""
    apps.create_namespaced_deployment(namespace, _deployment("st"))
    wait_for(lambda: apps.read_namespaced_deployment("st", namespace).status.observed_generation,
             what="simulated status")
    d = apps.read_namespaced_deployment("st", namespace)
    d.status.replicas = 42
    d.spec.replicas = 2
    d = apps.replace_namespaced_deployment("st", namespace, d)
    assert d.spec.replicas == 2 and d.status.replicas != 42
    wait_for(lambda: apps.read_namespaced_deployment("st", namespace).status.replicas == 2,
             what="status catching up")
    d = apps.read_namespaced_deployment("st", namespace)
    d.spec.replicas = 5
    d.status.replicas = 7
    d = apps.replace_namespaced_deployment_status("st", namespace, d)
    assert d.spec.replicas == 2 and d.status.replicas == 7


def test_deployment_simulated_available(apps: client.AppsV1Api, namespace: str) -> None:
    apps.create_namespaced_deployment(namespace, _deployment("ok"))

    def available() -> bool:
        st = apps.read_namespaced_deployment("ok", namespace).status
        conds = {c.type: c for c in st.conditions or []}
        return st.available_replicas == 1 and conds["Available"].status == "True"

    wait_for(available, what="Deployment Available")
    conds = {c.type: c for c in apps.read_namespaced_deployment("ok", namespace).status.conditions}
    assert conds["Available"].reason == "MinimumReplicasAvailable"
    assert conds["Progressing"].reason == "NewReplicaSetAvailable"


def test_deployment_simulated_unavailable(apps: client.AppsV1Api, namespace: str) -> None:
    apps.create_namespaced_deployment(namespace, _deployment(
        "bad", {"devcluster.lockwright.dev/simulate": "unavailable"}))
    wait_for(lambda: apps.read_namespaced_deployment("bad", namespace).status.conditions,
             what="simulated status")
    st = apps.read_namespaced_deployment("bad", namespace).status
    conds = {c.type: c for c in st.conditions}
    assert conds["Available"].status == "False"
    assert conds["Available"].message == "Deployment does not have minimum availability."
    assert st.unavailable_replicas == 1 and not st.available_replicas


def test_deployment_defaults(apps: client.AppsV1Api, namespace: str) -> None:
    d = apps.create_namespaced_deployment(namespace, _deployment("defaults"))
    c = d.spec.template.spec.containers[0]
    assert (d.spec.replicas, d.spec.strategy.type, c.image_pull_policy) == (
        1, "RollingUpdate", "IfNotPresent")


def test_deployment_selector_mismatch_is_invalid(apps: client.AppsV1Api, namespace: str) -> None:
    body = _deployment("mismatch")
    body["spec"]["selector"]["matchLabels"] = {"app": "other"}
    with pytest.raises(ApiException) as err:
        apps.create_namespaced_deployment(namespace, body)
    assert err.value.status == 422
    assert "`selector` does not match template `labels`" in _status(err.value)["message"]


def test_finalizer_holds_deletion(core: client.CoreV1Api, namespace: str) -> None:
    core.create_namespaced_config_map(namespace, {"metadata": {
        "name": "held", "finalizers": ["example.org/hold"]}})
    core.delete_namespaced_config_map("held", namespace)
    cm = core.read_namespaced_config_map("held", namespace)
    assert cm.metadata.deletion_timestamp is not None
    with pytest.raises(ApiException) as err:
        core.patch_namespaced_config_map("held", namespace, {"metadata": {
            "finalizers": ["example.org/hold", "example.org/new"]}})
    assert err.value.status == 403
    core.patch_namespaced_config_map("held", namespace, {"metadata": {"finalizers": None}})
    with pytest.raises(ApiException) as err:
        core.read_namespaced_config_map("held", namespace)
    assert err.value.status == 404


def _owned(name: str, owner: client.V1ConfigMap, block: bool = False) -> dict:
    ref = {"apiVersion": "v1", "kind": "ConfigMap", "name": owner.metadata.name,
           "uid": owner.metadata.uid, "blockOwnerDeletion": block}
    return {"metadata": {"name": name, "ownerReferences": [ref]}}


def _gone(core: client.CoreV1Api, name: str, namespace: str) -> bool:
    try:
        core.read_namespaced_config_map(name, namespace)
    except ApiException as exc:
        return exc.status == 404
    return False


def test_background_gc_collects_dependents(core: client.CoreV1Api, namespace: str) -> None:
    owner = core.create_namespaced_config_map(namespace, _cm("owner-bg"))
    core.create_namespaced_config_map(namespace, _owned("dep-bg", owner))
    core.delete_namespaced_config_map("owner-bg", namespace, propagation_policy="Background")
    assert _gone(core, "owner-bg", namespace)
    wait_for(lambda: _gone(core, "dep-bg", namespace), what="dependent collected")


def test_dependent_of_missing_owner_is_collected(core: client.CoreV1Api, namespace: str) -> None:
    ghost = client.V1ConfigMap(metadata=client.V1ObjectMeta(name="ghost", uid="no-such-uid"))
    core.create_namespaced_config_map(namespace, _owned("orphaned", ghost))
    wait_for(lambda: _gone(core, "orphaned", namespace), what="orphan collected")


def test_foreground_waits_for_blocking_dependents(core: client.CoreV1Api, namespace: str) -> None:
    owner = core.create_namespaced_config_map(namespace, _cm("owner-fg"))
    dep = _owned("dep-fg", owner, block=True)
    dep["metadata"]["finalizers"] = ["example.org/slow"]
    core.create_namespaced_config_map(namespace, dep)
    core.delete_namespaced_config_map("owner-fg", namespace, propagation_policy="Foreground")
    held = wait_for(lambda: core.read_namespaced_config_map("dep-fg", namespace)
                    .metadata.deletion_timestamp, what="dependent being deleted")
    assert held
    owner_now = core.read_namespaced_config_map("owner-fg", namespace)
    assert "foregroundDeletion" in owner_now.metadata.finalizers
    core.patch_namespaced_config_map("dep-fg", namespace, {"metadata": {"finalizers": None}})
    wait_for(lambda: _gone(core, "owner-fg", namespace), what="owner deleted after dependent")


def test_orphan_keeps_dependents(core: client.CoreV1Api, namespace: str) -> None:
    """Orphan marks the owner (finalizer ``orphan``); it goes once the GC has stripped the
    dependent's reference, and the dependent stays."""
    owner = core.create_namespaced_config_map(namespace, _cm("owner-or"))
    core.create_namespaced_config_map(namespace, _owned("dep-or", owner))
    core.delete_namespaced_config_map("owner-or", namespace, propagation_policy="Orphan")
    wait_for(lambda: _gone(core, "owner-or", namespace), what="owner gone after orphaning")
    dep = core.read_namespaced_config_map("dep-or", namespace)
    assert not dep.metadata.owner_references


def test_namespace_deletion_deletes_contents(core: client.CoreV1Api) -> None:
    ns = unique("doomed")
    core.create_namespace({"metadata": {"name": ns}})
    core.create_namespaced_config_map(ns, _cm("inside"))
    core.delete_namespace(ns)

    def ns_gone() -> bool:
        try:
            core.read_namespace(ns)
        except ApiException as exc:
            return exc.status == 404
        return False

    wait_for(ns_gone, what="namespace deleted")
    assert _gone(core, "inside", ns)


def test_create_in_missing_namespace_is_404(core: client.CoreV1Api) -> None:
    with pytest.raises(ApiException) as err:
        core.create_namespaced_config_map(unique("nowhere"), _cm("x"))
    assert err.value.status == 404


def test_label_selectors(core: client.CoreV1Api, namespace: str) -> None:
    for name, labels in {"a": {"tier": "web", "env": "prod"}, "b": {"tier": "db"},
                         "c": {"env": "dev"}}.items():
        core.create_namespaced_config_map(namespace, {"metadata": {"name": name,
                                                                   "labels": labels}})
    cases = {"tier=web": ["a"], "tier==db": ["b"], "tier!=web": ["b", "c"],
             "tier in (web,db)": ["a", "b"], "tier notin (web)": ["b", "c"], "env": ["a", "c"],
             "!env": ["b"], "tier=web,env=prod": ["a"]}
    for selector, want in cases.items():
        got = [i.metadata.name for i in core.list_namespaced_config_map(
            namespace, label_selector=selector).items]
        assert got == want, selector


def test_field_selectors(core: client.CoreV1Api, namespace: str) -> None:
    core.create_namespaced_config_map(namespace, _cm("f1"))
    core.create_namespaced_config_map(namespace, _cm("f2"))
    names = [i.metadata.name for i in core.list_config_map_for_all_namespaces(
        field_selector=f"metadata.namespace={namespace},metadata.name!=f1").items]
    assert names == ["f2"]


def test_limit_and_continue(core: client.CoreV1Api, namespace: str) -> None:
    for i in range(5):
        core.create_namespaced_config_map(namespace, _cm(f"p{i}"))
    seen, token = [], None
    while True:
        page = core.list_namespaced_config_map(namespace, limit=2, _continue=token)
        seen += [i.metadata.name for i in page.items]
        token = page.metadata._continue
        if not token:
            break
    assert seen == [f"p{i}" for i in range(5)]


def test_dry_run_writes_nothing(core: client.CoreV1Api, namespace: str) -> None:
    cm = core.create_namespaced_config_map(namespace, _cm("dry"), dry_run="All")
    assert cm.metadata.name == "dry"
    assert _gone(core, "dry", namespace)
    core.create_namespaced_config_map(namespace, _cm("dry2"))
    core.delete_namespaced_config_map("dry2", namespace, dry_run="All")
    assert not _gone(core, "dry2", namespace)


def test_large_object_accepted(core: client.CoreV1Api, namespace: str) -> None:
    """Objects close to 3 MiB are stored (real provider CRDs reach 1.7 MB)."""
    blob = "x" * (3 * 1024 * 1024 - 4096)
    core.create_namespaced_config_map(namespace, _cm("big", blob=blob))
    assert len(core.read_namespaced_config_map("big", namespace).data["blob"]) == len(blob)


def test_scale_subresource(apps: client.AppsV1Api, namespace: str) -> None:
    """GET /scale mirrors spec.replicas; PATCH /scale changes it and bumps generation."""
    apps.create_namespaced_deployment(namespace, _deployment("sc"))
    assert apps.read_namespaced_deployment_scale("sc", namespace).spec.replicas == 1
    scaled = apps.patch_namespaced_deployment_scale("sc", namespace, {"spec": {"replicas": 4}})
    assert scaled.spec.replicas == 4 and scaled.status.selector == "app=sc"
    d = apps.read_namespaced_deployment("sc", namespace)
    assert (d.spec.replicas, d.metadata.generation) == (4, 2)


@pytest.mark.parametrize("name, ok", [("crossplane:provider:p-1:system", True),
                                      ("a/b", False), ("..", False)])
def test_rbac_names_are_path_segments(kube_client: client.ApiClient, name: str,
                                      ok: bool) -> None:
    """RBAC objects accept any valid path segment as a name, as kube-apiserver does."""
    rbac = client.RbacAuthorizationV1Api(kube_client)
    body = {"metadata": {"name": name if not ok else f"{name}-{unique('r')}"}, "rules": []}
    if ok:
        assert rbac.create_cluster_role(body).metadata.name == body["metadata"]["name"]
        # The client percent-encodes ":" in the path; the server must decode it.
        assert rbac.read_cluster_role(body["metadata"]["name"]).metadata.name == body[
            "metadata"]["name"]
    else:
        with pytest.raises(ApiException) as err:
            rbac.create_cluster_role(body)
        assert err.value.status in (404, 422)
