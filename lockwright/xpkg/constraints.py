"""Semantic-version constraints with Masterminds/semver v3 semantics.

Crossplane checks ``spec.crossplane.version`` and every ``dependsOn[].version`` with
Masterminds/semver, so a constraint must mean here exactly what it means there:

- ``,`` or whitespace joins terms with AND, ``||`` joins groups with OR;
- operators ``=``, ``!=``, ``>``, ``<``, ``>=``/``=>``, ``<=``/``=<``, ``~``/``~>``, ``^``;
  a bare version is ``=``; ``1.2 - 1.4`` is ``>= 1.2, <= 1.4``;
- ``x``, ``X`` and ``*`` are wildcards and missing parts count as wildcards
  (``1.2`` == ``1.2.x`` == ``~1.2``); a ``v`` prefix is allowed everywhere;
- a pre-release version satisfies a term only when that term names a pre-release
  itself, so ``>=1.14.0-0`` admits ``1.15.0-rc.1`` while ``>=1.14.0`` does not.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass

import semver

from lockwright.errors import ConstraintError

_CV = (
    r"v?([0-9|x|X|\*]+)(\.[0-9|x|X|\*]+)?(\.[0-9|x|X|\*]+)?"
    r"(-([0-9A-Za-z\-]+(\.[0-9A-Za-z\-]+)*))?"
    r"(\+([0-9A-Za-z\-]+(\.[0-9A-Za-z\-]+)*))?"
)
# The empty alternative is deliberate: Masterminds treats a bare version as "=".
_OPS = r"=||!=|>|<|>=|=>|<=|=<|~|~>|\^"
_TERM_RE = re.compile(rf"^\s*({_OPS})\s*({_CV})\s*$")
_RANGE_RE = re.compile(rf"\s*({_CV})\s+-\s+({_CV})\s*")
_FIND_RE = re.compile(rf"({_OPS})\s*({_CV})")
_VALID_RE = re.compile(rf"^(\s*({_OPS})\s*({_CV})\s*)((?:\s+|,\s*)({_OPS})\s*({_CV})\s*)*$")
_LOOSE_RE = re.compile(
    r"^v?([0-9]+)(?:\.([0-9]+))?(?:\.([0-9]+))?"
    r"(?:-([0-9A-Za-z\-]+(?:\.[0-9A-Za-z\-]+)*))?"
    r"(?:\+([0-9A-Za-z\-]+(?:\.[0-9A-Za-z\-]+)*))?$"
)
_DIGEST_RE = re.compile(r"^(sha256:[a-f0-9]{64}|sha512:[a-f0-9]{128})$")
_WILDCARDS = frozenset({"x", "X", "*"})


def is_digest(text: str) -> bool:
    """Whether ``text`` is an OCI digest (``sha256:<64 hex>``), i.e. a pin, not a range."""
    return bool(_DIGEST_RE.match(text))


def parse_version(text: str) -> semver.Version | None:
    """Parse a complete semantic version, tolerating a ``v`` prefix.

    Args:
        text: a tag such as ``v1.2.3`` or ``1.2.3-rc.1+build``.

    Returns:
        The version, or None for anything that is not a full ``MAJOR.MINOR.PATCH``
        version (``v1``, ``v1.2``, ``latest``), so a floating tag never satisfies a pin.
    """
    candidate = text.removeprefix("v")
    try:
        return semver.Version.parse(candidate)
    except (ValueError, TypeError):
        return None


def parse_loose_version(text: str) -> semver.Version | None:
    """Parse a version the way Masterminds ``NewVersion`` does: ``v1.2`` is ``1.2.0``."""
    m = _LOOSE_RE.match(text)
    if m is None:
        return None
    major, minor, patch, pre, build = m.groups()
    try:
        return semver.Version(int(major), int(minor or 0), int(patch or 0), pre, build)
    except ValueError:
        return None


@dataclass(frozen=True)
class _Term:
    op: str
    con: semver.Version
    orig: str
    dirty: bool
    minor_dirty: bool
    patch_dirty: bool

    def check(self, v: semver.Version) -> bool:
        # Masterminds skips the pre-release rule for an exact "!=" (issue 21 upstream).
        exact_not_equal = self.op == "!=" and not self.dirty
        if v.prerelease and not self.con.prerelease and not exact_not_equal:
            return False
        return _CHECKS[self.op](v, self)


def _cmp(a: semver.Version, b: semver.Version) -> int:
    return a.compare(b)


def _tilde(v: semver.Version, t: _Term) -> bool:
    if _cmp(v, t.con) < 0:
        return False
    c = t.con
    if (c.major, c.minor, c.patch) == (0, 0, 0) and not t.minor_dirty and not t.patch_dirty:
        return True
    return v.major == c.major and (v.minor == c.minor or t.minor_dirty)


def _equal(v: semver.Version, t: _Term) -> bool:
    return _tilde(v, t) if t.dirty else _cmp(v, t.con) == 0


def _not_equal(v: semver.Version, t: _Term) -> bool:
    c = t.con
    if t.dirty:
        if c.major != v.major:
            return True
        if t.minor_dirty:
            return False
        if c.minor != v.minor:
            return True
        if t.patch_dirty:
            return bool(v.prerelease or c.prerelease) and v.prerelease != c.prerelease
    return _cmp(v, c) != 0


def _greater(v: semver.Version, t: _Term) -> bool:
    c = t.con
    if not t.dirty:
        return _cmp(v, c) > 0
    if v.major != c.major:
        return v.major > c.major
    if t.minor_dirty:
        return False
    if t.patch_dirty:
        return v.minor > c.minor
    return _cmp(v, c) > 0


def _less_equal(v: semver.Version, t: _Term) -> bool:
    c = t.con
    if not t.dirty:
        return _cmp(v, c) <= 0
    if v.major > c.major:
        return False
    return not (v.major == c.major and v.minor > c.minor and not t.minor_dirty)


def _caret(v: semver.Version, t: _Term) -> bool:
    c = t.con
    if _cmp(v, c) < 0:
        return False
    if c.major > 0 or t.minor_dirty:
        return v.major == c.major
    if v.major > 0:
        return False
    if c.minor > 0 or t.patch_dirty:
        return v.minor == c.minor
    if v.minor > 0:
        return False
    return v.patch == c.patch


_CHECKS: dict[str, Callable[[semver.Version, _Term], bool]] = {
    "": _equal,
    "=": _equal,
    "!=": _not_equal,
    ">": _greater,
    "<": lambda v, t: _cmp(v, t.con) < 0,
    ">=": lambda v, t: _cmp(v, t.con) >= 0,
    "=>": lambda v, t: _cmp(v, t.con) >= 0,
    "<=": _less_equal,
    "=<": _less_equal,
    "~": _tilde,
    "~>": _tilde,
    "^": _caret,
}


@dataclass(frozen=True)
class Constraint:
    """A parsed constraint: OR-groups of AND-ed terms. Build it with `parse_constraint`."""

    text: str
    groups: tuple[tuple[_Term, ...], ...]

    def __str__(self) -> str:
        return self.text

    def allows(self, version: str | semver.Version) -> bool:
        """Whether ``version`` satisfies the constraint.

        Args:
            version: a version string (``v`` prefix and partial versions allowed, as in
                Masterminds ``NewVersion``) or a parsed version.

        Raises:
            ConstraintError: ``version`` is not a semantic version at all (a digest, say).
        """
        v = version if isinstance(version, semver.Version) else parse_loose_version(version)
        if v is None:
            raise ConstraintError(f"invalid semantic version: {version!r}")
        return any(all(term.check(v) for term in group) for group in self.groups)


def parse_constraint(text: str) -> Constraint:
    """Parse a Masterminds constraint such as ``>=v1.2.0, <2 || ^3``.

    Raises:
        ConstraintError: the text is not a valid constraint; the message names the
            offending segment, as Masterminds does (``improper constraint: >>1``).
    """
    rewritten = _RANGE_RE.sub(lambda m: f">= {m.group(1)}, <= {m.group(11)}", text)
    groups = []
    for segment in rewritten.split("||"):
        if not _VALID_RE.match(segment):
            raise ConstraintError(f"improper constraint: {segment}")
        groups.append(tuple(_parse_term(m.group(0)) for m in _FIND_RE.finditer(segment)))
    return Constraint(text=text, groups=tuple(groups))


def _parse_term(text: str) -> _Term:
    m = _TERM_RE.match(text)
    if m is None:
        raise ConstraintError(f"improper constraint: {text}")
    op, cv, major, minor, patch, pre = m.group(1, 2, 3, 4, 5, 6)
    pre = pre or ""
    minor_dirty = patch_dirty = dirty = False
    ver = cv
    if major in _WILDCARDS:
        ver, dirty = f"0.0.0{pre}", True
    elif not minor or minor[1:] in _WILDCARDS:
        ver, dirty, minor_dirty = f"{major}.0.0{pre}", True, True
    elif not patch or patch[1:] in _WILDCARDS:
        ver, dirty, patch_dirty = f"{major}{minor}.0{pre}", True, True
    con = parse_loose_version(ver)
    if con is None:
        raise ConstraintError(f"improper constraint: {text.strip()}")
    return _Term(op, con, cv, dirty, minor_dirty, patch_dirty)


def sort_semver_tags(tags: Iterable[str]) -> list[str]:
    """Keep the tags that are semantic versions (``v`` prefix allowed) and sort ascending.

    Like Crossplane's ``ListVersions``, partial tags such as ``v1.2`` are kept (they parse
    as ``1.2.0``); ties are broken by the tag text so the order is stable.
    """
    parsed = [(v, tag) for tag in tags if (v := parse_loose_version(tag)) is not None]
    parsed.sort()
    return [tag for _, tag in parsed]


def select_highest(tags: Iterable[str], constraint: Constraint | str) -> str | None:
    """Return the highest tag that satisfies ``constraint``, or None.

    Only complete versions are candidates (see `parse_version`): a floating ``v1`` tag
    never wins over ``v1.0.0``.

    Raises:
        ConstraintError: ``constraint`` is a string that does not parse.
    """
    cons = parse_constraint(constraint) if isinstance(constraint, str) else constraint
    best: tuple[semver.Version, str] | None = None
    for tag in tags:
        v = parse_version(tag)
        if v is None or not cons.allows(v):
            continue
        key = (v, tag)
        if best is None or key > best:
            best = key
    return None if best is None else best[1]
