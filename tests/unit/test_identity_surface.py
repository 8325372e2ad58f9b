"""A cluster's API surface (issue 23): rows from live objects, the sum format, comparing
sums and clusters, checking manifests. Plain data in, plain data out."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from lockwright.errors import InputError
from lockwright.identity import diff, manifests, names, sums, surface
from lockwright.identity.digest import type_digest
from tests.e2e.packages import crd

Obj = dict[str, Any]
D1, D2 = "sha256:" + "1" * 64, "sha256:" + "2" * 64
C1, C2 = "sha256:" + "a" * 64, "sha256:" + "b" * 64
ESTABLISHED = {"conditions": [{"type": "Established", "status": "True"}]}
PROPS = {"size": {"type": "integer"}}
#: ``widget(recorded=SHIPPED)``: the digest its install would record (of the CRD as shipped).
SHIPPED = "shipped"


def widget(props: Obj | None = None, *, group: str = "example.org", owner: str = "",
           recorded: str = "", established: bool = True, version: str = "v1") -> Obj:
    schema = {"type": "object", "properties": {"spec": {
        "type": "object", "properties": copy.deepcopy(PROPS if props is None else props)}}}
    obj = crd(group, "Widget", schema=schema, version=version)
    meta = obj["metadata"]
    if owner:
        meta["ownerReferences"] = [{"apiVersion": "pkg.crossplane.io/v1", "controller": True,
                                    "kind": "ProviderRevision", "name": owner, "uid": "u"}]
    if recorded:
        meta["annotations"] = {
            names.TYPE_DIGEST: type_digest(obj) if recorded == SHIPPED else recorded}
    if established:
        obj["status"] = copy.deepcopy(ESTABLISHED)
    return obj


def mrd(state: str, owner: str = "") -> Obj:
    obj = widget(owner=owner, established=False)
    obj.update(apiVersion="apiextensions.crossplane.io/v1alpha1",
               kind="ManagedResourceDefinition")
    obj["spec"]["state"] = state
    return obj


def revision(name: str, package: str, *, controller: str = "", digest: str = C1) -> Obj:
    annotations = {"lockwright.dev/digest": digest}
    if controller:
        annotations[names.CONTROLLER_DIGEST] = controller
    return {"kind": "ProviderRevision", "metadata": {
        "name": name, "labels": {"pkg.crossplane.io/package": package},
        "annotations": annotations}}


@pytest.mark.parametrize(("revision", "want"), [
    ({"kind": "ProviderRevision", "metadata": {"labels": {
        "pkg.crossplane.io/package": "p"}}}, "provider/p"),
    ({"kind": "FunctionRevision", "metadata": {"ownerReferences": [
        {"kind": "Function", "name": "f", "controller": True}]}}, "function/f"),
    ({"kind": "ConfigurationRevision", "metadata": {"ownerReferences": [
        {"kind": "Provider", "name": "x"}]}}, ""),
    ({"kind": "Other", "metadata": {"labels": {"pkg.crossplane.io/package": "p"}}}, ""),
])
def test_a_revisions_package_by_label_else_owner(revision: Obj, want: str) -> None:
    assert surface.package_of(revision) == want


def one(rows: list[surface.TypeRow]) -> surface.TypeRow:
    [row] = rows
    return row


# --- rows -------------------------------------------------------------------------------
@pytest.mark.parametrize(("crds", "mrds", "revisions", "want"), [
    # A plain CRD of no package: established, its live digest, no controller.
    ([widget()], [], [], ("Established", "", "", "", True)),
    # Controlled by a revision: its package, and the package digest as the controller.
    ([widget(owner="p-1")], [], [revision("p-1", "p")],
     ("Established", "provider/p", "p-1", C1, True)),
    # The revision's controller digest wins over its package digest.
    ([widget(owner="p-1")], [], [revision("p-1", "p", controller=C2)],
     ("Established", "provider/p", "p-1", C2, True)),
    # An Active MRD's CRD: state Active; owner from the CRD.
    ([widget(owner="p-1")], [mrd("Active", "p-1")], [revision("p-1", "p")],
     ("Active", "provider/p", "p-1", C1, True)),
    # Crossplane's MRD controller wrote the CRD: the owner comes from the MRD.
    ([widget()], [mrd("Active", "p-1")], [revision("p-1", "p")],
     ("Active", "provider/p", "p-1", C1, True)),
    # An Inactive MRD: its type listed, not served.
    ([], [mrd("Inactive", "p-1")], [revision("p-1", "p")],
     ("Inactive", "provider/p", "p-1", C1, False)),
    # An Active MRD whose CRD is not there yet, and a CRD not established: not served.
    ([], [mrd("Active", "p-1")], [], ("not established", "", "p-1", "", False)),
    ([widget(established=False)], [], [], ("not established", "", "", "", False)),
])
def test_rows_state_package_and_controller(crds: list[Obj], mrds: list[Obj],
                                           revisions: list[Obj], want: tuple[Any, ...]) -> None:
    row = one(surface.type_rows(crds, mrds, revisions))
    assert (row.state, row.package, row.revision, row.controller, row.served) == want
    assert row.key == "example.org/v1 Widget"


def test_the_recorded_digest_wins_and_the_live_one_is_marked() -> None:
    live = one(surface.type_rows([widget()], [], []))
    assert live.digest == live.live == "live:" + type_digest(widget())
    recorded = one(surface.type_rows([widget(recorded=SHIPPED)], [], []))
    assert recorded.digest == recorded.recorded == type_digest(widget())
    assert recorded.live.startswith("live:sha256:") and not recorded.edited


def test_a_definition_that_is_not_the_recorded_one_is_edited() -> None:
    row = one(surface.type_rows([widget(recorded=D1)], [], []))
    assert row.edited and row.recorded == D1
    assert row.digest == "edited:" + row.live.removeprefix("live:")
    assert surface.sum_line(row) == f"example.org/v1 Widget {row.digest} -"


def test_one_row_per_served_version_sorted() -> None:
    obj = widget()
    v1 = obj["spec"]["versions"][0]
    obj["spec"]["versions"] = [{**v1, "name": "v2", "storage": False}, v1,
                               {**v1, "name": "v0", "served": False, "storage": False}]
    other = widget(group="a.example.org")
    rows = surface.type_rows([obj, other], [], [])
    assert [r.key for r in rows] == ["a.example.org/v1 Widget", "example.org/v1 Widget",
                                     "example.org/v2 Widget"]


def test_sum_lists_served_rows_sorted_with_a_dash_for_no_controller() -> None:
    rows = surface.type_rows([widget(owner="p-1", recorded=SHIPPED),
                              widget(group="b.example.org", recorded=SHIPPED)],
                             [mrd("Inactive")], [revision("p-1", "p")])
    d1, d2 = type_digest(widget()), type_digest(widget(group="b.example.org"))
    assert surface.sum_text(rows) == (f"b.example.org/v1 Widget {d2} -\n"
                                      f"example.org/v1 Widget {d1} {C1}\n")


# --- sums -------------------------------------------------------------------------------
@pytest.mark.parametrize(("line", "problem"), [
    ("example.org/v1 Widget sha256:11 -", "bad type digest"),
    ("example.org/v1 Widget", "2 fields, not 4"),
    (f"example.org Widget {D1} -", "bad group/version"),
    (f"example.org/v1 Widget {D1} live:{C1}", "bad controller digest"),
    ("example.org/v1 9Widget md5:x -", "bad kind, type digest"),
])
def test_a_bad_sum_line_is_named_with_the_fix(line: str, problem: str) -> None:
    with pytest.raises(InputError) as caught:
        sums.parse(f"# a comment\n\n{line}\n", "api.sum")
    assert caught.value.message.startswith(f"api.sum:3: {problem}: a sum line is ")
    assert "lockwright api sum writes it" in caught.value.message


def test_a_repeated_line_is_refused() -> None:
    line = f"example.org/v1 Widget {D1} -\n"
    with pytest.raises(InputError, match="api.sum:2: example.org/v1 Widget appears twice"):
        sums.parse(line + line, "api.sum")


def entry(digest: str = D1, controller: str = C1, key: str = "g.io/v1 A",
          recorded: str = "") -> sums.Entry:
    return sums.Entry(key, digest, controller, recorded)


EDIT = "edited:" + D2  # D1 recorded, the live definition D2


def edit(controller: str = C1, key: str = "g.io/v1 A") -> sums.Entry:
    return entry(EDIT, controller, key, recorded=D1)


@pytest.mark.parametrize(("expected", "actual", "extra", "want"), [
    ([entry()], [entry()], True, []),
    ([entry()], [entry(D2)], True, [("g.io/v1 A", "definition")]),
    ([entry()], [entry(controller=C2)], True, [("g.io/v1 A", "controller")]),
    ([entry()], [entry(D2, C2)], True, [("g.io/v1 A", "definition"),
                                        ("g.io/v1 A", "controller")]),
    ([entry()], [], True, [("g.io/v1 A", "missing")]),
    ([], [entry()], True, [("g.io/v1 A", "extra")]),
    ([], [entry()], False, []),
    ([entry(key="g.io/v1 B")], [entry()], True, [("g.io/v1 A", "extra"),
                                                 ("g.io/v1 B", "missing")]),
    # An edited type: a difference whether the sum has its recorded or its edited digest.
    ([entry()], [edit()], True, [("g.io/v1 A", "edited")]),
    ([entry(EDIT)], [edit()], True, [("g.io/v1 A", "edited")]),
    ([entry(D2)], [edit()], True, [("g.io/v1 A", "definition"), ("g.io/v1 A", "edited")]),
    ([entry()], [edit(C2)], True, [("g.io/v1 A", "controller"), ("g.io/v1 A", "edited")]),
    ([], [edit()], True, [("g.io/v1 A", "extra"), ("g.io/v1 A", "edited")]),
    ([], [edit()], False, []),
])
def test_compare_sums(expected: list[sums.Entry], actual: list[sums.Entry], extra: bool,
                      want: list[tuple[str, str]]) -> None:
    found = sums.compare({e.key: e for e in expected}, {e.key: e for e in actual}, extra=extra)
    assert [(d.key, d.how) for d in found] == want


def test_a_sum_reads_back_as_the_cluster_it_came_from() -> None:
    rows = surface.type_rows([widget(owner="p-1"), widget(group="b.example.org")], [],
                             [revision("p-1", "p")])
    assert sums.compare(sums.parse(surface.sum_text(rows), "f"), sums.entries(rows)) == []


def test_a_recorded_against_a_live_digest_says_why_they_cannot_match() -> None:
    [found] = sums.compare({"g.io/v1 A": entry()}, {"g.io/v1 A": entry("live:" + D1)})
    assert "one digest was recorded at install, the other computed" in found.message
    assert found.message.startswith(f"g.io/v1 A: definition differs (sum {D1}, served live:{D1})")


def test_an_edited_type_names_both_digests_and_the_fix() -> None:
    [found] = sums.compare({"g.io/v1 A": entry()}, {"g.io/v1 A": edit()})
    assert found.message.startswith(
        f"g.io/v1 A: edited (the install recorded {D1}, the live definition is {D2})")
    assert "install the package again" in found.message


def test_an_edited_sum_line_reads_back() -> None:
    assert sums.parse_line(f"g.io/v1 A {EDIT} {C1}", "f:1") == entry(EDIT)


# --- two clusters -----------------------------------------------------------------------
def cluster(*crds: Obj, controller: str = C1) -> tuple[list[surface.TypeRow], dict[str, Obj]]:
    rows = surface.type_rows(crds, [], [revision("p-1", "p", digest=controller)])
    return rows, {c["metadata"]["name"]: c for c in crds}


def cluster_diff(a: tuple[list[surface.TypeRow], dict[str, Obj]],
                 b: tuple[list[surface.TypeRow], dict[str, Obj]]) -> list[diff.TypeDiff]:
    return diff.diff(a[0], b[0], a[1], b[1])


@pytest.mark.parametrize(("props_b", "verdict", "fields"), [
    ({**PROPS, "color": {"type": "string"}}, "compatible", ["spec.color: added (compatible)"]),
    ({"size": {"type": "string"}}, "breaking",
     ["spec.size: type-changed (breaking): type changed from integer to string"]),
    ({}, "breaking", ["spec.size: property-removed (breaking): field removed"]),
    ({"size": {"type": "integer", "description": "d"}}, "compatible",
     [diff.NO_SCHEMA_CHANGE]),
])
def test_a_definition_difference_is_explained_field_by_field(
        props_b: Obj, verdict: str, fields: list[str]) -> None:
    [found] = cluster_diff(cluster(widget(owner="p-1")), cluster(widget(props_b, owner="p-1")))
    assert (found.key, found.how, found.verdict) == ("example.org/v1 Widget", "definition",
                                                      verdict)
    assert [f.split(":")[0] for f in found.fields] == [f.split(":")[0] for f in fields]
    assert found.fields[0].startswith(fields[0][:30]), found.fields


def test_the_same_types_with_another_controller_differ_in_the_controller_only() -> None:
    found = cluster_diff(cluster(widget(owner="p-1")),
                         cluster(widget(owner="p-1"), controller=C2))
    assert [(d.how, d.a, d.b) for d in found] == [
        ("controller", f"{C1} (provider/p)", f"{C2} (provider/p)")]


def test_clusters_the_same_and_types_only_one_serves() -> None:
    assert cluster_diff(cluster(widget(owner="p-1")), cluster(widget(owner="p-1"))) == []
    found = cluster_diff(cluster(widget(), widget(group="a.example.org")),
                         cluster(widget(version="v2")))
    assert [(d.key, d.how) for d in found] == [("a.example.org/v1 Widget", "only-a"),
                                               ("example.org/v1 Widget", "only-a"),
                                               ("example.org/v2 Widget", "only-b")]


@pytest.mark.parametrize(("a", "b", "differs"), [
    ("live:x", "live:x", False), (D1, D1, False), (D1, D2, True),
    (D1, "live:x", False),  # live digests equal: what is served is the same
])
def test_definition_differs_by_live_or_both_recorded(a: str, b: str, differs: bool) -> None:
    def row(digest: str) -> surface.TypeRow:
        recorded = "" if digest.startswith("live:") else digest
        return surface.TypeRow("g", "v1", "K", "ks", digest, "Established", live="live:x",
                               recorded=recorded)
    assert diff.definition_differs(row(a), row(b)) is differs


# --- manifests --------------------------------------------------------------------------
def test_documents_of_a_stream_and_a_list_and_bad_ones_named() -> None:
    text = ("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n---\n"
            "apiVersion: v1\nkind: List\nitems:\n- {apiVersion: v1, kind: Secret, "
            "metadata: {name: b}}\n")
    found = manifests.documents(text, "m.yaml")
    assert [(f.source, f.kind, f.name) for f in found] == [
        ("m.yaml#1", "ConfigMap", "a"), ("m.yaml#2 item 1", "Secret", "b")]
    with pytest.raises(InputError, match=r"m.yaml#2: not a Kubernetes object"):
        manifests.documents("apiVersion: v1\nkind: A\n---\n[1]\n", "m.yaml")
    with pytest.raises(InputError, match=r"m.yaml: not YAML"):
        manifests.documents("a: [\n", "m.yaml")


def obj(api_version: str, kind: str, against: str = "") -> manifests.Found:
    meta: Obj = {"name": "x"}
    if against:
        meta["annotations"] = {names.WRITTEN_AGAINST: against}
    return manifests.Found("f.yaml", {"apiVersion": api_version, "kind": kind,
                                      "metadata": meta})


SERVED = {("example.org/v1", "Widget"): frozenset({D1, "live:" + D2}),
          ("v1", "ConfigMap"): frozenset()}


@pytest.mark.parametrize(("found", "how"), [
    (obj("example.org/v1", "Widget"), None),
    (obj("example.org/v1", "Widget", D1), None),
    (obj("example.org/v1", "Widget", "live:" + D2), None),
    (obj("example.org/v1", "Widget", D2), "differs"),
    (obj("example.org/v2", "Widget"), "missing"),
    (obj("v1", "ConfigMap"), None),
    (obj("v1", "ConfigMap", D1), "uncheckable"),
])
def test_check_manifests(found: manifests.Found, how: str | None) -> None:
    problems = manifests.check([found], lambda v, k: SERVED.get((v, k)))
    assert [p.how for p in problems] == ([how] if how else [])
    if how:
        assert problems[0].message.startswith(
            f"f.yaml Widget/x ({found.api_version}): {how}: ".replace(
                "Widget", found.kind))


def test_lookup_holds_recorded_and_live_digests_of_served_types_only() -> None:
    rows = surface.type_rows([widget(recorded=SHIPPED)], [mrd("Inactive")], [])
    assert manifests.lookup(rows) == {("example.org/v1", "Widget"): frozenset(
        {type_digest(widget()), rows[0].live})}


def test_an_edited_types_recorded_digest_no_longer_names_it() -> None:
    rows = surface.type_rows([widget(recorded=D1)], [], [])
    assert D1 not in manifests.lookup(rows)[("example.org/v1", "Widget")]
