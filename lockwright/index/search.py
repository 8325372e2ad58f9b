"""What ``lockwright search`` shows and which version ``install --api`` picks: pure.

A search groups the matching package versions by repository: its latest version (the
highest semantic version among its matching tags; a repository with none shows its last
tag), its kind, the types that matched and the index that listed it. Installing by API
takes the highest semantic version of the one repository serving the API; with several,
it names them all unless one was chosen; with none, it names the API and the indexes.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from lockwright.errors import ApiUnserved
from lockwright.identity.apis import ApiRef, ServedType
from lockwright.index.model import Entry, matching, repositories, serving
from lockwright.xpkg.constraints import parse_version

MAX_TYPES_SHOWN = 3


@dataclass(frozen=True)
class Row:
    """One repository in a search's result."""

    repository: str
    latest: str
    kind: str
    types: tuple[str, ...]
    index: str
    #: The digest the index lists for ``latest``.
    digest: str = ""

    def to_json(self) -> dict[str, object]:
        """``-o json``'s form."""
        return {"repository": self.repository, "latest": self.latest, "kind": self.kind,
                "types": list(self.types), "index": self.index, "digest": self.digest}


def latest(entries: Iterable[Entry]) -> Entry | None:
    """The entry with the highest semantic version tag, else None."""
    versioned = [(v, e) for e in entries if (v := parse_version(e.tag)) is not None]
    return max(versioned, key=lambda pair: pair[0])[1] if versioned else None


def search(entries: Sequence[Entry], text: str = "", api: ApiRef | None = None) -> list[Row]:
    """The rows for ``search TEXT`` or ``search --api API``, sorted by repository."""
    found = serving(entries, api) if api is not None else matching(entries, text)
    return [_row([e for e in found if e.repository == repo], text, api)
            for repo in repositories(found)]


def _row(versions: list[Entry], text: str, api: ApiRef | None) -> Row:
    top = latest(versions) or versions[-1]
    wanted = [t for t in top.types if _type_matches(t, text, api)]
    shown = [_type_name(t) for t in wanted[:MAX_TYPES_SHOWN]]
    if len(wanted) > MAX_TYPES_SHOWN:
        shown.append(f"+{len(wanted) - MAX_TYPES_SHOWN} more")
    return Row(top.repository, top.tag, top.kind, tuple(shown), top.index, top.digest)


def _type_matches(served: ServedType, text: str, api: ApiRef | None) -> bool:
    if api is not None:
        return served.serves(api)
    return bool(text) and text.lower() in f"{served.kind} {served.name}".lower()


def _type_name(served: ServedType) -> str:
    return f"{served.name}/{','.join(served.versions)}" if served.versions else served.name


def choose(entries: Sequence[Entry], api: ApiRef, indexes: Sequence[str],
           repository: str = "") -> Entry:
    """The package version ``install --api`` installs.

    Raises:
        ApiUnserved: no version serves ``api`` (naming the indexes searched), or several
            repositories do and ``repository`` names none of them (listing each).
    """
    candidates = serving(entries, api)
    searched = ", ".join(indexes) or "(none: set LOCKWRIGHT_PACKAGE_INDEXES)"
    if not candidates:
        raise ApiUnserved(f"no package serves API {api}: searched the package indexes "
                          f"{searched}")
    if repository:
        return _of_repository(candidates, api, repository)
    repos = repositories(candidates)
    if len(repos) > 1:
        listed = "; ".join(_candidate(candidates, r) for r in repos)
        raise ApiUnserved(f"API {api} is served by {len(repos)} repositories: {listed}; "
                          "name one with --repository")
    return _highest(candidates, api)


def _of_repository(candidates: list[Entry], api: ApiRef, repository: str) -> Entry:
    mine = [e for e in candidates if e.repository == repository]
    if not mine:
        raise ApiUnserved(f"repository {repository} serves no API {api}; the repositories "
                          f"that do: {', '.join(repositories(candidates))}")
    return _highest(mine, api)


def _highest(candidates: list[Entry], api: ApiRef) -> Entry:
    top = latest(candidates)
    if top is None:
        tags = ", ".join(sorted(e.reference for e in candidates))
        raise ApiUnserved(f"API {api} is served only by tags that are not semantic versions "
                          f"({tags}); install one of them by reference")
    return top


def _candidate(candidates: list[Entry], repository: str) -> str:
    mine = [e for e in candidates if e.repository == repository]
    top = latest(mine) or mine[-1]
    return f"{repository} ({top.kind} {top.name or '?'}, latest {top.tag}, index {top.index})"
