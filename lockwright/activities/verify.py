"""Signature verification where a package's digest is first known (docs/crossplane.md §7.5 step 8).

The ImageConfig that verifies the rewritten reference names authorities; the first whose
key verifies a cosign signature (or the attestations it requires) over the digest wins.
It runs for every digest before anything of it is fetched, cached or written, on every
pass: a verification stands (and the network is skipped) only while the cache records one
under the same policy and keys. It fails closed: an authority lockwright cannot check, an
unreadable key Secret or a missing signature is a reason, and with no authority passing
the package is refused with every reason in order. With verification turned off (a
worker setting) such a package installs, and says so in a Warning Event and its status.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime

from lockwright import contracts as c
from lockwright.activities import status as st
from lockwright.activities.base import PKG_V1, kind_of, meta, revision_kind
from lockwright.activities.reads import PackageReader
from lockwright import conditions
from lockwright.errors import VerificationFailed
from lockwright.images import secrets, verification
from lockwright.images.imageconfig import Reason, Resolution
from lockwright.k8s import WARNING, Obj
from lockwright.oci.cache import PackageCache
from lockwright.oci.client import RegistryClient
from lockwright.oci.reference import parse

VERIFIED = "Verified"
SUCCEEDED = "SignatureVerificationSucceeded"
FAILED = "SignatureVerificationFailed"
# Crossplane's word for "no ImageConfig asks" (status True there); here, one asks and
# verification is turned off on the worker, so the status says False: not verified.
SKIPPED = "SignatureVerificationSkipped"


@dataclass(frozen=True)
class Outcome:
    """What became of a verification an ImageConfig asked for."""

    image_config: str
    authority: str = ""
    evidence: str = ""
    skipped: bool = False  # verification is turned off on this worker
    failed: str = ""  # no authority passed: each one's reason, in order

    @property
    def applied(self) -> dict[str, str]:
        """The ``appliedImageConfigRefs`` entry (only when it ran)."""
        return {"name": self.image_config, "reason": Reason.VERIFY_IMAGE.value}


class Verifier:
    """verify(): the gate every digest passes before it is fetched."""

    def __init__(self, reader: PackageReader, namespace: str, cache: PackageCache,
                 enabled: bool = True) -> None:
        """Verify as the ImageConfigs a pull was resolved from ask, remembering verdicts in
        ``cache``.

        Args:
            namespace: where the keys' Secrets live (the system namespace).
            enabled: verify at all (off: such packages install unverified, and say so).
        """
        self.reader = reader
        self.kube = reader.kube
        self.namespace = namespace
        self.cache = cache
        self.enabled = enabled

    def verify(self, resolution: Resolution, digest: str, client: RegistryClient,
               configs: list[Obj]) -> Outcome | None:
        """Verify ``digest`` as the ImageConfigs ask; None when none asks.

        ``configs``: the ImageConfigs ``resolution`` was resolved from
        (``Registries.for_pull``), so the rewrite and the verification are decided on
        one read.

        Raises:
            VerificationFailed: no authority passed; the message gives each one's reason.
        """
        plan = verification.policy(configs, resolution.resolved)
        if plan is None:
            return None
        if not self.enabled:
            return Outcome(plan.image_config, skipped=True)
        keys, reasons = self.keys(plan)
        fingerprint = plan.fingerprint(keys)
        if known := self.cache.verified(digest, fingerprint):
            return Outcome(plan.image_config, known["authority"], known["evidence"])
        done = secrets.first_passing(plan, keys, reasons, client, parse(resolution.resolved),
                                     digest)
        if done is None:
            raise verification.failed([(a.name, reasons.get(a.name) or a.problem)
                                       for a in plan.authorities])
        self.cache.record_verified(digest, fingerprint, done.authority, done.evidence)
        return Outcome(plan.image_config, done.authority, done.evidence)

    def refusal(self, resolution: Resolution, err: VerificationFailed,
                configs: list[Obj]) -> Outcome:
        """The outcome of a verification :meth:`verify` refused over ``configs``, for the
        condition."""
        plan = verification.policy(configs, resolution.resolved)
        return Outcome(plan.image_config if plan else "",
                       failed=err.message.removeprefix(verification.PREFIX))

    def carry(self, kind: str, pkg: Obj, rev: Obj, guarded: bool = False) -> None:
        """The package's ``Verified`` condition onto a revision of its verified digest, as
        Crossplane's revisions carry it (one write, only when it differs; ``guarded`` by
        the revision's resourceVersion where an External runtime's controller writes its
        status too: a lost race is a conflict, and the activity's retry reads again)."""
        verified = conditions.get_condition((pkg.get("status") or {}).get("conditions"),
                                            VERIFIED)
        if verified is None or verified.get("reason") == FAILED:
            return  # a refused digest's revision says so itself (hold)
        st.write_status(self.kube, revision_kind(kind), rev, st.StatusChange(
            [_decided(verified)], int(meta(rev).get("generation") or 0), {}, guarded=guarded))

    def hold(self, kind: str, rev: Obj | None, refusal: Outcome, created: bool) -> None:
        """A refused digest's revision, made now or held before, in Crossplane's words:
        ``Verified=False/SignatureVerificationFailed`` and
        ``RevisionHealthy=False/AwaitingSignatureVerification``."""
        if rev is None or not (created or _held(rev)):
            return  # one that was verified and ran stays as it is
        st.write_status(self.kube, revision_kind(kind), rev, st.StatusChange(
            [_decided(_condition(refusal, "") or {}),
             c.Condition(conditions.REVISION_HEALTHY, conditions.FALSE,
                         conditions.AWAITING_VERIFICATION)],
            int(meta(rev).get("generation") or 0), {}))

    def keys(self, plan: verification.Policy) -> tuple[dict[str, bytes], dict[str, str]]:
        """Each key authority's public key from its Secret, or why it cannot be read."""
        return secrets.read_keys(plan, self._secret, self.namespace)

    def _secret(self, name: str) -> Obj | None:
        return self.kube.get("v1", "Secret", name, self.namespace)

    def say_verified(self, kind: str, pkg: Obj, outcome: Outcome | None, ref: str) -> None:
        """The package's ``Verified`` condition, and a Warning Event when it was skipped."""
        current = (pkg.get("status") or {}).get("conditions") or []
        wanted = _condition(outcome, ref)
        old = conditions.get_condition(current, VERIFIED)
        if wanted is None and old is None:
            return
        if outcome is not None and outcome.skipped:
            self.reader.event(pkg, WARNING, "VerifyImage", str(wanted and wanted.get("message")))
        after = ([c for c in current if c.get("type") != VERIFIED] if wanted is None
                 else conditions.set_condition(current, wanted, datetime.now(UTC)))
        if after != current:
            self.kube.patch(PKG_V1, kind_of(kind), meta(pkg)["name"],
                            {"status": {"conditions": after}}, subresource="status")


