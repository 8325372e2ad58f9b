"""The gate's corpus report: what the plan's CRD comparison makes of real provider releases.

Each release pair (the CRDs of one release and of the next) is compared CRD by CRD with
:func:`lockwright.crdcompat.compare`, as ``plan_revision`` compares a live CRD with the
packaged one, and every change gets the verdict the evidence gate gives it
(:func:`lockwright.upgrade.gate.verdict_of`): compatible, checked against live resources,
breaking, or unclassified. ``scripts/gate_corpus.py`` feeds it the release tags of public
providers; ``tests/unit/test_gate_corpus.py`` feeds it the committed sample. Pure; no I/O.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from lockwright.crdcompat import Change, compare, versions_of
from lockwright.upgrade.gate import VERDICTS, verdict_of

Obj = dict[str, Any]


def stored_of(crd: Obj) -> list[str]:
    """The storage version of a packaged CRD: what a cluster that installed it stores."""
    return [name for name, v in versions_of(crd).items() if v.get("storage")]


def changes_of(old: Obj, new: Obj) -> list[Change]:
    """Every change replacing the packaged CRD ``old`` by ``new`` finds."""
    return compare(old, new, stored=stored_of(old)).changes


@dataclass
class Tally:
    """Counts over release pairs: pairs, CRDs, changes per verdict and per (verdict, kind).

    Attributes:
        pairs: release pairs compared.
        crds: CRDs compared (in both releases of a pair and differing).
        added: CRDs only the newer release of a pair has.
        removed: CRDs only the older release of a pair has.
        verdicts: changes per verdict, every verdict listed.
        kinds: changes per ``verdict/kind``.
        examples: the first change of each ``verdict/kind``, as a sentence.
    """

    pairs: int = 0
    crds: int = 0
    added: int = 0
    removed: int = 0
    verdicts: Counter[str] = field(default_factory=lambda: Counter(dict.fromkeys(VERDICTS, 0)))
    kinds: Counter[str] = field(default_factory=Counter)
    examples: dict[str, str] = field(default_factory=dict)

    def add_crd(self, old: Obj, new: Obj) -> list[Change]:
        """Count one CRD's changes between two releases; returns them."""
        self.crds += 1
        changes = changes_of(old, new)
        for change in changes:
            key = f"{verdict_of(change)}/{change.kind}"
            self.verdicts[verdict_of(change)] += 1
            self.kinds[key] += 1
            self.examples.setdefault(key, change.message)
        return changes

    def add_pair(self, old: Mapping[str, Obj], new: Mapping[str, Obj]) -> None:
        """Count one release pair: CRDs by name, added, removed and changed."""
        self.pairs += 1
        self.added += sum(1 for n in new if n not in old)
        self.removed += sum(1 for n in old if n not in new)
        for name in sorted(n for n in new if n in old and old[n] != new[n]):
            self.add_crd(old[name], new[name])

    def merge(self, other: Tally) -> None:
        """Add ``other``'s counts (its examples only where this has none)."""
        self.pairs += other.pairs
        self.crds += other.crds
        self.added += other.added
        self.removed += other.removed
        self.verdicts.update(other.verdicts)
        self.kinds.update(other.kinds)
        for key, text in other.examples.items():
            self.examples.setdefault(key, text)

    def top(self, verdict: str, limit: int = 10) -> list[tuple[str, int]]:
        """The most common change kinds of ``verdict``, most common first."""
        prefix = f"{verdict}/"
        return [(k[len(prefix):], n) for k, n in self.kinds.most_common()
                if k.startswith(prefix)][:limit]

    def to_dict(self) -> Obj:
        """Plain JSON-shaped counts, sorted."""
        return {"pairs": self.pairs, "crds": self.crds, "added": self.added,
                "removed": self.removed, "verdicts": dict(self.verdicts),
                "kinds": dict(sorted(self.kinds.items())),
                "examples": dict(sorted(self.examples.items()))}


def tally(pairs: Iterable[tuple[Mapping[str, Obj], Mapping[str, Obj]]]) -> Tally:
    """The counts over ``(older CRDs by name, newer CRDs by name)`` pairs."""
    out = Tally()
    for old, new in pairs:
        out.add_pair(old, new)
    return out
