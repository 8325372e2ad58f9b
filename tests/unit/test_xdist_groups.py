"""The suite's xdist groups (tests/fixtures/groups.py): one work unit per module and
cluster kind, read back from node ids by the scheduler ``--dist loadgroup`` uses.

With pytest 9.2, xdist's own ``xdist_group`` marks no longer group anything (the node id
suffix they rely on is lost), so a module's stack started once per test, on both workers.
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from tests.fixtures.groups import ModuleKindScheduling, group, scope


def item(nodeid: str, **params: str) -> Any:
    return SimpleNamespace(nodeid=nodeid, callspec=SimpleNamespace(params=params)
                           if params else None)


@pytest.mark.parametrize(("nodeid", "params", "want"), [
    ("tests/e2e/test_plans.py::test_a[kube]", {"cluster_kind": "kube"},
     "tests/e2e/test_plans.py:kube"),
    ("tests/e2e/test_deletion.py::test_d[kube-Function-background]", {"cluster_kind": "kube"},
     "tests/e2e/test_deletion.py:kube"),
    ("tests/e2e/test_upgrade.py::test_b[devcluster-lint]", {"cluster_kind": "devcluster"},
     "tests/e2e/test_upgrade.py:devcluster"),
    ("tests/unit/test_backoff.py::test_doubled[3-4.0]", {"attempt": "3"},
     "tests/unit/test_backoff.py"),
    ("tests/unit/test_backoff.py::test_plain", {}, "tests/unit/test_backoff.py"),
    ("tests/unit/test_x.py::TestY::test_z[a]", {"p": "a"}, "tests/unit/test_x.py"),
])
def test_the_scheduler_reads_each_items_group_from_its_node_id(
        nodeid: str, params: dict[str, str], want: str) -> None:
    assert group(item(nodeid, **params)) == want
    assert scope(nodeid) == want
    scheduler = ModuleKindScheduling.__new__(ModuleKindScheduling)
    assert scheduler._split_scope(nodeid) == want


def test_a_modules_tests_on_one_kind_share_a_unit_and_kinds_do_not() -> None:
    kube = {scope(f"tests/e2e/test_plans.py::test_{n}[kube]") for n in "abc"}
    dev = scope("tests/e2e/test_plans.py::test_a[devcluster]")
    assert len(kube) == 1 and dev not in kube


def test_loadgroup_uses_it(pytestconfig: pytest.Config) -> None:
    from tests.fixtures.groups import pytest_xdist_make_scheduler

    option = SimpleNamespace(**vars(pytestconfig.option))
    option.loadscopereorder = True
    config: Any = SimpleNamespace(getvalue=lambda name: "loadgroup", option=option)
    assert isinstance(pytest_xdist_make_scheduler(config, None), ModuleKindScheduling)
    assert option.loadscopereorder is False  # the collection's order, builds' tests last
    other: Any = SimpleNamespace(getvalue=lambda name: "load")
    assert pytest_xdist_make_scheduler(other, None) is None
