"""The package cache (atomic, verified, LRU-bounded) and layer extraction limits."""

from __future__ import annotations

import hashlib
import io
import json
import os
import tarfile
from pathlib import Path

import pytest

from lockwright.errors import InvalidPackage
from lockwright.oci.cache import PackageCache
from lockwright.oci.extract import extract_package_yaml
from tests.oci_images import Entry, tar_bytes


def _digest(n: int) -> str:
    return "sha256:" + f"{n:064x}"


DOCS = b'[0,{"kind":"Provider"}]\n'


def _put(cache: PackageCache, n: int, content: bytes, tmp: Path) -> None:
    src, docs = tmp / f"src-{n}", tmp / f"docs-{n}"
    src.write_bytes(content)
    docs.write_bytes(DOCS)
    cache.put(_digest(n), src, hashlib.sha256(content).hexdigest(), "r.example.io/x",
              documents=docs)


def test_put_get_roundtrip_moves_file_and_records_metadata(tmp_path):
    cache = PackageCache(tmp_path / "c")
    _put(cache, 1, b"kind: Provider\n", tmp_path)
    entry = cache.get(_digest(1))
    assert entry is not None and entry.path.read_bytes() == b"kind: Provider\n"
    assert entry.source == "r.example.io/x" and entry.size == 15
    assert entry.path == tmp_path / "c" / f"{1:064x}" / "package.yaml"
    assert not (tmp_path / "src-1").exists()


def test_corrupt_entry_is_a_miss_and_removed(tmp_path):
    cache = PackageCache(tmp_path / "c")
    _put(cache, 1, b"good\n", tmp_path)
    entry = cache.get(_digest(1))
    assert entry is not None
    entry.path.write_bytes(b"evil\n")
    assert cache.get(_digest(1)) is None
    assert not entry.path.parent.exists()


def test_entry_keeps_its_documents_beside_the_package(tmp_path):
    cache = PackageCache(tmp_path / "c")
    _put(cache, 1, b"kind: Provider\n", tmp_path)
    entry = cache.get(_digest(1))
    assert entry is not None and entry.documents.read_bytes() == DOCS
    assert entry.documents == entry.path.with_name("documents.jsonl")
    assert entry.documents_size == len(DOCS)
    assert entry.documents_sha256 == hashlib.sha256(DOCS).hexdigest()
    assert not (tmp_path / "docs-1").exists()


@pytest.mark.parametrize("damage", [
    lambda p: p.unlink(),  # missing
    lambda p: p.write_bytes(DOCS[:-5]),  # cut short
    lambda p: p.write_bytes(DOCS.replace(b"Provider", b"Provider" * 2)),  # changed
])
def test_entry_with_damaged_documents_is_a_miss_and_removed(tmp_path, damage):
    cache = PackageCache(tmp_path / "c")
    _put(cache, 1, b"good\n", tmp_path)
    entry = cache.get(_digest(1))
    assert entry is not None
    damage(entry.documents)
    assert cache.get(_digest(1)) is None
    assert not entry.path.parent.exists()


def test_entry_from_before_documents_is_a_miss(tmp_path):
    cache = PackageCache(tmp_path / "c")
    _put(cache, 1, b"old\n", tmp_path)
    meta = cache.root / f"{1:064x}" / "meta.json"
    fields = json.loads(meta.read_text())
    del fields["documents_size"], fields["documents_sha256"]
    meta.write_text(json.dumps(fields))
    assert cache.get(_digest(1)) is None


def test_documents_count_toward_the_bound(tmp_path):
    cache = PackageCache(tmp_path / "c", max_bytes=2 * 100 + len(DOCS))
    for n in (1, 2):
        _put(cache, n, bytes([n]) * 100, tmp_path)
    assert cache.get(_digest(1)) is None and cache.get(_digest(2)) is not None


def test_entry_without_metadata_is_a_miss(tmp_path):
    cache = PackageCache(tmp_path / "c")
    (cache.root / f"{2:064x}").mkdir()
    (cache.root / f"{2:064x}" / "package.yaml").write_bytes(b"x")
    assert cache.get(_digest(2)) is None


