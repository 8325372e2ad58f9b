"""A Provider type's stream asks for its right to read right before each request
(docs/design.md, "Provider deletion protection"): stopped while it asks (its Provider
going), it sends no list or watch after, and a right gone while it lists is asked for
again before its watch."""

from __future__ import annotations

import threading
from dataclasses import replace
from typing import Any

import pytest

from lockwright.k8s.watch import Listing
from lockwright.worker import watcher
from lockwright.worker.protection import type_resource
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


class Reviews:
    """A connection whose SelfSubjectAccessReviews answer from ``rights`` (a verb missing:
    refused), each review recorded in ``asked``."""

    def __init__(self, rights: set[str], asked: list[str]) -> None:
        self.rights, self.asked = rights, asked

    def can_i(self, verb: str, group: str, resource: str) -> bool:
        self.asked.append(f"can-i {verb} {resource}.{group}")
        return verb in self.rights


def test_a_right_gone_during_the_list_is_asked_for_again_before_the_watch(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The revision deleted while a just-started stream lists (its Provider just Healthy):
    the watch after the list is not sent, so kube-apiserver refuses nothing."""
    sent: list[str] = []
    rights = {"list", "watch"}

    def listing(*a: Any, **k: Any) -> Any:
        sent.append("list")
        rights.clear()  # the revision's RBAC goes while the list runs
        return Listing([], "2035")

    monkeypatch.setattr(watcher, "served_version", lambda kube, res: res)
    monkeypatch.setattr(watcher, "list_all", listing)
    monkeypatch.setattr(watcher, "watch", lambda *a, **k: sent.append("watch"))
    res = replace(type_resource("providerconfigs.w-3c896ac3f9.example.org"), version="v1alpha1")
    stream = Stream(res, kube=Reviews(rights, sent), emit=lambda msg: None,  # type: ignore[arg-type]
                    stop=threading.Event(), resync_s=600)
    with pytest.raises(LookupError, match="no right to watch providerconfigs"):
        stream._round()
    assert sent == ["can-i list providerconfigs.w-3c896ac3f9.example.org", "list",
                    "can-i watch providerconfigs.w-3c896ac3f9.example.org"]
    assert stream.rv == "2035"  # the next round resumes the watch; no second list
