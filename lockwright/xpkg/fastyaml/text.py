"""Whether a YAML document's text holds what rapidyaml and libyaml read differently.

`text_risk` names the first such thing it finds, as a short reason, or None. Each check
looks at the raw text, so it errs on the side of falling back: the text of a quoted or
block scalar may look like what it guards against, which only costs that document the
fast path. It finds:

* a control character, a tab or a CR (libyaml is stricter with tabs and reads a lone
  CR as a line break); NEL, LS or PS (line breaks in YAML 1.1 only); a BOM past the
  start (libyaml refuses it there);
* a tag, an anchor or an alias opening a node (rapidyaml's JSON drops tags and anchors
  and writes an alias as a string; PyYAML applies tags and refuses an anchor given
  twice), a ``?`` that may open an explicit key (rapidyaml reads even ``'a'? b``), a
  ``%`` opening a line (a directive);
* a flow collection other than simple (rapidyaml reads comments, ``{a:, b}`` or
  ``{:a: b}`` within one where libyaml refuses them);
* a block scalar whose header holds more than a chomping indicator and a comment
  (libyaml refuses junk that rapidyaml skips; with an indentation indicator the two keep
  different spaces on blank lines), or that ends the text without a line break
  (rapidyaml adds one);
* a ``...`` line (rapidyaml reads on after it where libyaml stops or refuses);
* a key that may span more than 1024 characters (a limit of libyaml's own);
* a plain value YAML 1.1 reads otherwise than JSON: an exponent without both a dot and
  a sign (``1e3`` and ``1.0e3`` are strings in YAML 1.1; rapidyaml writes a number),
  ``-.5`` (a string; rapidyaml writes ``-0.5``), nineteen digits or more (an int in
  PyYAML, perhaps a float in orjson).

"Opening a node" is after ``: ``, ``- `` or ``? ``, or at the start of a line that does
not continue a scalar. A line continues one when the line before that is not blank ends
with no indicator, anchor or tag and holds no comment; for a tag, an anchor or an alias,
which may open a key too, the line must also be deeper than that line's innermost node
(a CEL rule folded onto a line that begins ``&&`` keeps the fast path).
"""

from __future__ import annotations

import re
from typing import Final

#: The text in one pass, for single-byte ``in`` checks and one search with a literal
#: prefix: digits become 0 and ``E`` becomes ``e``; ``+``, ``:``, ``?`` and LF become
#: ``-``; other control characters (tab and CR too) and DEL become NUL; the bytes of
#: non-ASCII characters become 0x80.
_SHAPE: Final = bytes(
    0 if b < 0x20 and b != 0x0A or b == 0x7F else 0x80 if b >= 0x80
    else ord("0") if 0x30 <= b <= 0x39 else ord("e") if b == ord("E")
    else ord("-") if b in b"+:?\n" else b
    for b in range(256))
#: A plain value (after ``: ``, ``- ``, or opening a line) that starts as 1e3, 1.0e3,
#: .5e3, 1e+3, -.5 or nineteen digits; a key stays a JSON string and is judged there.
_NUMBER: Final = re.compile(rb"- ++(?:-?[.0][.0]*e|-\.0|-?0{19})")  # no backtracking
_SPECIAL_BREAKS: Final = (b"\xc2\x85", b"\xe2\x80\xa8", b"\xe2\x80\xa9", b"\xef\xbb\xbf")
#: A block scalar indicator after ``: ``, ``- ``, ``? `` or indentation, in the shape
#: (where a LF, ``:``, ``?`` and ``+`` read ``-``); odd if more than a chomping indicator
#: and a comment follow it on its line.
_BLOCK: Final = re.compile(rb"- ++[|>]")
_ODD_HEADER: Final = re.compile(rb"- ++([|>])(?!-?(?: ++#[^-]*| *+)-)")
_FLOW_TOKEN: Final = re.compile(
    rb"""\s*([\[\]{}]|, ?|: |'[^'\n]*'|"[^"\\\n]*"|[\w./](?:[\w./ -]*[\w./])?)""", re.ASCII)
_FLOW_TOKENS: Final = 200
_FLOW_END: Final = re.compile(rb"(?: +#.*| *)")
_KEY_LIMIT: Final = 1024
_LONG_LINE: Final = re.compile(rb"\n[^\n]{%d}" % (_KEY_LIMIT + 1))
_RISKY_TOKEN: Final = re.compile(rb"[.0-9][.0-9]*[eE]|[0-9]{19}")  # as _NUMBER, in flow
_WORD: Final = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789")
_BLANK_OR_END: Final = (b"", b" ", b"\t", b"\r", b"\n")


