"""JSON merge patch, JSON patch and strategic merge patch as kube-apiserver applies them."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from lockwright.devcluster.patch import PatchError, json_patch, merge_patch, strategic_merge_patch

# -- RFC 7386 --------------------------------------------------------------------------

# RFC 7386 appendix A, plus nested nulls in new values.
MERGE_CASES = [
    ({"a": "b"}, {"a": "c"}, {"a": "c"}),
    ({"a": "b"}, {"b": "c"}, {"a": "b", "b": "c"}),
    ({"a": "b"}, {"a": None}, {}),
    ({"a": "b", "b": "c"}, {"a": None}, {"b": "c"}),
    ({"a": ["b"]}, {"a": "c"}, {"a": "c"}),
    ({"a": "c"}, {"a": ["b"]}, {"a": ["b"]}),
    ({"a": {"b": "c"}}, {"a": {"b": "d", "c": None}}, {"a": {"b": "d"}}),
    ({"a": [{"b": "c"}]}, {"a": [1]}, {"a": [1]}),
    (["a", "b"], ["c", "d"], ["c", "d"]),
    ({"a": "b"}, ["c"], ["c"]),
    ({"e": None}, {"a": 1}, {"e": None, "a": 1}),
    ([1, 2], {"a": "b", "c": None}, {"a": "b"}),
    ({}, {"a": {"bb": {"ccc": None}}}, {"a": {"bb": {}}}),
    ({"metadata": {"labels": {"a": "1", "b": "2"}}}, {"metadata": {"labels": {"a": None}}},
     {"metadata": {"labels": {"b": "2"}}}),
]


@pytest.mark.parametrize(("target", "patch", "expected"), MERGE_CASES)
def test_merge_patch(target: Any, patch: Any, expected: Any) -> None:
    before = copy.deepcopy(target)
    assert merge_patch(target, patch) == expected
    assert target == before


def test_merge_patch_null_body_is_bad_request() -> None:
    with pytest.raises(PatchError) as err:
        merge_patch({"a": 1}, None)
    assert (err.value.code, str(err.value)) == (400, "Invalid JSON Patch")


# -- RFC 6902 --------------------------------------------------------------------------

DOC = {"metadata": {"labels": {"a/b": "1", "c~d": "2"}}, "spec": {"list": [1, 2, 3]}}

JSON_PATCH_CASES = [
    ("add key", [{"op": "add", "path": "/spec/x", "value": {"y": 1}}],
     {**DOC, "spec": {"list": [1, 2, 3], "x": {"y": 1}}}),
    ("add index", [{"op": "add", "path": "/spec/list/1", "value": 9}],
     {**DOC, "spec": {"list": [1, 9, 2, 3]}}),
    ("append dash", [{"op": "add", "path": "/spec/list/-", "value": 4}],
     {**DOC, "spec": {"list": [1, 2, 3, 4]}}),
    ("add at end index", [{"op": "add", "path": "/spec/list/3", "value": 4}],
     {**DOC, "spec": {"list": [1, 2, 3, 4]}}),
    ("negative index", [{"op": "remove", "path": "/spec/list/-1"}],
     {**DOC, "spec": {"list": [1, 2]}}),
    ("escapes", [{"op": "remove", "path": "/metadata/labels/a~1b"},
                 {"op": "replace", "path": "/metadata/labels/c~0d", "value": "3"}],
     {**DOC, "metadata": {"labels": {"c~d": "3"}}}),
    ("replace index", [{"op": "replace", "path": "/spec/list/0", "value": 0}],
     {**DOC, "spec": {"list": [0, 2, 3]}}),
    ("replace missing key adds (json-patch.v4)", [{"op": "replace", "path": "/spec/n",
                                                   "value": 1}],
     {**DOC, "spec": {"list": [1, 2, 3], "n": 1}}),
    ("move", [{"op": "move", "from": "/spec/list", "path": "/moved"}],
     {**DOC, "spec": {}, "moved": [1, 2, 3]}),
    ("copy", [{"op": "copy", "from": "/spec/list/2", "path": "/spec/list/0"}],
     {**DOC, "spec": {"list": [3, 1, 2, 3]}}),
    ("test then replace", [{"op": "test", "path": "/spec/list", "value": [1, 2, 3]},
                           {"op": "replace", "path": "/spec", "value": {}}],
     {**DOC, "spec": {}}),
    ("replace root", [{"op": "replace", "path": "", "value": {"x": 1}}], {"x": 1}),
]


@pytest.mark.parametrize(("name", "ops", "expected"), JSON_PATCH_CASES,
                         ids=[c[0] for c in JSON_PATCH_CASES])
def test_json_patch(name: str, ops: list[dict[str, Any]], expected: Any) -> None:
    doc = copy.deepcopy(DOC)
    assert json_patch(doc, ops) == expected
    assert doc == DOC


JSON_PATCH_ERRORS = [
    ({"op": "test", "path": "/spec/list/0", "value": 2}, 422,
     "testing value /spec/list/0 failed: test failed"),
    ({"op": "test", "path": "/spec/list/0", "value": True}, 422,
     "testing value /spec/list/0 failed: test failed"),
    ({"op": "remove", "path": "/spec/nope"}, 422,
     ("error in remove for path: '/spec/nope': Unable to remove nonexistent key: nope:"
     " missing value")),
    ({"op": "add", "path": "/nope/x", "value": 1}, 422,
     'add operation does not apply: doc is missing path: "/nope/x": missing value'),
    ({"op": "add", "path": "/spec/list/7", "value": 1}, 422,
     "Unable to access invalid index: 7: invalid index referenced"),
    ({"op": "replace", "path": "/spec/list/5", "value": 1}, 422,
     'replace operation does not apply: doc is missing key: "/spec/list/5": missing value'),
    ({"op": "move", "from": "/nope", "path": "/x"}, 422,
     'move operation does not apply: doc is missing path: "/nope": missing value'),
    ({"op": "frob", "path": "/x"}, 422, "Unexpected kind: frob"),
    ({"path": "/x"}, 422, "Unexpected kind: unknown"),
]


@pytest.mark.parametrize(("op", "code", "detail"), JSON_PATCH_ERRORS)
def test_json_patch_errors(op: dict[str, Any], code: int, detail: str) -> None:
    with pytest.raises(PatchError) as err:
        json_patch(DOC, [op])
    assert (err.value.code, err.value.detail) == (code, detail)
    # kube-apiserver's Status message for these is generic (what kubectl prints).
    assert str(err.value) == "the server rejected our request due to an error in our request"


@pytest.mark.parametrize(("body", "code"), [({"op": "add"}, 400), ([1], 400),
                                            ([{"op": "test", "path": "/a"}] * 10001, 413)])
def test_json_patch_malformed(body: Any, code: int) -> None:
    with pytest.raises(PatchError) as err:
        json_patch({}, body)
    assert err.value.code == code


# -- strategic merge patch -------------------------------------------------------------


def _deployment(containers: list[dict[str, Any]], **spec: Any) -> dict[str, Any]:
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"},
            "spec": {"template": {"spec": {"containers": containers}}, **spec}}


def _containers(obj: dict[str, Any]) -> list[dict[str, Any]]:
    return obj["spec"]["template"]["spec"]["containers"]


def _pod(patch: dict[str, Any]) -> dict[str, Any]:
    return {"spec": {"template": {"spec": patch}}}


APPS = ("apps/v1", "Deployment")
C1 = {"name": "a", "image": "a:1", "env": [{"name": "X", "value": "1"}],
      "ports": [{"containerPort": 80, "protocol": "TCP"}]}
C2 = {"name": "b", "image": "b:1"}

SMP_CONTAINER_CASES = [
    ("merge by name keeps others",
     _pod({"containers": [{"name": "b", "image": "b:2"}]}),
     [C1, {"name": "b", "image": "b:2"}]),
    ("new item goes before server-only items",
     _pod({"containers": [{"name": "c", "image": "c:1"}]}),
     [{"name": "c", "image": "c:1"}, C1, C2]),
    ("$setElementOrder places new items",
     _pod({"$setElementOrder/containers": [{"name": "a"}, {"name": "b"}, {"name": "c"}],
           "containers": [{"name": "c", "image": "c:1"}]}),
     [C1, C2, {"name": "c", "image": "c:1"}]),
    ("$setElementOrder reorders",
     _pod({"$setElementOrder/containers": [{"name": "b"}, {"name": "a"}]}),
     [C2, C1]),
    ("$patch delete item",
     _pod({"containers": [{"name": "a", "$patch": "delete"}]}), [C2]),
    ("$patch replace list",
     _pod({"containers": [{"name": "z", "image": "z"}, {"$patch": "replace"}]}),
     [{"name": "z", "image": "z"}]),
    ("nested env merge and null deletes field",
     _pod({"containers": [{"name": "a", "image": None,
                           "env": [{"name": "Y", "value": "2"}]}]}),
     [{"name": "a", "env": [{"name": "Y", "value": "2"}, {"name": "X", "value": "1"}],
       "ports": [{"containerPort": 80, "protocol": "TCP"}]}, C2]),
    ("ports merge by containerPort",
     _pod({"containers": [{"name": "a", "ports": [{"containerPort": 80, "name": "http"}]}]}),
     [{**C1, "ports": [{"containerPort": 80, "protocol": "TCP", "name": "http"}]}, C2]),
    ("args without strategy are replaced",
     _pod({"containers": [{"name": "b", "args": ["x"]}]}),
     [C1, {**C2, "args": ["x"]}]),
]


@pytest.mark.parametrize(("name", "patch", "expected"), SMP_CONTAINER_CASES,
                         ids=[c[0] for c in SMP_CONTAINER_CASES])
def test_strategic_merge_containers(name: str, patch: dict[str, Any],
                                    expected: list[dict[str, Any]]) -> None:
    target = _deployment([C1, C2])
    before = copy.deepcopy(target)
    assert _containers(strategic_merge_patch(target, patch, *APPS)) == expected
    assert target == before


META = {"labels": {"a": "1", "b": "2"}, "finalizers": ["x", "y"],
        "ownerReferences": [{"uid": "u1", "name": "one"}, {"uid": "u2", "name": "two"}]}

SMP_META_CASES = [
    ("null deletes a label", {"labels": {"a": None, "c": "3"}},
     {**META, "labels": {"b": "2", "c": "3"}}),
    ("finalizers merge as a set", {"finalizers": ["y", "z"]},
     {**META, "finalizers": ["x", "y", "z"]}),
    ("$deleteFromPrimitiveList", {"$deleteFromPrimitiveList/finalizers": ["x"]},
     {**META, "finalizers": ["y"]}),
    ("ownerReferences merge by uid", {"ownerReferences": [{"uid": "u2", "name": "TWO"}]},
     {**META, "ownerReferences": [{"uid": "u1", "name": "one"},
                                  {"uid": "u2", "name": "TWO"}]}),
    ("$patch replace on a map", {"labels": {"$patch": "replace", "only": "me"}},
     {**META, "labels": {"only": "me"}}),
    ("$patch delete on a map empties it", {"labels": {"$patch": "delete"}},
     {**META, "labels": {}}),
    ("null for a missing key is ignored", {"annotations": None}, META),
]


@pytest.mark.parametrize(("name", "patch", "expected"), SMP_META_CASES,
                         ids=[c[0] for c in SMP_META_CASES])
def test_strategic_merge_metadata(name: str, patch: dict[str, Any],
                                  expected: dict[str, Any]) -> None:
    target = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": copy.deepcopy(META)}
    result = strategic_merge_patch(target, {"metadata": patch}, "v1", "ConfigMap")
    assert result["metadata"] == expected


TYPE_CASES = [
    ("service ports merge by port", "v1", "Service",
     {"spec": {"ports": [{"port": 80, "targetPort": 8080}, {"port": 443}]}},
     {"spec": {"ports": [{"port": 80, "targetPort": 9090}]}},
     {"spec": {"ports": [{"port": 80, "targetPort": 9090}, {"port": 443}]}}),
    ("tolerations are atomic", *APPS,
     _pod({"tolerations": [{"key": "a"}, {"key": "b"}]}), _pod({"tolerations": [{"key": "c"}]}),
     _pod({"tolerations": [{"key": "c"}]})),
    ("volumes merge by name", *APPS,
     _pod({"volumes": [{"name": "v", "emptyDir": {}}]}),
     _pod({"volumes": [{"name": "w", "secret": {"secretName": "s"}}]}),
     _pod({"volumes": [{"name": "w", "secret": {"secretName": "s"}},
                       {"name": "v", "emptyDir": {}}]})),
    ("$retainKeys drops other keys", *APPS,
     {"spec": {"strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1}}}},
     {"spec": {"strategy": {"$retainKeys": ["type"], "type": "Recreate"}}},
     {"spec": {"strategy": {"type": "Recreate"}}}),
    ("deployment conditions merge by type", *APPS,
     {"status": {"conditions": [{"type": "Available", "status": "False"},
                                {"type": "Progressing", "status": "True"}]}},
     {"status": {"conditions": [{"type": "Available", "status": "True"}]}},
     {"status": {"conditions": [{"type": "Available", "status": "True"},
                                {"type": "Progressing", "status": "True"}]}}),
    ("rbac rules are replaced", "rbac.authorization.k8s.io/v1", "Role",
     {"rules": [{"verbs": ["get"]}, {"verbs": ["list"]}]}, {"rules": [{"verbs": ["watch"]}]},
     {"rules": [{"verbs": ["watch"]}]}),
    ("rolebinding subjects are replaced", "rbac.authorization.k8s.io/v1", "RoleBinding",
     {"subjects": [{"kind": "User", "name": "a"}]}, {"subjects": [{"kind": "User", "name": "b"}]},
     {"subjects": [{"kind": "User", "name": "b"}]}),
    ("webhooks merge by name", "admissionregistration.k8s.io/v1",
     "ValidatingWebhookConfiguration",
     {"webhooks": [{"name": "a", "sideEffects": "None"}, {"name": "b"}]},
     {"webhooks": [{"name": "a", "sideEffects": "Some"}]},
     {"webhooks": [{"name": "a", "sideEffects": "Some"}, {"name": "b"}]}),
    ("serviceaccount secrets merge by name", "v1", "ServiceAccount",
     {"secrets": [{"name": "a"}]}, {"secrets": [{"name": "b"}]},
     {"secrets": [{"name": "b"}, {"name": "a"}]}),
    ("crd versions are replaced", "apiextensions.k8s.io/v1", "CustomResourceDefinition",
     {"spec": {"versions": [{"name": "v1"}, {"name": "v2"}]}},
     {"spec": {"versions": [{"name": "v3"}]}}, {"spec": {"versions": [{"name": "v3"}]}}),
    ("lease spec merges", "coordination.k8s.io/v1", "Lease",
     {"spec": {"holderIdentity": "a", "leaseDurationSeconds": 15}},
     {"spec": {"holderIdentity": "b"}},
     {"spec": {"holderIdentity": "b", "leaseDurationSeconds": 15}}),
]


@pytest.mark.parametrize(("name", "api_version", "kind", "target", "patch", "expected"),
                         TYPE_CASES, ids=[c[0] for c in TYPE_CASES])
def test_strategic_merge_types(name: str, api_version: str, kind: str, target: dict[str, Any],
                               patch: dict[str, Any], expected: dict[str, Any]) -> None:
    assert strategic_merge_patch(target, patch, api_version, kind) == expected


SMP_ERRORS = [
    (_pod({"containers": [{"image": "x"}]}), "does not contain declared merge key: name"),
    (_pod({"containers": [{"name": "a", "$patch": "merge"}]}),
     "merging lists cannot yet be specified in the patch"),
    (_pod({"containers": [{"name": "a", "$patch": "bogus"}]}), "unknown patch type: bogus"),
    ({"spec": {"strategy": {"$retainKeys": ["type"], "rollingUpdate": {}}}},
     "invalid patch format of retainKeys"),
    (_pod({"$setElementOrder/containers": [{"name": "a"}],
           "containers": [{"name": "b", "image": "x"}]}), "doesn't match $setElementOrder/"),
    ({"metadata": {"$deleteFromPrimitiveList/finalizers": "x"}},
     "invalid patch format of primitive list"),
]


@pytest.mark.parametrize(("patch", "message"), SMP_ERRORS)
def test_strategic_merge_errors(patch: dict[str, Any], message: str) -> None:
    with pytest.raises(PatchError) as err:
        strategic_merge_patch(_deployment([C1, C2]), patch, *APPS)
    assert err.value.code == 400
    assert message in str(err.value)


def test_strategic_merge_top_level_replace() -> None:
    result = strategic_merge_patch({"a": 1, "b": 2}, {"$patch": "replace", "c": 3}, "v1",
                                   "ConfigMap")
    assert result == {"c": 3}
