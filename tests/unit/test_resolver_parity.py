"""Where the resolver now does what Crossplane does (issue 22, parity items 2-4).

- A dependency pinned by digest moves to the digest every dependent pins, when dependency
  upgrades are on.
- Roots with no solution still get what can be installed: each missing dependency at the
  version its askers accept (else the one it was reached through accepts); the packages
  whose constraints stay unmet are named with the explanation.
- A repository whose tags cannot be listed is explained naming who asks, for what.
"""

from __future__ import annotations

import pytest

from lockwright.dependencies.graph import Node
from lockwright.dependencies.resolver import CatalogError, Change, Policy
from tests.unit.test_resolver import (
    DIGEST,
    ORG,
    PTAGS,
    STAY,
    UP,
    B,
    C,
    Dep,
    FakeCatalog,
    P,
    Q,
    created,
    locked,
    moved,
    root,
    run,
)

NEWER = "sha256:" + "cd" * 32
D = f"{ORG}/configuration-d"


# --- a digest pin moves ---------------------------------------------------------------
DIGESTS = [
    ("upgrades on: from one digest to the digest every dependent now pins",
     [root("a", (P, NEWER)), root("b", (P, NEWER)), locked(P, DIGEST)], UP,
     [moved(P, NEWER, DIGEST)]),
    ("upgrades on: from a tag to the digest every dependent pins",
     [root("a", (P, NEWER)), locked(P, "v1.0.0")], UP, [moved(P, NEWER, "v1.0.0")]),
    ("downgrades on imply upgrades: the digest moves too",
     [root("a", (P, NEWER)), locked(P, DIGEST)], Policy(downgrades=True),
     [moved(P, NEWER, DIGEST)]),
    ("the installed digest still pinned by every dependent stays",
     [root("a", (P, DIGEST)), locked(P, DIGEST)], UP, []),
]


@pytest.mark.parametrize(("nodes", "policy", "want"), [c[1:] for c in DIGESTS],
                         ids=[c[0] for c in DIGESTS])
def test_digest_moves(nodes: list[Node], policy: Policy, want: list[Change]) -> None:
    decision = run(nodes, FakeCatalog({P: PTAGS}), policy)
    assert decision.unresolved == ()
    assert decision.changes == tuple(want)
    assert all(ch.package == f"{P}@{NEWER}" for ch in decision.changes)


def test_digest_move_lists_no_tags() -> None:
    catalog = FakeCatalog(failing={P: CatalogError("must not be asked", transient=False)})
    decision = run([root("a", (P, NEWER)), locked(P, DIGEST)], catalog, UP)
    assert decision.changes == (moved(P, NEWER, DIGEST),)
    assert ("versions", P) not in catalog.calls


STUCK = [
    ("upgrades off: the pin waits and the hint names the setting",
     [root("a", (P, NEWER)), locked(P, DIGEST)], STAY,
     f"a-rev asks {P} {NEWER}; installed {DIGEST} (LOCKWRIGHT_DEPENDENCY_UPGRADES is off)"),
    ("two dependents pinning different digests",
     [root("a", (P, NEWER), (B, ">=v1.0.0")), locked(B, "v1.0.0", (P, DIGEST)),
      locked(P, "v1.0.0")], UP,
     f"a-rev asks {P} {NEWER}, configuration-b-rev asks {P} {DIGEST}; installed v1.0.0;"),
    ("a pin beside a range: no tag is the digest",
     [root("a", (P, NEWER), (B, ">=v1.0.0")), locked(B, "v1.0.0", (P, ">=v1.0.0")),
      locked(P, DIGEST)], UP,
     (f"a-rev asks {P} {NEWER}, configuration-b-rev asks {P} >=v1.0.0; installed {DIGEST}"
      " (pinned by digest: it moves only to a digest every dependent pins);")),
]


@pytest.mark.parametrize(("nodes", "policy", "message"), [c[1:] for c in STUCK],
                         ids=[c[0] for c in STUCK])
def test_digest_that_cannot_move_is_explained(nodes: list[Node], policy: Policy,
                                              message: str) -> None:
    decision = run(nodes, FakeCatalog({P: PTAGS, B: ["v1.0.0"]}), policy)
    assert [ch for ch in decision.changes if ch.source == P] == []
    assert message in decision.message, decision.message


