"""The store's change log, whole and by resource: a watch reads its resource's retained
events alone, and an event the log forgets leaves its resource's log too."""

from __future__ import annotations

from pathlib import Path

from lockwright.devcluster.store import Store

CM = ("", "configmaps")
SECRET = ("", "secrets")


def _write(store: Store, resource: tuple[str, str], name: str) -> int:
    with store.lock:
        rv = store.next_rv()
        store.put((*resource, "default", name),
                  {"metadata": {"name": name, "uid": f"uid-{name}",
                                "resourceVersion": str(rv)}}, "ADDED")
        return rv


def test_events_by_resource_are_the_retained_ones(tmp_path: Path) -> None:
    store = Store(str(tmp_path), history=3)
    first = _write(store, CM, "a")
    _write(store, SECRET, "s")
    _write(store, CM, "b")
    _write(store, CM, "c")  # "a" leaves the log: history 3
    with store.lock:
        assert [e.obj["metadata"]["name"] for e in store.events_after(0, CM)] == ["b", "c"]
        assert [e.obj["metadata"]["name"] for e in store.events_after(0, SECRET)] == ["s"]
        both = sorted(store.events_after(0, CM) + store.events_after(0, SECRET),
                      key=lambda e: e.rv)
        assert [e.obj["metadata"]["name"] for e in both] == ["s", "b", "c"]
    assert store.too_old(first - 1) and not store.too_old(first)
    store.close()


def test_a_flag_is_set_by_its_own_resource_only(tmp_path: Path) -> None:
    store = Store(str(tmp_path))
    with store.subscribe(*CM) as fresh:
        assert fresh.is_set()  # set at the start: read what came before
        fresh.clear()
        _write(store, SECRET, "s")
        assert not fresh.is_set()
        _write(store, CM, "a")
        assert fresh.is_set()
    fresh.clear()
    _write(store, CM, "b")
    assert not fresh.is_set()  # unsubscribed at the block's end
    store.close()
