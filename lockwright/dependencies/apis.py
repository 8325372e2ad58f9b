"""Dependencies on APIs: what a package's ``lockwright.dev/requires-apis`` adds to its Lock entry.

A package may name the APIs it needs (:data:`lockwright.identity.names.REQUIRES_APIS` on
its metadata, so Crossplane still reads the package). When its revision takes the Lock,
each API becomes an ordinary Lock dependency, which the resolver installs with every other
constraint, or a message on the revision when none can be chosen. Per API:

- served by the cluster without a package (a CRD applied by hand, a built-in type): nothing;
- served by a package in the Lock: a dependency on that package (the one this revision's
  entry already records, else ``>=`` its installed version), unless ``dependsOn`` names it;
- defined by an Inactive MRD (its plural, or its ``spec.names.kind`` for ``Kind.group``):
  the same, and a message saying to activate it;
- not served: the package indexes decide. A repository ``dependsOn`` names among those
  serving it: nothing more. Else the one repository serving it becomes a dependency
  pinned to the digest the index lists for its highest serving version (the index is
  signed; the tag beside the digest is not, so the resolver installs
  ``repository@digest``, as Crossplane installs a digest dependency, and the Lock holds the
  digest: :mod:`lockwright.index.vouch`); one of several already in the Lock, or an index
  entry without a digest, becomes a dependency on the versions that serve it (the
  cluster's package moves by tag, as any dependency); several, none,
  no index, or an index that cannot be read: a message naming the API, the candidates or
  the indexes, and the fix. A dependency recorded by an earlier take is kept while the
  indexes cannot be read, so the Lock entry does not lose it to an outage.

Pure functions; :mod:`activities.api_dependencies` asks the cluster and the indexes.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from lockwright.conditions import MSG_RESOLVE_DEPENDENCIES
from lockwright.errors import InvalidPackage, InvalidReference
from lockwright.identity import apis
from lockwright.identity.apis import ApiRef, served_types
from lockwright.identity.names import REQUIRES_APIS
from lockwright.index.model import Entry, repositories, serving
from lockwright.managed.convert import INACTIVE
from lockwright.xpkg.constraints import is_digest, parse_loose_version

Obj = dict[str, Any]
PKG_API_VERSION = "pkg.crossplane.io/v1"
INDEXES_SETTING = "LOCKWRIGHT_PACKAGE_INDEXES"
FIELD = f"metadata.annotations[{REQUIRES_APIS}]"
#: An API as this module's messages name it: ``API <api>``, perhaps followed by a colon.
_NAMED = re.compile(r"\bAPI (\S+?):?(?=\s|$)")


def required(annotations: Mapping[str, str]) -> list[ApiRef]:
    """The APIs a package's metadata annotations require, in order, each once.

    Raises:
        InvalidPackage: an item is not an API, naming the annotation and the forms.
    """
    out: list[ApiRef] = []
    for item in str(annotations.get(REQUIRES_APIS, "")).split(","):
        if not item.strip():
            continue
        try:
            api = apis.parse(item.strip())
        except InvalidReference as err:
            raise InvalidPackage(f"crossplane.yaml {FIELD}: {err.message}; separate "
                                 "several with commas") from err
        if api not in out:
            out.append(api)
    return out


@dataclass(frozen=True)
class Served:
    """An API the cluster serves, and the package in the Lock serving it, if any.

    Attributes:
        source: the serving package's repository; "" when no package serves it.
        kind: that package's kind.
        version: its installed tag or digest.
        inactive: the name of the Inactive MRD that defines the API, which is therefore
            not served until a policy activates it; "" when it is served.
    """

    source: str = ""
    kind: str = ""
    version: str = ""
    inactive: str = ""


@dataclass(frozen=True)
class Indexes:
    """What the package indexes said: their entries, or why they could not be read."""

    entries: tuple[Entry, ...] = ()
    #: The references of the indexes read; empty when none is configured.
    sources: tuple[str, ...] = ()
    error: str = ""


@dataclass(frozen=True)
class Needs:
    """What a revision's API requirements add: ``dependsOn``-form dependencies, and the
    APIs no dependency could be chosen for, explained."""

    dependencies: tuple[Obj, ...] = ()
    problems: tuple[str, ...] = field(default_factory=tuple)

    @property
    def message(self) -> str:
        """The problems as one message ("" when there are none)."""
        return "; ".join(self.problems)


def holders(lock: Obj, claimed: Mapping[str, Collection[str]]) -> dict[str, Served]:
    """``plural.group`` → the package in the Lock whose revision claims that definition.

    Args:
        lock: the Lock as read.
        claimed: per revision, the names of the definitions (CRD, MRD, XRD) it claims.
    """
    out: dict[str, Served] = {}
    for entry in lock.get("packages") or []:
        served = Served(str(entry.get("source", "")),
                        str(entry.get("kind") or entry.get("type") or ""),
                        str(entry.get("version", "")))
        for name in sorted(claimed.get(str(entry.get("name", "")), ())):
            out.setdefault(name, served)
    return out


def unserved(required_apis: Sequence[ApiRef], served: Mapping[ApiRef, Served | None]
             ) -> list[ApiRef]:
    """The APIs the cluster does not serve: only for these are the indexes read."""
    return [api for api in required_apis if served.get(api) is None]


def needs(required_apis: Sequence[ApiRef], served: Mapping[ApiRef, Served | None],
          declared: Collection[str], recorded: Sequence[Obj], indexes: Indexes,
          installed: Collection[str] = ()) -> Needs:
    """The dependencies ``required_apis`` add to a revision's ``dependsOn``.

    Args:
        required_apis: :func:`required` of the package's metadata.
        served: per API, who serves it in the cluster (None: nobody).
        declared: the repositories the package's ``dependsOn`` names.
        recorded: the dependencies the revision's Lock entry holds now (Lock form).
        indexes: the package indexes, when some API is not served.
        installed: the repositories in the Lock (one of several candidates installed
            already is the one).
    """
    previous = {str(d.get("package", "")): _meta_form(d) for d in recorded
                if str(d.get("package", "")) not in declared}
    added: dict[str, Obj] = {}
    problems: list[str] = []
    for api in required_apis:
        found, problem = _one(api, served.get(api), declared,
                              _Known(previous, frozenset(installed)), indexes)
        if found is not None:
            added.setdefault(str(found["package"]), found)
        if problem:
            problems.append(problem)
    if indexes.error:  # an outage takes nothing away from the entry
        for source, dep in previous.items():
            added.setdefault(source, dep)
    return Needs(tuple(added.values()), tuple(problems))


@dataclass(frozen=True)
class _Known:
    """What the revision's entry records (by repository) and what the Lock holds."""

    previous: Mapping[str, Obj]
    installed: frozenset[str]


