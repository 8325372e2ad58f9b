"""Group commit for the Lock: every claim waiting in this worker, one compare-and-swap.

``take_lock`` prepares its claim in its own thread (the revision, its objects, its entry
and dependencies), then hands it to this worker's :class:`LockCommitter` and waits. The
committer's one thread takes every claim waiting, takes the Lock as it last wrote it (or
reads it), learns the claims of its entries (those it decided itself or read before, kept
while their entries stay; the others read, in parallel), decides them all with the pure
:func:`lockwright.objects.claims.decide_batch` in a fixed order, confirms each take side by
side (a winner writes its claim, and the write's answer is its revision as it is now; any
other reads its revision again), then writes the Lock once, by compare-and-swap on
``metadata.resourceVersion`` (docs/design.md invariant 4). Each waiting take gets its own
answer: its Lock's version, or the conflict that refuses only it. A 409 (another worker or
step wrote first) decides the whole batch again on the Lock read afresh, with the takes
that arrived while it was being written.

Nothing is answered before the Lock is written, and the Lock changes only by that write:
a worker that dies between deciding and writing has changed no entry, and the takes it
held fail with it and run again (docs/design.md invariant 3). A claim written without its
entry counts for nothing (``lockwright.objects.claims``). Why here rather than a Lock
writer workflow: docs/design.md, "Group commit for the Lock".
"""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from functools import partial
from typing import Any, Protocol

from temporalio.common import MetricMeter

from lockwright.activities.base import log, meta
from lockwright.contracts import metrics
from lockwright.errors import ConflictError, KubeConflict
from lockwright.objects import claims as cl
from lockwright.objects import lock as lk

Obj = dict[str, Any]
#: The Lock's writers in this worker process take turns, so threads of one worker never
#: lose compare-and-swap rounds to each other (other workers still may).
WRITERS = threading.Lock()
#: Reads and claim writes of one batch at once (one round trip for many claims).
PARALLEL = 8
#: How long the committer trusts a claim it decided or read (seconds). A claim is whole
#: once its entry is in, but grows when its revision establishes (an MRD's CRD name,
#: ``lockwright.managed.convert.reserved``): a take's own read of it was never older than
#: the take, and a burst of takes is a few seconds.
KNOWN_FOR_S = 5.0
#: How many times a batch's entries are written onto a Lock whose other fields changed
#: (each time read again) before the batch is decided again.
REBASES = 3


class Claimant(Protocol):
    """One revision's claim, as ``take_lock`` prepared it (``lockwright.activities.lock``)."""

    claims: cl.Claims

    @property
    def in_place(self) -> bool:
        """Whether the claim is written already (or covered by what the revision holds)."""

    def confirm(self, won: bool) -> None:
        """After the Lock being decided on was current: write the claim of a take that won
        (``status.objectRefs``, once), else read the revision again; raise when the
        write's answer or the read shows the revision gone or no longer Active."""


class Keeper(Protocol):
    """What the committer asks of the Lock's keeper."""

    attempts: int

    def read_lock(self) -> Obj:
        """The Lock, created empty if missing."""

    def write_lock(self, lock: Obj) -> Obj:
        """Write ``lock`` if its resourceVersion is still the live one (else KubeConflict)."""

    def claims_of(self, entries: list[Obj]) -> dict[str, cl.Claim]:
        """The claims of the revisions ``entries`` name, by revision name."""


@dataclass
class Waiter:
    """A take waiting for the group commit, and where its answer goes."""

    claimant: Claimant
    package: str
    entry: Obj
    meter: MetricMeter
    answer: Future[tuple[str, int]] = field(default_factory=Future)
    joined: int = 1  # the batch's attempt this take was first decided in

    def ask(self) -> cl.Ask:
        """The claim as the pure batch decision takes it."""
        return cl.Ask(self.package, self.claimant.claims, self.entry)


