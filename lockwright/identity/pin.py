"""Pinning a package's API: the pure decision and what a refusal says.

A package annotated ``lockwright.dev/pin-api-digest`` (:data:`lockwright.identity.names.
PIN_API`) installs only revisions whose API digest is the pinned one: a release that
changes only the controller keeps its API digest and passes; one that changes any type
(a field added to a CRD, a CRD added or dropped) is refused before anything is written.
The refusal names the package, the annotation, both digests, the types that differ from
the active revision (by type digest) and the fix.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from enum import Enum

from lockwright.identity.names import PIN_API

DIGEST = re.compile(r"^sha256:[0-9a-f]{64}$")
#: Types a refusal lists by name; the rest are counted.
LISTED = 10


class Verdict(str, Enum):
    """What the pin says of one revision."""

    UNPINNED = "unpinned"  # no annotation
    PASS = "pass"  # the revision's API digest is the pinned one
    REFUSE = "refuse"  # it is not
    MALFORMED = "malformed"  # the annotation is not a sha256 digest


def decide(pinned: str, actual: str) -> Verdict:
    """The pin ``pinned`` (the annotation's value, "" when absent) against ``actual``."""
    pinned = pinned.strip()
    if not pinned:
        return Verdict.UNPINNED
    if not DIGEST.match(pinned):
        return Verdict.MALFORMED
    return Verdict.PASS if pinned == actual else Verdict.REFUSE


def differences(before: Mapping[str, str], after: Mapping[str, str]) -> list[str]:
    """Each type whose digest differs between two revisions (type key → type digest),
    sorted: ``CustomResourceDefinition widgets.example.org (changed)``, or added, removed."""
    out = []
    for key in sorted(set(before) | set(after)):
        if key not in before:
            out.append(f"{key} (added)")
        elif key not in after:
            out.append(f"{key} (removed)")
        elif before[key] != after[key]:
            out.append(f"{key} (changed)")
    return out


@dataclass(frozen=True)
class Refused:
    """A revision whose API differs from its package's pin, and what it is compared with."""

    package: str  # "Provider provider-x"
    revision: str
    pinned: str
    actual: str
    #: The active revision, "" when none is (a first install).
    active: str = ""
    #: :func:`differences` from the active revision (None: they could not be compared).
    differences: tuple[str, ...] | None = None

    @property
    def message(self) -> str:
        """The refusal: what, why, which types, and how to go on."""
        return (f"{self.package}: annotation {PIN_API} pins API {self.pinned}, but revision "
                f"{self.revision} has API {self.actual}; {self._types()}; to take the new "
                f"API set the annotation to {self.actual} (or remove it), to keep the pinned "
                f"one set spec.package to a release whose API is {self.pinned}")

    def _types(self) -> str:
        if not self.active:
            return "no revision is active to compare its types with"
        if self.active == self.revision:
            return f"{self.revision} is the active revision"
        if self.differences is None:
            return f"the types of the active revision {self.active} could not be read"
        listed = ", ".join(self.differences[:LISTED])
        more = len(self.differences) - LISTED
        return (f"types that differ from the active revision {self.active}: {listed}"
                + (f" and {more} more" if more > 0 else "")) if listed else (
            f"no type differs from the active revision {self.active}, whose API is not "
            "the pinned one either")


def malformed(package: str, value: str) -> str:
    """The message for an annotation that is not a digest: object, field, fix."""
    return (f"{package}: annotation {PIN_API} is {value[:80]!r}, not an API digest; set it "
            "to sha256: and 64 lower-case hex digits (a revision's lockwright.dev/api-digest),"
            " or remove it")
