"""A YAML byte stream cut into documents, as libyaml reads it, and replayed to libyaml.

libyaml starts a new document at every ``---`` that opens a line and is followed by a
blank (inside a quoted scalar or a flow collection that is an error, which the cut piece
then shows when decoded alone), so each piece between two of them decodes alone as it
does in the stream. `Stream` cuts there, a chunk at a time.

libyaml checks characters a raw read at a time (16 KiB, less the bytes of a character
cut at the end of the previous read), before it parses them, so a control character or
bad UTF-8 is reported while parsing the document that first needs its read. `Stream`
finds the first such byte as it reads and keeps where libyaml's reads end; `Replay` hands
libyaml the stream from a cut on, behind blank padding as long as the text before it and
in reads ending where the original ones did, so libyaml reports everything, values and
errors with their line, column and offset, as over the whole stream.
"""

from __future__ import annotations

import bisect
import codecs
import re
from collections.abc import Iterator
from typing import Final, Protocol

CHUNK = 256 * 1024
#: libyaml's raw read (YAML_RAW_BUFFER_SIZE).
RAW: Final = 16384
#: Past the next ``---``, how far libyaml may have read when it hands over a document:
#: the read holding the ``---`` and a blank, and a little margin.
LOOKAHEAD: Final = RAW + 16
_UTF16_BOMS: Final = (b"\xff\xfe", b"\xfe\xff")
_BLANK: Final = frozenset(b" \t\r\n")
#: Bytes libyaml's reader accepts as they are (non-ASCII is checked as UTF-8).
_READER_OK: Final = bytes([0x09, 0x0A, 0x0D, *range(0x20, 0x7F), *range(0x80, 0x100)])
_ASCII_BAD: Final = re.compile(rb"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")
_C1_BAD: Final = re.compile(rb"\xc2[\x80-\x84\x86-\x9f]")  # C1 controls but NEL
_NONCHAR: Final = re.compile(rb"\xef\xbf[\xbe\xbf]")  # U+FFFE, U+FFFF


class Reader(Protocol):
    """A file object as libyaml uses it: ``read`` and, in its messages, ``name``."""

    name: str

    def read(self, size: int = -1, /) -> bytes | str:
        """Up to ``size`` bytes or characters; empty at the end."""


class Stream:
    """A YAML stream cut before each ``---`` that opens a line and a document.

    Attributes:
        text: the reader gives ``str`` (cutting is for bytes; libyaml takes it whole).
        utf16: the stream starts with a UTF-16 BOM (likewise).
        offset: bytes before the current segment; ``lines``: line breaks before it.
    """

    def __init__(self, reader: Reader) -> None:
        self.reader = reader
        self.text = self.utf16 = False
        self.offset = self.lines = self.count = 0
        self.buffer = b""
        self.start = 0  # the current segment's start in the buffer
        self._end = 0
        self._scan = 0  # where the next "---" may start; 0 only at the stream's start
        self._eof = self._done = False
        self._read = 0
        self._checker = _ReaderCheck()

    @property
    def whole(self) -> bool:
        """Whether only libyaml over the whole stream can read it (text, UTF-16)."""
        return self.text or self.utf16

    @property
    def bad(self) -> int | None:
        """The offset of the first byte libyaml's reader refuses, if read yet."""
        return self._checker.bad

    @property
    def ends(self) -> list[int]:
        """Where libyaml's raw reads end, as far as read."""
        return self._checker.ends

    def next(self) -> bytes | None:
        """The next segment (the first may be empty); None after the last."""
        if self._done:
            return None
        self.count, self.start = self.count + 1, self._end
        while (cut := self._find()) is None:
            if self._eof or self.whole:
                self._done, self._end = True, len(self.buffer)
                return self.buffer[self.start:]
            self._fill()
        self._end = cut
        return self.buffer[self.start:cut]

    def advance(self, segment: bytes) -> None:
        """Count ``segment`` (handed over, in full) as before the next one."""
        self.offset += len(segment)
        self.lines += line_breaks(segment)

    def refused_before_handover(self, segment: bytes) -> bool:
        """Whether libyaml would refuse a byte before handing over ``segment``'s document.

        It has read through the next ``---`` by then (the whole stream for the last).
        """
        limit = self.offset + len(segment) + LOOKAHEAD
        while not self._eof and (self._done or self._read < limit):
            self._fill()
        return self.bad is not None and (self._done or self.bad < limit)

    def _find(self) -> int | None:
        """The next segment's start; None if the buffer cannot tell yet."""
        at = self._scan
        while True:
            if at > 0:
                newline = self.buffer.find(b"\n---", at - 1)
                if newline < 0:
                    self._scan = max(at, len(self.buffer) - 2)
                    return None
                at = newline + 1
            opens = self._opens(at)
            if opens is None:
                self._scan = at
                return None
            self._scan = at + 1
            if opens:
                return at
            at += 1

    def _opens(self, at: int) -> bool | None:
        """Whether ``---`` at ``at`` starts a document; None if the buffer cannot tell."""
        if len(self.buffer) < at + 4 and not self._eof:
            return None
        if not self.buffer.startswith(b"---", at):
            return False
        following = self.buffer[at + 3:at + 4]
        return not following or following[0] in _BLANK

    def _fill(self) -> None:
        chunk = self.reader.read(CHUNK)
        if isinstance(chunk, str):
            self.text, chunk = True, chunk.encode("utf-8")
        elif self._read == 0 and chunk.startswith(_UTF16_BOMS):
            self.utf16 = True
        self._eof = not chunk
        if not self.whole:
            self._checker.feed(chunk, self._read)
        self._read += len(chunk)
        self.buffer = self.buffer[self.start:] + chunk
        self._scan, self._end = max(self._scan - self.start, 0), self._end - self.start
        self.start = 0


