"""Server-side apply and managedFields tracking, checked against kube-apiserver's behaviour."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest

from lockwright.devcluster.apply import ApplyConflict, server_side_apply, track_update
from lockwright.devcluster.fieldset import from_fields_v1, path_string, to_fields_v1
from lockwright.devcluster.patch import PatchError

T0, T1, T2 = "2024-01-01T00:00:00Z", "2024-01-02T00:00:00Z", "2024-01-03T00:00:00Z"
LAST = "kubectl.kubernetes.io/last-applied-configuration"


def cm(data: dict[str, str], **meta: Any) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "c", "namespace": "ns", **meta}, "data": data}


def apply(live: dict[str, Any] | None, config: dict[str, Any], manager: str = "m",
          force: bool = False, now: str = T1, schema: dict[str, Any] | None = None,
          subresource: str = "") -> dict[str, Any]:
    return server_side_apply(live, config, manager=manager, force=force,
                             api_version=config["apiVersion"], kind=config["kind"],
                             schema=schema, now=now, subresource=subresource)


def update(old: dict[str, Any] | None, new: dict[str, Any], manager: str = "u",
           now: str = T0, schema: dict[str, Any] | None = None,
           subresource: str = "") -> dict[str, Any]:
    """An Update write: returns ``new`` with the managedFields track_update computes."""
    out = copy.deepcopy(new)
    out["metadata"]["managedFields"] = track_update(
        old, new, manager=manager, api_version=new["apiVersion"], kind=new["kind"],
        schema=schema, now=now, subresource=subresource)
    return out


def entries(obj: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {e["manager"] + "/" + e["operation"]: e for e in obj["metadata"]["managedFields"]}


def owned(obj: dict[str, Any], key: str) -> set[str]:
    entry = entries(obj).get(key)
    return {path_string(p) for p in from_fields_v1(entry["fieldsV1"])} if entry else set()


# -- create and the exact managedFields shape ------------------------------------------


def test_apply_create_records_an_apply_entry() -> None:
    obj = apply(None, cm({"a": "1"}, labels={"app": "x"}), manager="kubectl")
    assert obj["metadata"]["managedFields"] == [{
        "manager": "kubectl", "operation": "Apply", "apiVersion": "v1", "time": T1,
        "fieldsType": "FieldsV1",
        "fieldsV1": {"f:data": {"f:a": {}}, "f:metadata": {"f:labels": {"f:app": {}}}}}]
    assert obj["data"] == {"a": "1"} and obj["metadata"]["name"] == "c"


def test_update_create_of_a_deployment_matches_the_real_server() -> None:
    dep = {"apiVersion": "apps/v1", "kind": "Deployment",
           "metadata": {"name": "d", "labels": {"app": "x"}, "finalizers": ["f"]},
           "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "x"}},
                    "template": {"metadata": {"labels": {"app": "x"}}, "spec": {
                        "containers": [{"name": "c", "image": "i",
                                        "ports": [{"containerPort": 80}]}]}}}}
    fields = update(None, dep, manager="kubectl-create")["metadata"]["managedFields"][0]
    assert fields["fieldsV1"] == {
        "f:metadata": {"f:finalizers": {".": {}, 'v:"f"': {}},
                       "f:labels": {".": {}, "f:app": {}}},
        "f:spec": {"f:replicas": {}, "f:selector": {}, "f:template": {
            "f:metadata": {"f:labels": {".": {}, "f:app": {}}},
            "f:spec": {"f:containers": {'k:{"name":"c"}': {
                ".": {}, "f:image": {}, "f:name": {}, "f:ports": {
                    ".": {}, 'k:{"containerPort":80,"protocol":"TCP"}': {
                        ".": {}, "f:containerPort": {}}}}}}}}}
    assert (fields["manager"], fields["operation"], fields["time"]) == (
        "kubectl-create", "Update", T0)


SCHEMA = {"type": "object", "properties": {
    "spec": {"type": "object", "properties": {
        "items": {"type": "array", "x-kubernetes-list-type": "map",
                  "x-kubernetes-list-map-keys": ["name"],
                  "items": {"type": "object", "properties": {
                      "name": {"type": "string"}, "v": {"type": "integer"}}}},
        "tags": {"type": "array", "x-kubernetes-list-type": "set",
                 "items": {"type": "string"}},
        "args": {"type": "array", "items": {"type": "string"}},
        "sel": {"type": "object", "x-kubernetes-map-type": "atomic",
                "additionalProperties": {"type": "string"}},
        "extra": {"type": "object", "additionalProperties": {
            "type": "object", "properties": {"x": {"type": "string"}}}},
        "n": {"type": "integer"}}}}}


def cr(spec: dict[str, Any]) -> dict[str, Any]:
    return {"apiVersion": "ex.io/v1", "kind": "Thing", "metadata": {"name": "t"}, "spec": spec}


def test_update_create_of_a_custom_resource_owns_spec_itself() -> None:
    fields = update(None, cr({"n": 1}), schema=SCHEMA)["metadata"]["managedFields"][0]
    assert fields["fieldsV1"] == {"f:spec": {".": {}, "f:n": {}}}


def test_apply_field_sets_follow_the_crd_schema() -> None:
    spec = {"items": [{"name": "a", "v": 1}], "tags": ["x"], "args": ["1"],
            "sel": {"k": "v"}, "extra": {"e": {"x": "1"}}}
    obj = apply(None, cr(spec), schema=SCHEMA)
    assert obj["metadata"]["managedFields"][0]["fieldsV1"] == {"f:spec": {
        "f:args": {}, "f:extra": {"f:e": {".": {}, "f:x": {}}},
        "f:items": {'k:{"name":"a"}': {".": {}, "f:name": {}, "f:v": {}}},
        "f:sel": {}, "f:tags": {'v:"x"': {}}}}


# -- updates by the same applier -------------------------------------------------------


def test_reapply_removes_fields_the_manager_no_longer_applies() -> None:
    live = apply(None, cm({"a": "1", "b": "2"}, labels={"x": "1", "y": "2"}))
    obj = apply(live, cm({"a": "1"}, labels={"x": "1"}), now=T2)
    assert obj["data"] == {"a": "1"}
    assert obj["metadata"]["labels"] == {"x": "1"}
    assert owned(obj, "m/Apply") == {".data.a", ".metadata.labels.x"}
    assert entries(obj)["m/Apply"]["time"] == T2


def test_reapply_keeps_fields_another_manager_owns() -> None:
    live = apply(None, cm({"a": "1", "b": "2"}), manager="one")
    live = apply(live, cm({"b": "2"}), manager="two")
    obj = apply(live, cm({"a": "1"}), manager="one")
    assert obj["data"] == {"a": "1", "b": "2"}
    assert owned(obj, "one/Apply") == {".data.a"}
    assert owned(obj, "two/Apply") == {".data.b"}


def test_reapply_keeps_fields_an_updater_changed() -> None:
    live = apply(None, cm({"a": "1", "b": "2"}))
    live = update(live, cm({"a": "1", "b": "3"}, managedFields=live["metadata"]["managedFields"]),
                  manager="editor", now=T1)
    obj = apply(live, cm({"a": "1"}), now=T2)
    assert obj["data"] == {"a": "1", "b": "3"}
    assert owned(obj, "editor/Update") == {".data.b"}


def test_unchanged_reapply_keeps_the_time() -> None:
    live = apply(None, cm({"a": "1"}), now=T1)
    obj = apply(live, cm({"a": "1"}), now=T2)
    assert entries(obj)["m/Apply"]["time"] == T1
    assert obj["data"] == live["data"]


def test_applying_metadata_name_only_does_not_prune_metadata() -> None:
    live = apply(None, cm({"a": "1"}, labels={"x": "1"}))
    obj = apply(live, cm({"a": "1"}))
    assert obj["metadata"]["name"] == "c" and "labels" not in obj["metadata"]


# -- conflicts -------------------------------------------------------------------------


def _csa_deployment() -> dict[str, Any]:
    dep = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"},
           "spec": {"replicas": 1, "template": {"spec": {"containers": [
               {"name": "c", "image": "i:1"}]}}}}
    return update(None, dep, manager="kubectl-client-side-apply")


def _with(obj: dict[str, Any], replicas: int, image: str) -> dict[str, Any]:
    out = copy.deepcopy(obj)
    out["metadata"].pop("managedFields")
    out["spec"]["replicas"] = replicas
    out["spec"]["template"]["spec"]["containers"][0]["image"] = image
    return out


CONFLICT_MESSAGES = [
    (2, "i:1", ('Apply failed with 1 conflict: conflict with "kubectl-client-side-apply" using'
               " apps/v1: .spec.replicas")),
    (2, "i:2", ('Apply failed with 2 conflicts: conflicts with "kubectl-client-side-apply" using'
               ' apps/v1:\n- .spec.replicas\n- .spec.template.spec.containers[name="c"].image')),
]


@pytest.mark.parametrize(("replicas", "image", "message"), CONFLICT_MESSAGES)
def test_conflict_with_an_updater(replicas: int, image: str, message: str) -> None:
    live = _csa_deployment()
    with pytest.raises(ApplyConflict) as err:
        apply(live, _with(live, replicas, image))
    assert str(err.value) == message
    assert err.value.conflicts[0] == ("kubectl-client-side-apply", ".spec.replicas")
    assert err.value.causes[0] == {
        "reason": "FieldManagerConflict", "field": ".spec.replicas",
        "message": 'conflict with "kubectl-client-side-apply" using apps/v1'}


def test_conflicts_are_grouped_by_sorted_manager() -> None:
    live = apply(None, cm({"a": "1", "b": "1"}), manager="zed")
    live = apply(live, cm({"c": "1"}), manager="alpha")
    live = apply(live, cm({"a": "1", "b": "1", "c": "1"}), manager="both")
    with pytest.raises(ApplyConflict) as err:
        apply(live, cm({"a": "2", "b": "2", "c": "2"}), manager="new")
    assert str(err.value) == ('Apply failed with 6 conflicts: conflicts with "alpha":\n- .data.c\n'
                              'conflicts with "both":\n- .data.a\n- .data.b\n- .data.c\n'
                              'conflicts with "zed":\n- .data.a\n- .data.b')


def test_conflict_with_a_subresource_manager_names_it() -> None:
    live = apply(None, cm({"a": "1"}), manager="st", subresource="status")
    assert entries(live)["st/Apply"]["subresource"] == "status"
    with pytest.raises(ApplyConflict, match='conflict with "st" with subresource "status":'
                                            " .data.a$"):
        apply(live, cm({"a": "2"}))


def test_same_value_shares_ownership_without_conflict() -> None:
    live = _csa_deployment()
    obj = apply(live, _with(live, 1, "i:1"))
    assert ".spec.replicas" in owned(obj, "m/Apply")
    assert ".spec.replicas" in owned(obj, "kubectl-client-side-apply/Update")


def test_force_moves_ownership() -> None:
    live = _csa_deployment()
    obj = apply(live, _with(live, 3, "i:1"), force=True)
    assert obj["spec"]["replicas"] == 3
    assert ".spec.replicas" in owned(obj, "m/Apply")
    assert ".spec.replicas" not in owned(obj, "kubectl-client-side-apply/Update")
    assert '.spec.template.spec.containers[name="c"].image' in owned(
        obj, "kubectl-client-side-apply/Update")


def test_kubectl_takes_over_fields_its_last_client_side_apply_set() -> None:
    config = cm({"a": "1"})
    live = update(None, cm({"a": "1"}, annotations={LAST: json.dumps(config)}),
                  manager="kubectl-client-side-apply")
    obj = apply(live, cm({"a": "2"}), manager="kubectl")
    assert obj["data"] == {"a": "2"}
    assert obj["metadata"]["annotations"][LAST] == (
        '{"apiVersion":"v1","data":{"a":"2"},"kind":"ConfigMap",'
        '"metadata":{"name":"c","namespace":"ns"}}\n')
    with pytest.raises(ApplyConflict):
        apply(live, cm({"a": "2"}), manager="other")


# -- list merging ----------------------------------------------------------------------


def test_list_map_merge_keeps_live_only_items_in_place() -> None:
    live = update(None, cr({"items": [{"name": "a", "v": 1}, {"name": "b", "v": 1}],
                            "tags": ["p", "q"], "args": ["1", "2"]}), schema=SCHEMA)
    obj = apply(live, cr({"items": [{"name": "c", "v": 3}, {"name": "a", "v": 2}],
                          "tags": ["r"], "args": ["9"]}), schema=SCHEMA, force=True)
    assert obj["spec"]["items"] == [{"name": "c", "v": 3}, {"name": "a", "v": 2},
                                    {"name": "b", "v": 1}]
    assert obj["spec"]["tags"] == ["p", "q", "r"]
    assert obj["spec"]["args"] == ["9"]


def test_builtin_containers_merge_by_name() -> None:
    live = _csa_deployment()
    config = _with(live, 1, "i:1")
    config["spec"]["template"]["spec"]["containers"] = [{"name": "side", "image": "s"}]
    obj = apply(live, config)
    assert [c["name"] for c in obj["spec"]["template"]["spec"]["containers"]] == ["c", "side"]


def test_atomic_map_is_replaced_whole() -> None:
    live = apply(None, cr({"sel": {"a": "1", "b": "2"}}), schema=SCHEMA, manager="one")
    obj = apply(live, cr({"sel": {"c": "3"}}), schema=SCHEMA, manager="one")
    assert obj["spec"]["sel"] == {"c": "3"}


def test_removed_list_item_is_pruned() -> None:
    live = apply(None, cr({"items": [{"name": "a"}, {"name": "b"}]}), schema=SCHEMA)
    obj = apply(live, cr({"items": [{"name": "b"}]}), schema=SCHEMA)
    assert obj["spec"]["items"] == [{"name": "b"}]


# -- rejected configurations -----------------------------------------------------------

BAD_CONFIGS = [
    (cm({}, managedFields=[]), 400, "metadata.managedFields must be nil"),
    ({**cm({}), "kind": "Secret"}, 400, "invalid object type: /v1, Kind=Secret"),
    (cr({"items": [{"v": 1}]}), 500,
     ("failed to create typed patch object (/t; ex.io/v1, Kind=Thing): .spec.items: element 0:"
     ' associative list with keys has an element that omits key field "name"')),
    (cr({"items": [{"name": "a"}, {"name": "a"}]}), 500,
     'duplicate entries for key [name="a"]'),
]


@pytest.mark.parametrize(("config", "code", "message"), BAD_CONFIGS)
def test_bad_configurations(config: dict[str, Any], code: int, message: str) -> None:
    with pytest.raises(PatchError) as err:
        server_side_apply(None, config, manager="m", force=False, api_version=(
            "v1" if config["apiVersion"] == "v1" else "ex.io/v1"),
            kind="ConfigMap" if config["apiVersion"] == "v1" else "Thing", schema=SCHEMA
            if config["apiVersion"] != "v1" else None, now=T1)
    assert err.value.code == code
    assert message in str(err.value)


# -- track_update ----------------------------------------------------------------------


def test_update_takes_changed_fields_from_other_managers() -> None:
    live = apply(None, cm({"a": "1", "b": "1"}), manager="applier")
    new = copy.deepcopy(live)
    new["data"] = {"a": "2", "c": "1"}
    obj = update(live, new, manager="editor", now=T2)
    assert owned(obj, "applier/Apply") == set()
    assert owned(obj, "editor/Update") == {".data.a", ".data.c"}
    assert [e["manager"] for e in obj["metadata"]["managedFields"]] == ["editor"]


def test_update_without_changes_keeps_entries_and_times() -> None:
    live = update(None, cm({"a": "1"}), manager="u", now=T0)
    obj = update(live, copy.deepcopy(live), manager="u", now=T2)
    assert obj["metadata"]["managedFields"] == live["metadata"]["managedFields"]


def test_update_merges_into_the_managers_previous_entry() -> None:
    live = update(None, cm({"a": "1"}), manager="u", now=T0)
    new = copy.deepcopy(live)
    new["data"]["b"] = "2"
    obj = update(live, new, manager="u", now=T1)
    # ConfigMap.data is omitempty in Go, so the creator owns the map itself too.
    assert owned(obj, "u/Update") == {".data", ".data.a", ".data.b"}
    assert entries(obj)["u/Update"]["time"] == T1


def test_apply_entries_sort_before_update_entries() -> None:
    live = update(None, cm({"a": "1"}), manager="aaa", now=T0)
    obj = apply(live, cm({"b": "1"}), manager="zzz")
    assert [(e["manager"], e["operation"]) for e in obj["metadata"]["managedFields"]] == [
        ("zzz", "Apply"), ("aaa", "Update")]


@pytest.mark.parametrize("sent", [[], [{}]])
def test_sending_empty_managed_fields_resets_them(sent: list[Any]) -> None:
    live = update(None, cm({"a": "1"}), manager="u")
    new = copy.deepcopy(live)
    new["metadata"]["managedFields"] = sent
    assert update(live, new, manager="v")["metadata"]["managedFields"] == []


def test_sent_managed_fields_replace_the_live_ones() -> None:
    live = update(None, cm({"a": "1"}), manager="u")
    new = copy.deepcopy(live)
    new["metadata"]["managedFields"][0]["manager"] = "renamed"
    obj = update(live, new, manager="v")
    assert [e["manager"] for e in obj["metadata"]["managedFields"]] == ["renamed"]


def test_status_subresource_entry() -> None:
    live = update(None, cr({"n": 1}), schema=SCHEMA)
    new = {**copy.deepcopy(live), "status": {"ok": True}}
    obj = update(live, new, manager="ctl", schema=SCHEMA, subresource="status", now=T1)
    entry = entries(obj)["ctl/Update"]
    assert entry["subresource"] == "status"
    assert entry["fieldsV1"] == {"f:status": {".": {}, "f:ok": {}}}


def test_more_than_ten_updaters_fold_into_ancient_changes() -> None:
    obj = cm({})
    obj = update(None, obj, manager="u00", now="2024-01-01T00:00:00Z")
    for i in range(1, 12):
        new = copy.deepcopy(obj)
        new["data"][f"k{i}"] = "v"
        obj = update(obj, new, manager=f"u{i:02}", now=f"2024-01-01T00:00:{i:02}Z")
    managers = [e["manager"] for e in obj["metadata"]["managedFields"]]
    assert len(managers) == 10 and managers[0] == "ancient-changes"
    assert owned(obj, "ancient-changes/Update") == {".data", ".data.k1", ".data.k2"}
    assert entries(obj)["ancient-changes/Update"]["time"] == "2024-01-01T00:00:02Z"


# -- field set encoding ----------------------------------------------------------------

PATHS = [
    (("f:spec", "f:replicas"), ".spec.replicas"),
    (("f:spec", 'k:{"containerPort":80,"protocol":"TCP"}', "f:name"),
     '.spec[containerPort=80,protocol="TCP"].name'),
    (("f:metadata", "f:finalizers", 'v:"a/b"'), '.metadata.finalizers[="a/b"]'),
    (("f:x", "i:3"), ".x[3]"),
]


@pytest.mark.parametrize(("path", "text"), PATHS)
def test_path_string(path: tuple[str, ...], text: str) -> None:
    assert path_string(path) == text


def test_fields_v1_round_trip_marks_owned_parents_with_a_dot() -> None:
    paths = {("f:a",), ("f:a", "f:b"), ("f:c", 'k:{"n":1}'), ("f:c", 'k:{"n":1}', "f:x")}
    encoded = to_fields_v1(paths)
    assert encoded == {"f:a": {".": {}, "f:b": {}},
                       "f:c": {'k:{"n":1}': {".": {}, "f:x": {}}}}
    assert from_fields_v1(encoded) == paths
