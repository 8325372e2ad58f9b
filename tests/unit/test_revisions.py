"""A package's revisions: the spec as created, the patch bringing one up to date, which
retire, which are collected and which Lock entries a gone package leaves."""

from __future__ import annotations

from typing import Any

import pytest

from lockwright import names
from lockwright.upgrade import revisions as rv

Obj = dict[str, Any]
IMAGE = "xpkg.example.io/acme/provider-nop:v1"


def package(**spec: Any) -> Obj:
    return {"metadata": {"name": "nop", "uid": "u-1"}, "spec": {"package": IMAGE, **spec}}


@pytest.mark.parametrize(("kind", "pkg", "source", "deployment", "want"), [
    # Configurations have no runtime: the image and copied fields only.
    ("Configuration", package(), "", True, {"image": IMAGE}),
    # The source the digest came from wins over what the package says now.
    ("Configuration", package(), "r.io/moved:v2", True, {"image": "r.io/moved:v2"}),
    ("Configuration", package(packagePullPolicy="Always", commonLabels={"a": "b"},
                              skipDependencyResolution=None), "", False,
     {"image": IMAGE, "packagePullPolicy": "Always", "commonLabels": {"a": "b"}}),
    ("Function", package(), "", True,
     {"image": IMAGE, "runtimeConfigRef": {"name": "default"},
      "tlsServerSecretName": "nop-tls-server"}),
    ("Provider", package(runtimeConfigRef={"name": "big"}), "", True,
     {"image": IMAGE, "runtimeConfigRef": {"name": "big"},
      "tlsServerSecretName": "nop-tls-server", "tlsClientSecretName": "nop-tls-client"}),
    # An External runtime: no runtime config, no TLS Secrets.
    ("Provider", package(runtimeConfigRef={"name": "big"}), "", False, {"image": IMAGE}),
])
def test_revision_spec(kind: str, pkg: Obj, source: str, deployment: bool, want: Obj) -> None:
    assert rv.revision_spec(kind, pkg, source, deployment) == want


LABELS = {"labels": {"pkg.crossplane.io/package": "nop"},
          "annotations": {"lockwright.dev/digest": "sha256:aa"}}


def revision(number: int, metadata: Obj | None = None, **spec: Any) -> Obj:
    return {"metadata": {"name": "nop-aa", **(LABELS if metadata is None else metadata)},
            "spec": {"revision": number, "desiredState": "Inactive", **spec}}


@pytest.mark.parametrize(("rev", "wanted", "top", "body", "number"), [
    # Up to date: nothing to write.
    (revision(3, image=IMAGE), {"image": IMAGE}, 3, {}, 3),
    # Not the newest: one above the highest.
    (revision(1, image=IMAGE), {"image": IMAGE}, 3, {"spec": {"revision": 4}}, 4),
    # A changed field is set; a copied field the package dropped is removed.
    (revision(2, image=IMAGE, packagePullPolicy="Always"), {"image": "r.io/x:v2"}, 2,
     {"spec": {"image": "r.io/x:v2", "packagePullPolicy": None}}, 2),
    # Runtime fields go when the runtime does.
    (revision(2, image=IMAGE, tlsServerSecretName="nop-tls-server"), {"image": IMAGE}, 2,
     {"spec": {"tlsServerSecretName": None}}, 2),
    # A revision missing its label and digest annotation gets them.
    (revision(2, {}, image=IMAGE), {"image": IMAGE}, 2, {"metadata": LABELS}, 2),
    (revision(2, {"labels": LABELS["labels"],
                  "annotations": {"lockwright.dev/digest": "sha256:bb"}}, image=IMAGE),
     {"image": IMAGE}, 2, {"metadata": {"annotations": LABELS["annotations"]}}, 2),
])
def test_refresh(rev: Obj, wanted: Obj, top: int, body: Obj, number: int) -> None:
    assert rv.refresh(rev, wanted, top, LABELS) == (body, number)


@pytest.mark.parametrize(("kind", "number"), [("ProviderRevision", 1), ("FunctionRevision", 7)])
def test_new_revision_is_inactive_and_controlled_by_its_package(kind: str, number: int) -> None:
    owner = rv.package_owner(kind.removesuffix("Revision"), package())
    made = rv.new_revision(kind, "nop-aa", LABELS, owner, {"image": IMAGE}, number)
    assert made == {"apiVersion": "pkg.crossplane.io/v1", "kind": kind,
                    "metadata": {"name": "nop-aa", **LABELS, "ownerReferences": [owner]},
                    "spec": {"image": IMAGE, "desiredState": "Inactive", "revision": number}}
    assert owner == {"apiVersion": "pkg.crossplane.io/v1", "kind": kind.removesuffix("Revision"),
                     "name": "nop", "uid": "u-1", "controller": True, "blockOwnerDeletion": True}