def test_lru_eviction_keeps_recently_used(tmp_path):
    cache = PackageCache(tmp_path / "c", max_bytes=250)
    for n in (1, 2):
        _put(cache, n, bytes([n]) * 100, tmp_path)
    meta1 = cache.root / f"{1:064x}" / "meta.json"
    meta2 = cache.root / f"{2:064x}" / "meta.json"
    os.utime(meta2, (1_000, 1_000))  # 2 is older than 1 ...
    os.utime(meta1, (2_000, 2_000))
    assert cache.get(_digest(2)) is not None  # ... until it is used again
    _put(cache, 3, b"\3" * 100, tmp_path)
    assert cache.get(_digest(1)) is None
    assert cache.get(_digest(2)) is not None and cache.get(_digest(3)) is not None


def test_new_entry_is_never_evicted_even_if_alone_over_bound(tmp_path):
    cache = PackageCache(tmp_path / "c", max_bytes=10)
    _put(cache, 1, b"x" * 100, tmp_path)
    assert cache.get(_digest(1)) is not None


def test_concurrent_put_of_same_digest_keeps_one_entry(tmp_path):
    cache = PackageCache(tmp_path / "c")
    _put(cache, 1, b"same\n", tmp_path)
    _put(cache, 1, b"same\n", tmp_path)
    assert cache.get(_digest(1)) is not None
    assert list((cache.root / ".tmp").iterdir()) == []


def test_alias_for_never_policy(tmp_path):
    cache = PackageCache(tmp_path / "c")
    assert cache.alias("r.example.io/x:v1") is None
    cache.set_alias("r.example.io/x:v1", _digest(7))
    assert cache.alias("r.example.io/x:v1") == _digest(7)


def test_rejects_non_digest_keys(tmp_path):
    with pytest.raises(ValueError):
        PackageCache(tmp_path / "c").get("../../etc")


def _extract(tmp_path: Path, layers: list[bytes], yaml_limit: int = 1 << 20,
             decompressed_limit: int = 1 << 24) -> bytes:
    files = []
    for i, data in enumerate(layers):
        path = tmp_path / f"layer{i}"
        path.write_bytes(data)
        files.append((path, f"layer {i}"))
    out = io.BytesIO()
    result = extract_package_yaml(files, out, yaml_limit, decompressed_limit)
    assert result.size == len(out.getvalue())
    assert result.sha256 == hashlib.sha256(out.getvalue()).hexdigest()
    return out.getvalue()


def test_first_package_yaml_in_layer_wins(tmp_path):
    layer = tar_bytes([Entry("./package.yaml", b"first"), Entry("package.yaml", b"second")])
    assert _extract(tmp_path, [layer]) == b"first"


def test_top_layer_wins_and_opaque_dir_hides_lower(tmp_path):
    lower = tar_bytes([Entry("pkg/package.yaml", b"lower")], gz=False)
    upper = tar_bytes([Entry("pkg/package.yaml", b"upper")])
    assert _extract(tmp_path, [lower, upper]) == b"upper"
    opaque = tar_bytes([Entry("pkg/.wh..wh..opq")])
    with pytest.raises(InvalidPackage, match="not found"):
        _extract(tmp_path, [lower, opaque])
    dir_whiteout = tar_bytes([Entry(".wh.pkg")])
    with pytest.raises(InvalidPackage, match="not found"):
        _extract(tmp_path, [lower, dir_whiteout])


def test_package_yaml_limit_is_checked_from_header(tmp_path):
    layer = tar_bytes([Entry("package.yaml", b"x" * 1000)])
    with pytest.raises(InvalidPackage, match="1000 bytes, over the limit of 999"):
        _extract(tmp_path, [layer], yaml_limit=999)
    assert _extract(tmp_path, [layer], yaml_limit=1000) == b"x" * 1000


def test_fifo_named_package_yaml_refused(tmp_path):
    layer = tar_bytes([Entry("package.yaml", type=tarfile.FIFOTYPE)])
    with pytest.raises(InvalidPackage, match="link or special"):
        _extract(tmp_path, [layer])


def test_truncated_gzip_is_invalid(tmp_path):
    layer = tar_bytes([Entry("other", os.urandom(4096)), Entry("package.yaml", b"x")])
    with pytest.raises(InvalidPackage, match="not a valid"):
        _extract(tmp_path, [layer[: len(layer) // 2]])
