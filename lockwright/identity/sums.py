"""Sums of API surfaces: reading one back, and comparing two surfaces type by type.

A sum (``lockwright api sum``) has one line per served custom type version::

    example.org/v1 Widget sha256:<type> sha256:<controller>

sorted, with ``-`` for the controller of a type no package serves, ``live:sha256:...``
for a digest computed from the live object of a definition nothing recorded, and
``edited:sha256:...`` for the live object of a definition edited after its install (see
:mod:`lockwright.identity.surface`).
Blank lines and lines starting with ``#`` are ignored, so a sum may carry comments.

Two surfaces differ per type version in the ways of :data:`HOWS`: the ``definition`` (type
digest), the ``controller`` (controller digest), ``missing`` (expected, not served),
``extra`` (served, not expected) or ``edited`` (served, and its definition is not the one
its install recorded: a difference whatever the sum says, since no sum should vouch for a
hand edit).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from lockwright.errors import InputError
from lockwright.identity.surface import EDITED as EDITED_MARK
from lockwright.identity.surface import LIVE, NO_CONTROLLER, TypeRow

DEFINITION, CONTROLLER, MISSING, EXTRA = "definition", "controller", "missing", "extra"
EDITED = "edited"
HOWS = (DEFINITION, CONTROLLER, MISSING, EXTRA, EDITED)
_DIGEST = r"(live:|edited:)?sha256:[0-9a-f]{64}"
_GROUP_VERSION = re.compile(r"^[a-z0-9]([-a-z0-9.]*[a-z0-9])?/[a-z0-9]+$")
_KIND = re.compile(r"^[A-Za-z][A-Za-z0-9]*$")
_TYPE_DIGEST = re.compile(rf"^{_DIGEST}$")
_CONTROLLER = re.compile(r"^(-|(sha256:[0-9a-f]{64}))$")


@dataclass(frozen=True)
class Entry:
    """One line of a sum: a type version, its digest and its controller's (or ``-``)."""

    key: str  # ``group/version Kind``
    digest: str
    controller: str = NO_CONTROLLER
    #: The digest the install recorded (read from the cluster, not from a sum line).
    recorded: str = ""

    @property
    def edited(self) -> bool:
        """Whether the served definition was edited after its install."""
        return self.digest.startswith(EDITED_MARK)


@dataclass(frozen=True)
class Difference:
    """How one type version differs between the expected and the actual surface."""

    key: str
    how: str  # one of HOWS
    expected: str = ""
    actual: str = ""

    @property
    def message(self) -> str:
        """``group/version Kind: definition differs (expected X, served Y)``, or missing/extra."""
        if self.how == MISSING:
            return f"{self.key}: missing (in the sum, not served)"
        if self.how == EXTRA:
            return f"{self.key}: extra (served, not in the sum)"
        if self.how == EDITED:
            return (f"{self.key}: edited (the install recorded {self.expected}, the live "
                    f"definition is {self.actual.removeprefix(EDITED_MARK)}): the CRD was "
                    "changed after its install; restore the definition its package ships "
                    "(install the package again) or make a new sum if the edit is wanted")
        return f"{self.key}: {self.how} differs (sum {self.expected}, served {self.actual})" \
            + _provenance(self)


def _provenance(diff: Difference) -> str:
    if diff.how != DEFINITION or diff.expected.startswith(LIVE) == diff.actual.startswith(LIVE):
        return ""
    return ("; one digest was recorded at install, the other computed from the live object:"
            " make both sums on clusters whose installs record type digests")


def parse_line(line: str, where: str) -> Entry | None:
    """One sum line as an :class:`Entry`; None for a blank or ``#`` line.

    Raises:
        InputError: naming ``where`` (``FILE:LINE``), what is wrong and the form a line takes.
    """
    text = line.strip()
    if not text or text.startswith("#"):
        return None
    fields = text.split()
    problem = _problem(fields)
    if problem:
        raise InputError(f"{where}: {problem}: a sum line is 'group/version Kind "
                         f"sha256:<type> sha256:<controller>|-' (lockwright api sum writes it),"
                         f" got {text[:120]!r}")
    return Entry(f"{fields[0]} {fields[1]}", fields[2], fields[3])


def _problem(fields: list[str]) -> str:
    if len(fields) != 4:
        return f"{len(fields)} fields, not 4"
    checks = ((_GROUP_VERSION, "group/version"), (_KIND, "kind"),
              (_TYPE_DIGEST, "type digest"), (_CONTROLLER, "controller digest"))
    bad = [name for (pattern, name), value in zip(checks, fields) if not pattern.match(value)]
    return f"bad {', '.join(bad)}" if bad else ""


def parse(text: str, source: str) -> dict[str, Entry]:
    """Every entry of a sum by key.

    Raises:
        InputError: a malformed or repeated line, naming ``source:LINE``.
    """
    entries: dict[str, Entry] = {}
    for number, line in enumerate(text.splitlines(), start=1):
        entry = parse_line(line, f"{source}:{number}")
        if entry is None:
            continue
        if entry.key in entries:
            raise InputError(f"{source}:{number}: {entry.key} appears twice in the sum")
        entries[entry.key] = entry
    return entries


def compare(expected: Mapping[str, Entry], actual: Mapping[str, Entry], *,
            extra: bool = True) -> list[Difference]:
    """Each type version that differs, sorted by key (``extra``: count served types the
    expected surface does not list)."""
    found: list[Difference] = []
    for key in sorted(expected.keys() | actual.keys()):
        want, have = expected.get(key), actual.get(key)
        if have is None:
            found.append(Difference(key, MISSING))
        elif want is None:
            found += [Difference(key, EXTRA), *_edited(have)] if extra else []
        else:
            found += _differences(want, have) + _edited(have)
    return found


def _edited(have: Entry) -> list[Difference]:
    return [Difference(have.key, EDITED, have.recorded, have.digest)] if have.edited else []


def _differences(want: Entry, have: Entry) -> list[Difference]:
    # An edited type whose sum has its recorded (or its edited) digest is told as edited.
    same = (want.digest in (have.digest, have.recorded) if have.edited
            else want.digest == have.digest)
    pairs = ((DEFINITION, same, want.digest, have.digest),
             (CONTROLLER, want.controller == have.controller, want.controller,
              have.controller))
    return [Difference(want.key, how, a, b) for how, equal, a, b in pairs if not equal]


def entries(rows: Iterable[TypeRow]) -> dict[str, Entry]:
    """The served rows as a sum's entries, by key."""
    return {r.key: Entry(r.key, r.digest, r.controller or NO_CONTROLLER, r.recorded)
            for r in rows if r.served}
