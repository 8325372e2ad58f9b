"""The documents the code cites exist, and the layout map names every folder.

Comments and docstrings cite the design as ``docs/design.md invariant N``, Crossplane's
behaviour as ``docs/crossplane.md §N`` (``§N step M``), and any document as ``<file>.md``
or ``<file>.md, "<heading>"`` (docs/design.md, "Citations"). A citation of a file,
heading, section, step or invariant that does not exist fails here, and so does a ``§`` or
an invariant cited without its file. A relative link of the README or docs/
(``[x](docs/operations.md#settings)``) must reach an existing file and heading. The layout
map (docs/design.md, "Layout") must name every folder and module of lockwright/ and every
top-level directory, and nothing else.
"""

from __future__ import annotations

import ast
import functools
import io
import re
import tokenize
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DESIGN = ROOT / "docs" / "design.md"
# Where comments and docstrings are read; YAML fixtures (copies of upstream CRDs) are not ours.
CODE_DIRS = ("lockwright", "tests", "benchmarks")
# Files of the build and the stack whose comments may cite documents too.
CONFIG_FILES = ("pyproject.toml", "Dockerfile", "docker-compose.yml", ".ci/run",
                "deploy/chart/lockwright/values.yaml")
# Documents of other projects, named with their project where cited.
EXTERNAL = {
    "specs/SIGNATURE_SPEC.md": "sigstore/cosign's signature specification",
    "SIGNATURE_SPEC.md": "sigstore/cosign's signature specification",
}

DOC = re.compile(r"(?<![\w/.-])((?:[\w-]+/)*[\w.-]*\w\.md)\b")
HEADING_REF = re.compile(r'`?,?\s*"([^"\n]+)"')
SECTION = re.compile(r"§\s*(\d+(?:\.\d+)*)(?:\s+steps?\s+(\d+(?:\.\d+)?)"
                     r"(?:\s*(?:-|–|to|and)\s*(\d+))?)?")
INVARIANT = re.compile(r"\binvariants?\s+(\d+)((?:\s*(?:-|–|,|and)\s*\d+)*)", re.IGNORECASE)
# "invariant" or "§" ending a line, its number opening the next: out of a line's sight.
SPLIT_END = re.compile(r"(?:\binvariants?|§)\s*$", re.IGNORECASE)
SPLIT_START = re.compile(r"^[\s#*>-]*\d")
MD_HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
NUMBERED = re.compile(r"^(?:§\s*)?(\d+(?:\.\d+)*)\.?\s")
LIST_ITEM = re.compile(r"^( *)(\d+)\.\s")
# A file without any of these cites nothing (and is not parsed: the scan stays fast).
CITATION_MARKS = ("§", ".md", "nvariant")


@dataclass(frozen=True)
class Doc:
    """What a markdown file offers to cite: headings, numbered sections, their steps."""

    headings: frozenset[str]
    sections: dict[str, list[str]]  # "10" -> the section's own lines (to the next heading)
    invariants: frozenset[int]


@functools.cache
def load(path: Path) -> Doc:
    """Parse ``path``'s headings, once."""
    headings: set[str] = set()
    sections: dict[str, list[str]] = {}
    invariants: set[int] = set()
    body: list[str] = []
    fenced = False  # a "# comment" inside a code block is no heading
    for line in path.read_text().splitlines():
        fenced ^= line.startswith("```")
        m = None if fenced else MD_HEADING.match(line)
        if not m:
            body.append(line)
            continue
        title = m.group(2).strip()
        headings.add(title.lower())
        body = []
        if num := NUMBERED.match(title):
            sections[num.group(1)] = body
            headings.add(title[num.end():].strip().lower())
        if inv := re.match(r"Invariant (\d+)\b", title):
            invariants.add(int(inv.group(1)))
    return Doc(frozenset(headings), sections, frozenset(invariants))


