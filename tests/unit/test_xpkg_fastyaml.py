"""The rapidyaml fast path against libyaml: the same values (types included), the same
errors at the same point, for every YAML file the repository holds and for generated
streams; every case that must fall back does, and says so."""

from __future__ import annotations

import io
import math
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lockwright.errors import InvalidPackage
from lockwright.xpkg import fastyaml
from lockwright.xpkg.fastyaml import stream as yamlcut
from lockwright.xpkg.fastyaml.document import DocumentDecoder
from lockwright.xpkg.parse import _Loader, _yaml_problem, iter_objects

ROOT = Path(__file__).resolve().parents[2]
CORPUS = sorted({path for pattern in ("tests/**/*.yaml", "tests/**/*.yml", "examples/**/*.yaml",
                                      "lockwright/data/crds/*.yaml")
                 for path in ROOT.glob(pattern)})


def typed(value: Any) -> Any:
    """``value`` with every type spelled out: 1, 1.0 and True differ, NaN equals NaN."""
    if isinstance(value, dict):
        return ("dict", tuple((typed(k), typed(v)) for k, v in value.items()))
    if isinstance(value, list):
        return ("list", tuple(typed(v) for v in value))
    if isinstance(value, float) and math.isnan(value):
        return ("float", "nan")
    return (type(value).__name__, value)


def outcome(documents: Callable[[], Iterable[Any]]) -> list[Any]:
    """Each document, typed, then the error the iteration ended with (type and text)."""
    seen: list[Any] = []
    try:
        seen.extend(typed(doc) for doc in documents())
    except (yaml.YAMLError, ValueError) as exc:
        seen.append(("error", type(exc).__name__, str(exc)))
    return seen


def libyaml(data: bytes) -> list[Any]:
    return outcome(lambda: yaml.load_all(io.BytesIO(data), Loader=_Loader))


def fast(data: bytes) -> list[Any]:
    return outcome(lambda: fastyaml.load_all(io.BytesIO(data), _Loader))


@contextmanager
def chunk(size: int) -> Iterator[None]:
    """Read the stream ``size`` bytes at a time (cuts, padding and checks across reads)."""
    saved, yamlcut.CHUNK = yamlcut.CHUNK, size
    try:
        yield
    finally:
        yamlcut.CHUNK = saved


def same(data: bytes, *sizes: int) -> None:
    expected = libyaml(data)
    assert fast(data) == expected
    for size in sizes:
        with chunk(size):
            assert fast(data) == expected, f"chunk {size}"


def reason(text: str | bytes) -> str | None:
    data = text.encode() if isinstance(text, str) else text
    return DocumentDecoder(_Loader.yaml_implicit_resolvers).decode(data)[1]


# --- every YAML file in the repository -------------------------------------------------

@pytest.mark.parametrize("path", CORPUS, ids=lambda p: str(p.relative_to(ROOT)))
def test_repository_yaml_decodes_as_libyaml_does(path: Path) -> None:
    same(path.read_bytes(), 7)


@contextmanager
def fallbacks() -> Iterator[Counter[str]]:
    """The fallbacks counted while the block runs."""
    before, counted = Counter(fastyaml.FALLBACKS), Counter[str]()
    yield counted
    counted.update(fastyaml.FALLBACKS - before)


#: Copied fixtures that fall back, and why: crdify's test CRD (44 copies) holds a word
#: YAML 1.1 reads as a boolean; provider-kubernetes' CEL rules wrap onto lines opening
#: with ``&&``, which the text check takes for an anchor (conservative: libyaml decodes).
KNOWN_SLOW = ("tests/fixtures/crdify/", "tests/fixtures/provider-crds/")


def test_repository_yaml_takes_the_fast_path() -> None:
    ours = [p for p in CORPUS if not str(p.relative_to(ROOT)).startswith(KNOWN_SLOW)]
    package = b"---\n".join(p.read_bytes().rstrip(b"\n") + b"\n" for p in ours)
    with fallbacks() as counted:
        assert fast(package) == libyaml(package)
    assert len(ours) > 20 and counted.total() <= len(ours) // 10, counted


# --- what falls back, and why ------------------------------------------------------------

