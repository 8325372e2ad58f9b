"""``activate_definitions``: Crossplane v2's activation policies, applied once.

One pass of Crossplane's activation-policy controller over every policy at once (the
decision is :func:`lockwright.managed.policy.decide`): every MRD a policy matches is made
Active with a merge patch of ``spec.state`` (a Normal ``ActivateManagedResourceDefinition``
Event on the policy, a Warning when it fails), and each policy's ``status.activated`` and
``Healthy`` condition are written. Each MRD's ``Established`` condition follows its state
and its CRD (Crossplane's MRD controller writes it; here the CRD comes from the package's
install). Each policy's ``Established`` condition is True once every MRD it activated is
Active with its CRD Established (crossplane#7822). CRDs are read only for a policy not yet
Established for the same MRDs, a few at a time, stopping at the first not Established
(:func:`lockwright.managed.policy.unconfirmed`); a CRD seen Established is remembered by
its UID, for it stays so. A 2,000-kind provider whose kinds the API server takes minutes
to establish so costs a few reads a pass, where reading them all cost 2,000 whole CRDs
(100 MB) a pass. The MRDs of a revision whose install has
not recorded its count yet are still being established: their conditions wait for the pass
its recording starts (the watcher signals it), rather than 2,000 status writes racing the
install's 2,000 creates. Finally each Provider revision whose count
of Active MRDs moved gets the count in its annotation, and its package is returned, to be
told to install again: that creates the CRDs of the newly Active MRDs and wakes a
safe-start runtime.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime

from lockwright import contracts as c
from lockwright.activities.base import heartbeating, log, meta, spec
from lockwright.activities.definitions import Definitions
from lockwright.activities.errors import defn, edge
from lockwright.activities.reads import PackageReader
from lockwright import names
from lockwright.conditions import condition, set_condition
from lockwright.errors import LockwrightError
from lockwright.identity import surface
from lockwright.k8s import NORMAL, WARNING, Kube, Obj
from lockwright.managed import convert, policy
from lockwright.managed.policy import Activation, Definition

MRD_API = convert.MRD_API_VERSION
CRD_API = "apiextensions.k8s.io/v1"
WRITERS = 8  # writes at once: activations, and statuses (2,000 MRDs written once, when first seen)


class ActivationActivities:
    """activate_definitions."""

    def __init__(self, kube: Kube, reader: PackageReader, definitions: Definitions) -> None:
        self.kube = kube
        self.reader = reader
        self.definitions = definitions
        # CRD name → the UID it was seen Established with (a CRD stays Established)
        self._established: dict[str, str] = {}

    @defn(name=c.ACTIVATE_DEFINITIONS)
    @edge
    def activate_definitions(self, inp: c.ActivateDefinitionsInput
                             ) -> c.ActivateDefinitionsResult:
        """Apply every activation policy to every MRD; see the module."""
        with heartbeating():  # 2,000 MRDs made Active take longer than a heartbeat timeout
            return self._pass()

    def _pass(self) -> c.ActivateDefinitionsResult:
        policies = self.definitions.policies()
        rows = self.definitions.rows()
        decision = policy.decide([policy.Policy.of(o) for o in policies], rows)
        failed = self._activate(decision, {meta(o)["name"]: o for o in policies})
        done = {name for name in decision.activate if name not in failed}
        crds = self._crds()
        present = {r.name for r in rows if r.active or r.name in done} & crds
        written = self._write_policies(policies, decision, failed, present)
        revisions = self.definitions.provider_revisions()
        written += self._write_definitions(policy.settled_rows(rows, _recorded(revisions)),
                                           done, crds)
        packages = self._record_counts(revisions, policy.active_by_revision(rows, done))
        log().info("definitions.activated", policies=len(policies), definitions=len(rows),
                   activated=len(done), failed=len(failed), packages=len(packages))
        return c.ActivateDefinitionsResult(
            policies=len(policies), definitions=len(rows),
            activated=[c.Activated(n, decision.activate[n]) for n in sorted(done)][:c.MAX_NAMES],
            activated_count=len(done), failed=len(failed), statuses_written=written,
            packages=packages, message="; ".join(sorted(failed.values()))[:500])

    def _crds(self) -> set[str]:
        """Every CRD's name; forgets those seen Established that are gone or made again."""
        uids = self.definitions.crd_uids()
        self._established = {n: u for n, u in self._established.items() if uids.get(n) == u}
        return set(uids)

    def _activate(self, decision: Activation, policies: dict[str, Obj]) -> dict[str, str]:
        """Make each MRD Active (an Event on the policy that asked); the failures, by MRD."""
        wanted = sorted(decision.activate.items())
        with ThreadPoolExecutor(WRITERS) as pool:
            errors = list(pool.map(lambda item: self._activate_one(item[0], item[1], policies),
                                   wanted))
        return {name: error for (name, _), error in zip(wanted, errors, strict=True) if error}

    def _activate_one(self, name: str, by: str, policies: dict[str, Obj]) -> str | None:
        """Make MRD ``name`` Active, with its Event on policy ``by``; why it failed, if so."""
        try:
            self.kube.patch(MRD_API, convert.MRD_KIND, name, {"spec": {"state": convert.ACTIVE}})
        except LockwrightError as exc:
            error = f"cannot activate {name}: {exc.message}"
            self.reader.event(policies[by], WARNING, policy.REASON_ACTIVATED, error)
            return error
        self.reader.event(policies[by], NORMAL, policy.REASON_ACTIVATED,
                          f"{policy.MSG_ACTIVATED} {name}")
        return None

    def _write_policies(self, policies: list[Obj], decision: Activation,
                        failed: dict[str, str], present: set[str]) -> int:
        """Each policy's ``status.activated``, ``Healthy`` and ``Established``, where they
        changed; ``present``: the Active MRDs whose CRD exists."""
        served = self._served(policies, decision, present)
        written = 0
        for obj in policies:
            name, generation = meta(obj)["name"], int(meta(obj).get("generation") or 0)
            matched = decision.activated.get(name, [])
            status, reason, message = policy.policy_health(
                sum(1 for n in matched if n in failed), len(matched))
            healthy = condition(policy.HEALTHY, status, reason, message, generation)
            established = condition(policy.ESTABLISHED,
                                    *policy.policy_established(matched, served), generation)
            written += self._patch_status(obj, [healthy, established],
                                          {"activated": matched or None})
        return written

    def _served(self, policies: list[Obj], decision: Activation, present: set[str]
                ) -> set[str]:
        """The MRDs among those policies activated that are Active with their CRD
        Established, as far as a waiting policy needs them confirmed. Those of a policy
        :func:`policy.settled` count without a read, and so do CRDs seen Established."""
        served = {n for n in self._established if n in present}
        waiting: list[list[str]] = []
        for obj in policies:
            matched = decision.activated.get(meta(obj)["name"], [])
            status = obj.get("status") or {}
            if policy.settled(status.get("conditions") or [], status.get("activated") or [],
                              matched, present):
                served.update(matched)
            else:
                waiting.append(matched)
        with ThreadPoolExecutor(WRITERS) as pool:
            for matched in waiting:
                self._confirm(pool, policy.unconfirmed(matched, present, served), served)
        return served

    def _confirm(self, pool: ThreadPoolExecutor, names: list[str], served: set[str]) -> None:
        """Read the CRDs of ``names`` ``WRITERS`` at a time, adding to ``served`` (and
        remembering) each Established one, until a batch finds one that is not."""
        for start in range(0, len(names), WRITERS):
            batch = names[start:start + WRITERS]
            uids = list(pool.map(self._crd_established, batch))
            for name, uid in zip(batch, uids, strict=True):
                if uid is not None:
                    served.add(name)
                    self._established[name] = uid
            if None in uids:
                return

    def _crd_established(self, name: str) -> str | None:
        """CRD ``name``'s UID when it says it is Established (the API serves its kind)."""
        crd = self.kube.get(CRD_API, "CustomResourceDefinition", name) or {}
        return str(meta(crd).get("uid", "")) if surface.established(crd) else None

    def _write_definitions(self, rows: list[Definition], done: set[str],
                           crds: set[str]) -> int:
        """Each MRD's ``Established`` condition, where it is not what state and CRD say."""
        stale = []
        for row in rows:
            status, reason = policy.established(row.active or row.name in done,
                                                row.name in crds)
            if row.established != status:
                stale.append((row.name, condition(policy.ESTABLISHED, status, reason)))
        with ThreadPoolExecutor(WRITERS) as pool:
            list(pool.map(lambda s: self._patch_definition(*s), stale))
        return len(stale)

    def _patch_definition(self, name: str, wanted: dict[str, str]) -> None:
        obj = {"apiVersion": MRD_API, "kind": convert.MRD_KIND, "metadata": {"name": name}}
        self._patch_status(obj, [wanted], {})

    def _patch_status(self, obj: Obj, wanted: list[dict[str, str]], fields: Obj) -> int:
        """Merge ``wanted`` into the object's conditions and write them with ``fields``;
        1 when written, 0 when nothing changed."""
        current = (obj.get("status") or {}).get("conditions")
        conditions = current
        for one in wanted:
            conditions = set_condition(conditions, one, datetime.now(UTC))
        old = {k: (obj.get("status") or {}).get(k) for k in fields}
        if conditions == current and old == fields:
            return 0
        self.kube.patch(str(obj["apiVersion"]), str(obj["kind"]), meta(obj)["name"],
                        {"status": {"conditions": conditions, **fields}},
                        subresource="status")
        return 1

    def _record_counts(self, revisions: list[Obj], counts: dict[str, int]
                       ) -> list[c.PackageRef]:
        """Write each Provider revision's count of Active MRDs where the one its install
        recorded is behind; return the packages of the active ones among them (``revisions``:
        their metadata; the write answers with the whole revision). A revision
        whose install has not recorded one yet is left to it (its MRDs are still being
        established: telling its package then would install it again for nothing)."""
        out = []
        for rev in revisions:
            name, annotations = meta(rev)["name"], meta(rev).get("annotations") or {}
            count = str(counts.get(name, 0))
            recorded = annotations.get(c.ACTIVE_DEFINITIONS_ANNOTATION)
            if name not in counts or not policy.behind(recorded, counts[name]):
                continue
            written = self.kube.patch("pkg.crossplane.io/v1", "ProviderRevision", name, {
                "metadata": {"annotations": {c.ACTIVE_DEFINITIONS_ANNOTATION: count}}})
            package = (meta(rev).get("labels") or {}).get(names.LABEL_PACKAGE)
            if package and spec(written).get("desiredState") == c.ACTIVE:
                out.append(c.PackageRef(kind=c.PROVIDER, name=str(package)))
        return out


def _recorded(revisions: list[Obj]) -> dict[str, str | None]:
    """Each Provider revision's recorded count of Active MRDs (None: none recorded yet)."""
    return {str(meta(r)["name"]): (meta(r).get("annotations") or {}).get(
        c.ACTIVE_DEFINITIONS_ANNOTATION) for r in revisions}
