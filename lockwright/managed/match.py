"""Go's ``path/filepath.Match``, as activation policies match MRD names with it.

Crossplane matches every pattern of a ``ManagedResourceActivationPolicy`` against MRD names
(``plural.group``) with ``filepath.Match`` (``apis/apiextensions/v1alpha1/
mrd_policy_types.go``), so ``*`` and ``?`` never cross a ``/``, ``[...]`` is a character
class (``^`` negates, ``lo-hi`` ranges), ``\\`` escapes, and a malformed pattern is an
error, which Crossplane takes as "no match". Python's ``fnmatch`` differs on each of these
(it crosses ``/``, negates with ``!``, has no escapes, never fails), hence this port of the
Go algorithm. It works on code points where Go works on bytes; MRD names are ASCII.
"""

from __future__ import annotations

SEPARATOR = "/"


class BadPattern(ValueError):
    """The pattern is malformed (Go's ``filepath.ErrBadPattern``)."""


def matches(pattern: str, name: str) -> bool:
    """Whether ``pattern`` matches all of ``name``; a malformed pattern matches nothing.

    This is how Crossplane uses the result (``match, _ := filepath.Match(...)``).
    """
    try:
        return match(pattern, name)
    except BadPattern:
        return False


def well_formed(pattern: str) -> bool:
    """Whether ``pattern`` is not malformed, as Go's ``filepath.Glob`` checks it (by
    matching the empty name), and not empty."""
    try:
        match(pattern, "")
    except BadPattern:
        return False
    return bool(pattern)


def match(pattern: str, name: str) -> bool:
    """Go's ``filepath.Match(pattern, name)``.

    Raises:
        BadPattern: the pattern is malformed (Go checks only as far as matching reads it).
    """
    while pattern:
        star, chunk, pattern = _scan_chunk(pattern)
        if star and not chunk:
            return SEPARATOR not in name
        rest = _match_chunk(chunk, name)
        if rest is not None and (not rest or pattern):
            name = rest
            continue
        if star:
            found = _after_star(chunk, name, last=not pattern)
            if found is not None:
                name = found
                continue
        return False
    return not name


def _after_star(chunk: str, name: str, last: bool) -> str | None:
    """What is left of ``name`` once a ``*`` ate some of it and ``chunk`` matched."""
    for i, char in enumerate(name):
        if char == SEPARATOR:
            return None
        rest = _match_chunk(chunk, name[i + 1:])
        if rest is not None and not (last and rest):
            return rest
    return None


def _scan_chunk(pattern: str) -> tuple[bool, str, str]:
    """Leading stars, then the chunk up to the next star outside a class, then the rest."""
    stripped = pattern.lstrip("*")
    star, pattern = len(stripped) != len(pattern), stripped
    in_range, i = False, 0
    while i < len(pattern):
        char = pattern[i]
        if char == "\\" and i + 1 < len(pattern):
            i += 1
        elif char in "[]":
            in_range = char == "["
        elif char == "*" and not in_range:
            return star, pattern[:i], pattern[i:]
        i += 1
    return star, pattern, ""


def _match_chunk(chunk: str, s: str) -> str | None:
    """The rest of ``s`` after ``chunk`` matched its start, or None.

    Like Go, the whole chunk is read even after a mismatch, so a malformed chunk raises.
    """
    failed = False
    while chunk:
        failed = failed or not s
        head = chunk[0]
        if head == "[":
            char = "" if failed else s[0]
            s = s if failed else s[1:]
            ok, chunk = _match_class(chunk[1:], char)
            failed = failed or not ok
        elif head == "?":
            if not failed:
                failed, s = s[0] == SEPARATOR, s[1:]
            chunk = chunk[1:]
        else:
            if head == "\\":
                chunk = chunk[1:]
                if not chunk:
                    raise BadPattern("trailing backslash")
            if not failed:
                failed, s = chunk[0] != s[0], s[1:]
            chunk = chunk[1:]
    return None if failed else s


def _match_class(chunk: str, char: str) -> tuple[bool, str]:
    """Whether ``char`` is in the class ``chunk`` opens (after its ``[``); the rest."""
    negated = chunk.startswith("^")
    chunk = chunk[1:] if negated else chunk
    found, ranges = False, 0
    while True:
        if chunk.startswith("]") and ranges:
            return found != negated, chunk[1:]
        lo, chunk = _escaped(chunk)
        hi = lo
        if chunk[0] == "-":
            hi, chunk = _escaped(chunk[1:])
        found = found or (bool(char) and lo <= char <= hi)
        ranges += 1


def _escaped(chunk: str) -> tuple[str, str]:
    """One class character (``\\`` escapes it) and the rest, which must not be empty."""
    if not chunk or chunk[0] in "-]":
        raise BadPattern("empty or malformed character class")
    if chunk[0] == "\\":
        chunk = chunk[1:]
        if not chunk:
            raise BadPattern("trailing backslash in a character class")
    if len(chunk) == 1:
        raise BadPattern("unterminated character class")
    return chunk[0], chunk[1:]
