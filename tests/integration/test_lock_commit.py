"""Group commit of the Lock (issue 33): the takes waiting in a worker, one Lock write.

Against devcluster, with the real activities: takes that wait together land in one
compare-and-swap, decided in the order of their packages, and a conflict refuses only the
package that has it (docs/design.md invariant 4). A worker that stops between deciding and
writing loses nothing: the Lock changes only by its write (docs/design.md invariant 3).
"""

from __future__ import annotations

import json
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from temporalio.exceptions import ApplicationError

from lockwright import contracts as c
from lockwright.activities import lockcommit
from lockwright.conditions import RESOLVED, get_condition
from lockwright.dependencies import lockstatus
from lockwright.dependencies.graph import UNRESOLVED_ANNOTATION
from lockwright.errors import KubeConflict
from lockwright.k8s import Kube
from tests.activity_view import Activities
from tests.helpers import unique, wait_for
from tests.integration.test_activities import (  # noqa: F401 - fixtures used by name
    PKG,
    acts,
    apply_package,
    install,
    kube,
    provider_root,
    push,
    run,
)

pytestmark = pytest.mark.registry
LOCK = ("pkg.crossplane.io/v1beta1", "Lock", "lock")


def prepared(acts: Activities, kube: Kube, registry: Any, tmp_path: Path,
             groups: dict[str, str]) -> dict[str, c.TakeLockInput]:
    """Each package applied with its own CRD group, installed up to take_lock; its take."""
    takes = {}
    for name, group in groups.items():
        apply_package(kube, "Provider", name,
                      push(registry, provider_root(tmp_path, group), tmp_path, group).ref)
        steps = install(acts, c.PROVIDER, name, until="take_lock")[2]
        takes[name] = next(arg for fn, arg in steps if fn.__name__ == "take_lock")
    return takes


def entries(kube: Kube) -> set[str]:
    return {e["name"] for e in (kube.get(*LOCK) or {}).get("packages") or []}


def take(pool: ThreadPoolExecutor, acts: Activities, inp: c.TakeLockInput) -> Future[Any]:
    return pool.submit(run, acts.take_lock, inp)


def first_in_turn(acts: Activities, pool: ThreadPoolExecutor,
                  inp: c.TakeLockInput) -> Future[Any]:
    """Start a take and wait until the committer holds it (then blocked on the turn the
    test holds), so every take started after it waits for the next batch."""
    committer = acts.keeper.committer
    started = take(pool, acts, inp)
    wait_for(lambda: committer._running and not committer._pending,
             what="the first take in the committer's hands")
    return started


def test_takes_waiting_together_are_one_lock_write_and_a_conflict_refuses_only_its_own(
        acts: Activities, kube: Kube, registry: Any, tmp_path: Path) -> None:
    contested = f"{unique('g')}.example.org"
    first, winner, loser, free = (unique(p) for p in ("gc0", "gca", "gcb", "gcc"))
    takes = prepared(acts, kube, registry, tmp_path, {
        first: f"{unique('g')}.example.org", winner: contested, loser: contested,
        free: f"{unique('g')}.example.org"})
    committer = acts.keeper.committer
    with ThreadPoolExecutor(4) as pool:
        with lockcommit.WRITERS:
            ahead = first_in_turn(acts, pool, takes[first])
            # The loser arrives first; the batch decides by package name all the same.
            waiting = {n: take(pool, acts, takes[n]) for n in (loser, free, winner)}
            wait_for(lambda: len(committer._pending) == 3, what="three takes waiting")
        ahead.result()
        with pytest.raises(ApplicationError) as lost:
            waiting[loser].result()
        won, also = waiting[winner].result(), waiting[free].result()

    assert lost.value.type == "ConflictError"
    assert f"widgets.{contested}" in lost.value.message, lost.value.message
    assert winner in lost.value.message and takes[winner].revision in lost.value.message
    # One compare-and-swap carried both winners of the batch.
    assert won.resource_version == also.resource_version
    assert (won.cas_attempts, also.cas_attempts) == (1, 1)
    now = entries(kube)
    assert {takes[n].revision for n in (first, winner, free)} <= now
    assert takes[loser].revision not in now
    # The loser withdrew its claim: it holds nothing.
    lost_rev = kube.get(PKG, "ProviderRevision", takes[loser].revision) or {}
    assert not (lost_rev.get("status") or {}).get("objectRefs")