# --- what can be installed is -----------------------------------------------------------
# a needs B and P >=v2; B v1 needs P <v2: no solution. Crossplane installs B, then P for a.
SPLIT = {(B, "v1.0.0"): [(P, "<v2.0.0")]}
TOP = root("a", (B, ">=v1.0.0"), (P, ">=v2.0.0"))
INSTALLS = [
    ("each missing dependency at the version the asker it was reached through accepts",
     [TOP], {B: ["v1.0.0"], P: PTAGS}, SPLIT, [created(B, "v1.0.0"), created(P, "v3.0.0")]),
    ("the version every asker accepts, when one does",
     [root("a", (B, ">=v1.0.0"), (P, ">=v1.5.0"), (Q, ">=v9.0.0"))],
     {B: ["v1.0.0"], P: PTAGS, Q: ["v1.0.0"]}, {(B, "v1.0.0"): [(P, "<v2.0.0")]},
     [created(B, "v1.0.0"), created(P, "v1.6.0")]),
    (("a dependency no version of which the first asker accepts creates nothing (as in"
      " Crossplane, whose missing node carries the first edge's constraint); the rest is"
      " created"),
     [root("a", (B, ">=v1.0.0"), (P, ">=v9.0.0"))], {B: ["v1.0.0"], P: PTAGS}, SPLIT,
     [created(B, "v1.0.0")]),
    ("nothing for a repository no asker accepts, nor below it",
     [root("a", (B, ">=v9.0.0"), (Q, ">=v1.0.0"))], {B: ["v1.0.0"], Q: ["v1.0.0"]}, SPLIT,
     [created(Q, "v1.0.0")]),
    ("an installed package is never moved for it",
     [TOP, locked(P, "v1.0.0")], {B: ["v1.0.0"], P: PTAGS}, SPLIT, [created(B, "v1.0.0")]),
    ("a repository a satisfiable root needs keeps that root's version",
     [root("c", (P, "<v3.0.0")), TOP], {B: ["v1.0.0"], P: PTAGS}, SPLIT,
     [created(B, "v1.0.0"), created(P, "v2.0.0")]),
    ("picks that would close a cycle are all dropped",
     [TOP], {B: ["v1.0.0"], C: ["v1.0.0"], P: PTAGS},
     {(B, "v1.0.0"): [(C, ">=v1.0.0"), (P, "<v2.0.0")], (C, "v1.0.0"): [(B, ">=v1.0.0")]}, []),
    ("a digest pin is taken as it is",
     [root("a", (B, ">=v1.0.0"), (P, DIGEST))], {B: ["v1.0.0"]}, SPLIT,
     [created(B, "v1.0.0"), created(P, DIGEST)]),
]


@pytest.mark.parametrize(("nodes", "tags", "deps", "want"), [c[1:] for c in INSTALLS],
                         ids=[c[0] for c in INSTALLS])
def test_unsatisfiable_installs_what_it_can(nodes: list[Node], tags: dict[str, list[str]],
                                            deps: dict[tuple[str, str], list[Dep]],
                                            want: list[Change]) -> None:
    decision = run(nodes, FakeCatalog(tags, deps))
    assert decision.changes == tuple(want)
    assert "a-rev" in decision.explanations()


def test_the_pick_reads_the_dependencies_of_the_version_it_creates() -> None:
    """D v2 asks P <v2, D v1 asks nothing: the highest tag of D is picked, and its needs
    are what P is then chosen against."""
    deps: dict[tuple[str, str], list[Dep]] = {
        (D, "v2.0.0"): [(P, "<v2.0.0")], (D, "v1.0.0"): [], **SPLIT}
    nodes = [root("a", (D, ">=v1.0.0"), (P, ">=v2.0.0"), (Q, ">=v9.0.0"))]
    decision = run(nodes, FakeCatalog({D: ["v1.0.0", "v2.0.0"], P: PTAGS, Q: ["v1.0.0"]},
                                      deps))
    assert decision.changes == (created(D, "v2.0.0"), created(P, "v3.0.0"))