def rev_(name: str, state: str = "Inactive", uid: str = "", number: int = 1,
         owners: list[Obj] | None = None) -> Obj:
    return {"metadata": {"name": name, "uid": uid or f"u-{name}",
                         "ownerReferences": owners or []},
            "spec": {"desiredState": state, "revision": number}}


def deployment(controller_uid: str, controller: bool = True) -> Obj:
    return {"metadata": {"ownerReferences": [{"uid": controller_uid,
                                              "controller": controller}]}}


@pytest.mark.parametrize(("rev", "running", "locked", "want"), [
    (rev_("a"), [], set(), False),
    (rev_("a", "Active"), [], set(), True),
    # Inactive but still in the Lock (a switch's old revision).
    (rev_("a"), [], {"a"}, True),
    # Inactive but still running its runtime.
    (rev_("a"), [deployment("u-a")], set(), True),
    # A Deployment it only co-owns is not its runtime.
    (rev_("a"), [deployment("u-a", controller=False)], set(), False),
    (rev_("a"), [deployment("u-b")], {"b"}, False),
])
def test_retirable(rev: Obj, running: list[Obj], locked: set[str], want: bool) -> None:
    assert rv.retirable(rev, running, locked) is want


@pytest.mark.parametrize(("states", "keep", "collected"), [
    (["Inactive", "Inactive", "Inactive"], 1, ["r0", "r1"]),
    (["Inactive", "Inactive", "Inactive"], 3, []),
    (["Inactive", "Inactive"], 0, ["r0", "r1"]),
    # An Active one is never collected, however old.
    (["Active", "Inactive", "Inactive"], 1, ["r1"]),
])
def test_collectable(states: list[str], keep: int, collected: list[str]) -> None:
    others = [rev_(f"r{i}", s, number=i) for i, s in enumerate(states)]
    assert [r["metadata"]["name"] for r in rv.collectable(others, keep)] == collected


@pytest.mark.parametrize(("owners", "want"), [
    ([{"kind": "Provider", "name": "nop", "uid": "old"}], True),
    ([{"kind": "Provider", "name": "other", "uid": "u-1"}], False),
    ([{"kind": "Function", "name": "nop", "uid": "u-1"}], False),
    ([], False),
])
def test_owned_by_package(owners: list[Obj], want: bool) -> None:
    assert rv.owned_by_package(rev_("nop-aa", owners=owners), "Provider", "nop") is want


A12, B12 = "a" * 12, "b" * 12


@pytest.mark.parametrize(("entries", "staying", "gone"), [
    ([], set(), []),
    ([{"name": f"nop-{A12}", "kind": "Provider"}], set(), [f"nop-{A12}"]),
    ([{"name": f"nop-{A12}", "type": "Provider"}], set(), [f"nop-{A12}"]),
    # A revision still there keeps its entry.
    ([{"name": f"nop-{A12}", "kind": "Provider"}, {"name": f"nop-{B12}", "kind": "Provider"}],
     {f"nop-{B12}"}, [f"nop-{A12}"]),
    # Another kind's package of the same name, or another package, is not touched.
    ([{"name": f"nop-{A12}", "kind": "Function"}], set(), []),
    ([{"name": f"nope-{A12}", "kind": "Provider"}], set(), []),
])
def test_gone_entries(entries: list[Obj], staying: set[str], gone: list[str]) -> None:
    assert rv.gone_entries({"packages": entries}, "Provider", "nop", staying) == gone


_PKG = {"metadata": {"name": "nop", "uid": "pkg-now"}}
_OWNER = rv.package_owner("Provider", _PKG)
_STALE = {**_OWNER, "uid": "pkg-before-restore"}
_OTHER = {**_OWNER, "name": "alpha", "uid": "alpha-uid"}
_CM = {"apiVersion": "v1", "kind": "ConfigMap", "name": "keep", "uid": "cm"}


@pytest.mark.parametrize(("refs", "want"), [
    ([], [_OWNER]),  # orphaned, or restored with owner references dropped (Velero)
    ([_CM], [_CM, _OWNER]),
    ([_STALE], [_OWNER]),  # restored as exported: the package of that name is another now
    ([{**_STALE, "controller": False}, _CM], [_CM, _OWNER]),
    ([_OWNER], None),  # already ours
    ([_OTHER], None),  # another package's: never taken over
    ([{**_STALE, "kind": "Configuration"}], None),  # another kind's package of that name
])
def test_adopted_owners(refs: list[Obj], want: list[Obj] | None) -> None:
    assert rv.adopted_owners(refs, "Provider", _PKG) == want


# --- which name the package's revision has (docs/design.md, "Revision names") ------------
DIGEST = "sha256:" + "ab" * 32
LEGACY = "nop-" + "ab" * 6  # named by the digest alone, before naming by generation
WANTED = {"image": IMAGE, "runtimeConfigRef": {"name": "default"}}