FALLBACKS = [
    ("a: b\tc\n", "control character, tab or CR"),
    ("a: 1\r\nb: 2\r\n", "control character, tab or CR"),
    ("a: b\u2028c\n", "NEL, LS, PS or BOM"),
    ("a: b\x85c\n", "NEL, LS, PS or BOM"),
    ("a: 1\n\ufeffb: 2\n", "NEL, LS, PS or BOM"),
    ("a: !!str 1\n", "tag"),
    ("a: !custom x\n", "tag"),
    ("a:\n  !!int '3'\n", "tag"),
    ("a: &x 1\nb: 2\n", "anchor"),
    ("a: &x 1\nb: &x 2\n", "anchor"),
    ("a: *x\n", "alias"),
    # At a line's start, unless the line continues a scalar (deeper, after no opener).
    ("a: b\n&x c: d\n", "anchor"),
    ("a:\n  b: c\n  &x d: e\n", "anchor"),
    ("a:\n  &x b\n", "anchor"),
    ("a: # c\n  &x b\n", "anchor"),
    ("a:\n  b: c\n    d\n   &x e: f\n", "anchor"),
    ("a:\n  *x\n", "alias"),
    ("a:\n- b: c\n  &x d: e\n", "anchor"),
    ("a:\n- - b: c\n    &x d: e\n", "anchor"),
    ("? a\n: b\n", "explicit key"),
    ("%YAML 1.1\n---\na: 1\n", "directive"),
    ("a: [x, # c\n  y]\n", "flow collection"),
    ("a: {b:, c}\n", "flow collection"),
    ("a: {:b: c}\n", "flow collection"),
    ("a:\n  {b: c}!\n", "flow collection"),
    ("a: [1e3]\n", "flow collection"),
    ("a: ['it''s']\n", "flow collection"),
    ("a: |2\n   x\n", "block scalar header or end"),
    ("a: |x\n  y\n", "block scalar header or end"),
    ("a: |\n  x", "block scalar header or end"),
    ("a: 1\n...\n", "document end marker"),
    ("k" * 1025 + ": v\n", "key over 1024 characters"),
    ("a:\n  - '" + "k" * 1030 + "': v\n", "key over 1024 characters"),
    ("a: 1e3\n", "number YAML 1.1 reads otherwise"),
    ("a: 1.0e3\n", "number YAML 1.1 reads otherwise"),
    ("a: .5e3\n", "number YAML 1.1 reads otherwise"),
    ("a:\n  1E+3\n", "number YAML 1.1 reads otherwise"),
    ("a: -.5\n", "number YAML 1.1 reads otherwise"),
    ("a: 12345678901234567890123\n", "number YAML 1.1 reads otherwise"),
    ("a: b: c\n", "rapidyaml refuses it"),
    ("a: 'x\n", "rapidyaml refuses it"),
    ("- a\n", "not one mapping"),
    ("just text\n", "not one mapping"),
    ("a: yes\n", "string YAML 1.1 reads otherwise"),
    ("a: 'yes'\n", "string YAML 1.1 reads otherwise"),
    ("a: On\n", "string YAML 1.1 reads otherwise"),
    ("a: FALSE\n", "string YAML 1.1 reads otherwise"),
    ("a: NULL\n", "string YAML 1.1 reads otherwise"),
    ("a: ~\n", "string YAML 1.1 reads otherwise"),
    ("a: =\n", "string YAML 1.1 reads otherwise"),
    ("<<: x\n", "string YAML 1.1 reads otherwise"),
    ("true: 1\n", "string YAML 1.1 reads otherwise"),
    ("null: 1\n", "string YAML 1.1 reads otherwise"),
    ("a: @x\n", "string YAML 1.1 reads otherwise"),
    ("a: `x\n", "string YAML 1.1 reads otherwise"),
    ("a: ]x\n", "string YAML 1.1 reads otherwise"),
    ("a: 017\n", "number written as a string"),
    ("a: 0x1F\n", "number written as a string"),
    ("a: 1_000\n", "number written as a string"),
    ("a: 190:20:30\n", "number written as a string"),
    ("a: .inf\n", "number written as a string"),
    ("a: nan\n", "number written as a string"),
    ("a: '.inf'\n", "number written as a string"),
    ("1: a\n", "number written as a string"),
    ("'12': a\n", "number written as a string"),
    ("a: +1\n", "not JSON"),
    ('a: "\\x01"\n', "not JSON"),
]


@pytest.mark.parametrize(("text", "why"), FALLBACKS)
def test_what_rapidyaml_cannot_decode_exactly_falls_back(text: str, why: str) -> None:
    assert reason(text) == why
    with fallbacks() as counted:
        same(text.encode(), 1)
    assert counted[why] >= 1