def has_step(lines: list[str], step: str) -> bool:
    """Whether a section's numbered list has ``step`` (``14``, or the sub-step ``14.3``)."""
    top, _, sub = step.partition(".")
    inside = False
    for line in lines:
        m = LIST_ITEM.match(line)
        if not m:
            continue
        if not m.group(1):
            if inside and sub:
                return False
            inside = m.group(2) == top
            if inside and not sub:
                return True
        elif inside and m.group(2) == sub:
            return True
    return False


def resolve(name: str, citing: Path) -> Path | None:
    """The file a cited ``name`` is: from the repository root, or beside the citing file."""
    for base in (ROOT, citing.parent):
        if (base / name).is_file():
            return (base / name).resolve()
    return None


def _section_errors(doc_path: Path, text: str, start: int, end: int) -> list[str]:
    errors = []
    doc = load(doc_path)
    for m in SECTION.finditer(text, start, end):
        number, step, last = m.groups()
        where = f"{doc_path.relative_to(ROOT)} §{number}"
        if number not in doc.sections:
            errors.append(f"{where}: no such section")
            continue
        for s in filter(None, (step, last)):
            if not has_step(doc.sections[number], s):
                errors.append(f"{where} step {s}: no such step")
    return errors


def _invariant_errors(doc_path: Path, text: str, start: int, end: int) -> list[str]:
    errors = []
    for m in INVARIANT.finditer(text, start, end):
        numbers = [int(m.group(1))] + [int(n) for n in re.findall(r"\d+", m.group(2))]
        if m.group(2) and re.match(r"\s*[-–]", m.group(2)):
            numbers = list(range(numbers[0], numbers[-1] + 1))
        if doc_path != DESIGN:
            errors.append(f"invariant {numbers[0]} cited from "
                          f"{doc_path.relative_to(ROOT)}: invariants live in docs/design.md")
        missing = [n for n in numbers if n not in load(DESIGN).invariants]
        errors += [f"docs/design.md invariant {n}: no such invariant" for n in missing]
    return errors


def citation_errors(citing: Path, text: str) -> list[str]:
    """What is wrong with the citations in one line of ``citing``.

    A ``§`` or an invariant belongs to the nearest ``*.md`` named before it on the line; in
    a markdown file of docs/ a bare one means that file itself.
    """
    errors: list[str] = []
    docs = list(DOC.finditer(text))
    for m in docs:
        name = m.group(1)
        if name in EXTERNAL:
            continue
        target = resolve(name, citing)
        if target is None:
            errors.append(f"{name}: no such file in the repository")
            continue
        ref = HEADING_REF.match(text, m.end())
        if ref and target.suffix == ".md" and ref.group(1).lower() not in load(target).headings:
            errors.append(f'{name}, "{ref.group(1)}": no such heading')
    own = citing.resolve() if citing.parent == ROOT / "docs" else None
    spans = [(own, 0)] + [(resolve(m.group(1), citing), m.end()) for m in docs]
    for i, (doc_path, start) in enumerate(spans):
        end = docs[i].start() if i < len(docs) else len(text)
        if doc_path is None:
            bare = [x.group(0) for p in (SECTION, INVARIANT) for x in p.finditer(text, start, end)]
            errors += [f"{b!r} names no document: write docs/crossplane.md §N or "
                       "docs/design.md invariant N" for b in bare]
            continue
        if doc_path.suffix != ".md":
            continue
        errors += _section_errors(doc_path, text, start, end)
        errors += _invariant_errors(doc_path, text, start, end)
    return errors


def python_prose(path: Path) -> Iterator[tuple[int, str]]:
    """The comments and docstrings of a Python file, line by line: where citations live
    (string values such as ``"README.md"`` in a test's data are not citations)."""
    source = path.read_text()
    if not any(mark in source for mark in CITATION_MARKS):
        return
    for tok in tokenize.generate_tokens(io.StringIO(source).readline):
        if tok.type == tokenize.COMMENT:
            yield tok.start[0], tok.string
    for node in ast.walk(ast.parse(source)):
        if (isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)
                and isinstance(node.value.value, str)):
            for i, line in enumerate(node.value.value.splitlines()):
                yield node.lineno + i, line