def _one(api: ApiRef, served: Served | None, declared: Collection[str], known: _Known,
         indexes: Indexes) -> tuple[Obj | None, str]:
    """One API's dependency (or None) and problem (or "")."""
    if served is not None:
        return _served(served, declared, known.previous), _inactive(api, served)
    if indexes.error:
        return None, (f"cannot read the package indexes to find a package serving API "
                      f"{api}: {indexes.error}")
    if not indexes.sources:
        return None, (f"API {api} is not served, and no package index is configured to "
                      f"find a package serving it: set {INDEXES_SETTING}")
    offered = serving(indexes.entries, api)
    candidates = repositories(offered)
    if set(declared) & set(candidates):
        return None, ""  # a dependsOn chose among them
    chosen = _choose(candidates, known)
    if chosen is None:
        return None, _unchosen(api, offered, candidates, indexes.sources)
    found = (None if chosen in known.installed else pinned(chosen, offered)) or dependency(
        chosen, offered, indexes.entries)
    if found is None:
        return None, (f"{chosen} serves API {api} only under tags that are not versions "
                      f"({', '.join(_tags(offered, chosen))}): name one in a dependsOn of "
                      "crossplane.yaml")
    return found, ""


def _served(served: Served, declared: Collection[str], previous: Mapping[str, Obj]
            ) -> Obj | None:
    """A dependency on the package in the Lock serving the API: the one recorded before,
    else at least its installed version; none for what no package serves."""
    if not served.source or served.source in declared:
        return None
    if served.source in previous:
        return previous[served.source]
    if is_digest(served.version):
        floor = served.version
    elif parse_loose_version(served.version) is not None:
        floor = f">={served.version}"
    else:
        return None  # a tag no range can name (latest): served, nothing to pin
    return _dependency(served.kind, served.source, floor)


def _inactive(api: ApiRef, served: Served) -> str:
    """Why an API an Inactive MRD defines is not served yet ("" when it is served)."""
    if not served.inactive:
        return ""
    of = f" of {served.kind} {served.source}" if served.source else ""
    return (f"API {api} is defined by ManagedResourceDefinition {served.inactive}{of}, "
            "which is Inactive: activate it with a ManagedResourceActivationPolicy")


def _choose(candidates: Sequence[str], known: _Known) -> str | None:
    """The one candidate; of several, the one this revision's entry already depends on,
    else the one installed (at a version that does not serve it yet): the cluster chose."""
    if len(candidates) == 1:
        return candidates[0]
    for chosen in ([c for c in candidates if c in known.previous],
                   [c for c in candidates if c in known.installed]):
        if len(chosen) == 1:
            return chosen[0]
    return None


def _unchosen(api: ApiRef, offered: Sequence[Entry], candidates: Sequence[str],
              sources: Sequence[str]) -> str:
    """Why no package was chosen for ``api``: none serves it, or several do."""
    searched = ", ".join(sources)
    if not candidates:
        return f"no package in the package indexes serves API {api} (indexes searched: {searched})"
    listed = "; ".join(f"{repo} ({', '.join(_tags(offered, repo))})" for repo in candidates)
    return (f"API {api} is served by {len(candidates)} packages in the package indexes "
            f"({listed}): name the one to install in a dependsOn of crossplane.yaml")