class LockCommitter:
    """This worker's group commit: one thread writes every waiting claim at once."""

    def __init__(self, keeper: Keeper) -> None:
        self.keeper = keeper
        self._pending: list[Waiter] = []
        self._guard = threading.Lock()
        self._running = False
        # The Lock as this committer last wrote or read it, or as another writer of this
        # worker left it (``saw``): the next round decides on it without reading it again;
        # a 409 says it is stale, and the round reads it.
        self._lock: Obj | None = None
        # The claims of the Lock's entries as this committer decided or read them, by
        # revision name, with when: a claim is written whole before its entry, so it holds
        # while its entry stays, for KNOWN_FOR_S; one whose entry is gone is forgotten.
        self._known: dict[str, tuple[float, cl.Claim]] = {}

    def commit(self, claimant: Claimant, package: str, entry: Obj,
               meter: MetricMeter = MetricMeter.noop) -> tuple[str, int]:
        """Wait until the claim is in a Lock write: that Lock's resourceVersion, and how many
        compare-and-swap rounds its batch took.

        Raises:
            ConflictError: another package holds some of its objects.
        """
        waiter = Waiter(claimant, package, entry, meter)
        with self._guard:
            self._pending.append(waiter)
            start, self._running = not self._running, True
        if start:  # the thread ends when nothing waits; the next take starts another
            threading.Thread(target=self._drain, name="lock-commit", daemon=True).start()
        return waiter.answer.result()

    def saw(self, lock: Obj) -> None:
        """The Lock as another writer of this worker read or wrote it in its turn
        (``WRITERS``): the next batch decides on it rather than lose a compare-and-swap
        to that writer."""
        self._lock = lock

    def _drain(self) -> None:
        while batch := self._take_pending():
            try:
                self.run(batch)
            except BaseException as exc:  # noqa: BLE001 - no take may wait forever
                for waiter in batch:
                    if not waiter.answer.done():
                        waiter.answer.set_exception(exc)

    def _take_pending(self) -> list[Waiter]:
        with self._guard:
            batch, self._pending = self._pending, []
            self._running = bool(batch)
            return batch

    def _joining(self, attempt: int) -> list[Waiter]:
        """The takes that arrived while a batch was being written, to be decided with it in
        its ``attempt`` (docs/design.md, "Group commit for the Lock")."""
        with self._guard:
            joining, self._pending = self._pending, []
        for waiter in joining:
            waiter.joined = attempt
        return joining

    def _again(self, attempt: int) -> bool:
        """Whether a batch in its ``attempt`` has another attempt left."""
        return attempt < self.keeper.attempts

    def _waiting(self) -> bool:
        """Whether takes arrived since the batch in hand was taken."""
        with self._guard:
            return bool(self._pending)

    def run(self, batch: list[Waiter]) -> None:
        """Commit ``batch``, deciding it again after each lost compare-and-swap."""
        for attempt in range(1, self.keeper.attempts + 1):
            try:
                with WRITERS:
                    self.round(open_(batch), attempt)
                return
            except KubeConflict as exc:
                if not isinstance(exc, EntriesChanged):  # else the round kept what it read
                    self._lock = None
                metrics.lock_cas_conflict(batch[0].meter)
                # Jitter spreads out workers that all lost the same round.
                time.sleep(random.uniform(0, min(0.5, 0.01 * attempt)))
                if self._again(attempt):  # a take that arrived gets a try
                    batch = [*batch, *self._joining(attempt + 1)]
        refuse(open_(batch), KubeConflict(
            f"the Lock kept changing: gave up after {self.keeper.attempts} attempts"))

    def round(self, batch: list[Waiter], attempt: int) -> None:
        """Read, decide, confirm the takes, write the Lock; then answer every take."""
        marks = [time.monotonic()]
        lock = self._lock or self.keeper.read_lock()
        marks.append(time.monotonic())
        self.learn(batch, lock)
        marks.append(time.monotonic())
        decided, live = self.claim(lock, batch)
        marks.append(time.monotonic())
        written = (self.write(lock, decided.lock, self._again(attempt))
                   if decided.lock is not None else lock)
        marks.append(time.monotonic())
        self._lock = written
        self.remember(written, decided.held)
        version = str(meta(written).get("resourceVersion", ""))
        for waiter, decision in zip(live, decided.decisions, strict=True):
            answer(waiter, decision, version, attempt - waiter.joined + 1)
        log().info("lock.batch", claims=len(batch), taken=sum(d.won for d in decided.decisions),
                   resource_version=version, cas_attempts=attempt,
                   took_s=round(marks[-1] - marks[0], 3),
                   steps_s=[round(b - a, 3) for a, b in zip(marks, marks[1:])])

    def write(self, base: Obj, wanted: Obj, again: bool) -> Obj:
        """Write ``wanted`` (``base`` with the batch's entries) by compare-and-swap. When
        the Lock changed since ``base`` but not its entries (the resolver wrote its
        finalizer, annotation or condition), the batch's decision still holds: its entries
        are written onto the Lock as it is now, keeping what the other writer wrote. When
        takes arrived meanwhile and the batch has an attempt left (``again``), it is
        decided again with them instead, so the write that follows carries them too.

        Raises:
            EntriesChanged: the Lock's entries changed, or takes are waiting; the batch is
                decided again on the Lock as read here.
        """
        for _ in range(REBASES):
            try:
                return self.keeper.write_lock(wanted)
            except KubeConflict:
                self._lock = now = self.keeper.read_lock()
                if now.get("packages") != base.get("packages"):
                    raise EntriesChanged("the Lock's entries changed since they were read"
                                         ) from None
                if again and self._waiting():
                    raise EntriesChanged("takes arrived while the Lock was written: decided "
                                         "again with them") from None
                base, wanted = now, {**now, "packages": wanted.get("packages")}
        raise EntriesChanged("the Lock kept changing beside its entries")

    def learn(self, batch: list[Waiter], lock: Obj) -> None:
        """Tell every take the claims of ``lock``'s entries: those this committer knows,
        and, read once for all of them, those some take still has not seen."""
        self.remember(lock, {})
        tell(batch, {name: claim for name, (_, claim) in self._known.items()})
        unknown = unseen(batch, lock)
        if unknown:
            learnt = self.keeper.claims_of(unknown)
            # A revision read as gone holds nothing now; it is read again next time.
            self.remember(lock, {n: c for n, c in learnt.items() if c[0] is not None})
            tell(batch, learnt)

    def remember(self, lock: Obj, claims: dict[str, cl.Claim]) -> None:
        """Know ``claims`` from now; keep the known claims of ``lock``'s entries younger
        than KNOWN_FOR_S, and forget the rest."""
        now, names = time.monotonic(), cl.entry_kinds(lock)
        known = {**self._known, **{n: (now, claim) for n, claim in claims.items()}}
        self._known = {n: (at, claim) for n, (at, claim) in known.items()
                       if n in names and now - at < KNOWN_FOR_S}

    def claim(self, lock: Obj, batch: list[Waiter]) -> tuple[cl.Batch, list[Waiter]]:
        """Decide the batch and confirm each take (a winner's claim written, any other's
        revision read again), side by side; a take that fails its confirmation (retired,
        gone, a write refused) drops out, and the rest are decided again without it."""
        confirmed: set[int] = set()
        while True:
            decided = cl.decide_batch(lock, [w.ask() for w in batch])
            due = [(w, d.won) for w, d in zip(batch, decided.decisions, strict=True)
                   if id(w) not in confirmed or (d.won and not w.claimant.in_place)]
            errors = each([partial(w.claimant.confirm, won) for w, won in due])
            confirmed.update(id(w) for w, _ in due)
            failed = {id(w) for (w, _), exc in zip(due, errors, strict=True) if exc is not None}
            if not failed:
                return decided, batch
            for (waiter, _), exc in zip(due, errors, strict=True):
                if exc is not None:
                    refused(waiter, exc)
            batch = [w for w in batch if id(w) not in failed]