@functools.cache
def prose() -> tuple[tuple[Path, int, str], ...]:
    """Every line a citation may sit on, read once for every test here."""
    return tuple(_prose())


def _prose() -> Iterator[tuple[Path, int, str]]:
    """Every line a citation may sit on: comments and docstrings of the code, the README,
    docs/, and the comments of the build and stack files."""
    for folder in CODE_DIRS:
        for path in sorted((ROOT / folder).rglob("*.py")):
            for lineno, line in python_prose(path):
                yield path, lineno, line
    for path in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]:
        for lineno, line in enumerate(path.read_text().splitlines(), 1):
            yield path, lineno, line
    for path in [ROOT / name for name in CONFIG_FILES] + sorted((ROOT / "scripts").glob("*.sh")):
        for lineno, line in enumerate(path.read_text().splitlines(), 1):
            if line.lstrip().startswith("#"):
                yield path, lineno, line


def split(line: str, following: str) -> bool:
    """Whether a citation's number went to the next line (where the check cannot see it)."""
    return bool(SPLIT_END.search(line) and SPLIT_START.match(following))


def test_every_citation_names_a_document_and_section_that_exist() -> None:
    """A newcomer following a citation finds its file, heading, section, step or
    invariant in this repository."""
    lines = prose()
    errors = [f"{path.relative_to(ROOT)}:{lineno}: {e}"
              for path, lineno, line in lines for e in citation_errors(path, line)]
    errors += [f"{a[0].relative_to(ROOT)}:{a[1]}: a citation split across lines"
               for a, b in zip(lines, lines[1:])
               if a[0] == b[0] and a[1] + 1 == b[1] and split(a[2], b[2])]
    assert errors == [], "\n".join(errors)


@pytest.mark.parametrize("line, following, wanted", [
    ("waits for a change (invariant", "   6): a fix", True),
    ("# retried (docs/design.md invariant", "# 6). Everything", True),
    ("fails on a citation of a section or invariant", "that does not exist", False),
    ("## Invariants", "", False),
])
def test_a_citation_split_across_lines_is_seen(line: str, following: str,
                                                wanted: bool) -> None:
    """The check reads line by line, so a citation broken over two is refused."""
    assert split(line, following) is wanted


def test_the_scan_sees_the_citations() -> None:
    """The scan reads what it must: the code cites Crossplane's sections and the
    invariants dozens of times, so a scan finding few has stopped looking."""
    lines = [line for path, _, line in prose() if path.suffix == ".py"]
    assert sum(len(SECTION.findall(line)) for line in lines) >= 30
    assert sum(len(INVARIANT.findall(line)) for line in lines) >= 20


CODE = ROOT / "lockwright" / "example.py"


@pytest.mark.parametrize("line, wanted", [
    ("(docs/crossplane.md §12)", []),
    ("(docs/crossplane.md §10 step 14, §18 and §13.1 step 3)", []),
    ("(docs/crossplane.md §10 step 14.3)", []),
    ("(docs/crossplane.md §11 steps 8-11)", []),
    ("(docs/design.md invariants 2–6)", []),
    ('see docs/operations.md, "Settings"', []),
    ('docs/testing.md, "Faults: every server killed mid-change"', []),
    ("(reference §12)", ["names no document"]),
    ("(invariant 3)", ["names no document"]),
    ("(docs/crossplane.md §42)", ["§42: no such section"]),
    ("(docs/crossplane.md §10 step 99)", ["step 99: no such step"]),
    ("(docs/crossplane.md §10 step 14.9)", ["step 14.9: no such step"]),
    ("(docs/crossplane.md §11 steps 8-30)", ["step 30: no such step"]),
    ("(docs/design.md invariant 9)", ["invariant 9: no such invariant"]),
    ("(docs/crossplane.md invariant 1)", ["invariants live in docs/design.md"]),
    ("see DESIGN.md", ["DESIGN.md: no such file"]),
    ('docs/design.md, "No such heading"', ["no such heading"]),
    ('docs/operations.md, "No such heading"', ["no such heading"]),
    ('README.md, "Settings"', ["no such heading"]),
])
def test_the_check_catches_a_broken_citation(line: str, wanted: list[str]) -> None:
    """Each kind of broken citation is reported, and well-formed ones are not."""
    errors = citation_errors(CODE, line)
    assert len(errors) == len(wanted), errors
    assert all(w in e for w, e in zip(wanted, errors)), errors