FAST = [
    "a: 'true'\nb: \"12\"\nc: '1.5'\nd: \"null\"\ne: ''\nf: \"\"\n",
    "a: true\nb: false\nc: null\nd:\ne: 12\nf: -3\ng: 0\nh: -0\ni: 1.5\nj: -0.25\nk: 1.\nl: .5\n",
    "a: 0o17\nb: 08\nc: 1.2.3\nd: 2024-01-01\ne: 2024-01-01T10:00:00Z\nf: y\ng: n\nh: Y\n",
    "a: 1\na: 2\nb: 3\n",
    'a: "\\u00e9\\U0001F600\\"\\\\\\n\\t \\/"\nb: \'it\'\'s\'\nc: é 日本\n',
    "a: |\n  x\n\n  y\nb: |-\n  z\nc: |+\n  w\n\nd: >\n  folded\n  text\n\n  para\n",
    "a: |\n  ---\n  ...\n  [x] *y &z !w %\n",
    "a: plain\n  continued\n\n  paragraph\nb: 'single\n  folded'\nc: \"double\\\n  joined\"\n",
    "a:\n- b\n- c:\n    d: e\n  f: g\n-\n  - h\nk: {}\nl: []\n",
    "verbs: [get, list, watch]\ngroups: [\"\"]\nm: {a: b, c: [1, 2.5, x y], 'q': \"r\"}  # c\n",
    "# comment\na: b # trailing\n# between\nc: d\n",
    "\ufeffa: 1\n",
    # A CEL rule folded onto a line that begins "&&" (provider-kubernetes' CRDs), and the
    # like: text continuing a scalar, deeper than the line before.
    ("x-kubernetes-validations:\n- message: m\n  rule: self.a != 'B' || (self.a == 'B'\n"
     "    && size(self.c) > 0)\n"),
    "a: b\n  &c d\nk: |\n  x\n    &&y\ne: 'f\n  &g'\nh: \"i\n  *j !k\"\n",
    "s:\n- a: b\n    &c d\n- e: f\n    *g !h\n",
    "k" * 1024 + ": v\nd: " + "long " * 1000 + "\n",
]


@pytest.mark.parametrize("text", FAST)
def test_what_rapidyaml_decodes_exactly_stays_fast(text: str) -> None:
    assert reason(text.removeprefix("\ufeff")) is None
    same(text.encode(), 3)


# --- streams: cuts, empty documents, errors where libyaml gives them ---------------------

STREAMS = [
    b"", b"---", b"---\n", b"# only a comment\n", b"...\n", b"---\n...\n", b"\xef\xbb\xbf",
    b"a: 1\n---\nb: 2\n", b"---\na: 1\n---\n---\nb: 2\n...\n", b"a: 1\n--- \nb: 2\n---",
    b"a: 1\n...\n---\nb: 2\n", b"a: 1\n...\nb: 2\n", b"a: |\n  x\n---\n  y\n",
    b"a: 'x\n---\ny'\n", b'a: "x\n--- y"\n', b"a: [1,\n---\n2]\n", b"--- |\nx\n---\nb: 1\n",
    b"---x: 1\n----\na: 1\n", b"a: 1\n--- a: 1\n", b"a: 1\n---\n- x\n---\nb: 2\n",
    b"\xef\xbb\xbf---\na: 1\n", b"a: 1\n\xef\xbb\xbf---\nb: 1\n", b"a: 1\n---\nb: 2\n%YAML 1.1\n---\nc: 3\n",
    b"%YAML 1.1\n%TAG !e! tag:example.com,2000:\n---\na: !e!x 1\n",
    b"\xff\xfea\x00:\x00 \x001\x00\n\x00", b"a: 1\n---\nb: [\n", b"a: 1\n---\n\tb: 2\n",
    b"a: 1\n---\nb: c: d\n---\ne: 3\n", b"k" * 1100 + b"x: 1\n",
]


@pytest.mark.parametrize("data", STREAMS, ids=lambda d: repr(d[:24]))
def test_streams_decode_as_libyaml_does(data: bytes) -> None:
    same(data, 1, 5)


def filler(n: int, size: int) -> bytes:
    return b"".join(b"doc%d: %s\n---\n" % (i, b"x" * size) for i in range(n))


@pytest.mark.parametrize("bad", [b"\x01", b"\x7f", b"\xc2\x80", b"\xed\xa0\x80", b"\xff", b"\xef\xbf\xbe",
                                 b"\xc3"])
