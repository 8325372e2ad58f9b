"""The test PostgreSQL a fault test SIGKILLs keeps every commit it acknowledged
(lockwright/controlplane/postgres.py): asynchronous commit lost some, and a workflow's
first task with them (docs/testing.md, "Faults: every server killed mid-change")."""

from __future__ import annotations

from pathlib import Path

from lockwright.controlplane.postgres import Postgres


def test_a_commit_is_in_the_wal_file_before_it_is_acknowledged() -> None:
    argv = Postgres(Path("/nonexistent"), 5432).argv()
    settings = dict(argv[i + 1].split("=", 1) for i, a in enumerate(argv) if a == "-c")
    assert settings["synchronous_commit"] == "on"
    # Not forced to disk: only an OS crash could lose what the OS was handed.
    assert (settings["fsync"], settings["full_page_writes"]) == ("off", "off")