# --- links between the documents --------------------------------------------------------

LINK = re.compile(r"\]\(([^)\s]+)\)")
DOCUMENTS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


def slug(title: str) -> str:
    """The anchor GitHub gives a heading: lower case, punctuation dropped, spaces to ``-``."""
    return re.sub(r"[^\w\- ]", "", title.strip().lower()).replace(" ", "-")


@functools.cache
def anchors(path: Path) -> frozenset[str]:
    """The anchors of ``path``'s headings (a repeated heading gets ``-1``, ``-2``, ...)."""
    seen: dict[str, int] = {}
    fenced = False
    for line in path.read_text().splitlines():
        fenced ^= line.startswith("```")
        if not fenced and (m := MD_HEADING.match(line)):
            base = slug(m.group(2))
            seen[f"{base}-{seen[base]}" if base in seen else base] = 0
            seen[base] = seen.get(base, 0) + 1
    return frozenset(seen)


def link_errors(citing: Path, text: str) -> list[str]:
    """What is wrong with the relative links of one line of a markdown document
    (``](docs/operations.md#settings)``, ``](#anchor)``); a link with a scheme
    (``https:``) is not followed."""
    errors = []
    for target in LINK.findall(text):
        if re.match(r"[a-z][a-z0-9+.-]*:", target):
            continue
        name, _, anchor = target.partition("#")
        path = (citing.parent / name).resolve() if name else citing.resolve()
        if not path.exists():
            errors.append(f"{target}: no such file")
        elif anchor and path.suffix == ".md" and anchor not in anchors(path):
            errors.append(f"{target}: no heading with the anchor #{anchor} in {path.name}")
    return errors


def test_every_link_of_the_readme_and_docs_reaches_a_file_and_heading() -> None:
    """A reader following a link from the front door or between documents lands on it."""
    relative = [t for p in DOCUMENTS for t in LINK.findall(p.read_text()) if "://" not in t]
    assert len(relative) >= 40  # the README and docs/ link to each other dozens of times
    errors = [f"{path.relative_to(ROOT)}:{lineno}: {e}"
              for path in DOCUMENTS
              for lineno, line in enumerate(path.read_text().splitlines(), 1)
              for e in link_errors(path, line)]
    assert errors == [], "\n".join(errors)


def test_the_readme_links_into_every_document_of_docs() -> None:
    """The README is the front door: each document of docs/ is reachable from it."""
    linked = {t.partition("#")[0] for t in LINK.findall((ROOT / "README.md").read_text())}
    assert sorted(f"docs/{p.name}" for p in DOCUMENTS[1:] if f"docs/{p.name}" not in linked) == []


def test_ci_runs_exactly_the_readme_test_command() -> None:
    """The README's second set-up command is what CI runs, word for word."""
    readme = (ROOT / "README.md").read_text().splitlines()
    [comment] = [i for i, line in enumerate(readme) if line.startswith("# the tests: ")]
    command = readme[comment + 1]
    assert command.startswith("bash scripts/setup.sh && ")
    ci = [line for line in (ROOT / ".ci" / "run").read_text().splitlines()
          if line and not line.startswith(("#", "set ", "cd "))]
    assert ci == [command]