def _decided(condition: Obj) -> c.Condition:
    """A stored condition as the one a status write is given (``st.StatusChange``)."""
    return c.Condition(str(condition.get("type", "")), str(condition.get("status", "")),
                       str(condition.get("reason", "")), str(condition.get("message", "")))


def _held(rev: Obj) -> bool:
    """Whether a revision was made for a refused digest and never ran."""
    health = conditions.get_condition((rev.get("status") or {}).get("conditions"),
                                      conditions.REVISION_HEALTHY) or {}
    return health.get("reason") == conditions.AWAITING_VERIFICATION


def _condition(outcome: Outcome | None, ref: str) -> conditions.Condition | None:
    """Crossplane's ``Verified`` condition words (its ``apis/pkg/v1`` conditions), with
    lockwright's detail: the authority and evidence, or each authority's reason."""
    if outcome is None:
        return None
    named = f'using ImageConfig named "{outcome.image_config}"'
    if outcome.failed:
        return conditions.condition(VERIFIED, conditions.FALSE, FAILED,
                                    f"Signature verification failed {named}: {outcome.failed}")
    if outcome.skipped:
        return conditions.condition(
            VERIFIED, conditions.FALSE, SKIPPED,
            f"{ref} was not verified: ImageConfig \"{outcome.image_config}\" asks for "
            "signature verification, but it is turned off on the worker "
            "(LOCKWRIGHT_SIGNATURE_VERIFICATION=false)")
    return conditions.condition(
        VERIFIED, conditions.TRUE, SUCCEEDED,
        f'Signature verification succeeded {named}: authority "{outcome.authority}": '
        f"{outcome.evidence}")
