"""The request shapes devcluster served in an end-to-end run (lockwright.devcluster.shapes),
and the committed snapshot of them the differential check replays (``recorded.jsonl``).

A session records into ``$LOCKWRIGHT_SHAPES_DIR/shapes.jsonl`` (tests/conftest.py sets it;
every devcluster of a test stack appends to it). At the session's end a shape seen but
missing from the snapshot is added to it and named in the run's summary (commit
``tests/fidelity/recorded.jsonl``: the next differential check replays it);
``LOCKWRIGHT_FIDELITY_STRICT=1`` fails the run instead (the snapshot left as it is).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from lockwright.devcluster.shapes import SELECTORS, fixture_kind, names_free

SNAPSHOT = Path(__file__).with_name("recorded.jsonl")
ENV_DIR = "LOCKWRIGHT_SHAPES_DIR"
ENV_STRICT = "LOCKWRIGHT_FIDELITY_STRICT"

Shape = dict[str, Any]


def key(shape: Shape) -> str:
    """One shape as a canonical string (equal shapes, equal keys)."""
    return json.dumps(shape, sort_keys=True, separators=(",", ":"))


def load(path: Path) -> list[Shape]:
    """The distinct shapes in a JSON-lines file (none if it does not exist), sorted."""
    if not path.exists():
        return []
    keys = {key(_canonical(json.loads(line))) for line in path.read_text().splitlines()
            if line.strip()}
    return [json.loads(k) for k in sorted(keys)]


def _canonical(shape: Shape) -> Shape:
    """A shape recorded before devcluster replaced test-unique names and a test package's
    group, resource and kind, and sorted a selector's terms, as it does now."""
    query = {k: ",".join(sorted(v.split(","))) if k in SELECTORS and v else v
             for k, v in (shape.get("query") or {}).items()}
    out = {**shape, "path": names_free(shape["path"]), "query": query}
    return {**out, "body": fixture_kind(shape["body"])} if "body" in shape else out


def write(path: Path, shapes: list[Shape]) -> None:
    """``shapes`` as sorted, distinct JSON lines."""
    keys = sorted({key(s) for s in shapes})
    path.write_text("".join(k + "\n" for k in keys))


def session_file() -> Path | None:
    """Where this session's stacks record (None: recording is off)."""
    folder = os.environ.get(ENV_DIR)
    return Path(folder) / "shapes.jsonl" if folder else None


def missing_from_snapshot(seen: list[Shape]) -> list[Shape]:
    """The shapes seen that the committed snapshot lacks."""
    known = {key(s) for s in load(SNAPSHOT)}
    return [s for s in seen if key(s) not in known]


def finish_session() -> tuple[bool, list[str]]:
    """At a session's end: add the shapes the snapshot lacks (or, strict, fail on them).

    Returns:
        Whether the run fails, and the lines to show.
    """
    where = session_file()
    seen = load(where) if where else []
    missing = missing_from_snapshot(seen)
    if not missing:
        return False, []
    strict = os.environ.get(ENV_STRICT) == "1"
    if not strict:
        write(SNAPSHOT, load(SNAPSHOT) + missing)
    head = (f"{len(missing)} request shape(s) the test stacks sent were missing from "
            f"{SNAPSHOT}: " + ("the run fails (unset " + ENV_STRICT + " to add them)" if strict
                              else "added; commit the file"))
    return strict, [head] + ["  " + key(s) for s in missing[:20]]