@pytest.mark.parametrize(("transient", "want"), [(True, ()), (False, (created(P, "v3.0.0"),))],
                         ids=["may heal: nothing yet", "will not heal: the rest installs"])
def test_catalog_failure_installs_the_rest_only_when_it_will_not_heal(
        transient: bool, want: tuple[Change, ...]) -> None:
    catalog = FakeCatalog({P: PTAGS}, failing={Q: CatalogError("404", transient)})
    decision = run([root("a", (Q, ">=v1.0.0"), (P, ">=v1.0.0"))], catalog)
    assert decision.changes == want
    assert [u.revisions for u in decision.unresolved] == [("a-rev",)]


def test_cycles_and_taken_names_install_nothing() -> None:
    other = "mirror.example/org/provider-p"
    nodes = [locked(other, "v1.0.0", package="org-provider-p"),
             root("a", (P, ">=v1.0.0"), (Q, ">=v1.0.0"))]
    decision = run(nodes, FakeCatalog({P: PTAGS, Q: ["v1.0.0"]}))
    assert decision.changes == ()
    assert "that name is taken" in decision.explanations()["a-rev"]


def test_once_installed_the_package_left_unmet_carries_the_explanation() -> None:
    """The next pass: B and P installed, B's constraint unmet. a's revision and B's are
    named (a reports nothing of it on its own: its direct dependencies are met)."""
    nodes = [TOP, locked(B, "v1.0.0", (P, "<v2.0.0")), locked(P, "v3.0.0")]
    decision = run(nodes, FakeCatalog({B: ["v1.0.0"], P: PTAGS}, SPLIT))
    assert decision.changes == ()
    [u] = decision.unresolved
    assert u.revisions == ("a-rev", "configuration-b-rev")
    assert u.message.startswith(f"no version of {P} satisfies every constraint: a-rev asks "
                                f"{P} >=v2.0.0, configuration-b-rev asks {P} <v2.0.0; "
                                "installed v3.0.0; tags: ")


def test_a_revision_is_named_by_one_explanation_only() -> None:
    """Two roots set aside over the same unmet package: the first claims it."""
    nodes = [TOP, root("e", (B, ">=v1.0.0"), (P, ">=v3.0.0")),
             locked(B, "v1.0.0", (P, "<v2.0.0")), locked(P, "v3.0.0")]
    decision = run(nodes, FakeCatalog({B: ["v1.0.0"], P: PTAGS}, SPLIT))
    assert [u.revisions for u in decision.unresolved] == [("a-rev", "configuration-b-rev"),
                                                          ("e-rev",)]


# --- nothing for a package going away --------------------------------------------------
@pytest.mark.parametrize("deps", [[(P, ">=v1.0.0")], [(B, ">=v1.0.0"), (P, ">=v2.0.0")]],
                         ids=["satisfiable", "no solution"])
def test_nothing_for_a_root_whose_package_is_gone_or_going(deps: list[Dep]) -> None:
    """Its Lock entry outlives the package (docs/design.md invariant 8): a dependency deleted
    meanwhile must not be created again for it."""
    going = locked(f"{ORG}/a", "v1.0.0", *deps, revision="a-rev")
    going = Node(going.source, going.kind, going.version, "", going.revision,
                 going.dependencies)
    decision = run([going, root("e", (Q, ">=v1.0.0"))],
                   FakeCatalog({B: ["v1.0.0"], P: PTAGS, Q: ["v1.0.0"]}, SPLIT))
    assert decision.changes == (created(Q, "v1.0.0"),)
    assert decision.unresolved == ()


# --- who asks for a repository that cannot be listed ------------------------------------
def test_unlisted_repository_names_every_asker_and_the_answer() -> None:
    answer = (f"{Q} not found: registry xpkg.example answered 404 to GET for {Q} "
              "(NAME_UNKNOWN)")
    nodes = [root("a", (B, ">=v1.0.0"))]
    catalog = FakeCatalog({B: ["v1.0.0"]}, {(B, "v1.0.0"): [(Q, "^v1")]},
                          failing={Q: CatalogError(answer, transient=True)})
    [u] = run(nodes, catalog).unresolved
    assert u.message == (f"cannot list tags of {Q} ({B}@v1.0.0 asks {Q} ^v1): {answer}")
    assert u.transient
