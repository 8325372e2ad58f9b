"""The fidelity report: recorded traffic replayed, the validation gaps, the catalogue.

    python -m tests.fidelity.report     # starts devcluster and the real control plane
"""

from __future__ import annotations

import sys
from dataclasses import dataclass

from tests.fidelity.compare import Report as Catalogue
from tests.fidelity.compare import both_servers, compare
from tests.fidelity.explained import EXPLAINED, TRAFFIC_RULES, explain
from tests.fidelity.recorded import SNAPSHOT, load
from tests.fidelity.traffic import Outcome, describe, replay_all
from tests.fidelity.validation import Case, compare_gaps


@dataclass
class Fidelity:
    """Everything the differential check found."""

    traffic: list[Outcome]
    validation: list[Case]
    catalogue: Catalogue

    @property
    def compared(self) -> list[Outcome]:
        return [o for o in self.traffic if not o.not_compared]

    @property
    def identical(self) -> list[Outcome]:
        return [o for o in self.compared if not o.paths]

    def unexplained(self) -> list[str]:
        """Differences no rule explains (the check fails on any)."""
        out = [describe(o.shape) + " :: " + "; ".join(o.paths[:6])
               for o in self.compared if o.paths and explain(o.shape, o.paths) is None]
        out += [f"validation {c.name}: codes {c.codes}" for c in self.validation
                if c.differs and not c.gap]
        out += [f"catalogue {d.shape}/{d.step}: " + "; ".join(d.paths[:4])
                for d in self.catalogue.differences if (d.shape, d.step) not in EXPLAINED]
        return out

    def unused_rules(self) -> list[str]:
        """Explanations of traffic no difference needs any more (drop them)."""
        used = {rule.name for o in self.compared if o.paths
                if (rule := explain(o.shape, o.paths)) is not None}
        return [r.name for r in TRAFFIC_RULES if r.name not in used and not r.varies]

    def in_all(self, differing: list[Outcome], gaps: list[Case]) -> str:
        """Traffic and validation gaps in one count (the README's figure)."""
        explained = sum(1 for o in differing if explain(o.shape, o.paths)) + sum(
            1 for c in gaps if c.gap)
        return (f"in all: {len(self.compared) + len(self.validation)} compared, "
                f"{len(self.identical) + len(self.validation) - len(gaps)} identical, "
                f"{len(differing) + len(gaps)} different ({explained} explained)")

    def text(self) -> str:
        """The report: the figures first, then each difference with its explanation."""
        differing = [o for o in self.compared if o.paths]
        gaps = [c for c in self.validation if c.differs]
        lines = [
            f"recorded traffic: {len(self.traffic)} shapes seen, {len(self.compared)} "
            f"compared, {len(self.identical)} identical, {len(differing)} different "
            f"({sum(1 for o in differing if explain(o.shape, o.paths))} explained)",
            f"validation: {len(self.validation)} known gaps replayed, {len(gaps)} still "
            f"differ (explained), {len(self.validation) - len(gaps)} now agree",
            self.catalogue.text().splitlines()[0] + " (hand-written catalogue)",
            self.in_all(differing, gaps)]
        for o in differing:
            rule = explain(o.shape, o.paths)
            lines.append(f"  differs: {describe(o.shape)} -- "
                         f"{rule.name if rule else 'UNEXPLAINED: ' + '; '.join(o.paths[:4])}")
        for o in self.traffic:
            if o.not_compared:
                lines.append(f"  not compared: {describe(o.shape)} -- {o.not_compared}")
        for d in self.catalogue.differences:
            lines.append(f"  catalogue differs: {d.shape} / {d.step}"
                         + ("" if (d.shape, d.step) in EXPLAINED else " -- UNEXPLAINED"))
        for c in self.validation:
            lines.append(f"  validation {c.name}: devcluster {c.codes[0]}, kube "
                         f"{c.codes[1]}" + (f" -- {c.gap}" if c.differs else " (agree)"))
        return "\n".join(lines)


def run() -> Fidelity:
    """Start both servers once and run the three comparisons."""
    with both_servers() as (dc, kube):
        catalogue = compare(dc, kube)
        traffic = replay_all(dc, kube, load(SNAPSHOT))
        validation = compare_gaps(dc, kube)
    return Fidelity(traffic, validation, catalogue)


if __name__ == "__main__":
    report = run()
    print(report.text())
    sys.exit(1 if report.unexplained() else 0)
