"""One YAML document decoded by rapidyaml, or why only libyaml can decode it exactly.

rapidyaml parses the document and emits it as JSON, which orjson loads: the values
PyYAML's ``CSafeLoader`` gives (YAML 1.1, with the caller's implicit resolvers) unless the
document holds something the two read differently. `DocumentDecoder.decode` gives the
value, or the reason it falls back (the differential tests exercise each one):

* the text holds something the two read differently (`lockwright.xpkg.fastyaml.text`);
* rapidyaml refuses the text, reads other than one document in it, or the document's
  root is not a mapping (rare, and cheap to leave to libyaml);
* a JSON string could have been a plain scalar YAML 1.1 resolves to another type: a
  word such as ``yes``, ``On``, ``NULL``, ``~``, ``=`` or ``<<`` (a merge key), a key
  ``true``, ``false``, ``null`` or empty (keys are always quoted in JSON), a number
  rapidyaml quotes (``017``, ``1_000``, ``0x1F``, ``1:20``, ``.inf``) or any number as a
  key. JSON no longer tells a quoted scalar from a plain one; words and numbers that
  rapidyaml writes bare when plain (``true``, ``12``, ``1.5``) are strings only if quoted;
* a JSON string opens with ``@``, a backtick, ``]`` or ``}`` (libyaml refuses a plain
  scalar opening so; rapidyaml does not) or a space (rapidyaml has kept indentation in a
  key of a malformed document);
* orjson refuses the JSON (rapidyaml leaves numbers such as ``+1`` as they came), or it
  is not an object.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any, Final

import orjson
import ryml

from lockwright.xpkg.fastyaml.text import text_risk

Resolvers = Mapping[Any, Sequence[tuple[str, re.Pattern[str]]]]

#: A JSON string that may decode otherwise than libyaml: a word YAML 1.1 resolves (as a
#: key also ``true``, ``false``, ``null``, empty), one opening as libyaml would not let a
#: plain scalar open (an escaped quote is no opening), or (group 1) a number to judge.
#: One search with the literal prefix ``"``, its words as a trie so most strings fail on
#: their first character.
_JSON_RISK: Final = re.compile(
    rb'"(?:Y(?:es|ES)"|y(?:es)"|n(?:o"|ull":)|N(?:o|O|ull|ULL)"|o(?:n|ff)"|O(?:n|N|ff|FF)"'
    rb'|t(?:rue":)|T(?:rue|RUE)"|f(?:alse":)|F(?:alse|ALSE)"|~"|="|<<"|":'
    rb'|(?<!\\")[@` ]|(?<=[\s\[{,]")[\]}]|([-+.0-9][^"\\\n]*)")')
#: Numbers rapidyaml writes bare when plain, so a JSON string of one was quoted.
_BARE: Final = re.compile(r"-?(?:[1-9][0-9]*|0)(?:\.[0-9]*)?")


class DocumentDecoder:
    """Decodes documents with rapidyaml, for one stream (it reuses a JSON buffer).

    Args:
        resolvers: the loader's implicit resolvers (``yaml_implicit_resolvers``), which
            say whether a string would have been another type when plain.
    """

    def __init__(self, resolvers: Resolvers) -> None:
        self._resolvers = resolvers
        self._buffer = bytearray(1 << 16)

    def decode(self, text: bytes) -> tuple[Any, str | None]:
        """``(value, None)``, or ``(None, reason)`` when libyaml must decode ``text``.

        Args:
            text: one document's YAML, cut from the stream (UTF-8, checked by the reader).
        """
        reason = text_risk(text)
        if reason is not None:
            return None, reason
        try:
            tree = ryml.parse_in_arena(text)
        except (ryml.ExceptionBasic, RuntimeError):
            return None, "rapidyaml refuses it"
        node = _root_mapping(tree)
        if node is None:
            return None, "not one mapping"
        json = self._emit(tree, node)
        reason = self._json_risk(json)
        if reason is not None:
            return None, reason
        try:
            value = orjson.loads(json)
        except orjson.JSONDecodeError:
            return None, "not JSON"
        # rapidyaml has read a mapping followed by junk (``{a: 1}!``) as a string.
        return (value, None) if type(value) is dict else (None, "not one mapping")

    def _emit(self, tree: Any, node: int) -> memoryview:
        """``node`` as JSON, in the reused buffer (replaced, not resized: views may live)."""
        failed, size = ryml.emit_json_to_substr(tree, node, self._buffer)
        if failed:
            self._buffer = bytearray(size * 2)
            failed, size = ryml.emit_json_to_substr(tree, node, self._buffer)
        return memoryview(self._buffer)[:size]

    def _json_risk(self, json: memoryview) -> str | None:
        for match in _JSON_RISK.finditer(json):
            number = match[1]
            if number is None:
                return "string YAML 1.1 reads otherwise"
            key = bytes(json[match.end():match.end() + 1]) == b":"
            if self._resolves(text := number.decode()) and (key or not _BARE.fullmatch(text)):
                return "number written as a string"
        return None

    def _resolves(self, text: str) -> bool:
        """Whether a plain scalar ``text`` resolves to anything but a string."""
        found = [*self._resolvers.get(text[0], ()), *self._resolvers.get(None, ())]
        return any(regexp.match(text) for _, regexp in found)


def _root_mapping(tree: Any) -> int | None:
    """The node of the tree's one document if that document is a mapping."""
    node = tree.root_id()
    if tree.is_stream(node):
        if tree.num_children(node) != 1:
            return None
        node = tree.first_child(node)
    return node if tree.is_map(node) else None