def dependency(repository: str, offered: Sequence[Entry], entries: Sequence[Entry]
               ) -> Obj | None:
    """A dependency on ``repository`` at the versions of it that serve the API.

    ``>=`` the lowest serving version when every version the indexes list from there up
    serves it; else exactly the serving versions (``v1.0.0 || v1.2.0``). When no serving
    tag is a version: its digest if there is one, else None (no constraint names them).
    """
    mine = [e for e in offered if e.repository == repository]
    kind = mine[0].kind
    versions = sorted((v, e.tag) for e in mine if (v := parse_loose_version(e.tag)) is not None)
    if not versions:
        digests = sorted({e.digest for e in mine})
        return _dependency(kind, repository, digests[0]) if len(digests) == 1 else None
    lowest = versions[0][0]
    above = {e.tag for e in entries if e.repository == repository
             and (v := parse_loose_version(e.tag)) is not None and v >= lowest}
    serving_tags = [tag for _, tag in versions]
    if above <= set(serving_tags):
        return _dependency(kind, repository, f">={serving_tags[0]}")
    return _dependency(kind, repository, " || ".join(dict.fromkeys(serving_tags)))


def pinned(repository: str, offered: Sequence[Entry]) -> Obj | None:
    """A dependency on the digest the index lists for ``repository``'s highest serving
    version (its one digest when no serving tag is a version); None when that entry lists
    no digest, or several digests and no version."""
    mine = [e for e in offered if e.repository == repository]
    versions = sorted(((v, e) for e in mine if (v := parse_loose_version(e.tag)) is not None),
                      key=lambda pair: pair[0])
    digests = {e.digest for e in mine}
    top = versions[-1][1] if versions else (mine[0] if len(digests) == 1 else None)
    if top is None or not is_digest(top.digest):
        return None
    return _dependency(top.kind, repository, top.digest)


def _tags(offered: Sequence[Entry], repository: str) -> list[str]:
    """The tags of ``repository`` in ``offered``: versions in order, then other tags."""
    tags = {e.tag for e in offered if e.repository == repository}
    versions = sorted((v, t) for t in tags if (v := parse_loose_version(t)) is not None)
    return [t for _, t in versions] + sorted(tags - {t for _, t in versions})


def _dependency(kind: str, package: str, version: str) -> Obj:
    return {"apiVersion": PKG_API_VERSION, "kind": kind, "package": package, "version": version}


def _meta_form(lock_dependency: Obj) -> Obj:
    """A Lock entry's dependency back in ``dependsOn`` form."""
    kind = str(lock_dependency.get("kind") or lock_dependency.get("type") or "")
    return _dependency(kind, str(lock_dependency.get("package", "")),
                       str(lock_dependency.get("constraints", "")))


def waiting_for(message: str) -> tuple[ApiRef, ...]:
    """The APIs a revision's unresolved-dependency message says it waits on, each once.

    ``message`` is the revision's ``RevisionHealthy`` message; only one saying it
    ``cannot resolve package dependencies`` waits on anything. Every problem :func:`needs`
    writes names its API as ``API <api>``, which is what is read back.
    """
    if not message.startswith(MSG_RESOLVE_DEPENDENCIES):
        return ()
    out: list[ApiRef] = []
    for text in _NAMED.findall(message):
        try:
            api = apis.parse(text)
        except InvalidReference:
            continue  # "API" in an error's own words, not an API
        out += [api] if api not in out else []
    return tuple(out)


def may_serve(crd: str, api: ApiRef) -> bool:
    """Whether the CRD named ``crd`` (``plural.group``) may serve ``api``.

    A CRD's name holds no kind, so for ``Kind.group`` any CRD of the group may: whoever
    is woken for it asks discovery.
    """
    plural, _, group = crd.partition(".")
    return group == api.group and (api.is_kind or plural == api.name.lower())


def definition_names(api: ApiRef, names: Iterable[str]) -> list[str]:
    """Of the definitions named ``names`` (``plural.group``), those that may define ``api``,
    sorted: its own name for a plural, every one of its group for a kind."""
    return sorted(name for name in names if may_serve(name, api))


def inactive_definition(api: ApiRef, mrds: Iterable[Obj]) -> str:
    """The name of the Inactive MRD of ``mrds`` defining ``api`` ("" when none does): by
    its plural for ``plural.group``, by ``spec.names.kind`` for ``Kind.group``, at any
    served version when the API names none."""
    for mrd in mrds:
        inactive = (mrd.get("spec") or {}).get("state") == INACTIVE
        if inactive and any(t.serves(api) for t in served_types(mrd)):
            return str((mrd.get("metadata") or {}).get("name", ""))
    return ""