@pytest.mark.parametrize("where", [0, 3, 40])
def test_a_byte_libyaml_refuses_stops_it_where_libyaml_stops(bad: bytes, where: int) -> None:
    """libyaml checks characters 16 KiB ahead, so earlier documents may never come out."""
    data = filler(where, 5000) + b"last: " + bad + b"\n" + filler(2, 10)
    same(data, 4096)
    assert_same_message(data)


def test_errors_after_many_documents_keep_their_line_and_column() -> None:
    data = filler(300, 200) + "é: ok\nbad: [unclosed\n".encode() + filler(3, 10)
    same(data)
    assert_same_message(data, "document 300: invalid YAML at line 603, column 5")


class Named(io.BytesIO):
    name = "package.yaml"  # the name iter_objects gives a stream without one


def assert_same_message(data: bytes, start: str = "document") -> None:
    """``iter_objects`` reports what libyaml reports, at the same document."""
    with pytest.raises(yaml.YAMLError) as theirs:
        list(yaml.load_all(Named(data), Loader=_Loader))
    index = len(libyaml(data)) - 1
    with pytest.raises(InvalidPackage) as ours:
        list(iter_objects(io.BytesIO(data)))
    assert ours.value.message == f"document {index}: {_yaml_problem(theirs.value)}"
    assert ours.value.message.startswith(start)


def test_text_streams_are_left_to_libyaml_whole() -> None:
    text = "a: 1\n---\nb: yes\n---\nc: [\n"
    with fallbacks() as counted:
        ours = outcome(lambda: fastyaml.load_all(io.StringIO(text), _Loader))
    assert ours == outcome(lambda: yaml.load_all(io.StringIO(text), Loader=_Loader))
    assert counted == {"whole: text stream": 1}


def test_very_long_scalars() -> None:
    long = b"word " * 300_000
    data = b"a: " + long + b"\nb: '" + long + b"'\nc: |\n  " + long + b"\n"
    same(data, 4096)
    assert reason(data) is None


def test_the_stream_is_read_a_chunk_at_a_time() -> None:
    """Memory stays a document's worth: nothing reads the whole stream at once."""
    reads: list[int] = []

    class Counting(io.BytesIO):
        def read(self, size: int | None = -1) -> bytes:
            reads.append(-1 if size is None else size)
            return super().read(size)

    data = filler(200, 10_000)
    with chunk(64 * 1024):
        assert sum(1 for _ in fastyaml.load_all(Counting(data), _Loader)) == 201
    assert len(reads) > 30 and max(reads) == 64 * 1024


# --- generated streams -------------------------------------------------------------------

SHAPES = [
    "yes", "Yes", "YES", "no", "No", "NO", "on", "On", "ON", "off", "Off", "OFF", "y", "Y", "n",
    "true", "True", "TRUE", "false", "False", "FALSE", "null", "Null", "NULL", "~", "",
    "0", "-0", "+0", "00", "017", "0o17", "0x1F", "0b101", "1_000", "190:20:30", "1:20", "1:20.5",
    "12", "-12", "+12", "1234567890123456789", "12345678901234567890123", "1.5", "-1.5", "1.", ".5",
    "-.5", "+.5", "1e3", "1E3", "1e+3", "1.5e3", "1.5e-3", "1.0E+3", ".5e+3", "1.e5", "0.", ".",
    "-", "+", ".inf", "-.Inf", "+.INF", ".nan", ".NaN", "nan", "inf", "infinity", "-inf",
    "2024-01-01", "2001-12-14 21:59:43.10 -5", "<<", "=", "*x", "&x", "!x", "@x", "`x", "%x",
    "]x", "|x", ">x", "x #y", "a:b", "-x", "?x", ":x", "é", "1,000", "v1", "0755", "08", "1" * 30,
]
ESCAPES = ["\\n", "\\t", "\\x41", "\\u00e9", "\\U0001F600", "\\\\", '\\"', "\\/", "\\0", "\\e",
           "\\N", "\\_", "\\L", "\\P", "\\ ", "\\x85"]


