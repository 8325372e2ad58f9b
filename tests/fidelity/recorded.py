"""The request shapes devcluster served in an end-to-end run (lockwright.devcluster.shapes),
and the committed snapshot of them the differential check replays (``recorded.jsonl``).

A session records into ``$LOCKWRIGHT_SHAPES_DIR/shapes.jsonl`` (tests/conftest.py sets it;
every devcluster of a test stack appends to it). At the session's end a shape seen but
missing from the snapshot fails the run, unless ``LOCKWRIGHT_FIDELITY_REFRESH=1`` asked to
add it (then commit ``tests/fidelity/recorded.jsonl``).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from lockwright.devcluster.shapes import unique_free

SNAPSHOT = Path(__file__).with_name("recorded.jsonl")
ENV_DIR = "LOCKWRIGHT_SHAPES_DIR"
ENV_REFRESH = "LOCKWRIGHT_FIDELITY_REFRESH"

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
    """A shape recorded before devcluster replaced test-unique names, as it does now."""
    return {**shape, "path": unique_free(shape["path"])}


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


def finish_session() -> list[str]:
    """At a session's end: refresh the snapshot (when asked) or list what it lacks."""
    where = session_file()
    seen = load(where) if where else []
    missing = missing_from_snapshot(seen)
    if not missing:
        return []
    if os.environ.get(ENV_REFRESH) == "1":
        write(SNAPSHOT, load(SNAPSHOT) + missing)
        return []
    return [f"{len(missing)} request shape(s) the e2e run sent are missing from "
            f"{SNAPSHOT} (rerun with {ENV_REFRESH}=1 and commit it):"] + [
        "  " + key(s) for s in missing[:20]]