class EntriesChanged(KubeConflict):
    """The Lock changed since the batch read it, its entries with it."""


def answer(waiter: Waiter, decision: cl.Decision, version: str, attempt: int) -> None:
    """Give a take its answer: the Lock's version, or the conflict that refuses it."""
    if decision.won:
        waiter.answer.set_result((version, attempt))
    elif decision.conflicts:
        waiter.answer.set_exception(ConflictError(lk.conflicts_message(decision.conflicts)))
    else:  # entries appeared that nobody could read: the take runs again
        waiter.answer.set_exception(KubeConflict("the Lock kept gaining entries"))


def open_(batch: list[Waiter]) -> list[Waiter]:
    """The takes of ``batch`` still waiting for an answer."""
    return [w for w in batch if not w.answer.done()]


def refuse(batch: Iterable[Waiter], exc: BaseException) -> None:
    """Answer every take of ``batch`` with ``exc``."""
    for waiter in batch:
        waiter.answer.set_exception(exc)


def tell(batch: list[Waiter], claims: dict[str, cl.Claim]) -> None:
    """Give every take of ``batch`` the ``claims`` it has not read itself."""
    for waiter in batch:
        for name, claim in claims.items():
            waiter.claimant.claims.others.setdefault(name, claim)


def refused(waiter: Waiter, exc: Exception) -> None:
    """A take that failed on its own (its revision gone, a write refused) gets the error."""
    waiter.answer.set_exception(exc)


def unseen(batch: list[Waiter], lock: Obj) -> list[Obj]:
    """``lock``'s entries whose claims some take of ``batch`` has not read (a take of the
    batch that wins in it is known to the others by what it claims, whatever is read)."""
    unknown = {str(e.get("name", "")): e for w in batch for e in w.claimant.claims.unknown(lock)}
    return list(unknown.values())


def each(calls: Sequence[Callable[[], object]]) -> list[Exception | None]:
    """Make every call, at once when there are several; each one's error (None if none)."""
    def one(call: Callable[[], object]) -> Exception | None:
        try:
            call()
        except Exception as exc:  # noqa: BLE001 - the caller hands it to its take
            return exc
        return None
    if len(calls) < 2:
        return [one(call) for call in calls]
    with ThreadPoolExecutor(min(PARALLEL, len(calls)), thread_name_prefix="lock-io") as pool:
        return list(pool.map(one, calls))