class _ReaderCheck:
    """libyaml's reader over the stream: the first byte it refuses, where its reads end."""

    def __init__(self) -> None:
        self.bad: int | None = None
        self.ends: list[int] = []
        self._next = RAW
        self._tail = b""
        self._utf8 = codecs.getincrementaldecoder("utf-8")()

    def feed(self, chunk: bytes, base: int) -> None:
        """Take the next ``chunk``, at offset ``base`` (empty at the end)."""
        data, at = self._tail + chunk, base - len(self._tail)
        while self._next <= base + len(chunk):
            self.ends.append(self._next)
            self._next += RAW - _cut_character(data, self._next - at)
        self._tail = data[-3:]
        if self.bad is None:
            self.bad = _refused(data, chunk, base, self._utf8)


def _refused(data: bytes, chunk: bytes, base: int,
             utf8: codecs.IncrementalDecoder) -> int | None:
    """The offset of the first byte of ``chunk`` (at ``base``; ``data`` is it behind up to
    3 earlier bytes) libyaml's reader refuses: a control character, bad UTF-8, a C1
    control but NEL, U+FFFE or U+FFFF."""
    behind = len(data) - len(chunk)
    found: list[int] = []
    if chunk.translate(None, _READER_OK) and (match := _ASCII_BAD.search(data, behind)):
        found.append(base - behind + match.start())
    if not chunk.isascii() or utf8.getstate()[0]:
        pending = len(utf8.getstate()[0])
        try:
            utf8.decode(chunk, final=not chunk)
        except UnicodeDecodeError as exc:
            found.append(base - pending + exc.start)
        for pattern, lead in ((_C1_BAD, b"\xc2"), (_NONCHAR, b"\xef\xbf")):
            if lead in data and (match := pattern.search(data)):
                found.append(base - behind + match.start())
    return min(found, default=None)


def _cut_character(data: bytes, end: int) -> int:
    """How many bytes of a UTF-8 character ``data[:end]`` ends inside (libyaml keeps them
    for its next read)."""
    for back in range(1, min(4, end + 1)):
        byte = data[end - back]
        if byte & 0xC0 != 0x80:  # not a continuation byte: the character's lead
            width = 2 if byte & 0xE0 == 0xC0 else 3 if byte & 0xF0 == 0xE0 else (
                4 if byte & 0xF8 == 0xF0 else 1)
            return back if width > back else 0
    return 0


def line_breaks(text: bytes) -> int:
    """How many lines libyaml counts in ``text``: LF, CR, CRLF, NEL, LS and PS end one."""
    count = text.count(b"\n")
    if b"\r" in text:
        count += text.count(b"\r") - text.count(b"\r\n")
    if not text.isascii():
        count += sum(text.count(c) for c in (b"\xc2\x85", b"\xe2\x80\xa8", b"\xe2\x80\xa9"))
    return count


class Replay:
    """The stream from the current segment on, for libyaml, as if read from the start.

    Blank padding stands for the text before (as many line breaks and bytes); reads end
    where libyaml's reads of the original ended, so it checks the same bytes together.
    Text streams are replayed whole, read for read.
    """

    def __init__(self, stream: Stream) -> None:
        self.name = getattr(stream.reader, "name", "<file>")
        self._stream = stream
        self._pieces = self._generate()
        self._pending: bytes | str = "" if stream.text else b""
        self._at = self._pos = 0

    def read(self, size: int = -1) -> bytes | str:
        """Up to ``size`` bytes (characters, for text), to the next original read end."""
        size = size if size >= 0 else 1 << 62
        if not self._stream.text:
            ends = self._stream.ends
            following = bisect.bisect_right(ends, self._pos)
            if following < len(ends):
                size = min(size, ends[following] - self._pos)
        while len(self._pending) - self._at < size and (piece := next(self._pieces, None)):
            self._pending, self._at = self._pending[self._at:] + piece, 0  # type: ignore[operator]
        data = self._pending[self._at:self._at + size]
        self._at += len(data)
        self._pos += len(data)
        return data

    def _generate(self) -> Iterator[bytes | str]:
        stream = self._stream
        for count, unit in ((stream.offset - stream.lines, b" "), (stream.lines, b"\n")):
            for done in range(0, count, CHUNK):
                yield unit * min(CHUNK, count - done)
        rest = stream.buffer[stream.start:]
        yield rest.decode("utf-8") if stream.text else rest
        while chunk := stream.reader.read(CHUNK):
            yield chunk
