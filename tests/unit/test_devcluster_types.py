"""devcluster's JSON encoding: what json.dumps wrote, only faster."""

from __future__ import annotations

import json
from typing import Any

import pytest

from lockwright.devcluster.types import dump_json


@pytest.mark.parametrize("value", [
    {"metadata": {"name": "a", "labels": {"x": "ü"}}, "spec": {"n": 1, "f": 1.5, "b": True,
                                                               "z": None, "l": [1, "2"]}},
    {1: "integer key", "k": {2: [3]}},
    {"big": 2**70},  # over 64 bits (a YAML body can carry it): json writes it
    [],
])
def test_dump_json_reads_back_as_json_dumps_wrote_it(value: Any) -> None:
    assert json.loads(dump_json(value)) == json.loads(json.dumps(value))