@st.composite
def scalar(draw: st.DrawFn) -> str:
    text = draw(st.sampled_from(SHAPES) | st.text("ab 1.-:#'\"\\[]{}&*!|>%@`?~é", max_size=8))
    style = draw(st.sampled_from(["plain", "plain", "plain", "single", "double", "escape", "block"]))
    if style == "single":
        return "'" + text.replace("'", "''") + "'"
    if style == "double":
        return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'
    if style == "escape":
        return '"' + "".join(draw(st.lists(st.sampled_from(ESCAPES) | st.just("a"), max_size=3))) + '"'
    if style == "block":
        head = draw(st.sampled_from(["|", "|-", "|+", ">", ">-", ">+"]))
        return head + "".join(f"\n    {line}" if line else "\n" for line in
                              draw(st.lists(st.sampled_from(["x", "y z", "", "  more", text]),
                                            max_size=3)))
    return text


@st.composite
def node(draw: st.DrawFn, indent: int = 0, depth: int = 0) -> str:
    kind = draw(st.sampled_from(["scalar", "scalar", "map", "seq"] if depth < 3 else ["scalar"]))
    pad = " " * (indent + 2)
    if kind == "scalar":
        return " " + draw(scalar())
    if kind == "map":
        keys = draw(st.lists(st.sampled_from(["a", "b", "c d", "1", "yes", "'q'", "x.y"] + SHAPES[:8]),
                             min_size=1, max_size=3))
        return "".join(f"\n{pad}{k}:{draw(node(indent + 2, depth + 1))}" for k in keys)
    return "".join(f"\n{pad}-{draw(node(indent + 2, depth + 1))}"
                   for _ in range(draw(st.integers(1, 3))))


@st.composite
def stream(draw: st.DrawFn) -> bytes:
    documents = []
    for _ in range(draw(st.integers(1, 3))):
        keys = draw(st.lists(st.sampled_from(["kind", "spec", "a", "b1", "x-y"]), min_size=1,
                             max_size=3))
        documents.append("".join(f"{k}:{draw(node(0))}\n" for k in keys))
    text = draw(st.sampled_from(["", "---\n", "# c\n"])) + "---\n".join(documents)
    if draw(st.integers(0, 3)) == 0:  # one near miss
        at = draw(st.integers(0, len(text)))
        text = text[:at] + draw(st.sampled_from(list(" \n:-'\"[]{},#|>&*!?%@`\t") + ["---"])) + text[at:]
    return text.encode()


@settings(max_examples=300, deadline=None, suppress_health_check=list(HealthCheck), database=None)
@given(stream(), st.sampled_from([yamlcut.CHUNK, 1, 9]))
def test_generated_streams_decode_as_libyaml_does(data: bytes, size: int) -> None:
    with chunk(size):
        assert fast(data) == libyaml(data)


@settings(max_examples=200, deadline=None, suppress_health_check=list(HealthCheck), database=None)
@given(st.sampled_from(SHAPES), st.sampled_from(["k: {}\n", "{}: v\n", "- {}\n", "k:\n  - {}\n"]))
def test_every_yaml_1_1_scalar_shape_decodes_as_libyaml_does(shape: str, where: str) -> None:
    for text in (shape, f"'{shape}'", f'"{shape}"'):
        data = ("a: 1\n---\n" + where.format(text) + "---\nz: 2\n").encode()
        assert fast(data) == libyaml(data)


@st.composite
def continued(draw: st.DrawFn) -> bytes:
    """A mapping whose values may go on over lines that begin like a node's properties
    (``&x``, ``*x``, ``!x``, ``&&``), at indentations around their key's: where such a line
    continues a scalar the fast path keeps it, elsewhere it must fall back."""
    lines = []
    for _ in range(draw(st.integers(1, 3))):
        lead = draw(st.sampled_from(["", "", "  ", "- ", "  - "]))
        value = draw(st.sampled_from(["x", "x y", "'x", '"x', "", "# c", "|", "&a x"]))
        lines.append(f"{lead}{draw(st.sampled_from(['a', 'b', 'rule']))}: {value}")
        for _ in range(draw(st.integers(0, 2))):
            deeper = len(lead) + draw(st.sampled_from([-2, 0, 2, 2, 2, 3, 4]))
            start = draw(st.sampled_from(["&x", "*x", "!x", "&&", "&&", "&x k:", "!!str"]))
            end = draw(st.sampled_from(["", " y", " y", " (c) > 0)", " y'", ' y"', " z: w"]))
            lines.append(" " * max(0, deeper) + start + end)
    return ("top:\n" + "".join(f"  {line}\n" for line in lines)).encode()


@settings(max_examples=500, deadline=None, suppress_health_check=list(HealthCheck), database=None)
@given(continued())
def test_lines_that_begin_like_properties_decode_as_libyaml_does(data: bytes) -> None:
    assert fast(data) == libyaml(data)