def text_risk(text: bytes) -> str | None:
    """Why ``text`` cannot take the fast path, judged on the YAML; None if it can."""
    shape = text.translate(_SHAPE)
    if b"\0" in shape:
        return "control character, tab or CR"
    if b"\x80" in shape and any(mark in text for mark in _SPECIAL_BREAKS):
        return "NEL, LS, PS or BOM"
    return _indicator_risk(text, shape) or _number_risk(shape)


def _indicator_risk(text: bytes, shape: bytes) -> str | None:
    if b"!" in shape and _opens(text, b"!", named=False):
        return "tag"
    if b"&" in shape and _opens(text, b"&", named=True):
        return "anchor"
    if b"*" in shape and _opens(text, b"*", named=True):
        return "alias"
    if b"?" in text and _explicit_key(text):
        return "explicit key"
    if b"%" in shape and (text.startswith(b"%") or b"\n%" in text):
        return "directive"
    if (b"[" in shape or b"{" in shape) and _flow_collection(text):
        return "flow collection"
    if (b"|" in shape or b">" in shape) and _odd_block_scalar(text, shape):
        return "block scalar header or end"
    if b"..." in shape and (text.startswith(b"...") or b"\n..." in text):
        return "document end marker"
    if _long_key(text):
        return "key over 1024 characters"  # libyaml's limit, not rapidyaml's
    return None


def _number_risk(shape: bytes) -> str | None:
    return "number YAML 1.1 reads otherwise" if _NUMBER.search(shape) else None


def _opens(text: bytes, char: bytes, *, named: bool) -> bool:
    """Whether ``char`` may open a node: after ``: ``, ``- `` or ``? ``, or at a line's
    start unless that line continues a scalar (`_continues`; a key may open a line
    whatever the line before); with ``named``, unless a blank follows (both parsers
    refuse ``* item`` where a node opens, and read it as text anywhere else; a lone ``*``
    or ``&`` at a line's end is refused by libyaml alone)."""
    for at in _positions(text, char):
        if named and text[at + 1:at + 2] in (b" ", b"\t"):
            continue  # refused by both; before a line's end only libyaml refuses
        before = _spaces_before(text, at)
        if before == 0 or (text[before - 1] == 0x0A
                           and not _continues(text, before - 1, at - before)) or (
                before < at and text[before - 1] in b":-?"):
            return True
    return False


def _explicit_key(text: bytes) -> bool:
    """Whether a ``?`` and a blank may open an explicit key."""
    at = text.find(b"?")
    while at >= 0:
        if (at == 0 or text[at - 1] not in _WORD) and text[at + 1:at + 2] in _BLANK_OR_END:
            return True
        at = text.find(b"?", at + 1)
    return False


def _flow_collection(text: bytes) -> bool:
    """Whether a flow collection (``[`` or ``{`` opening a node) is other than simple: on
    one line, plain scalars of letters, digits and ``_./-`` (spaces within), simple quoted
    ones, ``, `` and ``: `` between them, only a comment after it. rapidyaml reads
    comments, ``{a:, b}`` or ``{:a: b}`` within flow collections where libyaml refuses."""
    checked = 0  # a simple collection's line is checked whole, nested ones with it
    for at in sorted(_positions(text, b"[{")):
        if at >= checked and _opening(text, at):
            checked = text.find(b"\n", at) % (len(text) + 1)  # the end if no newline
            if not _simple_flow(text[at:checked]):
                return True
    return False


def _simple_flow(line: bytes) -> bool:
    """Whether ``line`` is one simple flow collection (see `_flow_collection`)."""
    tokens, at = [], 0
    while (match := _FLOW_TOKEN.match(line, at)) is not None:
        tokens.append(match[1])
        at = match.end()
    if len(tokens) > _FLOW_TOKENS:  # also bounds the recursion
        return False
    return _flow_node(tokens, 0) == len(tokens) and _FLOW_END.fullmatch(line, at) is not None


def _flow_node(tokens: list[bytes], at: int) -> int:
    """The index after the flow node at ``at``; -1 if it is not simple."""
    token = tokens[at] if at < len(tokens) else b""
    if token in (b"[", b"{"):
        return _flow_entries(tokens, at + 1, token == b"{")
    return at + 1 if _simple_scalar(token) else -1


