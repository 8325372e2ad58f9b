"""A stream stopped while it asks for its right to read (its Provider going) sends no
list or watch after: the right goes with the Provider soon after (docs/design.md,
"Provider deletion protection")."""

from __future__ import annotations

import threading
from typing import Any

import pytest

from lockwright.worker import watcher
from lockwright.worker.targets import RESOURCES
from lockwright.worker.watcher import Stream


@pytest.mark.parametrize("rv", ["", "1354"])  # a first list, a resumed watch
def test_a_stream_stopped_while_asking_lists_and_watches_nothing(
        monkeypatch: pytest.MonkeyPatch, rv: str) -> None:
    stop = threading.Event()
    sent: list[str] = []
    monkeypatch.setattr(watcher, "served_version", lambda kube, res: res)
    monkeypatch.setattr(watcher, "ensure_readable", lambda *a, **k: stop.set())
    monkeypatch.setattr(watcher, "list_all", lambda *a, **k: sent.append("list"))
    monkeypatch.setattr(watcher, "watch", lambda *a, **k: sent.append("watch"))
    stream = Stream(RESOURCES[0], kube=Any, emit=lambda msg: None, stop=stop,  # type: ignore[arg-type]
                    resync_s=600, rv=rv)
    stream.run()
    assert sent == []