def named(generation: int) -> str:
    return names.revision_name("nop", DIGEST, generation)


def pkg_at(generation: int, current: str = LEGACY) -> Obj:
    return {"metadata": {"name": "nop", "uid": "u-1", "generation": generation},
            "spec": {"package": IMAGE}, "status": {"currentRevision": current}}


def rev_named(name: str, recorded: int | None = None, uid: str = "u-1",
              state: str = "Active", **spec: Any) -> Obj:
    annotations = {"lockwright.dev/digest": DIGEST}
    if recorded is not None:
        annotations |= {rv.GENERATION_ANNOTATION: str(recorded),
                        rv.PACKAGE_UID_ANNOTATION: uid}
    return {"metadata": {"name": name, "annotations": annotations},
            "spec": {**WANTED, "revision": 1, "desiredState": state, **spec}}


@pytest.mark.parametrize(("pkg", "revs", "naming", "adopted", "want"), [
    # A first install: digest and generation.
    (pkg_at(1, ""), [], rv.BY_GENERATION, set(), named(1)),
    # By digest (the setting): the digest alone, whatever the generation.
    (pkg_at(7, ""), [], rv.BY_DIGEST, set(), LEGACY),
    (pkg_at(7), [rev_named(LEGACY)], rv.BY_DIGEST, set(), LEGACY),
    # Upgrading lockwright: the current revision, named by its digest, still says what the
    # package asks for: kept (no new revision, no switch)...
    (pkg_at(4), [rev_named(LEGACY)], rv.BY_GENERATION, set(), LEGACY),
    # ...and once recorded for this package at this generation, kept at it.
    (pkg_at(4), [rev_named(LEGACY, 4)], rv.BY_GENERATION, set(), LEGACY),
    # The next spec change names a new revision: recorded at another generation...
    (pkg_at(5), [rev_named(LEGACY, 4)], rv.BY_GENERATION, set(), named(5)),
    # ...or not yet recorded, but its spec says otherwise (a runtimeConfigRef changed).
    (pkg_at(5), [rev_named(LEGACY, runtimeConfigRef={"name": "old"})], rv.BY_GENERATION,
     set(), named(5)),
    # A digest-named revision that is not the current one (the package went back to an old
    # digest): a spec change, a new revision.
    (pkg_at(6, "nop-cdcdcdcdcdcd"), [rev_named(LEGACY)], rv.BY_GENERATION, set(), named(6)),
    # Revisions named by generation: the one of this generation, another for the next.
    (pkg_at(2, named(2)), [rev_named(named(2), 2)], rv.BY_GENERATION, set(), named(2)),
    (pkg_at(3, named(2)), [rev_named(named(2), 2)], rv.BY_GENERATION, set(), named(3)),
    # A package re-created (orphaned revisions) or restored: the Active revision recorded
    # for the package object before it is kept while it says what the spec asks...
    (pkg_at(1, ""), [rev_named(named(3), 3, uid="u-0")], rv.BY_GENERATION, set(), named(3)),
    # ...not an Inactive one, nor one whose spec says otherwise...
    (pkg_at(1, ""), [rev_named(named(3), 3, uid="u-0", state="Inactive")], rv.BY_GENERATION,
     set(), named(1)),
    (pkg_at(1, ""), [rev_named(named(3), 3, uid="u-0", packagePullPolicy="Always")],
     rv.BY_GENERATION, set(), named(1)),
    # ...and one made before records, adopted by this pass, is kept too.
    (pkg_at(1, ""), [rev_named(LEGACY)], rv.BY_GENERATION, {LEGACY}, LEGACY),
    (pkg_at(1, ""), [rev_named(LEGACY)], rv.BY_GENERATION, set(), named(1)),
])
def test_current_name(pkg: Obj, revs: list[Obj], naming: str, adopted: set[str],
                      want: str) -> None:
    generation = pkg["metadata"]["generation"]
    assert rv.current_name("nop", DIGEST, generation, pkg, revs, WANTED, naming,
                           frozenset(adopted)) == want


@pytest.mark.parametrize(("current", "wanted", "changes"), [
    (WANTED, WANTED, {}),
    ({**WANTED, "revision": 3, "desiredState": "Active"}, WANTED, {}),  # not spec fields
    (WANTED, {**WANTED, "runtimeConfigRef": {"name": "big"}},
     {"runtimeConfigRef": {"name": "big"}}),
    ({**WANTED, "packagePullPolicy": "Always"}, WANTED, {"packagePullPolicy": None}),
])
def test_spec_changes(current: Obj, wanted: Obj, changes: Obj) -> None:
    assert rv.spec_changes(current, wanted) == changes