class Crash(BaseException):
    """The worker stopping at the instant between deciding and writing the Lock."""


def test_a_worker_stopping_between_deciding_and_writing_loses_nothing(
        acts: Activities, kube: Kube, registry: Any, tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A fake only for the instant (no server stops a worker there on demand): the
    committer's write of the Lock never happens. Every waiting take fails (none hangs),
    the Lock is as it was, and the takes run again (as Temporal retries them) decide the
    same: one winner for the contested CRD, the others in."""
    contested = f"{unique('g')}.example.org"
    names = [unique(p) for p in ("gcx", "gcy", "gcz")]
    takes = prepared(acts, kube, registry, tmp_path, {
        names[0]: contested, names[1]: contested, names[2]: f"{unique('g')}.example.org"})
    keeper = acts.keeper
    real_write = keeper.write_lock
    decided: list[int] = []

    def stop_before_writing(lock: dict[str, Any]) -> Any:
        decided.append(len(lock["packages"]))
        raise Crash

    monkeypatch.setattr(keeper, "write_lock", stop_before_writing)
    before = kube.get(*LOCK) or {}
    with ThreadPoolExecutor(3) as pool:
        crashed = [take(pool, acts, takes[n]) for n in names]
        for attempt in crashed:
            with pytest.raises(Crash):  # not a timeout: no take is left waiting
                attempt.result(timeout=60)
    assert decided, "the committer never reached its write"
    after = kube.get(*LOCK) or {}
    assert after["metadata"]["resourceVersion"] == before["metadata"]["resourceVersion"]
    assert not {t.revision for t in takes.values()} & entries(kube)

    monkeypatch.setattr(keeper, "write_lock", real_write)
    outcomes: dict[str, str] = {}
    for name in names:
        try:
            run(acts.take_lock, takes[name])
            outcomes[name] = "won"
        except ApplicationError as err:
            outcomes[name] = err.type or ""
    assert outcomes == {names[0]: "won", names[1]: "ConflictError", names[2]: "won"}
    assert {takes[n].revision for n in (names[0], names[2])} <= entries(kube)
    assert takes[names[1]].revision not in entries(kube)
    # The claim the crashed attempt wrote is withdrawn by the take that lost: the retry read
    # it as what the revision held, and kept only what names the revision as an owner.
    lost = kube.get(PKG, "ProviderRevision", takes[names[1]].revision) or {}
    assert not (lost.get("status") or {}).get("objectRefs"), lost.get("status")


def test_a_take_the_lock_already_refuses_writes_nothing(
        acts: Activities, kube: Kube, registry: Any, tmp_path: Path) -> None:
    """A loser retries until the holder goes: refused by a holder already in the Lock, it
    neither writes nor withdraws a claim (its revision is not written at all)."""
    contested = f"{unique('g')}.example.org"
    holder, loser = unique("gch"), unique("gcl")
    takes = prepared(acts, kube, registry, tmp_path, {holder: contested, loser: contested})
    run(acts.take_lock, takes[holder])
    version = (kube.get(PKG, "ProviderRevision", takes[loser].revision) or {})["metadata"][
        "resourceVersion"]
    for _ in range(2):
        with pytest.raises(ApplicationError) as lost:
            run(acts.take_lock, takes[loser])
        assert lost.value.type == "ConflictError" and holder in lost.value.message
    after = kube.get(PKG, "ProviderRevision", takes[loser].revision) or {}
    assert after["metadata"]["resourceVersion"] == version, after.get("status")


def test_what_a_revision_holds_is_what_names_it_an_owner(
        acts: Activities, kube: Kube, registry: Any, tmp_path: Path) -> None:
    """The refs a losing take puts back: the objects that name the revision as an owner,
    and the CRD name of an MRD it owns (reserved while Inactive); not a ref it only
    claimed."""
    name = unique("gco")
    rev_name = prepared(acts, kube, registry, tmp_path,
                        {name: f"{unique('g')}.example.org"})[name].revision
    rev = kube.get(PKG, "ProviderRevision", rev_name) or {}
    owner = {"apiVersion": PKG, "kind": "ProviderRevision", "name": rev_name,
             "uid": rev["metadata"]["uid"]}
    role, other = unique("held"), unique("claimed")
    for n, owners in ((role, [owner]), (other, [])):
        kube.create({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
                     "metadata": {"name": n, "ownerReferences": owners}, "rules": []})
    refs = [{"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "name": n}
            for n in (role, other)]
    missing = {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
               "name": f"nothings.{unique('g')}.example.org"}
    assert acts.keeper.held(rev, [*refs, missing]) == [refs[0]]


def test_the_committer_decides_on_the_claims_it_knows_for_a_while(
        acts: Activities, kube: Kube, registry: Any, tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A take right after another is decided on the claim the committer wrote for the
    first, not a read of it; a claim known longer than ``KNOWN_FOR_S`` is read again (it
    grows once its revision establishes MRDs)."""
    names = [unique(p) for p in ("gk0", "gk1", "gk2")]
    takes = prepared(acts, kube, registry, tmp_path,
                     {n: f"{unique('g')}.example.org" for n in names})
    read: list[str] = []
    real = acts.keeper.claims_of

    def counted(found: list[dict[str, Any]]) -> Any:
        read.extend(str(e["name"]) for e in found)
        return real(found)

    monkeypatch.setattr(acts.keeper, "claims_of", counted)
    first = takes[names[0]].revision
    run(acts.take_lock, takes[names[0]])
    run(acts.take_lock, takes[names[1]])
    assert first not in read
    monkeypatch.setattr(lockcommit, "KNOWN_FOR_S", 0.0)
    run(acts.take_lock, takes[names[2]])
    assert first in read
    assert {takes[n].revision for n in names} <= entries(kube)


def test_a_lock_write_lands_on_what_another_writer_changed_beside_the_entries(
        acts: Activities, kube: Kube, registry: Any, tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The resolver writes the Lock's annotation (or finalizer, or condition) between the
    batch's decision and its write: the decision still holds, so the entries are written
    onto the Lock as it is now, in the same round, and the annotation stays. When the
    entries changed, the batch is decided again (the other tests here)."""
    name = unique("gcr")
    take_in = prepared(acts, kube, registry, tmp_path, {name: f"{unique('g')}.example.org"})
    key = f"test.lockwright.dev/{unique('a')}"
    real_write = acts.keeper.write_lock
    writes: list[str] = []

    def resolver_first(lock: dict[str, Any]) -> Any:
        if not writes:
            kube.patch(*LOCK, {"metadata": {"annotations": {key: "resolver"}}})
        writes.append(lock["metadata"]["resourceVersion"])
        return real_write(lock)

    monkeypatch.setattr(acts.keeper, "write_lock", resolver_first)
    taken = run(acts.take_lock, take_in[name])
    assert len(writes) >= 2 and writes[0] != writes[1]
    assert taken.cas_attempts == 1
    lock = kube.get(*LOCK) or {}
    assert lock["metadata"]["annotations"][key] == "resolver"
    assert take_in[name].revision in entries(kube)
    kube.patch(*LOCK, {"metadata": {"annotations": {key: None}}})


def test_takes_that_arrive_while_a_lock_write_fails_are_in_the_write_that_follows(
        acts: Activities, kube: Kube, registry: Any, tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The resolver writes the Lock while a batch's compare-and-swap is in flight, and
    another take arrives meanwhile: the batch is decided again with it, and one write
    carries both (before, the first was written alone and the second waited for a round of
    its own). Only the first lost a compare-and-swap."""
    first, late = unique("gcj0"), unique("gcj1")
    takes = prepared(acts, kube, registry, tmp_path,
                     {first: f"{unique('g')}.example.org", late: f"{unique('g')}.example.org"})
    key = f"test.lockwright.dev/{unique('a')}"
    committer, real_write = acts.keeper.committer, acts.keeper.write_lock
    writes: list[set[str]] = []

    with ThreadPoolExecutor(2) as pool:
        arrived: list[Future[Any]] = []

        def late_and_resolver_first(lock: dict[str, Any]) -> Any:
            if not writes:
                arrived.append(take(pool, acts, takes[late]))
                wait_for(lambda: committer._pending, what="the late take waiting")
                kube.patch(*LOCK, {"metadata": {"annotations": {key: "resolver"}}})
            writes.append({str(e["name"]) for e in lock.get("packages") or []})
            return real_write(lock)

        monkeypatch.setattr(acts.keeper, "write_lock", late_and_resolver_first)
        taken = run(acts.take_lock, takes[first])
        joined = arrived[0].result()

    both = {takes[first].revision, takes[late].revision}
    assert len(writes) == 2 and both <= writes[1], writes
    assert joined.resource_version == taken.resource_version
    assert (taken.cas_attempts, joined.cas_attempts) == (2, 1)
    assert both <= entries(kube)
    assert (kube.get(*LOCK) or {})["metadata"]["annotations"][key] == "resolver"
    kube.patch(*LOCK, {"metadata": {"annotations": {key: None}}})


def late_in_the_last_attempt(acts: Activities, kube: Kube, registry: Any, tmp_path: Path,
                             monkeypatch: pytest.MonkeyPatch, refused: int
                             ) -> tuple[Future[Any], Future[Any], dict[str, c.TakeLockInput]]:
    """A batch of one take with two attempts whose first ``refused`` Lock writes are
    refused (a fake only for the Lock's answers: no server refuses writes on demand), and
    a second take that arrives at the first write of its last attempt. Both outcomes."""
    first, late = unique("gcg0"), unique("gcg1")
    takes = prepared(acts, kube, registry, tmp_path,
                     {first: f"{unique('g')}.example.org", late: f"{unique('g')}.example.org"})
    committer, real_write = acts.keeper.committer, acts.keeper.write_lock
    monkeypatch.setattr(acts.keeper, "attempts", 2)
    calls: list[int] = []
    with ThreadPoolExecutor(2) as pool:
        arrived: list[Future[Any]] = []

        def losing(lock: dict[str, Any]) -> Any:
            calls.append(1)
            if len(calls) == lockcommit.REBASES + 1:  # the last attempt's first write
                arrived.append(take(pool, acts, takes[late]))
                wait_for(lambda: committer._pending, what="the late take waiting")
            if len(calls) <= refused:
                raise KubeConflict("the Lock changed (a fake refusal)")
            return real_write(lock)

        monkeypatch.setattr(acts.keeper, "write_lock", losing)
        ahead = take(pool, acts, takes[first])
        wait_for(lambda: arrived and arrived[0].done() and ahead.done(),
                 what="both takes answered")
    return ahead, arrived[0], {"first": takes[first], "late": takes[late]}


def test_a_take_that_arrives_during_a_batchs_last_attempt_gets_a_round_of_its_own(
        acts: Activities, kube: Kube, registry: Any, tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A batch loses every compare-and-swap of its last attempt too: it gives up, and the
    take that arrived meanwhile is not given up with it but written in a round of its own."""
    ahead, late, takes = late_in_the_last_attempt(acts, kube, registry, tmp_path, monkeypatch,
                                                  refused=2 * lockcommit.REBASES)
    with pytest.raises(ApplicationError) as gave_up:
        ahead.result()
    assert "gave up" in gave_up.value.message, gave_up.value.message
    assert late.result().cas_attempts == 1
    now = entries(kube)
    assert takes["late"].revision in now and takes["first"].revision not in now


def test_a_batch_in_its_last_attempt_writes_on_rather_than_wait_for_a_take_that_arrives(
        acts: Activities, kube: Kube, registry: Any, tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The Lock changes beside its entries during a batch's last attempt, and a take
    arrives: with no attempt left to decide it in, the batch writes its entries onto the
    Lock as it is now, and the take gets a round of its own."""
    ahead, late, takes = late_in_the_last_attempt(acts, kube, registry, tmp_path, monkeypatch,
                                                  refused=lockcommit.REBASES + 1)
    done, joined = ahead.result(), late.result()
    assert (done.cas_attempts, joined.cas_attempts) == (2, 1)
    assert done.resource_version != joined.resource_version
    assert {takes["first"].revision, takes["late"].revision} <= entries(kube)


def test_the_resolvers_lock_write_costs_the_next_batch_no_compare_and_swap(
        acts: Activities, kube: Kube, registry: Any, tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The resolver writes the Lock's annotation in its worker's turn at the Lock and tells
    the committer the Lock it left: the next batch decides on that Lock, so its write is
    its only one (before, it lost to the resolver's write, read the Lock and wrote again)."""
    first, then = unique("gcs0"), unique("gcs1")
    takes = prepared(acts, kube, registry, tmp_path,
                     {n: f"{unique('g')}.example.org" for n in (first, then)})
    run(acts.take_lock, takes[first])
    real_write, writes = acts.keeper.write_lock, []

    def counted(lock: dict[str, Any]) -> Any:
        writes.append(lock["metadata"]["resourceVersion"])
        return real_write(lock)

    monkeypatch.setattr(acts.keeper, "write_lock", counted)
    resolver = acts.apply_resolution.__self__
    before = kube.get(*LOCK) or {}
    said = (before["metadata"].get("annotations") or {}).get(UNRESOLVED_ANNOTATION)

    def saying(explanations: dict[str, str]) -> lockstatus.LockStatus:
        """The Lock's finalizer and condition as they are, with ``explanations``."""
        conditions = (before.get("status") or {}).get("conditions") or []
        return lockstatus.LockStatus(
            lockstatus.LOCK_FINALIZER in (before["metadata"].get("finalizers") or []),
            get_condition(conditions, RESOLVED), explanations)

    try:
        assert resolver.write_lock_status(before, saying({takes[first].revision: "a test"}))
        taken = run(acts.take_lock, takes[then])
    finally:
        resolver.write_lock_status(kube.get(*LOCK) or {},
                                   saying(json.loads(said) if said else {}))
    assert len(writes) == 1 and taken.cas_attempts == 1
    assert {takes[n].revision for n in (first, then)} <= entries(kube)


def test_a_take_after_a_removal_in_the_same_worker_decides_on_the_lock_it_left(
        acts: Activities, kube: Kube, registry: Any, tmp_path: Path) -> None:
    """A step of this worker removes an entry (a finished switch's retirement): the
    committer decides the next batch on the Lock that removal wrote, not on the one it
    wrote itself before, so the batch's compare-and-swap is its first."""
    old, new = (unique(p) for p in ("gcl0", "gcl1"))
    takes = prepared(acts, kube, registry, tmp_path,
                     {old: f"{unique('g')}.example.org", new: f"{unique('g')}.example.org"})
    run(acts.take_lock, takes[old])
    assert acts.keeper.leave_lock(takes[old].revision) == 1
    taken = run(acts.take_lock, takes[new])
    assert taken.cas_attempts == 1
    assert takes[new].revision in entries(kube) and takes[old].revision not in entries(kube)