def _flow_entries(tokens: list[bytes], at: int, mapping: bool) -> int:
    close = b"}" if mapping else b"]"
    if tokens[at:at + 1] == [close]:
        return at + 1
    while True:
        if mapping:
            if not _simple_scalar(tokens[at] if at < len(tokens) else b"") or (
                    tokens[at + 1:at + 2] != [b": "]):
                return -1
            at += 2
        at = _flow_node(tokens, at)
        following = tokens[at] if 0 <= at < len(tokens) else b""
        if following == close:
            return at + 1
        if following not in (b",", b", "):
            return -1
        at += 1


def _simple_scalar(token: bytes) -> bool:
    return bool(token) and token[:1] not in b"[]{},:" and not _RISKY_TOKEN.match(token)


def _odd_block_scalar(text: bytes, shape: bytes) -> bool:
    """Whether a block scalar may have a header with more than a chomping indicator and
    a comment, or end the text without a line break."""
    if not text.endswith(b"\n") and _BLOCK.search(shape):
        return True
    return any(_opening(text, match.start(1)) for match in _ODD_HEADER.finditer(shape))


def _long_key(text: bytes) -> bool:
    """Whether a key may span more than 1024 characters, so more bytes, on one line: a
    plain key ends at its first ``: ``; a quoted one, or one in a flow collection, may
    hold ``: `` itself, so any long line opening with those counts."""
    first = text.find(b"\n") % (len(text) + 1)
    starts = [0] if first > _KEY_LIMIT else []
    starts += [match.start() + 1 for match in _LONG_LINE.finditer(text)]
    for start in starts:
        end = text.find(b"\n", start) % (len(text) + 1)
        body = text[start:end].lstrip(b" -")
        if body[:1] in (b"'", b'"', b"[", b"{", b"?"):
            return True
        colon = body.find(b": ")
        if colon < 0 and body.endswith(b":"):
            colon = len(body) - 1
        if colon > _KEY_LIMIT:
            return True
    return False


def _positions(text: bytes, chars: bytes) -> list[int]:
    found = []
    for char in chars:
        at = text.find(char)
        while at >= 0:
            found.append(at)
            at = text.find(char, at + 1)
    return found


def _opening(text: bytes, at: int) -> bool:
    """Whether the value indicator (``[``, ``{``, ``|``, ``>``; none opens a key rapidyaml
    accepts) at ``at`` may open a node: after ``: ``, ``- `` or ``? ``, or at a line's
    start unless that line continues a scalar (`_node_follows`)."""
    before = _spaces_before(text, at)
    if before == 0 or text[before - 1] == 0x0A:
        return _node_follows(text, before - 1)
    return before < at and text[before - 1] in b":-?"


def _spaces_before(text: bytes, at: int) -> int:
    """Where the run of spaces just before ``at`` starts."""
    while at > 0 and text[at - 1] == 0x20:
        at -= 1
    return at


def _node_follows(text: bytes, newline: int) -> bool:
    """Whether a node may start on the line after ``newline``: the previous line that is
    not blank ends with an indicator (``key:``, ``-``, ``?``, ``---``) or an anchor or a
    tag, or holds a comment that could hide one; else the line continues a scalar."""
    return _opens_next(_line_before(text, newline))


def _opens_next(line: bytes) -> bool:
    """Whether a node may start on the line after ``line`` (see `_node_follows`)."""
    line = line.rstrip(b" ")
    return not line or (line.endswith((b":", b"-", b"?")) or b"#" in line
                        or line.rsplit(b" ", 1)[-1][:1] in (b"&", b"!"))


def _continues(text: bytes, newline: int, indent: int) -> bool:
    """Whether the line after ``newline``, indented ``indent``, continues a scalar (a CEL
    rule's ``&& ...`` line, say): it is indented deeper than the previous line that is not
    blank, and no node may follow that one. A key's line is never deeper than the line
    before unless that line opens its node (``key:``, ``-``, a comment)."""
    line = _line_before(text, newline)
    return indent > _indent(line) and not _opens_next(line)


def _indent(line: bytes) -> int:
    """The column the line's innermost node starts at: past its spaces and any ``- ``."""
    rest = line.lstrip(b" ")
    while rest.startswith(b"- "):
        rest = rest[2:].lstrip(b" ")
    return len(line) - len(rest)


def _line_before(text: bytes, newline: int) -> bytes:
    """The last line that is not blank up to ``newline`` (b"" if none)."""
    while newline > 0:
        start = text.rfind(b"\n", 0, newline) + 1
        if text[start:newline].strip(b" "):
            return text[start:newline]
        newline = start - 1
    return b""
