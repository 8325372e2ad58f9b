"""CRD compatibility: every change kind of the issue, one case that blocks and one that passes.

Each table row replaces ``.spec`` of version ``v1`` (or the CRD around it) and lists what
``compare`` must report as (kind, path, blocking). Then: served-version pairs (skipped with a
conversion webhook, old differences subtracted), the field summary (counts, first paths,
whole versions), payload round trips, and that identical versions are never walked.
crdify's own fixtures and a real provider's releases are in ``test_crdcompat_fixtures``.
"""

from __future__ import annotations

import copy
import importlib
import json
from typing import Any

import pytest

from lockwright import crdcompat
from lockwright.crdcompat import Change, FieldSummary, Kind, Report, Verdict, compare

crd_module = importlib.import_module("lockwright.crdcompat.crd")

Obj = dict[str, Any]
NAME = "widgets.example.org"
S: Obj = {"type": "string"}
I: Obj = {"type": "integer"}


def obj(props: Obj | None = None, **kw: Any) -> Obj:
    return {"type": "object", "properties": props or {}, **kw}


def version(name: str, spec: Obj, served: bool = True, storage: bool = True) -> Obj:
    return {"name": name, "served": served, "storage": storage,
            "schema": {"openAPIV3Schema": obj({"apiVersion": S, "kind": S, "spec": spec})}}


def crd(*versions: Obj, scope: str = "Namespaced", stored: tuple[str, ...] = (),
        webhook: bool = False) -> Obj:
    spec: Obj = {"group": "example.org", "scope": scope, "versions": list(versions),
                 "names": {"kind": "Widget", "plural": "widgets"}}
    if webhook:
        spec["conversion"] = {"strategy": "Webhook", "webhook": {
            "conversionReviewVersions": ["v1"], "clientConfig": {"url": "https://x"}}}
    out = {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
           "metadata": {"name": NAME}, "spec": spec}
    if stored:
        out["status"] = {"storedVersions": list(stored)}
    return out


def found(verdict: Verdict) -> list[tuple[str, str, bool]]:
    return [(c.kind, c.path, c.blocking) for c in verdict.changes]


def spec_change(old: Obj, new: Obj) -> Verdict:
    return compare(crd(version("v1", old)), crd(version("v1", new)))


def field(schema: Obj) -> Obj:
    """A ``.spec`` with one field ``x`` of this schema."""
    return obj({"x": schema})


