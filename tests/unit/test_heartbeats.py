"""Heartbeats only where Temporal takes them.

Most of InstallRevision's steps run as local activities, which have no heartbeat: the
worker's core refused each one with a warning (``Activity heartbeat failed ...
UnknownActivity``), 73 of them in one 20-switch-over benchmark's worker log. A local
activity still checks for its cancellation between two batches.
"""

from __future__ import annotations

import threading
from dataclasses import replace

import pytest
from temporalio.exceptions import CancelledError
from temporalio.testing import ActivityEnvironment

from lockwright.activities.base import beat, heartbeating, pulse


def environment(local: bool) -> tuple[ActivityEnvironment, list[tuple[object, ...]]]:
    env, beats = ActivityEnvironment(), []
    env.info = replace(env.info, is_local=local)
    env.on_heartbeat = lambda *details: beats.append(details)
    return env, beats


def beating_threads() -> list[str]:
    return [t.name for t in threading.enumerate() if t.name == "heartbeat"]


@pytest.mark.parametrize(("local", "sent"), [(False, [("batch 3",), ()]), (True, [])])
def test_beat_and_pulse_send_a_heartbeat_only_from_a_remote_activity(
        local: bool, sent: list[tuple[object, ...]]) -> None:
    env, beats = environment(local)

    def run() -> None:
        beat("batch 3")
        pulse()

    env.run(run)
    assert beats == sent


@pytest.mark.parametrize(("local", "threads"), [(False, ["heartbeat"]), (True, [])])
def test_heartbeating_starts_its_side_thread_only_in_a_remote_activity(
        local: bool, threads: list[str]) -> None:
    env, _ = environment(local)

    def run() -> list[str]:
        with heartbeating(every=60):
            return beating_threads()

    assert env.run(run) == threads
    assert beating_threads() == []


def test_a_local_activity_still_stops_when_cancelled() -> None:
    env, beats = environment(local=True)
    env.cancel()
    with pytest.raises(CancelledError):
        env.run(beat)
    assert beats == []