@pytest.mark.parametrize("target, wanted", [
    ("docs/operations.md#settings", None),
    ("docs/upgrades.md#the-upgrade-gates-verdicts", "no heading"),
    ("docs/design.md#the-upgrade-gates-verdicts", None),
    ("docs/testing.md#faults-every-server-killed-mid-change", None),
    ("docs/nothing.md", "no such file"),
    ("#set-up-and-run", None),
    ("#no-such-section", "no heading"),
    ("https://crossplane.io", None),
])
def test_the_link_check_catches_a_broken_link(target: str, wanted: str | None) -> None:
    """A missing file or heading is reported; a good link or a web address is not."""
    errors = link_errors(ROOT / "README.md", f"see [it]({target})")
    assert [wanted in e for e in errors] == ([True] if wanted else []), errors


# --- the layout map ----------------------------------------------------------------------

SKIPPED = {"__pycache__", "build", "dist"}


def layout_map() -> set[str]:
    """The paths the first column of docs/design.md's "Layout" table names."""
    text = DESIGN.read_text()
    section = text.split("\n## Layout\n", 1)[1].split("\n## ", 1)[0]
    return set(re.findall(r"^\|\s*`([^`]+)`", section, re.MULTILINE))


def lockwright_entries() -> set[str]:
    """Each folder (``lockwright/x/``) and module (``lockwright/x.py``) of the package."""
    found = set()
    for p in (ROOT / "lockwright").iterdir():
        if p.is_dir() and p.name not in SKIPPED:
            found.add(f"lockwright/{p.name}/")
        elif p.suffix == ".py" and p.stem not in ("__init__", "__main__"):
            found.add(f"lockwright/{p.name}")
    return found


def top_level_folders() -> set[str]:
    """Each top-level directory of the repository, but for tool output and git's own."""
    return {f"{p.name}/" for p in ROOT.iterdir()
            if p.is_dir() and p.name not in SKIPPED and not p.name.endswith(".egg-info")
            and (not p.name.startswith(".") or p.name == ".ci")}


def test_the_layout_map_names_every_folder_of_lockwright() -> None:
    """A new folder or module of lockwright/ gets its line in the map."""
    assert sorted(lockwright_entries() - layout_map()) == []


def test_the_layout_map_names_every_top_level_folder() -> None:
    """Every top-level package (lockwright, tests, benchmarks) and directory is mapped."""
    assert sorted((top_level_folders() - {"lockwright/"}) - layout_map()) == []


def test_the_layout_map_names_nothing_that_is_gone() -> None:
    """A folder removed or renamed leaves no stale line behind."""
    assert sorted(p for p in layout_map() if not (ROOT / p).exists()) == []


# --- names docs/ gives for code -----------------------------------------------------------

MODULE = re.compile(r"(?<![\w.])lockwright(?:\.[A-Za-z_]\w*)+\b(?![/\w-]|\.\w)")
PATH = re.compile(r"`((?:lockwright|tests|benchmarks|scripts|docs|deploy)/[\w./-]*)`")


def module_exists(dotted: str) -> bool:
    """``lockwright.a.b`` is a module or package, or a name defined in one."""
    parts = dotted.split(".")
    for cut in (len(parts), len(parts) - 1):
        base = ROOT.joinpath(*parts[:cut])
        for path in (base.with_suffix(".py"), base / "__init__.py"):
            if path.is_file():
                return cut == len(parts) or re.search(
                    rf"^\s*(?:def |class )?{parts[-1]}\b", path.read_text(), re.M) is not None
    return False


def test_the_modules_and_paths_docs_names_exist() -> None:
    """docs/ names modules and files of the code; a rename must not leave them pointing
    nowhere."""
    text = "\n".join(p.read_text() for p in sorted((ROOT / "docs").glob("*.md")))
    missing = sorted({m for m in MODULE.findall(text) if not module_exists(m)}
                     | {p for p in PATH.findall(text) if not (ROOT / p).exists()})
    assert missing == []