X = ".spec.x"
LIST: Obj = {"type": "array", "items": S}
CONDS: Obj = {"type": "array", "items": obj({"type": S, "status": S}, required=["type"])}
MAP_BY_TYPE: Obj = {"x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["type"]}
BLOCK, PASS = True, False

# (id, old .spec.x, new .spec.x, [(kind, path, blocking)])
FIELD_CASES: list[tuple[str, Obj, Obj, list[tuple[str, str, bool]]]] = [
    ("type-blocks", I, S, [(Kind.TYPE_CHANGED, X, BLOCK)]),
    # int32 and int64 are no formats the API server checks: it drops them
    ("type-passes-format-the-server-ignores", {**I, "format": "int32"},
     {**I, "format": "int64"}, []),
    ("default-added-blocks", S, {**S, "default": "a"}, [(Kind.DEFAULT_ADDED, X, BLOCK)]),
    ("default-changed-blocks", {**S, "default": "a"}, {**S, "default": "b"},
     [(Kind.DEFAULT_CHANGED, X, BLOCK)]),
    ("default-changed-passes-same-value-other-key-order",
     {**obj(), "default": {"a": 1, "b": 2}}, {**obj(), "default": {"b": 2, "a": 1}}, []),
    ("default-removed-blocks", {**S, "default": "a"}, S, [(Kind.DEFAULT_REMOVED, X, BLOCK)]),
    ("default-removed-passes-default-kept-description-changed",
     {**S, "default": "a", "description": "old"}, {**S, "default": "a", "description": "new"},
     []),
    ("enum-added-blocks", S, {**S, "enum": ["a", "b"]}, [(Kind.ENUM_ADDED, X, BLOCK)]),
    ("enum-removed-passes", {**S, "enum": ["a"]}, S, [(Kind.ENUM_REMOVED, X, PASS)]),
    ("enum-value-removed-blocks", {**S, "enum": ["a", "b"]}, {**S, "enum": ["a"]},
     [(Kind.ENUM_VALUE_REMOVED, X, BLOCK)]),
    ("enum-value-added-passes", {**S, "enum": ["a"]}, {**S, "enum": ["a", "b"]},
     [(Kind.ENUM_VALUE_ADDED, X, PASS)]),
    ("enum-reordered-passes", {**S, "enum": ["a", "b"]}, {**S, "enum": ["b", "a"]}, []),
    ("pattern-added-blocks", S, {**S, "pattern": "^a"}, [(Kind.PATTERN_CHANGED, X, BLOCK)]),
    ("pattern-changed-blocks", {**S, "pattern": "^a"}, {**S, "pattern": "^b"},
     [(Kind.PATTERN_CHANGED, X, BLOCK)]),
    ("pattern-removed-passes", {**S, "pattern": "^a"}, S, [(Kind.PATTERN_REMOVED, X, PASS)]),
    ("format-added-blocks", S, {**S, "format": "date-time"}, [(Kind.FORMAT_CHANGED, X, BLOCK)]),
    ("format-changed-blocks", {**S, "format": "date-time"}, {**S, "format": "date"},
     [(Kind.FORMAT_CHANGED, X, BLOCK)]),
    ("format-removed-passes", {**S, "format": "uuid"}, S, [(Kind.FORMAT_REMOVED, X, PASS)]),
    ("format-spelling-passes", {**S, "format": "date-time"}, {**S, "format": "datetime"}, []),
    ("nullable-removed-blocks", {**S, "nullable": True}, S, [(Kind.NULLABLE_REMOVED, X, BLOCK)]),
    ("nullable-added-passes", S, {**S, "nullable": True}, [(Kind.NULLABLE_ADDED, X, PASS)]),
    ("nullable-false-is-absent", {**S, "nullable": False}, S, []),
    ("cel-rule-added-blocks", S, {**S, "x-kubernetes-validations": [{"rule": "self != ''"}]},
     [(Kind.VALIDATION_RULES_CHANGED, X, BLOCK)]),
    ("cel-rule-changed-blocks", {**S, "x-kubernetes-validations": [{"rule": "self != ''"}]},
     {**S, "x-kubernetes-validations": [{"rule": "self != 'a'"}]},
     [(Kind.VALIDATION_RULES_CHANGED, X, BLOCK)]),
    ("cel-message-changed-passes",
     {**S, "x-kubernetes-validations": [{"rule": "self != ''", "message": "m1"}]},
     {**S, "x-kubernetes-validations": [{"rule": "self != ''", "message": "m2"}]}, []),
    ("cel-rule-removed-passes", {**S, "x-kubernetes-validations": [{"rule": "self != ''"}]}, S,
     [(Kind.VALIDATION_RULES_REMOVED, X, PASS)]),
    ("description-only-passes", {**S, "description": "a"}, {**S, "description": "b",
                                                              "title": "t", "example": "e"}, []),
    ("unknown-blocks", I, {**I, "x-kubernetes-int-or-string": True},
     [(Kind.UNKNOWN, X, BLOCK)]),
    ("unknown-blocks-multipleOf", I, {**I, "multipleOf": 2}, [(Kind.UNKNOWN, X, BLOCK)]),
    ("unknown-blocks-list-type-not-a-list-type", LIST, {**LIST, "x-kubernetes-list-type": "bag"},
     [(Kind.UNKNOWN, X, BLOCK)]),
    # atomic is what a list without x-kubernetes-list-type already is
    ("list-type-atomic-added-passes", LIST, {**LIST, "x-kubernetes-list-type": "atomic"}, []),
    # set and map add uniqueness: blocking, and the plan checks the existing lists
    ("list-type-set-added-blocks", LIST, {**LIST, "x-kubernetes-list-type": "set"},
     [(Kind.LIST_TYPE_TIGHTENED, X, BLOCK)]),
    ("list-type-map-added-blocks-once-for-type-and-keys", CONDS, {**CONDS, **MAP_BY_TYPE},
     [(Kind.LIST_TYPE_TIGHTENED, X, BLOCK)]),
    ("list-type-set-to-map-blocks", {**CONDS, "x-kubernetes-list-type": "set"},
     {**CONDS, **MAP_BY_TYPE}, [(Kind.LIST_TYPE_TIGHTENED, X, BLOCK)]),
    ("list-type-map-removed-passes", {**CONDS, **MAP_BY_TYPE}, CONDS,
     [(Kind.LIST_TYPE_LOOSENED, X, PASS)]),
    ("list-type-set-to-atomic-passes", {**LIST, "x-kubernetes-list-type": "set"},
     {**LIST, "x-kubernetes-list-type": "atomic"}, [(Kind.LIST_TYPE_LOOSENED, X, PASS)]),
    ("list-map-keys-changed-blocks", {**CONDS, **MAP_BY_TYPE},
     {**CONDS, **MAP_BY_TYPE, "x-kubernetes-list-map-keys": ["reason"]},
     [(Kind.LIST_MAP_KEYS_CHANGED, X, BLOCK)]),
    ("list-map-keys-fewer-blocks", {**CONDS, **MAP_BY_TYPE,
                                    "x-kubernetes-list-map-keys": ["type", "reason"]},
     {**CONDS, **MAP_BY_TYPE}, [(Kind.LIST_MAP_KEYS_CHANGED, X, BLOCK)]),
    ("list-map-keys-more-passes", {**CONDS, **MAP_BY_TYPE},
     {**CONDS, **MAP_BY_TYPE, "x-kubernetes-list-map-keys": ["type", "reason"]},
     [(Kind.LIST_MAP_KEYS_ADDED, X, PASS)]),
    ("list-map-keys-not-a-list-blocks", {**CONDS, **MAP_BY_TYPE},
     {**CONDS, **MAP_BY_TYPE, "x-kubernetes-list-map-keys": "type"},
     [(Kind.UNKNOWN, X, BLOCK)]),
    # map-type changes how server-side apply merges, never what is valid
    ("map-type-atomic-passes", obj(), {**obj(), "x-kubernetes-map-type": "atomic"},
     [(Kind.MAP_TYPE_CHANGED, X, PASS)]),
    ("map-type-granular-added-passes-silently", obj(),
     {**obj(), "x-kubernetes-map-type": "granular"}, []),
    ("map-type-unknown-value-blocks", obj(), {**obj(), "x-kubernetes-map-type": "deep"},
     [(Kind.UNKNOWN, X, BLOCK)]),
    ("preserve-unknown-added-passes", obj(),
     {**obj(), "x-kubernetes-preserve-unknown-fields": True},
     [(Kind.PRESERVE_UNKNOWN_ADDED, X, PASS)]),
    ("preserve-unknown-removed-blocks", {**obj(), "x-kubernetes-preserve-unknown-fields": True},
     obj(), [(Kind.PRESERVE_UNKNOWN_REMOVED, X, BLOCK)]),
    ("items-type-blocks", {"type": "array", "items": S}, {"type": "array", "items": I},
     [(Kind.TYPE_CHANGED, X + "[*]", BLOCK)]),
    ("map-values-type-blocks", {**obj(), "additionalProperties": S},
     {**obj(), "additionalProperties": I}, [(Kind.TYPE_CHANGED, X + ".*", BLOCK)]),
]

BOUNDS = [("minimum", True, 1, 2), ("minLength", True, 1, 2), ("minItems", True, 1, 2),
          ("minProperties", True, 1, 2), ("maximum", False, 5, 4), ("maxLength", False, 5, 4),
          ("maxItems", False, 5, 4), ("maxProperties", False, 5, 4)]
for key, _, old, tighter in BOUNDS:
    FIELD_CASES += [
        (f"{key}-tightened-blocks", {key: old}, {key: tighter},
         [(Kind.BOUND_TIGHTENED, X, BLOCK)]),
        (f"{key}-added-blocks", {}, {key: tighter}, [(Kind.BOUND_TIGHTENED, X, BLOCK)]),
        (f"{key}-loosened-passes", {key: tighter}, {key: old}, [(Kind.BOUND_LOOSENED, X, PASS)]),
        (f"{key}-removed-passes", {key: old}, {}, [(Kind.BOUND_LOOSENED, X, PASS)]),
    ]
for key in ("exclusiveMinimum", "exclusiveMaximum"):
    FIELD_CASES += [
        (f"{key}-set-blocks", {"minimum": 1, "maximum": 5},
         {"minimum": 1, "maximum": 5, key: True}, [(Kind.BOUND_TIGHTENED, X, BLOCK)]),
        (f"{key}-unset-passes", {"minimum": 1, "maximum": 5, key: True},
         {"minimum": 1, "maximum": 5, key: False}, [(Kind.BOUND_LOOSENED, X, PASS)]),
    ]


@pytest.mark.parametrize(("old", "new", "expected"), [c[1:] for c in FIELD_CASES],
                         ids=[c[0] for c in FIELD_CASES])
def test_field_changes(old: Obj, new: Obj, expected: list[tuple[str, str, bool]]) -> None:
    verdict = spec_change(field(old), field(new))
    assert found(verdict) == expected
    assert verdict.blocking == any(b for _, _, b in expected)


@pytest.mark.parametrize(("old", "new", "expected"), [
    (obj({"a": S, "b": S}), obj({"a": S}), [(Kind.PROPERTY_REMOVED, ".spec.b", BLOCK)]),
    # a removed subtree is reported once, at its top
    (obj({"a": obj({"b": obj({"c": S})})}), obj(),
     [(Kind.PROPERTY_REMOVED, ".spec.a", BLOCK)]),
    (obj({"a": S}), obj({"a": S, "b": S, "c": obj({"d": S}, required=["d"])}), []),
    (obj({"a": S}), obj({"a": S}, required=["a"]), [(Kind.REQUIRED_ADDED, ".spec.a", BLOCK)]),
    # a new field that is required at once: a new required property
    (obj({"a": S}), obj({"a": S, "b": S}, required=["b"]),
     [(Kind.REQUIRED_ADDED, ".spec.b", BLOCK)]),
    (obj({"a": S}, required=["a"]), obj({"a": S}), [(Kind.REQUIRED_REMOVED, ".spec.a", PASS)]),
    (obj({"a": S}, required=["a"]), obj({"a": S}, required=[]),
     [(Kind.REQUIRED_REMOVED, ".spec.a", PASS)]),
    (obj({"a": S, "b": S}, required=["a", "b"]), obj({"a": S, "b": S}, required=["b", "a"]),
     []),
    (obj({"odd.name": S}), obj(), [(Kind.PROPERTY_REMOVED, '.spec["odd.name"]', BLOCK)]),
], ids=["property-removed-blocks", "subtree-removed-once", "property-added-passes",
        "required-added-blocks", "new-required-property-blocks", "required-removed-passes",
        "required-emptied-passes", "required-reordered-passes", "odd-name-quoted"])
def test_properties_and_required(old: Obj, new: Obj,
                                 expected: list[tuple[str, str, bool]]) -> None:
    assert found(spec_change(old, new)) == expected


def test_several_unclassified_keywords_make_one_unknown_change_naming_them() -> None:
    [change] = spec_change(field(I), field({**I, "multipleOf": 2, "uniqueItems": True})).changes
    assert (change.kind, change.blocking) == (Kind.UNKNOWN, True)
    assert change.detail == "unclassified change of multipleOf, uniqueItems"
    assert "by hand" in change.fix


SPEC = obj({"a": S})


@pytest.mark.parametrize(("old", "new", "expected"), [
    (crd(version("v1", SPEC)), crd(version("v1", SPEC), scope="Cluster"),
     [(Kind.SCOPE_CHANGED, "", BLOCK)]),
    (crd(version("v1", SPEC)), crd(version("v1", SPEC)), []),
    (crd(version("v1alpha1", SPEC, storage=False), version("v1", SPEC), stored=("v1alpha1",)),
     crd(version("v1", SPEC), version("v1alpha1", SPEC, served=False, storage=False)),
     [(Kind.SERVED_VERSION_REMOVED, "", BLOCK)]),
    (crd(version("v1alpha1", SPEC, storage=False), version("v1", SPEC), stored=("v1alpha1",)),
     crd(version("v1", SPEC)),
     [(Kind.STORED_VERSION_REMOVED, "", BLOCK), (Kind.SERVED_VERSION_REMOVED, "", BLOCK)]),
    # neither stored nor served: it may go
    (crd(version("v1alpha1", SPEC, served=False, storage=False), version("v1", SPEC),
         stored=("v1",)), crd(version("v1", SPEC)), []),
], ids=["scope-blocks", "scope-same-passes", "served-version-removed-blocks",
        "stored-version-removed-blocks", "unserved-unstored-version-removed-passes"])
def test_crd_wide_changes(old: Obj, new: Obj, expected: list[tuple[str, str, bool]]) -> None:
    assert [(c.kind, c.path, c.blocking) for c in compare(old, new).changes] == expected


def test_stored_versions_can_be_given_for_a_packaged_old_crd() -> None:
    old = crd(version("v1alpha1", SPEC, storage=False, served=False), version("v1", SPEC))
    new = crd(version("v1", SPEC))
    assert compare(old, new).changes == []
    [change] = compare(old, new, stored=["v1alpha1", "v1"]).changes
    assert (change.kind, change.version) == (Kind.STORED_VERSION_REMOVED, "v1alpha1")


def test_crd_wide_changes_keep_the_preflight_words() -> None:
    old = crd(version("v1", SPEC), stored=("v1",))
    [scope, stored, served] = crdcompat.crd_changes(old, crd(version("v2", SPEC),
                                                             scope="Cluster"))
    assert scope.detail == "scope cannot change from Namespaced to Cluster"
    assert stored.fix == ("run a storage migration to the new storage version and remove v1 "
                          "from status.storedVersions, or keep v1 in spec.versions")
    assert served.message == (f"CustomResourceDefinition {NAME} version v1: version v1 is "
                              "served but the new package drops it; keep v1 served")


# served versions of one CRD, conversion None: v1 lacks v1alpha1's field b
ALPHA, GA = obj({"a": S, "b": S}), obj({"a": S})


@pytest.mark.parametrize(("old", "new", "expected"), [
    (crd(version("v1alpha1", ALPHA)),
     crd(version("v1alpha1", ALPHA, storage=False), version("v1", GA)),
     [(Kind.PROPERTY_REMOVED, "v1alpha1 -> v1", ".spec.b", BLOCK)]),
    (crd(version("v1alpha1", ALPHA)),
     crd(version("v1alpha1", ALPHA, storage=False), version("v1", GA), webhook=True), []),
    # the old CRD already served both with the same difference: nothing new
    (crd(version("v1alpha1", ALPHA, storage=False), version("v1", GA)),
     crd(version("v1alpha1", ALPHA, storage=False), version("v1", obj({"a": S, "c": S}))),
     []),
    # order is kube-aware (v1beta1 before v1, whatever the list says)
    (crd(version("v1", GA)),
     crd(version("v1", GA), version("v1beta1", ALPHA, storage=False)),
     [(Kind.PROPERTY_REMOVED, "v1beta1 -> v1", ".spec.b", BLOCK)]),
], ids=["new-served-version-differs-blocks", "webhook-skips", "old-difference-passes",
        "kube-version-order"])
def test_served_version_pairs(old: Obj, new: Obj,
                              expected: list[tuple[str, str, str, bool]]) -> None:
    changes = crdcompat.served_pair_changes(old, new)
    assert [(c.kind, c.version, c.path, c.blocking) for c in changes] == expected


def test_field_summary_counts_and_lists_the_first_paths() -> None:
    old = obj({f"f{i}": S for i in range(30)} | {"gone": obj({"deep": S}), "t": I})
    new = obj({f"f{i}": S for i in range(30)} | {f"n{i}": obj({"deep": S}) for i in range(15)}
              | {"t": {**I, "minimum": 1}})
    [summary] = compare(crd(version("v1", old)), crd(version("v1", new)), limit=3).fields
    assert summary == FieldSummary("v1", "changed", added=15, removed=1, changed=1,
                                   first_added=[".spec.n0", ".spec.n1", ".spec.n2"],
                                   first_removed=[".spec.gone"], first_changed=[".spec.t"])


def test_field_summary_of_whole_versions_and_of_description_only_changes() -> None:
    old = crd(version("v1alpha1", SPEC, storage=False, served=False), version("v1", SPEC))
    described = obj({"a": {**S, "description": "now documented"}})
    new = crd(version("v1", described), version("v2", SPEC, storage=False))
    verdict = compare(old, new)
    assert verdict.fields == [FieldSummary("v2", "added"), FieldSummary("v1alpha1", "removed")]
    assert verdict.changes == []


def test_a_change_names_crd_version_path_kind_and_fix() -> None:
    [change] = spec_change(field(S), field({**S, "enum": ["a"]})).changes
    assert change == Change(NAME, "v1", X, "enum-added", True, 'enum ["a"] added',
                            "leave .spec.x without an enum, or add it in a new API version")
    assert change.message == (f"CustomResourceDefinition {NAME} version v1 field .spec.x: "
                              'enum ["a"] added; leave .spec.x without an enum, or add it in '
                              "a new API version")
    [info] = spec_change(field({**S, "enum": ["a"]}), field({**S, "enum": ["a", "b"]})).changes
    assert (info.blocking, info.fix) == (False, "")


def test_verdicts_and_reports_travel_as_plain_json() -> None:
    old, new = crd(version("v1", obj({"a": S, "b": S}))), crd(version("v1", obj({"a": I})))
    report = crdcompat.compare_all([old, {"kind": "ConfigMap"}],
                                   [new, {**crd(version("v1", SPEC)),
                                          "metadata": {"name": "more.example.org"}}])
    data = json.loads(json.dumps(report.to_dict()))
    assert Report.from_dict(data) == report
    assert Verdict.from_dict(data["verdicts"][0]) == report.verdicts[0]
    assert data["verdicts"][0]["changes"][0]["kind"] == "type-changed"
    assert (report.added, report.removed, report.unchanged, report.blocking) == (
        ["more.example.org"], [], 0, True)


def test_compare_all_lists_only_crds_with_something_to_report() -> None:
    same = [crd(version("v1", SPEC)) | {"metadata": {"name": f"c{i}.example.org"}}
            for i in range(5)]
    described = copy.deepcopy(same)
    described[2]["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["description"] = "doc"
    changed = copy.deepcopy(described)
    changed[4]["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"] = \
        obj({"a": I})
    report = crdcompat.compare_all(same, changed[1:])
    assert [v.crd for v in report.verdicts] == ["c4.example.org"]
    assert (report.removed, report.unchanged) == (["c0.example.org"], 3)


def test_identical_versions_are_never_walked(monkeypatch: pytest.MonkeyPatch) -> None:
    walked: list[Any] = []
    real = crd_module.diff_schemas

    def counting(old: Any, new: Any) -> Any:
        walked.append(new)
        return real(old, new)

    monkeypatch.setattr(crd_module, "diff_schemas", counting)
    # with a conversion webhook, no served-version pairs are compared either
    olds = [crd(version("v1", obj({"a": S})), version("v2", obj({"a": S}), storage=False),
                webhook=True) | {"metadata": {"name": f"c{i}.example.org"}}
            for i in range(200)]
    news = copy.deepcopy(olds)
    news[7]["spec"]["versions"][1]["schema"]["openAPIV3Schema"]["properties"]["spec"] = \
        obj({"a": S, "b": S})
    report = crdcompat.compare_all(olds, news)
    assert len(walked) == 1
    assert [(v.crd, v.fields[0].version, v.fields[0].first_added) for v in report.verdicts] == [
        ("c7.example.org", "v2", [".spec.b"])]
