"""Why a search found no solution, in words a user can act on (docs/crossplane.md §12).

For each repository in conflict: who asks for which range, what is installed and why it
may not move, and which tags exist, e.g. ``no version of xpkg.example/org/provider-p
satisfies every constraint: configuration-a asks xpkg.example/org/provider-p >=v2.0.0;
installed v1.5.0 (LOCKWRIGHT_DEPENDENCY_UPGRADES is off); tags: v1.0.0, v1.5.0, v2.0.0``.
The text depends only on the inputs, so the same conflict always reads the same.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from lockwright.dependencies.graph import Node, Requirement, satisfies
from lockwright.dependencies.space import Space
from lockwright.xpkg.constraints import is_digest, parse_loose_version

if TYPE_CHECKING:
    from lockwright.dependencies.space import Cause

# Enough tags to see where the ranges fall without flooding the Lock's condition.
MAX_TAGS = 10


def explain(space: Space, causes: Sequence[Cause]) -> str:
    """One sentence per repository in conflict, in the order the search met them."""
    by_source: dict[str, set[Requirement]] = {}
    for cause in causes:
        by_source.setdefault(cause.requirement.package, set()).add(cause.requirement)
    return "; ".join(conflict(space, source, sorted(reqs, key=_order))
                     for source, reqs in by_source.items())


def _order(req: Requirement) -> tuple[str, str]:
    return req.parent, req.constraint


def asking(source: str, reqs: Sequence[Requirement]) -> str:
    """``a-rev asks <source> >=v1.0.0, …``: who asks for which constraint, in a stable order."""
    return ", ".join(f"{r.parent or 'a root'} asks {source} {r.constraint}"
                     for r in sorted(reqs, key=_order))


def conflict(space: Space, source: str, reqs: Sequence[Requirement]) -> str:
    """Why no version of ``source`` meets every one of ``reqs``."""
    asks = asking(source, reqs)
    tags, error = space.listing(source)
    parts = [f"no version of {source} satisfies every constraint: {asks}"]
    node = space.installed.get(source)
    if node is not None:
        parts.append(f"installed {node.version}{hint(space, node, reqs, tags)}")
    parts.append(f"tags unknown ({error})" if error else listed(tags))
    return "; ".join(parts)


def hint(space: Space, node: Node, reqs: Sequence[Requirement], tags: Sequence[str]) -> str:
    """Why the installed version stays, when another version would satisfy ``reqs``."""
    if pinned(reqs) is not None:
        blocked = node.source in space.eligible and not space.movable(node.source)
        return " (LOCKWRIGHT_DEPENDENCY_UPGRADES is off)" if blocked else ""
    if is_digest(node.version):
        return " (pinned by digest: it moves only to a digest every dependent pins)"
    current = parse_loose_version(node.version)
    if node.source not in space.eligible or current is None:
        return ""
    fits = [v for t in tags if all(satisfies(t, r.constraint) for r in reqs)
            and (v := parse_loose_version(t)) is not None]
    if not space.movable(node.source) and any(v > current for v in fits):
        return " (LOCKWRIGHT_DEPENDENCY_UPGRADES is off)"
    if not space.downgrades and any(v < current for v in fits):
        return " (only a downgrade would do and LOCKWRIGHT_DEPENDENCY_DOWNGRADES is off)"
    return ""


def pinned(reqs: Sequence[Requirement]) -> str | None:
    """The digest every one of ``reqs`` pins, or None (a range among them, or two digests)."""
    pins = {r.constraint for r in reqs}
    only = next(iter(pins)) if len(pins) == 1 else None
    return only if only is not None and is_digest(only) else None


def listed(tags: Sequence[str]) -> str:
    """``tags: …`` with the last :data:`MAX_TAGS` complete semver tags, ascending."""
    if not tags:
        return "no semver tags"
    shown = ", ".join(tags[-MAX_TAGS:])
    return f"tags: …, {shown}" if len(tags) > MAX_TAGS else f"tags: {shown}"
