"""End-to-end stacks run on the Temporal ``LOCKWRIGHT_TEST_TEMPORAL`` selects.

Every stack fixture takes ``temporal_env`` and hands it to ``running_stack``; here that name
is the selected kind's :class:`~tests.fixtures.temporal.TemporalTarget` (the dev server, or
the Temporal cluster with several workers), so every end-to-end suite runs on each kind.
"""

from __future__ import annotations

import pytest

from tests.fixtures.temporal import TemporalTarget


@pytest.fixture(scope="session")
def temporal_env(stack_temporal: TemporalTarget) -> TemporalTarget:
    """The Temporal this run's stacks use (each selected kind in turn)."""
    return stack_temporal
