"""The workflows' waits between passes: doubling from a first wait up to a cap, without end."""

from __future__ import annotations

from datetime import timedelta

import pytest

from lockwright import contracts as c
from lockwright.workflows.retry import doubled, loop_backoff


@pytest.mark.parametrize(("attempt", "wait"), [
    (0, 5.0), (1, 5.0), (2, 10.0), (4, 40.0), (5, 60.0),
    # A package retrying every minute for days: the wait stays at its cap (2.0 ** 1024
    # overflowed, failing the workflow task on every attempt from then on).
    (1025, 60.0), (1026, 60.0), (10**6, 60.0)])
def test_waits_double_up_to_the_cap_at_any_attempt(attempt: int, wait: float) -> None:
    assert doubled(5.0, attempt, 60.0) == wait


def test_the_loop_backoff_follows_the_tuning() -> None:
    tuning = c.Tuning(backoff_initial_s=0.5, backoff_max_s=2.0)
    assert [loop_backoff(tuning, n) for n in (1, 2, 3, 4000)] == [
        timedelta(seconds=s) for s in (0.5, 1.0, 2.0, 2.0)]
